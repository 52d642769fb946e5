// The first step of `bench serve`: every flag checked and parsed once, into typed values, before
// anything is loaded, made or sent. A typo is refused here with the flag's name and what it
// takes, never found at the first send or after a long run.
//
// Thread-safety: pure functions over plain values.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/serve_command.h"
#include "common/error.h"
#include "http/client.h"
#include "openai/backend.h"
#include "workload/arrivals.h"

namespace ix::bench {

// How prompts are framed before they are counted.
enum class PromptFraming {
  kPlain,          // completions text, no template
  kModelTemplate,  // the model's own chat template
  kDeepSeekV4,     // DeepSeek-V4's encoding in thinking mode (--dsv4, --tokenizer-mode deepseek_v4)
};

struct ServePlan {
  openai::Backend backend = openai::Backend::kVllm;
  http::Url base;
  std::string endpoint;
  double request_rate = 0;  // +inf: all at once
  workload::ArrivalOptions arrivals;
  int64_t num_prompts = 0;
  int64_t num_warmups = 0;
  std::vector<std::string> percentile_metrics;
  std::vector<double> metric_percentiles;
  std::map<std::string, double> goodput_slo_ms;
  boost::json::object sampling;     // the sampling flags given, as sent (an --extra-body entry wins)
  boost::json::object body_fields;  // sampling flags and --extra-body: merged into every body
  boost::json::object metadata;     // --metadata, top-level fields of the result
  std::vector<http::Header> headers;
  int threads = 1;
  bool save = false;  // a result file is written
  PromptFraming framing = PromptFraming::kPlain;
  std::string tokenizer_name;  // --tokenizer, else --model
};

// Checks every option. Errors: kInvalidArgument or kUnsupported naming the flag, the value and
// what it takes.
Result<ServePlan> plan_serve(const BenchServeOptions& options);

// Client event-loop threads for --threads 0: one per 64 concurrent streams, at most a quarter of
// the cores (the server under test often shares the host). Measured on a 16-core host against
// `sim serve --no-delay` (bench/client_threads.sh, docs/performance.md): one thread carries
// ~1.0-1.4 M tokens/s at 256-4096 streams, four 3.3-4.2 M, so every stream count from 256 up
// gains from the full allowance.
int auto_threads(std::optional<int64_t> concurrency, unsigned cores);

}  // namespace ix::bench
