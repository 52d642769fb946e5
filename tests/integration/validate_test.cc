// `ixbench validate` through the real binary: exit codes and the file:line:column messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace ix::testing {
namespace {

std::string fixture(const std::string& name) {
  return source_path("tests/data/config/" + name);
}

size_t count_lines(const std::string& text) {
  size_t lines = 0;
  for (char c : text) lines += (c == '\n');
  return lines;
}

// A fresh empty directory that is the current directory for the test's lifetime: the default
// --runner-config (configs/runners.yaml) is resolved from there.
class InEmptyDirectory {
 public:
  InEmptyDirectory() : previous_(std::filesystem::current_path()) {
    path_ = std::filesystem::temp_directory_path() / ("ixbench-validate-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
    std::filesystem::current_path(path_);
  }
  ~InEmptyDirectory() {
    std::filesystem::current_path(previous_);
    std::filesystem::remove_all(path_);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path previous_;
  std::filesystem::path path_;
};

TEST(Validate, ValidFixtureExitsZero) {
  auto result = run_ixbench(
      {"validate", "--config-files", fixture("valid-master.yaml"), "--runner-config", fixture("runners.yaml")});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("ok: 3 config(s) in 1 file(s)"), std::string::npos) << result.out;
  EXPECT_TRUE(result.err.empty()) << result.err;
}

TEST(Validate, WithoutRunnersFileSaysRunnerChecksWereSkipped) {
  // The default configs/runners.yaml does not exist here: the runner checks used to be skipped
  // silently.
  InEmptyDirectory cwd;
  auto result = run_ixbench({"validate", "--config-files", fixture("valid-master.yaml")});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "ok: 3 config(s) in 1 file(s)\n");
  EXPECT_NE(result.err.find("runner checks skipped"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("configs/runners.yaml does not exist"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("pass --runner-config PATH"), std::string::npos) << result.err;
  // InferenceX moved its configs from .github/configs/ to configs/.
  EXPECT_NE(result.err.find("it keeps the file at configs/runners.yaml"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find(".github"), std::string::npos) << result.err;
  EXPECT_EQ(count_lines(result.err), 1u) << result.err;
  // Problems found: the note comes too, and the summary still counts the config file only.
  result = run_ixbench({"validate", "--config-files", fixture("invalid-master.yaml")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("runner checks skipped"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("ixbench: error: 5 problem(s) found in 1 file(s); fix"), std::string::npos) << result.err;
}

TEST(Validate, HelpNamesWhereInferenceXKeepsItsConfigs) {
  // InferenceX keeps its master configs and runners.yaml in configs/ (formerly .github/configs/).
  for (std::vector<std::string> command : {std::vector<std::string>{"validate", "--help"},
                                           {"sweep", "full-sweep", "--help"},
                                           {"sweep", "test-config", "--help"}}) {
    auto help = run_ixbench(command);
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_NE(help.out.find("configs/runners.yaml"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find(".github"), std::string::npos) << help.out;
  }
}

TEST(Validate, DefaultRunnersFileIsUsedWhenPresent) {
  InEmptyDirectory cwd;
  std::filesystem::create_directories(cwd.path() / "configs");
  std::filesystem::copy_file(fixture("runners.yaml"), cwd.path() / "configs" / "runners.yaml");
  auto result = run_ixbench({"validate", "--config-files", fixture("valid-master.yaml")});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "ok: 3 config(s) in 1 file(s), runners from configs/runners.yaml\n");
  EXPECT_TRUE(result.err.empty()) << result.err;
}

TEST(Validate, FileCountIsConfigFilesOnly) {
  // Two config files and a runners file printed "in 3 file(s)".
  InEmptyDirectory cwd;
  const auto other = cwd.path() / "other-master.yaml";
  {
    std::ofstream out(other);
    out << "other-fp8-h200-vllm:\n  image: img:1\n  model: org/model\n  model-prefix: other\n  precision: fp8\n"
           "  framework: vllm\n  runner: h200\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n"
           "    - { isl: 1024, osl: 1024, search-space: [{ tp: 8, conc-list: [4] }] }\n";
  }
  auto result = run_ixbench({"validate", "--config-files", fixture("valid-master.yaml"), other.string(),
                             "--runner-config", fixture("runners.yaml")});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "ok: 4 config(s) in 2 file(s), runners from " + fixture("runners.yaml") + "\n");
  EXPECT_TRUE(result.err.empty()) << result.err;
  result = run_ixbench({"validate", "--config-files", fixture("invalid-master.yaml"), other.string(), "--runner-config",
                        fixture("runners.yaml")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("ixbench: error: 5 problem(s) found in 2 file(s), runners from " + fixture("runners.yaml") +
                            "; fix"),
            std::string::npos)
      << result.err;
}

TEST(Validate, DuplicateKeyIsReportedBesideOtherProblems) {
  // one.yaml valid, three.yaml the same key plus an unknown field: only the typo was reported.
  InEmptyDirectory cwd;
  std::filesystem::copy_file(fixture("valid-master.yaml"), cwd.path() / "one.yaml");
  {
    std::ofstream out(cwd.path() / "three.yaml");
    out << "tiny-fp8-h200-vllm:\n  image: img:1\n  model: org/model\n  model-prefix: tiny\n  precision: fp8\n"
           "  framework: vllm\n  runner: h200\n  multinode: false\n  typo-field: 1\n  scenarios:\n"
           "    fixed-seq-len:\n    - { isl: 1024, osl: 1024, search-space: [{ tp: 8, conc-list: [4] }] }\n";
  }
  auto result =
      run_ixbench({"validate", "--config-files", "one.yaml", "three.yaml", "--runner-config", fixture("runners.yaml")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("three.yaml:9:3: config 'tiny-fp8-h200-vllm': field 'typo-field': unknown field"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("three.yaml:1:1: config 'tiny-fp8-h200-vllm': config key 'tiny-fp8-h200-vllm' is "
                            "already defined in one.yaml:2:1"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("ixbench: error: 2 problem(s)"), std::string::npos) << result.err;
}

TEST(Validate, ControlCharactersInAConfigCannotForgeADiagnosticLine) {
  // A key holding ESC and a line break printed a red, forged "fake.yaml:1:1:" diagnostic.
  InEmptyDirectory cwd;
  {
    std::ofstream out(cwd.path() / "evil.yaml");
    out << "\"x\\e[31m\\nfake.yaml:1:1: config 'y': all good\":\n  image: 1\n";
  }
  auto result = run_ixbench({"validate", "--config-files", "evil.yaml", "--runner-config", fixture("runners.yaml")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err.find('\x1b'), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("\nfake.yaml"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("config 'x\\x1b[31m\\nfake.yaml:1:1: config 'y': all good'"), std::string::npos)
      << result.err;
  const std::string_view err = result.err;
  for (size_t start = 0; start < err.size();) {
    const size_t end = std::min(err.find('\n', start), err.size());
    const std::string_view line = err.substr(start, end - start);
    EXPECT_TRUE(line.starts_with("evil.yaml:") || line.starts_with("ixbench: error:")) << line;
    start = end + 1;
  }
}

TEST(Validate, ConcListAboveTheBoundIsRefused) {
  InEmptyDirectory cwd;
  {
    std::ofstream out(cwd.path() / "huge.yaml");
    out << "huge-fp8-h200-vllm:\n  image: img:1\n  model: org/model\n  model-prefix: huge\n  precision: fp8\n"
           "  framework: vllm\n  runner: h200\n  multinode: false\n  scenarios:\n    fixed-seq-len:\n"
           "    - isl: 1024\n      osl: 1024\n      search-space:\n      - { tp: 8, conc-list: [2000000000] }\n";
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"validate", "--config-files", "huge.yaml", "--runner-config", fixture("runners.yaml")},
        std::vector<std::string>{"sweep", "test-config", "--config-files", "huge.yaml", "--runner-config",
                                 fixture("runners.yaml"), "--config-keys", "huge-fp8-h200-vllm"}}) {
    auto result = run_ixbench(args);
    EXPECT_EQ(result.exit_code, 1) << args[0] << ": " << result.out;
    EXPECT_TRUE(result.out.empty()) << result.out;
    EXPECT_NE(result.err.find("huge.yaml:14:30: config 'huge-fp8-h200-vllm': field "
                              "'scenarios.fixed-seq-len[0].search-space[0].conc-list[0]':"),
              std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("<= 1000000000"), std::string::npos) << result.err;
  }
}

TEST(Validate, RealMasterConfigsValidateCleanly) {
  std::string nvidia = shared_path("data/inferencex/nvidia-master.yaml");
  std::string amd = shared_path("data/inferencex/amd-master.yaml");
  std::string runners = shared_path("data/inferencex/runners.yaml");
  if (nvidia.empty() || amd.empty() || runners.empty()) GTEST_SKIP() << shared_missing_message("data/inferencex/");
  auto result = run_ixbench({"validate", "--config-files", nvidia, amd, "--runner-config", runners});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(result.err.empty()) << result.err;
}

TEST(Validate, ReportsEveryProblemWithFileLineColumn) {
  std::string file = fixture("invalid-master.yaml");
  auto result = run_ixbench({"validate", "--config-files", file, "--runner-config", fixture("runners.yaml")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find(file + ":10:3: config 'broken-fp8-h200-vllm': field 'typo-field': unknown field"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find(file + ":16:30: config 'broken-fp8-h200-vllm': field "
                                   "'scenarios.fixed-seq-len[0].search-space[0].conc-start': 'conc-start' (64) must "
                                   "be <= 'conc-end' (4)"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find(file + ":17:18:"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("either a list or a range"), std::string::npos);
  EXPECT_NE(result.err.find(file + ":18:28:"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("'tp' (6) must be divisible by 'dcp-size' (4)"), std::string::npos);
  EXPECT_NE(result.err.find(file + ":19:15:"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("expected an integer >= 1 (e.g. `tp: 8`), got the string '8'"), std::string::npos);
  EXPECT_NE(result.err.find("ixbench: error: 5 problem(s)"), std::string::npos) << result.err;
  EXPECT_EQ(count_lines(result.err), 6u) << result.err;
}

TEST(Validate, AFileListedTwiceIsNamedOnce) {
  // Every key used to be reported as "already defined in" the same file, pointing at itself.
  const std::string file = fixture("valid-master.yaml");
  const std::string same = std::filesystem::path(file).parent_path().string() + "/./valid-master.yaml";
  auto result = run_ixbench({"validate", "--config-files", file, same, "--runner-config", fixture("runners.yaml")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("listed twice in --config-files"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("already defined"), std::string::npos) << result.err;
}

TEST(Validate, SyntaxErrorAndMissingFileAreReportedTogether) {
  auto result = run_ixbench({"validate", "--config-files", fixture("syntax-error.yaml"), fixture("no-such-file.yaml")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find(fixture("syntax-error.yaml") + ":3:8: YAML syntax error"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(fixture("no-such-file.yaml") + ": file does not exist"), std::string::npos) << result.err;
}

TEST(Validate, DuplicateKeyAcrossFiles) {
  // Two different files defining the same key (a copy of the fixture).
  const auto copy = std::filesystem::temp_directory_path() / ("ixbench_dup_" + std::to_string(::getpid()) + ".yaml");
  std::filesystem::copy_file(fixture("valid-master.yaml"), copy, std::filesystem::copy_options::overwrite_existing);
  auto result = run_ixbench({"validate", "--config-files", fixture("valid-master.yaml"), copy.string(),
                             "--runner-config", fixture("runners.yaml")});
  std::filesystem::remove(copy);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(
      result.err.find("config key 'tiny-fp8-h200-vllm' is already defined in " + fixture("valid-master.yaml") + ":2:1"),
      std::string::npos)
      << result.err;
}

TEST(Validate, MissingConfigFilesFlagIsAUsageError) {
  auto result = run_ixbench({"validate"});
  EXPECT_EQ(result.exit_code, 2);
}

}  // namespace
}  // namespace ix::testing
