// `ixbench review` through the real binary: base and head repositories written here (as
// directories, and as two commits of a git repository), one mistake class per test, each check's
// verdict and its file:line evidence, the three output formats and the exit status.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::testing {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;

using Files = std::map<std::string, std::string>;

const std::string kChangelog =
    "- config-keys:\n    - dsr1-fp8-h200-sglang\n  description:\n    - \"Add the config\"\n"
    "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n";

const std::string kConfig =
    "dsr1-fp8-h200-sglang:\n"
    "  image: lmsysorg/sglang:v0.5.9-cu129\n"
    "  model: deepseek-ai/DeepSeek-R1-0528\n"
    "  model-prefix: dsr1\n"
    "  runner: h200\n"
    "  precision: fp8\n"
    "  framework: sglang\n"
    "  multinode: false\n"
    "  scenarios:\n"
    "    fixed-seq-len:\n"
    "    - isl: 1024\n"
    "      osl: 1024\n"
    "      search-space:\n"
    "      - { tp: 8, conc-start: 4, conc-end: 64 }\n";

const std::string kLibrary =
    "#!/usr/bin/env bash\n"
    "build_replay_cmd() {\n"
    "  REPLAY_CMD+=\" --warmup-grace-period ${AGENTIC_WARMUP_GRACE_PERIOD:-1800}\"\n"
    "  REPLAY_CMD+=\" --concurrency ${CONC}\"\n"
    "}\n";

const std::string kRecipe =
    "#!/usr/bin/env bash\n"
    "source \"$(dirname \"$0\")/../benchmark_lib.sh\"\n"
    "export SGLANG_ENABLE_JIT_DEEPGEMM=1\n"
    "export CONC=${CONC:-4}\n"
    "build_replay_cmd\n";

Files base_files() {
  return {{"perf-changelog.yaml", kChangelog},
          {"configs/nvidia-master.yaml", kConfig},
          {"benchmarks/benchmark_lib.sh", kLibrary},
          {"benchmarks/single_node/dsr1_fp8_h200_sglang.sh", kRecipe}};
}

std::string appended_entry() {
  return kChangelog +
         "\n- config-keys:\n    - dsr1-fp8-h200-*\n  description:\n    - \"Raise the concurrency range\"\n"
         "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2\n";
}

// A head that edits the config and records it: every check passes or does not apply.
Files clean_head() {
  Files head = base_files();
  head["perf-changelog.yaml"] = appended_entry();
  head["configs/nvidia-master.yaml"].replace(head["configs/nvidia-master.yaml"].find("conc-end: 64"), 12,
                                             "conc-end: 128");
  return head;
}

void write_tree(const fs::path& dir, const Files& files) {
  for (const auto& [path, text] : files) {
    fs::create_directories((dir / path).parent_path());
    std::ofstream(dir / path, std::ios::binary) << text;
  }
}

class Review : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratch_dir("review"); }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessResult review(const Files& head, std::vector<std::string> extra = {}) {
    fs::remove_all(dir_ / "base");
    fs::remove_all(dir_ / "head");
    write_tree(dir_ / "base", base_files());
    write_tree(dir_ / "head", head);
    std::vector<std::string> args = {"review",
                                     "--base",
                                     (dir_ / "base").string(),
                                     "--head",
                                     (dir_ / "head").string(),
                                     "--config-files",
                                     "configs/nvidia-master.yaml"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ixbench(args);
  }
  // The check's JSON object from a --format json review.
  bj::object check(const Files& head, const std::string& id) {
    auto result = review(head, {"--format", "json"});
    auto parsed = bj::parse(result.out).as_object();
    for (const auto& c : parsed.at("checks").as_array()) {
      if (c.at("id").as_string() == id) return c.as_object();
    }
    ADD_FAILURE() << "no check " << id << " in " << result.out;
    return {};
  }

  fs::path dir_;
};

std::string verdict(const bj::object& check) {
  return std::string(check.at("verdict").as_string());
}

// "file:line: message" of the check's evidence item.
std::string evidence(const bj::object& check, size_t index = 0) {
  const auto& items = check.at("evidence").as_array();
  if (index >= items.size()) return "<no evidence>";
  const auto& e = items[index].as_object();
  return std::string(e.at("file").as_string()) + ":" + std::to_string(e.at("line").as_int64()) + ": " +
         std::string(e.at("message").as_string());
}

TEST_F(Review, ACleanChangePassesAndExitsZero) {
  auto result = review(clean_head());
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("PASS changelog-gate"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("PASS changelog-coverage"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("N/A  dead-knob           no shell recipe changed"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("0 FAIL, 0 WARN, 2 PASS, 3 N/A"), std::string::npos) << result.out;
}

TEST_F(Review, AnExportedVariableNothingReadsIsADeadKnobWithTheNameThatIsRead) {
  Files head = clean_head();
  head["benchmarks/single_node/dsr1_fp8_h200_sglang.sh"] =
      kRecipe + "# Saturation arms need a longer drain.\nexport AIPERF_BENCHMARK_GRACE_PERIOD=30\n";
  auto c = check(head, "dead-knob");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_EQ(evidence(c),
            "benchmarks/single_node/dsr1_fp8_h200_sglang.sh:7: AIPERF_BENCHMARK_GRACE_PERIOD is exported but nothing "
            "in the repository reads it; did you mean AGENTIC_WARMUP_GRACE_PERIOD (read by this recipe's scripts)?");
  EXPECT_EQ(c.at("evidence").as_array().size(), 1u) << "SGLANG_* is the engine's; CONC is read by the library";

  // Read anywhere else in the repository (another script): not dead.
  head["benchmarks/other.sh"] = "echo \"${AIPERF_BENCHMARK_GRACE_PERIOD}\"\n";
  EXPECT_EQ(verdict(check(head, "dead-knob")), "PASS");
}

TEST_F(Review, EnginePatchesInRecipesFail) {
  Files head = clean_head();
  head["benchmarks/single_node/dsr1_fp8_h200_sglang.sh"] =
      kRecipe +
      "git apply /workspace/fix-indexer.patch\n"
      "sed -i 's/assert x/pass/' /usr/local/lib/python3.12/dist-packages/sglang/srt/model_runner.py\n"
      "pip install git+https://github.com/ROCm/aiter@aa0c5b6\n"
      "ls /usr/local/lib/python3.12/dist-packages  # reading is fine\n";
  head["benchmarks/overlay/fix.patch"] = "--- a/x\n+++ b/x\n";
  auto c = check(head, "engine-patch");
  EXPECT_EQ(verdict(c), "FAIL");
  ASSERT_EQ(c.at("evidence").as_array().size(), 4u) << bj::serialize(c);
  EXPECT_EQ(evidence(c, 0), "benchmarks/overlay/fix.patch:1: the change adds a patch file, fix.patch");
  EXPECT_EQ(
      evidence(c, 1),
      "benchmarks/single_node/dsr1_fp8_h200_sglang.sh:6: 'git apply': applies a patch to source inside the image: "
      "git apply /workspace/fix-indexer.patch");
  EXPECT_NE(evidence(c, 2).find("dsr1_fp8_h200_sglang.sh:7: 'dist-packages'"), std::string::npos) << evidence(c, 2);
  EXPECT_NE(evidence(c, 3).find("dsr1_fp8_h200_sglang.sh:8: 'pip install git+'"), std::string::npos) << evidence(c, 3);
}

TEST_F(Review, PrecisionLoweringOverridesFail) {
  Files head = clean_head();
  head["benchmarks/single_node/dsr1_fp8_h200_sglang.sh"] = kRecipe + "export AITER_BF16_FP8_MOE_BOUND=1\n";
  auto c = check(head, "precision-override");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_NE(evidence(c).find("dsr1_fp8_h200_sglang.sh:6: AITER_BF16_FP8_MOE_BOUND: runs BF16 MoE layers with FP8"),
            std::string::npos)
      << evidence(c);
}

TEST_F(Review, AConfigEditWithoutAnEntryFailsCoverage) {
  Files head = clean_head();
  head["perf-changelog.yaml"] = kChangelog;
  auto c = check(head, "changelog-coverage");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_EQ(evidence(c),
            "configs/nvidia-master.yaml:1: config 'dsr1-fp8-h200-sglang' is edited but no new changelog entry "
            "names it");
  // A comment or key order change is not an edit.
  head["configs/nvidia-master.yaml"] = "# the H200 config\n" + kConfig;
  EXPECT_EQ(verdict(check(head, "changelog-coverage")), "N/A");
}

TEST_F(Review, TheChangelogGateRunsOnTheChange) {
  Files head = clean_head();
  std::string text = appended_entry();
  text.replace(text.rfind("https://github.com/SemiAnalysisAI/InferenceX/pull/2"), 51, "TBD");
  head["perf-changelog.yaml"] = text;
  auto result = review(head);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.out.find("FAIL changelog-gate"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("perf-changelog.yaml:11: pr-link:"), std::string::npos) << result.out;
  EXPECT_EQ(result.err, "ixbench: error: review found FAIL verdicts (above)\n");
}

TEST_F(Review, MarkdownAndJsonCarryTheSameVerdicts) {
  Files head = clean_head();
  head["benchmarks/single_node/dsr1_fp8_h200_sglang.sh"] = kRecipe + "export AITER_BF16_FP8_MOE_BOUND=1\n";
  auto markdown = review(head, {"--format", "markdown"});
  EXPECT_EQ(markdown.exit_code, 1);
  EXPECT_NE(markdown.out.find("### ixbench review: 1 FAIL, 0 WARN, 4 PASS, 0 N/A"), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("| No precision-lowering environment overrides | **FAIL** |"), std::string::npos)
      << markdown.out;
  EXPECT_NE(markdown.out.find("- `benchmarks/single_node/dsr1_fp8_h200_sglang.sh:6`: AITER_BF16_FP8_MOE_BOUND"),
            std::string::npos)
      << markdown.out;
  auto json = bj::parse(review(head, {"--format", "json"}).out).as_object();
  EXPECT_EQ(json.at("failed"), bj::value(true));
  EXPECT_EQ(json.at("checks").as_array().size(), 5u);
}

TEST_F(Review, GitRefsReviewTheCommits) {
  if (find_on_path("git").empty()) GTEST_SKIP() << "git is not on PATH";
  const fs::path repo = dir_ / "repo";
  write_tree(repo, base_files());
  auto git = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {find_on_path("git"),        "-C", repo.string(), "-c", "user.name=ixbench", "-c",
                                     "user.email=ix@example.com"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = run_process(argv);
    ASSERT_EQ(result.exit_code, 0) << result.err;
  };
  git({"init", "-q"});
  git({"add", "-A"});
  git({"commit", "-q", "-m", "base"});
  Files head = clean_head();
  head["benchmarks/single_node/dsr1_fp8_h200_sglang.sh"] = kRecipe + "export AIPERF_BENCHMARK_GRACE_PERIOD=30\n";
  write_tree(repo, head);
  git({"commit", "-q", "-am", "head"});
  const fs::path previous = fs::current_path();
  fs::current_path(repo);
  auto result =
      run_ixbench({"review", "--base", "HEAD~1", "--head", "HEAD", "--config-files", "configs/nvidia-master.yaml"});
  fs::current_path(previous);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.out.find("review HEAD~1 -> HEAD: 3 file(s) changed"), std::string::npos) << result.out;
  EXPECT_NE(
      result.out.find("benchmarks/single_node/dsr1_fp8_h200_sglang.sh:6: AIPERF_BENCHMARK_GRACE_PERIOD is "
                      "exported but nothing in the repository reads it; did you mean AGENTIC_WARMUP_GRACE_PERIOD"),
      std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("PASS changelog-coverage"), std::string::npos) << result.out;
}

TEST_F(Review, RefusesWhatItCannotRead) {
  auto result = run_ixbench({"review", "--base", (dir_ / "missing").string(), "--head", dir_.string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("--base: '"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("is neither a directory nor a git ref"), std::string::npos) << result.err;
  EXPECT_EQ(run_ixbench({"review", "--base", dir_.string()}).exit_code, 2);
  EXPECT_EQ(run_ixbench({"review", "--base", dir_.string(), "--head", dir_.string(), "--format", "yaml"}).exit_code, 2);
}

}  // namespace
}  // namespace ix::testing
