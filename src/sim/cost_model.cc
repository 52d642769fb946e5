#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>

namespace ix::sim {

namespace {

// Bytes per weight parameter as served: fp4 checkpoints quantise the routed experts (block
// scales add 1/16), the rest of the model stays in fp8.
double expert_weight_bytes(const std::string& precision) {
  if (precision == "fp4") return 0.5625;
  if (precision == "fp8") return 1.0;
  return 2.0;
}
double dense_weight_bytes(const std::string& precision) {
  return precision == "bf16" ? 2.0 : 1.0;
}
double kv_element_bytes(const std::string& precision) {
  return precision == "bf16" ? 2.0 : 1.0;
}

constexpr double kActivationBytes = 2.0;  // bf16 activations on the wire
constexpr double kDispatchBytes = 1.5;    // fp8 dispatch + bf16 combine, averaged
constexpr double kActivationReserveFraction = 0.02;

// Expected distinct experts touched when `tokens` tokens each pick k of E, with routing
// correlation exponent `a` (Efficiency::expert_routing_exponent): tokens^a independent draws.
double distinct_experts(double tokens, double experts, double k, double a) {
  if (tokens <= 0 || experts <= 0) return 0;
  return experts * (1.0 - std::exp(std::pow(tokens, a) * std::log1p(-k / experts)));
}

}  // namespace

CostModel::CostModel(const ModelSpec& model, const HardwareSpec& hardware, const Efficiency& efficiency,
                     const std::string& precision, int32_t num_spec_tokens, const WorkerTopology& topology)
    : model_(model), hardware_(hardware), efficiency_(efficiency), num_spec_tokens_(num_spec_tokens) {
  // An engine spans max(tp, ep) GPUs (TRT-LLM's attention-DP rows report tp=1, ep=8). Attention
  // is split into data-parallel ranks when dp-attn is on, or when EP spans more GPUs than TP.
  shape_.gpus = std::max({1, topology.tp, topology.ep});
  shape_.dp_ranks = topology.dp_attn ? shape_.gpus : std::max(1, shape_.gpus / std::max(1, topology.tp));
  shape_.attn_tp = shape_.gpus / shape_.dp_ranks;
  shape_.ep = std::max(1, topology.ep);

  const double bw_dense = dense_weight_bytes(precision);
  const double d = model.hidden_size;
  const double attention_params = model.num_layers * model.attention_params_per_layer();
  // Dense FFN layers, shared experts and the router run on the tokens of every DP rank together.
  const double ffn_params = model.dense_params() - attention_params - 2.0 * model.vocab_size * d;
  // A checkpoint that stores its experts narrower than the deployment's precision (DeepSeek-V4's
  // FP4 experts in an "fp8" deployment) is read at its own width; the GEMMs still run at the
  // deployment's precision (peak_expert_ below).
  const double expert_bytes =
      model.checkpoint_expert_precision.empty()
          ? expert_weight_bytes(precision)
          : std::min(expert_weight_bytes(precision), expert_weight_bytes(model.checkpoint_expert_precision));
  weight_bytes_expert_ = model.expert_params() * expert_bytes;
  dense_weight_bytes_rank_ = attention_params * bw_dense / shape_.attn_tp;
  dense_flops_per_token_rank_ = 2.0 * attention_params / shape_.attn_tp;
  lm_head_flops_per_sample_rank_ = 2.0 * model.vocab_size * d / shape_.attn_tp;
  // Stored for the shared classes: per GPU.
  ffn_weight_bytes_gpu_ = ffn_params * bw_dense / shape_.gpus;
  ffn_flops_per_token_gpu_ = 2.0 * ffn_params / shape_.gpus;
  lm_head_bytes_rank_ = model.vocab_size * d * bw_dense / shape_.attn_tp;

  weight_bytes_per_gpu_ = dense_weight_bytes_rank_ + ffn_weight_bytes_gpu_ + 2.0 * lm_head_bytes_rank_ +
                          model.moe_layers() * double(model.num_experts) * weight_bytes_expert_ / shape_.gpus;

  kv_bytes_per_token_total_ = model.kv_elements_per_token() * kv_element_bytes(precision);
  // MLA's latent and CSA's shared entry are replicated on every TP rank; GQA splits KV heads
  // (replicated past num_kv_heads ranks).
  kv_bytes_per_token_rank_ = model.shared_kv()
                                 ? kv_bytes_per_token_total_
                                 : kv_bytes_per_token_total_ / std::min(shape_.attn_tp, model.num_kv_heads);

  peak_dense_ = hardware.peak_flops(precision == "bf16" ? "bf16" : "fp8");
  peak_expert_ = hardware.peak_flops(precision);
  peak_attention_ = hardware.peak_bf16_flops;
  const bool in_domain = shape_.gpus <= hardware.scaleup_domain_gpus;
  link_latency_ = in_domain ? hardware.scaleup_latency_s : hardware.scaleout_latency_s;
  // Collectives. Inside one scale-up domain (NVLink, Infinity Fabric) every byte moves over it:
  // ring all-reduce 2(t−1)/t of the message per rank, all-to-all (x−1)/x. A TP group spanning
  // nodes (H100 TP16: two 8-GPU nodes) all-reduces hierarchically, as NCCL does: reduce-scatter
  // inside each node, all-reduce of each GPU's 1/g shard across the nodes with every GPU on its
  // own NIC, all-gather inside the node. (Sending the whole message through one NIC instead
  // made an 8k-token prefill on H100 TP16 spend 0.7 s in all-reduces, ~6× NCCL's.) An all-to-all
  // across nodes still charges its whole dispatch to the NIC: splitting off the intra-node share
  // made the measured cross-node EP16 decode points (MI355X MoRI, H100 TRT-LLM) look faster than
  // they ran, and unseen MI355X deployments worse (TTFT 12.7 → 17.7 %, docs/simulator.md).
  const double up = hardware.scaleup_bandwidth_bytes_per_s * efficiency.link_efficiency;
  const double out = hardware.scaleout_bandwidth_bytes_per_s * efficiency.link_efficiency;
  const int32_t per_node = std::max(1, in_domain ? hardware.scaleup_domain_gpus : hardware.gpus_per_node);
  if (const int32_t t = shape_.attn_tp; t > 1) {
    const int32_t g = std::min(t, per_node);  // ranks of the group inside one node
    const int32_t nodes = (t + g - 1) / g;
    allreduce_s_per_byte_ = 2.0 * (g - 1) / g / up + (nodes > 1 ? 2.0 * (nodes - 1) / nodes / g / out : 0.0);
  }
  if (const int32_t x = exchange_ranks(); x > 1) all_to_all_s_per_byte_ = double(x - 1) / x / (in_domain ? up : out);
}

int32_t CostModel::exchange_ranks() const {
  if (!model_.is_moe()) return 1;
  return shape_.ep > 1 ? shape_.ep : (shape_.dp_ranks > 1 ? shape_.dp_ranks : 1);
}

double CostModel::gemm_mfu(double rows) const {
  const double lo = std::log2(16.0);
  const double hi = std::log2(4096.0);
  const double x = std::clamp((std::log2(std::max(rows, 1.0)) - lo) / (hi - lo), 0.0, 1.0);
  return efficiency_.gemm_mfu_min + (efficiency_.gemm_mfu_max - efficiency_.gemm_mfu_min) * x;
}

int64_t CostModel::cuda_graph_padded(int64_t tokens) {
  if (tokens <= 0) return 0;
  if (tokens <= 4) {
    int64_t size = 1;
    while (size < tokens) size *= 2;
    return size;
  }
  if (tokens <= 512) return (tokens + 7) / 8 * 8;
  return tokens;  // larger batches run eagerly
}

double CostModel::kv_capacity_tokens(double gpu_memory_utilization) const {
  const double available = gpu_memory_utilization * hardware_.hbm_bytes - weight_bytes_per_gpu_ -
                           kActivationReserveFraction * hardware_.hbm_bytes;
  return available / kv_bytes_per_token_rank_;
}

double CostModel::weights_only_utilization() const {
  return weight_bytes_per_gpu_ / hardware_.hbm_bytes + kActivationReserveFraction;
}

double CostModel::kv_transfer_seconds(int32_t prompt_tokens, bool same_domain) const {
  const double bandwidth =
      (same_domain ? hardware_.scaleup_bandwidth_bytes_per_s : hardware_.scaleout_bandwidth_bytes_per_s) *
      efficiency_.link_efficiency;
  return efficiency_.kv_transfer_setup_s + prompt_tokens * kv_bytes_per_token_total_ / bandwidth;
}

double CostModel::host_transfer_seconds(double tokens) const {
  return tokens * kv_bytes_per_token_rank_ / hardware_.host_link_bandwidth_bytes_per_s;
}

StepCost CostModel::step(std::span<const RankLoad> ranks) const {
  const Efficiency& e = efficiency_;
  const double memory_rate = e.mem_efficiency * hardware_.hbm_bandwidth_bytes_per_s / e.memory_scale;
  // Adds one roofline class to `buckets`: the bound that wins is charged to its bucket. The
  // share `prefill` of the FLOPs belongs to prefill tokens (charged to kPrefill, · prefill_scale).
  auto roofline = [&](CostBuckets& buckets, double flops, double peak_rate, double bytes, double prefill = 0.0) {
    const double compute_s = flops / peak_rate * e.compute_scale;
    const double decode_s = compute_s * (1.0 - prefill);
    const double prefill_s = compute_s * prefill * e.prefill_scale;
    const double memory_s = bytes / memory_rate;
    if (decode_s + prefill_s >= memory_s) {
      buckets[kCompute] += decode_s;
      buckets[kPrefill] += prefill_s;
    } else {
      buckets[kMemory] += memory_s;
    }
  };
  const double layers = model_.num_layers;
  const double kv_layers = layers * model_.kv_layer_fraction;
  const double heads_rank = double(model_.num_heads) / shape_.attn_tp;
  // Per head and cached token: scores over the key dims plus the weighted sum over the value dims.
  // MLA decodes in absorbed form over the latent (key = latent + rope, value = latent) and
  // prefills with up-projected heads; CSA's entry is key and value, GQA's heads are K and V.
  const bool mla = model_.attention == Attention::kMla;
  const double decode_dims = mla ? double(2 * model_.kv_lora_rank + model_.qk_rope_head_dim) : 2.0 * model_.head_dim;
  const double prefill_dims =
      mla ? double(model_.qk_nope_head_dim + model_.qk_rope_head_dim + model_.v_head_dim) : 2.0 * model_.head_dim;

  int64_t group_tokens = 0;
  bool any_prefill = false;
  bool any_spec = false;
  for (const auto& rank : ranks) {
    group_tokens += rank.tokens;
    any_prefill = any_prefill || rank.prefill_tokens > 0;
    any_spec = any_spec || rank.spec_requests > 0;
  }

  // Per-rank classes (attention projections, attention, fixed costs, TP/EP communication): the
  // step waits for the slowest rank.
  CostBuckets slowest{};
  double slowest_total = -1;
  for (const auto& rank : ranks) {
    if (rank.tokens == 0 && ranks.size() > 1) continue;
    CostBuckets b{};
    const double rows = any_prefill ? double(rank.tokens) : double(cuda_graph_padded(rank.tokens));
    const double rank_prefill = rank.tokens > 0 ? double(rank.prefill_tokens) / double(rank.tokens) : 0.0;
    roofline(b, dense_flops_per_token_rank_ * rows + lm_head_flops_per_sample_rank_ * rank.sampled,
             gemm_mfu(rows) * peak_dense_, dense_weight_bytes_rank_ + lm_head_bytes_rank_, rank_prefill);
    // Decode attention (MLA in its absorbed form) and prefill attention are separate kernels.
    // Decode attention has its own fitted factor: its cost grows with batch x context, unlike the
    // weight reads, and its kernels are further from the roofline on some devices.
    if (rank.decode_context_tokens > 0) {
      const double flops_s =
          2.0 * kv_layers * heads_rank * decode_dims * rank.decode_token_context / (e.attention_mfu * peak_attention_);
      const double bytes_s = rank.decode_context_tokens * kv_bytes_per_token_rank_ /
                             (e.mem_efficiency * hardware_.hbm_bandwidth_bytes_per_s);
      b[kAttention] += std::max(flops_s, bytes_s) * e.attention_scale;
    }
    if (rank.prefill_tokens > 0)
      roofline(b, 2.0 * kv_layers * heads_rank * prefill_dims * rank.prefill_token_context,
               e.attention_mfu * peak_attention_,
               (rank.prefill_context_tokens + rank.prefill_tokens) * kv_bytes_per_token_rank_, 1.0);
    b[kFixed] += (e.step_overhead_s + layers * e.layer_overhead_s) * e.fixed_scale;
    b[kRequest] += rank.requests * e.request_overhead_s * e.fixed_scale * e.request_scale;
    if (shape_.attn_tp > 1) {
      b[kOther] +=
          2.0 * layers * (link_latency_ + rank.tokens * model_.hidden_size * kActivationBytes * allreduce_s_per_byte_);
    }
    if (exchange_ranks() > 1) {
      b[kOther] += 2.0 * model_.moe_layers() *
                   (link_latency_ + rank.tokens * double(model_.experts_per_token) * model_.hidden_size *
                                        kDispatchBytes * all_to_all_s_per_byte_) *
                   (1.0 - e.comm_overlap);
    }
    double total = 0;
    for (double value : b) total += value;
    if (total > slowest_total) {
      slowest_total = total;
      slowest = b;
    }
  }

  // Classes shared by the whole instance: dense FFN / shared experts and routed experts see the
  // tokens of all DP ranks.
  CostBuckets buckets = slowest;
  const double group_rows = any_prefill ? double(group_tokens) : double(cuda_graph_padded(group_tokens));
  int64_t group_prefill_tokens = 0;
  for (const auto& rank : ranks) group_prefill_tokens += rank.prefill_tokens;
  const double group_prefill = group_tokens > 0 ? double(group_prefill_tokens) / double(group_tokens) : 0.0;
  if (ffn_flops_per_token_gpu_ > 0)
    roofline(buckets, ffn_flops_per_token_gpu_ * group_rows, gemm_mfu(group_rows) * peak_dense_, ffn_weight_bytes_gpu_,
             group_prefill);
  if (model_.is_moe() && group_tokens > 0) {
    const double k = model_.experts_per_token;
    const double touched = distinct_experts(double(group_tokens), model_.num_experts, k, e.expert_routing_exponent);
    const double rows_per_expert = group_tokens * k / std::max(touched, 1.0);
    roofline(buckets, 2.0 * group_tokens * k * model_.expert_params() * model_.moe_layers() / shape_.gpus,
             gemm_mfu(rows_per_expert) * peak_expert_,
             touched * weight_bytes_expert_ * model_.moe_layers() / shape_.gpus, group_prefill);
  }

  // Drafting: k sequential draft passes of a small head, each a fraction of a decode step.
  if (any_spec && num_spec_tokens_ > 0) {
    const double factor = 1.0 + num_spec_tokens_ * e.draft_cost_fraction;
    for (auto& value : buckets) value *= factor;
  }
  StepCost cost;
  cost.buckets = buckets;
  for (double value : buckets) cost.seconds += value;
  return cost;
}

}  // namespace ix::sim
