#include "cli/predict_trace.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <filesystem>
#include <iostream>

#include "bench/exchange.h"
#include "bench/replay_output.h"
#include "common/json_io.h"
#include "common/stop_signal.h"
#include "sim/predict.h"
#include "sim/trace_predict.h"

namespace ix::cli {
namespace {

// What the engine did over the run, beside the replay's own counters.
boost::json::object engine_counters(const sim::TracePrediction& p) {
  const sim::EngineMetrics& end = p.at_end;
  return {{"virtual_duration_s", p.end_ns / 1e9},
          {"prefix_cache_queries", end.prefix_cache_queries},
          {"prefix_cache_hits", end.prefix_cache_hits},
          {"cpu_tier_queries", end.external_prefix_cache_queries},
          {"cpu_tier_hits", end.external_prefix_cache_hits},
          {"kv_offload_bytes_gpu_to_cpu", end.kv_offload_bytes_gpu_to_cpu},
          {"kv_offload_bytes_cpu_to_gpu", end.kv_offload_bytes_cpu_to_gpu},
          {"num_preemptions", end.num_preemptions},
          {"prompt_tokens_total", end.prompt_tokens_total},
          {"generation_tokens_total", end.generation_tokens_total}};
}

std::string point_dir(const TracePredictRun& run, int64_t concurrency) {
  if (run.concurrencies.size() == 1) return run.replay.artifact_dir;
  return (std::filesystem::path(run.replay.artifact_dir) / fmt::format("conc{}", concurrency)).string();
}

}  // namespace

Result<boost::json::object> predict_trace_point(const sim::ResolvedEngine& engine, const workload::Trace& trace,
                                                const bench::BenchReplayOptions& replay, int64_t concurrency,
                                                const std::string& dir) {
  bench::BenchReplayOptions options = replay;
  options.concurrency = concurrency;
  auto sink = bench::ReplayRecordSink::open(dir);
  if (!sink) return fail(sink.error().with_context("--artifact-dir"));
  const int64_t steady_to_unix_ns =
      static_cast<int64_t>(bench::unix_now_s() * 1e9);  // virtual t = 0 is when the prediction started
  sim::TracePredictOptions predict{
      .schedule = bench::schedule_options(options),
      .trace = &trace,
      .on_record = [&](metrics::ReplayRecord&& r) { sink->add(std::move(r), steady_to_unix_ns); },
      .interrupt = &StopSignals::flag()};
  auto prediction = sim::predict_trace(engine, predict);
  auto closed = sink->close();
  if (!prediction) return fail(prediction.error().with_context(fmt::format("concurrency {}", concurrency)));
  if (!closed) return fail(closed.error());
  metrics::ReplayRunInfo info{.num_gpus = prediction->num_gpus,
                              .failed_request_threshold = options.failed_request_threshold,
                              .benchmark_duration_s = options.benchmark_duration_s,
                              .open_loop = options.fixed_schedule,
                              .server_prefix_cache = prediction->prefix_cache,
                              .client_invalid_reasons = prediction->schedule.invalid_reasons};
  boost::json::object run_section =
      bench::replay_run_section(options, trace, prediction->schedule, "ixbench sim predict --trace");
  run_section["engine"] = sim::describe_engine(engine);
  run_section["engine_counters"] = engine_counters(*prediction);
  return bench::write_replay_outputs(sink->samples(), info,
                                     {.dir = dir,
                                      .steady_to_unix_ns = steady_to_unix_ns,
                                      .scenario = options.scenario,
                                      .run = std::move(run_section)});
}

Result<int> run_trace_prediction(const TracePredictRun& run) {
  StopSignals stop_signals;
  auto trace = bench::load_replay_trace(run.replay);
  if (!trace) return fail(trace.error());
  boost::json::array results;
  int status = 0;
  for (int64_t concurrency : run.concurrencies) {
    const std::string dir = point_dir(run, concurrency);
    auto result = predict_trace_point(run.engine, *trace, run.replay, concurrency, dir);
    if (!result) return fail(result.error());
    if (run.table)
      bench::print_replay_summary(*result, dir, fmt::format("Predicted replay, concurrency {}", concurrency));
    status = std::max(status, bench::replay_exit_status(*result));
    results.push_back(std::move(*result));
    if (StopSignals::stopped()) break;
  }
  if (!run.table) {
    boost::json::object out{{"engine", sim::describe_engine(run.engine)}, {"results", std::move(results)}};
    std::cout << json::to_pretty_string(out);
  }
  return status;
}

}  // namespace ix::cli
