// What the simulated engine serves and how: model, hardware, parallelism, scheduler limits and
// speculative decoding. One struct shared by `ixbench sim serve` (wall clock) and
// `ixbench sim predict` (virtual clock), filled from the same command-line flags
// (src/cli/engine_flags.h) or from a sweep row.
//
// Names follow the engines' own flags (vLLM: --max-num-seqs, --max-num-batched-tokens,
// --block-size, --enable-prefix-caching, --gpu-memory-utilization) and the InferenceX matrix
// (tp, ep, dp-attn, spec-decoding, prefill/decode workers).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/error.h"
#include "sim/live_engine.h"

namespace ix::sim {

enum class SpecDecoding { kNone, kMtp, kDraftModel };

// Engine families share a scheduler but have their own calibration (overheads, kernels).
enum class FrameworkFamily { kVllm, kSglang, kTrtllm, kAtom };

enum class AttentionDpBalance { kAuto, kOn, kOff };

inline constexpr int32_t kDefaultMaxNumSeqs = 1024;
inline constexpr int32_t kDefaultMaxNumBatchedTokens = 8192;

// One side of a disaggregated deployment (or the whole engine when not disaggregated).
struct WorkerTopology {
  int32_t num_workers = 1;  // engines of this kind
  int32_t tp = 1;           // GPUs per engine (tensor parallel size)
  int32_t ep = 1;           // expert-parallel size within the engine (divides tp)
  bool dp_attn = false;     // data-parallel attention: tp ranks each with their own batch and KV
  // Running requests per rank on this side (TRT-LLM's max_batch_size, per attention-DP rank);
  // 0 = the engine's max_num_seqs. A disaggregated decode side that is full holds new requests
  // back, and their first token with them: the client sees it when a decode slot frees.
  int32_t max_num_seqs = 0;
  // Token budget per step and rank on this side (SGLang's chunked-prefill-size, split over the
  // attention-DP ranks and capped by max-prefill-tokens); 0 = the engine's max_num_batched_tokens.
  int32_t max_num_batched_tokens = 0;
  // KV-cache tokens per rank on this side (SGLang's max-total-tokens, each rank's own pool);
  // 0 = what the GPU memory holds.
  int64_t max_kv_tokens = 0;
  // Decode side: tokens kept free per running request when a transferred request is admitted
  // (SGLang's num-reserved-decode-tokens). A decode side with a stated pool (max_kv_tokens) or
  // reserve preallocates: a transferred request whose KV does not fit waits, its first token
  // with it. Without either, the pool is the memory model's estimate and requests are taken at
  // once (an estimate's error would otherwise become TTFT).
  int32_t reserved_decode_tokens = 0;
};

struct EngineConfig {
  std::string model = "deepseek-r1";  // catalog name, alias or HF id (data/catalog/models.json)
  std::string hardware = "h200";      // catalog name or runner label (data/catalog/hardware.json)
  std::string precision = "fp8";      // bf16 | fp8 | fp4 (weights; fp4 = routed experts in fp4)
  // Framework as the matrix names it (vllm, sglang, trt, atom, dynamo-sglang, mori-sglang, ...);
  // selects the scheduler defaults and the calibration group.
  std::string framework = "vllm";

  // Single-engine parallelism (used when disagg is false).
  int32_t tp = 1;
  int32_t ep = 1;
  bool dp_attn = false;
  // Independent engines behind a least-loaded router (data parallel replicas).
  int32_t num_replicas = 1;

  // Prefill/decode disaggregation: separate prefill and decode engines with a KV transfer.
  bool disagg = false;
  WorkerTopology prefill;
  WorkerTopology decode;

  SpecDecoding spec_decoding = SpecDecoding::kNone;
  // Draft tokens per step; 0 = the model's default, or 1 for single-node TRT-LLM with DP attention
  // (InferenceX's TRT-LLM MTP scripts: num_nextn_predict_layers 1 with attention DP, else 3).
  int32_t num_spec_tokens = 0;
  double acceptance_length = 0.0;  // mean tokens per verify step (golden AL); 0 = model default

  // Running requests per rank; 0 = the recipe's value where `sim predict` knows it
  // (recipe_max_num_seqs), else kDefaultMaxNumSeqs.
  int32_t max_num_seqs = 0;
  // Token budget per step and rank; 0 = the recipe's value where `sim predict` knows it
  // (recipe_max_num_batched_tokens), else kDefaultMaxNumBatchedTokens.
  int32_t max_num_batched_tokens = 0;
  int32_t long_prefill_token_threshold = 0;  // 0 = no per-request cap below the token budget
  int32_t block_size = 16;
  bool enable_prefix_caching = true;
  // Fraction of HBM for weights + KV cache; 0 = the framework's default (vLLM 0.9; SGLang, TRT-LLM
  // and ATOM size their pools to ~0.95 of memory).
  double gpu_memory_utilization = 0.0;
  int32_t num_gpu_blocks_override = 0;  // KV blocks per rank (0 = from memory, as vLLM's flag)
  int32_t max_model_len = 0;            // 0 = the model's max_position_embeddings
  // SGLang's --scheduler-recv-interval: the scheduler takes in new requests only every N decode
  // steps (at once after a step with prefill tokens, and when idle), so a new request waits about
  // N/2 steps before its prefill. 1 = every step (vLLM, the SGLang default); 0 = the InferenceX
  // recipe's value for the benchmark's concurrency where `sim predict` knows it
  // (recipe_scheduler_recv_interval), else 1.
  int32_t scheduler_recv_interval = 0;
  // TRT-LLM's attention-DP context balancing (`attention_dp_config` with enable_balance): with DP
  // attention, waiting prompts start only in an iteration where every rank has one to start and a
  // free slot (after `batching_wait_iters` more iterations when every rank is also decoding), or
  // when `timeout_iters` iterations passed without that (the counter runs every iteration, so
  // new prompts then start on a fixed cadence), or while some rank has nothing running. kAuto: on
  // for TRT-LLM with DP attention outside disaggregation (InferenceX's single-node TRT-LLM
  // scripts set enable_balance, batching_wait_iters 0, timeout_iters 60); a disaggregated
  // context server never decodes and a generation server receives no prompts, so there it
  // changes nothing.
  AttentionDpBalance attention_dp_balance = AttentionDpBalance::kAuto;
  int32_t attention_dp_timeout_iters = 60;
  int32_t attention_dp_batching_wait_iters = 0;
  // vLLM's KV offloading to host memory (--kv-offloading-size GiB, --kv-offloading-backend
  // native): a CPU tier behind the GPU prefix cache (HostBlockPool in kv_cache.h). The size is
  // one engine's, over all its GPUs (vLLM's cpu_bytes_to_use), split evenly over its DP-attention
  // ranks; 0 = no offloading. Blocks found there are loaded back over the host link
  // (HardwareSpec::host_link_bandwidth_bytes_per_s) instead of being recomputed.
  double kv_offloading_size_gib = 0.0;
  std::string kv_offloading_backend = "native";  // the only backend simulated
  uint64_t seed = 0;
  double jitter_sigma = 0.0;  // lognormal step-time jitter (0 = deterministic step times)

  // Catalog directory holding hardware.json, models.json, calibration.json; empty = the copies
  // embedded at build time from data/catalog/.
  std::string catalog_dir;
};

// Parses the matrix spellings: "none" | "mtp" | "draft_model"; "vllm", "dynamo-vllm", ... .
Result<SpecDecoding> parse_spec_decoding(const std::string& text);
std::string spec_decoding_name(SpecDecoding spec);
Result<FrameworkFamily> framework_family(const std::string& framework);
std::string framework_family_name(FrameworkFamily family);

// Speculative decoding's acceptance model (shared by the engine core and the defaults below): each
// of k drafts is accepted with probability p while the previous ones were, so a verify step emits
// 1 + p + ... + p^k tokens on average. acceptance_probability inverts that for a target length.
double spec_tokens_per_step(double p, int32_t drafts);
double acceptance_probability(double acceptance_length, int32_t drafts);

// The acceptance length used when none is given: the model's golden AL when the draft length is
// the model's default; for another draft length k, 1 + p + ... + p^k with the per-draft
// acceptance p that gives the model's AL at its default length (the acceptance model of the
// engine core), e.g. DeepSeek-R1 AL 2.4 at 3 drafts -> about 1.66 at 1 draft, never above 1 + k.
double default_acceptance_length(double model_acceptance_length, int32_t model_num_spec_tokens,
                                 int32_t num_spec_tokens);

// Checks ranges and cross-field rules (ep divides tp, known model/hardware/precision, acceptance
// length within 1..1+num_spec_tokens, ...); the error names the flag and the allowed values.
Result<void> validate(const EngineConfig& config);

// The receive interval an engine runs with at benchmark concurrency `conc` (0 = unknown): the
// configured value, or for 0 the InferenceX recipes' choice — single-node SGLang on B200/B300
// polls every 10 steps below concurrency 16 and every 30 from 16 ("dynamic
// scheduler-recv-interval" in data/inferencex/perf-changelog.yaml; the measured TTFT of those
// rows grows with TPOT as N/2 steps predict); everything else 1.
int32_t recipe_scheduler_recv_interval(const EngineConfig& config, int32_t conc);

// "auto" | "on" | "off".
Result<AttentionDpBalance> parse_attention_dp_balance(const std::string& text);
std::string attention_dp_balance_name(AttentionDpBalance balance);
// Rules that need the model, for configurations given on the command line (as vLLM checks at
// start-up): the attention heads split evenly over --tp without DP attention, and --ep only for
// MoE models. Measured points and sweep rows are not held to them (legacy rows record a worker's
// GPUs as its tp).
Result<void> check_model_parallelism(const EngineConfig& config);

// Whether a single-node engine of this configuration balances contexts across its DP-attention
// ranks (attention_dp_balance resolved for the framework; false without DP attention).
bool attention_dp_balancing(const EngineConfig& config, FrameworkFamily family);

// Draft tokens per step: the configured value, or for 0 one for single-node TRT-LLM MTP with
// attention DP (the InferenceX scripts' num_nextn_predict_layers), else the model's default.
int32_t recipe_num_spec_tokens(const EngineConfig& config, FrameworkFamily family, int32_t model_default);

// Running requests per rank an engine runs with at benchmark concurrency `conc` (0 = unknown): the
// configured value, or for 0 the InferenceX recipes' choice — single-node TRT-LLM with MTP and DP
// attention runs max_batch_size = conc / tp — else kDefaultMaxNumSeqs.
int32_t recipe_max_num_seqs(const EngineConfig& config, FrameworkFamily family, int32_t conc);

// Token budget per step an engine runs with at benchmark concurrency `conc` and input length
// `isl` (0 = unknown), with `num_spec_tokens` drafts per step: the configured value, or for 0 the
// InferenceX recipes' choice for single-node TRT-LLM — max_num_tokens = the next multiple of 64
// of (drafts + 1) x max_batch_size + isl + 64 with MTP, else max(8192, that of conc + isl + 64) —
// else kDefaultMaxNumBatchedTokens.
int32_t recipe_max_num_batched_tokens(const EngineConfig& config, FrameworkFamily family, int32_t num_spec_tokens,
                                      int32_t conc, int32_t isl);

// Total GPUs the configuration occupies (prefill + decode GPUs when disaggregated).
int32_t total_gpus(const EngineConfig& config);

// The wall-clock engine behind `ixbench sim serve`: runs the engine core on its own thread,
// stepping when each step is due on `clock` (a steady clock in production; a FakeClock in tests
// only together with a poll of the engine). `clock` must outlive the engine. Fails with a clear
// message on an invalid config or unknown model/hardware.
Result<std::unique_ptr<LiveEngine>> make_live_engine(const EngineConfig& config, const Clock& clock);

}  // namespace ix::sim
