#include "sim/engine_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "common/strings.h"
#include "sim/engine_core.h"

namespace ix::sim {

namespace {

Result<void> check_precision(const std::string& precision) {
  if (is_known_precision(precision)) return {};
  return fail(ErrorCode::kInvalidArgument, fmt::format("unknown precision '{}'; expected fp4, fp8 or bf16", precision));
}

int32_t engine_gpus(const WorkerTopology& topology) {
  return std::max({1, topology.tp, topology.ep});
}

// Bounds far above any deployment that keep a typo from allocating per-rank KV pools by the
// thousand (--replicas 100000 needed ~270 GB).
constexpr int32_t kMaxParallel = 1024;
constexpr int32_t kMaxEngines = 1024;
constexpr int32_t kMaxBlocksPerRank = 1 << 24;
constexpr int64_t kMaxRanks = 2048;                       // schedulers (DP-attention ranks) over all engines
constexpr int64_t kMaxOverrideBlocks = int64_t{1} << 27;  // ranks x --num-gpu-blocks-override

int64_t scheduler_ranks(const WorkerTopology& topology) {
  return int64_t{std::max(1, topology.num_workers)} * (topology.dp_attn ? std::max(1, topology.tp) : 1);
}

Result<void> check_topology(const WorkerTopology& topology, std::string_view prefix, bool need_workers) {
  if (topology.tp < 1 || topology.tp > kMaxParallel)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--{}tp must be in [1, {}], got {}", prefix, kMaxParallel, topology.tp));
  if (topology.ep < 1 || topology.ep > kMaxParallel)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--{}ep must be in [1, {}], got {}", prefix, kMaxParallel, topology.ep));
  const int32_t hi = std::max(topology.tp, topology.ep);
  const int32_t lo = std::min(topology.tp, topology.ep);
  if (hi % lo != 0)
    return fail(ErrorCode::kInvalidArgument, fmt::format("--{}tp ({}) and --{}ep ({}) must divide one another", prefix,
                                                         topology.tp, prefix, topology.ep));
  if (need_workers && (topology.num_workers < 1 || topology.num_workers > kMaxEngines))
    return fail(ErrorCode::kInvalidArgument, fmt::format("--{}workers must be in [1, {}] with disaggregation, got {}",
                                                         prefix, kMaxEngines, topology.num_workers));
  return {};
}

// InferenceX's single-node TRT-LLM scripts (dsr1_*_trt*.sh) set the limits below.
bool single_node_trt(const EngineConfig& config, FrameworkFamily family) {
  return family == FrameworkFamily::kTrtllm && !config.disagg;
}

// The MTP scripts' max_batch_size: conc / tp per rank with attention DP, conc without.
int32_t trt_mtp_batch(const EngineConfig& config, int32_t conc) {
  return config.dp_attn ? std::max(1, conc / std::max(1, config.tp)) : conc;
}

// vLLM's --kv-offloading-size / --kv-offloading-backend, as far as the simulator models them.
Result<void> check_kv_offloading(const EngineConfig& config) {
  if (!(config.kv_offloading_size_gib >= 0) || !std::isfinite(config.kv_offloading_size_gib) ||
      config.kv_offloading_size_gib > (1 << 20))
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--kv-offloading-size must be GiB in [0, 2^20] (0 = no offloading), got {}",
                            config.kv_offloading_size_gib));
  if (config.kv_offloading_backend != "native")
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--kv-offloading-backend '{}' is not simulated; use 'native' (vLLM's CPU offloading)",
                            config.kv_offloading_backend));
  if (config.kv_offloading_size_gib > 0 && config.disagg)
    return fail(ErrorCode::kInvalidArgument,
                "--kv-offloading-size is simulated for aggregated engines only; drop it or the "
                "--prefill-workers/--decode-workers flags");
  return {};
}

}  // namespace

double spec_tokens_per_step(double p, int32_t drafts) {
  double sum = 1.0, term = 1.0;
  for (int32_t i = 0; i < drafts; ++i) {
    term *= p;
    sum += term;
  }
  return sum;
}

double acceptance_probability(double acceptance_length, int32_t drafts) {
  if (drafts <= 0) return 0.0;
  if (acceptance_length >= 1.0 + drafts) return 1.0;
  double lo = 0.0, hi = 1.0;
  for (int iteration = 0; iteration < 64; ++iteration) {
    const double p = 0.5 * (lo + hi);
    (spec_tokens_per_step(p, drafts) < acceptance_length ? lo : hi) = p;
  }
  return 0.5 * (lo + hi);
}

double default_acceptance_length(double model_acceptance_length, int32_t model_num_spec_tokens,
                                 int32_t num_spec_tokens) {
  if (num_spec_tokens <= 0) return 1.0;
  if (model_num_spec_tokens <= 0 || num_spec_tokens == model_num_spec_tokens) return model_acceptance_length;
  if (model_acceptance_length <= 1.0) return 1.0;
  return spec_tokens_per_step(acceptance_probability(model_acceptance_length, model_num_spec_tokens), num_spec_tokens);
}

Result<SpecDecoding> parse_spec_decoding(const std::string& text) {
  const std::string value = ascii_lower(text);
  if (value == "none" || value.empty()) return SpecDecoding::kNone;
  if (value == "mtp") return SpecDecoding::kMtp;
  if (value == "draft_model" || value == "draft-model" || value == "eagle" || value == "eagle3")
    return SpecDecoding::kDraftModel;
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("unknown spec-decoding '{}'; expected none, mtp or draft_model", text));
}

std::string spec_decoding_name(SpecDecoding spec) {
  switch (spec) {
    case SpecDecoding::kNone: return "none";
    case SpecDecoding::kMtp: return "mtp";
    case SpecDecoding::kDraftModel: return "draft_model";
  }
  return "none";
}

Result<FrameworkFamily> framework_family(const std::string& framework) {
  std::string value = ascii_lower(framework);
  for (std::string_view prefix : {"dynamo-", "mori-", "llmd-", "llm-d-"})
    if (value.starts_with(prefix)) value = value.substr(prefix.size());
  if (value.ends_with("-disagg")) value = value.substr(0, value.size() - 7);
  if (value == "vllm" || value == "sim") return FrameworkFamily::kVllm;
  if (value == "sglang") return FrameworkFamily::kSglang;
  if (value == "trt" || value == "trtllm" || value == "trt-llm" || value == "tensorrt-llm")
    return FrameworkFamily::kTrtllm;
  if (value == "atom") return FrameworkFamily::kAtom;
  return fail(
      ErrorCode::kInvalidArgument,
      fmt::format("unknown framework '{}'; expected vllm, sglang, trt or atom, optionally as dynamo-/mori-/llmd- "
                  "or -disagg variants",
                  framework));
}

std::string framework_family_name(FrameworkFamily family) {
  switch (family) {
    case FrameworkFamily::kVllm: return "vllm";
    case FrameworkFamily::kSglang: return "sglang";
    case FrameworkFamily::kTrtllm: return "trt";
    case FrameworkFamily::kAtom: return "atom";
  }
  return "vllm";
}

int32_t total_gpus(const EngineConfig& config) {
  if (config.disagg)
    return config.prefill.num_workers * engine_gpus(config.prefill) +
           config.decode.num_workers * engine_gpus(config.decode);
  return std::max(1, config.num_replicas) * engine_gpus(WorkerTopology{1, config.tp, config.ep, config.dp_attn});
}

Result<void> validate(const EngineConfig& config) {
  if (auto ok = check_precision(config.precision); !ok) return ok;
  if (auto family = framework_family(config.framework); !family) return fail(family.error());
  if (config.disagg) {
    if (auto ok = check_topology(config.prefill, "prefill-", true); !ok) return ok;
    if (auto ok = check_topology(config.decode, "decode-", true); !ok) return ok;
  } else {
    if (auto ok = check_topology(WorkerTopology{1, config.tp, config.ep, config.dp_attn}, "", false); !ok) return ok;
    if (config.num_replicas < 1 || config.num_replicas > kMaxEngines)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--replicas must be in [1, {}], got {}", kMaxEngines, config.num_replicas));
  }
  const int64_t ranks =
      config.disagg ? scheduler_ranks(config.prefill) + scheduler_ranks(config.decode)
                    : scheduler_ranks(WorkerTopology{config.num_replicas, config.tp, config.ep, config.dp_attn});
  if (ranks > kMaxRanks)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{} schedulers (engines x DP-attention ranks) exceed the simulator's {}: use fewer "
                            "--replicas / workers or a smaller --tp with --dp-attn",
                            ranks, kMaxRanks));
  if (ranks * config.num_gpu_blocks_override > kMaxOverrideBlocks)
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("--num-gpu-blocks-override {} over {} ranks is {} KV blocks, more than the simulator's {}",
                    config.num_gpu_blocks_override, ranks, ranks * config.num_gpu_blocks_override, kMaxOverrideBlocks));
  if (config.spec_decoding == SpecDecoding::kNone && (config.num_spec_tokens > 0 || config.acceptance_length > 0))
    return fail(ErrorCode::kInvalidArgument,
                "--num-spec-tokens and --acceptance-length apply to speculative decoding: add --spec-decoding mtp "
                "(or draft_model), or drop them");
  if (config.num_spec_tokens < 0 || config.num_spec_tokens > 16)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--num-spec-tokens must be in [0, 16], got {}", config.num_spec_tokens));
  if (!(config.acceptance_length >= 0) || !std::isfinite(config.acceptance_length))
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("--acceptance-length must be >= 1 (or 0 for the model default), got {}", config.acceptance_length));
  if (config.max_num_seqs < 0)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--max-num-seqs must be >= 1 (or 0 for the recipe default), got {}", config.max_num_seqs));
  for (const auto* side : {&config.prefill, &config.decode}) {
    const char* name = side == &config.prefill ? "prefill" : "decode";
    if (side->max_num_seqs < 0)
      return fail(
          ErrorCode::kInvalidArgument,
          fmt::format("--{}-max-num-seqs must be >= 1 (or 0 for --max-num-seqs), got {}", name, side->max_num_seqs));
    if (side->max_num_batched_tokens < 0)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--{}-max-num-batched-tokens must be >= 1 (or 0 for --max-num-batched-tokens), got {}",
                              name, side->max_num_batched_tokens));
    if (side->max_kv_tokens < 0 || side->max_kv_tokens > (int64_t(1) << 40))
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--{}-max-kv-tokens must be in [1, 2^40] (or 0 for what memory holds), got {}", name,
                              side->max_kv_tokens));
    if (side->reserved_decode_tokens < 0 || side->reserved_decode_tokens > (1 << 20))
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--decode-reserved-tokens must be in [0, 2^20], got {}", side->reserved_decode_tokens));
  }
  if (config.max_num_batched_tokens < 0)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--max-num-batched-tokens must be >= 1 (or 0 for the recipe default), got {}",
                            config.max_num_batched_tokens));
  if (config.long_prefill_token_threshold < 0)
    return fail(ErrorCode::kInvalidArgument, "--long-prefill-token-threshold must be >= 0");
  if (config.block_size < 1 || config.block_size > 4096)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--block-size must be in [1, 4096], got {}", config.block_size));
  if (!(config.gpu_memory_utilization >= 0 && config.gpu_memory_utilization <= 1))
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--gpu-memory-utilization must be in (0, 1] (0 = framework default), got {}",
                            config.gpu_memory_utilization));
  if (config.num_gpu_blocks_override < 0 || config.num_gpu_blocks_override > kMaxBlocksPerRank)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--num-gpu-blocks-override must be in [0, {}] (0 = from memory), got {}", kMaxBlocksPerRank,
                            config.num_gpu_blocks_override));
  if (config.max_model_len < 0) return fail(ErrorCode::kInvalidArgument, "--max-model-len must be >= 0");
  if (config.scheduler_recv_interval < 0)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--scheduler-recv-interval must be >= 1 (or 0 for the recipe default), got {}",
                            config.scheduler_recv_interval));
  if (config.attention_dp_timeout_iters < 1)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--attention-dp-timeout-iters must be >= 1, got {}", config.attention_dp_timeout_iters));
  if (config.attention_dp_batching_wait_iters < 0)
    return fail(ErrorCode::kInvalidArgument, fmt::format("--attention-dp-batching-wait-iters must be >= 0, got {}",
                                                         config.attention_dp_batching_wait_iters));
  if (!(config.jitter_sigma >= 0 && config.jitter_sigma < 1))
    return fail(ErrorCode::kInvalidArgument, fmt::format("--jitter must be in [0, 1), got {}", config.jitter_sigma));
  if (auto ok = check_kv_offloading(config); !ok) return ok;
  auto resolved = resolve_engine(config);
  if (!resolved) return fail(resolved.error());
  return {};
}

Result<void> check_model_parallelism(const EngineConfig& config) {
  Result<Catalog> catalog = config.catalog_dir.empty() ? Catalog::builtin() : Catalog::load_dir(config.catalog_dir);
  if (!catalog) return fail(catalog.error());
  auto found = catalog->model(config.model);
  if (!found) return fail(found.error());
  const ModelSpec* model = *found;
  auto check = [&](const WorkerTopology& t, std::string_view prefix) -> Result<void> {
    if (!t.dp_attn && t.tp > 1 && model->num_heads > 0 && model->num_heads % t.tp != 0)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--{}tp {} does not divide {}'s {} attention heads (each rank needs whole heads); use a "
                              "divisor of {}, or --{}dp-attn",
                              prefix, t.tp, model->name, model->num_heads, model->num_heads, prefix));
    if (t.ep > 1 && !model->is_moe())
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--{}ep {}: {} is a dense model (no experts to spread); drop --{}ep", prefix, t.ep,
                              model->name, prefix));
    return {};
  };
  if (config.disagg) {
    if (auto ok = check(config.prefill, "prefill-"); !ok) return ok;
    if (auto ok = check(config.decode, "decode-"); !ok) return ok;
  } else if (auto ok = check(WorkerTopology{1, config.tp, config.ep, config.dp_attn}, ""); !ok) {
    return ok;
  }
  return {};
}

Result<AttentionDpBalance> parse_attention_dp_balance(const std::string& text) {
  const std::string value = ascii_lower(text);
  if (value == "auto") return AttentionDpBalance::kAuto;
  if (value == "on") return AttentionDpBalance::kOn;
  if (value == "off") return AttentionDpBalance::kOff;
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("--attention-dp-balance must be auto, on or off, got '{}'", text));
}

std::string attention_dp_balance_name(AttentionDpBalance balance) {
  switch (balance) {
    case AttentionDpBalance::kOn: return "on";
    case AttentionDpBalance::kOff: return "off";
    case AttentionDpBalance::kAuto: break;
  }
  return "auto";
}

bool attention_dp_balancing(const EngineConfig& config, FrameworkFamily family) {
  if (config.disagg || !config.dp_attn) return false;
  if (config.attention_dp_balance == AttentionDpBalance::kAuto) return family == FrameworkFamily::kTrtllm;
  return config.attention_dp_balance == AttentionDpBalance::kOn;
}

int32_t recipe_num_spec_tokens(const EngineConfig& config, FrameworkFamily family, int32_t model_default) {
  if (config.num_spec_tokens > 0) return config.num_spec_tokens;
  if (single_node_trt(config, family) && config.dp_attn && config.spec_decoding == SpecDecoding::kMtp) return 1;
  return model_default;
}

int32_t recipe_max_num_seqs(const EngineConfig& config, FrameworkFamily family, int32_t conc) {
  if (config.max_num_seqs > 0) return config.max_num_seqs;
  if (conc > 0 && single_node_trt(config, family) && config.dp_attn && config.spec_decoding == SpecDecoding::kMtp)
    return trt_mtp_batch(config, conc);
  return kDefaultMaxNumSeqs;
}

int32_t recipe_max_num_batched_tokens(const EngineConfig& config, FrameworkFamily family, int32_t num_spec_tokens,
                                      int32_t conc, int32_t isl) {
  if (config.max_num_batched_tokens > 0) return config.max_num_batched_tokens;
  if (conc <= 0 || isl <= 0 || !single_node_trt(config, family)) return kDefaultMaxNumBatchedTokens;
  const auto round64 = [](int64_t tokens) { return (tokens + 63) / 64 * 64; };
  int64_t tokens = 0;
  if (config.spec_decoding == SpecDecoding::kMtp) {
    const int64_t batch = config.max_num_seqs > 0 ? config.max_num_seqs : trt_mtp_batch(config, conc);
    tokens = round64((int64_t{num_spec_tokens} + 1) * batch + isl + 64);
  } else {
    tokens = std::max<int64_t>(kDefaultMaxNumBatchedTokens, round64(int64_t{conc} + isl + 64));
  }
  return static_cast<int32_t>(std::min<int64_t>(tokens, INT32_MAX));
}

int32_t recipe_scheduler_recv_interval(const EngineConfig& config, int32_t conc) {
  if (config.scheduler_recv_interval > 0) return config.scheduler_recv_interval;
  if (conc <= 0 || config.disagg || ascii_lower(config.framework) != "sglang") return 1;
  const std::string hardware = ascii_lower(config.hardware);
  const bool blackwell = hardware.starts_with("b200") || hardware.starts_with("b300");
  if (!blackwell) return 1;
  return conc < 16 ? 10 : 30;
}

Result<ResolvedEngine> resolve_engine(const EngineConfig& config, const CalibrationTable* calibration) {
  if (auto ok = check_precision(config.precision); !ok) return fail(ok.error());
  Result<Catalog> catalog = config.catalog_dir.empty() ? Catalog::builtin() : Catalog::load_dir(config.catalog_dir);
  if (!catalog) return fail(catalog.error());
  auto hardware = catalog->hardware(config.hardware);
  if (!hardware) return fail(hardware.error());
  auto model = catalog->model(config.model);
  if (!model) return fail(model.error());
  auto family = framework_family(config.framework);
  if (!family) return fail(family.error());

  ResolvedEngine engine;
  engine.config = config;
  engine.hardware = **hardware;
  engine.model = **model;
  engine.family = *family;
  engine.config.hardware = engine.hardware.name;
  engine.config.model = engine.model.name;

  CalibrationTable table;
  if (calibration != nullptr) {
    table = *calibration;
  } else {
    auto file = optional_catalog_file(config.catalog_dir, "calibration.json", embedded_calibration_json());
    if (!file) return fail(file.error());
    auto parsed = CalibrationTable::parse(file->text, file->origin);
    if (!parsed) return fail(parsed.error());
    table = std::move(*parsed);
  }
  const std::string framework = ascii_lower(config.framework);
  const std::string spec = spec_decoding_name(config.spec_decoding);
  const CalibrationGroup* group = table.find(engine.hardware.name, framework, config.precision, spec);
  engine.calibration_group = CalibrationTable::describe(group);
  // A single-node engine on a device whose factors come only from multi-node deployments (router,
  // KV transfer and cross-node communication folded in) borrows the factors of its sibling with the
  // same GPU die, fitted on single-node rows.
  if (!config.disagg && group && group->single_node_rows == 0 && !engine.hardware.calibration_sibling.empty()) {
    const CalibrationGroup* sibling =
        table.find(engine.hardware.calibration_sibling, framework, config.precision, spec);
    if (sibling && sibling->single_node_rows != 0) {
      group = sibling;
      engine.calibration_group = fmt::format("{} (single-node engine: {}'s calibration has no single-node rows)",
                                             CalibrationTable::describe(group), engine.hardware.name);
    }
  }
  engine.efficiency = table.efficiency_of(group);
  engine.calibration_source = table.source();

  if (config.spec_decoding != SpecDecoding::kNone) {
    engine.num_spec_tokens = recipe_num_spec_tokens(config, engine.family, engine.model.default_num_spec_tokens);
    engine.acceptance_length =
        config.acceptance_length > 0
            ? config.acceptance_length
            : default_acceptance_length(engine.model.default_acceptance_length, engine.model.default_num_spec_tokens,
                                        engine.num_spec_tokens);
    if (!(engine.acceptance_length >= 1.0 && engine.acceptance_length <= 1.0 + engine.num_spec_tokens))
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--acceptance-length {} must be in [1, 1 + num-spec-tokens = {}]",
                              engine.acceptance_length, 1 + engine.num_spec_tokens));
    const int32_t layers = engine.model.num_mtp_layers;
    if (config.spec_decoding == SpecDecoding::kDraftModel)
      engine.spec_draft = "a separate draft model or head";
    else if (layers > 0)
      engine.spec_draft =
          fmt::format("the checkpoint's {} MTP layer{}, run once per draft token", layers, layers == 1 ? "" : "s");
    else
      engine.spec_draft = fmt::format(
          "a separate draft head (EAGLE-style): {} has no MTP layers (num_mtp_layers 0 in models.json), so `mtp` "
          "here is InferenceX's label for any speculative decoding; costed like MTP",
          engine.model.name);
  }
  if (engine.config.gpu_memory_utilization <= 0)
    engine.config.gpu_memory_utilization = engine.family == FrameworkFamily::kVllm ? 0.9 : 0.95;
  engine.max_model_len = config.max_model_len > 0 ? config.max_model_len : engine.model.max_position_embeddings;
  return engine;
}

}  // namespace ix::sim
