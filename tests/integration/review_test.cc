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

// A spec-decoding (MTP) AgentX key added with its recipe, its golden AL file and an entry whose
// description is `description` (line 16 of the changelog).
const std::string kSpecConfig =
    "dsv4-fp4-h200-sglang-agentic-mtp:\n"
    "  image: lmsysorg/sglang:v0.5.9-cu129\n"
    "  model: deepseek-ai/DeepSeek-V4-Pro\n"
    "  model-prefix: dsv4\n"
    "  runner: cluster:h200-nv\n"
    "  precision: fp4\n"
    "  framework: sglang\n"
    "  multinode: false\n"
    "  scenarios:\n"
    "    agentic-coding:\n"
    "    - dram-utilization: 0.80\n"
    "      search-space:\n"
    "      - { tp: 8, kv-offloading: none, conc-list: [1, 4, 8], spec-decoding: mtp }\n";

const std::string kSpecRecipePath = "benchmarks/single_node/agentic/dsv4_fp4_h200_sglang_mtp.sh";

// Line 4: the draft length; line 6: the forced AL, on throughput runs only.
const std::string kSpecRecipe =
    "#!/usr/bin/env bash\n"
    "source \"$(dirname \"$0\")/../../benchmark_lib.sh\"\n"
    "SPEC_ARGS=(\n"
    "    --speculative-num-steps 3\n"
    "    --chunked-prefill-size 8192)\n"
    "if [ \"${EVAL_ONLY:-false}\" != \"true\" ]; then\n"
    "    export SGLANG_SIMULATE_ACC_LEN=2.49\n"
    "fi\n"
    "python3 -m sglang.launch_server \"${SPEC_ARGS[@]}\"\n"
    "build_replay_cmd\n";

const std::string kGoldenPath = "golden_al_distribution/dsv4_mtp.yaml";
const std::string kGolden = "deepseek-v4-pro:\n  thinking_on:\n    1: 1.79\n    3: 2.49\n";

Files spec_head(const std::string& recipe, const std::string& description = "Add the DeepSeek-V4 MTP AgentX config") {
  Files head = base_files();
  head["configs/nvidia-master.yaml"] = kConfig + "\n" + kSpecConfig;
  head[kSpecRecipePath] = recipe;
  head[kGoldenPath] = kGolden;
  head["perf-changelog.yaml"] = appended_entry() +
                                "\n- config-keys:\n    - dsv4-fp4-h200-sglang-agentic-mtp\n  description:\n    - \"" +
                                description + "\"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/3\n";
  return head;
}

// kSpecRecipe with one line replaced.
std::string spec_recipe_with(const std::string& from, const std::string& to) {
  std::string recipe = kSpecRecipe;
  recipe.replace(recipe.find(from), from.size(), to);
  return recipe;
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
  EXPECT_NE(result.out.find("N/A  dead-knob           no shell recipe in scope"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("PASS changelog-prose"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("N/A  golden-al"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("0 FAIL, 0 WARN, 3 PASS, 4 N/A"), std::string::npos) << result.out;
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

TEST_F(Review, PrecisionLoweringOverridesOfADraftModelFail) {
  auto c = check(spec_head(kSpecRecipe + "export AITER_BF16_FP8_MOE_BOUND=1\n"), "precision-override");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_NE(
      evidence(c).find("dsv4_fp4_h200_sglang_mtp.sh:11: AITER_BF16_FP8_MOE_BOUND reaches the draft model: runs BF16 "
                       "MoE layers with FP8"),
      std::string::npos)
      << evidence(c);
  // Without a draft, lower target precision is allowed.
  Files head = clean_head();
  head["benchmarks/single_node/dsr1_fp8_h200_sglang.sh"] = kRecipe + "export AITER_BF16_FP8_MOE_BOUND=1\n";
  EXPECT_EQ(verdict(check(head, "precision-override")), "PASS");
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
  const Files head = spec_head(kSpecRecipe + "export AITER_BF16_FP8_MOE_BOUND=1\n");
  auto markdown = review(head, {"--format", "markdown"});
  EXPECT_EQ(markdown.exit_code, 1);
  EXPECT_NE(markdown.out.find("### ixbench review: 1 FAIL, 0 WARN, 6 PASS, 0 N/A"), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("| No precision-lowering overrides reach a draft model | **FAIL** |"), std::string::npos)
      << markdown.out;
  EXPECT_NE(markdown.out.find("- `" + kSpecRecipePath + ":11`: AITER_BF16_FP8_MOE_BOUND"), std::string::npos)
      << markdown.out;
  auto json = bj::parse(review(head, {"--format", "json"}).out).as_object();
  EXPECT_EQ(json.at("failed"), bj::value(true));
  EXPECT_EQ(json.at("checks").as_array().size(), 7u);
}

TEST_F(Review, TheGoldenAlForcedOnThroughputRunsPasses) {
  auto c = check(spec_head(kSpecRecipe), "golden-al");
  EXPECT_EQ(verdict(c), "PASS") << bj::serialize(c);
  EXPECT_EQ(c.at("summary").as_string(), "1 spec-decoding recipe(s) force the golden AL on throughput runs only");
  // Without spec decoding in scope the check has nothing to look at.
  EXPECT_EQ(verdict(check(clean_head(), "golden-al")), "N/A");
}

TEST_F(Review, AForcedAlOtherThanTheGoldenOneFailsNamingBoth) {
  auto c = check(spec_head(spec_recipe_with("ACC_LEN=2.49", "ACC_LEN=2.54")), "golden-al");
  EXPECT_EQ(verdict(c), "FAIL");
  ASSERT_EQ(c.at("evidence").as_array().size(), 1u) << bj::serialize(c);
  EXPECT_EQ(evidence(c),
            kSpecRecipePath +
                ":7: SGLANG_SIMULATE_ACC_LEN is 2.54 but the golden AL of deepseek-v4-pro thinking_on with 3 "
                "draft tokens is 2.49 (golden_al_distribution/dsv4_mtp.yaml): set 2.49");
  // TensorRT-LLM counts accepted draft tokens: the golden AL itself is off by one.
  c = check(
      spec_head(spec_recipe_with("SGLANG_SIMULATE_ACC_LEN=2.49", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2.49")),
      "golden-al");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_NE(evidence(c).find(":7: TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS is 2.49"), std::string::npos)
      << evidence(c);
  EXPECT_NE(evidence(c).find("takes AL - 1 (accepted draft tokens only): set 1.49"), std::string::npos) << evidence(c);
  // A draft length the golden curve lacks is a finding too, at the forced value.
  c = check(spec_head(spec_recipe_with("--speculative-num-steps 3", "--speculative-num-steps 2")), "golden-al");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_NE(
      evidence(c).find(":7: golden_al_distribution/dsv4_mtp.yaml:3: deepseek-v4-pro.thinking_on has no draft length "
                       "2 (draft lengths there: 1, 3)"),
      std::string::npos)
      << evidence(c);
}

TEST_F(Review, ForcingTheAlOnEvalRunsFails) {
  const std::string unguarded = spec_recipe_with(
      "if [ \"${EVAL_ONLY:-false}\" != \"true\" ]; then\n    export SGLANG_SIMULATE_ACC_LEN=2.49\nfi\n",
      "export SGLANG_SIMULATE_ACC_LEN=2.49\n");
  auto c = check(spec_head(unguarded), "golden-al");
  EXPECT_EQ(verdict(c), "FAIL");
  ASSERT_EQ(c.at("evidence").as_array().size(), 1u) << bj::serialize(c);
  EXPECT_NE(evidence(c).find(":6: SGLANG_SIMULATE_ACC_LEN is forced on eval runs too (no EVAL_ONLY guard)"),
            std::string::npos)
      << evidence(c);
  // `= true` selects eval runs: forcing there fails, and throughput then forces nothing.
  c = check(spec_head(spec_recipe_with("!=", "=")), "golden-al");
  EXPECT_EQ(verdict(c), "FAIL");
  ASSERT_EQ(c.at("evidence").as_array().size(), 2u) << bj::serialize(c);
  EXPECT_NE(evidence(c, 0).find(":7: SGLANG_SIMULATE_ACC_LEN is forced on EVAL_ONLY=true runs"), std::string::npos)
      << evidence(c, 0);
  EXPECT_NE(evidence(c, 1).find(":4: the agentic throughput path forces no acceptance length"), std::string::npos)
      << evidence(c, 1);
  // The else branch of `= true` is throughput only.
  c = check(spec_head(spec_recipe_with("!= \"true\" ]; then\n", "= \"true\" ]; then\n    echo eval\nelse\n")),
            "golden-al");
  EXPECT_EQ(verdict(c), "PASS") << bj::serialize(c);
}

TEST_F(Review, AnAgenticRecipeThatForcesNothingFailsNamingTheAlToForce) {
  auto c = check(spec_head(spec_recipe_with("    export SGLANG_SIMULATE_ACC_LEN=2.49\n", "    echo throughput\n")),
                 "golden-al");
  EXPECT_EQ(verdict(c), "FAIL");
  ASSERT_EQ(c.at("evidence").as_array().size(), 1u) << bj::serialize(c);
  EXPECT_EQ(evidence(c), kSpecRecipePath +
                             ":4: the agentic throughput path forces no acceptance length: force the golden AL 2.49 "
                             "(deepseek-v4-pro thinking_on, 3 draft tokens, golden_al_distribution/dsv4_mtp.yaml) with "
                             "SGLANG_SIMULATE_ACC_LEN 2.49, when EVAL_ONLY != true");
}

TEST_F(Review, GoldenFilesThatCannotBeReadAreFindingsNotCrashes) {
  // A golden file that does not parse: the finding is at its line.
  Files head = spec_head(kSpecRecipe);
  head[kGoldenPath] = "deepseek-v4-pro:\n  thinking_on:\n    3: 9.5\n";
  auto c = check(head, "golden-al");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_NE(evidence(c).find("golden_al_distribution/dsv4_mtp.yaml:3: the golden AL file " + kSpecRecipePath +
                             " reads does not parse: golden_al_distribution/dsv4_mtp.yaml:3:"),
            std::string::npos)
      << evidence(c);
  head[kGoldenPath] = "deepseek-v4-pro: [1, 2\n";
  EXPECT_EQ(verdict(check(head, "golden-al")), "FAIL");
  // A recipe naming a golden file the repository does not have.
  c = check(spec_head("# golden_al_distribution/dsv4_eagle.yaml: thinking_on, 3 -> 2.49\n" + kSpecRecipe), "golden-al");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_EQ(evidence(c), kSpecRecipePath +
                             ":1: names golden_al_distribution/dsv4_eagle.yaml, which the repository does not have "
                             "(files for prefix dsv4: golden_al_distribution/dsv4_mtp.yaml)");
  // No golden file for the prefix, or several and none named: the AL cannot be checked.
  head = spec_head(kSpecRecipe);
  head.erase(kGoldenPath);
  EXPECT_EQ(verdict(check(head, "golden-al")), "WARN");
  head[kGoldenPath] = kGolden;
  head["golden_al_distribution/dsv4-pro-0813-dspark.yaml"] = "deepseek-v4-pro-0813:\n  thinking_on:\n    3: 3.01\n";
  EXPECT_EQ(verdict(check(head, "golden-al")), "PASS") << "only dsv4_mtp.yaml holds the config's model";
  head["golden_al_distribution/dsv4_eagle.yaml"] = kGolden;
  c = check(head, "golden-al");
  EXPECT_EQ(verdict(c), "WARN");
  EXPECT_NE(evidence(c).find("several golden files"), std::string::npos) << evidence(c);
  head[kSpecRecipePath] = "# golden_al_distribution/dsv4_eagle.yaml\n" + kSpecRecipe;
  EXPECT_EQ(verdict(check(head, "golden-al")), "PASS");
}

TEST_F(Review, ChangelogProseThatDisagreesWithTheConfigWarnsAtItsLine) {
  auto c = check(spec_head(kSpecRecipe,
                           "Use lmsysorg/sglang:v0.5.8-cu129 with 8K prefill chunks, the golden AL 2.49 for 3 draft "
                           "tokens, dram-utilization 0.8 and TP8 at concurrency 1, 4, and 8."),
                 "changelog-prose");
  EXPECT_EQ(verdict(c), "WARN");
  ASSERT_EQ(c.at("evidence").as_array().size(), 1u) << bj::serialize(c);
  EXPECT_EQ(evidence(c),
            "perf-changelog.yaml:16: image: names lmsysorg/sglang:v0.5.8-cu129, but the config ships "
            "lmsysorg/sglang:v0.5.9-cu129 (dsv4-fp4-h200-sglang-agentic-mtp)");
  c = check(spec_head(kSpecRecipe, "Use 16K prefill chunks at concurrency 1 through 16."), "changelog-prose");
  EXPECT_EQ(verdict(c), "WARN");
  ASSERT_EQ(c.at("evidence").as_array().size(), 2u) << bj::serialize(c);
  EXPECT_EQ(evidence(c, 0),
            "perf-changelog.yaml:16: prefill chunk / batch size: says 16K (= 16384), but the change ships 8192 "
            "(--chunked-prefill-size at " +
                kSpecRecipePath + ":5)");
  EXPECT_EQ(evidence(c, 1),
            "perf-changelog.yaml:16: concurrency: says 16, but the change ships 1, 4, 8 (conc of "
            "dsv4-fp4-h200-sglang-agentic-mtp)");
  // Values the change drops are not claims about what it ships.
  EXPECT_EQ(verdict(check(spec_head(kSpecRecipe, "Add concurrency 8, dropping the concurrency 16 and 32 points."),
                          "changelog-prose")),
            "PASS");
  // A variable named as written, and a value only the library's default gives.
  c = check(spec_head(kSpecRecipe, "Set SGLANG_SIMULATE_ACC_LEN to 2.5 and keep the 1800-second grace period."),
            "changelog-prose");
  ASSERT_EQ(c.at("evidence").as_array().size(), 1u) << bj::serialize(c);
  EXPECT_NE(evidence(c).find("SGLANG_SIMULATE_ACC_LEN: says 2.5, but the change ships 2.49"), std::string::npos)
      << evidence(c);
}

TEST_F(Review, ChangelogProseWithNothingToComparePasses) {
  auto c = check(spec_head(kSpecRecipe), "changelog-prose");
  EXPECT_EQ(verdict(c), "PASS") << bj::serialize(c);
  EXPECT_EQ(c.at("summary").as_string(), "0 claim(s) in 2 new entries: none disagrees with the config or recipe");
  // A setting the change gives no value it can read is not judged.
  const std::string computed = spec_recipe_with("    --chunked", "    --max-num-seqs \"$((2 * CONC))\"\n    --chunked");
  EXPECT_EQ(
      verdict(check(spec_head(computed, "Use max-num-seqs 64 and watchdog timeout 900 seconds."), "changelog-prose")),
      "PASS");
  Files head = base_files();
  head["configs/nvidia-master.yaml"] = "# the H200 config\n" + kConfig;
  EXPECT_EQ(verdict(check(head, "changelog-prose")), "N/A");
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
