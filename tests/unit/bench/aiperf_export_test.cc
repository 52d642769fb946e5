#include "bench/aiperf_export.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/json_io.h"
#include "support/agentic_aggregation_rules.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::bench {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using metrics::ErrorKind;
using metrics::ReplayPhase;
using metrics::ReplayRecord;
using metrics::ReplaySample;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT = 1'000'000 * kMs;                     // steady-clock origin
constexpr int64_t kUnixOrigin = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z
constexpr int64_t kSteadyToUnix = kUnixOrigin - kT;
const std::string kEndpoint = "http://localhost:8000/metrics";

ReplayRecord success(int i) {
  ReplayRecord r;
  r.phase = ReplayPhase::kProfiling;
  r.session_num = i % 3;
  r.lane = i % 3;
  r.turn_index = i / 3;
  r.turn_depth = i / 3;
  r.conversation_id = i == 5 ? "trace-2::sa:agent-1" : "trace-" + std::to_string(i % 3);
  r.depth = i == 5 ? 1 : 0;
  r.correlation_id = fmt::format("corr-{}-{}", i % 3, r.depth);
  r.rec.send_ns = kT + 200 * i * kMs;
  r.rec.first_token_ns = r.rec.send_ns + (50 + 10 * i) * kMs;
  r.rec.output_len = 8 + i;
  r.rec.end_ns = r.rec.first_token_ns + (20 + i) * (r.rec.output_len - 1) * kMs;  // ITL 20 + i ms
  r.rec.prompt_len = 1000 + 100 * i;
  if (i % 2 == 0) r.server_prompt_tokens = r.rec.prompt_len + 3;
  r.rec.success = true;
  r.hit_blocks = i;
  r.total_blocks = i + 4;
  r.scheduled_ns = r.rec.send_ns - i * kMs;
  return r;
}

// 12 profiled successes over three tree plays, one profiled HTTP 500, three warmup rows (one a
// timeout) and one request skipped over the context limit.
std::vector<ReplayRecord> fixture_records() {
  std::vector<ReplayRecord> records;
  for (int i = 0; i < 3; ++i) {
    ReplayRecord w = success(i);
    w.phase = ReplayPhase::kWarmup;
    w.rec.send_ns -= 10'000 * kMs;
    w.rec.first_token_ns = w.rec.send_ns + 30 * kMs;
    w.rec.end_ns = w.rec.first_token_ns;
    w.rec.output_len = 1;
    if (i == 2) {
      w.rec.success = false;
      w.rec.error_kind = ErrorKind::kTimeout;
      w.rec.error_message = "no response within 600 s";
      w.rec.output_len = 0;
    }
    records.push_back(w);
  }
  for (int i = 0; i < 12; ++i) records.push_back(success(i));
  ReplayRecord error = success(12);
  error.rec.success = false;
  error.rec.error_kind = ErrorKind::kHttpStatus;
  error.rec.http_status = 500;
  error.rec.error_message = "Internal Server Error: engine crashed";
  error.rec.first_token_ns = 0;
  error.rec.output_len = 0;
  error.rec.end_ns = error.rec.send_ns + 5 * kMs;
  records.push_back(error);
  ReplayRecord skipped;
  skipped.skipped_context = true;
  skipped.conversation_id = "trace-9";
  records.push_back(skipped);
  return records;
}

std::vector<ReplaySample> fixture_samples() {
  std::vector<ReplaySample> samples;
  for (const auto& r : fixture_records()) samples.push_back(metrics::make_replay_sample(r));
  return samples;
}

// The profiling window of the fixture on the wall clock: first send → last end.
int64_t window_start() {
  return kT + kSteadyToUnix;
}

std::string scrape_text(double hits, double queries, double usage, double ttft_count, double ttft_sum,
                        double ttft_fast) {
  return fmt::format(
      "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n"
      "# TYPE vllm:prefix_cache_hits_total counter\n"
      "vllm:prefix_cache_hits_total{{engine=\"0\",model_name=\"m\"}} {}\n"
      "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n"
      "# TYPE vllm:prefix_cache_queries_total counter\n"
      "vllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"m\"}} {}\n"
      "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
      "# TYPE vllm:kv_cache_usage_perc gauge\n"
      "vllm:kv_cache_usage_perc{{engine=\"0\",model_name=\"m\"}} {}\n"
      "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n"
      "# TYPE vllm:time_to_first_token_seconds histogram\n"
      "vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.1\"}} {}\n"
      "vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"0.5\"}} {}\n"
      "vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"+Inf\"}} {}\n"
      "vllm:time_to_first_token_seconds_sum{{engine=\"0\"}} {}\n"
      "vllm:time_to_first_token_seconds_count{{engine=\"0\"}} {}\n",
      hits, queries, usage, ttft_fast, ttft_count, ttft_count, ttft_sum, ttft_count);
}

// Scrapes at −0.5 s (before the window) and every 0.5 s from 0.25 s; the window is 3 s.
ServerMetricsCollector fixture_collector() {
  ServerMetricsCollector collector;
  const double hits[] = {100, 150, 250, 400, 600, 700, 800};
  const double queries[] = {1000, 1100, 1300, 1600, 2000, 2200, 2400};
  const double usage[] = {0.1, 0.2, 0.4, 0.3, 0.5, 0.6, 0.2};
  const double count[] = {10, 12, 16, 20, 30, 32, 34};
  for (int k = 0; k < 7; ++k) {
    const int64_t at = window_start() + (k == 0 ? -500 : 250 + 500 * (k - 1)) * kMs;
    collector.add(
        {kEndpoint, at, scrape_text(hits[k], queries[k], usage[k], count[k], count[k] * 0.2, count[k] / 2), 2.0});
  }
  return collector;
}

ServerMetricsWindow fixture_window() {
  return {window_start(), window_start() + 3000 * kMs, 1.0, {kEndpoint}, "fixture"};
}

AiperfAggregateInfo fixture_aggregate_info() {
  AiperfAggregateInfo info;
  info.steady_to_unix_ns = kSteadyToUnix;
  info.submission_valid = false;
  info.submission_invalid_reasons = {"duration_below_minimum"};
  info.dataset = {{"source_type", "file"}, {"loader", "weka_trace"}, {"num_dataset_entries", 3}};
  return info;
}

// The replay result of the fixture (8 GPUs), as the golden replay_result.json holds it.
json::object fixture_result() {
  metrics::ReplayRunInfo info;
  info.num_gpus = 8;
  return metrics::build_replay_result(fixture_samples(), info);
}

// Writes the three artifacts of the fixture into `dir`.
void write_fixture_artifacts(const fs::path& dir) {
  auto writer = ProfileExportWriter::open(dir);
  ASSERT_TRUE(writer) << writer.error().message();
  for (const auto& r : fixture_records()) ASSERT_TRUE(writer->write(r, kSteadyToUnix));
  ASSERT_TRUE(writer->close());
  ASSERT_TRUE(write_aiperf_aggregate(dir, build_aiperf_aggregate(fixture_samples(), fixture_aggregate_info())));
  ASSERT_TRUE(write_server_metrics_export(dir, fixture_collector().build(fixture_window())));
}

const json::object& at_obj(const json::object& o, std::string_view key) {
  return o.at(key).as_object();
}

TEST(AiperfExport, RowCarriesAiperfFieldsAndUnits) {
  const auto row = profile_export_row(success(1), kSteadyToUnix);
  const auto& m = at_obj(row, "metadata");
  EXPECT_EQ(m.at("benchmark_phase").as_string(), "profiling");
  EXPECT_EQ(m.at("request_start_ns").as_int64(), kUnixOrigin + 200 * kMs);
  EXPECT_EQ(m.at("conversation_id").as_string(), "trace-1");
  EXPECT_EQ(m.at("turn_index").as_int64(), 0);
  EXPECT_EQ(m.at("x_correlation_id").as_string(), "corr-1-0");
  const auto& metrics = at_obj(row, "metrics");
  EXPECT_EQ(at_obj(metrics, "time_to_first_token").at("unit").as_string(), "ms");
  EXPECT_DOUBLE_EQ(at_obj(metrics, "time_to_first_token").at("value").as_double(), 60.0);
  EXPECT_DOUBLE_EQ(at_obj(metrics, "request_latency").at("value").as_double(), 60.0 + 21 * 8);
  EXPECT_DOUBLE_EQ(at_obj(metrics, "inter_token_latency").at("value").as_double(), 21.0);
  EXPECT_EQ(at_obj(metrics, "input_sequence_length").at("unit").as_string(), "tokens");
  EXPECT_EQ(at_obj(metrics, "input_sequence_length").at("value").as_int64(), 1100);  // no server count
  EXPECT_EQ(at_obj(metrics, "output_sequence_length").at("value").as_int64(), 9);
  EXPECT_TRUE(row.at("error").is_null());
}

TEST(AiperfExport, ErrorRowsNameTheirType) {
  const auto rows = fixture_records();
  const auto error = profile_export_row(rows[15], kSteadyToUnix).at("error").as_object();
  EXPECT_EQ(error.at("type").as_string(), "http_status");
  EXPECT_EQ(error.at("code").as_int64(), 500);
  ReplayRecord cancelled = success(0);
  cancelled.rec.success = false;
  cancelled.rec.error_kind = ErrorKind::kCancelled;
  const auto row = profile_export_row(cancelled, 0);
  EXPECT_EQ(row.at("error").as_object().at("type").as_string(), "RequestCancellationError");
  EXPECT_EQ(row.at("error").as_object().at("code").as_int64(), 499);
  EXPECT_TRUE(row.at("metadata").as_object().at("was_cancelled").as_bool());
}

TEST(AiperfExport, WriterStreamsEveryRowButSkippedOnes) {
  const fs::path dir = testing::scratch_dir("aiperf_writer") / "artifacts";
  auto writer = ProfileExportWriter::open(dir);
  ASSERT_TRUE(writer) << writer.error().message();
  for (const auto& r : fixture_records()) ASSERT_TRUE(writer->write(r, kSteadyToUnix));
  EXPECT_EQ(writer->rows(), 16);
  ASSERT_TRUE(writer->close());
  const std::string text = testing::read_whole_file(dir / kProfileExportFile);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 16);
  EXPECT_EQ(text.find("trace-9"), std::string::npos);
}

TEST(AiperfExport, WriterReportsWriteErrorsWithPathAndReason) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "needs /dev/full";
  const fs::path dir = testing::scratch_dir("aiperf_full");
  fs::create_symlink("/dev/full", dir / kProfileExportFile);
  auto writer = ProfileExportWriter::open(dir);
  ASSERT_TRUE(writer) << writer.error().message();
  ASSERT_TRUE(writer->write(success(0), 0));  // buffered
  auto flushed = writer->flush();
  ASSERT_FALSE(flushed);
  EXPECT_NE(flushed.error().message().find(std::string(kProfileExportFile)), std::string::npos);
  EXPECT_NE(flushed.error().message().find("No space left"), std::string::npos) << flushed.error().message();
  EXPECT_FALSE(writer->flush());  // the row is kept for the next try
}

TEST(AiperfExport, AggregateCountsTheProfilingPhase) {
  const auto agg = build_aiperf_aggregate(fixture_samples(), fixture_aggregate_info());
  EXPECT_EQ(at_obj(agg, "request_count").at("avg").as_int64(), 12);
  EXPECT_EQ(at_obj(agg, "request_count").at("unit").as_string(), "requests");
  EXPECT_EQ(at_obj(agg, "error_request_count").at("avg").as_int64(), 1);
  EXPECT_EQ(at_obj(agg, "completed_request_count").at("avg").as_int64(), 13);
  // Blocks hit: 0 + 1 + ... + 12 = 78 of 4 + 5 + ... + 16 = 130.
  const auto& hit = at_obj(agg, "theoretical_prefix_cache_hit");
  EXPECT_EQ(hit.at("sum").as_int64(), 78);
  EXPECT_EQ(hit.at("count").as_int64(), 130);
  EXPECT_DOUBLE_EQ(hit.at("avg").as_double(), 60.0);
  EXPECT_EQ(agg.at("start_time").as_string(), "2026-01-01T00:00:00.000000+00:00");
  // TTFT 50, 60, ..., 160 ms: p50 105, min 50, max 160.
  const auto& ttft = at_obj(agg, "time_to_first_token");
  EXPECT_DOUBLE_EQ(ttft.at("p50").as_double(), 105.0);
  EXPECT_DOUBLE_EQ(ttft.at("min").as_double(), 50.0);
  EXPECT_DOUBLE_EQ(ttft.at("max").as_double(), 160.0);
  EXPECT_EQ(at_obj(agg, "metadata").at("scenario").as_string(), "inferencex-agentx-mvp");
}

TEST(AiperfExport, Iso8601IsUtcWithItsOffset) {
  EXPECT_EQ(iso8601_utc(1'767'225'600'123'456'789), "2026-01-01T00:00:00.123456+00:00");
  EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00.000000+00:00");
}

TEST(AiperfExport, ServerMetricsOverTheProfilingWindow) {
  const auto out = fixture_collector().build(fixture_window());
  const auto& metrics = at_obj(out, "metrics");
  ASSERT_TRUE(metrics.contains("vllm:prefix_cache_hits"));  // without _total
  EXPECT_FALSE(metrics.contains("vllm:prefix_cache_hits_total"));
  const auto& hits = at_obj(metrics, "vllm:prefix_cache_hits");
  EXPECT_EQ(hits.at("type").as_string(), "counter");
  const auto& series = hits.at("series").as_array()[0].as_object();
  EXPECT_EQ(series.at("labels").as_object().at("engine").as_string(), "0");
  // Δ from the scrape before the window (100) to the last one in it (800), over 3 s.
  EXPECT_DOUBLE_EQ(at_obj(series, "stats").at("total").as_double(), 700.0);
  EXPECT_NEAR(at_obj(series, "stats").at("rate").as_double(), 700.0 / 3, 1e-9);
  EXPECT_EQ(series.at("timeslices").as_array().size(), 3u);
  // Gauge: the six scrapes in the window.
  const auto& usage =
      at_obj(at_obj(metrics, "vllm:kv_cache_usage_perc").at("series").as_array()[0].as_object(), "stats");
  EXPECT_DOUBLE_EQ(usage.at("max").as_double(), 0.6);
  EXPECT_DOUBLE_EQ(usage.at("min").as_double(), 0.2);
  // Histogram: Δcount 24, Δsum 4.8; the fast bucket took 12 of them, so p50 is its bound.
  const auto& ttft = at_obj(metrics, "vllm:time_to_first_token_seconds").at("series").as_array()[0].as_object();
  EXPECT_DOUBLE_EQ(at_obj(ttft, "stats").at("count").as_double(), 24.0);
  EXPECT_NEAR(at_obj(ttft, "stats").at("avg").as_double(), 0.2, 1e-12);
  EXPECT_NEAR(at_obj(ttft, "stats").at("p50_estimate").as_double(), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(at_obj(ttft, "buckets").at("+Inf").as_double(), 24.0);
  const auto& info = at_obj(at_obj(at_obj(out, "summary"), "endpoint_info"), kEndpoint);
  EXPECT_EQ(info.at("total_fetches").as_int64(), 7);
  EXPECT_DOUBLE_EQ(info.at("avg_fetch_latency_ms").as_double(), 2.0);
  const auto realized = realized_prefix_cache(out);
  ASSERT_TRUE(realized);
  EXPECT_DOUBLE_EQ(realized->hits, 700.0);
  EXPECT_DOUBLE_EQ(realized->queries, 1400.0);
  EXPECT_NE(
      server_metrics_csv(out).find("vllm:prefix_cache_hits,counter," + kEndpoint + ",engine=0;model_name=m,total,700"),
      std::string::npos);
}

// Golden artifacts of the fixture. After an intended change of the format, regenerate them with
// IXBENCH_UPDATE_GOLDENS=1 and review the diff.
TEST(AiperfExport, ArtifactsMatchTheGoldenFiles) {
  const fs::path dir = testing::scratch_dir("aiperf_golden");
  write_fixture_artifacts(dir);
  const fs::path golden_dir = testing::source_path("tests/data/aiperf");
  for (std::string_view name :
       {kProfileExportFile, kAiperfAggregateFile, kServerMetricsJsonFile, kServerMetricsCsvFile}) {
    const std::string actual = testing::read_whole_file(dir / name);
    ASSERT_FALSE(actual.empty()) << name;
    if (std::getenv("IXBENCH_UPDATE_GOLDENS")) std::ofstream(golden_dir / name) << actual;
    const std::string golden = testing::read_whole_file(golden_dir / name);
    ASSERT_FALSE(golden.empty()) << "missing " << (golden_dir / name) << " (run with IXBENCH_UPDATE_GOLDENS=1)";
    EXPECT_EQ(actual, golden) << name << " differs from its golden file";
  }
  // The replay result of the same records, which the InferenceX integration test compares with
  // what the aggregation computes from the artifacts.
  const std::string result = ix::json::to_pretty_string(fixture_result());
  if (std::getenv("IXBENCH_UPDATE_GOLDENS")) std::ofstream(golden_dir / "replay_result.json") << result;
  EXPECT_EQ(result, testing::read_whole_file(golden_dir / "replay_result.json")) << "replay_result.json differs";
}

// InferenceX's aggregation and validation rules (tests/support/agentic_aggregation_rules.h)
// applied to the artifacts, checked against the replay result built from the same records.
TEST(AiperfExport, InferenceXRulesReadTheArtifacts) {
  const fs::path result_dir = testing::scratch_dir("aiperf_rules");
  write_fixture_artifacts(result_dir / "aiperf_artifacts");
  const fs::path artifacts = testing::agentic_artifact_dir(result_dir);
  EXPECT_EQ(artifacts, result_dir / "aiperf_artifacts");
  auto loaded = testing::agentic_load_records(artifacts / kProfileExportFile);
  ASSERT_TRUE(loaded) << loaded.error().message();
  const auto result = metrics::build_replay_result(fixture_samples(), {});
  const auto& accounting = at_obj(result, "request_accounting");
  EXPECT_EQ(loaded->records_total, accounting.at("records_total").as_int64());
  EXPECT_EQ(loaded->records_profiled, accounting.at("records_profiled").as_int64());
  EXPECT_EQ(loaded->records_warmup_dropped, accounting.at("records_warmup_dropped").as_int64());
  EXPECT_EQ(loaded->records_error_dropped, accounting.at("records_error_dropped").as_int64());
  for (const auto& [category, n] : loaded->error_categories) {
    EXPECT_EQ(at_obj(accounting, "error_categories").at(category).as_int64(), n) << category;
  }
  for (const auto& row : loaded->kept) {
    for (const char* name : {"time_to_first_token", "request_latency", "inter_token_latency", "input_sequence_length",
                             "output_sequence_length"}) {
      EXPECT_TRUE(testing::agentic_metric_value(row, name)) << name;
    }
    EXPECT_GT(row.at("metadata").as_object().at("request_end_ns").as_int64(), 0);
  }
  EXPECT_TRUE(testing::agentic_validate(artifacts, 0.10).empty());  // 1 error of 13
  EXPECT_FALSE(testing::agentic_validate(artifacts, 0.05).empty());
  auto aggregate = ix::json::read_file(artifacts / kAiperfAggregateFile);
  ASSERT_TRUE(aggregate);
  EXPECT_DOUBLE_EQ(*testing::agentic_theoretical_hit_rate(aggregate->as_object()),
                   at_obj(at_obj(result, "request_metrics"), "cache").at("theoretical_cache_hit_rate").as_double());
  auto server = ix::json::read_file(artifacts / kServerMetricsJsonFile);
  ASSERT_TRUE(server);
  EXPECT_EQ(*testing::agentic_server_backend(server->as_object(), "sglang"), "vllm");  // names decide
  EXPECT_EQ(*testing::agentic_server_backend({}, "vllm"), "vllm");                     // file absent
}

TEST(AiperfExport, InferenceXFindsArtifactsInAChildDirectory) {
  const fs::path result_dir = testing::scratch_dir("aiperf_child");
  write_fixture_artifacts(result_dir / "aiperf_artifacts" / "run-1");
  EXPECT_EQ(testing::agentic_artifact_dir(result_dir), result_dir / "aiperf_artifacts" / "run-1");
  EXPECT_TRUE(testing::agentic_validate(result_dir / "aiperf_artifacts", 0.10).empty());
}

}  // namespace
}  // namespace ix::bench
