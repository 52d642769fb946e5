// `ixbench sim predict --jobs-from`: the demo's whole matrix (fixed, MTP and agentic rows, as
// `ixbench sweep full-sweep` prints it) predicted point by point into the layout `ixbench run
// --predict` writes, stored as predicted, with a table; a failing point fails alone; refused inputs.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/json_io.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using ix::testing::run_ixbench;
using ix::testing::scratch_dir;
using ix::testing::source_path;

const std::string kDemo = source_path("examples/demo");

// The demo's matrix, as `ixbench sweep full-sweep` prints it.
json::array demo_matrix() {
  const auto p = run_ixbench({"sweep", "full-sweep", "--config-files", kDemo + "/configs/sim-master.yaml",
                              "--runner-config", kDemo + "/configs/runners.yaml"});
  EXPECT_EQ(p.exit_code, 0) << p.err;
  auto parsed = ix::json::parse(p.out);
  EXPECT_TRUE(parsed && parsed->is_array()) << p.out;
  return parsed && parsed->is_array() ? parsed->as_array() : json::array{};
}

std::string write_matrix(const fs::path& dir, const json::array& rows, const std::string& name = "matrix.json") {
  const auto path = dir / name;
  std::ofstream(path) << json::serialize(rows);
  return path.string();
}

std::vector<fs::path> agg_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().starts_with("agg_")) out.push_back(entry.path());
  return out;
}

TEST(SimPredictJobs, PredictsEveryPointOfTheDemoMatrixIntoTheRunLayoutAndTheStore) {
  const auto dir = scratch_dir("sim_predict_jobs_demo");
  const json::array rows = demo_matrix();
  ASSERT_EQ(rows.size(), 4u);
  const auto p = run_ixbench({"sim", "predict", "--jobs-from", write_matrix(dir, rows), "--trace",
                              kDemo + "/traces/demo_sessions.jsonl", "--benchmark-duration", "300", "--out",
                              (dir / "out").string(), "--db", (dir / "results.db").string(), "--jobs", "2"},
                             "", 300.0);
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  // Every point: gptoss 1024/128 at conc 4 and 16, qwen3.5 MTP 8k1k at 16, the agentic row at 4.
  const auto aggs = agg_files(dir / "out");
  EXPECT_EQ(aggs.size(), 4u);
  int agentic = 0;
  for (const auto& path : aggs) {
    auto record = ix::json::read_file(path);
    ASSERT_TRUE(record && record->is_object()) << path;
    const auto& r = record->as_object();
    const bool is_agentic =
        r.contains("scenario_type") && json::serialize(r.at("scenario_type")).find("agentic") != std::string::npos;
    agentic += is_agentic;
    if (!is_agentic) {
      EXPECT_GT(r.at("tput_per_gpu").to_number<double>(), 0) << path;
      // The raw result beside it, as the aggregation read it.
      EXPECT_TRUE(fs::exists(dir / "out" / (path.filename().string().substr(4)))) << path;
    }
  }
  EXPECT_EQ(agentic, 1);
  EXPECT_TRUE(fs::exists(dir / "out" / "agentic")) << "the replay's artifacts";
  for (const char* name : {"gptoss_1024_128", "qwen3.5_8k1k", "gptoss_tp1_conc4_kvdram-native"})
    EXPECT_NE(p.out.find(name), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("4 points of 4 rows predicted"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("4 inserted"), std::string::npos) << p.out;
  // The store holds them: loading the folder again changes nothing.
  const auto again =
      run_ixbench({"ingest", (dir / "out").string(), "--db", (dir / "results.db").string(), "--kind", "predicted"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("0 inserted, 0 updated, 4 unchanged"), std::string::npos) << again.out;
}

// A point the simulator refuses (a concurrency beyond what it simulates) fails alone: the other
// points are written, the table names the failure, the exit status is 1.
TEST(SimPredictJobs, AFailingPointFailsAloneAndIsNamed) {
  const auto dir = scratch_dir("sim_predict_jobs_fail");
  json::array rows;
  for (const auto& row : demo_matrix())
    if (!row.as_object().contains("scenario-type") ||
        row.as_object().at("scenario-type").as_string() != "agentic-coding")
      rows.push_back(row);
  ASSERT_EQ(rows.size(), 3u);
  rows[0].as_object()["conc"] = 2'000'000;  // gptoss 1024/128
  const auto p = run_ixbench(
      {"sim", "predict", "--jobs-from", write_matrix(dir, rows), "--out", (dir / "out").string(), "--jobs", "1"}, "",
      300.0);
  EXPECT_EQ(p.exit_code, 1) << p.err;
  EXPECT_NE(p.out.find("failed: "), std::string::npos) << p.out;
  EXPECT_NE(p.out.find(", 1 failed"), std::string::npos) << p.out;
  EXPECT_NE(p.err.find("must be <= 1000000"), std::string::npos) << p.err;
  EXPECT_EQ(agg_files(dir / "out").size(), 2u);
}

TEST(SimPredictJobs, RefusesWhatItCannotPredictWithAClearError) {
  const auto dir = scratch_dir("sim_predict_jobs_bad");
  const json::array rows = demo_matrix();
  const std::string matrix = write_matrix(dir, rows);
  json::array pp2 = rows;
  pp2[0].as_object()["pp"] = 2;
  std::ofstream(dir / "broken.json") << "[{\"model\": \"x\",\n  oops]";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--jobs-from", matrix}, "is agentic-coding: give --trace"},
      {{"--jobs-from", matrix, "--isl", "100"}, "--isl and --jobs-from exclude each other"},
      {{"--jobs-from", matrix, "--conc", "4"}, "--conc and --jobs-from exclude each other"},
      {{"--jobs-from", (dir / "broken.json").string()}, "broken.json:2"},
      {{"--jobs-from", (dir / "missing.json").string()}, "missing.json"},
      {{"--jobs-from", write_matrix(dir, pp2, "pp2.json"), "--trace", kDemo + "/traces/demo_sessions.jsonl",
        "--benchmark-duration", "60", "--out", (dir / "pp2").string()},
       "row 0: row: 'pp' = 2: pipeline and context parallelism are not modelled"},
      {{"--jobs-from", matrix, "--jobs", "-1"}, "--jobs must be >= 0"},
      {{"--tp", "8", "--isl", "16", "--osl", "4", "--conc", "1", "--out", (dir / "o").string()},
       "--out applies to --jobs-from"},
      {{"--tp", "8", "--isl", "16", "--osl", "4", "--conc", "1", "--db", (dir / "x.db").string()},
       "--db applies to --jobs-from"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"sim", "predict"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto p = run_ixbench(args, "", 60.0);
    EXPECT_EQ(p.exit_code, 1) << c.says;
    EXPECT_NE(p.err.find(c.says), std::string::npos) << "wanted '" << c.says << "' in: " << p.err;
  }
}

}  // namespace
}  // namespace ix
