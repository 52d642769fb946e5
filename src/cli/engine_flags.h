// The engine flags shared by `ixbench sim serve` and `ixbench sim predict`, so both accept the
// same description of the simulated engine (model, hardware, parallelism, scheduler limits,
// speculative decoding, disaggregation).
//
// Usage: keep an EngineFlags alive as long as the CLI::App (e.g. in a shared_ptr captured by the
// run callback), call add_engine_flags at setup, and engine_config_from_flags when running.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common/error.h"
#include "sim/engine_config.h"

namespace ix::cli {

struct EngineFlags {
  sim::EngineConfig config;
  std::string spec_decoding = "none";
  std::string attention_dp_balance = "auto";
  int32_t prefill_workers = 0;  // > 0 together with decode_workers: disaggregated
  int32_t decode_workers = 0;
};

// Adds --model --hardware --precision --framework --tp --ep --dp-attn --replicas
// --spec-decoding --num-spec-tokens --acceptance-length --max-num-seqs --max-num-batched-tokens
// --long-prefill-token-threshold --block-size --enable-prefix-caching/--no-enable-prefix-caching
// --gpu-memory-utilization --num-gpu-blocks-override --kv-offloading-size --kv-offloading-backend
// --scheduler-recv-interval --attention-dp-balance
// --attention-dp-timeout-iters --attention-dp-batching-wait-iters --max-model-len --seed --jitter
// --catalog-dir and the disaggregation flags --prefill-workers --prefill-tp --prefill-ep --prefill-dp-attn (and
// --decode-*).
void add_engine_flags(CLI::App& app, EngineFlags& flags);

// Completes and validates the config (unknown model/hardware, bad ranges: clear errors).
Result<sim::EngineConfig> engine_config_from_flags(const EngineFlags& flags);

}  // namespace ix::cli
