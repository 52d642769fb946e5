// The results store (src/store/store.h) on both backends: the same suite runs on a real SQLite
// file and on a real PostgreSQL server (IXBENCH_TEST_POSTGRES_URL; skipped without it).
#include "store/store.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "store/backend.h"
#include "store/schema.h"
#include "store/sql_store.h"
#include "support/store_locations.h"

namespace ix::store {
namespace {

RunRecord make_run(const std::string& id, const std::string& created_at) {
  return {.run_id = id,
          .created_at = created_at,
          .source = "test",
          .host = "node-1",
          .ixbench_version = "0.0.1",
          .manifest_json = "{}"};
}

ResultRecord make_result(const std::string& run_id, int64_t conc, double tput, const std::string& hw = "h200") {
  ResultRecord r;
  r.run_id = run_id;
  r.result_stem = fmt::format("dsr1_{}_conc{}", hw, conc);
  r.model = "deepseek-ai/DeepSeek-R1-0528";
  r.model_prefix = "dsr1";
  r.hw = hw;
  r.framework = "sglang";
  r.precision = "fp8";
  r.spec_decoding = "none";
  r.tp = 8, r.ep = 1, r.pp = 1, r.num_gpus = 8;
  r.dp_attention = "false";
  r.conc = conc, r.isl = 1024, r.osl = 1024;
  r.image = "lmsysorg/sglang:v0.5.9";
  r.tput_per_gpu = tput;
  r.median_ttft = 0.25;
  r.median_e2el = 20.5;
  r.median_intvty = 46.7;
  r.agg_json = fmt::format(R"({{"hw":"{}","conc":{},"tput_per_gpu":{}}})", hw, conc, tput);
  return r;
}

// A query with a few fields set (designated initializers would name every field).
ResultQuery query(const std::function<void(ResultQuery&)>& set) {
  ResultQuery q;
  set(q);
  return q;
}

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    location_ = testing::fresh_store_location(GetParam(), info->name());
    if (location_.empty()) GTEST_SKIP() << testing::postgres_skip_message();
    ASSERT_FALSE(location_.starts_with("error:")) << location_;
  }

  std::unique_ptr<Store> open() {
    auto store = open_store(location_);
    EXPECT_TRUE(store) << store.error().message();
    return store ? std::move(*store) : nullptr;
  }

  std::unique_ptr<Backend> backend() {
    auto b = open_backend(location_);
    EXPECT_TRUE(b) << b.error().message();
    return b ? std::move(*b) : nullptr;
  }

  std::string location_;
};

TEST_P(StoreTest, PutThenLatestReturnsEveryField) {
  auto store = open();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), kSchemaVersion);
  ResultRecord r = make_result("run-a", 64, 715.6);
  r.scenario = Scenario::kAgentic;
  r.avg_power_w = 812.25, r.total_gpu_energy_j = 1949400.0, r.power_valid = true;
  r.raw_json = R"({"completed":640})";
  r.evals = {{.task = "gsm8k",
              .filter = "strict-match",
              .metric = "exact_match",
              .value = 0.95,
              .stderr_value = 0.006,
              .n_samples = 1319}};
  r.artifacts = {{"agg", "/results/agg_x.json"}, {"raw", "/results/x.json"}};
  auto stats = store->put_run_results(make_run("run-a", "2026-12-01T10:00:00Z"), {r});
  ASSERT_TRUE(stats) << stats.error().message();
  EXPECT_EQ(stats->inserted, 1);

  auto latest = store->latest({});
  ASSERT_TRUE(latest) << latest.error().message();
  ASSERT_EQ(latest->size(), 1u);
  const ResultRecord& got = latest->front();
  EXPECT_EQ(got.result_stem, r.result_stem);
  EXPECT_EQ(got.scenario, Scenario::kAgentic);
  EXPECT_EQ(got.model, r.model);
  EXPECT_EQ(got.num_gpus, 8);
  EXPECT_EQ(got.conc, 64);
  EXPECT_DOUBLE_EQ(*got.tput_per_gpu, 715.6);
  EXPECT_FALSE(got.p90_ttft.has_value());
  EXPECT_DOUBLE_EQ(*got.avg_power_w, 812.25);
  EXPECT_EQ(got.power_valid, std::optional<bool>(true));
  EXPECT_EQ(got.raw_json, r.raw_json);
  EXPECT_EQ(got.agg_json, r.agg_json);
  ASSERT_EQ(got.evals.size(), 1u);
  EXPECT_DOUBLE_EQ(got.evals[0].value, 0.95);
  EXPECT_EQ(got.evals[0].n_samples, 1319);
  ASSERT_EQ(got.artifacts.size(), 2u);
  EXPECT_EQ(got.artifacts[0].path, "/results/agg_x.json");
  EXPECT_EQ(got.created_at, "2026-12-01T10:00:00Z");
  auto listed = [&](const std::string& path) {
    auto has = store->has_artifact(path);
    return has ? std::string(*has ? "listed" : "not listed") : has.error().message();
  };
  EXPECT_EQ(listed("/results/x.json"), "listed");
  EXPECT_EQ(listed("/results/x.json2"), "not listed");
  EXPECT_EQ(listed("/etc/passwd"), "not listed");

  auto runs = store->runs();
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().host, "node-1");
}

TEST_P(StoreTest, PuttingTheSameRunAgainChangesNoRow) {
  auto store = open();
  ASSERT_TRUE(store);
  const RunRecord run = make_run("run-a", "2026-12-01T10:00:00Z");
  std::vector<ResultRecord> results;
  for (int64_t conc : {1, 4, 16, 64}) results.push_back(make_result("run-a", conc, 100.0 * conc));
  results[0].evals = {{.task = "gsm8k", .filter = "strict-match", .metric = "exact_match", .value = 0.9}};
  ASSERT_TRUE(store->put_run_results(run, results));
  auto before = store->dump();
  ASSERT_TRUE(before);

  auto again = store->put_run_results(run, results);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->inserted, 0);
  EXPECT_EQ(again->updated, 0);
  EXPECT_EQ(again->unchanged, 4);
  auto after = open()->dump();  // a second connection sees the same
  ASSERT_TRUE(after);
  EXPECT_EQ(*before, *after);

  results[2].tput_per_gpu = 1234.5;
  auto changed = store->put_run_results(run, results);
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->updated, 1);
  EXPECT_EQ(changed->unchanged, 3);
  auto latest = store->latest({});
  ASSERT_TRUE(latest);
  ASSERT_EQ(latest->size(), 4u);
  EXPECT_DOUBLE_EQ(*(*latest)[2].tput_per_gpu, 1234.5);  // ordered by conc within one config
}

TEST_P(StoreTest, LatestKeepsTheNewestRunOfEachPoint) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->put_run_results(make_run("old", "2026-11-01T00:00:00Z"),
                                     {make_result("old", 4, 100.0), make_result("old", 16, 200.0)}));
  ASSERT_TRUE(store->put_run_results(make_run("new", "2026-12-01T00:00:00Z"), {make_result("new", 4, 150.0)}));
  ResultRecord predicted = make_result("new", 4, 999.0);
  predicted.kind = ResultKind::kPredicted;
  ASSERT_TRUE(store->put_run_results(std::nullopt, {predicted}));

  auto latest = store->latest({});
  ASSERT_TRUE(latest) << latest.error().message();
  ASSERT_EQ(latest->size(), 3u);
  // conc 4 measured: the new run; conc 4 predicted kept beside it; conc 16 only in the old run.
  EXPECT_EQ((*latest)[0].conc, 4);
  EXPECT_EQ((*latest)[0].kind, ResultKind::kMeasured);
  EXPECT_EQ((*latest)[0].run_id, "new");
  EXPECT_EQ((*latest)[1].kind, ResultKind::kPredicted);
  EXPECT_EQ((*latest)[2].conc, 16);
  EXPECT_EQ((*latest)[2].run_id, "old");

  auto measured = store->latest(query([](ResultQuery& q) { q.kind = ResultKind::kMeasured; }));
  ASSERT_TRUE(measured);
  EXPECT_EQ(measured->size(), 2u);
}

TEST_P(StoreTest, FiltersSelectTheMatchingResults) {
  auto store = open();
  ASSERT_TRUE(store);
  std::vector<ResultRecord> results = {make_result("r1", 4, 1.0, "h200"), make_result("r1", 4, 2.0, "b200"),
                                       make_result("r1", 8, 3.0, "mi355x")};
  results[1].precision = "fp4";
  results[2].isl = 8192;
  results[2].framework = "atom";
  results[2].model_prefix = "gptoss";
  ASSERT_TRUE(store->put_run_results(make_run("r1", "2026-12-01T10:00:00Z"), results));

  auto count = [&](const ResultQuery& query) -> size_t {
    auto found = store->latest(query);
    EXPECT_TRUE(found) << found.error().message();
    return found ? found->size() : 0;
  };
  EXPECT_EQ(count(query([](ResultQuery& q) { q.hardware = {"h200", "b200"}; })), 2u);
  EXPECT_EQ(count(query([](ResultQuery& q) { q.models = {"gptoss"}; })), 1u);
  EXPECT_EQ(count(query([](ResultQuery& q) { q.models = {"deepseek-ai/DeepSeek-R1-0528"}; })),
            3u);  // the served name matches too
  EXPECT_EQ(count(query([](ResultQuery& q) { q.frameworks = {"atom"}; })), 1u);
  EXPECT_EQ(count(query([](ResultQuery& q) { q.precisions = {"fp4"}; })), 1u);
  EXPECT_EQ(count(query([](ResultQuery& q) {
              q.isl = 1024;
              q.osl = 1024;
            })),
            2u);
  EXPECT_EQ(count(query([](ResultQuery& q) { q.scenario = Scenario::kAgentic; })), 0u);
  EXPECT_EQ(count(query([](ResultQuery& q) {
              q.from_date = "2026-12-01";
              q.to_date = "2026-12-01";
            })),
            3u);
  EXPECT_EQ(count(query([](ResultQuery& q) { q.from_date = "2026-12-02"; })), 0u);
  EXPECT_EQ(count(query([](ResultQuery& q) { q.to_date = "2026-11-30"; })), 0u);
  EXPECT_EQ(count(query([](ResultQuery& q) { q.limit = 2; })), 2u);
}

TEST_P(StoreTest, FacetsListWhatTheLatestViewHolds) {
  auto store = open();
  ASSERT_TRUE(store);
  auto empty = store->facets();
  ASSERT_TRUE(empty) << empty.error().message();
  EXPECT_EQ(empty->results, 0);
  std::vector<ResultRecord> results = {make_result("r1", 4, 1.0, "h200"), make_result("r1", 4, 2.0, "b200")};
  results[1].isl = 8192;
  results[1].osl = 1024;
  ResultRecord agentic = make_result("r2", 8, 3.0, "b200");
  agentic.scenario = Scenario::kAgentic;
  agentic.isl = agentic.osl = 0;
  ASSERT_TRUE(store->put_run_results(make_run("r1", "2026-11-02T10:00:00Z"), results));
  ASSERT_TRUE(store->put_run_results(make_run("r2", "2026-12-03T10:00:00Z"), {agentic}));

  auto facets = store->facets();
  ASSERT_TRUE(facets) << facets.error().message();
  EXPECT_EQ(facets->models, std::vector<std::string>{"dsr1"});
  EXPECT_EQ(facets->hardware, (std::vector<std::string>{"b200", "h200"}));
  EXPECT_EQ(facets->scenarios, (std::vector<std::string>{"agentic", "fixed-seq-len"}));
  EXPECT_EQ(facets->isl_osl, (std::vector<std::pair<int64_t, int64_t>>{{1024, 1024}, {8192, 1024}}));
  EXPECT_EQ(facets->first_date, "2026-11-02");
  EXPECT_EQ(facets->last_date, "2026-12-03");
  EXPECT_EQ(facets->results, 3);
  ASSERT_EQ(facets->panels.size(), 3u);
  EXPECT_EQ(facets->panels[0].scenario, "agentic");
  EXPECT_EQ(facets->panels[0].results, 1);
  EXPECT_EQ(facets->panels[1].model, "dsr1");
  EXPECT_EQ(facets->panels[1].isl, 1024);
  EXPECT_EQ(facets->panels[2].isl, 8192);

  // A newer run of the same point replaces it in the latest view: the panel still counts one.
  ASSERT_TRUE(store->put_run_results(make_run("r3", "2026-12-04T10:00:00Z"), {make_result("r3", 4, 9.0, "h200")}));
  facets = store->facets();
  ASSERT_TRUE(facets);
  EXPECT_EQ(facets->panels[1].results, 1);
}

TEST_P(StoreTest, AFailedBatchWritesNothing) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->put_run_results(make_run("r1", "2026-12-01T10:00:00Z"), {make_result("r1", 1, 1.0)}));
  auto before = store->dump();
  ASSERT_TRUE(before);
  // The second result names a run that does not exist: the foreign key fails the transaction.
  auto failed = store->put_run_results(make_run("r2", "2026-12-02T10:00:00Z"),
                                       {make_result("r2", 1, 1.0), make_result("no-such-run", 2, 2.0)});
  ASSERT_FALSE(failed);
  auto after = store->dump();
  ASSERT_TRUE(after) << after.error().message();
  EXPECT_EQ(*before, *after);
}

TEST_P(StoreTest, MigratesADatabaseCreatedByVersion1) {
  {
    auto b = backend();
    ASSERT_TRUE(b);
    auto created = migrate(*b, 1);
    ASSERT_TRUE(created) << created.error().message();
    ASSERT_EQ(*created, 1);
    // A row as version 1 wrote it: no scenario, power or digest columns.
    ASSERT_TRUE(b->exec("INSERT INTO runs VALUES ('v1-run', '2026-10-01T00:00:00Z', 'test', 'h', '0.1', '{}')"));
    ASSERT_TRUE(b->exec(
        "INSERT INTO results (run_id, result_stem, kind, model, model_prefix, hw, framework, precision, spec_decoding, "
        "disagg, is_multinode, tp, ep, pp, dp_attention, num_gpus, conc, isl, osl, image, recipe_fingerprint, "
        "config_key, tput_per_gpu, agg_json, raw_json, row_json) VALUES ('v1-run', 'old_conc4', 'measured', 'm', "
        "'dsr1', 'h100', 'vllm', 'fp8', 'none', 0, 0, 8, 1, 1, 'false', 8, 4, 1024, 1024, '', '', '', 321.0, '{}', "
        "'', '')"));
  }
  auto store = open();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), 2);
  auto latest = store->latest({});
  ASSERT_TRUE(latest) << latest.error().message();
  ASSERT_EQ(latest->size(), 1u);
  EXPECT_EQ(latest->front().scenario, Scenario::kFixedSeqLen);
  EXPECT_DOUBLE_EQ(*latest->front().tput_per_gpu, 321.0);
  EXPECT_FALSE(latest->front().avg_power_w.has_value());
  // A migrated row has no digest yet: putting it again rewrites it once, then it is unchanged.
  ResultRecord again = latest->front();
  auto stats = store->put_results({again});
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->updated, 1);
  stats = store->put_results({again});
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->unchanged, 1);
}

TEST_P(StoreTest, RefusesASchemaNewerThanItKnows) {
  ASSERT_TRUE(open());
  {
    auto b = backend();
    ASSERT_TRUE(b);
    ASSERT_TRUE(b->exec(fmt::format("UPDATE schema_version SET version = {}", kSchemaVersion + 1)));
  }
  auto store = open_store(location_);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code(), ErrorCode::kUnsupported);
  const std::string message = store.error().message();
  EXPECT_NE(message.find(fmt::format("schema version {}", kSchemaVersion + 1)), std::string::npos) << message;
  EXPECT_NE(message.find(fmt::format("the version {} this ixbench knows", kSchemaVersion)), std::string::npos)
      << message;
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::ValuesIn(testing::store_backends()),
                         [](const auto& info) { return info.param; });

TEST(SqliteStore, ACorruptFileIsReportedByName) {
  const auto path = testing::scratch_dir("store_corrupt") / "results.db";
  std::ofstream(path) << "this is not a database, just forty-odd bytes of text\n" << std::string(4096, 'x');
  auto store = open_store("sqlite:" + path.string());
  ASSERT_FALSE(store);
  const std::string message = store.error().message();
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("not a usable SQLite database"), std::string::npos) << message;
}

TEST(StoreLocation, AnEmptySqlitePathIsAnError) {
  auto store = open_store("sqlite:");
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message().find("names no file"), std::string::npos) << store.error().message();
}

TEST(PostgresStore, AnUnreachableServerIsReportedWithTheUrl) {
  auto store = open_store("postgresql://nobody@/none?host=/nonexistent-socket-dir&port=1&connect_timeout=2");
  ASSERT_FALSE(store);
  const std::string message = store.error().message();
  EXPECT_NE(message.find("/nonexistent-socket-dir"), std::string::npos) << message;
}

}  // namespace
}  // namespace ix::store
