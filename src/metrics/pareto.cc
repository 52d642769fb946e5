#include "metrics/pareto.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <map>
#include <optional>

namespace ix::metrics {

namespace bj = boost::json;

bool higher_is_better(std::string_view metric) {
  for (std::string_view lower : {"e2el", "ttft", "tpot", "itl", "cost", "joules", "energy", "power"})
    if (metric.find(lower) != std::string_view::npos) return false;
  return true;
}

std::vector<ParetoPoint> pareto_frontier(std::vector<ParetoPoint> points, bool x_higher_better, bool y_higher_better) {
  auto x_better = [&](double a, double b) { return x_higher_better ? a > b : a < b; };
  auto y_better = [&](double a, double b) { return y_higher_better ? a > b : a < b; };
  std::stable_sort(points.begin(), points.end(), [&](const ParetoPoint& a, const ParetoPoint& b) {
    if (a.x != b.x) return x_better(a.x, b.x);
    return y_better(a.y, b.y);
  });
  std::vector<ParetoPoint> kept;
  std::optional<double> best_y;
  for (const ParetoPoint& p : points) {
    const bool keep = !best_y || y_better(p.y, *best_y) || (p.y == *best_y && x_better(kept.back().x, p.x));
    if (!keep) continue;
    if (!kept.empty() && kept.back().x == p.x) {
      kept.back() = p;
    } else {
      kept.push_back(p);
    }
    best_y = p.y;
  }
  return kept;
}

std::string coverage_text(const ParetoCurve& curve) {
  return fmt::format("{} points, {} on the frontier, {} dropped", curve.points.size(), curve.frontier.size(),
                     curve.dropped.size());
}

namespace {

std::optional<double> number(const bj::object& record, const std::string& key) {
  const bj::value* v = record.if_contains(key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

std::string curve_key(const bj::object& record, const std::vector<std::string>& group_by) {
  std::string key;
  for (const auto& field : group_by) {
    const bj::value* v = record.if_contains(field);
    std::string text = v == nullptr ? "-" : v->is_string() ? std::string(v->as_string()) : bj::serialize(*v);
    key += fmt::format("{}{}={}", key.empty() ? "" : " ", field, text);
  }
  return key;
}

// Why a value cannot be a point, or nullopt when it can.
std::optional<std::string> invalid(const std::string& name, std::optional<double> value) {
  if (!value) return name + " missing or not a number";
  if (!std::isfinite(*value)) return fmt::format("{} is {}", name, *value);
  if (*value <= 0) return fmt::format("{} is {}", name, *value);
  return std::nullopt;
}

}  // namespace

std::vector<ParetoCurve> pareto_curves(const std::vector<bj::object>& records, const std::string& x,
                                       const std::string& y, const std::vector<std::string>& group_by) {
  std::vector<ParetoCurve> curves;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string key = curve_key(records[i], group_by);
    auto [it, added] = index.try_emplace(key, curves.size());
    if (added) curves.push_back(ParetoCurve{.key = key, .points = {}, .frontier = {}, .dropped = {}});
    ParetoCurve& curve = curves[it->second];
    const auto px = number(records[i], x);
    const auto py = number(records[i], y);
    if (auto why = invalid(x, px)) {
      curve.dropped.push_back({i, *why});
    } else if (auto why_y = invalid(y, py)) {
      curve.dropped.push_back({i, *why_y});
    } else {
      curve.points.push_back({*px, *py, i});
    }
  }
  for (auto& curve : curves) curve.frontier = pareto_frontier(curve.points, higher_is_better(x), higher_is_better(y));
  return curves;
}

}  // namespace ix::metrics
