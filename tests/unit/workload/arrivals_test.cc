#include "workload/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

}  // namespace
}  // namespace ix::workload
