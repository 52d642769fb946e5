// What a replay leaves in its artifact directory, whoever ran it (`bench replay` over HTTP,
// `sim predict --trace` in virtual time): profile_export.jsonl streamed as records complete,
// replay_result.json (SPEC §6, metrics/replay_result.h), aiperf's aggregate
// profile_export_aiperf.json, and server_metrics_export.{json,csv} when the server was scraped;
// the summary printed at the end and the exit status the result implies.
//
// Thread-safety: ReplayRecordSink is one-thread; the rest write files or stdout.
#pragma once

#include <boost/json/object.hpp>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "bench/aiperf_export.h"
#include "common/error.h"
#include "metrics/replay_result.h"

namespace ix::bench {

inline constexpr std::string_view kReplayResultFile = "replay_result.json";

// Where each completed request goes: a line of profile_export.jsonl and a compact sample.
class ReplayRecordSink {
 public:
  // Opens (truncates) `dir`/profile_export.jsonl, creating `dir` when missing.
  static Result<ReplayRecordSink> open(const std::filesystem::path& dir);
  void add(metrics::ReplayRecord&& record, int64_t steady_to_unix_ns);
  Result<void> close();  // the first write error, if any, else the close's
  const std::vector<metrics::ReplaySample>& samples() const { return samples_; }

 private:
  explicit ReplayRecordSink(ProfileExportWriter writer) : writer_(std::move(writer)) {}
  ProfileExportWriter writer_;
  std::vector<metrics::ReplaySample> samples_;
  std::optional<Error> error_;
};

struct ReplayOutputs {
  std::filesystem::path dir;
  int64_t steady_to_unix_ns = 0;
  std::string scenario;
  boost::json::object run;                             // the result's "run" section
  const boost::json::object* server_export = nullptr;  // written when given
};

// Builds the result from the samples and writes it with aiperf's aggregate (and the server
// export). Returns the result.
Result<boost::json::object> write_replay_outputs(const std::vector<metrics::ReplaySample>& samples,
                                                 const metrics::ReplayRunInfo& info, const ReplayOutputs& outputs);

// The console summary of a result (title names who measured it).
void print_replay_summary(const boost::json::object& result, const std::filesystem::path& dir,
                          std::string_view title = "Agentic Replay Result");

// 0 when the run is valid enough to use; 1 when the error rate stopped it or nothing completed;
// 128 + signal when a stop signal ended it.
int replay_exit_status(const boost::json::object& result);

}  // namespace ix::bench
