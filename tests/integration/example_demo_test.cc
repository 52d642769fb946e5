// examples/demo (the small benchmark repository `ixbench run` drives on the simulator) through the
// real binary: its configs validate, its sweep has the rows the demo documents, and the files the
// rows need (golden AL, eval thresholds, agentic trace) are there for them.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace ix::testing {
namespace {

std::string demo(const std::string& relative) {
  return source_path("examples/demo/" + relative);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string string_field(const boost::json::object& row, const char* key) {
  const boost::json::value* value = row.if_contains(key);
  return value && value->is_string() ? std::string(value->get_string()) : std::string();
}

bool bool_field(const boost::json::object& row, const char* key) {
  const boost::json::value* value = row.if_contains(key);
  return value && value->is_bool() && value->get_bool();
}

std::vector<boost::json::object> full_sweep_rows() {
  auto run = run_ixbench({"sweep", "full-sweep", "--config-files", demo("configs/sim-master.yaml"), "--runner-config",
                          demo("configs/runners.yaml")});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  boost::system::error_code ec;
  boost::json::value parsed = boost::json::parse(run.out, ec);
  EXPECT_FALSE(ec) << run.out;
  std::vector<boost::json::object> rows;
  if (ec || !parsed.is_array()) return rows;
  for (const auto& row : parsed.get_array()) {
    if (row.is_object()) rows.push_back(row.get_object());
  }
  return rows;
}

TEST(ExampleDemo, ConfigsValidate) {
  auto run = run_ixbench(
      {"validate", "--config-files", demo("configs/sim-master.yaml"), "--runner-config", demo("configs/runners.yaml")});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("ok: 3 config(s) in 1 file(s), runners from "), std::string::npos) << run.out;
}

TEST(ExampleDemo, FullSweepHasTheDocumentedRows) {
  const auto rows = full_sweep_rows();
  ASSERT_EQ(rows.size(), 4u);
  std::set<std::string> models, runners, exp_names;
  int agentic = 0, mtp = 0, evals = 0;
  for (const auto& row : rows) {
    EXPECT_EQ(string_field(row, "framework"), "sim");
    models.insert(string_field(row, "model"));
    runners.insert(string_field(row, "runner"));
    exp_names.insert(string_field(row, "exp-name"));
    if (string_field(row, "scenario-type") == "agentic-coding") ++agentic;
    if (string_field(row, "spec-decoding") == "mtp") ++mtp;
    if (bool_field(row, "run-eval")) {
      ++evals;
      EXPECT_EQ(string_field(row, "exp-name"), "qwen3.5_8k1k");
    }
  }
  EXPECT_EQ(models, (std::set<std::string>{"openai/gpt-oss-120b", "nvidia/Qwen3.5-397B-A17B-NVFP4"}));
  // Two hardware types: h200, and b200 under its plain and its cluster label.
  EXPECT_EQ(runners, (std::set<std::string>{"h200", "b200", "cluster:b200-sim"}));
  EXPECT_EQ(exp_names, (std::set<std::string>{"gptoss_1024_128", "qwen3.5_8k1k", "gptoss_tp1_conc4_kvdram-native"}));
  EXPECT_EQ(agentic, 1);
  EXPECT_EQ(mtp, 1);
  EXPECT_EQ(evals, 1);
}

TEST(ExampleDemo, TestConfigSelectsByKey) {
  auto run = run_ixbench({"sweep", "test-config", "--config-files", demo("configs/sim-master.yaml"), "--runner-config",
                          demo("configs/runners.yaml"), "--config-keys", "gptoss*", "--conc", "4"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  boost::system::error_code ec;
  boost::json::value parsed = boost::json::parse(run.out, ec);
  ASSERT_FALSE(ec) << run.out;
  ASSERT_TRUE(parsed.is_array());
  EXPECT_EQ(parsed.get_array().size(), 2u);
}

TEST(ExampleDemo, RowsFindTheirGoldenAlThresholdsAndTrace) {
  const std::string golden = read_all(demo("golden_al_distribution/qwen3.5_mtp.yaml"));
  const std::string thresholds = read_all(demo("evals/thresholds.yaml"));
  for (const auto& row : full_sweep_rows()) {
    if (string_field(row, "spec-decoding") == "mtp") {
      // Golden AL files key models by the lower-cased last part of the HF id.
      std::string model = string_field(row, "model");
      std::string key = model.substr(model.rfind('/') + 1);
      std::transform(key.begin(), key.end(), key.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      EXPECT_NE(golden.find("\n" + key + ":\n"), std::string::npos) << key;
    }
    if (bool_field(row, "run-eval")) {
      EXPECT_NE(thresholds.find("\n  " + string_field(row, "model-prefix") + ":\n    gsm8k: "), std::string::npos);
    }
  }
  auto stats = run_ixbench({"trace", "stats", demo("traces/demo_sessions.jsonl"), "--format", "json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find("\"sessions\": 8"), std::string::npos) << stats.out;
}

}  // namespace
}  // namespace ix::testing
