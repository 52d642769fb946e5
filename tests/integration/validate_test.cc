// `ixbench validate` through the real binary: exit codes and the file:line:column messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

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

TEST(Validate, ValidFixtureExitsZero) {
  auto result = run_ixbench(
      {"validate", "--config-files", fixture("valid-master.yaml"), "--runner-config", fixture("runners.yaml")});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("ok: 3 config(s) in 1 file(s)"), std::string::npos) << result.out;
  EXPECT_TRUE(result.err.empty()) << result.err;
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
  auto result = run_ixbench({"validate", "--config-files", file});
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
