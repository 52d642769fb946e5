// `ixbench plan` through the real binary on the demo's configs: the buckets and fingerprints of a
// change, what each entry field does, the refusals (unknown keys, a change the gate rejects, no
// appended entry, mixed append-only), append-only changes in a git repository made here, and
// `ixbench run --plan` reading the matrix back. Byte-for-byte agreement with InferenceX's
// process_changelog.py on the real changelog is tests/oracle/plan_oracle.py's job.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/git_repo.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::testing {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;

const std::string kEntryOne =
    "- config-keys:\n    - gptoss-fp4-h200-sim\n  description:\n    - \"Add the H200 fixed-seq-len config\"\n"
    "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n";

std::string entry(const std::string& keys, const std::string& extra = "") {
  return "- config-keys:\n" + keys + "  description:\n    - \"A change\"\n  pr-link: XXX\n" + extra;
}

void write(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

class Plan : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratch_dir("plan"); }
  void TearDown() override { fs::remove_all(dir_); }

  // plan with base = entry one, head = entry one + `appended` (after one blank line).
  ProcessResult plan(const std::string& appended, std::vector<std::string> extra = {}) {
    write(dir_ / "base.yaml", kEntryOne);
    write(dir_ / "head.yaml", appended.empty() ? kEntryOne : kEntryOne + "\n" + appended);
    std::vector<std::string> args = {"plan",
                                     "--base",
                                     (dir_ / "base.yaml").string(),
                                     "--head",
                                     (dir_ / "head.yaml").string(),
                                     "--config-files",
                                     source_path("examples/demo/configs/sim-master.yaml"),
                                     "--runner-config",
                                     source_path("examples/demo/configs/runners.yaml")};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ixbench(args);
  }
  bj::object matrix(const std::string& appended, std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--format", "matrix"});
    auto result = plan(appended, extra);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return bj::parse(result.out).as_object();
  }

  fs::path dir_;
};

size_t rows_in(const bj::object& plan, const std::string& node, const std::string& bucket) {
  const auto* buckets = plan.at(node).as_object().if_contains(bucket);
  return buckets ? buckets->as_array().size() : 0;
}

TEST_F(Plan, BucketsFingerprintsAndMetadata) {
  auto result =
      plan(entry("    - gptoss-fp4-*-sim\n    - gptoss-fp4-b200-sim-agentic\n    - qwen3.5-fp4-b200-sim-mtp\n"),
           {"--format", "matrix"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_EQ(result.out.back(), '\n');
  EXPECT_EQ(result.out.find(": "), std::string::npos) << "compact separators, as pydantic's model_dump_json";
  auto plan = bj::parse(result.out).as_object();
  EXPECT_EQ(rows_in(plan, "single_node", "1024_128"), 2u);
  EXPECT_EQ(rows_in(plan, "single_node", "8k1k"), 1u);
  EXPECT_EQ(rows_in(plan, "single_node", "agentic"), 1u);
  EXPECT_EQ(plan.at("evals").as_array().size(), 1u);          // the 8k1k conc-16 row
  EXPECT_EQ(plan.at("agentic_evals").as_array().size(), 1u);  // the agentic row's eval twin
  const auto& rows = plan.at("single_node").at("1024_128").as_array();
  const auto& first = rows[0].as_object();
  EXPECT_EQ(first.at("recipe-fingerprint"), rows[1].as_object().at("recipe-fingerprint"))
      << "every concurrency of one recipe shares its fingerprint";
  EXPECT_EQ(first.at("recipe-fingerprint").as_string().size(), 64u);
  EXPECT_EQ(first.at("eval-only"), bj::value(false)) << "pydantic's defaults are printed";
  EXPECT_FALSE(plan.at("evals").as_array()[0].as_object().contains("recipe-fingerprint"))
      << "eval rows are not stamped (as process_changelog.py)";
  const auto& meta = plan.at("changelog_metadata").as_object();
  EXPECT_EQ(meta.at("base_ref").as_string(), (dir_ / "base.yaml").string());
  const auto& entries = meta.at("entries").as_array();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(bj::serialize(entries[0]),
            R"({"config-keys":["gptoss-fp4-*-sim","gptoss-fp4-b200-sim-agentic","qwen3.5-fp4-b200-sim-mtp"],)"
            R"("description":["A change"],)"
            R"("pr-link":"XXX","evals-only":false,"all-evals":false,"append-only":false})");
}

TEST_F(Plan, TextNamesEachBucketAndRow) {
  auto result = plan(entry("    - gptoss-fp4-h200-sim\n"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find(": 1 entry -> 2 benchmark rows, 0 eval rows\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("single_node/1024_128 (2 rows)\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("gptoss_1024_128"), std::string::npos);
  EXPECT_NE(result.out.find("recipe "), std::string::npos);
}

TEST_F(Plan, EntryFieldsSelectRows) {
  // scenario-type limits the rows to that scenario.
  auto agentic = matrix(entry("    - gptoss-fp4-b200-sim-agentic\n", "  scenario-type:\n    - fixed-seq-len\n"));
  EXPECT_EQ(rows_in(agentic, "single_node", "agentic"), 0u);
  EXPECT_TRUE(agentic.at("agentic_evals").as_array().empty());
  // evals-only: eval rows, no benchmark rows.
  auto evals = matrix(entry("    - qwen3.5-fp4-b200-sim-mtp\n", "  evals-only: true\n"));
  EXPECT_TRUE(evals.at("single_node").as_object().empty());
  EXPECT_EQ(evals.at("evals").as_array().size(), 1u);
  // all-evals: every fixed row of an 8k1k config becomes an eval row; the 1024/128 config has none.
  auto all = matrix(entry("    - gptoss-fp4-h200-sim\n    - qwen3.5-fp4-b200-sim-mtp\n", "  all-evals: true\n"));
  EXPECT_TRUE(all.at("single_node").as_object().empty());
  EXPECT_EQ(all.at("evals").as_array().size(), 1u);
  // A second entry naming a config already planned adds nothing.
  auto twice = matrix(entry("    - gptoss-fp4-h200-sim\n") + "\n" + entry("    - gptoss-fp4-h200-sim\n"));
  EXPECT_EQ(rows_in(twice, "single_node", "1024_128"), 2u);
  // --trim-conc keeps the lowest concurrency of each recipe.
  auto trimmed = matrix(entry("    - gptoss-fp4-h200-sim\n"), {"--trim-conc"});
  ASSERT_EQ(rows_in(trimmed, "single_node", "1024_128"), 1u);
  EXPECT_EQ(trimmed.at("single_node").at("1024_128").as_array()[0].at("conc"), bj::value(4));
  // --evals-only for every entry.
  auto flag = matrix(entry("    - qwen3.5-fp4-b200-sim-mtp\n"), {"--evals-only"});
  EXPECT_TRUE(flag.at("single_node").as_object().empty());
  EXPECT_EQ(flag.at("evals").as_array().size(), 1u);
}

TEST_F(Plan, RefusesWhatCannotBePlanned) {
  struct Case {
    std::string appended;
    std::vector<std::string> extra;
    std::string says;
  };
  const std::vector<Case> cases = {
      {entry("    - gptoss-fp4-h100-sim\n"),
       {},
       "head.yaml:7: config key 'gptoss-fp4-h100-sim' is not in the master configs"},
      {entry("    - llama-*\n"), {}, "head.yaml:7: the pattern 'llama-*' matches no config key"},
      {"", {}, "the change appends no entry, so there is nothing to plan"},
      {entry("    - gptoss-fp4-h200-sim\n", "  append-only: true\n") + "\n" + entry("    - qwen3.5-fp4-b200-sim-mtp\n"),
       {},
       "append-only entries cannot share a sweep with regular entries"},
      {entry("    - gptoss-fp4-h200-sim\n", "  append-only: true\n"),
       {"--all-evals"},
       "append-only sweeps take neither"},
      {entry("    - gptoss-fp4-h200-sim\n", "  append-only: true\n"), {}, "give --base as a git ref"},
      {entry("    - gptoss-fp4-h200-sim\n", "  bogus: 1\n"), {}, "does not pass the changelog gate"},
  };
  for (const auto& c : cases) {
    auto result = plan(c.appended, c.extra);
    EXPECT_EQ(result.exit_code, 1) << c.says << "\n" << result.out;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
  }
  // An entry inserted before history: the gate's own finding is shown.
  write(dir_ / "base.yaml", kEntryOne);
  write(dir_ / "head.yaml", entry("    - gptoss-fp4-h200-sim\n") + "\n" + kEntryOne);
  auto inserted = run_ixbench({"plan", "--base", (dir_ / "base.yaml").string(), "--head", (dir_ / "head.yaml").string(),
                               "--config-files", source_path("examples/demo/configs/sim-master.yaml"),
                               "--runner-config", source_path("examples/demo/configs/runners.yaml")});
  EXPECT_EQ(inserted.exit_code, 1);
  EXPECT_NE(inserted.err.find("1 entry inserted mid-file: lines 1-5"), std::string::npos) << inserted.err;
  EXPECT_NE(inserted.err.find("fix: move lines 1-5 to the tail"), std::string::npos) << inserted.err;
}

// A repository with the demo's configs; the head commit edits them.
class PlanRepo : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!git_available()) GTEST_SKIP() << "git is not on PATH";
    previous_ = fs::current_path();
    dir_ = scratch_dir("plan_repo");
    fs::current_path(dir_);
    fs::create_directories("configs");
    fs::copy_file(source_path("examples/demo/configs/sim-master.yaml"), "configs/master.yaml");
    fs::copy_file(source_path("examples/demo/configs/runners.yaml"), "configs/runners.yaml");
    write("perf-changelog.yaml", kEntryOne);
    ASSERT_EQ(git_commit_all(dir_, "base"), "");
  }
  void TearDown() override {
    if (previous_.empty()) return;
    fs::current_path(previous_);
    fs::remove_all(dir_);
  }
  void git(const std::vector<std::string>& args) {
    auto result = run_git(dir_, args);
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
  // Replaces `from` by `to` in the master config, appends an append-only entry, commits.
  void change(const std::string& from, const std::string& to, const std::string& keys) {
    std::string text = read_whole_file("configs/master.yaml");
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    write("configs/master.yaml", text);
    write("perf-changelog.yaml", kEntryOne + "\n" + entry(keys, "  append-only: true\n"));
    git({"commit", "-q", "-am", "head"});
  }
  ProcessResult plan() {
    return run_ixbench({"plan", "--base", "HEAD~1", "--head", "HEAD", "--config-files", "configs/master.yaml",
                        "--runner-config", "configs/runners.yaml", "--format", "matrix"});
  }

  fs::path previous_;
  fs::path dir_;
};

TEST_F(PlanRepo, AppendOnlyPlansOnlyTheAddedPoints) {
  change("conc-list: [4, 16]", "conc-list: [4, 16, 32]", "    - gptoss-fp4-h200-sim\n");
  auto result = plan();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto matrix = bj::parse(result.out).as_object();
  const auto& rows = matrix.at("single_node").at("1024_128").as_array();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("conc"), bj::value(32));
  EXPECT_TRUE(matrix.at("evals").as_array().empty()) << "append-only plans no evals";
}

TEST_F(PlanRepo, AppendOnlyRefusesEditsBeyondItsScope) {
  change("conc-list: [4, 16]", "conc-list: [16, 32]", "    - gptoss-fp4-h200-sim\n");
  auto removed = plan();
  EXPECT_EQ(removed.exit_code, 1);
  EXPECT_NE(removed.err.find("may not remove existing concurrency points: [4]"), std::string::npos) << removed.err;
}

TEST_F(PlanRepo, AppendOnlyRefusesEditsOfOtherConfigs) {
  change("conc-list: [16]", "conc-list: [16, 32]", "    - gptoss-fp4-h200-sim\n");
  auto other = plan();
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find("edits configs its changelog entries do not select: qwen3.5-fp4-b200-sim-mtp"),
            std::string::npos)
      << other.err;
}

TEST_F(PlanRepo, AppendOnlyRefusesANewImage) {
  change("image: ixbench-sim\n  model: openai/gpt-oss-120b\n  model-prefix: gptoss\n  runner: h200",
         "image: ixbench-sim:2\n  model: openai/gpt-oss-120b\n  model-prefix: gptoss\n  runner: h200",
         "    - gptoss-fp4-h200-sim\n");
  auto result = plan();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("may not remove or modify existing generated recipes"), std::string::npos) << result.err;
}

TEST_F(Plan, RunReadsThePlanBack) {
  auto result =
      plan(entry("    - gptoss-fp4-*-sim\n    - gptoss-fp4-b200-sim-agentic\n    - qwen3.5-fp4-b200-sim-mtp\n"),
           {"--format", "matrix"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  write(dir_ / "plan.json", result.out);
  auto dry = run_ixbench({"run", "--plan", (dir_ / "plan.json").string(), "--runner-config",
                          source_path("examples/demo/configs/runners.yaml"), "--golden-al-dir",
                          source_path("examples/demo/golden_al_distribution"), "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("6 jobs"), std::string::npos) << dry.out;
  const auto fingerprint =
      std::string(bj::parse(result.out).at("single_node").at("1024_128").at(0).at("recipe-fingerprint").as_string());
  EXPECT_NE(dry.out.find("_recipe-" + fingerprint.substr(0, 16)), std::string::npos)
      << "the job uses the stamped fingerprint";

  write(dir_ / "rows.json", "[]");
  auto not_plan = run_ixbench({"run", "--plan", (dir_ / "rows.json").string(), "--dry-run"});
  EXPECT_EQ(not_plan.exit_code, 1);
  EXPECT_NE(not_plan.err.find("not a plan"), std::string::npos) << not_plan.err;
  std::string bad = result.out;
  bad.replace(bad.find("\"recipe-fingerprint\":\"") + 22, 4, "ZZZZ");
  write(dir_ / "bad.json", bad);
  auto stamped = run_ixbench({"run", "--plan", (dir_ / "bad.json").string(), "--dry-run"});
  EXPECT_EQ(stamped.exit_code, 1);
  EXPECT_NE(stamped.err.find("single_node.1024_128 row 0: \"recipe-fingerprint\" must be 64 lowercase hex"),
            std::string::npos)
      << stamped.err;
  auto both = run_ixbench(
      {"run", "--plan", (dir_ / "plan.json").string(), "--jobs-from", (dir_ / "rows.json").string(), "--dry-run"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("exclude each other"), std::string::npos) << both.err;
}

}  // namespace
}  // namespace ix::testing
