// Helpers shared by the simulator unit tests: small engines and a virtual-time event log.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine_core.h"
#include "sim/kv_cache.h"

namespace ix::sim::testing {

inline EngineConfig llama_on_h200() {
  EngineConfig config;
  config.model = "llama-3.3-70b";
  config.hardware = "h200";
  config.precision = "fp8";
  config.tp = 2;
  return config;
}

// `model` on `tp` GPUs of `hardware` served by `framework` at `precision`; the rest defaults.
inline EngineConfig engine_config(const std::string& model, const std::string& hardware, const std::string& precision,
                                  const std::string& framework, int32_t tp) {
  EngineConfig config;
  config.model = model;
  config.hardware = hardware;
  config.precision = precision;
  config.framework = framework;
  config.tp = tp;
  return config;
}

inline std::unique_ptr<EngineCore> make_core(const EngineConfig& config) {
  auto resolved = resolve_engine(config);
  EXPECT_TRUE(resolved.has_value()) << (resolved ? "" : resolved.error().message());
  if (!resolved) return nullptr;
  auto core = EngineCore::create(*resolved);
  EXPECT_TRUE(core.has_value()) << (core ? "" : core.error().message());
  return core ? std::move(*core) : nullptr;
}

inline CoreRequest request_with_tokens(const std::vector<int32_t>& tokens, int32_t output_tokens,
                                       int32_t block_size = 16, int64_t arrival_ns = 0) {
  CoreRequest request;
  request.prompt_tokens = int32_t(tokens.size());
  request.block_hashes = prompt_block_hashes(tokens, block_size);
  request.max_tokens = output_tokens;
  request.output_tokens = output_tokens;
  request.arrival_ns = arrival_ns;
  return request;
}

inline std::vector<int32_t> tokens_from(int32_t first, int32_t count) {
  std::vector<int32_t> tokens(count);
  for (int32_t i = 0; i < count; ++i) tokens[i] = first + i;
  return tokens;
}

// Every event of a run, per request.
struct EventLog {
  std::map<uint64_t, std::vector<TokenEvent>> by_request;
  EngineCore::Sink sink() {
    return [this](const TokenEvent& event) { by_request[event.request_id].push_back(event); };
  }
  int64_t first_token_ns(uint64_t id) const { return by_request.at(id).front().time_ns; }
  int64_t last_ns(uint64_t id) const { return by_request.at(id).back().time_ns; }
  int32_t total_tokens(uint64_t id) const { return by_request.at(id).back().total_output_tokens; }
};

}  // namespace ix::sim::testing
