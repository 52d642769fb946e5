// `ixbench power` and the power step of `ixbench aggregate`, run as the real binary on the
// fixtures of tests/data/power/. The goldens under tests/data/power/golden/ were written by
// InferenceX's utils/aggregate_power.py on the same files (TZ=UTC); with IXBENCH_INFERENCEX_DIR set
// to an InferenceX checkout, the script runs again beside ixbench and every file is compared.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/json_io.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;
using Env = std::map<std::string, std::string>;

testing::ProcessResult run_in(const fs::path& dir, Env env, const std::vector<std::string>& command) {
  std::vector<std::string> argv{"/usr/bin/env", "-i", "-C", dir.string(), "TZ=UTC"};
  for (const auto& [k, v] : env) argv.push_back(k + "=" + v);
  argv.insert(argv.end(), command.begin(), command.end());
  return testing::run_process(argv);
}

const fs::path kFixtures = testing::source_path("tests/data/power");

struct Case {
  std::string name;  // golden/<name>
  std::string csv;   // under tests/data/power
  std::string raw;
  int gpus;
};
const std::vector<Case> kCases = {
    {"one", "nvidia_1gpu.csv", "raw_nvidia_1gpu.json", 1},
    {"eight", "nvidia_8gpu.csv", "raw_nvidia_8gpu.json", 8},
    {"gap", "gap.csv", "raw_gap.json", 2},
    {"trunc", "truncated.csv", "raw_truncated.json", 2},
    {"garbage", "garbage.csv", "raw_garbage.json", 1},
    {"empty", "empty.csv", "raw_garbage.json", 1},
    {"headerless", "headerless.csv", "raw_garbage.json", 1},
    {"amd", "amd/gpu_metrics.csv", "amd/raw.json", 2},
};

// A folder as the recipes leave it: gpu_metrics.csv (and its energy snapshots), raw.json, agg.json.
fs::path stage(const std::string& name, const Case& c) {
  const fs::path dir = testing::scratch_dir(name);
  fs::copy_file(kFixtures / c.csv, dir / "gpu_metrics.csv");
  fs::copy_file(kFixtures / c.raw, dir / "raw.json");
  fs::copy_file(kFixtures / "agg.json", dir / "agg.json");
  const fs::path snapshots = (kFixtures / c.csv).parent_path();
  const std::string stem = fs::path(c.csv).stem().string();
  for (const char* which : {"_energy_start.csv", "_energy_end.csv"})
    if (fs::exists(snapshots / (stem + which)))
      fs::copy_file(snapshots / (stem + which), dir / (std::string("gpu_metrics") + which));
  return dir;
}

std::vector<std::string> script_flags(const Case& c) {
  return {"--csv",        "gpu_metrics.csv", "--bench-result",      "raw.json",
          "--agg-result", "agg.json",        "--expected-num-gpus", std::to_string(c.gpus)};
}

TEST(PowerCommand, EveryFixtureMatchesTheScriptsGoldenFiles) {
  for (const Case& c : kCases) {
    const fs::path dir = stage("power_" + c.name, c);
    std::vector<std::string> command{testing::ixbench_binary(), "power"};
    for (const std::string& flag : script_flags(c)) command.push_back(flag);
    auto run = run_in(dir, {}, command);
    EXPECT_EQ(run.exit_code, 0) << c.name << ": " << run.err;  // best effort: invalid power is no failure
    const fs::path golden = kFixtures / "golden" / c.name;
    EXPECT_EQ(testing::read_whole_file(dir / "agg.json"), testing::read_whole_file(golden / "agg.json")) << c.name;
    EXPECT_EQ(testing::read_whole_file(dir / "power_validation_raw.json"),
              testing::read_whole_file(golden / "power_validation.json"))
        << c.name;
    EXPECT_FALSE(fs::exists(dir / "agg.json.tmp"));
  }
}

TEST(PowerCommand, ProblemsAreNamedWithFileAndLine) {
  const fs::path garbage = stage("power_garbage_lines", kCases[4]);
  auto run = run_in(garbage, {}, {testing::ixbench_binary(), "power", "--csv", "gpu_metrics.csv", "--raw", "raw.json"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.err.find("gpu_metrics.csv:11: timestamp '#### monitor restarted ####' is not a time"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("power validation failed: invalid_timestamp_sample"), std::string::npos) << run.err;
  const fs::path empty = stage("power_empty_file", kCases[5]);
  auto none = run_in(empty, {}, {testing::ixbench_binary(), "power", "--csv", "gpu_metrics.csv", "--raw", "raw.json"});
  EXPECT_NE(none.err.find("gpu_metrics.csv: the file is empty"), std::string::npos) << none.err;
  const fs::path headerless = stage("power_headerless", kCases[6]);
  auto bare =
      run_in(headerless, {}, {testing::ixbench_binary(), "power", "--csv", "gpu_metrics.csv", "--raw", "raw.json"});
  EXPECT_NE(bare.err.find("gpu_metrics.csv:1: no timestamp"), std::string::npos) << bare.err;
  EXPECT_NE(bare.err.find("is the header line missing?"), std::string::npos) << bare.err;
}

TEST(PowerCommand, RequirePowerFailsAfterWritingTheArtifacts) {
  for (const Env& env : {Env{}, Env{{"REQUIRE_POWER", "1"}}}) {
    const fs::path dir = stage("power_require", kCases[2]);
    std::vector<std::string> command{testing::ixbench_binary(), "power"};
    for (const std::string& flag : script_flags(kCases[2])) command.push_back(flag);
    if (env.empty()) command.push_back("--require-power");
    auto run = run_in(dir, env, command);
    EXPECT_EQ(run.exit_code, 1) << run.err;
    EXPECT_EQ(testing::read_whole_file(dir / "agg.json"),
              testing::read_whole_file(kFixtures / "golden" / "gap" / "agg.json"));
    EXPECT_TRUE(fs::exists(dir / "power_validation_raw.json"));
  }
}

TEST(PowerCommand, HandGivenWindowInAnyTimeFormat) {
  const fs::path dir = stage("power_window", kCases[1]);
  // The same window as epoch seconds, ISO 8601 with an offset, and nvidia-smi's local time.
  std::vector<std::string> outputs;
  for (const auto& [start, end] :
       std::vector<std::pair<std::string, std::string>>{{"1796119203", "1796119219.5"},
                                                        {"2026-12-01T11:00:03+01:00", "2026-12-01T10:00:19.500Z"},
                                                        {"2026/12/01 10:00:03", "2026/12/01 10:00:19.5"}}) {
    auto run = run_in(dir, {},
                      {testing::ixbench_binary(), "power", "--csv", "gpu_metrics.csv", "--start", start, "--end", end,
                       "--expected-num-gpus", "8"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    outputs.push_back(run.out);
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(outputs[0], outputs[2]);
  auto fields = json::parse(outputs[0]);
  ASSERT_TRUE(fields) << outputs[0];
  const bj::object& f = fields->as_object();
  EXPECT_EQ(f.at("power_valid"), 1);
  EXPECT_GT(f.at("avg_power_w").to_number<double>(), 400.0);
  EXPECT_FALSE(f.contains("joules_per_output_token"));  // no raw result: no counts
  auto sidecar = json::read_file(dir / "power_validation_gpu_metrics.json");
  ASSERT_TRUE(sidecar);
  EXPECT_TRUE(sidecar->as_object().at("benchmark_result").is_null());
  auto bad = run_in(dir, {}, {testing::ixbench_binary(), "power", "--start", "soon", "--end", "later"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--start 'soon' is not a time"), std::string::npos) << bad.err;
  auto none = run_in(dir, {}, {testing::ixbench_binary(), "power", "--csv", "gpu_metrics.csv"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no benchmark window"), std::string::npos) << none.err;
}

TEST(PowerCommand, TheRawResultDefaultsToTheOneBesideTheRecord) {
  const fs::path dir = stage("power_beside", kCases[1]);
  fs::rename(dir / "raw.json", dir / "run_00.json");
  fs::rename(dir / "agg.json", dir / "agg_run_00.json");
  auto run = run_in(dir, {},
                    {testing::ixbench_binary(), "power", "--csv", "gpu_metrics.csv", "--agg", "agg_run_00.json",
                     "--expected-num-gpus", "8"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto agg = json::read_file(dir / "agg_run_00.json");
  ASSERT_TRUE(agg);
  EXPECT_EQ(agg->as_object().at("power_valid"), 1);
  EXPECT_TRUE(fs::exists(dir / "power_validation_run_00.json"));
}

// The same comparisons against the script itself, when a checkout is given.
TEST(PowerCommand, TheScriptItselfAgreesOnEveryFixture) {
  const char* checkout = std::getenv("IXBENCH_INFERENCEX_DIR");
  const fs::path script = checkout ? fs::path(checkout) / "utils" / "aggregate_power.py" : fs::path();
  if (!checkout || !fs::exists(script))
    GTEST_SKIP() << "set IXBENCH_INFERENCEX_DIR to an InferenceX checkout (with utils/aggregate_power.py)";
  for (const Case& c : kCases) {
    const fs::path ours = stage("power_ours_" + c.name, c);
    const fs::path theirs = stage("power_theirs_" + c.name, c);
    std::vector<std::string> mine{testing::ixbench_binary(), "power"}, python{"/usr/bin/python3", script.string()};
    for (const std::string& flag : script_flags(c)) mine.push_back(flag), python.push_back(flag);
    auto a = run_in(ours, {}, mine);
    auto b = run_in(theirs, {}, python);
    EXPECT_EQ(a.exit_code, b.exit_code) << c.name << a.err << b.err;
    for (const char* file : {"agg.json", "power_validation_raw.json"})
      EXPECT_EQ(testing::read_whole_file(ours / file), testing::read_whole_file(theirs / file))
          << c.name << " " << file;
  }
}

// ---- the power step of `ixbench aggregate` (process_result.py runs aggregate_power inline) ----

// A raw result of tests/data/aggregate/ given a window and counts, and 8 GPUs of telemetry.
fs::path stage_aggregate(const std::string& name) {
  const fs::path dir = testing::scratch_dir(name);
  auto raw = json::read_file(testing::source_path("tests/data/aggregate/raw.json"));
  EXPECT_TRUE(raw);
  bj::object r = raw->as_object();
  const double start = 1796119202.5, end = 1796119262.25;
  r["benchmark_start_time_unix"] = start;
  r["benchmark_end_time_unix"] = end;
  r["duration"] = end - start;
  r["completed"] = 64;
  r["total_input_tokens"] = 65536;
  r["total_output_tokens"] = 8192;
  EXPECT_TRUE(files::write_file(dir / "cli_fixture.json", json::to_pretty_string(r)));
  std::string csv = "timestamp, index, power.draw [W], power.limit [W]\n";
  for (int second = 0; second < 66; ++second)
    for (int gpu = 0; gpu < 8; ++gpu)
      csv += fmt::format("2026/12/01 10:{:02}:{:02}.{:03}, {}, {:.2f} W, 700.00 W\n", second / 60, second % 60, gpu * 7,
                         gpu, 500 + 40 * std::sin(second / 5.0 + gpu));
  EXPECT_TRUE(files::write_file(dir / "gpu_metrics.csv", csv));
  return dir;
}

Env aggregate_env() {
  Env env;
  auto vars = json::read_file(testing::source_path("tests/data/aggregate/env.json"));
  for (const auto& [k, v] : vars->as_object()) env[std::string(k)] = std::string(v.as_string());
  return env;
}

TEST(AggregatePower, TelemetryBesideTheRawResultIsIntegratedIntoTheRecord) {
  const fs::path dir = stage_aggregate("aggregate_power");
  auto run = run_in(dir, aggregate_env(), {testing::ixbench_binary(), "aggregate"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto agg = json::read_file(dir / "agg_cli_fixture.json");
  ASSERT_TRUE(agg);
  const bj::object& record = agg->as_object();
  EXPECT_EQ(record.at("power_valid"), 1) << run.err;
  EXPECT_NEAR(record.at("avg_power_w").to_number<double>(), 500.0, 40.0);
  EXPECT_TRUE(record.contains("joules_per_total_token"));
  EXPECT_EQ(run.out, testing::read_whole_file(dir / "agg_cli_fixture.json") + "\n");
  auto sidecar = json::read_file(dir / "power_validation_cli_fixture.json");
  ASSERT_TRUE(sidecar);
  EXPECT_EQ(sidecar->as_object().at("expected_gpu_count"), 8);  // TP 8
  // REQUIRE_POWER with no telemetry: the record is written (power_valid 0), the exit is 1.
  fs::remove(dir / "gpu_metrics.csv");
  Env strict = aggregate_env();
  strict["REQUIRE_POWER"] = "true";
  auto failed = run_in(dir, strict, {testing::ixbench_binary(), "aggregate"});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_NE(failed.err.find("telemetry_file_missing"), std::string::npos) << failed.err;
  EXPECT_EQ(json::read_file(dir / "agg_cli_fixture.json")->as_object().at("power_valid"), 0);
}

TEST(AggregatePower, ProcessResultItselfAgrees) {
  const char* checkout = std::getenv("IXBENCH_INFERENCEX_DIR");
  if (!checkout || !fs::exists(fs::path(checkout) / "utils" / "process_result.py"))
    GTEST_SKIP() << "set IXBENCH_INFERENCEX_DIR to an InferenceX checkout (with utils/process_result.py)";
  const fs::path ours = stage_aggregate("aggregate_power_ours");
  const fs::path theirs = stage_aggregate("aggregate_power_theirs");
  Env env = aggregate_env();
  auto mine = run_in(ours, env, {testing::ixbench_binary(), "aggregate"});
  env["PYTHONPATH"] = (fs::path(checkout) / "utils").string();
  auto script =
      run_in(theirs, env, {"/usr/bin/python3", (fs::path(checkout) / "utils" / "process_result.py").string()});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  for (const char* file : {"agg_cli_fixture.json", "power_validation_cli_fixture.json"})
    EXPECT_EQ(testing::read_whole_file(ours / file), testing::read_whole_file(theirs / file)) << file;
}

}  // namespace
}  // namespace ix
