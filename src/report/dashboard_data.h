// What the dashboard draws, computed from the store's latest view: the points (one per result,
// with cost per million tokens and joules per token derived), the curves (one per panel — model,
// scenario, ISL/OSL — and hardware × framework × precision × spec decoding × disagg × kind) with
// their Pareto frontiers for every chart (SPEC §10, metrics::pareto_frontier), and the pairing of
// each measured point with its predicted counterpart. Everything is aggregated here, so the page
// only filters whole curves and draws; the served dashboard queries one panel at a time.
//
// Charts: "intvty" (tput_per_gpu vs median_intvty, upper left), "e2el" (tput_per_gpu vs
// median_e2el; p90_e2el for agentic, lower E2EL better), "cost" (cost_per_mtok vs median_intvty,
// lower right), "energy" (joules_per_total_token vs median_intvty), "ttft" (median_ttft vs conc,
// drawn as lines, no frontier).
//
// Thread-safety: plain functions.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "report/gpu_cost.h"
#include "store/store.h"

namespace ix::report {

// {"points": [...], "curves": [...], "charts": [...], "missing_costs": ["hw", ...]}.
boost::json::object view_json(const std::vector<store::ResultRecord>& results, const GpuHourCosts& costs);

// {"models", "hardware", "frameworks", "precisions", "scenarios", "panels", "first_date",
//  "last_date", "results"} for the filter menus.
boost::json::object facets_json(const store::Facets& facets);

// The facets of these results alone (a static report's menus list only what it holds).
store::Facets facets_of(const std::vector<store::ResultRecord>& results);

// The view's filters from query-string pairs: model, scenario (fixed-seq-len|agentic), isl, osl,
// kind (measured|predicted), from, to (YYYY-MM-DD) once each; hw, framework, precision repeatable.
// An unknown name or a bad value is an error naming it.
Result<store::ResultQuery> query_from_params(const std::vector<std::pair<std::string, std::string>>& params);

// JSON text safe inside an HTML <script> element: '<', '>', '&', U+2028 and U+2029 as \u escapes
// (still the same JSON).
std::string json_for_script(std::string_view json_text);

}  // namespace ix::report
