#include "bench/replay_output.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "common/file_io.h"
#include "common/json_io.h"
#include "common/stop_signal.h"

namespace ix::bench {

Result<ReplayRecordSink> ReplayRecordSink::open(const std::filesystem::path& dir) {
  auto writer = ProfileExportWriter::open(dir);
  if (!writer) return fail(writer.error());
  return ReplayRecordSink(std::move(*writer));
}

void ReplayRecordSink::add(metrics::ReplayRecord&& record, int64_t steady_to_unix_ns) {
  samples_.push_back(metrics::make_replay_sample(record));
  if (!error_) {
    if (auto ok = writer_.write(record, steady_to_unix_ns); !ok) error_ = ok.error();
  }
}

Result<void> ReplayRecordSink::close() {
  auto closed = writer_.close();
  if (error_) return fail(*error_);
  return closed;
}

Result<boost::json::object> write_replay_outputs(const std::vector<metrics::ReplaySample>& samples,
                                                 const metrics::ReplayRunInfo& info, const ReplayOutputs& outputs) {
  boost::json::object result = metrics::build_replay_result(samples, info);
  result["run"] = outputs.run;
  const auto& validity = result.at("validity").as_object();
  AiperfAggregateInfo agg{.steady_to_unix_ns = outputs.steady_to_unix_ns,
                          .scenario = outputs.scenario,
                          .submission_valid = validity.at("submission_valid").as_bool()};
  for (const auto& r : validity.at("reasons").as_array()) agg.submission_invalid_reasons.emplace_back(r.as_string());
  if (auto ok = write_aiperf_aggregate(outputs.dir, build_aiperf_aggregate(samples, agg)); !ok) return fail(ok.error());
  if (outputs.server_export) {
    if (auto ok = write_server_metrics_export(outputs.dir, *outputs.server_export); !ok) return fail(ok.error());
  }
  if (auto ok = files::write_file(outputs.dir / kReplayResultFile, json::to_pretty_string(result) + "\n"); !ok)
    return fail(ok.error());
  return result;
}

void print_replay_summary(const boost::json::object& result, const std::filesystem::path& dir, std::string_view title) {
  auto num = [&](std::initializer_list<std::string_view> path) -> double {
    const boost::json::value* v = &result.at(*path.begin());
    for (auto it = path.begin() + 1; it != path.end(); ++it) {
      if (!v->is_object() || !v->as_object().contains(*it)) return NAN;
      v = &v->as_object().at(*it);
    }
    return v->is_number() ? v->to_number<double>() : NAN;
  };
  const auto& acc = result.at("request_accounting").as_object();
  fmt::print("============ {} ============\n", title);
  fmt::print("{:<40}{}\n", "Records (warmup + profiled + errors):", acc.at("records_total").as_int64());
  fmt::print("{:<40}{}\n", "Profiled successful requests:", acc.at("records_profiled").as_int64());
  fmt::print(
      "{:<40}{}\n", "Dropped: warmup / errors:",
      fmt::format("{} / {}", acc.at("records_warmup_dropped").as_int64(), acc.at("records_error_dropped").as_int64()));
  fmt::print("{:<40}{:.2f}\n", "Duration (s):", num({"request_metrics", "throughput", "duration_seconds"}));
  fmt::print("{:<40}{:.2f}\n",
             "Output tokens/s:", num({"request_metrics", "throughput", "output", "tokens_per_second"}));
  fmt::print("{:<40}{:.2f}\n", "Total tokens/s:", num({"request_metrics", "throughput", "total", "tokens_per_second"}));
  fmt::print("{:<40}{:.4f} / {:.4f}\n", "TTFT p50 / p90 (s):", num({"request_metrics", "latency", "ttft", "p50"}),
             num({"request_metrics", "latency", "ttft", "p90"}));
  fmt::print("{:<40}{:.4f} / {:.4f}\n", "E2EL p50 / p90 (s):", num({"request_metrics", "latency", "e2el", "p50"}),
             num({"request_metrics", "latency", "e2el", "p90"}));
  fmt::print("{:<40}{:.5f}\n", "ITL p50 (s):", num({"request_metrics", "latency", "itl", "p50"}));
  fmt::print("{:<40}{:.4f}\n",
             "Theoretical prefix-cache hit:", num({"prefix_cache", "theoretical", "profiling", "hit_rate"}));
  fmt::print("{:<40}{:.4f}\n", "Realised prefix-cache hit (server):", num({"prefix_cache", "realized", "hit_rate"}));
  const auto& validity = result.at("validity").as_object();
  fmt::print("{:<40}{}\n", "Submission valid:", validity.at("submission_valid").as_bool() ? "yes" : "no");
  for (const auto& r : validity.at("reasons").as_array()) fmt::print("  reason: {}\n", std::string_view(r.as_string()));
  fmt::print("{:<40}{}\n", "Artifacts:", dir.string());
  fmt::print("{}\n", std::string(title.size() + 26, '='));
  std::fflush(stdout);
}

int replay_exit_status(const boost::json::object& result) {
  if (const int sig = StopSignals::signal()) return 128 + sig;
  for (const auto& r : result.at("validity").as_object().at("reasons").as_array()) {
    const std::string_view reason = r.as_string();
    if (reason == "error_rate_exceeded" || reason == "no_completed_requests") return 1;
  }
  return 0;
}

}  // namespace ix::bench
