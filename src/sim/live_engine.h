// The simulator engine as the HTTP front (`ixbench sim serve`) sees it: requests in, timed token
// events out, on the wall clock. The front never sees the scheduler or cost model, and the core
// never sees JSON or sockets.
//
// Thread-safety: every method may be called from any thread. Sinks are invoked on the engine's
// own thread, at (or just after) the wall-clock time the engine model says the tokens are
// produced; a sink must not block (post to the connection's executor and return). The engine's
// thread blocks every signal, so a process signal reaches the thread that waits for it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace ix::sim {

struct GenerationRequest {
  // The exact prompt tokens. Prefix caching keys full KV blocks by hash(parent, block tokens).
  std::vector<int32_t> prompt_token_ids;
  int32_t max_tokens = 16;
  // When false the engine may finish before max_tokens: a seeded "natural" EOS length, uniform in
  // [max(1, cap / 2), cap] where cap = natural_max_tokens (when > 0 and below max_tokens) else
  // max_tokens, then raised to min_tokens. When true, exactly max_tokens.
  bool ignore_eos = false;
  // vLLM's min_tokens: no natural EOS before this many tokens. 0 <= min_tokens <= max_tokens.
  int32_t min_tokens = 0;
  // The upper end of the natural length's draw when it should not scale with max_tokens (the front
  // sets it when max_tokens is a default budget, e.g. a chat request's max_model_len - prompt, not
  // a length the client asked for). 0 = max_tokens.
  int32_t natural_max_tokens = 0;
  // Routing hint for data-parallel attention (session-sticky); nullopt = least loaded.
  std::optional<uint64_t> session_id;
};

enum class FinishReason { kNone, kLength, kStop, kAbort };

struct TokenEvent {
  uint64_t request_id = 0;
  int64_t time_ns = 0;              // engine time of the event (steady clock)
  int32_t new_tokens = 0;           // tokens produced by this step (> 1 with speculative decoding)
  int32_t total_output_tokens = 0;  // tokens produced so far for this request
  int32_t prompt_tokens = 0;
  int32_t cached_prompt_tokens = 0;  // prefix-cache hit (GPU and CPU tier), known from the first event on
  // Engine time the request was first scheduled (admitted to a batch; a preemption does not move
  // it), for vLLM's queue/prefill/inference phase histograms; -1 = the engine does not say.
  int64_t scheduled_ns = -1;
  int64_t previous_ns = 0;                    // engine time of the request's previous event; 0 on its first
  FinishReason finish = FinishReason::kNone;  // != kNone on the last event of the request
};

// The KV cache as vLLM's vllm:cache_config_info reports it (labels of an info gauge), and the
// pools behind vLLM's start-up line "GPU KV cache size: N tokens".
struct CacheConfigInfo {
  int32_t block_size = 0;
  int64_t num_gpu_blocks = 0;  // one scheduler rank's pool (vLLM: one engine core's)
  int64_t num_cpu_blocks = 0;  // one rank's CPU offload tier; 0 without offloading
  bool enable_prefix_caching = false;
  double gpu_memory_utilization = 0;
  int32_t num_gpu_blocks_override = 0;  // 0 = none
  double kv_offloading_size_gib = 0;    // 0 = none
  std::string kv_offloading_backend;    // "native" (vLLM's default, set or not)
  std::vector<int64_t> pool_blocks;     // GPU blocks of every scheduler rank of every engine
};

// Counters and gauges for /metrics (vLLM names are applied by the front).
struct EngineMetrics {
  int64_t num_requests_running = 0;
  int64_t num_requests_waiting = 0;
  double kv_cache_usage_perc = 0.0;  // 0..1
  int64_t prefix_cache_queries = 0;  // tokens looked up
  int64_t prefix_cache_hits = 0;     // tokens found in the GPU prefix cache
  // KV offloading's CPU tier (zero without it): prompt tokens looked up there, tokens found and
  // loaded back, the CPU pool's fill level (0..1, mean over ranks), and the transfers' bytes and
  // seconds (summed over the GPUs that move them, as vLLM sums its workers' transfers).
  int64_t external_prefix_cache_queries = 0;
  int64_t external_prefix_cache_hits = 0;
  double cpu_kv_cache_usage_perc = 0.0;
  int64_t kv_offload_bytes_gpu_to_cpu = 0;
  int64_t kv_offload_bytes_cpu_to_gpu = 0;
  double kv_offload_seconds_gpu_to_cpu = 0.0;
  double kv_offload_seconds_cpu_to_gpu = 0.0;
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  int64_t spec_decode_num_draft_tokens = 0;
  int64_t spec_decode_num_accepted_tokens = 0;
  int64_t spec_decode_num_drafts = 0;
  int64_t num_preemptions = 0;
  int64_t request_success_total = 0;
  std::optional<CacheConfigInfo> cache_config;  // nullopt: an engine without a KV model
};

class LiveEngine {
 public:
  using Sink = std::function<void(const TokenEvent&)>;
  virtual ~LiveEngine() = default;

  // Queues a request; its events (first token, every step, the final one) go to `sink`.
  // Returns the request id, or an error (e.g. prompt longer than the context window).
  virtual Result<uint64_t> submit(GenerationRequest request, Sink sink) = 0;
  // Aborts a request (client disconnected): frees its KV; no further events are delivered.
  virtual void cancel(uint64_t request_id) = 0;
  virtual EngineMetrics metrics() const = 0;
  // Context window (max prompt + output tokens) of the served configuration.
  virtual int32_t max_model_len() const = 0;
};

}  // namespace ix::sim
