// The engine core: vLLM-v1-style continuous batching over one or more engine instances, on a
// clock the caller drives. No threads, no I/O: `sim predict` jumps from event to event (virtual
// time); the live engine (live_engine_impl.h) calls run_until(now) from its own thread.
//
// Instances: `num_replicas` engines of (tp, ep, dp-attn), or with disaggregation prefill engines
// and decode engines joined by a KV transfer. Each instance has one scheduler and KV pool per
// data-parallel attention rank; a step runs all of its ranks at once and lasts as long as the cost
// model says (cost_model.h). Requests are routed to the least-loaded rank, or by session id.
//
// Per step and rank (SIMULATOR.md): running requests first, each takes
// min(remaining, long_prefill_threshold, token budget) tokens, growing its KV blocks; when blocks
// run out the newest running request is preempted (recompute). Then waiting requests are admitted
// (prefix-cache lookup first, then the KV offloading tier's, whose hits are loaded back before
// the request runs) while running < max_num_seqs and budget remains, unless something was
// preempted this step. A request that catches up to its tokens samples one token, or 1 +
// accepted drafts with speculative decoding.
//
// Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "sim/calibration.h"
#include "sim/catalog.h"
#include "sim/cost_model.h"
#include "sim/engine_config.h"
#include "sim/live_engine.h"

namespace ix::sim {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// An EngineConfig with its catalog entries, calibration and defaults resolved.
struct ResolvedEngine {
  EngineConfig config;
  HardwareSpec hardware;
  ModelSpec model;
  Efficiency efficiency;
  std::string calibration_group;  // which calibration entry was used
  std::string calibration_source;
  FrameworkFamily family = FrameworkFamily::kVllm;
  int32_t num_spec_tokens = 0;     // 0 when speculative decoding is off
  double acceptance_length = 1.0;  // mean tokens per decode step
  int32_t max_model_len = 0;
  // What drafts the tokens, in words ("" without speculative decoding): the checkpoint's MTP
  // layers, or, for `mtp` on a model without them (InferenceX labels every speculative method
  // `mtp`, e.g. MiniMax-M3 with an EAGLE3 head), a separate draft head. Both are costed alike.
  std::string spec_draft;
};

// Looks up model, hardware and calibration (builtin or config.catalog_dir) and validates.
// `calibration` overrides the calibration table (used by the fitter).
Result<ResolvedEngine> resolve_engine(const EngineConfig& config, const CalibrationTable* calibration = nullptr);

struct CoreRequest {
  int32_t prompt_tokens = 0;
  std::vector<uint64_t> block_hashes;  // prompt_block_hashes() of the prompt
  // Leading blocks of block_hashes that other prompts may have too. The ones after them are this
  // prompt's alone (sim predict's random prompts past their shared prefix), so the KV pools keep
  // no per-block state for them; by default every block may be shared.
  int32_t shared_blocks = std::numeric_limits<int32_t>::max();
  int32_t max_tokens = 16;
  int32_t output_tokens = 0;  // tokens to generate before stopping (<= max_tokens)
  std::optional<uint64_t> session_id;
  int64_t arrival_ns = 0;  // when the scheduler first sees it (>= now)
};

// Cost attribution of one finished request (for calibration): seconds per cost bucket of the
// steps between its arrival and first token, and between first token and completion.
struct RequestCost {
  CostBuckets to_first_token{};
  CostBuckets after_first_token{};
};

class EngineCore {
 public:
  using Sink = std::function<void(const TokenEvent&)>;
  static Result<std::unique_ptr<EngineCore>> create(const ResolvedEngine& engine);
  ~EngineCore();

  // Queues a request; events go to the sink passed to run_until. Fails when the request cannot
  // ever fit (longer than max_model_len or than one rank's KV cache).
  Result<uint64_t> submit(CoreRequest request);
  void cancel(uint64_t request_id);

  // Time of the next thing that happens on its own (arrival, transfer, step end); kNever if idle.
  int64_t next_event_ns() const;
  // Processes everything due at or before `until_ns`, in time order, then sets now to until_ns
  // (unless kNever). Token events are passed to `sink`, which may call submit() (closed-loop
  // clients submit the next request when one finishes) but not run_until().
  void run_until(int64_t until_ns, const Sink& sink);
  int64_t now_ns() const;

  EngineMetrics metrics() const;
  const ResolvedEngine& engine() const;
  // Per-request cost attribution, recorded when `enable` is set before requests are submitted;
  // looked up after the request finished.
  void record_costs(bool enable);
  std::optional<RequestCost> request_cost(uint64_t request_id) const;
  // KV blocks per rank (for tests and reports).
  int32_t kv_blocks_per_rank(bool decode_side) const;

 private:
  struct Impl;
  explicit EngineCore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ix::sim
