// Pareto frontiers of aggregated records and their coverage (SPEC §10).
//
// Points (x, y) of one curve (records sharing the group-by fields): a point whose x or y is
// missing, not finite or not positive is dropped and counted. The rest are sorted from the best x
// to the worst (ties: best y first) and walked: a point is kept when its y beats the best y so far,
// or equals it at a worse x (the plateau); a kept point at the same x as the last kept one
// replaces it. "Best" follows the metric: lower latency (e2el, ttft, tpot, itl) and lower cost or
// energy are better, higher throughput and interactivity are better — so throughput against
// E2EL rises to the upper right as latency grows, against interactivity to the upper left as
// interactivity falls, and cost or energy against latency falls to the lower right.
// Coverage: PASS when a curve has at least kMinFrontierPoints frontier points and dropped none,
// else WARN.
//
// Thread-safety: plain functions.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <string>
#include <vector>

namespace ix::metrics {

inline constexpr size_t kMinFrontierPoints = 5;

// Whether larger values of a metric are better (throughput, interactivity) or smaller (latency,
// cost, energy), from its name.
bool higher_is_better(std::string_view metric);

struct ParetoPoint {
  double x = 0.0;
  double y = 0.0;
  size_t record = 0;  // index into the records given
};

struct DroppedPoint {
  size_t record = 0;
  std::string why;  // "median_e2el missing", "tput_per_gpu is 0", ...
};

struct ParetoCurve {
  std::string key;                    // "hw=h200 precision=fp8 ..."
  std::vector<ParetoPoint> points;    // every valid point, in record order
  std::vector<ParetoPoint> frontier;  // from the best x to the worst
  std::vector<DroppedPoint> dropped;
  bool pass() const { return frontier.size() >= kMinFrontierPoints && dropped.empty(); }
};

// The coverage in words, as `ixbench pareto` and `ixbench review` print it:
// "5 points, 4 on the frontier, 0 dropped".
std::string coverage_text(const ParetoCurve& curve);

// The frontier of valid points (the walk above).
std::vector<ParetoPoint> pareto_frontier(std::vector<ParetoPoint> points, bool x_higher_better, bool y_higher_better);

// One curve per distinct value of `group_by` fields (in first-seen order).
std::vector<ParetoCurve> pareto_curves(const std::vector<boost::json::object>& records, const std::string& x,
                                       const std::string& y, const std::vector<std::string>& group_by);

}  // namespace ix::metrics
