// `ixbench ingest` as the real binary, into a real SQLite file and a real PostgreSQL server
// (IXBENCH_TEST_POSTGRES_URL, from scripts/start-postgres.sh; skipped without it). The results
// are read back through the store library.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/json_io.h"
#include "store/store.h"
#include "support/store_locations.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;

const std::string kData = testing::source_path("tests/data/store");

size_t count_lines(const std::string& text, std::string_view prefix) {
  size_t n = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    if (std::string_view(text).substr(at).starts_with(prefix)) ++n;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return n;
}

// `folders` folders under `root`, each holding one `ixbench collect` list of `per_folder` agg
// records of hardware `hw` (the example record with its concurrency varied).
std::vector<std::string> write_sweeps(const fs::path& root, const std::string& hw, int folders, int per_folder) {
  auto example = json::parse(testing::read_whole_file(kData + "/sweep/agg_dsr1_1k1k_conc64.json"), "example");
  EXPECT_TRUE(example);
  std::vector<std::string> dirs;
  for (int f = 0; f < folders; ++f) {
    const fs::path dir = root / fmt::format("{}_sweep{}", hw, f);
    fs::create_directories(dir);
    bj::array list;
    for (int i = 0; i < per_folder; ++i) {
      bj::object record = example->as_object();
      record["hw"] = hw;
      record["conc"] = f * per_folder + i + 1;
      record["tput_per_gpu"] = 100.0 + i;
      list.push_back(record);
    }
    std::ofstream(dir / fmt::format("agg_{}_{}.json", hw, f)) << bj::serialize(list);
    dirs.push_back(dir.string());
  }
  return dirs;
}

class IngestCommand : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    location_ = testing::fresh_store_location(GetParam(), std::string("ingest_") + info->name());
    if (location_.empty()) GTEST_SKIP() << testing::postgres_skip_message();
    ASSERT_FALSE(location_.starts_with("error:")) << location_;
  }

  testing::ProcessResult ingest(std::vector<std::string> args) {
    args.insert(args.begin(), "ingest");
    args.insert(args.end(), {"--db", location_});
    return testing::run_ixbench(args, "", 240.0);
  }

  std::unique_ptr<store::Store> open() {
    auto opened = store::open_store(location_);
    EXPECT_TRUE(opened) << opened.error().message();
    return opened ? std::move(*opened) : nullptr;
  }

  std::string location_;
};

TEST_P(IngestCommand, LoadsAggRawEvalAgenticAndManifestFolders) {
  auto run = ingest({kData + "/sweep", kData + "/agentic", kData + "/manifest"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(count_lines(run.out, ""), 3u) << run.out;
  EXPECT_NE(run.out.find("run nightly-h200-2026-11-30: 1 inserted, 0 updated, 0 unchanged"), std::string::npos)
      << run.out;

  auto store = open();
  ASSERT_TRUE(store);
  auto latest = store->latest({});
  ASSERT_TRUE(latest) << latest.error().message();
  ASSERT_EQ(latest->size(), 3u);
  // Ordered by config, then conc: the agentic b200 point, then h200 conc 4 and conc 64.
  const store::ResultRecord& agentic = (*latest)[0];
  EXPECT_EQ(agentic.scenario, store::Scenario::kAgentic);
  EXPECT_EQ(agentic.num_gpus, 4);
  EXPECT_DOUBLE_EQ(*agentic.tput_per_gpu, 2280.0);
  EXPECT_DOUBLE_EQ(*agentic.median_ttft, 0.82);
  EXPECT_DOUBLE_EQ(*agentic.avg_power_w, 812.25);
  EXPECT_EQ(agentic.power_valid, std::optional<bool>(true));

  const store::ResultRecord& manifest = (*latest)[1];
  EXPECT_EQ(manifest.run_id, "nightly-h200-2026-11-30");
  EXPECT_EQ(manifest.conc, 4);

  const store::ResultRecord& sweep = (*latest)[2];
  EXPECT_EQ(sweep.result_stem, "dsr1_1k1k_conc64");
  EXPECT_EQ(sweep.num_gpus, 8);
  EXPECT_FALSE(sweep.raw_json.empty());
  EXPECT_EQ(sweep.power_valid, std::optional<bool>(false));
  ASSERT_EQ(sweep.evals.size(), 2u);  // strict-match and flexible-extract of results_conc64.json
  EXPECT_EQ(sweep.artifacts.size(), 3u);

  auto runs = store->runs();
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ(runs->front().created_at, "2026-11-30T02:00:00Z");
  EXPECT_EQ(runs->front().host, "h200-node-03");
}

TEST_P(IngestCommand, ReingestingTheSameFoldersChangesNothing) {
  const fs::path root = testing::scratch_dir("ingest_again_" + GetParam());
  std::vector<std::string> dirs = write_sweeps(root, "h100", 2, 50);
  dirs.insert(dirs.end(), {kData + "/sweep", kData + "/agentic"});
  auto first = ingest(dirs);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("50 inserted, 0 updated, 0 unchanged"), std::string::npos) << first.out;
  auto before = open()->dump();
  ASSERT_TRUE(before);

  auto second = ingest(dirs);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(count_lines(second.out, ""), 4u);
  EXPECT_EQ(second.out.find("inserted, 1 updated"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("0 inserted, 0 updated, 50 unchanged"), std::string::npos) << second.out;
  auto after = open()->dump();
  ASSERT_TRUE(after);
  EXPECT_EQ(*before, *after);
  EXPECT_EQ(count_lines(*after, "results|"), 102u);
}

TEST_P(IngestCommand, ABadFileFailsNamingItAndNothingIsWritten) {
  auto bad = ingest({kData + "/sweep", kData + "/bad"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bad/agg_broken.json:5:3: invalid JSON"), std::string::npos) << bad.err;

  const fs::path dir = testing::scratch_dir("ingest_wrong_type_" + GetParam());
  std::ofstream(dir / "agg_x.json") << R"({"hw": "h200", "conc": "many", "framework": "vllm", "precision": "fp8",
  "isl": 1024, "osl": 1024})";
  auto wrong = ingest({dir.string()});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("agg_x.json: field 'conc' must be a whole number"), std::string::npos) << wrong.err;

  auto store = open();
  ASSERT_TRUE(store);
  auto runs = store->runs();
  ASSERT_TRUE(runs);
  EXPECT_TRUE(runs->empty());
  auto dump = store->dump();
  ASSERT_TRUE(dump);
  EXPECT_EQ(count_lines(*dump, "results|"), 0u);
}

TEST_P(IngestCommand, RunIdComesFromTheFlag) {
  auto two = ingest({kData + "/sweep", kData + "/agentic", "--run-id", "mine"});
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_NE(two.err.find("--run-id names one run, but 2 folders were given"), std::string::npos) << two.err;
  auto one = ingest({kData + "/manifest", "--run-id", "mine", "--kind", "predicted"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto latest = open()->latest({});
  ASSERT_TRUE(latest);
  ASSERT_EQ(latest->size(), 1u);
  EXPECT_EQ(latest->front().run_id, "mine");
  EXPECT_EQ(latest->front().kind, store::ResultKind::kPredicted);
}

TEST_P(IngestCommand, TwoSweepsIngestingAtOnceLoseNothing) {
  constexpr int kFolders = 8, kPerFolder = 250;
  const fs::path root = testing::scratch_dir("ingest_concurrent_" + GetParam());
  const auto a = write_sweeps(root, "h200", kFolders, kPerFolder);
  const auto b = write_sweeps(root, "b200", kFolders, kPerFolder);
  testing::ProcessResult run_a, run_b;
  std::thread first([&] { run_a = ingest(a); });
  std::thread second([&] { run_b = ingest(b); });
  first.join();
  second.join();
  ASSERT_EQ(run_a.exit_code, 0) << run_a.err;
  ASSERT_EQ(run_b.exit_code, 0) << run_b.err;
  EXPECT_EQ(count_lines(run_a.out, "") + count_lines(run_b.out, ""), 2u * kFolders);

  auto store = open();
  ASSERT_TRUE(store);
  auto dump = store->dump();
  ASSERT_TRUE(dump);
  EXPECT_EQ(count_lines(*dump, "results|"), 2u * kFolders * kPerFolder);
  EXPECT_EQ(count_lines(*dump, "runs|"), 2u * kFolders);
  auto latest = store->latest({});
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->size(), 2u * kFolders * kPerFolder);
}

INSTANTIATE_TEST_SUITE_P(Backends, IngestCommand, ::testing::ValuesIn(testing::store_backends()),
                         [](const auto& info) { return info.param; });

TEST(IngestCommandSqlite, ANewerDatabaseIsRefusedWithBothVersions) {
  const std::string db = (testing::scratch_dir("ingest_newer") / "results.db").string();
  ASSERT_EQ(testing::run_ixbench({"ingest", kData + "/sweep", "--db", db}).exit_code, 0);
  {
    auto backend = store::open_sqlite(db);
    ASSERT_TRUE(backend);
    ASSERT_TRUE((*backend)->exec("UPDATE schema_version SET version = 99"));
  }
  auto run = testing::run_ixbench({"ingest", kData + "/sweep", "--db", db});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("results schema version 99, newer than the version 2"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace ix
