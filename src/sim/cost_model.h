// Per-step roofline cost model (SIMULATOR.md "Step time"): how long one engine step takes on one
// engine instance, given what each of its ranks computes in that step.
//
//   T = Σ_class max(FLOPs_c / (MFU_c · peak), bytes_c / (η_mem · HBM_BW))      classes: dense
//       GEMMs, attention, routed experts
//     + TP all-reduce + EP all-to-all · (1 − overlap) + t_step + L·t_layer + B·t_req
//
// With data-parallel attention every rank has its own batch; the routed experts see the tokens
// of all ranks, and the step ends when the slowest rank does. The result is split into buckets
// (fixed, memory-bound, compute-bound, communication) so calibration can refit the multipliers
// without re-simulating.
//
// Thread-safety: immutable after construction.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "sim/calibration.h"
#include "sim/catalog.h"
#include "sim/engine_config.h"

namespace ix::sim {

// What one rank runs in one step, accumulated by the scheduler.
struct RankLoad {
  int64_t tokens = 0;    // tokens computed (prefill chunks + decode + spec verify)
  int32_t requests = 0;  // requests scheduled
  int32_t sampled = 0;   // requests whose logits are computed (caught up this step)
  int64_t prefill_tokens = 0;
  int32_t spec_requests = 0;          // decode requests verifying drafts
  double decode_token_context = 0;    // Σ n_i·ctx_i over decode items (attention work)
  double decode_context_tokens = 0;   // Σ ctx_i over decode items (KV read)
  double prefill_token_context = 0;   // Σ n_i·(ctx_i + n_i/2) over prefill chunks
  double prefill_context_tokens = 0;  // Σ ctx_i over prefill chunks (KV read)

  // Adds one scheduled request: `new_tokens` computed on top of `context_tokens` already cached.
  void add(int32_t new_tokens, int32_t context_tokens, bool decode, bool spec) {
    tokens += new_tokens;
    requests += 1;
    if (decode) {
      decode_token_context += double(new_tokens) * (context_tokens + 0.5 * new_tokens);
      decode_context_tokens += context_tokens + new_tokens;
      if (spec) spec_requests += 1;
    } else {
      prefill_tokens += new_tokens;
      prefill_token_context += double(new_tokens) * (context_tokens + 0.5 * new_tokens);
      prefill_context_tokens += context_tokens;
    }
  }
};

// Where a step's time goes; calibration rescales each bucket by its fitted multipliers:
//   kFixed      t_step + L·t_layer                       · fixed_scale
//   kMemory     weight and prefill-KV bytes / bandwidth    · memory_scale
//   kCompute    decode GEMM FLOPs / (MFU · peak)           · compute_scale
//   kOther      TP/EP communication                        (not fitted)
//   kApi        request overhead outside the engine steps (per-request attribution only)
//   kRequest    B·t_req (per scheduled request)            · fixed_scale · request_scale
//   kAttention  decode attention (KV read or FLOPs)        · attention_scale
//   kPrefill    prefill GEMM share + prefill attention     · compute_scale · prefill_scale
//   kFrontend   front-end delay before the scheduler       · frontend_delay_s2 (per request)
enum CostBucket {
  kFixed = 0,
  kMemory = 1,
  kCompute = 2,
  kOther = 3,
  kApi = 4,
  kRequest = 5,
  kAttention = 6,
  kPrefill = 7,
  kFrontend = 8,
  kNumBuckets = 9
};
using CostBuckets = std::array<double, kNumBuckets>;

struct StepCost {
  double seconds = 0;
  CostBuckets buckets{};  // seconds per bucket; sums to `seconds`
};

// Static properties of one engine instance (one worker of a given topology).
struct InstanceShape {
  int32_t gpus = 1;      // tp
  int32_t attn_tp = 1;   // ranks sharing one attention batch (tp, or 1 with dp-attn)
  int32_t dp_ranks = 1;  // attention batches (tp with dp-attn, else 1)
  int32_t ep = 1;
};

class CostModel {
 public:
  CostModel(const ModelSpec& model, const HardwareSpec& hardware, const Efficiency& efficiency,
            const std::string& precision, int32_t num_spec_tokens, const WorkerTopology& topology);

  // Step time of the instance; `ranks` has one entry per DP rank.
  StepCost step(std::span<const RankLoad> ranks) const;

  const InstanceShape& shape() const { return shape_; }
  double weight_bytes_per_gpu() const { return weight_bytes_per_gpu_; }
  double kv_bytes_per_token_per_rank() const { return kv_bytes_per_token_rank_; }
  // KV-cache tokens one rank can hold at this memory utilisation (<= 0: the model does not fit).
  double kv_capacity_tokens(double gpu_memory_utilization) const;
  // The utilization at which the weights and the activation reserve fill the budget (no KV left).
  double weights_only_utilization() const;
  // Prefill -> decode KV transfer of `prompt_tokens` (scale-out link unless both sides share
  // the scale-up domain).
  double kv_transfer_seconds(int32_t prompt_tokens, bool same_domain) const;
  // One GPU's share of `tokens` of KV over its host link, one direction (KV offloading's loads
  // and stores; every GPU of a rank moves its own share at once).
  double host_transfer_seconds(double tokens) const;
  // GEMM MFU at M rows (log-linear between 16 and 4096 rows).
  double gemm_mfu(double rows) const;
  // Decode batches run as CUDA graphs of fixed sizes; the batch is padded up to the next one.
  static int64_t cuda_graph_padded(int64_t tokens);

 private:
  // Ranks that exchange tokens in each MoE layer (ep, else the DP-attention ranks; 1 = none).
  int32_t exchange_ranks() const;

  ModelSpec model_;
  HardwareSpec hardware_;
  Efficiency efficiency_;
  InstanceShape shape_;
  int32_t num_spec_tokens_ = 0;
  double weight_bytes_expert_ = 0;      // one routed expert (all its layers count separately)
  double dense_weight_bytes_rank_ = 0;  // non-expert weights read per rank per step
  double dense_flops_per_token_rank_ = 0;
  double lm_head_flops_per_sample_rank_ = 0;
  double lm_head_bytes_rank_ = 0;
  double ffn_weight_bytes_gpu_ = 0;
  double ffn_flops_per_token_gpu_ = 0;
  double weight_bytes_per_gpu_ = 0;
  double kv_bytes_per_token_rank_ = 0;
  double kv_bytes_per_token_total_ = 0;
  double peak_dense_ = 0;
  double peak_expert_ = 0;
  double peak_attention_ = 0;
  // Seconds per byte of one rank's message: TP all-reduce of the activations (attn_tp ranks) and
  // the MoE all-to-all (dispatch or combine over the exchange group), see the constructor.
  double allreduce_s_per_byte_ = 0;
  double all_to_all_s_per_byte_ = 0;
  double link_latency_ = 0;
};

}  // namespace ix::sim
