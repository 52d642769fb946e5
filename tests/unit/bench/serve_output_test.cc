#include "bench/serve_output.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <boost/json.hpp>

#include "bench/serve_runner.h"

namespace ix::bench {
namespace {

boost::json::object result_with(bool valid) {
  return {{"ixbench", boost::json::object{{"error_counts", boost::json::object{}},
                                          {"error_examples", boost::json::object{}},
                                          {"run_valid", valid},
                                          {"invalid_reasons", boost::json::array{}}}}};
}

// As InferenceX's client: non-zero only above 5 % failed, none completed, or stopped; an invalid
// mark alone only with --fail-on-invalid.
TEST(ServeOutput, ExitStatusIsInferenceXs) {
  BenchServeOptions o;
  EXPECT_EQ(exit_status(o, {.completed = 100, .failed = 0, .run_valid = true}, result_with(true)), 0);
  EXPECT_EQ(exit_status(o, {.completed = 100, .failed = 0, .run_valid = false}, result_with(false)), 0);
  EXPECT_EQ(exit_status(o, {.completed = 95, .failed = 5, .run_valid = true}, result_with(true)), 0);
  EXPECT_EQ(exit_status(o, {.completed = 94, .failed = 6, .run_valid = true}, result_with(true)), 1);
  EXPECT_EQ(exit_status(o, {.completed = 0, .failed = 0, .run_valid = true}, result_with(true)), 1);
  EXPECT_EQ(exit_status(o, {.completed = 0, .failed = 1, .run_valid = true}, result_with(true)), 1);
  EXPECT_EQ(
      exit_status(o, {.completed = 50, .failed = 4, .run_valid = false, .stop_signal = SIGINT}, result_with(false)),
      130);
  EXPECT_EQ(
      exit_status(o, {.completed = 50, .failed = 4, .run_valid = false, .stop_signal = SIGTERM}, result_with(false)),
      143);
  EXPECT_EQ(
      exit_status(o, {.completed = 100, .failed = 1, .run_valid = false, .server_lost = true}, result_with(false)), 1);
  o.fail_on_invalid = true;
  EXPECT_EQ(exit_status(o, {.completed = 100, .failed = 0, .run_valid = false}, result_with(false)), 1);
  EXPECT_EQ(exit_status(o, {.completed = 100, .failed = 0, .run_valid = true}, result_with(true)), 0);
}

metrics::ClientHealth judged(ClientDelay d) {
  metrics::ClientHealth h;
  judge_client_delay(d, h);
  return h;
}

// The mark follows the measured effect, so identical repeats that differ by a few points of
// busy-ness or lag land on the same side.
TEST(ServeOutput, InvalidMarkFollowsTheMeasuredEffectNotAGauge) {
  // Lag alone with kernel-stamped reads and sends on time: not reaching the measurements.
  for (double lag : {93.5, 101.5})
    EXPECT_FALSE(judged({.lag_p99_ms = lag,
                         .max_busy = 0.5,
                         .send_delay_p90_ms = 0.2,
                         .median_e2el_ms = 20'000,
                         .median_ttft_ms = 400})
                     .saturated)
        << lag;
  // A thread busy 94 % or 96 % without late sends: valid both times; 96 % only warns.
  EXPECT_FALSE(judged({.max_busy = 0.94, .send_delay_p90_ms = 0.5, .median_e2el_ms = 20'000}).saturated);
  const auto busy = judged({.max_busy = 0.96, .send_delay_p90_ms = 0.5, .median_e2el_ms = 20'000});
  EXPECT_FALSE(busy.saturated);
  EXPECT_NE(busy.warning.find("busy 96%"), std::string::npos) << busy.warning;
  // Sends 300 ms late on 2 s requests: 15 % of the offered load lost.
  const auto late = judged({.max_busy = 0.99, .send_delay_p90_ms = 300, .median_e2el_ms = 2'000});
  EXPECT_TRUE(late.saturated);
  EXPECT_NE(late.reason.find("sends 300.000 ms late at p90"), std::string::npos) << late.reason;
  EXPECT_NEAR(late.client_delay_share, 0.15, 1e-12);
  // Late by more than the threshold but by less than 1 % of the request: no effect worth a mark.
  EXPECT_FALSE(judged({.send_delay_p90_ms = 5, .median_e2el_ms = 2'000}).saturated);
  // Without kernel timestamps lag inflates every TTFT directly.
  EXPECT_TRUE(judged({.lag_p99_ms = 30, .median_ttft_ms = 400, .stamps_immune = false}).saturated);
  EXPECT_FALSE(judged({.lag_p99_ms = 3, .median_ttft_ms = 400, .stamps_immune = false}).saturated);
}

TEST(ServeOutput, ResultFileNameIsVllms) {
  BenchServeOptions o;
  o.model = "deepseek-ai/DeepSeek-R1-0528";
  o.max_concurrency = 64;
  ServePlan plan;
  plan.request_rate = std::numeric_limits<double>::infinity();
  EXPECT_EQ(result_file_name(o, plan, "20260101-000000"),
            "vllm-infqps-concurrency64-DeepSeek-R1-0528-20260101-000000.json");
  o.result_filename = "x.json";
  EXPECT_EQ(result_file_name(o, plan, "20260101-000000"), "x.json");
}

TEST(ServePlan, AutoThreadsFollowCoresAndConcurrency) {
  EXPECT_EQ(auto_threads(1024, 2), 1);
  EXPECT_EQ(auto_threads(16, 16), 1);
  EXPECT_EQ(auto_threads(64, 16), 1);
  EXPECT_EQ(auto_threads(128, 16), 2);
  EXPECT_EQ(auto_threads(256, 16), 4);
  EXPECT_EQ(auto_threads(1024, 16), 4);
  EXPECT_EQ(auto_threads(1024, 64), 16);
  EXPECT_EQ(auto_threads(std::nullopt, 16), 4);
}

}  // namespace
}  // namespace ix::bench
