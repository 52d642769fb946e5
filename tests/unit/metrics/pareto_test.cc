// Pareto frontiers as SPEC §10 walks them, for each direction of x and y, and curves with
// dropped points and coverage.
#include "metrics/pareto.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace ix::metrics {
namespace {

std::vector<std::pair<double, double>> xy(const std::vector<ParetoPoint>& points) {
  std::vector<std::pair<double, double>> out;
  for (const auto& p : points) out.emplace_back(p.x, p.y);
  return out;
}

std::vector<ParetoPoint> pts(std::initializer_list<std::pair<double, double>> list) {
  std::vector<ParetoPoint> out;
  for (auto [x, y] : list) out.push_back({x, y, out.size()});
  return out;
}

TEST(Pareto, ThroughputAgainstLatencyKeepsRisesAndPlateaus) {
  auto f = pareto_frontier(pts({{3, 15}, {1, 10}, {2, 20}, {5, 30}, {2, 25}, {4, 25}}), false, true);
  EXPECT_EQ(xy(f), (std::vector<std::pair<double, double>>{{1, 10}, {2, 25}, {4, 25}, {5, 30}}));
  // The same point twice is kept once.
  EXPECT_EQ(pareto_frontier(pts({{2, 25}, {2, 25}}), false, true).size(), 1U);
}

TEST(Pareto, ThroughputAgainstInteractivityWalksFromTheHighestInteractivity) {
  auto f = pareto_frontier(pts({{50, 15}, {100, 10}, {10, 25}, {50, 20}, {20, 30}}), true, true);
  EXPECT_EQ(xy(f), (std::vector<std::pair<double, double>>{{100, 10}, {50, 20}, {20, 30}}));
}

TEST(Pareto, CostAgainstLatencyKeepsFalls) {
  auto f = pareto_frontier(pts({{3, 4}, {1, 5}, {2, 3}, {4, 1}}), false, false);
  EXPECT_EQ(xy(f), (std::vector<std::pair<double, double>>{{1, 5}, {2, 3}, {4, 1}}));
  EXPECT_FALSE(higher_is_better("median_e2el"));
  EXPECT_FALSE(higher_is_better("cost_per_mtok"));
  EXPECT_TRUE(higher_is_better("median_intvty"));
  EXPECT_TRUE(higher_is_better("tput_per_gpu"));
}

TEST(Pareto, CurvesGroupRecordsDropInvalidPointsAndJudgeCoverage) {
  std::vector<boost::json::object> records;
  for (int conc : {1, 2, 4, 8, 16}) {
    records.push_back({{"hw", "h200"}, {"median_e2el", 1.0 + conc}, {"tput_per_gpu", 100.0 * conc}, {"conc", conc}});
    records.push_back({{"hw", "b200"}, {"median_e2el", 1.0 + conc}, {"tput_per_gpu", 150.0 * conc}, {"conc", conc}});
  }
  records.push_back({{"hw", "b200"}, {"median_e2el", 0.0}, {"tput_per_gpu", 10.0}});
  records.push_back({{"hw", "b200"}, {"tput_per_gpu", 10.0}});
  records.push_back({{"hw", "b200"}, {"median_e2el", 3.0}, {"tput_per_gpu", -1.0}});
  auto curves = pareto_curves(records, "median_e2el", "tput_per_gpu", {"hw"});
  ASSERT_EQ(curves.size(), 2U);
  EXPECT_EQ(curves[0].key, "hw=h200");
  EXPECT_EQ(curves[0].frontier.size(), 5U);
  EXPECT_TRUE(curves[0].pass());
  EXPECT_EQ(curves[1].key, "hw=b200");
  EXPECT_EQ(curves[1].frontier.size(), 5U);
  ASSERT_EQ(curves[1].dropped.size(), 3U);
  EXPECT_EQ(curves[1].dropped[0].why, "median_e2el is 0");
  EXPECT_EQ(curves[1].dropped[1].why, "median_e2el missing or not a number");
  EXPECT_EQ(curves[1].dropped[2].why, "tput_per_gpu is -1");
  EXPECT_FALSE(curves[1].pass());  // invalid points: WARN
  records.resize(4);
  EXPECT_FALSE(pareto_curves(records, "median_e2el", "tput_per_gpu", {"hw"})[0].pass());  // 2 points: WARN
}

}  // namespace
}  // namespace ix::metrics
