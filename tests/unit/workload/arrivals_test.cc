#include "workload/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace ix::workload {
namespace {

struct GapStats {
  double mean_s = 0;
  double cv = 0;
};

GapStats gap_stats(const std::vector<int64_t>& offsets) {
  std::vector<double> gaps;
  for (size_t i = 1; i < offsets.size(); ++i) gaps.push_back(static_cast<double>(offsets[i] - offsets[i - 1]) / 1e9);
  double sum = 0;
  for (double g : gaps) sum += g;
  const double mean = sum / static_cast<double>(gaps.size());
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  var /= static_cast<double>(gaps.size());
  return {mean, std::sqrt(var) / mean};
}

TEST(Arrivals, InfiniteRateSendsEverythingAtOnce) {
  auto offsets =
      arrival_offsets_ns(5, {.request_rate = std::numeric_limits<double>::infinity(), .burstiness = 1, .seed = 0});
  ASSERT_TRUE(offsets.has_value());
  EXPECT_EQ(*offsets, std::vector<int64_t>(5, 0));
}

TEST(Arrivals, PoissonAtBurstinessOne) {
  auto offsets = arrival_offsets_ns(40001, {.request_rate = 100.0, .burstiness = 1.0, .seed = 7});
  ASSERT_TRUE(offsets.has_value());
  EXPECT_EQ(offsets->front(), 0);
  const GapStats s = gap_stats(*offsets);
  EXPECT_NEAR(s.mean_s, 0.01, 0.0002);
  EXPECT_NEAR(s.cv, 1.0, 0.03);  // exponential gaps: std == mean
  // Absolute schedule: the last offset is the sum of the gaps, ≈ n / rate.
  EXPECT_NEAR(static_cast<double>(offsets->back()) / 1e9, 400.0, 8.0);
}

TEST(Arrivals, BurstinessShapesTheGaps) {
  for (double k : {0.25, 4.0}) {
    auto offsets = arrival_offsets_ns(40001, {.request_rate = 50.0, .burstiness = k, .seed = 3});
    ASSERT_TRUE(offsets.has_value());
    const GapStats s = gap_stats(*offsets);
    EXPECT_NEAR(s.mean_s, 0.02, 0.02 * 0.04) << k;
    EXPECT_NEAR(s.cv, 1.0 / std::sqrt(k), 0.06) << k;  // gamma: CV = 1/sqrt(shape)
  }
}

TEST(Arrivals, SeededAndReproducible) {
  ArrivalOptions o{.request_rate = 10.0, .burstiness = 1.0, .seed = 42};
  EXPECT_EQ(*arrival_offsets_ns(100, o), *arrival_offsets_ns(100, o));
  ArrivalOptions other = o;
  other.seed = 43;
  EXPECT_NE(*arrival_offsets_ns(100, o), *arrival_offsets_ns(100, other));
  auto offsets = *arrival_offsets_ns(100, o);
  for (size_t i = 1; i < offsets.size(); ++i) EXPECT_GE(offsets[i], offsets[i - 1]);
}

TEST(Arrivals, RejectsInvalidParameters) {
  EXPECT_FALSE(arrival_offsets_ns(3, {.request_rate = 0.0, .burstiness = 1.0, .seed = 0}).has_value());
  EXPECT_FALSE(arrival_offsets_ns(3, {.request_rate = -1.0, .burstiness = 1.0, .seed = 0}).has_value());
  EXPECT_FALSE(arrival_offsets_ns(3, {.request_rate = 1.0, .burstiness = 0.0, .seed = 0}).has_value());
  EXPECT_FALSE(arrival_offsets_ns(3, {.request_rate = std::nan(""), .burstiness = 1.0, .seed = 0}).has_value());
  EXPECT_FALSE(arrival_offsets_ns(3, {.request_rate = 1.0, .burstiness = INFINITY, .seed = 0}).has_value());
  // A schedule beyond int64 nanoseconds (1e-12 requests/s) used to wrap to negative offsets.
  auto endless = arrival_offsets_ns(3, {.request_rate = 1e-12, .burstiness = 1.0, .seed = 0});
  ASSERT_FALSE(endless.has_value());
  EXPECT_NE(endless.error().message().find("raise the rate"), std::string::npos) << endless.error().message();
  // A slow but representable rate is fine: one request a day.
  auto daily = arrival_offsets_ns(3, {.request_rate = 1.0 / 86400, .burstiness = 1.0, .seed = 0});
  ASSERT_TRUE(daily.has_value());
  EXPECT_GT(daily->back(), 0);
}

TEST(Arrivals, RampUpRatesGoFromStartToEnd) {
  ArrivalOptions linear{.burstiness = 1.0, .ramp_up = RampUp::kLinear, .ramp_up_start_rps = 2, .ramp_up_end_rps = 10};
  EXPECT_DOUBLE_EQ(arrival_rate(0, 5, linear), 2.0);
  EXPECT_DOUBLE_EQ(arrival_rate(2, 5, linear), 6.0);
  EXPECT_DOUBLE_EQ(arrival_rate(4, 5, linear), 10.0);
  ArrivalOptions exponential = linear;
  exponential.ramp_up = RampUp::kExponential;
  EXPECT_DOUBLE_EQ(arrival_rate(0, 5, exponential), 2.0);
  EXPECT_NEAR(arrival_rate(2, 5, exponential), std::sqrt(20.0), 1e-12);  // the geometric middle
  EXPECT_NEAR(arrival_rate(4, 5, exponential), 10.0, 1e-12);
  EXPECT_DOUBLE_EQ(arrival_rate(0, 1, linear), 2.0);  // one request: the start rate
  // Without a ramp, every request has the configured rate.
  EXPECT_DOUBLE_EQ(arrival_rate(3, 5, {.request_rate = 7.0}), 7.0);
}

TEST(Arrivals, RampUpGapsFollowEachRequestsRate) {
  constexpr size_t kCount = 40001;
  for (RampUp strategy : {RampUp::kLinear, RampUp::kExponential}) {
    const ArrivalOptions o{
        .burstiness = 1.0, .seed = 11, .ramp_up = strategy, .ramp_up_start_rps = 5, .ramp_up_end_rps = 500};
    auto offsets = arrival_offsets_ns(kCount, o);
    ASSERT_TRUE(offsets.has_value());
    EXPECT_EQ(offsets->front(), 0);
    // In each window of 4,000 requests the mean gap is the mean of 1/rate over those requests.
    for (size_t begin = 1; begin + 4000 <= kCount; begin += 8000) {
      double expected = 0;
      for (size_t i = begin; i < begin + 4000; ++i) expected += 1.0 / arrival_rate(i, kCount, o);
      const double measured = static_cast<double>((*offsets)[begin + 3999] - (*offsets)[begin - 1]) / 1e9;
      EXPECT_NEAR(measured / expected, 1.0, 0.06)
          << "window at " << begin << ", strategy " << static_cast<int>(strategy);
    }
    // The same seed gives the same schedule.
    EXPECT_EQ(*arrival_offsets_ns(kCount, o), *offsets);
  }
}

TEST(Arrivals, RampUpRejectsImpossibleRanges) {
  const double inf = std::numeric_limits<double>::infinity();
  for (auto [start, end] : std::vector<std::pair<double, double>>{{0, 10}, {-1, 10}, {20, 10}, {1, inf}}) {
    auto r = arrival_offsets_ns(
        3, {.burstiness = 1.0, .ramp_up = RampUp::kLinear, .ramp_up_start_rps = start, .ramp_up_end_rps = end});
    ASSERT_FALSE(r.has_value()) << start << " " << end;
    EXPECT_NE(r.error().message().find("--ramp-up-start-rps"), std::string::npos) << r.error().message();
  }
  // A constant ramp (start == end) is a plain rate.
  EXPECT_TRUE(arrival_offsets_ns(
                  3, {.burstiness = 1.0, .ramp_up = RampUp::kExponential, .ramp_up_start_rps = 4, .ramp_up_end_rps = 4})
                  .has_value());
}

}  // namespace
}  // namespace ix::workload
