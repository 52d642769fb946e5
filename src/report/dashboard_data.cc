#include "report/dashboard_data.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "common/json_io.h"
#include "metrics/pareto.h"

namespace ix::report {
namespace {

namespace bj = boost::json;

struct ChartSpec {
  std::string_view id;
  std::string_view x;  // point field; "e2el" reads p90_e2el for agentic points
  std::string_view y;
  std::string_view x_label;
  std::string_view y_label;
  bool frontier = true;
};

constexpr ChartSpec kCharts[] = {
    {"intvty", "median_intvty", "tput_per_gpu", "Interactivity (tok/s/user, median)", "Throughput per GPU (tok/s)"},
    {"e2el", "e2el", "tput_per_gpu", "End-to-end latency (s, median; P90 for agentic)", "Throughput per GPU (tok/s)"},
    {"ttft", "conc", "median_ttft", "Concurrency", "TTFT (s, median)", false},
    {"cost", "median_intvty", "cost_per_mtok", "Interactivity (tok/s/user, median)", "Cost per million tokens ($)"},
    {"energy", "median_intvty", "joules_per_total_token", "Interactivity (tok/s/user, median)", "Joules per token"},
};

bj::value number_or_null(const std::optional<double>& value) {
  return value && std::isfinite(*value) ? bj::value(*value) : bj::value(nullptr);
}

std::string_view model_key(const store::ResultRecord& r) {
  return r.model_prefix.empty() ? r.model : r.model_prefix;
}

// Everything that makes two points the same line, and the same line's measured/predicted twin.
std::string line_identity(const store::ResultRecord& r) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", model_key(r), store::scenario_name(r.scenario), r.isl, r.osl, r.hw,
                     r.framework, r.precision, r.spec_decoding, r.disagg);
}

std::string curve_label(const store::ResultRecord& r) {
  std::string label = fmt::format("{} {} {}", r.hw, r.framework, r.precision);
  if (!r.spec_decoding.empty() && r.spec_decoding != "none") label += " " + r.spec_decoding;
  if (r.disagg) label += " disagg";
  if (r.kind == store::ResultKind::kPredicted) label += " (predicted)";
  return label;
}

bj::array evals_json(const store::ResultRecord& r) {
  bj::array out;
  for (const auto& e : r.evals) {
    out.push_back(bj::object{{"task", e.task},
                             {"filter", e.filter},
                             {"metric", e.metric},
                             {"value", e.value},
                             {"stderr", e.stderr_value},
                             {"n_samples", e.n_samples},
                             {"complete", e.complete}});
  }
  return out;
}

bj::value config_json(const store::ResultRecord& r) {
  if (r.row_json.empty()) return nullptr;
  auto row = json::parse(r.row_json, "row_json");
  return row ? std::move(*row) : bj::value(nullptr);
}

bj::object point_json(const store::ResultRecord& r, const GpuHourCosts& costs) {
  const auto usd = costs.lookup(r.hw);
  bj::object p{{"run_id", r.run_id},
               {"stem", r.result_stem},
               {"kind", store::result_kind_name(r.kind)},
               {"scenario", store::scenario_name(r.scenario)},
               {"model", r.model},
               {"model_prefix", r.model_prefix},
               {"hw", r.hw},
               {"framework", r.framework},
               {"precision", r.precision},
               {"spec_decoding", r.spec_decoding},
               {"disagg", r.disagg},
               {"is_multinode", r.is_multinode},
               {"tp", r.tp},
               {"ep", r.ep},
               {"pp", r.pp},
               {"dp_attention", r.dp_attention},
               {"num_gpus", r.num_gpus},
               {"conc", r.conc},
               {"isl", r.isl},
               {"osl", r.osl},
               {"image", r.image},
               {"config_key", r.config_key},
               {"recipe_fingerprint", r.recipe_fingerprint},
               {"date", r.created_at.substr(0, 10)}};
  const std::pair<std::string_view, std::optional<double>> numbers[] = {
      {"tput_per_gpu", r.tput_per_gpu},
      {"output_tput_per_gpu", r.output_tput_per_gpu},
      {"input_tput_per_gpu", r.input_tput_per_gpu},
      {"median_ttft", r.median_ttft},
      {"p90_ttft", r.p90_ttft},
      {"median_tpot", r.median_tpot},
      {"median_e2el", r.median_e2el},
      {"p90_e2el", r.p90_e2el},
      {"median_intvty", r.median_intvty},
      {"p90_intvty", r.p90_intvty},
      {"e2el", r.scenario == store::Scenario::kAgentic ? r.p90_e2el : r.median_e2el},
      {"usd_per_gpu_hour", usd},
      {"cost_per_mtok", cost_per_million_tokens(usd, r.tput_per_gpu)},
      {"cost_per_mtok_output", cost_per_million_tokens(usd, r.output_tput_per_gpu)},
      {"avg_power_w", r.avg_power_w},
      {"joules_per_total_token", r.power_valid.value_or(true) ? r.joules_per_total_token : std::nullopt},
      {"joules_per_output_token", r.power_valid.value_or(true) ? r.joules_per_output_token : std::nullopt},
  };
  for (const auto& [name, value] : numbers) p[name] = number_or_null(value);
  p["conc_value"] = static_cast<double>(r.conc);
  p["power_valid"] = r.power_valid ? bj::value(*r.power_valid) : bj::value(nullptr);
  p["evals"] = evals_json(r);
  bj::array artifacts;
  for (const auto& a : r.artifacts) artifacts.push_back(bj::object{{"kind", a.kind}, {"path", a.path}});
  p["artifacts"] = std::move(artifacts);
  p["config"] = config_json(r);
  return p;
}

std::optional<double> field_number(const bj::object& point, std::string_view name) {
  const auto* value = point.if_contains(name == "conc" ? "conc_value" : name);
  if (value == nullptr || !value->is_double()) return std::nullopt;
  return value->get_double();
}

// The frontier of one curve on one chart, as indices into the view's points.
bj::array frontier_json(const std::vector<size_t>& members, const bj::array& points, const ChartSpec& chart) {
  std::vector<metrics::ParetoPoint> valid;
  for (size_t index : members) {
    const auto& point = points[index].get_object();
    const auto x = field_number(point, chart.x), y = field_number(point, chart.y);
    if (x && y && *x > 0 && *y > 0) valid.push_back({.x = *x, .y = *y, .record = index});
  }
  bj::array out;
  for (const auto& kept : metrics::pareto_frontier(std::move(valid), metrics::higher_is_better(chart.x),
                                                   metrics::higher_is_better(chart.y))) {
    out.push_back(kept.record);
  }
  return out;
}

bj::object curve_json(const store::ResultRecord& first, const std::vector<size_t>& members, const bj::array& points) {
  bj::array member_array;
  for (size_t index : members) member_array.push_back(index);
  bj::object frontiers;
  for (const auto& chart : kCharts) {
    if (chart.frontier) frontiers[chart.id] = frontier_json(members, points, chart);
  }
  return bj::object{{"label", curve_label(first)},
                    {"model", model_key(first)},
                    {"scenario", store::scenario_name(first.scenario)},
                    {"isl", first.isl},
                    {"osl", first.osl},
                    {"hw", first.hw},
                    {"framework", first.framework},
                    {"precision", first.precision},
                    {"spec_decoding", first.spec_decoding},
                    {"disagg", first.disagg},
                    {"kind", store::result_kind_name(first.kind)},
                    {"line", line_identity(first)},
                    {"points", std::move(member_array)},
                    {"frontiers", std::move(frontiers)}};
}

bj::array charts_json() {
  bj::array out;
  for (const auto& chart : kCharts) {
    out.push_back(bj::object{{"id", chart.id},
                             {"x", chart.x},
                             {"y", chart.y},
                             {"x_label", chart.x_label},
                             {"y_label", chart.y_label},
                             {"frontier", chart.frontier}});
  }
  return out;
}

// Each measured point's predicted twin (same line, same conc) and back, as "pair" indices.
void pair_measured_with_predicted(const std::vector<store::ResultRecord>& results, bj::array& points) {
  std::map<std::string, size_t> predicted;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].kind == store::ResultKind::kPredicted) {
      predicted.emplace(fmt::format("{}|{}", line_identity(results[i]), results[i].conc), i);
    }
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].kind != store::ResultKind::kMeasured) continue;
    auto twin = predicted.find(fmt::format("{}|{}", line_identity(results[i]), results[i].conc));
    if (twin == predicted.end()) continue;
    points[i].get_object()["pair"] = twin->second;
    points[twin->second].get_object()["pair"] = i;
  }
}

}  // namespace

bj::object view_json(const std::vector<store::ResultRecord>& results, const GpuHourCosts& costs) {
  bj::array points;
  points.reserve(results.size());
  std::map<std::string, std::vector<size_t>> members;  // curve key -> points, in first-seen order below
  std::vector<std::string> order;
  std::set<std::string> missing_costs;
  for (size_t i = 0; i < results.size(); ++i) {
    points.push_back(point_json(results[i], costs));
    if (!costs.lookup(results[i].hw)) missing_costs.insert(results[i].hw);
    const std::string key = fmt::format("{}|{}", line_identity(results[i]), store::result_kind_name(results[i].kind));
    auto [slot, inserted] = members.try_emplace(key);
    if (inserted) order.push_back(key);
    slot->second.push_back(i);
  }
  pair_measured_with_predicted(results, points);
  bj::array curves;
  for (const auto& key : order) {
    const auto& indices = members[key];
    curves.push_back(curve_json(results[indices.front()], indices, points));
  }
  bj::array missing;
  for (const auto& hw : missing_costs) missing.push_back(bj::string(hw));
  return bj::object{{"points", std::move(points)},
                    {"curves", std::move(curves)},
                    {"charts", charts_json()},
                    {"missing_costs", std::move(missing)}};
}

bj::object facets_json(const store::Facets& facets) {
  auto strings = [](const std::vector<std::string>& values) {
    bj::array out;
    for (const auto& v : values) out.push_back(bj::string(v));
    return out;
  };
  bj::array panels;
  for (const auto& p : facets.panels) {
    panels.push_back(bj::object{
        {"model", p.model}, {"scenario", p.scenario}, {"isl", p.isl}, {"osl", p.osl}, {"results", p.results}});
  }
  return bj::object{{"models", strings(facets.models)},
                    {"hardware", strings(facets.hardware)},
                    {"frameworks", strings(facets.frameworks)},
                    {"precisions", strings(facets.precisions)},
                    {"scenarios", strings(facets.scenarios)},
                    {"panels", std::move(panels)},
                    {"first_date", facets.first_date},
                    {"last_date", facets.last_date},
                    {"results", facets.results}};
}

store::Facets facets_of(const std::vector<store::ResultRecord>& results) {
  std::set<std::string> models, hardware, frameworks, precisions, scenarios;
  std::set<std::pair<int64_t, int64_t>> isl_osl;
  std::map<std::tuple<std::string, std::string, int64_t, int64_t>, int64_t> panels;
  store::Facets facets;
  for (const auto& r : results) {
    const std::string model(model_key(r)), scenario(store::scenario_name(r.scenario));
    models.insert(model), hardware.insert(r.hw), frameworks.insert(r.framework), precisions.insert(r.precision);
    scenarios.insert(scenario);
    if (r.scenario == store::Scenario::kFixedSeqLen) isl_osl.emplace(r.isl, r.osl);
    ++panels[{model, scenario, r.isl, r.osl}];
    const std::string date = r.created_at.substr(0, 10);
    if (facets.first_date.empty() || date < facets.first_date) facets.first_date = date;
    if (date > facets.last_date) facets.last_date = date;
  }
  facets.models.assign(models.begin(), models.end());
  facets.hardware.assign(hardware.begin(), hardware.end());
  facets.frameworks.assign(frameworks.begin(), frameworks.end());
  facets.precisions.assign(precisions.begin(), precisions.end());
  facets.scenarios.assign(scenarios.begin(), scenarios.end());
  facets.isl_osl.assign(isl_osl.begin(), isl_osl.end());
  for (const auto& [key, count] : panels) {
    const auto& [model, scenario, isl, osl] = key;
    facets.panels.push_back({.model = model, .scenario = scenario, .isl = isl, .osl = osl, .results = count});
  }
  facets.results = static_cast<int64_t>(results.size());
  return facets;
}

namespace {

Result<int64_t> positive_integer(std::string_view name, std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}='{}': expected an integer > 0", name, text));
  }
  return value;
}

bool is_iso_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  return true;
}

// One name=value into `query`; false when the name is not a filter.
Result<bool> apply_param(store::ResultQuery& query, const std::string& name, const std::string& value) {
  auto bad = [&](std::string_view expected) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}='{}': expected {}", name, value, expected));
  };
  if (name == "model")
    query.models.push_back(value);
  else if (name == "hw")
    query.hardware.push_back(value);
  else if (name == "framework")
    query.frameworks.push_back(value);
  else if (name == "precision")
    query.precisions.push_back(value);
  else if (name == "scenario") {
    if (value != "fixed-seq-len" && value != "agentic") return bad("fixed-seq-len or agentic");
    query.scenario = value == "agentic" ? store::Scenario::kAgentic : store::Scenario::kFixedSeqLen;
  } else if (name == "kind") {
    if (value != "measured" && value != "predicted") return bad("measured or predicted");
    query.kind = value == "predicted" ? store::ResultKind::kPredicted : store::ResultKind::kMeasured;
  } else if (name == "isl" || name == "osl") {
    auto number = positive_integer(name, value);
    if (!number) return fail(number.error());
    (name == "isl" ? query.isl : query.osl) = *number;
  } else if (name == "from" || name == "to") {
    if (!is_iso_date(value)) return bad("a date YYYY-MM-DD");
    (name == "from" ? query.from_date : query.to_date) = value;
  } else {
    return false;
  }
  return true;
}

}  // namespace

Result<store::ResultQuery> query_from_params(const std::vector<std::pair<std::string, std::string>>& params) {
  store::ResultQuery query;
  std::set<std::string> seen;
  for (const auto& [name, value] : params) {
    const bool repeatable = name == "hw" || name == "framework" || name == "precision";
    if (!repeatable && !seen.insert(name).second) {
      return fail(ErrorCode::kInvalidArgument, fmt::format("'{}' given twice: it takes one value", name));
    }
    auto applied = apply_param(query, name, value);
    if (!applied) return fail(applied.error());
    if (!*applied) {
      return fail(
          ErrorCode::kInvalidArgument,
          fmt::format("unknown filter '{}' (filters: model, scenario, isl, osl, hw, framework, precision, kind, "
                      "from, to)",
                      name));
    }
  }
  return query;
}

std::string json_for_script(std::string_view json_text) {
  std::string out;
  out.reserve(json_text.size() + json_text.size() / 16);
  for (size_t i = 0; i < json_text.size(); ++i) {
    const char c = json_text[i];
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else if (c == '\xE2' && i + 2 < json_text.size() && json_text[i + 1] == '\x80' &&
             (json_text[i + 2] == '\xA8' || json_text[i + 2] == '\xA9')) {
      out += json_text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace ix::report
