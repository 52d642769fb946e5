#include "cli/engine_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <utility>
#include <vector>

#include "cli/command.h"

namespace ix::cli {

void add_engine_flags(CLI::App& app, EngineFlags& flags) {
  auto& c = flags.config;
  app.add_option("--model", c.model, "model: catalog name, alias or HF id (data/catalog/models.json)")
      ->capture_default_str();
  app.add_option("--hardware", c.hardware, "accelerator: catalog name or runner label (data/catalog/hardware.json)")
      ->capture_default_str();
  app.add_option("--precision", c.precision, "weight precision: fp4 | fp8 | bf16")->capture_default_str();
  app.add_option("--framework", c.framework, "engine family: vllm | sglang | trt | atom (dynamo-*/mori-* variants)")
      ->capture_default_str();
  app.add_option("--tp", c.tp, "tensor-parallel size (GPUs per engine)")->capture_default_str();
  app.add_option("--ep", c.ep, "expert-parallel size")->capture_default_str();
  app.add_flag("--dp-attn", c.dp_attn, "data-parallel attention (one batch and KV cache per rank)");
  app.add_option("--replicas", c.num_replicas, "independent engine replicas behind a least-loaded router")
      ->capture_default_str();
  app.add_option("--spec-decoding", flags.spec_decoding, "speculative decoding: none | mtp | draft_model")
      ->capture_default_str();
  app.add_option(
         "--num-spec-tokens", c.num_spec_tokens,
         "draft tokens per step (0 = model default; 1 for single-node trt with --dp-attn, as InferenceX's scripts)")
      ->capture_default_str();
  app.add_option("--acceptance-length", c.acceptance_length,
                 "mean tokens per verify step, the golden AL (0 = model default)")
      ->capture_default_str();
  app.add_option("--max-num-seqs", c.max_num_seqs,
                 "maximum running requests per rank (0 = 1024, or the InferenceX recipe's value per concurrency in sim "
                 "predict: conc/tp for trt with MTP and --dp-attn)")
      ->capture_default_str();
  app.add_option("--max-num-batched-tokens", c.max_num_batched_tokens,
                 "token budget per step and rank (0 = 8192, or the InferenceX recipe's per concurrency in sim predict "
                 "for single-node trt: max_num_tokens from conc, isl and MTP)")
      ->capture_default_str();
  app.add_option("--long-prefill-token-threshold", c.long_prefill_token_threshold,
                 "cap on one request's prefill tokens per step (0 = none)")
      ->capture_default_str();
  app.add_option("--block-size", c.block_size, "KV-cache block size in tokens")->capture_default_str();
  app.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", c.enable_prefix_caching,
               "hash-chained prefix caching (default on)");
  app.add_option("--gpu-memory-utilization,--gpu-mem-util", c.gpu_memory_utilization,
                 "fraction of HBM for weights + KV cache (0 = framework default: vllm 0.9, others 0.95)")
      ->capture_default_str();
  app.add_option("--num-gpu-blocks-override", c.num_gpu_blocks_override, "KV blocks per rank (0 = from memory)")
      ->capture_default_str();
  app.add_option("--scheduler-recv-interval", c.scheduler_recv_interval,
                 "SGLang's: take in new requests every N decode steps (1 = every step; 0 = the InferenceX "
                 "recipe's value for each benchmark concurrency in sim predict — 10/30 for SGLang on B200/B300 — "
                 "else 1)")
      ->capture_default_str();
  app.add_option("--attention-dp-balance", flags.attention_dp_balance,
                 "TRT-LLM's attention-DP context balancing: auto (on for trt with --dp-attn, as InferenceX's "
                 "scripts set it) | on | off")
      ->capture_default_str();
  app.add_option("--attention-dp-timeout-iters", c.attention_dp_timeout_iters,
                 "balancing: iterations after which waiting prompts start anyway (attention_dp_config.timeout_iters)")
      ->capture_default_str();
  app.add_option("--attention-dp-batching-wait-iters", c.attention_dp_batching_wait_iters,
                 "balancing: extra iterations to wait when every rank has a prompt and is decoding "
                 "(attention_dp_config.batching_wait_iters)")
      ->capture_default_str();
  app.add_option("--kv-offloading-size", c.kv_offloading_size_gib,
                 "vLLM's KV offloading to host memory: GiB of CPU KV tier per engine, over all its GPUs (0 = off); "
                 "blocks found there load back over the host link instead of being recomputed")
      ->capture_default_str();
  app.add_option("--kv-offloading-backend", c.kv_offloading_backend,
                 "KV offloading backend: native (vLLM's CPU offloading, the one simulated)")
      ->capture_default_str();
  app.add_option("--max-model-len", c.max_model_len, "context window (0 = the model's)")->capture_default_str();
  app.add_option("--seed", c.seed, "seed for acceptance draws, natural EOS lengths and jitter")->capture_default_str();
  app.add_option("--jitter", c.jitter_sigma, "lognormal step-time jitter sigma (0 = none)")->capture_default_str();
  app.add_option("--catalog-dir", c.catalog_dir,
                 "directory with hardware.json, models.json, calibration.json (default: built-in data/catalog)");
  // The two sides of a disaggregated deployment take the same flags, --prefill-* and --decode-*.
  struct Side {
    const char* name;
    const char* other;
    int32_t& workers;
    sim::WorkerTopology& topology;
  };
  for (const Side& side : {Side{"prefill", "decode", flags.prefill_workers, c.prefill},
                           Side{"decode", "prefill", flags.decode_workers, c.decode}}) {
    const std::string flag = fmt::format("--{}-", side.name);
    app.add_option(flag + "workers", side.workers,
                   fmt::format("disaggregation: {} engines (with --{}-workers)", side.name, side.other));
    app.add_option(flag + "tp", side.topology.tp, fmt::format("disaggregation: {} engine tp", side.name))
        ->capture_default_str();
    app.add_option(flag + "ep", side.topology.ep, fmt::format("disaggregation: {} engine ep", side.name))
        ->capture_default_str();
    app.add_flag(flag + "dp-attn", side.topology.dp_attn,
                 fmt::format("disaggregation: {} engines use dp attention", side.name));
    app.add_option(flag + "max-num-seqs", side.topology.max_num_seqs,
                   fmt::format("disaggregation: running requests per {} rank, TRT-LLM's max_batch_size (0 = "
                               "--max-num-seqs)",
                               side.name))
        ->capture_default_str();
    app.add_option(flag + "max-num-batched-tokens", side.topology.max_num_batched_tokens,
                   fmt::format("disaggregation: token budget per step and {} rank, SGLang's chunked-prefill-size "
                               "over the DP ranks (0 = --max-num-batched-tokens)",
                               side.name))
        ->capture_default_str();
    app.add_option(flag + "max-kv-tokens", side.topology.max_kv_tokens,
                   fmt::format("disaggregation: KV-cache tokens per {} rank, SGLang's max-total-tokens over the DP "
                               "ranks (0 = what memory holds)",
                               side.name))
        ->capture_default_str();
  }
  app.add_option("--decode-reserved-tokens", c.decode.reserved_decode_tokens,
                 "disaggregation: KV tokens each running decode request keeps free when a transferred request is "
                 "admitted, SGLang's num-reserved-decode-tokens (0 = none)")
      ->capture_default_str();
}

Result<sim::EngineConfig> engine_config_from_flags(const EngineFlags& flags) {
  sim::EngineConfig config = flags.config;
  auto spec = sim::parse_spec_decoding(flags.spec_decoding);
  if (!spec) return fail(spec.error());
  config.spec_decoding = *spec;
  auto balance = sim::parse_attention_dp_balance(flags.attention_dp_balance);
  if (!balance) return fail(balance.error());
  config.attention_dp_balance = *balance;
  if ((flags.prefill_workers > 0) != (flags.decode_workers > 0))
    return fail(ErrorCode::kInvalidArgument,
                "disaggregation needs both --prefill-workers and --decode-workers (>= 1 each), or neither");
  if (flags.prefill_workers < 0 || flags.decode_workers < 0)
    return fail(ErrorCode::kInvalidArgument, "--prefill-workers and --decode-workers must be >= 0");
  // Per-side limits without disaggregation would be dead knobs: name the ones given.
  std::vector<std::string> side_flags;
  for (const auto& [name, t] : {std::pair{"prefill", &config.prefill}, std::pair{"decode", &config.decode}}) {
    if (t->max_num_seqs != 0) side_flags.push_back(fmt::format("--{}-max-num-seqs", name));
    if (t->max_num_batched_tokens != 0) side_flags.push_back(fmt::format("--{}-max-num-batched-tokens", name));
    if (t->max_kv_tokens != 0) side_flags.push_back(fmt::format("--{}-max-kv-tokens", name));
    if (t->reserved_decode_tokens != 0) side_flags.push_back(fmt::format("--{}-reserved-tokens", name));
  }
  if (flags.prefill_workers == 0 && !side_flags.empty())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{} apply to disaggregation: add --prefill-workers and --decode-workers, or use "
                            "--max-num-seqs / --max-num-batched-tokens",
                            fmt::join(side_flags, ", ")));
  if (flags.prefill_workers > 0) {
    config.disagg = true;
    config.prefill.num_workers = flags.prefill_workers;
    config.decode.num_workers = flags.decode_workers;
  }
  if (auto ok = sim::validate(config); !ok) return fail(ok.error());
  if (auto ok = sim::check_model_parallelism(config); !ok) return fail(ok.error());
  return config;
}

}  // namespace ix::cli
