// The dashboard's data (src/report/dashboard_data.h, gpu_cost.h, dashboard_page.h): points with
// cost and energy, curves and their frontiers, measured/predicted pairs, filters from a query
// string, the escaping of inlined JSON and of the page title.
#include "report/dashboard_data.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "common/json_io.h"
#include "http/server_request.h"
#include "report/dashboard_page.h"
#include "report/gpu_cost.h"

namespace ix::report {
namespace {

namespace bj = boost::json;

store::ResultRecord result(const std::string& hw, int64_t conc, double tput, double intvty,
                           store::ResultKind kind = store::ResultKind::kMeasured) {
  store::ResultRecord r;
  r.run_id = kind == store::ResultKind::kPredicted ? "predicted" : "run-1";
  r.result_stem = fmt::format("{}_conc{}", hw, conc);
  r.kind = kind;
  r.model = "deepseek-ai/DeepSeek-R1-0528", r.model_prefix = "dsr1";
  r.hw = hw, r.framework = "sglang", r.precision = "fp8", r.spec_decoding = "none";
  r.tp = 8, r.ep = 1, r.num_gpus = 8, r.conc = conc, r.isl = 1024, r.osl = 1024;
  r.tput_per_gpu = tput, r.output_tput_per_gpu = tput / 2;
  r.median_intvty = intvty, r.median_e2el = 1000.0 / intvty, r.p90_e2el = 2000.0 / intvty;
  r.created_at = "2026-11-01T10:00:00Z";
  return r;
}

std::vector<int64_t> indices(const bj::value& array) {
  std::vector<int64_t> out;
  for (const auto& v : array.as_array()) out.push_back(v.to_number<int64_t>());
  return out;
}

TEST(DashboardView, CurvesPerHardwareAndKindWithTheirFrontiers) {
  // h200: conc 16 is dominated (less throughput at less interactivity than conc 32).
  std::vector<store::ResultRecord> results = {result("h200", 4, 100, 80), result("h200", 16, 150, 40),
                                              result("h200", 32, 300, 45), result("b200", 4, 200, 90),
                                              result("h200", 4, 110, 85, store::ResultKind::kPredicted)};
  const bj::object view = view_json(results, default_gpu_hour_costs());
  ASSERT_EQ(view.at("points").as_array().size(), 5u);
  const auto& curves = view.at("curves").as_array();
  ASSERT_EQ(curves.size(), 3u);
  EXPECT_EQ(curves[0].at("label").as_string(), "h200 sglang fp8");
  EXPECT_EQ(indices(curves[0].at("points")), (std::vector<int64_t>{0, 1, 2}));
  // Interactivity: best x first (85 > 80 > 45 > 40); 16 is below 32's throughput, so it is dropped.
  EXPECT_EQ(indices(curves[0].at("frontiers").at("intvty")), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(indices(curves[0].at("frontiers").at("e2el")), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(curves[2].at("label").as_string(), "h200 sglang fp8 (predicted)");
  EXPECT_EQ(curves[2].at("kind").as_string(), "predicted");
  EXPECT_EQ(curves[0].at("line"), curves[2].at("line"));  // same line: drawn in the same colour
  EXPECT_FALSE(view.at("charts").as_array().empty());
}

TEST(DashboardView, PairsMeasuredAndPredictedAtTheSameConcurrency) {
  std::vector<store::ResultRecord> results = {result("h200", 4, 100, 80), result("h200", 8, 150, 60),
                                              result("h200", 4, 110, 85, store::ResultKind::kPredicted)};
  const bj::object view = view_json(results, default_gpu_hour_costs());
  const auto& points = view.at("points").as_array();
  EXPECT_EQ(points[0].at("pair").to_number<int64_t>(), 2);
  EXPECT_EQ(points[2].at("pair").to_number<int64_t>(), 0);
  EXPECT_EQ(points[1].as_object().if_contains("pair"), nullptr);
}

TEST(DashboardView, CostFromDollarsPerGpuHourAndEnergyOnlyWhenValid) {
  GpuHourCosts costs;
  ASSERT_TRUE(apply_gpu_hour_cost(costs, "h200=3.6"));
  auto priced = result("h200-cw", 4, 1000, 80);  // a runner name: priced as h200
  priced.joules_per_total_token = 0.8, priced.power_valid = true;
  auto invalid_power = result("h200", 8, 500, 60);
  invalid_power.joules_per_total_token = 0.5, invalid_power.power_valid = false;
  const bj::object view = view_json({priced, invalid_power, result("mi355x", 4, 100, 50)}, costs);
  const auto& points = view.at("points").as_array();
  // 3.6 $/h / (1000 tok/s * 3600 s/h) * 1e6 = 1 $ per million tokens.
  EXPECT_DOUBLE_EQ(points[0].at("cost_per_mtok").as_double(), 1.0);
  EXPECT_DOUBLE_EQ(points[0].at("cost_per_mtok_output").as_double(), 2.0);
  EXPECT_DOUBLE_EQ(points[0].at("joules_per_total_token").as_double(), 0.8);
  EXPECT_TRUE(points[1].at("joules_per_total_token").is_null());
  EXPECT_TRUE(points[2].at("cost_per_mtok").is_null());
  EXPECT_EQ(view.at("missing_costs").as_array(), (bj::array{"mi355x"}));
}

TEST(DashboardView, AgenticE2elIsTheP90) {
  auto agentic = result("h200", 4, 100, 50);
  agentic.scenario = store::Scenario::kAgentic;
  const bj::object view = view_json({agentic, result("h200", 4, 100, 50)}, default_gpu_hour_costs());
  EXPECT_DOUBLE_EQ(view.at("points").as_array()[0].at("e2el").as_double(), 40.0);
  EXPECT_DOUBLE_EQ(view.at("points").as_array()[1].at("e2el").as_double(), 20.0);
}

TEST(DashboardFacets, FromResultsListPanelsWithCounts) {
  auto long_seq = result("b200", 4, 100, 50);
  long_seq.isl = 8192;
  long_seq.created_at = "2026-11-20T00:00:00Z";
  const store::Facets facets = facets_of({result("h200", 4, 1, 1), result("h200", 8, 1, 1), long_seq});
  EXPECT_EQ(facets.hardware, (std::vector<std::string>{"b200", "h200"}));
  ASSERT_EQ(facets.panels.size(), 2u);
  EXPECT_EQ(facets.panels[0].results, 2);
  EXPECT_EQ(facets.panels[1].isl, 8192);
  EXPECT_EQ(facets.first_date, "2026-11-01");
  EXPECT_EQ(facets.last_date, "2026-11-20");
  const bj::object json = facets_json(facets);
  EXPECT_EQ(json.at("panels").as_array().size(), 2u);
  EXPECT_EQ(json.at("results").as_int64(), 3);
}

Result<store::ResultQuery> parse(std::string_view query_string) {
  auto pairs = http::parse_query_string(query_string);
  if (!pairs) return fail(pairs.error());
  return query_from_params(*pairs);
}

TEST(DashboardQuery, ReadsEveryFilter) {
  auto query = parse(
      "model=dsr1&scenario=agentic&isl=1024&osl=8192&hw=h200&hw=b200&framework=sglang&precision=fp4"
      "&kind=predicted&from=2026-11-01&to=2026-11-30");
  ASSERT_TRUE(query) << query.error().message();
  EXPECT_EQ(query->models, std::vector<std::string>{"dsr1"});
  EXPECT_EQ(query->scenario, store::Scenario::kAgentic);
  EXPECT_EQ(query->isl, 1024);
  EXPECT_EQ(query->osl, 8192);
  EXPECT_EQ(query->hardware, (std::vector<std::string>{"h200", "b200"}));
  EXPECT_EQ(query->frameworks, std::vector<std::string>{"sglang"});
  EXPECT_EQ(query->precisions, std::vector<std::string>{"fp4"});
  EXPECT_EQ(query->kind, store::ResultKind::kPredicted);
  EXPECT_EQ(query->from_date, "2026-11-01");
  EXPECT_EQ(query->to_date, "2026-11-30");
  auto decoded = parse("model=%3Cscript%3E+x");
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->models, std::vector<std::string>{"<script> x"});
}

TEST(DashboardQuery, BadFiltersAreNamed) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"isl=abc", "isl='abc': expected an integer > 0"},
      {"osl=-5", "osl='-5': expected an integer > 0"},
      {"scenario=chat", "scenario='chat': expected fixed-seq-len or agentic"},
      {"kind=guessed", "kind='guessed': expected measured or predicted"},
      {"from=2026-1-1", "from='2026-1-1': expected a date YYYY-MM-DD"},
      {"model=a&model=b", "'model' given twice"},
      {"colour=red", "unknown filter 'colour'"},
      {"model=%zz", "'%zz' is not a %XX escape"},
      {"model=%4", "'%4' is not a %XX escape"},
  };
  for (const auto& [text, expected] : cases) {
    auto query = parse(text);
    ASSERT_FALSE(query) << text;
    EXPECT_NE(query.error().message().find(expected), std::string::npos) << text << ": " << query.error().message();
  }
}

TEST(DashboardEscaping, InlinedJsonCannotCloseItsScriptElement) {
  const std::string json = json::to_string(bj::object{{"model", "</script><script>alert(1)</script>&\xE2\x80\xA8"}});
  const std::string safe = json_for_script(json);
  EXPECT_EQ(safe.find('<'), std::string::npos);
  EXPECT_EQ(safe.find('>'), std::string::npos);
  EXPECT_EQ(safe.find('&'), std::string::npos);
  EXPECT_EQ(safe.find("\xE2\x80\xA8"), std::string::npos);
  auto back = json::parse(safe, "safe");  // still the same JSON
  ASSERT_TRUE(back);
  EXPECT_EQ(back->at("model").as_string(), "</script><script>alert(1)</script>&\xE2\x80\xA8");
}

TEST(DashboardPage, InlinesEverythingAndEscapesTheTitle) {
  const std::string page = render_dashboard_page({.title = "<b>mine</b>", .data_json = R"({"x":"</script>"})"});
  EXPECT_NE(page.find("<title>&lt;b&gt;mine&lt;/b&gt;</title>"), std::string::npos);
  EXPECT_EQ(page.find("<b>mine"), std::string::npos);
  EXPECT_NE(page.find(R"({"x":"\u003c/script\u003e"})"), std::string::npos);
  EXPECT_NE(page.find("Chart.js"), std::string::npos);  // the library is inlined, not linked
  for (std::string_view slot : {"{{TITLE}}", "{{STYLE}}", "{{CHART_JS}}", "{{APP_JS}}", "{{DATA}}"}) {
    EXPECT_EQ(page.find(slot), std::string::npos) << slot;
  }
  const std::string served = render_dashboard_page({.title = "t", .data_json = {}});
  EXPECT_NE(served.find(R"(<script id="ix-data" type="application/json">null)"), std::string::npos);
}

TEST(GpuHourCosts, ShippedTableParsesAndOverridesReplaceEntries) {
  const GpuHourCosts& shipped = default_gpu_hour_costs();
  EXPECT_TRUE(shipped.lookup("h200").has_value());
  EXPECT_EQ(shipped.lookup("gb200-nvl72"), shipped.lookup("gb200"));
  EXPECT_FALSE(shipped.lookup("tpu-v5").has_value());
  GpuHourCosts costs = shipped;
  ASSERT_TRUE(apply_gpu_hour_cost(costs, "h200=9.5"));
  EXPECT_EQ(costs.lookup("h200"), 9.5);
  for (std::string_view bad : {"h200", "=3", "h200=", "h200=abc", "h200=-1", "h200=0", "h200=inf", "h200=3x"}) {
    auto ok = apply_gpu_hour_cost(costs, bad);
    ASSERT_FALSE(ok) << bad;
    EXPECT_NE(ok.error().message().find("expected HW=USD"), std::string::npos) << bad;
  }
  EXPECT_FALSE(parse_gpu_hour_costs(R"({"usd_per_gpu_hour": {"h200": "cheap"}})", "f.json"));
  EXPECT_FALSE(parse_gpu_hour_costs(R"({"h200": 3})", "f.json"));
  auto broken = parse_gpu_hour_costs("{\n  \"usd_per_gpu_hour\": {\n", "f.json");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message().find("f.json:"), std::string::npos) << broken.error().message();
  EXPECT_FALSE(cost_per_million_tokens(3.0, 0.0).has_value());
  EXPECT_FALSE(cost_per_million_tokens(std::nullopt, 10.0).has_value());
}

}  // namespace
}  // namespace ix::report
