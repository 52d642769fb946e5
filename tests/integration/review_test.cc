// `ixbench review` through the real binary: base and head repositories written here (as
// directories, and as two commits of a git repository), one mistake class per test, each check's
// verdict and its file:line evidence, the three output formats and the exit status.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "support/git_repo.h"
#include "support/store_locations.h"
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

const std::string kRecipePath = "benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200_sglang.sh";

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
          {kRecipePath, kRecipe}};
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
    return review_change(base_files(), head, std::move(extra));
  }
  ProcessResult review_change(const Files& base, const Files& head, std::vector<std::string> extra = {}) {
    fs::remove_all(dir_ / "base");
    fs::remove_all(dir_ / "head");
    write_tree(dir_ / "base", base);
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
  bj::object check(const Files& head, const std::string& id, std::vector<std::string> extra = {}) {
    return check_change(base_files(), head, id, std::move(extra));
  }
  bj::object check_change(const Files& base, const Files& head, const std::string& id,
                          std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--format", "json"});
    auto result = review_change(base, head, extra);
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
  // The edited config's recipe is in scope through the config.
  EXPECT_NE(result.out.find("PASS dead-knob"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("PASS changelog-prose"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("N/A  golden-al"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("N/A  variant-lookup"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("0 FAIL, 0 WARN, "), std::string::npos) << result.out;
}

TEST_F(Review, AnExportedVariableNothingReadsIsADeadKnobWithTheNameThatIsRead) {
  Files head = clean_head();
  head[kRecipePath] = kRecipe + "# Saturation arms need a longer drain.\nexport AIPERF_BENCHMARK_GRACE_PERIOD=30\n";
  auto c = check(head, "dead-knob");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_EQ(evidence(c),
            "benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200_sglang.sh:7: AIPERF_BENCHMARK_GRACE_PERIOD is exported "
            "but nothing "
            "in the repository reads it; did you mean AGENTIC_WARMUP_GRACE_PERIOD (read by this recipe's scripts)?");
  EXPECT_EQ(c.at("evidence").as_array().size(), 1u) << "SGLANG_* is the engine's; CONC is read by the library";

  // Read anywhere else in the repository (another script): not dead.
  head["benchmarks/other.sh"] = "echo \"${AIPERF_BENCHMARK_GRACE_PERIOD}\"\n";
  EXPECT_EQ(verdict(check(head, "dead-knob")), "PASS");
}

TEST_F(Review, EnginePatchesInRecipesFail) {
  Files head = clean_head();
  head[kRecipePath] = kRecipe +
                      "git apply /workspace/fix-indexer.patch\n"
                      "sed -i 's/assert x/pass/' /usr/local/lib/python3.12/dist-packages/sglang/srt/model_runner.py\n"
                      "pip install git+https://github.com/ROCm/aiter@aa0c5b6\n"
                      "ls /usr/local/lib/python3.12/dist-packages  # reading is fine\n";
  head["benchmarks/overlay/fix.patch"] = "--- a/x\n+++ b/x\n";
  auto c = check(head, "engine-patch");
  EXPECT_EQ(verdict(c), "FAIL");
  ASSERT_EQ(c.at("evidence").as_array().size(), 4u) << bj::serialize(c);
  EXPECT_EQ(evidence(c, 0), "benchmarks/overlay/fix.patch:1: the change adds a patch file, fix.patch");
  EXPECT_EQ(evidence(c, 1),
            "benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200_sglang.sh:6: 'git apply': applies a patch to source "
            "inside the image: "
            "git apply /workspace/fix-indexer.patch");
  EXPECT_NE(evidence(c, 2).find("dsr1_fp8_h200_sglang.sh:7: 'dist-packages'"), std::string::npos) << evidence(c, 2);
  EXPECT_NE(evidence(c, 3).find("dsr1_fp8_h200_sglang.sh:8: 'pip install git+'"), std::string::npos) << evidence(c, 3);
}

const std::string kMtpRecipePath = "benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200_sglang_mtp.sh";

TEST_F(Review, PrecisionLoweringOverridesFailWhenTheyReachADraftModel) {
  Files head = clean_head();
  head[kMtpRecipePath] = kRecipe + "export AITER_BF16_FP8_MOE_BOUND=1\n";
  auto c = check(head, "precision-override");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_NE(evidence(c).find("dsr1_fp8_h200_sglang_mtp.sh:6: AITER_BF16_FP8_MOE_BOUND reaches the draft model: runs "
                             "BF16 MoE layers with FP8"),
            std::string::npos)
      << evidence(c);
  // The target alone at a lower precision is allowed.
  head.erase(kMtpRecipePath);
  head[kRecipePath] = kRecipe + "export AITER_BF16_FP8_MOE_BOUND=1\n";
  c = check(head, "precision-override");
  EXPECT_EQ(verdict(c), "PASS");
  EXPECT_EQ(c.at("summary").as_string(),
            "1 precision-lowering override(s), none reaches a draft model (lower target precision is allowed)");
}

TEST_F(Review, PrecisionLoweringOverridesOfADraftModelFail) {
  auto c = check(spec_head(kSpecRecipe + "export AITER_BF16_FP8_MOE_BOUND=1\n"), "precision-override");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_NE(
      evidence(c).find("dsv4_fp4_h200_sglang_mtp.sh:11: AITER_BF16_FP8_MOE_BOUND reaches the draft model: runs BF16 "
                       "MoE layers with FP8"),
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

TEST_F(Review, TextMarkdownAndJsonCarryTheSameVerdicts) {
  Files head = clean_head();
  head[kMtpRecipePath] = kRecipe + "export AITER_BF16_FP8_MOE_BOUND=1\n";
  auto text = review(head);
  auto markdown = review(head, {"--format", "markdown"});
  auto json = bj::parse(review(head, {"--format", "json"}).out).as_object();
  EXPECT_EQ(markdown.exit_code, 1);
  EXPECT_EQ(json.at("failed"), bj::value(true));
  for (const auto& value : json.at("checks").as_array()) {
    const auto& c = value.as_object();
    const std::string verdict_text = std::string(c.at("verdict").as_string());
    const std::string id = std::string(c.at("id").as_string());
    EXPECT_NE(text.out.find((verdict_text + "    ").substr(0, 5) + id), std::string::npos) << id << "\n" << text.out;
    EXPECT_NE(markdown.out.find("| " + std::string(c.at("title").as_string()) + " | **" + verdict_text + "** |"),
              std::string::npos)
        << id << "\n"
        << markdown.out;
  }
  EXPECT_NE(markdown.out.find("### ixbench review: 1 FAIL, "), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("- `benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200_sglang_mtp.sh:6`: "
                              "AITER_BF16_FP8_MOE_BOUND"),
            std::string::npos)
      << markdown.out;
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
  if (!git_available()) GTEST_SKIP() << "git is not on PATH";
  const fs::path repo = dir_ / "repo";
  write_tree(repo, base_files());
  ASSERT_EQ(git_commit_all(repo, "base"), "");
  Files head = clean_head();
  head[kRecipePath] = kRecipe + "export AIPERF_BENCHMARK_GRACE_PERIOD=30\n";
  write_tree(repo, head);
  ASSERT_EQ(git_commit_all(repo, "head"), "");
  const fs::path previous = fs::current_path();
  fs::current_path(repo);
  auto result =
      run_ixbench({"review", "--base", "HEAD~1", "--head", "HEAD", "--config-files", "configs/nvidia-master.yaml"});
  fs::current_path(previous);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.out.find("review HEAD~1 -> HEAD: 3 file(s) changed"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(
                "benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200_sglang.sh:6: AIPERF_BENCHMARK_GRACE_PERIOD is "
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

TEST_F(Review, ARecipeEditNeedsAnEntryNamingTheConfigItServes) {
  Files head = base_files();
  head[kRecipePath] = kRecipe + "export CONC_MAX=64\n";
  auto c = check(head, "changelog-coverage");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_EQ(evidence(c), kRecipePath +
                             ":6: the recipe of config 'dsr1-fp8-h200-sglang' is edited but no new changelog entry "
                             "names 'dsr1-fp8-h200-sglang'");
  head["perf-changelog.yaml"] = appended_entry();
  EXPECT_EQ(verdict(check(head, "changelog-coverage")), "PASS");
}

TEST_F(Review, APlainAssignmentNothingReadsWarnsAndATypoOfAReadNameFails) {
  Files head = clean_head();
  head[kRecipePath] = kRecipe + "DRAIN_SECONDS=30\n";
  auto c = check(head, "dead-knob");
  EXPECT_EQ(verdict(c), "WARN");
  EXPECT_EQ(evidence(c), kRecipePath + ":6: DRAIN_SECONDS is assigned but nothing reads it (a dead setting)");
  head[kRecipePath] = kRecipe + "CONCC=8\n";
  c = check(head, "dead-knob");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_NE(evidence(c).find(":6: CONCC is assigned but never read, and CONC"), std::string::npos) << evidence(c);
}

TEST_F(Review, AnEnginePatchWaivedForThePrWarns) {
  Files head = clean_head();
  head[kRecipePath] = kRecipe + "git apply /workspace/fix.patch\n";
  head["docs/waiver/2.md"] = "Accepted until the fix ships upstream.\n";
  auto c = check_change(base_files(), head, "engine-patch", {"--pr", "2"});
  EXPECT_EQ(verdict(c), "WARN");
  EXPECT_NE(evidence(c).find("(waived by docs/waiver/2.md)"), std::string::npos) << evidence(c);
  EXPECT_EQ(verdict(check_change(base_files(), head, "engine-patch", {"--pr", "3"})), "FAIL");
}

const std::string kModelsMd =
    "# Models\n\n## Scenarios\n\n| Scenario | ISL/OSL | Status |\n|---|---|---|\n"
    "| Single-turn 8k1k | 8192 / 1024 | Active. |\n"
    "| Single-turn 1k1k | 1024 / 1024 | **Deprecated for all models** since 2026-07-17. |\n\n"
    "## Model support matrix\n\n| Model | Prefix | Active scenarios | Deprecated scenarios |\n|---|---|---|---|\n"
    "| DeepSeek-R1-0528 | `dsr1` | Single-turn 8k1k | Single-turn 1k1k |\n"
    "| gpt-oss-120b | `gptoss` | None (retired 2026-07-06) | Single-turn 8k1k |\n";

TEST_F(Review, DeprecatedScenariosRetiredModelsAndArchivedKeysFail) {
  Files base = base_files();
  base["MODELS.md"] = kModelsMd;
  std::string config = kConfig;
  config.replace(config.find("isl: 1024"), 9, "isl: 8192");
  base["configs/nvidia-master.yaml"] = config;
  // A new 1k1k block on an active key.
  Files head = base;
  head["configs/nvidia-master.yaml"] = config +
                                       "    - isl: 1024\n      osl: 1024\n      search-space:\n"
                                       "      - { tp: 8, conc-start: 4, conc-end: 64 }\n";
  auto c = check_change(base, head, "deprecated");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_EQ(evidence(c),
            "configs/nvidia-master.yaml:15: 'dsr1-fp8-h200-sglang' adds the 1k1k scenario (1024/1024), deprecated "
            "(MODELS.md:8)");
  // A retired model re-added from the archive.
  head = base;
  std::string retired = kConfig;
  retired.replace(0, retired.find(':'), "gptoss-fp4-h200-vllm");
  retired.replace(retired.find("model-prefix: dsr1"), 18, "model-prefix: gptoss");
  retired.replace(retired.find("isl: 1024"), 9, "isl: 8192");
  head["configs/nvidia-master.yaml"] = config + retired;
  head["configs/deprecated/nvidia-gptoss-master.yaml"] = retired;
  base["configs/deprecated/nvidia-gptoss-master.yaml"] = retired;
  c = check_change(base, head, "deprecated");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_EQ(evidence(c, 0),
            "configs/nvidia-master.yaml:15: 'gptoss-fp4-h200-vllm' serves model prefix gptoss, retired (MODELS.md:15)");
  EXPECT_EQ(evidence(c, 1),
            "configs/nvidia-master.yaml:15: 'gptoss-fp4-h200-vllm' is archived in "
            "configs/deprecated/nvidia-gptoss-master.yaml: deprecated keys are not re-added");
  // An 8k1k edit of an active model passes; no MODELS.md is no deprecation.
  head = base;
  head["configs/nvidia-master.yaml"].replace(head["configs/nvidia-master.yaml"].find("conc-end: 64"), 12,
                                             "conc-end: 128");
  EXPECT_EQ(verdict(check_change(base, head, "deprecated")), "PASS");
  EXPECT_EQ(verdict(check_change(base, base, "deprecated")), "N/A");
}

TEST_F(Review, VllmAndSglangKeysNeedUpstreamImages) {
  Files head = clean_head();
  auto& config = head["configs/nvidia-master.yaml"];
  config.replace(config.find("lmsysorg/sglang:v0.5.9-cu129"), 28, "rocm/sgl-dev:v0.5.9-mi35x");
  auto c = check(head, "upstream-image");
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_EQ(evidence(c),
            "configs/nvidia-master.yaml:2: 'dsr1-fp8-h200-sglang' (sglang) runs rocm/sgl-dev:v0.5.9-mi35x, not an "
            "upstream image (vllm/, lmsysorg/)");
  EXPECT_EQ(verdict(check(clean_head(), "upstream-image")), "PASS");
  // A key whose recipe changed is judged too; an untouched one is not, whatever its image.
  Files base = base_files();
  base["configs/nvidia-master.yaml"] = config;
  head = base;
  head[kRecipePath] = kRecipe + "# comment\n";
  EXPECT_EQ(verdict(check_change(base, head, "upstream-image")), "FAIL");
  head = base;
  head["benchmarks/benchmark_lib.sh"] += "# comment\n";
  EXPECT_EQ(verdict(check_change(base, head, "upstream-image")), "N/A");
}

const std::string kDispatcher =
    "ENGINE=\"${ENGINE:-sglang-disagg}\"\n"
    "if [[ \"$ENGINE\" == \"atom-disagg\" ]]; then\n"
    "    source \"$WS_PATH/server_atom.sh\"\n"
    "else\n"
    "    source \"$WS_PATH/server_sglang.sh\"\n"
    "fi\n";

const std::string kMultiNodeConfig =
    "dsv4-fp4-mi355x-atom-disagg-agentic:\n"
    "  image: rocm/atom-dev:nightly_202609221542\n"
    "  model: deepseek-ai/DeepSeek-V4-Pro\n"
    "  model-prefix: dsv4\n"
    "  runner: cluster:mi355x-amds\n"
    "  precision: fp4\n"
    "  framework: atom-disagg\n"
    "  kv-p2p-transfer: mooncake\n"
    "  multinode: true\n"
    "  disagg: true\n"
    "  scenarios:\n"
    "    agentic-coding:\n"
    "    - search-space:\n"
    "      - conc-list: [ 16 ]\n"
    "        kv-offloading: none\n"
    "        prefill: { num-worker: 1, tp: 8, ep: 1, dp-attn: false }\n"
    "        decode: { num-worker: 1, tp: 8, ep: 1, dp-attn: false }\n";

TEST_F(Review, AgenticMultiNodeKeysMustResolveToTheirAgentXEntry) {
  Files base = base_files();
  base["benchmarks/multi_node/amd_utils/server.sh"] = kDispatcher;
  base["benchmarks/multi_node/amd_utils/models_atom.yaml"] = "DeepSeek-V4-Pro:\n  env: \"\"\n";
  base["benchmarks/multi_node/amd_utils/server_atom.sh"] =
      "python3 << PYEOF\nimport yaml\nwith open('${ATOM_WS_PATH}/models_atom.yaml') as f:\n"
      "    m = yaml.safe_load(f).get('${MODEL_NAME}', {})\nPYEOF\n";
  Files head = base;
  head["configs/amd-master.yaml"] = kMultiNodeConfig;
  head["benchmarks/multi_node/amd_utils/models_atom.yaml"] += "DeepSeek-V4-Pro-AgentX:\n  env: \"\"\n";
  std::vector<std::string> configs = {"--config-files", "configs/nvidia-master.yaml", "configs/amd-master.yaml"};
  auto c = check_change(base, head, "variant-lookup", configs);
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_EQ(evidence(c),
            "benchmarks/multi_node/amd_utils/server_atom.sh:4: looks up "
            "benchmarks/multi_node/amd_utils/models_atom.yaml by the bare ${MODEL_NAME}: agentic "
            "'dsv4-fp4-mi355x-atom-disagg-agentic' gets entry 'DeepSeek-V4-Pro', never 'DeepSeek-V4-Pro-AgentX'");
  // A suffixed lookup passes when the entry exists, and fails at the key when it falls back.
  head["benchmarks/multi_node/amd_utils/server_atom.sh"] =
      "key = f'{model_name}-AgentX' if agentic else model_name\nm = yaml.safe_load(open('models_atom.yaml'))[key]\n";
  EXPECT_EQ(verdict(check_change(base, head, "variant-lookup", configs)), "PASS");
  head["benchmarks/multi_node/amd_utils/models_atom.yaml"] = base["benchmarks/multi_node/amd_utils/models_atom.yaml"];
  c = check_change(base, head, "variant-lookup", configs);
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_NE(evidence(c).find("configs/amd-master.yaml:1: benchmarks/multi_node/amd_utils/models_atom.yaml has no "
                             "'DeepSeek-V4-Pro-AgentX' entry"),
            std::string::npos)
      << evidence(c);
  // Without the dispatcher nothing is judged.
  head.erase("benchmarks/multi_node/amd_utils/server.sh");
  EXPECT_EQ(verdict(check_change(base, head, "variant-lookup", configs)), "N/A");
}

// ---- Evidence the submission hands in: --results, --db, --pr-body ----

const std::string kThresholds =
    "default:\n  gsm8k: 0.90\nmodels:\n  dsr1:\n    gsm8k: 0.91\n  glm5:\n    gsm8k: 0.94\n";

// meta_env.json of a batched eval set.
std::string meta_env(const std::string& prefix, const std::string& requested, const std::string& completed) {
  return fmt::format(R"({{"infmax_model_prefix": "{}", "task": "gsm8k", "eval_concs": {}, "completed_eval_concs": {}, )"
                     R"("failed_eval_concs": []}})",
                     prefix, requested, completed);
}

// An lm-eval results file with its two exact_match scores.
std::string lm_eval(double strict, double flexible) {
  return fmt::format(R"({{"results": {{"gsm8k": {{"alias": "gsm8k", "exact_match,strict-match": {}, )"
                     R"("exact_match_stderr,strict-match": 0.007, "exact_match,flexible-extract": {}, )"
                     R"("exact_match_stderr,flexible-extract": 0.008}}}}, "n-samples": {{"gsm8k": {{"original": 1319, )"
                     R"("effective": 1319}}}}, "lm_eval_version": "0.4.12"}})",
                     strict, flexible);
}

// A fixed-seq-len agg record (process_result.py's fields) of the dsr1 H200 curve.
std::string fixed_agg(int conc, double median_e2el, double tput_per_gpu,
                      const std::string& image = "lmsysorg/sglang:v0.5.9-cu129") {
  return fmt::format(
      R"({{"hw": "h200", "conc": {}, "image": "{}", "model": "deepseek-ai/DeepSeek-R1-0528", )"
      R"("infmax_model_prefix": "dsr1", "framework": "sglang", "precision": "fp8", "spec_decoding": "none", )"
      R"("disagg": false, "isl": 1024, "osl": 1024, "tp": 8, "pp": 1, "ep": 1, "dp_attention": false, )"
      R"("is_multinode": false, "num_gpus": 8, "tput_per_gpu": {}, "median_e2el": {}}})",
      conc, image, tput_per_gpu, median_e2el);
}

// An agentic agg record (process_agentic_result.py's nested metrics); `p90_e2el` < 0 leaves it out.
std::string agentic_agg(int conc, double p90_e2el, double tput_per_gpu, const std::string& spec,
                        const std::string& kv) {
  const std::string e2el =
      p90_e2el < 0 ? "" : fmt::format(R"("e2el": {{"p50": {}, "p90": {}}})", p90_e2el / 2, p90_e2el);
  return fmt::format(
      R"({{"hw": "h200", "conc": {}, "image": "lmsysorg/sglang:v0.5.9-cu129", "model": "deepseek-ai/DeepSeek-V4-Pro", )"
      R"("infmax_model_prefix": "dsv4", "framework": "sglang", "precision": "fp4", "spec_decoding": "{}", )"
      R"("scenario_type": "agentic-coding", "kv_offloading": "{}", "tp": 8, "pp": 1, "ep": 1, "num_gpus": 8, )"
      R"("request_metrics": {{"latency": {{{}}}, "throughput": {{"per_gpu": {{"total_tput_tps": {}}}}}}}}})",
      conc, spec, kv, e2el, tput_per_gpu);
}

// Five points of one curve, each on its frontier (E2EL and throughput both rise with conc).
Files five_point_curve() {
  Files out;
  const int concs[] = {4, 8, 16, 32, 64};
  for (int i = 0; i < 5; ++i)
    out[fmt::format("agg_dsr1_conc{}.json", concs[i])] = fixed_agg(concs[i], 10.0 + i, 400.0 * (i + 1));
  return out;
}

std::string summary(const bj::object& check) {
  return std::string(check.at("summary").as_string());
}

TEST_F(Review, EvalScoresBelowTheirThresholdFailNamingTheScoreAndTheMetric) {
  Files head = clean_head();
  head["utils/evals/thresholds.yaml"] = kThresholds;
  const fs::path results = dir_ / "results";
  write_tree(results, {{"eval_dsr1/meta_env.json", meta_env("dsr1", "[16, 64]", "[16, 64]")},
                       {"eval_dsr1/results_conc16.json", lm_eval(0.95, 0.94)},
                       {"eval_dsr1/results_conc64.json", lm_eval(0.921, 0.904)}});
  auto c = check(head, "evals", {"--results", results.string()});
  EXPECT_EQ(verdict(c), "FAIL");
  ASSERT_EQ(c.at("evidence").as_array().size(), 1u) << bj::serialize(c);
  // Both filters must pass: strict-match 0.921 does, flexible-extract 0.904 is below models.dsr1's 0.91.
  EXPECT_EQ(evidence(c), (results / "eval_dsr1/results_conc64.json").string() +
                             ":0: [conc=64] gsm8k exact_match,flexible-extract = 0.9040 (< 0.91 from models.dsr1)");

  // A batched set must hold every requested concurrency.
  fs::remove_all(results);
  write_tree(results, {{"eval_dsr1/meta_env.json", meta_env("dsr1", "[16, 64]", "[16]")},
                       {"eval_dsr1/results_conc16.json", lm_eval(0.95, 0.94)}});
  c = check(head, "evals", {"--results", results.string()});
  EXPECT_EQ(verdict(c), "FAIL");
  EXPECT_NE(bj::serialize(c).find("batched eval is missing completed concurrency: 64"), std::string::npos)
      << bj::serialize(c);

  // models.<prefix> is an exact prefix: glm5.2 gets default.gsm8k (0.90), not glm5's 0.94.
  fs::remove_all(results);
  write_tree(results, {{"eval_glm/meta_env.json", meta_env("glm5.2", "[8]", "[8]")},
                       {"eval_glm/results_conc8.json", lm_eval(0.925, 0.916)}});
  c = check(head, "evals", {"--results", results.string()});
  EXPECT_EQ(verdict(c), "PASS") << bj::serialize(c);
  EXPECT_EQ(summary(c), "2 score(s) of 1 eval set(s) meet their thresholds (utils/evals/thresholds.yaml)");

  // Without the thresholds file every task needs 0.85.
  head.erase("utils/evals/thresholds.yaml");
  c = check(head, "evals", {"--results", results.string()});
  EXPECT_EQ(verdict(c), "PASS") << bj::serialize(c);
  EXPECT_NE(summary(c).find("0.85 for every task: head has no utils/evals/thresholds.yaml"), std::string::npos)
      << summary(c);

  // Agg records alone are no eval set.
  fs::remove_all(results);
  write_tree(results, five_point_curve());
  EXPECT_EQ(verdict(check(head, "evals", {"--results", results.string()})), "N/A");
  EXPECT_EQ(verdict(check(head, "evals")), "N/A");
}

TEST_F(Review, ParetoCoverageWarnsBelowFiveFrontierPointsOrWithADroppedPoint) {
  const fs::path results = dir_ / "results";
  Files records = five_point_curve();
  write_tree(results, records);
  auto c = check(clean_head(), "pareto", {"--results", results.string()});
  EXPECT_EQ(verdict(c), "PASS") << bj::serialize(c);
  EXPECT_NE(summary(c).find("1 curve(s), each with >= 5 frontier points and none dropped: 5 points, 5 on the "
                            "frontier, 0 dropped"),
            std::string::npos)
      << summary(c);

  // conc 64 slower and lower than conc 32: dominated, 4 on the frontier (`ixbench pareto`'s wording).
  records["agg_dsr1_conc64.json"] = fixed_agg(64, 15.0, 1500.0);
  write_tree(results, records);
  c = check(clean_head(), "pareto", {"--results", results.string()});
  EXPECT_EQ(verdict(c), "WARN");
  ASSERT_EQ(c.at("evidence").as_array().size(), 1u) << bj::serialize(c);
  EXPECT_EQ(evidence(c), results.string() +
                             ":0: curve infmax_model_prefix=dsr1 isl=1024 osl=1024 hw=h200 precision=fp8 "
                             "framework=sglang image=lmsysorg/sglang:v0.5.9-cu129: 5 points, 4 on the frontier, 0 "
                             "dropped (fewer than 5 on the frontier)");

  // Five frontier points and a failed run (E2EL 0): dropped, named by its field, and a WARN.
  records = five_point_curve();
  records["agg_dsr1_conc128.json"] = fixed_agg(128, 0.0, 2100.0);
  fs::remove_all(results);
  write_tree(results, records);
  c = check(clean_head(), "pareto", {"--results", results.string()});
  EXPECT_EQ(verdict(c), "WARN");
  ASSERT_EQ(c.at("evidence").as_array().size(), 2u) << bj::serialize(c);
  EXPECT_NE(evidence(c, 0).find("5 points, 5 on the frontier, 1 dropped"), std::string::npos) << evidence(c, 0);
  EXPECT_NE(evidence(c, 1).find((results / "agg_dsr1_conc128.json").string() + ":0: conc 128 dropped from curve "),
            std::string::npos)
      << evidence(c, 1);
  EXPECT_NE(evidence(c, 1).find(": median_e2el is 0"), std::string::npos) << evidence(c, 1);

  // Another image is another curve; one point is far from five.
  records = five_point_curve();
  records["agg_dsr1_new_image.json"] = fixed_agg(4, 9.0, 500.0, "lmsysorg/sglang:v0.6.0-cu129");
  fs::remove_all(results);
  write_tree(results, records);
  c = check(clean_head(), "pareto", {"--results", results.string()});
  EXPECT_EQ(verdict(c), "WARN");
  EXPECT_EQ(summary(c), "1 of 2 curve(s) below coverage (>= 5 frontier points, none dropped)");
  EXPECT_NE(evidence(c).find("image=lmsysorg/sglang:v0.6.0-cu129: 1 points, 1 on the frontier"), std::string::npos)
      << evidence(c);

  // Agentic records: P90 E2EL against total throughput per GPU, one curve whatever the spec
  // method or KV tier; a record without its P90 is dropped naming the field.
  records = {{"agg_a1.json", agentic_agg(1, 9.8, 610, "mtp", "none")},
             {"agg_a2.json", agentic_agg(2, 10.4, 1130, "mtp", "none")},
             {"agg_a4.json", agentic_agg(4, 11.9, 2050, "draft_model", "none")},
             {"agg_a8.json", agentic_agg(8, 14.6, 3480, "mtp", "dram")},
             {"agg_a16.json", agentic_agg(16, 19.3, 5310, "mtp", "dram")}};
  fs::remove_all(results);
  write_tree(results, records);
  c = check(clean_head(), "pareto", {"--results", results.string()});
  EXPECT_EQ(verdict(c), "PASS") << bj::serialize(c);
  records["agg_a32.json"] = agentic_agg(32, -1, 7420, "mtp", "dram");
  write_tree(results, records);
  c = check(clean_head(), "pareto", {"--results", results.string()});
  EXPECT_EQ(verdict(c), "WARN");
  EXPECT_NE(evidence(c, 0).find("curve infmax_model_prefix=dsv4 scenario=agentic hw=h200 precision=fp4 "
                                "framework=sglang image=lmsysorg/sglang:v0.5.9-cu129: 5 points, 5 on the frontier, 1 "
                                "dropped"),
            std::string::npos)
      << evidence(c, 0);
  EXPECT_NE(evidence(c, 1).find("request_metrics.latency.e2el.p90 missing or not a number"), std::string::npos)
      << evidence(c, 1);

  fs::remove_all(results);
  write_tree(results, {{"eval_dsr1/meta_env.json", meta_env("dsr1", "[8]", "[8]")},
                       {"eval_dsr1/results_conc8.json", lm_eval(0.95, 0.94)}});
  EXPECT_EQ(verdict(check(clean_head(), "pareto", {"--results", results.string()})), "N/A");
}

// InferenceX's PR_REVIEW_CHECKLIST.md template, cut down: the opening, one item, the sections.
const std::string kSignOffTemplate =
    "As a PR reviewer and CODEOWNER, I have reviewed this and have:\n"
    "- [ ] Verified that this PR passes evals.  Please link to GitHub Action workflow that shows this.\n"
    "\n"
    "### Additional detail section:\n"
    "- insert any additional info here\n"
    "\n"
    "Signed: `FILL_IN_GITHUB_USERNAME`\n";

TEST_F(Review, TheCodeownerSignOffMustBeFilledIn) {
  const fs::path body = dir_ / "pr-body.md";
  std::ofstream(body) << kSignOffTemplate;
  auto c = check(clean_head(), "pr-template", {"--pr-body", body.string()});
  EXPECT_EQ(verdict(c), "FAIL");
  ASSERT_EQ(c.at("evidence").as_array().size(), 2u) << bj::serialize(c);
  EXPECT_EQ(evidence(c, 0), body.string() +
                                ":5: the Additional detail section holds only the template's 'insert any additional "
                                "info here'");
  EXPECT_EQ(evidence(c, 1), body.string() + ":7: the sign-off is still signed FILL_IN_GITHUB_USERNAME");

  std::string filled = kSignOffTemplate;
  filled.replace(filled.find("- insert any"), 34, "- Draft: the shipped MTP head at its stored precision.\n");
  filled.replace(filled.find("`FILL_IN_GITHUB_USERNAME`"), 25, "@reviewer");
  std::ofstream(body) << filled;
  c = check(clean_head(), "pr-template", {"--pr-body", body.string()});
  EXPECT_EQ(verdict(c), "PASS") << bj::serialize(c);

  // A placeholder left beside real details is not "nothing but" the placeholder.
  std::string both = kSignOffTemplate;
  both.replace(both.find("- insert any"), 0, "- Draft: the shipped MTP head.\n");
  both.replace(both.find("`FILL_IN_GITHUB_USERNAME`"), 25, "@reviewer");
  std::ofstream(body) << both;
  EXPECT_EQ(verdict(check(clean_head(), "pr-template", {"--pr-body", body.string()})), "PASS");

  // A body that is not the checklist: the opening sentence is missing (evidence at line 1).
  std::ofstream(body) << "LGTM\n";
  c = check(clean_head(), "pr-template", {"--pr-body", body.string()});
  EXPECT_EQ(verdict(c), "FAIL");
  ASSERT_EQ(c.at("evidence").as_array().size(), 1u) << bj::serialize(c);
  EXPECT_EQ(evidence(c), body.string() +
                             ":1: the sign-off does not open with the checklist's 'As a PR reviewer and CODEOWNER, I "
                             "have reviewed this and have:'");

  EXPECT_EQ(verdict(check(clean_head(), "pr-template")), "N/A");
}

// Evidence that was given but cannot be read fails the review as an unreadable --base does: exit 1,
// one error naming the flag and the path, no review printed.
TEST_F(Review, EvidenceThatCannotBeReadFailsTheReviewNamingIt) {
  auto refused = [&](std::vector<std::string> extra, const std::string& says) {
    auto result = review(clean_head(), extra);
    EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_TRUE(result.err.starts_with("ixbench: error: ")) << result.err;
    EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
  };
  const fs::path results = dir_ / "results";
  refused({"--results", results.string()}, "--results '" + results.string() + "': not a directory");
  write_tree(dir_, {{"not-a-folder.json", "{}"}});
  refused({"--results", (dir_ / "not-a-folder.json").string()}, "not-a-folder.json': not a directory");

  write_tree(results, {{"agg_broken.json", R"({"hw": "h200", "conc": 4,)"}});
  refused({"--results", results.string()}, "agg_broken.json:1:");
  refused({"--results", results.string()}, "invalid JSON");
  std::string wrong_type = fixed_agg(4, 10.0, 400.0);
  wrong_type.replace(wrong_type.find(R"("conc": 4)"), 9, R"("conc": "four")");
  write_tree(results, {{"agg_broken.json", wrong_type}});
  refused({"--results", results.string()}, "agg_broken.json: field 'conc' must be a whole number");
  fs::remove_all(results);
  write_tree(results, {{"eval_dsr1/meta_env.json", meta_env("dsr1", "[16]", "[16]")},
                       {"eval_dsr1/results_conc16.json", "[0.95,"}});
  refused({"--results", results.string()}, "eval_dsr1/results_conc16.json:1:");

  refused({"--pr-body", (dir_ / "missing.md").string()}, "--pr-body: " + (dir_ / "missing.md").string());
  refused({"--db", (dir_ / "missing.db").string()},
          "--db '" + (dir_ / "missing.db").string() + "': no results store there");
  EXPECT_FALSE(fs::exists(dir_ / "missing.db")) << "a mistyped --db must not create a store";
  refused({"--db", (dir_ / "not-a-folder.json").string()}, "--db '" + (dir_ / "not-a-folder.json").string() + "'");
}

// --db: the store's measured results are evidence as a results folder is (SQLite, and PostgreSQL
// when IXBENCH_TEST_POSTGRES_URL names a server).
class ReviewStore : public Review, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    Review::SetUp();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    location_ = fresh_store_location(GetParam(), std::string("review_") + info->name());
    if (location_.empty()) GTEST_SKIP() << postgres_skip_message();
    ASSERT_FALSE(location_.starts_with("error:")) << location_;
  }
  std::string location_;
};

TEST_P(ReviewStore, StoredResultsAreEvidence) {
  // Four points of one curve, and an eval at conc 64 (ingest stores it with the conc 64 result).
  const fs::path results = dir_ / "results";
  Files records = five_point_curve();
  records.erase("agg_dsr1_conc32.json");
  records["meta_env.json"] = meta_env("dsr1", "[64]", "[64]");
  records["results_conc64.json"] = lm_eval(0.921, 0.904);
  write_tree(results, records);
  auto ingested = run_ixbench({"ingest", results.string(), "--db", location_}, "", 240.0);
  ASSERT_EQ(ingested.exit_code, 0) << ingested.err;

  Files head = clean_head();
  head["utils/evals/thresholds.yaml"] = kThresholds;
  auto evals = check(head, "evals", {"--db", location_});
  EXPECT_EQ(verdict(evals), "FAIL");
  ASSERT_EQ(evals.at("evidence").as_array().size(), 1u) << bj::serialize(evals);
  EXPECT_NE(evidence(evals).find(":0: [conc=64] gsm8k exact_match,flexible-extract = 0.9040 (< 0.91 from models.dsr1)"),
            std::string::npos)
      << evidence(evals);
  auto pareto = check(head, "pareto", {"--db", location_});
  EXPECT_EQ(verdict(pareto), "WARN");
  EXPECT_NE(evidence(pareto).find("4 points, 4 on the frontier, 0 dropped"), std::string::npos) << evidence(pareto);
}

INSTANTIATE_TEST_SUITE_P(ReviewOn, ReviewStore, ::testing::ValuesIn(store_backends()),
                         [](const auto& info) { return info.param; });

TEST_F(Review, APrecisionOverrideInAModelsEntryTheChangeAddsFailsWithADraft) {
  const std::string models = "DeepSeek-V4-Pro:\n  env: \"AITER_BF16_FP8_MOE_BOUND=0 ATOM_DISABLE_MMAP=true\"\n";
  Files base = base_files();
  base["benchmarks/multi_node/amd_utils/models_atom.yaml"] = models;
  Files head = base;
  std::string config = kMultiNodeConfig;
  config.replace(config.find("      - conc-list"), 8, "      - spec-decoding: mtp\n        ");
  head["configs/amd-master.yaml"] = config;
  head["benchmarks/multi_node/amd_utils/models_atom.yaml"] =
      models + "\n# The agentic entry.\nDeepSeek-V4-Pro-AgentX:\n  env: \"AITER_BF16_FP8_MOE_BOUND=0\"\n";
  std::vector<std::string> configs = {"--config-files", "configs/nvidia-master.yaml", "configs/amd-master.yaml"};
  auto c = check_change(base, head, "precision-override", configs);
  EXPECT_EQ(verdict(c), "FAIL");
  ASSERT_EQ(c.at("evidence").as_array().size(), 1u) << bj::serialize(c) << "\nthe untouched entry is not judged";
  EXPECT_NE(evidence(c).find("models_atom.yaml:6: AITER_BF16_FP8_MOE_BOUND in the env of models entry "
                             "'DeepSeek-V4-Pro-AgentX' reaches the draft model"),
            std::string::npos)
      << evidence(c);
}

}  // namespace
}  // namespace ix::testing
