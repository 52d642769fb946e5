// `ixbench aggregate` on agentic replay artifacts: the record, the AgentX power step's files, how
// the agentic path is chosen, refused inputs, --row; and, with IXBENCH_INFERENCEX_DIR set, the real
// process_agentic_result.py + power_adapter.py on the artifacts of a real `bench replay` against
// `sim serve`, compared with ixbench's output key by key.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/file_io.h"
#include "common/json_io.h"
#include "support/server_process.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;
using Env = std::map<std::string, std::string>;

testing::ProcessResult run_in(const fs::path& dir, const Env& env, const std::vector<std::string>& args,
                              double timeout_s = 60.0) {
  std::vector<std::string> argv{"/usr/bin/env", "-i", "-C", dir.string()};
  for (const auto& [k, v] : env) argv.push_back(k + "=" + v);
  argv.push_back(testing::ixbench_binary());
  argv.push_back("aggregate");
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::run_process(argv, "", timeout_s);
}

// A copy of a tests/data/agentic_aggregate case: <scratch>/result, and its variables.
struct Case {
  fs::path dir;
  Env env;
  std::string expected;  // the script's record
};

Case stage(const std::string& name, const std::string& scratch) {
  Case c;
  const fs::path source = testing::source_path("tests/data/agentic_aggregate/" + name);
  c.dir = testing::scratch_dir(scratch);
  fs::copy(source / "result", c.dir / "result", fs::copy_options::recursive);
  auto env = json::read_file(source / "env.json");
  EXPECT_TRUE(env);
  for (const auto& [k, v] : env->as_object()) c.env[std::string(k)] = std::string(v.as_string());
  c.env["HF_HUB_CACHE"] = (c.dir / "no_hf_cache").string();
  c.expected = testing::read_whole_file(source / "expected.json");
  return c;
}

bj::object read_object(const fs::path& path) {
  auto value = json::read_file(path);
  EXPECT_TRUE(value && value->is_object()) << path;
  return value && value->is_object() ? value->as_object() : bj::object{};
}

// The script's record with the power step's fields of an invalid measurement.
std::string with_invalid_power(const std::string& record) {
  auto value = json::parse(record);
  EXPECT_TRUE(value);
  value->as_object()["power_metric_schema_version"] = 2;
  value->as_object()["power_valid"] = 0;
  return json::to_python_json(*value);
}

TEST(AgenticAggregate, WritesTheScriptsRecordAndThePowerStepsFiles) {
  Case c = stage("vllm", "agentic_cli");
  // The profile's window (the aggregation does not read it; the power adapter does).
  std::ofstream(c.dir / "result" / "aiperf_artifacts" / "profile_export_aiperf.json")
      << R"({"request_count": 5, "start_time": "2026-01-01T00:00:01Z", "end_time": 1767225605.1})";
  c.env["RESULT_FILENAME"] = "agentic_run";
  c.env["AGENTIC_OUTPUT_DIR"] = "out";
  auto run = run_in(c.dir, c.env, {"--raw", "result"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string record = testing::read_whole_file(c.dir / "out" / "agentic_run.json");
  EXPECT_EQ(record, with_invalid_power(c.expected));
  EXPECT_EQ(run.out, record + "\n");
  EXPECT_NE(run.err.find("Requests: 5 successful / 5 total (0 warmup, 0 error dropped)"), std::string::npos) << run.err;
  // No telemetry: the adapter's window is written, the measurement is invalid, exit 0 (best effort).
  const auto window = read_object(c.dir / "result" / "agentic_power_window.json");
  EXPECT_EQ(window.at("completed").as_int64(), 5);
  const auto sidecar = read_object(c.dir / "result" / "power_validation.json");
  EXPECT_EQ(json::to_string(sidecar.at("reasons")), R"(["telemetry_file_missing"])");
  EXPECT_EQ(sidecar.at("expected_gpu_count").as_int64(), 16);  // TP 4 x PP 2 x PCP 2
  EXPECT_EQ(sidecar.at("benchmark_result").as_string(), "result/agentic_power_window.json");
  auto strict = run_in(c.dir, c.env, {"--raw", "result", "--require-power", "--quiet"});
  EXPECT_EQ(strict.exit_code, 1) << strict.err;
  EXPECT_EQ(strict.out, "out/agentic_run.json\n");
  fs::remove_all(c.dir);
}

TEST(AgenticAggregate, AdapterFailureIsRecordedInTheSidecar) {
  Case c = stage("basic", "agentic_adapter_failure");  // the aggregate has no start/end time
  c.env["RESULT_FILENAME"] = "r";
  c.env["SCENARIO_TYPE"] = "agentic-coding";
  c.env["RESULT_DIR"] = "result";
  auto run = run_in(c.dir, c.env, {});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(testing::read_whole_file(c.dir / "r.json"), with_invalid_power(c.expected));
  const auto sidecar = read_object(c.dir / "result" / "power_validation.json");
  EXPECT_EQ(json::to_string(sidecar.at("reasons")), R"(["profile_window_missing"])");
  EXPECT_EQ(sidecar.at("window_source").as_string(), "aiperf_profile_lifecycle");
  EXPECT_TRUE(sidecar.at("accumulator_check").is_null());
  EXPECT_FALSE(fs::exists(c.dir / "result" / "agentic_power_window.json"));
  EXPECT_NE(run.err.find("power-window adaptation failed: profile_window_missing"), std::string::npos) << run.err;
  // ENABLE_AGENTX_POWER=0 (or a multi-node run) leaves the record as the script wrote it.
  c.env["ENABLE_AGENTX_POWER"] = "0";
  auto off = run_in(c.dir, c.env, {"--quiet"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(testing::read_whole_file(c.dir / "r.json"), c.expected);
  fs::remove_all(c.dir);
}

TEST(AgenticAggregate, TheAgenticPathIsChosenByFlagInputOrScenario) {
  Case c = stage("basic", "agentic_choice");
  c.env["RESULT_FILENAME"] = "r";
  c.env["ENABLE_AGENTX_POWER"] = "0";
  const fs::path artifacts = fs::path("result") / "aiperf_artifacts";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--raw", (artifacts / "profile_export.jsonl").string()},
        std::vector<std::string>{"--raw", artifacts.string()}, std::vector<std::string>{"--raw", "result"},
        std::vector<std::string>{"--scenario", "agentic"}, std::vector<std::string>{"--scenario", "agentic-coding"}}) {
    fs::remove(c.dir / "r.json");
    Env env = c.env;
    if (args[0] == "--scenario") env["RESULT_DIR"] = "result";
    auto run = run_in(c.dir, env, args);
    ASSERT_EQ(run.exit_code, 0) << args[1] << ": " << run.err;
    EXPECT_EQ(testing::read_whole_file(c.dir / "r.json"), c.expected) << args[1];
  }
  Env by_variable = c.env;
  by_variable["IS_AGENTIC"] = "1";
  by_variable["RESULT_DIR"] = "result";
  EXPECT_EQ(run_in(c.dir, by_variable, {"--quiet"}).exit_code, 0);
  // Without any of them it is the fixed-seq-len aggregation (process_result.py's variables).
  auto fixed = run_in(c.dir, c.env, {});
  EXPECT_EQ(fixed.exit_code, 1);
  EXPECT_NE(fixed.err.find("Missing required environment variables"), std::string::npos) << fixed.err;
  auto forced = run_in(c.dir, c.env, {"--scenario", "fixed-seq-len", "--raw", "result"});
  EXPECT_EQ(forced.exit_code, 1);
  fs::remove_all(c.dir);
}

TEST(AgenticAggregate, RefusedInputsAreOneLineAndWriteNothing) {
  Case c = stage("basic", "agentic_refused");
  c.env["RESULT_FILENAME"] = "r";
  const fs::path jsonl = c.dir / "result" / "aiperf_artifacts" / "profile_export.jsonl";
  std::string text = testing::read_whole_file(jsonl);
  const size_t second = text.find('\n', text.find('\n') + 1) + 1;
  text.insert(second, "{\"metadata\": oops\n");
  std::ofstream(jsonl) << text;
  auto garbage = run_in(c.dir, c.env, {"--raw", "result"});
  EXPECT_EQ(garbage.exit_code, 1);
  EXPECT_NE(garbage.err.find("ixbench: error: result/aiperf_artifacts/profile_export.jsonl:3:"), std::string::npos)
      << garbage.err;
  EXPECT_FALSE(fs::exists(c.dir / "r.json"));
  Env unnamed = c.env;
  unnamed.erase("RESULT_FILENAME");
  auto no_name = run_in(c.dir, unnamed, {"--raw", "result"});
  EXPECT_EQ(no_name.exit_code, 1);
  EXPECT_NE(no_name.err.find("RESULT_FILENAME env var not set"), std::string::npos) << no_name.err;
  auto missing = run_in(c.dir, c.env, {"--scenario", "agentic"});  // RESULT_DIR defaults to results/
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("results/aiperf_artifacts/profile_export.jsonl not found"), std::string::npos)
      << missing.err;
  Env no_kv = c.env;
  no_kv.erase("KV_OFFLOADING");
  fs::remove(jsonl);
  fs::copy(testing::source_path("tests/data/agentic_aggregate/basic/result/aiperf_artifacts/profile_export.jsonl"),
           jsonl);
  auto kv = run_in(c.dir, no_kv, {"--raw", "result"});
  EXPECT_EQ(kv.exit_code, 1);
  EXPECT_NE(kv.err.find("Missing required environment variable: KV_OFFLOADING"), std::string::npos) << kv.err;
  fs::remove_all(c.dir);
}

// --- --row ----------------------------------------------------------------------------------------

// The row of tests/data/agentic_aggregate/basic/env.json's variables, as `ixbench sweep` prints it.
const std::string kAgenticRow =
    R"({"image": "test/image:0.1", "model": "test-model", "model-prefix": "test/prefix", "precision": "fp4",)"
    R"( "framework": "vllm", "runner": "b200-x4", "tp": 4, "pp": 1, "dcp-size": 1, "pcp-size": 1, "ep": 1,)"
    R"( "dp-attn": false, "spec-decoding": "none", "conc": 8, "kv-offloading": "none", "total-cpu-dram-gb": 0,)"
    R"( "duration": 3600, "exp-name": "exp", "scenario-type": "agentic-coding", "recipe-fingerprint": ")" +
    std::string(64, 'b') + R"("})";

TEST(AgenticAggregate, RowSuppliesTheVariablesAndNamesTheResult) {
  Case c = stage("basic", "agentic_row");
  std::ofstream(c.dir / "row.json") << kAgenticRow;
  const Env env{{"RESULT_DIR", "result"}, {"HF_HUB_CACHE", c.env.at("HF_HUB_CACHE")}, {"ENABLE_AGENTX_POWER", "0"}};
  auto run = run_in(c.dir, env, {"--row", "row.json", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string name =
      "exp_fp4_vllm_tp4-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc8_b200-x4_recipe-bbbbbbbbbbbbbbbb.json";
  EXPECT_EQ(run.out, name + "\n");
  // The script's record for the same variables (the row's are those of the case's env.json).
  EXPECT_EQ(testing::read_whole_file(c.dir / name), c.expected);
  fs::remove_all(c.dir);
}

TEST(AgenticAggregate, ExplicitVariablesWinOverTheRowAndAreLogged) {
  Case c = stage("basic", "agentic_row_override");
  std::ofstream(c.dir / "row.json") << kAgenticRow;
  Env env{{"RESULT_DIR", "result"},     {"HF_HUB_CACHE", c.env.at("HF_HUB_CACHE")},
          {"ENABLE_AGENTX_POWER", "0"}, {"TP", "2"},
          {"RESULT_FILENAME", "mine"},  {"RUNNER_TYPE", "b200-x4"}};  // the same value as the row's: nothing to say
  auto run = run_in(c.dir, env, {"--row", "row.json", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "mine.json\n");
  const auto record = read_object(c.dir / "mine.json");
  EXPECT_EQ(record.at("tp").as_int64(), 2);
  EXPECT_NE(run.err.find("TP=2 from the environment replaces the row's 4"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("RUNNER_TYPE"), std::string::npos) << run.err;
  // --env-file takes the environment's place, and wins over the row the same way.
  ASSERT_TRUE(files::write_file(c.dir / "env.json", R"({"RESULT_DIR": "result", "HF_HUB_CACHE": ")" +
                                                        c.env.at("HF_HUB_CACHE") +
                                                        R"(", "ENABLE_AGENTX_POWER": "0", "CONC": "16"})"));
  auto filed = run_in(c.dir, {{"TP", "2"}}, {"--row", "row.json", "--env-file", "env.json", "--quiet"});
  ASSERT_EQ(filed.exit_code, 0) << filed.err;
  EXPECT_NE(filed.err.find("CONC=16 from --env-file replaces the row's 8"), std::string::npos) << filed.err;
  const std::string name = filed.out.substr(0, filed.out.size() - 1);
  EXPECT_TRUE(name.find("_conc16_") != std::string::npos) << name;  // the name follows the merged variables
  const auto from_file = read_object(c.dir / name);
  EXPECT_EQ(from_file.at("tp").as_int64(), 4);  // the environment is not read with --env-file
  EXPECT_EQ(from_file.at("conc").as_int64(), 16);
  fs::remove_all(c.dir);
}

TEST(AgenticAggregate, RowMissingAFieldIsAnErrorNamingIt) {
  Case c = stage("basic", "agentic_row_missing");
  std::string row = kAgenticRow;
  row.erase(row.find(R"( "kv-offloading": "none",)"), std::string_view(R"( "kv-offloading": "none",)").size());
  std::ofstream(c.dir / "row.json") << row;
  auto run = run_in(c.dir, {{"RESULT_DIR", "result"}, {"KV_OFFLOADING", "none"}}, {"--row", "row.json"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("ixbench: error: --row row.json: the row has no \"kv-offloading\" (the aggregation reads it "
                         "as KV_OFFLOADING"),
            std::string::npos)
      << run.err;
  std::ofstream(c.dir / "row.json") << "[1]";
  auto list = run_in(c.dir, {}, {"--row", "row.json"});
  EXPECT_EQ(list.exit_code, 1);
  EXPECT_NE(list.err.find("not a JSON object"), std::string::npos) << list.err;
  fs::remove_all(c.dir);
}

TEST(AgenticAggregate, FixedSeqLenRowFeedsProcessResultsVariables) {
  const fs::path dir = testing::scratch_dir("agentic_row_fixed");
  fs::copy_file(testing::source_path("tests/data/aggregate/raw.json"), dir / "raw.json");
  fs::copy_file(testing::source_path("tests/data/aggregate/row.json"), dir / "row.json");
  auto run = run_in(dir, {}, {"--row", "row.json", "--raw", "raw.json", "--out", "agg.json", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto record = read_object(dir / "agg.json");
  EXPECT_EQ(record.at("hw").as_string(), "h200");
  EXPECT_EQ(record.at("isl").as_int64(), 1024);
  EXPECT_EQ(record.at("tp").as_int64(), 8);
  EXPECT_EQ(record.at("power_valid").as_int64(), 0);
  fs::remove_all(dir);
}

// --- the script itself on a real replay ------------------------------------------------------------

// Every key of `theirs` in `ours` at the same place and order, numbers equal to 1e-9 (relative),
// everything else equal. Returns the first difference ("" when none).
std::string compare(const bj::value& theirs, const bj::value& ours, const std::string& path) {
  if (theirs.is_number() && ours.is_number()) {
    const double a = theirs.to_number<double>(), b = ours.to_number<double>();
    if (std::abs(a - b) > 1e-9 * std::max(std::abs(a), std::abs(b)))
      return path + ": " + json::to_string(theirs) + " vs " + json::to_string(ours);
    return "";
  }
  if (theirs.kind() != ours.kind()) return path + ": " + json::to_string(theirs) + " vs " + json::to_string(ours);
  if (theirs.is_object()) {
    const auto &a = theirs.get_object(), &b = ours.get_object();
    if (a.size() != b.size())
      return path + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " keys";
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia->key() != ib->key()) return path + ": key " + std::string(ia->key()) + " vs " + std::string(ib->key());
      if (auto d = compare(ia->value(), ib->value(), path + "." + std::string(ia->key())); !d.empty()) return d;
    }
    return "";
  }
  if (theirs.is_array()) {
    const auto &a = theirs.get_array(), &b = ours.get_array();
    if (a.size() != b.size()) return path + ": list sizes differ";
    for (size_t i = 0; i < a.size(); ++i)
      if (auto d = compare(a[i], b[i], path + "[" + std::to_string(i) + "]"); !d.empty()) return d;
    return "";
  }
  return theirs == ours ? "" : path + ": " + json::to_string(theirs) + " vs " + json::to_string(ours);
}

std::string quoted(const fs::path& path) {
  return "'" + path.string() + "'";
}

TEST(AgenticAggregate, TheScriptAgreesOnARealReplay) {
  const char* checkout = std::getenv("IXBENCH_INFERENCEX_DIR");
  if (!checkout || !fs::is_regular_file(fs::path(checkout) / "utils/agentic/aggregation/process_agentic_result.py"))
    GTEST_SKIP() << "set IXBENCH_INFERENCEX_DIR to an InferenceX checkout (with utils/agentic) to run this test";
  if (testing::find_on_path("python3").empty()) GTEST_SKIP() << "needs python3";
  auto server = testing::ServerProcess::start({"--model", "deepseek-r1", "--tp", "8", "--tokenizer", "deepseek_v3"});
  ASSERT_TRUE(server) << server.error().to_string();
  const fs::path dir = testing::scratch_dir("agentic_live");
  // Three growing sessions; the same file is the "HF corpus", so output_expected is exercised.
  std::string trace;
  for (int s = 0; s < 3; ++s) {
    bj::array requests, ids;
    for (int k = 0; k < 8; ++k) {
      for (int b = 0; b < 2; ++b) ids.push_back(static_cast<int64_t>(ids.size()) + 1);
      requests.push_back(bj::object{{"t", k * 0.5},
                                    {"type", "n"},
                                    {"in", static_cast<int64_t>(ids.size()) * 64 + 10},
                                    {"out", 6 + k + s},
                                    {"hash_ids", ids}});
    }
    trace +=
        bj::serialize(bj::object{{"id", "s" + std::to_string(s)}, {"block_size", 64}, {"requests", requests}}) + "\n";
  }
  const fs::path snapshot = dir / "hf" / "datasets--semianalysisai--cc-traces-weka-062126" / "snapshots" / "a";
  fs::create_directories(snapshot);
  std::ofstream(snapshot / "traces.jsonl") << trace;
  const fs::path result = dir / "result";
  auto replay = testing::run_ixbench({"bench",
                                      "replay",
                                      "--url",
                                      (*server)->base_url(),
                                      "--model",
                                      "deepseek-r1",
                                      "--tokenizer",
                                      "deepseek_v3",
                                      "--trace",
                                      (snapshot / "traces.jsonl").string(),
                                      "--artifact-dir",
                                      (result / "aiperf_artifacts").string(),
                                      "--no-progress",
                                      "--concurrency",
                                      "2",
                                      "--warmup-requests-per-lane",
                                      "2",
                                      "--trace-idle-gap-cap-seconds",
                                      "0.05",
                                      "--benchmark-duration",
                                      "4"},
                                     "", 90);
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  std::ofstream(result / "server.log") << "INFO (EngineCore_DP0 pid=7) GPU KV cache size: 1,234,567 tokens\n";
  std::ofstream(result / "agentic_power_timezone_offset.txt") << "+0000\n";
  const Env env{{"KV_OFFLOADING", "none"},
                {"TP", "8"},
                {"EP_SIZE", "1"},
                {"FRAMEWORK", "vllm"},
                {"CONC", "2"},
                {"MODEL", "deepseek-r1"},
                {"MODEL_PREFIX", "dsr1"},
                {"PRECISION", "fp8"},
                {"RUNNER_TYPE", "h200"},
                {"IMAGE", "sim"},
                {"RESULT_FILENAME", "agg"},
                {"RESULT_DIR", result.string()},
                {"HF_HUB_CACHE", (dir / "hf").string()}};
  std::string vars;
  for (const auto& [k, v] : env) vars += k + "=" + quoted(fs::path(v)) + " ";
  const std::string script = "cd " + quoted(checkout) + " && " + vars + "AGENTIC_OUTPUT_DIR=" + quoted(dir / "theirs") +
                             " python3 -m utils.agentic.aggregation.process_agentic_result && python3 -m "
                             "utils.agentic.aggregation.power_adapter --result-dir " +
                             quoted(result) + " --agg-result " + quoted(dir / "theirs" / "agg.json") +
                             " --expected-num-gpus 8";
  auto python = testing::run_process({"/bin/sh", "-c", script}, "", 120);
  ASSERT_EQ(python.exit_code, 0) << python.out << python.err;
  for (const char* name : {"power_validation.json", "agentic_power_window.json"})
    fs::rename(result / name, dir / "theirs" / name);
  Env ours = env;
  ours["AGENTIC_OUTPUT_DIR"] = (dir / "ours").string();
  auto mine = run_in(dir, ours, {"--scenario", "agentic", "--quiet"});
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  for (const auto& [theirs, own] :
       {std::pair{dir / "theirs" / "agg.json", dir / "ours" / "agg.json"},
        std::pair{dir / "theirs" / "power_validation.json", result / "power_validation.json"},
        std::pair{dir / "theirs" / "agentic_power_window.json", result / "agentic_power_window.json"}}) {
    auto a = json::read_file(theirs);
    auto b = json::read_file(own);
    ASSERT_TRUE(a && b) << theirs << " / " << own;
    EXPECT_EQ(compare(*a, *b, theirs.filename().string()), "");
  }
  const auto record = read_object(dir / "ours" / "agg.json");
  EXPECT_GT(record.at("num_requests_successful").as_int64(), 0);
  EXPECT_EQ(record.at("server_metrics").at("adapter").as_string(), "vllm");
  EXPECT_EQ(record.at("kv_cache_pool_tokens").as_int64(), 1234567);
  EXPECT_FALSE(record.at("request_metrics").at("tokens").at("output_expected").as_object().empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ix
