#include "metrics/serve_result.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>

#include "common/json_io.h"
#include "metrics/serve_summary.h"
#include "support/process_result_rules.h"
#include "support/subprocess.h"

namespace ix::metrics {
namespace {

// The "ixbench" object: everything beside the reference client's keys.
const boost::json::object& own(const boost::json::object& result) {
  return result.at("ixbench").as_object();
}

constexpr int64_t kMs = 1'000'000;

// A request sent at `send_ms`, first token after ttft_ms, then `n - 1` tokens every itl_ms.
RequestRecord timed_request(int64_t index, int64_t send_ms, int64_t ttft_ms, int64_t itl_ms, int n) {
  RequestRecord r;
  r.index = index;
  r.success = true;
  r.prompt_len = 100 + index;
  r.output_len = n;
  r.server_output_tokens = n;
  r.expected_output_len = n;
  r.scheduled_ns = send_ms * kMs;
  r.send_ns = send_ms * kMs;
  r.first_byte_ns = r.send_ns + ttft_ms * kMs;
  for (int i = 0; i < n; ++i) {
    r.content_event_ns.push_back(r.send_ns + (ttft_ms + i * itl_ms) * kMs);
    r.tokens_per_event.push_back(1);
  }
  r.first_token_ns = r.content_event_ns.front();
  r.end_ns = r.content_event_ns.back() + kMs;
  return r;
}

ServeRunInfo basic_info() {
  ServeRunInfo info;
  info.date = "20260101-000000";
  info.backend = "vllm";
  info.model_id = "m";
  info.tokenizer_id = "m";
  info.num_prompts = 4;
  info.request_rate = std::numeric_limits<double>::infinity();
  info.max_concurrency = 2;
  info.start_ns = 0;
  info.end_ns = 2000 * kMs;
  info.start_unix_s = 1700000000.0;
  info.end_unix_s = 1700000002.0;
  return info;
}

double num(const boost::json::object& o, std::string_view key) {
  const auto& v = o.at(key);
  return v.is_double() ? v.as_double() : static_cast<double>(v.as_int64());
}

TEST(ServeResult, MetricsFollowVllmDefinitions) {
  std::vector<RequestRecord> records = {timed_request(0, 0, 100, 10, 11), timed_request(1, 0, 100, 10, 11)};
  auto out = build_serve_result(records, basic_info());
  EXPECT_EQ(out.at("completed").as_int64(), 2);
  EXPECT_EQ(out.at("failed").as_int64(), 0);
  EXPECT_NEAR(num(out, "mean_ttft_ms"), 100.0, 1e-9);
  EXPECT_NEAR(num(out, "p99_itl_ms"), 10.0, 1e-9);
  EXPECT_NEAR(num(out, "mean_tpot_ms"), 10.0, 1e-9);  // (200 − 100) / (11 − 1)
  EXPECT_NEAR(num(out, "median_e2el_ms"), 200.0, 1e-9);
  EXPECT_EQ(num(out, "std_ttft_ms"), 0.0);
  EXPECT_EQ(num(out, "duration"), 2.0);
  EXPECT_EQ(out.at("total_input_tokens").as_int64(), 201);
  EXPECT_EQ(out.at("total_output_tokens").as_int64(), 22);
  EXPECT_EQ(num(out, "output_throughput"), 11.0);
  EXPECT_EQ(num(out, "request_throughput"), 1.0);
  EXPECT_EQ(out.at("request_rate").as_string(), "inf");
  EXPECT_TRUE(out.at("request_goodput:").is_null());
  EXPECT_TRUE(own(out).at("run_valid").as_bool());
}

TEST(ServeResult, BusiestSecondOfTokensAndRequestsAsVllm) {
  // vLLM's max_output_tokens_per_s / max_concurrent_requests: content events and in-flight
  // requests of the successful requests in whole seconds from the earliest send.
  // a: sent at 0, 11 events at 0.1 .. 0.2 s; b: sent at 0.5, 11 events at 0.9 .. 1.9 s (every
  // 100 ms); c: sent at 1.2 s, 3 events at 1.3 .. 1.5 s; d: failed (not counted).
  std::vector<RequestRecord> records = {timed_request(0, 0, 100, 10, 11), timed_request(1, 500, 400, 100, 11),
                                        timed_request(2, 1200, 100, 100, 3), timed_request(3, 0, 100, 10, 50)};
  records[3].success = false;
  records[3].error_kind = ErrorKind::kTimeout;
  auto out = build_serve_result(records, basic_info());
  // Second 0: a's 11 events + b's first (0.9 s); second 1: b's other 10 + c's 3.
  EXPECT_EQ(num(out, "max_output_tokens_per_s"), 13.0);
  // Second 0: a and b in flight; second 1: b and c.
  EXPECT_EQ(out.at("max_concurrent_requests").as_int64(), 2);
  records = {records[3]};
  out = build_serve_result(records, basic_info());
  EXPECT_EQ(num(out, "max_output_tokens_per_s"), 0.0);
  EXPECT_EQ(out.at("max_concurrent_requests").as_int64(), 0);
}

TEST(ServeResult, FailuresAreCountedByKindAndExcludedFromLatency) {
  std::vector<RequestRecord> records = {timed_request(0, 0, 100, 10, 5)};
  RequestRecord bad;
  bad.index = 1;
  bad.prompt_len = 50;
  bad.error_kind = ErrorKind::kHttpStatus;
  bad.error_message = "HTTP 503: Service Unavailable";
  bad.http_status = 503;
  records.push_back(bad);
  bad.index = 2;
  bad.error_message = "HTTP 429";
  records.push_back(bad);
  RequestRecord warm = timed_request(3, 0, 900, 900, 3);
  warm.warmup = true;
  records.push_back(warm);
  auto out = build_serve_result(records, basic_info());
  EXPECT_EQ(out.at("completed").as_int64(), 1);
  EXPECT_EQ(out.at("failed").as_int64(), 2);
  EXPECT_EQ(own(out).at("num_warmups_excluded").as_int64(), 1);
  EXPECT_EQ(own(out).at("error_counts").as_object().at("http_status").as_int64(), 2);
  EXPECT_EQ(own(out).at("error_examples").as_object().at("http_status").as_string(), "HTTP 503: Service Unavailable");
  EXPECT_EQ(out.at("input_lens").as_array().size(), 3u);  // failed requests keep their prompt length
  EXPECT_EQ(out.at("output_lens").as_array().at(1).as_int64(), 0);
  EXPECT_EQ(out.at("total_input_tokens").as_int64(), 100);  // only completed requests, as vLLM
  EXPECT_NEAR(num(out, "mean_ttft_ms"), 100.0, 1e-9);
  EXPECT_NEAR(num(own(out), "error_rate"), 2.0 / 3.0, 1e-12);
}

TEST(ServeResult, ARunWithNoCompletedRequestIsInvalidWithAReason) {
  RequestRecord bad;
  bad.error_kind = ErrorKind::kTruncated;
  bad.error_message = "connection closed by the server before the response headers were complete";
  std::vector<RequestRecord> records(3, bad);
  auto out = build_serve_result(records, basic_info());
  EXPECT_FALSE(own(out).at("run_valid").as_bool());
  ASSERT_EQ(own(out).at("invalid_reasons").as_array().size(), 1u);
  EXPECT_EQ(own(out).at("invalid_reasons").as_array().at(0).as_string(),
            "no request completed (3 of 3 failed; see error_counts and error_examples)");
}

TEST(ServeResult, StoredMessagesAreValidUtf8AndTotalsSaturate) {
  // Records from another path than the runner (sim predict, a test) still store valid UTF-8.
  RequestRecord bad;
  bad.error_kind = ErrorKind::kMalformed;
  bad.error_message = "stream chunk is not JSON: '\xff\xfe'";
  bad.error_message[bad.error_message.size() - 3] = static_cast<char>(0xff);
  std::vector<RequestRecord> records = {bad};
  RequestRecord huge = timed_request(1, 0, 100, 10, 3);
  huge.output_len = std::numeric_limits<int64_t>::max() - 1;
  records.push_back(huge);
  records.push_back(huge);
  auto out = build_serve_result(records, basic_info());
  const std::string example(own(out).at("error_examples").as_object().at("malformed").as_string());
  EXPECT_NE(example.find("\xEF\xBF\xBD"), std::string::npos) << example;
  EXPECT_EQ(out.at("total_output_tokens").as_int64(), std::numeric_limits<int64_t>::max());
  EXPECT_GT(num(out, "output_throughput"), 0.0);
  EXPECT_NE(request_record_to_json(bad, 0).at("error").as_string().find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(ServeResult, GoodputCountsRequestsMeetingEverySlo) {
  std::vector<RequestRecord> records = {timed_request(0, 0, 100, 10, 11), timed_request(1, 0, 300, 10, 11)};
  ServeRunInfo info = basic_info();
  info.goodput_slo_ms = {{"ttft", 200.0}, {"tpot", 10.0}};
  auto out = build_serve_result(records, info);
  EXPECT_EQ(num(out, "request_goodput:"), 0.5);  // one good request over 2 s
  EXPECT_EQ(num(out, "request_goodput"), 0.5);
}

TEST(ServeResult, ScheduledTimeMetricsExposeCoordinatedOmission) {
  RequestRecord late = timed_request(0, 50, 100, 10, 3);
  late.scheduled_ns = 0;  // the client sent 50 ms after the schedule
  auto out = build_serve_result({late}, basic_info());
  EXPECT_NEAR(num(out, "mean_ttft_ms"), 100.0, 1e-9);
  EXPECT_NEAR(num(own(out), "mean_sched_ttft_ms"), 150.0, 1e-9);
  EXPECT_NEAR(num(own(out), "mean_queue_ms"), 50.0, 1e-9);
  EXPECT_NEAR(num(own(out), "mean_sched_e2el_ms"), 170.0, 1e-9);
}

TEST(ServeResult, MultiTokenChunksGivePerTokenItl) {
  RequestRecord r = timed_request(0, 0, 100, 30, 3);  // 3 events, 30 ms apart
  r.tokens_per_event = {1, 3, 2};
  r.output_len = 6;
  r.server_output_tokens = 6;
  r.client_output_tokens = 5;
  auto out = build_serve_result({r}, basic_info());
  EXPECT_NEAR(num(out, "mean_itl_ms"), 30.0, 1e-9);
  // gaps 30/3 (×3) and 30/2 (×2): mean = (30 + 30) / 5 = 12
  EXPECT_NEAR(num(own(out), "mean_token_itl_ms"), 12.0, 1e-9);
  EXPECT_NEAR(num(own(out), "mean_tokens_per_chunk"), 2.0, 1e-12);
  EXPECT_NEAR(num(out, "mean_tpot_ms"), 12.0, 1e-9);  // (160 − 100) / 5
  const auto& mismatch = own(out).at("output_token_mismatch").as_object();
  EXPECT_EQ(mismatch.at("mismatched_requests").as_int64(), 1);
  EXPECT_EQ(mismatch.at("server_output_tokens").as_int64(), 6);
}

// sim predict's path: the records carry no events, which are fed as they happen (interleaved
// across requests) and kept as counted samples. Everything equals build_serve_result's result on
// the full records, apart from the ITL means and stds, rounded once from exact sums.
TEST(ServeSummary, EventsFedAsTheyHappenGiveTheRecordsResult) {
  std::vector<RequestRecord> records = {timed_request(0, 0, 100, 30, 40), timed_request(1, 0, 130, 30, 25),
                                        timed_request(2, 700, 90, 45, 30), timed_request(3, 900, 60, 30, 12)};
  records[2].tokens_per_event[3] = 3;
  records[2].output_len = records[2].server_output_tokens = 32;
  for (auto& r : records) r.end_ns = r.content_event_ns.back();
  ServeRunInfo info = basic_info();
  info.end_ns = 3000 * kMs;
  const boost::json::object want = build_serve_result(records, info);

  ServeSummary summary(TokenSamples::kCounted, 0);
  std::vector<std::tuple<int64_t, int64_t, int32_t>> events;  // (time, previous, tokens)
  for (const auto& r : records)
    for (size_t i = 0; i < r.content_event_ns.size(); ++i)
      events.emplace_back(r.content_event_ns[i], i ? r.content_event_ns[i - 1] : 0, r.tokens_per_event[i]);
  std::sort(events.begin(), events.end());
  for (const auto& [t, previous, tokens] : events) summary.add_content_event(previous, t, tokens);
  for (auto r : records) {
    r.content_event_ns.clear();
    r.tokens_per_event.clear();
    summary.add_request(r);
  }
  const boost::json::object got = std::move(summary).result(info);

  ASSERT_EQ(got.size(), want.size());
  for (const std::string key : {"mean_itl_ms", "std_itl_ms"})
    EXPECT_NEAR(num(got, key), num(want, key), 1e-15 * num(want, key)) << key;
  for (const std::string key : {"mean_token_itl_ms", "std_token_itl_ms"})
    EXPECT_NEAR(num(own(got), key), num(own(want), key), 1e-15 * num(own(want), key)) << key;
  auto without_rounded_once = [](boost::json::object o) {
    for (const char* key : {"mean_itl_ms", "std_itl_ms"}) o.erase(key);
    for (const char* key : {"mean_token_itl_ms", "std_token_itl_ms"}) o.at("ixbench").as_object().erase(key);
    return boost::json::serialize(o);
  };
  EXPECT_EQ(without_rounded_once(got), without_rounded_once(want));
  EXPECT_EQ(num(got, "max_concurrent_requests"), 4);
  EXPECT_EQ(num(got, "p99_itl_ms"), num(want, "p99_itl_ms"));
}

TEST(ServeResult, SaturatedClientMarksRunInvalid) {
  ServeRunInfo info = basic_info();
  info.client = ClientHealth{.event_loop_lag_p99_ms = 40,
                             .cpu_utilization = 0.99,
                             .worker_threads = 1,
                             .saturated = true,
                             .reason = "event-loop lag p99 40 ms"};
  info.extra["invalid_reasons"] = boost::json::array{"server process exited"};
  info.extra["server_metrics"] = boost::json::object{{"prefix_cache_hit_rate", 0.5}};
  auto out = build_serve_result({timed_request(0, 0, 1, 1, 2)}, info);
  EXPECT_FALSE(own(out).at("run_valid").as_bool());
  EXPECT_EQ(own(out).at("invalid_reasons").as_array().size(), 2u);
  EXPECT_TRUE(own(out).at("client").as_object().at("saturated").as_bool());
  EXPECT_TRUE(own(out).contains("server_metrics"));
  EXPECT_FALSE(out.contains("server_metrics"));
}

TEST(ServeResult, KeysAndOrderMatchTheReferenceRawJson) {
  const std::string path = ix::testing::shared_path("data/inferencex/examples/aggregate/raw.json");
  if (path.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/examples/aggregate/raw.json");
  auto raw = ix::json::read_file(path);
  ASSERT_TRUE(raw.has_value()) << raw.error().to_string();
  ServeRunInfo info = basic_info();
  auto out = build_serve_result({timed_request(0, 0, 100, 10, 4)}, info);
  std::vector<std::string> ours;
  for (const auto& [key, value] : out) ours.emplace_back(key);
  size_t pos = 0;
  for (const auto& [key, value] : raw->as_object()) {
    auto it = std::find(ours.begin() + static_cast<std::ptrdiff_t>(pos), ours.end(), std::string(key));
    ASSERT_NE(it, ours.end()) << "missing or out of order: " << key;
    pos = static_cast<size_t>(it - ours.begin()) + 1;
    EXPECT_EQ(value.kind() == boost::json::kind::null, out.at(key).is_null()) << key;
  }
}

// Top level: the reference client's keys, vLLM's current numeric ones, and the "ixbench" object.
TEST(ServeResult, TopLevelIsTheReferenceClientsKeysPlusVllmNumbers) {
  const std::string path = ix::testing::shared_path("data/inferencex/examples/aggregate/raw.json");
  if (path.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/examples/aggregate/raw.json");
  auto raw = ix::json::read_file(path);
  ASSERT_TRUE(raw.has_value()) << raw.error().to_string();
  std::set<std::string> expected = {"failed", "max_output_tokens_per_s", "max_concurrent_requests", "ixbench"};
  for (const auto& [key, value] : raw->as_object()) expected.emplace(key);
  ServeRunInfo info = basic_info();
  info.client = ClientHealth{.worker_threads = 1};
  info.extra["server_metrics"] = boost::json::object{{"prefix_cache_hit_rate", 0.5}};
  info.extra["scheduler_ms"] = boost::json::array{};
  auto out = build_serve_result({timed_request(0, 0, 100, 10, 4)}, info);
  std::set<std::string> ours;
  for (const auto& [key, value] : out) ours.emplace(key);
  EXPECT_EQ(ours, expected);
  EXPECT_EQ(own(out).at("schema_version").as_int64(), kServeResultSchemaVersion);
  info.goodput_slo_ms["ttft"] = 500;
  out = build_serve_result({timed_request(0, 0, 100, 10, 4)}, info);
  EXPECT_TRUE(out.at("request_goodput").is_number());
}

// What InferenceX's process_result.py makes of the result: every key it reads as a number is
// one, and the agg file gets exactly the reference's keys (the example agg, power keys aside).
TEST(ServeResult, ProcessResultRulesGiveTheReferenceAggKeys) {
  const std::string path = ix::testing::shared_path("data/inferencex/examples/aggregate");
  if (path.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/examples/aggregate");
  std::set<std::string> reference;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    if (!entry.path().filename().string().starts_with("agg_")) continue;
    auto agg = ix::json::read_file(entry.path());
    ASSERT_TRUE(agg.has_value()) << agg.error().to_string();
    for (const auto& [key, value] : agg->as_object()) reference.emplace(key);
  }
  ASSERT_FALSE(reference.empty());
  reference.erase("power_metric_schema_version");
  reference.erase("power_valid");
  ServeRunInfo info = basic_info();
  info.max_concurrency = 64;
  info.client = ClientHealth{.worker_threads = 1};
  auto out = build_serve_result({timed_request(0, 0, 100, 10, 4), timed_request(1, 5, 120, 12, 3)}, info);
  auto keys = ix::testing::process_result_agg_keys(out);
  ASSERT_TRUE(keys.has_value()) << keys.error().to_string();
  EXPECT_EQ(*keys, reference);
}

// The rules check can fail: a list, a null or a zero where process_result.py reads a number.
TEST(ServeResult, ProcessResultRulesRefuseWhatTheScriptCannotRead) {
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, boost::json::value>>{{"scheduled_offsets_ms", boost::json::array{1.0}},
                                                               {"mean_queue_ms", nullptr},
                                                               {"median_tpot_ms", 0.0},
                                                               {"sampling_params", boost::json::object{}},
                                                               {"p99_tpot_ms", "fast"}}) {
    boost::json::object raw{{key, value}};
    EXPECT_FALSE(ix::testing::process_result_metric_keys(raw).has_value()) << key;
  }
  boost::json::object fine{{"mean_ttft_ms", 1.5}, {"request_rate", "inf"}, {"p99_tpot_ms", "12.5"}};
  EXPECT_TRUE(ix::testing::process_result_metric_keys(fine).has_value());
}

TEST(ServeResult, GoldenFile) {
  std::vector<RequestRecord> records = {timed_request(0, 0, 100, 10, 4), timed_request(1, 5, 120, 12, 3)};
  RequestRecord bad;
  bad.index = 2;
  bad.prompt_len = 77;
  bad.scheduled_ns = 10 * kMs;
  bad.send_ns = 10 * kMs;
  bad.error_kind = ErrorKind::kTimeout;
  bad.error_message = "request timed out after 1000 ms";
  records.push_back(bad);
  ServeRunInfo info = basic_info();
  info.request_rate = 8.0;
  info.max_concurrency.reset();
  info.goodput_slo_ms = {{"ttft", 110.0}};
  const std::string text = ix::json::to_pretty_string(build_serve_result(records, info)) +
                           ix::json::to_string(request_record_to_json(records[1], 0)) + "\n" +
                           format_serve_summary(build_serve_result(records, info));
  const std::string golden = ix::testing::source_path("tests/data/bench/serve_result.golden");
  if (std::getenv("IXBENCH_UPDATE_GOLDENS")) {
    std::ofstream(golden) << text;
  }
  std::ifstream in(golden);
  ASSERT_TRUE(in) << "missing " << golden << " (run with IXBENCH_UPDATE_GOLDENS=1)";
  std::stringstream buffer;
  buffer << in.rdbuf();
  EXPECT_EQ(text, buffer.str());
}

}  // namespace
}  // namespace ix::metrics
