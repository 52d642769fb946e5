// `ixbench report --db --out` and `ixbench dashboard` as processes, on a SQLite file and on a real
// PostgreSQL server (IXBENCH_TEST_POSTGRES_URL, from scripts/start-postgres.sh; skipped without
// it): the static page holds the store's results, the served API answers filters and refuses bad
// ones, artifacts are served only when a result lists them, and bad flags fail with the reason.
// The page itself is tested in a browser (tests/browser/dashboard.test.mjs).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/json_io.h"
#include "support/server_process.h"
#include "support/store_locations.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace fs = std::filesystem;
const std::string kData = testing::source_path("tests/data/store");

class DashboardCommand : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    location_ = testing::fresh_store_location(GetParam(), std::string("dashboard_") + info->name());
    if (location_.empty()) GTEST_SKIP() << testing::postgres_skip_message();
    ASSERT_FALSE(location_.starts_with("error:")) << location_;
    auto run = testing::run_ixbench({"ingest", kData + "/sweep", kData + "/agentic", "--db", location_}, "", 240.0);
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
  std::string location_;
};

boost::json::value get_json(uint16_t port, const std::string& target, int expected_status) {
  auto client = testing::RawHttpClient::connect(port);
  EXPECT_TRUE(client);
  if (!client) return nullptr;
  client->send(testing::make_get(target));
  auto response = client->read_response();
  EXPECT_TRUE(response) << target;
  if (!response) return nullptr;
  EXPECT_EQ(response->status, expected_status) << target << ": " << response->body;
  auto body = json::parse(response->body, target);
  return body ? *body : boost::json::value(response->body);
}

TEST_P(DashboardCommand, StaticReportHoldsTheStoresResults) {
  const fs::path out = testing::scratch_dir("dashboard_report_" + GetParam()) / "site";
  auto run = testing::run_ixbench(
      {"report", "--db", location_, "--out", out.string(), "--gpu-hour-cost", "h200=2", "--title", "Nightly"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("2 results -> " + (out / "index.html").string()), std::string::npos) << run.out;
  const std::string html = testing::read_whole_file(out / "index.html");
  EXPECT_NE(html.find("<title>Nightly</title>"), std::string::npos);
  EXPECT_NE(html.find(R"("usd_per_gpu_hour": 2.0)"), std::string::npos);
  EXPECT_NE(html.find(R"("scenario": "agentic")"), std::string::npos);

  // Filters narrow what the report holds.
  run = testing::run_ixbench({"report", "--db", location_, "--out", out.string(), "--from", "2099-01-01"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("0 results"), std::string::npos) << run.out;
}

TEST_P(DashboardCommand, ServedApiAnswersFiltersAndRefusesBadOnes) {
  auto server = testing::ServerProcess::start_command({"dashboard", "--db", location_, "--port", "0"});
  ASSERT_TRUE(server) << server.error().message();
  const uint16_t port = (*server)->port();
  EXPECT_EQ(get_json(port, "/health", 200).at("status"), "ok");
  auto facets = get_json(port, "/api/facets", 200);
  EXPECT_EQ(facets.at("results").as_int64(), 2);
  EXPECT_EQ(facets.at("panels").as_array().size(), 2u);
  auto fixed = get_json(port, "/api/view?model=dsr1&scenario=fixed-seq-len&isl=1024&osl=1024", 200);
  ASSERT_EQ(fixed.at("points").as_array().size(), 1u);
  EXPECT_EQ(fixed.at("curves").as_array()[0].at("frontiers").at("intvty").as_array().size(), 1u);
  EXPECT_EQ(get_json(port, "/api/view?scenario=agentic", 200).at("points").as_array().size(), 1u);
  EXPECT_EQ(get_json(port, "/api/view?hw=nope", 200).at("points").as_array().size(), 0u);
  auto bad = get_json(port, "/api/view?isl=many", 400);
  EXPECT_NE(json::to_string(bad).find("isl='many'"), std::string::npos);
  get_json(port, "/nothing-here", 404);

  // The agg file is a listed artifact; a file beside it that no result lists is not served.
  const std::string listed = fs::absolute(kData + "/sweep/agg_dsr1_1k1k_conc64.json").lexically_normal().string();
  auto client = testing::RawHttpClient::connect(port);
  ASSERT_TRUE(client);
  client->send(testing::make_get("/artifact?path=" + listed));
  auto artifact = client->read_response();
  ASSERT_TRUE(artifact);
  EXPECT_EQ(artifact->status, 200) << artifact->body;
  EXPECT_EQ(artifact->body, testing::read_whole_file(listed));
  get_json(port, "/artifact?path=" + (fs::path(listed).parent_path() / "meta_env.json").string(), 404);
  get_json(port, "/artifact?path=/etc/passwd", 404);

  auto post = testing::RawHttpClient::connect(port);
  ASSERT_TRUE(post);
  post->send(testing::make_post("/api/view", "{}"));
  auto refused = post->read_response();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 405);
  EXPECT_EQ((*server)->stop(), 0);  // SIGTERM: a clean stop
}

INSTANTIATE_TEST_SUITE_P(Backends, DashboardCommand, ::testing::ValuesIn(testing::store_backends()),
                         [](const auto& info) { return info.param; });

TEST(DashboardCommandErrors, BadFlagsAndPlacesFailWithTheReason) {
  const fs::path dir = testing::scratch_dir("dashboard_errors");
  const std::string db = (dir / "r.db").string();
  auto no_out = testing::run_ixbench({"report", "--db", db});
  EXPECT_EQ(no_out.exit_code, 1);
  EXPECT_NE(no_out.err.find("--out DIR is required"), std::string::npos) << no_out.err;
  auto bad_cost = testing::run_ixbench({"report", "--db", db, "--out", dir.string(), "--gpu-hour-cost", "h200"});
  EXPECT_EQ(bad_cost.exit_code, 1);
  EXPECT_NE(bad_cost.err.find("expected HW=USD"), std::string::npos) << bad_cost.err;
  std::ofstream(dir / "costs.json") << "{\"usd_per_gpu_hour\": {\"h200\": -3}}";
  auto bad_file = testing::run_ixbench(
      {"report", "--db", db, "--out", dir.string(), "--gpu-hour-cost-file", (dir / "costs.json").string()});
  EXPECT_EQ(bad_file.exit_code, 1);
  EXPECT_NE(bad_file.err.find("usd_per_gpu_hour.h200: expected a number > 0"), std::string::npos) << bad_file.err;
  auto bad_date = testing::run_ixbench({"report", "--db", db, "--out", dir.string(), "--from", "yesterday"});
  EXPECT_EQ(bad_date.exit_code, 2);
  EXPECT_NE(bad_date.err.find("expected a date YYYY-MM-DD"), std::string::npos) << bad_date.err;
  std::ofstream(dir / "blocker") << "a file where the report folder should go";
  auto unwritable = testing::run_ixbench({"report", "--db", db, "--out", (dir / "blocker" / "site").string()});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_NE(unwritable.err.find("cannot create --out"), std::string::npos) << unwritable.err;
  std::ofstream(dir / "not.db") << "not a database";
  auto not_db = testing::run_ixbench({"dashboard", "--db", (dir / "not.db").string(), "--port", "0"});
  EXPECT_EQ(not_db.exit_code, 1);
  EXPECT_NE(not_db.err.find("not.db"), std::string::npos) << not_db.err;

  // An empty store: an empty report, not an error.
  auto empty = testing::run_ixbench({"report", "--db", db, "--out", (dir / "empty").string()});
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_NE(empty.out.find("0 results"), std::string::npos);

  // A port already taken.
  auto first = testing::ServerProcess::start_command({"dashboard", "--db", db, "--port", "0"});
  ASSERT_TRUE(first) << first.error().message();
  auto taken = testing::run_ixbench({"dashboard", "--db", db, "--port", std::to_string((*first)->port())});
  EXPECT_EQ(taken.exit_code, 1);
  EXPECT_NE(taken.err.find("dashboard on 127.0.0.1:"), std::string::npos) << taken.err;
}

}  // namespace
}  // namespace ix
