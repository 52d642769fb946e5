// fitting_points: which measured points a `sim calibrate --holdout / --holdout-series` fit uses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/fit.h"

namespace ix::sim {
namespace {

MeasuredPoint point(const std::string& hardware, const std::string& series, int32_t conc) {
  MeasuredPoint p;
  p.hardware = hardware;
  p.conc = conc;
  p.series = hardware + "|" + series;  // as load_measured_csv builds it: the hardware comes first
  return p;
}

std::vector<bool> split(const std::vector<MeasuredPoint>& points, bool holdout, int32_t series) {
  FitOptions options;
  options.holdout = holdout;
  options.holdout_series = series;
  return fitting_points(points, options);
}

TEST(HoldoutSplit, WithoutAHoldoutEveryPointIsFitted) {
  const std::vector<MeasuredPoint> points{point("b200", "a", 4), point("b200", "a", 8), point("b200", "a", 16)};
  EXPECT_EQ(split(points, false, 0), (std::vector<bool>{true, true, true}));
}

TEST(HoldoutSplit, ConcurrencyHoldoutKeepsEachSeriesLowestAndHighest) {
  const std::vector<MeasuredPoint> points{point("b200", "a", 16), point("b200", "a", 4),  point("b200", "a", 64),
                                          point("b200", "b", 8),  point("b200", "c", 32), point("b200", "c", 32)};
  // Series a: 4 and 64 fitted, 16 held out; b (one concurrency) and c (one concurrency, twice) fitted.
  EXPECT_EQ(split(points, true, 0), (std::vector<bool>{false, true, true, true, true, true}));
}

TEST(HoldoutSplit, SeriesHoldoutTakesEveryNthSeriesOfEachHardwareWhole) {
  // gb300 has series s1..s5 (key order), h100 has t1..t2; in input order, shuffled.
  const std::vector<MeasuredPoint> points{
      point("gb300", "s5", 8), point("gb300", "s1", 8),  point("h100", "t2", 4),  point("gb300", "s3", 8),
      point("gb300", "s2", 8), point("gb300", "s2", 64), point("gb300", "s4", 8), point("h100", "t1", 4),
  };
  // N = 2: the 2nd and 4th series of gb300 (s2, s4) and the 2nd of h100 (t2) are held out with all
  // their concurrencies; the numbering restarts at each hardware.
  EXPECT_EQ(split(points, false, 2), (std::vector<bool>{true, true, false, true, false, false, false, true}));
  // N = 3: only gb300's s3; h100 has two series, so none of its is held out.
  EXPECT_EQ(split(points, false, 3), (std::vector<bool>{true, true, true, false, true, true, true, true}));
}

TEST(HoldoutSplit, BothSplitsTogetherHoldOutTheUnionOfWhatEachHoldsOut) {
  const std::vector<MeasuredPoint> points{point("b200", "a", 4), point("b200", "a", 16), point("b200", "a", 64),
                                          point("b200", "b", 4), point("b200", "b", 16), point("b200", "b", 64)};
  EXPECT_EQ(split(points, true, 2), (std::vector<bool>{true, false, true, false, false, false}));
}

TEST(HoldoutSplit, AFitRefusesASeriesStepOfOneAndNeverHoldsOutAHardwaresFirstSeries) {
  CsvLoad data;
  data.points = {point("b200", "a", 4), point("b200", "b", 4)};
  FitOptions options;
  options.holdout_series = 1;
  auto one = fit_calibration(data, options);
  ASSERT_FALSE(one.has_value());
  EXPECT_NE(one.error().message().find("holdout_series must be 0 (off) or >= 2, got 1"), std::string::npos);
  // So every hardware keeps at least one fitted series (a split never leaves nothing to fit).
  EXPECT_EQ(split({point("b200", "a", 4)}, true, 2), (std::vector<bool>{true}));
}

}  // namespace
}  // namespace ix::sim
