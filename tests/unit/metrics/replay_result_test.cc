#include "metrics/replay_result.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <vector>

namespace ix::metrics {
namespace {

namespace json = boost::json;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT = 1'000'000 * kMs;  // the run's origin on the steady clock (1000 s)

struct Spec {
  int64_t send_ms = 0, first_ms = 0, end_ms = 0;
  int64_t isl = 0, osl = 0, hit = 0, total = 0, session = 0, turn_depth = 0;
  ReplayPhase phase = ReplayPhase::kProfiling;
  ErrorKind error = ErrorKind::kNone;
};

ReplayRecord make_record(const Spec& s) {
  ReplayRecord r;
  r.rec.send_ns = kT + s.send_ms * kMs;
  r.rec.first_token_ns = s.first_ms ? kT + s.first_ms * kMs : 0;
  r.rec.end_ns = kT + s.end_ms * kMs;
  r.rec.prompt_len = s.isl;
  r.rec.output_len = s.osl;
  r.rec.success = s.error == ErrorKind::kNone;
  r.rec.error_kind = s.error;
  r.hit_blocks = s.hit;
  r.total_blocks = s.total;
  r.session_num = s.session;
  r.turn_depth = s.turn_depth;
  r.phase = s.phase;
  return r;
}

// Four profiled successes (A-D), a warmup success and a warmup timeout, a profiled HTTP error and
// a request skipped over the context limit. Expected values below are worked out by hand.
std::vector<ReplaySample> run_samples() {
  std::vector<ReplayRecord> records = {
      make_record({0, 100, 1100, 1000, 11, 6, 10, 0, 0}),     // A: ttft 100, e2el 1100, itl 100
      make_record({500, 700, 2500, 2000, 10, 10, 20, 0, 1}),  // B: ttft 200, e2el 2000, itl 200
      make_record({1000, 1400, 3000, 500, 1, 0, 8, 1, 5}),    // C: ttft 400, e2el 2000, no itl
      make_record({2000, 2300, 4200, 1500, 20, 3, 6, 1, 2}),  // D: ttft 300, e2el 2200, itl 100
      make_record({-5000, -4900, -4000, 100, 1, 0, 4, 0, 0, ReplayPhase::kWarmup}),
      make_record({-4000, 0, -3000, 100, 0, 0, 0, 0, 0, ReplayPhase::kWarmup, ErrorKind::kTimeout}),
      make_record({2500, 0, 2600, 800, 0, 2, 2, 1, 3, ReplayPhase::kProfiling, ErrorKind::kHttpStatus}),
  };
  records[0].scheduled_ns = kT - 5 * kMs;    // sent 5 ms late
  records[1].scheduled_ns = kT + 490 * kMs;  // sent 10 ms late
  ReplayRecord skipped;
  skipped.skipped_context = true;
  records.push_back(skipped);
  std::vector<ReplaySample> samples;
  for (const auto& r : records) samples.push_back(make_replay_sample(r));
  return samples;
}

ReplayRunInfo run_info() {
  ReplayRunInfo info;
  info.num_gpus = 8;
  info.benchmark_duration_s = 1200;
  info.open_loop = true;
  info.server_prefix_cache = ServerPrefixCacheDelta{300, 1000};
  info.client_invalid_reasons = {"client_saturated"};
  return info;
}

double num(const json::value& v) {
  return v.to_number<double>();
}
const json::object& obj(const json::value& v, std::string_view key) {
  return v.as_object().at(key).as_object();
}

TEST(ReplaySample, AiperfDefinitionsInMilliseconds) {
  ReplayRecord r = make_record({0, 100, 1100, 1000, 11});
  r.server_prompt_tokens = 1024;
  const ReplaySample s = make_replay_sample(r);
  EXPECT_DOUBLE_EQ(*s.ttft_ms(), 100.0);
  EXPECT_DOUBLE_EQ(*s.latency_ms(), 1100.0);
  EXPECT_DOUBLE_EQ(*s.itl_ms(), 100.0);  // (1100 - 100) / (11 - 1)
  EXPECT_EQ(s.isl, 1024);                // the server's usage.prompt_tokens wins
  EXPECT_LE(sizeof(ReplaySample), 72u);
}

TEST(ReplaySample, ItlNeedsTwoOutputTokensAndTtftNeedsContent) {
  const ReplaySample one = make_replay_sample(make_record({0, 100, 300, 10, 1}));
  EXPECT_FALSE(one.itl_ms().has_value());
  const ReplaySample none = make_replay_sample(make_record({0, 0, 300, 10, 5}));
  EXPECT_FALSE(none.ttft_ms().has_value());
  EXPECT_FALSE(none.itl_ms().has_value());
  ReplayRecord with_events = make_record({0, 500, 900, 10, 3});
  with_events.rec.content_event_ns = {kT + 200 * kMs, kT + 500 * kMs};
  EXPECT_DOUBLE_EQ(*make_replay_sample(with_events).ttft_ms(), 200.0);  // the first content event
}

TEST(ReplayResult, PercentileIsLinearBetweenClosestRanks) {
  const std::vector<double> sorted = {0.1, 0.2, 0.3, 0.4};
  EXPECT_DOUBLE_EQ(agentic_percentile(sorted, 50), 0.25);
  EXPECT_NEAR(agentic_percentile(sorted, 90), 0.37, 1e-12);  // k = 2.7
  EXPECT_DOUBLE_EQ(agentic_percentile(sorted, 100), 0.4);
  EXPECT_EQ(agentic_percentile({}, 50), 0.0);
}

TEST(ReplayResult, AccountingCountsWarmupAndErrorsAsTheAggregationDoes) {
  const auto result = build_replay_result(run_samples(), run_info());
  const auto& a = result.at("request_accounting").as_object();
  EXPECT_EQ(a.at("records_total").as_int64(), 7);  // the skipped request is not a record
  EXPECT_EQ(a.at("records_profiled").as_int64(), 4);
  EXPECT_EQ(a.at("records_dropped_total").as_int64(), 3);
  EXPECT_EQ(a.at("records_warmup_dropped").as_int64(), 2);
  EXPECT_EQ(a.at("records_error_dropped").as_int64(), 2);  // the warmup timeout counts in both
  EXPECT_EQ(a.at("error_categories").as_object().at("timeout").as_int64(), 1);
  EXPECT_EQ(a.at("error_categories").as_object().at("http_status").as_int64(), 1);
  EXPECT_EQ(result.at("num_requests_total").as_int64(), 7);
  EXPECT_EQ(result.at("num_requests_successful").as_int64(), 4);
}

TEST(ReplayResult, LatencyStatisticsInSeconds) {
  const auto result = build_replay_result(run_samples(), run_info());
  const auto& latency = obj(result.at("request_metrics"), "latency");
  const auto& ttft = latency.at("ttft").as_object();  // [0.1, 0.2, 0.3, 0.4]
  EXPECT_NEAR(num(ttft.at("mean")), 0.25, 1e-12);
  EXPECT_NEAR(num(ttft.at("p50")), 0.25, 1e-12);
  EXPECT_NEAR(num(ttft.at("p75")), 0.325, 1e-12);
  EXPECT_NEAR(num(ttft.at("p90")), 0.37, 1e-12);
  EXPECT_NEAR(num(ttft.at("p95")), 0.385, 1e-12);
  EXPECT_NEAR(num(ttft.at("p99")), 0.397, 1e-12);
  EXPECT_NEAR(num(ttft.at("std")), 0.1118033988749895, 1e-12);  // sqrt(0.0125)
  const auto& itl = latency.at("itl").as_object();              // [0.1, 0.2, 0.1]
  EXPECT_NEAR(num(itl.at("mean")), 0.4 / 3, 1e-12);
  EXPECT_NEAR(num(itl.at("p90")), 0.18, 1e-12);
  EXPECT_EQ(latency.at("tpot"), latency.at("itl"));
  const auto& intvty = latency.at("intvty").as_object();
  EXPECT_NEAR(num(intvty.at("mean")), 7.5, 1e-9);
  EXPECT_NEAR(num(intvty.at("p90")), 1 / 0.18, 1e-9);           // the slow tail
  EXPECT_NEAR(num(intvty.at("std")), 2.357022603955158, 1e-9);  // pstdev([10, 5, 10])
  // e2el / osl = [0.1, 0.2, 2.0, 0.11]: p90 = 0.2 + 0.7 * 1.8 = 1.46.
  EXPECT_NEAR(num(latency.at("e2e_norm_intvty").as_object().at("p90")), 1 / 1.46, 1e-9);
  EXPECT_NEAR(num(latency.at("e2el").as_object().at("mean")), (1.1 + 2.0 + 2.0 + 2.2) / 4, 1e-12);
}

TEST(ReplayResult, ThroughputQpsAndTokens) {
  const auto result = build_replay_result(run_samples(), run_info());
  const auto& rm = result.at("request_metrics").as_object();
  const auto& tput = rm.at("throughput").as_object();  // 5000 in, 42 out over 4.2 s
  EXPECT_NEAR(num(tput.at("duration_seconds")), 4.2, 1e-12);
  EXPECT_NEAR(num(tput.at("input").as_object().at("tokens_per_second")), 5000 / 4.2, 1e-9);
  EXPECT_NEAR(num(tput.at("output").as_object().at("tokens_per_second")), 10.0, 1e-9);
  EXPECT_NEAR(num(tput.at("per_gpu").as_object().at("total_tput_tps")), 5042 / 4.2 / 8, 1e-9);
  // Completions at 1.1, 2.5, 3.0, 4.2 s: windows from 1.1 hold 1, 2, 0.
  const auto& qps = rm.at("qps").as_object();
  EXPECT_EQ(qps.at("samples").as_int64(), 3);
  EXPECT_NEAR(num(qps.at("mean")), 1.0, 1e-12);
  EXPECT_NEAR(num(qps.at("p50")), 1.0, 1e-12);
  EXPECT_NEAR(num(rm.at("tokens").as_object().at("input").as_object().at("mean")), 1250, 1e-9);
  EXPECT_NEAR(num(rm.at("cache").as_object().at("theoretical_cache_hit_rate")), 21.0 / 46, 1e-12);
}

TEST(ReplayResult, PrefixCacheSessionsAndScheduleLag) {
  const auto result = build_replay_result(run_samples(), run_info());
  const auto& theoretical = obj(result.at("prefix_cache"), "theoretical");
  EXPECT_EQ(theoretical.at("profiling").as_object().at("hit_blocks").as_int64(), 21);  // errors included
  EXPECT_EQ(theoretical.at("profiling").as_object().at("total_blocks").as_int64(), 46);
  EXPECT_NEAR(num(theoretical.at("warmup").as_object().at("hit_rate")), 0.0, 0);
  EXPECT_NEAR(num(obj(result.at("prefix_cache"), "realized").at("hit_rate")), 0.3, 1e-12);
  // Session 0 spans 0 → 2.5 s, session 1 spans 1.0 → 4.2 s.
  const auto& makespan = obj(result.at("sessions"), "makespan_s");
  EXPECT_EQ(makespan.at("count").as_int64(), 2);
  EXPECT_NEAR(num(makespan.at("mean")), 2.85, 1e-12);
  EXPECT_NEAR(num(makespan.at("p90")), 3.13, 1e-12);
  const auto& by_depth = obj(result.at("sessions"), "ttft_by_turn_depth_s");
  EXPECT_NEAR(num(by_depth.at("2-3").as_object().at("p50")), 0.3, 1e-12);
  EXPECT_NEAR(num(by_depth.at("4-7").as_object().at("p50")), 0.4, 1e-12);
  EXPECT_EQ(by_depth.at("16+").as_object().at("count").as_int64(), 0);
  const auto& lag = result.at("schedule_lag_ms").as_object();
  EXPECT_EQ(lag.at("count").as_int64(), 2);
  EXPECT_NEAR(num(lag.at("mean")), 7.5, 1e-9);
  EXPECT_NEAR(num(lag.at("max")), 10.0, 1e-9);
}

TEST(ReplayResult, ValidityNamesEveryReason) {
  const auto result = build_replay_result(run_samples(), run_info());
  const auto& v = result.at("validity").as_object();
  EXPECT_FALSE(v.at("submission_valid").as_bool());
  EXPECT_EQ(v.at("completed").as_int64(), 5);
  EXPECT_NEAR(num(v.at("error_rate")), 0.2, 1e-12);
  EXPECT_NEAR(num(v.at("context_overflow").as_object().at("share")), 1.0 / 6, 1e-12);
  const json::array expected = {"error_rate_exceeded", "context_overflow_rate_exceeded", "client_saturated"};
  EXPECT_EQ(v.at("reasons").as_array(), expected);
}

TEST(ReplayResult, CleanLongRunIsValidAndShortRunIsNot) {
  std::vector<ReplaySample> samples = {make_replay_sample(make_record({0, 100, 1100, 1000, 11}))};
  ReplayRunInfo info;
  info.benchmark_duration_s = 900;
  EXPECT_TRUE(build_replay_result(samples, info).at("validity").as_object().at("submission_valid").as_bool());
  EXPECT_FALSE(build_replay_result(samples, info).contains("schedule_lag_ms"));  // closed loop
  info.benchmark_duration_s = 0;                                                 // judged on the measured 1.1 s
  const json::array expected = {"duration_below_minimum"};
  EXPECT_EQ(build_replay_result(samples, info).at("validity").as_object().at("reasons").as_array(), expected);
  EXPECT_TRUE(obj(build_replay_result({}, info).at("request_metrics"), "latency").at("ttft").as_object().empty());
  EXPECT_TRUE(build_replay_result(samples, info).at("prefix_cache").as_object().at("realized").is_null());
}

// Requests the client cancelled at the end (the duration's grace) are not the server's errors: a
// run that is otherwise clean stays valid however many were still in flight.
TEST(ReplayResult, CancelledAtTheEndAreNeitherErrorsNorCompleted) {
  std::vector<ReplaySample> samples = {make_replay_sample(make_record({0, 100, 1100, 1000, 11}))};
  for (int i = 0; i < 3; ++i)
    samples.push_back(make_replay_sample(
        make_record({1000, 0, 1200, 100, 0, 0, 0, 0, 0, ReplayPhase::kProfiling, ErrorKind::kCancelled})));
  ReplayRunInfo info;
  info.benchmark_duration_s = 900;
  const auto v = build_replay_result(samples, info).at("validity").as_object();
  EXPECT_TRUE(v.at("submission_valid").as_bool()) << v;
  EXPECT_EQ(v.at("completed").as_int64(), 1);
  EXPECT_EQ(v.at("errors").as_int64(), 0);
  EXPECT_EQ(v.at("cancelled").as_int64(), 3);
  samples.push_back(make_replay_sample(
      make_record({1000, 0, 1200, 100, 0, 0, 0, 0, 0, ReplayPhase::kProfiling, ErrorKind::kHttpStatus})));
  const auto w = build_replay_result(samples, info).at("validity").as_object();
  EXPECT_EQ(w.at("errors").as_int64(), 1);
  EXPECT_FALSE(w.at("submission_valid").as_bool());  // 1 error of 2 completed
}

}  // namespace
}  // namespace ix::metrics
