// `ixbench aggregate` run as InferenceX recipes run utils/process_result.py: in the folder of the
// raw result, with its environment. The shared example (../shared/data/inferencex/examples/
// aggregate) must come out byte for byte; multi-node GPU accounting and refused inputs are checked
// against the script's rules; with IXBENCH_INFERENCEX_DIR set, the script itself runs beside it.
#include <gtest/gtest.h>

#include <boost/json.hpp>
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

testing::ProcessResult run_in(const fs::path& dir, const Env& env, const std::vector<std::string>& command) {
  std::vector<std::string> argv{"/usr/bin/env", "-i", "-C", dir.string()};
  for (const auto& [k, v] : env) argv.push_back(k + "=" + v);
  argv.insert(argv.end(), command.begin(), command.end());
  return testing::run_process(argv);
}

// The shared example's environment and raw result, or a skip message.
struct Example {
  Env env;
  std::string raw;
  std::string agg;
};
std::optional<Example> shared_example() {
  const std::string dir = testing::shared_path("data/inferencex/examples/aggregate");
  if (dir.empty()) return std::nullopt;
  Example e;
  auto env = json::read_file(fs::path(dir) / "env.json");
  if (!env) return std::nullopt;
  for (const auto& [k, v] : env->as_object()) e.env[std::string(k)] = std::string(v.as_string());
  e.raw = testing::read_whole_file(fs::path(dir) / "raw.json");
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().starts_with("agg_")) e.agg = testing::read_whole_file(entry.path());
  return e;
}

fs::path stage(const std::string& name, const Example& e) {
  const fs::path dir = testing::scratch_dir(name);
  EXPECT_TRUE(files::write_file(dir / (e.env.at("RESULT_FILENAME") + ".json"), e.raw));
  return dir;
}

bj::object agg_of(const fs::path& dir, const Example& e) {
  auto v = json::read_file(dir / ("agg_" + e.env.at("RESULT_FILENAME") + ".json"));
  EXPECT_TRUE(v) << (v ? "" : v.error().message());
  return v ? v->as_object() : bj::object{};
}

TEST(Aggregate, TheSharedExampleComesOutByteForByte) {
  auto e = shared_example();
  if (!e) GTEST_SKIP() << testing::shared_missing_message("data/inferencex/examples/aggregate");
  const fs::path dir = stage("aggregate_example", *e);
  auto run = run_in(dir, e->env, {testing::ixbench_binary(), "aggregate"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(testing::read_whole_file(dir / ("agg_" + e->env.at("RESULT_FILENAME") + ".json")), e->agg);
  EXPECT_EQ(run.out, e->agg + "\n");  // printed as the script prints it
}

// The example's environment as a multi-node disaggregated run (8 prefill + 16 decode GPUs).
Env multinode_env(const Example& e) {
  Env env = e.env;
  for (const char* single : {"TP", "EP_SIZE", "DP_ATTENTION", "PP_SIZE", "DCP_SIZE", "PCP_SIZE"}) env.erase(single);
  env.insert({{"IS_MULTINODE", "true"},
              {"DISAGG", "true"},
              {"PREFILL_GPUS", "8"},
              {"DECODE_GPUS", "16"},
              {"PREFILL_NUM_WORKERS", "2"},
              {"PREFILL_TP", "4"},
              {"PREFILL_EP", "4"},
              {"PREFILL_DP_ATTN", "true"},
              {"DECODE_NUM_WORKERS", "1"},
              {"DECODE_TP", "16"},
              {"DECODE_EP", "16"},
              {"DECODE_DP_ATTN", "true"},
              {"PREFILL_HARDWARE", "gb200"},
              {"DECODE_HARDWARE", "gb300"},
              {"ROUTER_METADATA", R"({"name": "dynamo", "version": "0.7"})"},
              {"KV_P2P_TRANSFER", "nixl"}});
  env["DISAGG"] = "true";
  return env;
}

TEST(Aggregate, MultiNodeCountsPrefillAndDecodeGpus) {
  auto e = shared_example();
  if (!e) GTEST_SKIP() << testing::shared_missing_message("data/inferencex/examples/aggregate");
  Env env = multinode_env(*e);
  const fs::path dir = stage("aggregate_multinode", *e);
  auto run = run_in(dir, env, {testing::ixbench_binary(), "aggregate", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto agg = agg_of(dir, *e);
  const auto raw = json::parse(e->raw)->as_object();
  const double total = raw.at("total_token_throughput").to_number<double>();
  const double output = raw.at("output_throughput").to_number<double>();
  EXPECT_EQ(agg.at("tput_per_gpu").as_double(), total / 24);
  EXPECT_EQ(agg.at("output_tput_per_gpu").as_double(), output / 16);
  EXPECT_EQ(agg.at("input_tput_per_gpu").as_double(), (total - output) / 8);
  EXPECT_EQ(agg.at("num_prefill_gpu").as_int64(), 8);
  EXPECT_EQ(agg.at("decode_dp_attention").as_string(), "true");
  EXPECT_EQ(agg.at("prefill_hw").as_string(), "gb200");
  EXPECT_EQ(agg.at("router").at("name").as_string(), "dynamo");
  EXPECT_EQ(agg.at("kv_p2p_transfer").as_string(), "nixl");
  EXPECT_FALSE(agg.contains("tp"));
  std::vector<std::string> keys;
  for (const auto& [k, v] : agg) keys.emplace_back(k);
  EXPECT_EQ(keys[12], "router");
  EXPECT_EQ(keys[14], "is_multinode");
  // No decode GPUs: output throughput over all of them, decode tp/ep reported as 0.
  env["DECODE_GPUS"] = "0";
  auto prefill_only = run_in(dir, env, {testing::ixbench_binary(), "aggregate", "--quiet"});
  ASSERT_EQ(prefill_only.exit_code, 0) << prefill_only.err;
  const auto p = agg_of(dir, *e);
  EXPECT_EQ(p.at("output_tput_per_gpu").as_double(), output / 8);
  EXPECT_EQ(p.at("decode_tp").as_int64(), 0);
  EXPECT_EQ(p.at("decode_pp").as_int64(), 1);
}

TEST(Aggregate, RefusedInputsSayWhat) {
  auto e = shared_example();
  if (!e) GTEST_SKIP() << testing::shared_missing_message("data/inferencex/examples/aggregate");
  struct Case {
    std::string what;
    Env env;
    std::string raw;
    std::string says;
  };
  auto with = [&](std::map<std::string, std::optional<std::string>> changes) {
    Env env = e->env;
    for (const auto& [k, v] : changes) {
      if (v) {
        env[k] = *v;
      } else {
        env.erase(k);
      }
    }
    return env;
  };
  std::string no_conc = e->raw;
  no_conc.replace(no_conc.find("\"max_concurrency\""), 17, "\"max_concurrency_x\"");
  std::string bad_tpot = e->raw;
  const size_t at = bad_tpot.find("\"median_tpot_ms\": ") + 18;
  bad_tpot.replace(at, bad_tpot.find(',', at) - at, "\"fast\"");
  for (const Case& c : {
           Case{"missing", with({{"RUNNER_TYPE", std::nullopt}, {"IMAGE", std::nullopt}}), e->raw,
                "Missing required environment variables: RUNNER_TYPE, IMAGE"},
           Case{"disagg", with({{"DISAGG", "true"}}), e->raw, "Disaggregated mode requires multinode setup."},
           Case{"isl", with({{"ISL", "1k"}}), e->raw, "ISL='1k' is not an integer"},
           Case{"pp", with({{"PP_SIZE", "0"}}), e->raw, "PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers."},
           Case{"router", with({{"ROUTER_METADATA", R"({"name": "x"})"}}), e->raw, "exactly 'name' and 'version'"},
           Case{"conc", e->env, no_conc, "no 'max_concurrency'"},
           Case{"tpot", e->env, bad_tpot, "'median_tpot_ms' is \"fast\""},
       }) {
    const fs::path dir = testing::scratch_dir("aggregate_refused");
    ASSERT_TRUE(files::write_file(dir / (e->env.at("RESULT_FILENAME") + ".json"), c.raw));
    auto run = run_in(dir, c.env, {testing::ixbench_binary(), "aggregate"});
    EXPECT_EQ(run.exit_code, 1) << c.what << ": " << run.err;
    EXPECT_NE(run.err.find(c.says), std::string::npos) << c.what << ": " << run.err;
    EXPECT_FALSE(fs::exists(dir / ("agg_" + e->env.at("RESULT_FILENAME") + ".json"))) << c.what;
  }
}

TEST(Aggregate, ProcessResultPyWritesTheSameBytesWhenACheckoutIsGiven) {
  const char* checkout = std::getenv("IXBENCH_INFERENCEX_DIR");
  if (!checkout || !fs::exists(fs::path(checkout) / "utils" / "process_result.py"))
    GTEST_SKIP()
        << "set IXBENCH_INFERENCEX_DIR to an InferenceX checkout (with utils/process_result.py) to run this test";
  auto e = shared_example();
  if (!e) GTEST_SKIP() << testing::shared_missing_message("data/inferencex/examples/aggregate");
  const std::string python = testing::find_on_path("python3");
  if (python.empty()) GTEST_SKIP() << "needs python3";
  for (const Env& vars : {e->env, multinode_env(*e)}) {
    const fs::path theirs = stage("aggregate_theirs", *e);
    const fs::path ours = stage("aggregate_ours", *e);
    Env env = vars;
    env["PYTHONPATH"] = (fs::path(checkout) / "utils").string();
    auto script = run_in(theirs, env, {python, (fs::path(checkout) / "utils" / "process_result.py").string()});
    ASSERT_EQ(script.exit_code, 0) << script.err;
    auto mine = run_in(ours, vars, {testing::ixbench_binary(), "aggregate"});
    ASSERT_EQ(mine.exit_code, 0) << mine.err;
    const std::string name = "agg_" + e->env.at("RESULT_FILENAME") + ".json";
    EXPECT_EQ(testing::read_whole_file(ours / name), testing::read_whole_file(theirs / name))
        << vars.count("IS_MULTINODE");
  }
}

TEST(Collect, EveryJsonUnderTheDirectoryInPathOrder) {
  const fs::path dir = testing::scratch_dir("collect_sweep");
  fs::create_directories(dir / "sweep" / "b");
  ASSERT_TRUE(files::write_file(dir / "sweep" / "b" / "agg_2.json", R"({"conc": 2})"));
  ASSERT_TRUE(files::write_file(dir / "sweep" / "agg_1.json", R"({"conc": 1, "x": 0.1})"));
  ASSERT_TRUE(files::write_file(dir / "sweep" / "notes.txt", "not json, not collected"));
  auto run = run_in(dir, {}, {testing::ixbench_binary(), "collect", "sweep", "exp"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "agg_exp.json: 2 records\n");
  EXPECT_EQ(testing::read_whole_file(dir / "agg_exp.json"),
            "[\n  {\n    \"conc\": 1,\n    \"x\": 0.1\n  },\n  {\n    \"conc\": 2\n  }\n]");
  ASSERT_TRUE(files::write_file(dir / "sweep" / "broken.json", "{\"conc\": "));
  auto broken = run_in(dir, {}, {testing::ixbench_binary(), "collect", "sweep", "exp2"});
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.err.find("broken.json:1:"), std::string::npos) << broken.err;
  EXPECT_FALSE(fs::exists(dir / "agg_exp2.json"));
  auto missing = run_in(dir, {}, {testing::ixbench_binary(), "collect", "nowhere", "exp3"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("nowhere: not a directory"), std::string::npos) << missing.err;
  const char* checkout = std::getenv("IXBENCH_INFERENCEX_DIR");
  const std::string python = testing::find_on_path("python3");
  if (!checkout || python.empty() || !fs::exists(fs::path(checkout) / "utils" / "collect_results.py"))
    GTEST_SKIP() << "set IXBENCH_INFERENCEX_DIR to an InferenceX checkout to compare with collect_results.py";
  fs::remove(dir / "sweep" / "broken.json");
  fs::remove_all(dir / "sweep" / "b");  // one file: the script's walk order cannot differ
  auto ours = run_in(dir, {}, {testing::ixbench_binary(), "collect", "sweep", "one"});
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  auto theirs =
      run_in(dir, {}, {python, (fs::path(checkout) / "utils" / "collect_results.py").string(), "sweep", "py"});
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  EXPECT_EQ(testing::read_whole_file(dir / "agg_one.json"), testing::read_whole_file(dir / "agg_py.json"));
}

TEST(ParetoCommand, FrontiersCoverageAndDroppedPointsPerCurve) {
  const std::string fixture = testing::source_path("tests/data/pareto");
  auto table = testing::run_ixbench({"pareto", "--results", fixture, "--group-by", "hw"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("hw=h200: 6 points, 5 on the frontier, 0 dropped: PASS"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("hw=b200: 6 points, 5 on the frontier, 1 dropped: WARN"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("conc 512 (median_e2el is 0)"), std::string::npos) << table.out;
  auto js = testing::run_ixbench({"pareto", "--results", fixture + "/agg_sweep.json", "--x", "median_intvty",
                                  "--group-by", "hw", "--format", "json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  auto curves = json::parse(js.out);
  ASSERT_TRUE(curves) << js.out;
  const auto& first = curves->as_array()[0].as_object();
  EXPECT_EQ(first.at("curve").as_string(), "hw=h200");
  const auto& frontier = first.at("frontier").as_array();
  ASSERT_FALSE(frontier.empty());
  for (size_t i = 1; i < frontier.size(); ++i) {  // interactivity falls as throughput rises
    EXPECT_LT(frontier[i].at("x").as_double(), frontier[i - 1].at("x").as_double());
    EXPECT_GT(frontier[i].at("y").as_double(), frontier[i - 1].at("y").as_double());
  }
  auto bad = testing::run_ixbench({"pareto", "--results", fixture, "--format", "html"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--format 'html'"), std::string::npos);
  const fs::path empty = testing::scratch_dir("pareto_empty");
  auto none = testing::run_ixbench({"pareto", "--results", empty.string()});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no agg records"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace ix
