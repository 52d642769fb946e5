// `ixbench sim predict --trace` (and a --row/--row-file agentic row): the replay a `bench replay`
// run would make, predicted in virtual time (sim/trace_predict.h), one artifact directory per
// concurrency with the files `bench replay` writes (bench/replay_output.h).
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/replay_command.h"
#include "common/error.h"
#include "sim/engine_core.h"

namespace ix::cli {

struct TracePredictRun {
  sim::ResolvedEngine engine;
  bench::BenchReplayOptions replay;    // trace, schedule and artifact flags
  std::vector<int64_t> concurrencies;  // lanes; one artifact directory each
  bool table = false;                  // print the summaries instead of the JSON
};

// Predicts every concurrency; prints the summaries (table) or one JSON object with every result.
// Exit status as bench replay's: 0, 1 when a run is not usable (errors, nothing completed),
// 128 + signal.
Result<int> run_trace_prediction(const TracePredictRun& run);

// One concurrency: the replay predicted and its artifacts written into `dir` (created when
// missing). Returns the SPEC §6 result with its "run" section.
Result<boost::json::object> predict_trace_point(const sim::ResolvedEngine& engine, const workload::Trace& trace,
                                                const bench::BenchReplayOptions& replay, int64_t concurrency,
                                                const std::string& dir);

}  // namespace ix::cli
