// InferenceX's own eval scripts on ixbench's eval files: utils/evals/validate_scores.py must reach
// the same verdicts (and print the same PASS/FAIL lines) as `ixbench eval check` for the same
// results, thresholds and model prefix, and utils/collect_eval_results.py must read one row per
// concurrency with ixbench's scores.
//
// Needs an InferenceX checkout (its utils/ tree) and python3 with PyYAML and tabulate (Debian:
// python3-yaml, python3-tabulate): set IXBENCH_INFERENCEX_DIR to the checkout's root; skipped
// otherwise. The eval runs against `ixbench sim serve --gsm8k-answers` on the real GSM8K test split
// (../shared/data/gsm8k).
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "common/json_io.h"
#include "support/server_process.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace fs = std::filesystem;

std::string sh_quote(const fs::path& path) {
  return "'" + path.string() + "'";
}

// The PASS:/FAIL: lines of an output, sorted (both tools check files in sorted order, but print
// PASS to stdout and FAIL to stderr).
std::vector<std::string> verdict_lines(const std::string& out, const std::string& err) {
  std::vector<std::string> lines;
  for (const std::string* text : {&out, &err}) {
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("PASS: ") || line.starts_with("FAIL: ")) lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string python_with_modules() {
  for (const std::string python : {std::string("/usr/bin/python3"), testing::find_on_path("python3")}) {
    if (python.empty() || !fs::exists(python)) continue;
    auto probe = testing::run_process({python, "-c", "import yaml, tabulate"});
    if (probe.exit_code == 0) return python;
  }
  return "";
}

TEST(InferenceXEval, ValidateScoresAndCollectEvalResultsAgreeWithIxbench) {
  const char* checkout = std::getenv("IXBENCH_INFERENCEX_DIR");
  if (!checkout || !fs::exists(fs::path(checkout) / "utils" / "evals" / "validate_scores.py"))
    GTEST_SKIP() << "set IXBENCH_INFERENCEX_DIR to an InferenceX checkout (with utils/evals) to run this test";
  const std::string python = python_with_modules();
  if (python.empty()) GTEST_SKIP() << "needs python3 with PyYAML and tabulate (apt: python3-yaml python3-tabulate)";
  const std::string data = testing::shared_path("data/gsm8k");
  const std::string thresholds = testing::shared_path("data/inferencex/evals/thresholds.yaml");
  if (data.empty() || thresholds.empty()) GTEST_SKIP() << testing::shared_missing_message("data/gsm8k");

  auto server = testing::ServerProcess::start(
      {"--model", "deepseek-r1", "--tp", "8", "--no-delay", "--gsm8k-answers", data, "--gsm8k-accuracy", "0.93"});
  ASSERT_TRUE(server) << server.error().to_string();
  const fs::path dir = testing::scratch_dir("inferencex_eval");
  auto eval = testing::run_ixbench({"eval", "gsm8k", "--base-url", (*server)->base_url(), "--model", "deepseek-r1",
                                    "--dataset-dir", data, "--concurrency", "16,64", "--model-prefix", "dsr1",
                                    "--output", (dir / "results.json").string(), "--no-progress"},
                                   "", 300);
  ASSERT_EQ(eval.exit_code, 0) << eval.err;

  // Thresholds around the score: dsr1 (0.91) passes, glm5 (0.94) fails, an unknown prefix takes
  // the default (0.90).
  for (const std::string prefix : {"dsr1", "glm5", "unknown-model"}) {
    auto theirs = testing::run_process({"/bin/sh", "-c",
                                        "cd " + sh_quote(dir) + " && " + python + " " +
                                            sh_quote(fs::path(checkout) / "utils/evals/validate_scores.py") +
                                            " --thresholds " + sh_quote(thresholds) + " --model-prefix " + prefix +
                                            " --results-glob 'results*.json'"});
    auto ours = testing::run_ixbench(
        {"eval", "check", "--results", dir.string(), "--thresholds", thresholds, "--model-prefix", prefix});
    EXPECT_EQ(ours.exit_code, theirs.exit_code) << prefix << "\n" << theirs.out << theirs.err << ours.out << ours.err;
    auto their_lines = verdict_lines(theirs.out, theirs.err);
    ASSERT_FALSE(their_lines.empty()) << theirs.out << theirs.err;
    EXPECT_EQ(verdict_lines(ours.out, ours.err), their_lines) << prefix;
  }

  const std::string collect =
      "import json, sys; from pathlib import Path; sys.path.insert(0, " + sh_quote(fs::path(checkout) / "utils") +
      "); import collect_eval_results as c; print(json.dumps(c.collect_eval_rows(Path(" + sh_quote(dir) + "))))";
  auto rows_run = testing::run_process({python, "-c", collect});
  ASSERT_EQ(rows_run.exit_code, 0) << rows_run.err;
  auto rows = json::parse(rows_run.out);
  ASSERT_TRUE(rows && rows->is_array()) << rows_run.out;
  ASSERT_EQ(rows->as_array().size(), 2U) << rows_run.out;
  for (const auto& row : rows->as_array()) {
    const auto& r = row.as_object();
    const int64_t conc = r.at("conc").as_int64();
    auto ours = json::read_file(dir / ("results_conc" + std::to_string(conc) + ".json"));
    ASSERT_TRUE(ours) << conc;
    const auto& scores = ours->as_object().at("results").as_object().at("gsm8k").as_object();
    EXPECT_EQ(r.at("em_strict").as_double(), scores.at("exact_match,strict-match").as_double());
    EXPECT_EQ(r.at("em_flexible").as_double(), scores.at("exact_match,flexible-extract").as_double());
    EXPECT_EQ(r.at("em_strict_se").as_double(), scores.at("exact_match_stderr,strict-match").as_double());
    EXPECT_EQ(r.at("n_eff").as_int64(), 1319);
    EXPECT_EQ(r.at("model_prefix").as_string(), "dsr1");
    EXPECT_EQ(r.at("score_name").as_string(), "em_strict");
  }
}

}  // namespace
}  // namespace ix
