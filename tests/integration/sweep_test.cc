// `ixbench sweep` through the real binary: the reference goldens byte for byte, and bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace ix::testing {
namespace {

std::string fixture(const std::string& name) {
  return source_path("tests/data/config/" + name);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(Sweep, FullSweepGoldenIsByteIdentical) {
  std::string golden = shared_path("data/inferencex/examples/full-sweep_amd_dsv4_atom_mi355x.json");
  std::string amd = shared_path("data/inferencex/amd-master.yaml");
  std::string runners = shared_path("data/inferencex/runners.yaml");
  if (golden.empty() || amd.empty() || runners.empty()) GTEST_SKIP() << shared_missing_message("data/inferencex/");
  auto result = run_ixbench({"sweep", "full-sweep", "--config-files", amd, "--runner-config", runners, "--model-prefix",
                             "dsv4", "--framework", "atom", "--runner-type", "mi355x"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, read_all(golden));
}

TEST(Sweep, TestConfigGoldenIsByteIdentical) {
  std::string golden = shared_path("data/inferencex/examples/test-config_dsv4-star_conc_4_8.json");
  std::string amd = shared_path("data/inferencex/amd-master.yaml");
  std::string nvidia = shared_path("data/inferencex/nvidia-master.yaml");
  std::string runners = shared_path("data/inferencex/runners.yaml");
  if (golden.empty() || amd.empty() || nvidia.empty() || runners.empty()) {
    GTEST_SKIP() << shared_missing_message("data/inferencex/");
  }
  auto result = run_ixbench({"sweep", "test-config", "--config-files", amd, nvidia, "--runner-config", runners,
                             "--config-keys", "dsv4*", "--conc", "4", "8"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, read_all(golden));
}

TEST(Sweep, FixtureSweepIsDeterministicJson) {
  std::vector<std::string> args{"sweep",           "full-sweep",
                                "--config-files",  fixture("valid-master.yaml"),
                                "--runner-config", fixture("runners.yaml"),
                                "--all-evals"};
  auto first = run_ixbench(args);
  auto second = run_ixbench(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, second.out);
  EXPECT_TRUE(first.out.starts_with("[{\"image\": "));
  EXPECT_TRUE(first.out.ends_with("}]\n"));
  EXPECT_NE(first.out.find("\"eval-all-concs\": true"), std::string::npos);
}

TEST(Sweep, InvalidConfigFailsWithTheValidationMessages) {
  auto result = run_ixbench({"sweep", "full-sweep", "--config-files", fixture("invalid-master.yaml"), "--runner-config",
                             fixture("runners.yaml")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.out.empty());
  EXPECT_NE(result.err.find(fixture("invalid-master.yaml") + ":16:30:"), std::string::npos) << result.err;
}

TEST(Sweep, GlobMatchingNothingIsAnError) {
  auto result = run_ixbench({"sweep", "test-config", "--config-files", fixture("valid-master.yaml"), "--runner-config",
                             fixture("runners.yaml"), "--config-keys", "nothing*"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("pattern 'nothing*' matched no config keys"), std::string::npos) << result.err;
}

TEST(Sweep, UnknownRunnerTypeIsAnError) {
  auto result = run_ixbench({"sweep", "full-sweep", "--config-files", fixture("valid-master.yaml"), "--runner-config",
                             fixture("runners.yaml"), "--runner-type", "h999"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("unknown runner type 'h999'"), std::string::npos) << result.err;
}

TEST(Sweep, MissingFilesAreErrors) {
  auto result = run_ixbench(
      {"sweep", "full-sweep", "--config-files", fixture("no-such.yaml"), "--runner-config", fixture("runners.yaml")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("no-such.yaml: file does not exist"), std::string::npos) << result.err;
}

TEST(Sweep, MissingRunnersFileNamesTheFlag) {
  // The default --runner-config is configs/runners.yaml relative to the current directory, which
  // this repository does not have; the error said only "file does not exist".
  const auto previous = std::filesystem::current_path();
  const auto empty = std::filesystem::temp_directory_path() / ("ixbench-sweep-" + std::to_string(::getpid()));
  std::filesystem::create_directories(empty);
  std::filesystem::current_path(empty);
  auto result = run_ixbench({"sweep", "full-sweep", "--config-files", fixture("valid-master.yaml")});
  auto explicit_path = run_ixbench({"sweep", "test-config", "--config-files", fixture("valid-master.yaml"),
                                    "--runner-config", "no-such-runners.yaml", "--config-keys", "tiny*"});
  std::filesystem::current_path(previous);
  std::filesystem::remove_all(empty);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_NE(result.err.find("configs/runners.yaml: file does not exist"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("pass --runner-config PATH"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("run from the root of an InferenceX checkout (it keeps the file at configs/runners.yaml)"),
            std::string::npos)
      << result.err;
  // InferenceX moved its configs from .github/configs/ to configs/.
  EXPECT_EQ(result.err.find(".github"), std::string::npos) << result.err;
  EXPECT_EQ(explicit_path.exit_code, 1);
  EXPECT_NE(explicit_path.err.find("no-such-runners.yaml: file does not exist"), std::string::npos)
      << explicit_path.err;
  EXPECT_NE(explicit_path.err.find("--runner-config"), std::string::npos) << explicit_path.err;
}

TEST(Sweep, AnEmptyRunnerNodeFilterIsNoFilter) {
  // CI workflows pass empty inputs; "" matched every node and multiplied the matrix (10 -> 100).
  std::vector<std::string> base{"sweep",           "full-sweep",
                                "--config-files",  fixture("valid-master.yaml"),
                                "--runner-config", fixture("runners.yaml")};
  auto plain = run_ixbench(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  base.insert(base.end(), {"--runner-node-filter", ""});
  auto empty = run_ixbench(base);
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(empty.out, plain.out);
}

TEST(Sweep, ANonFileOrHugeInputIsAClearError) {
  // /dev/zero was read without bound: "internal error: std::bad_alloc" with no file name.
  auto result = run_ixbench({"validate", "--config-files", "/dev/zero"}, "", 60.0);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("/dev/zero: larger than 64 MiB"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("internal error"), std::string::npos) << result.err;
}

TEST(Sweep, FlagConflictsAreUsageErrors) {
  std::vector<std::string> base{"sweep",           "full-sweep",
                                "--config-files",  fixture("valid-master.yaml"),
                                "--runner-config", fixture("runners.yaml")};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ixbench(args);
  };
  EXPECT_EQ(with({"--step-size", "1"}).exit_code, 2);
  EXPECT_EQ(with({"--min-conc", "8", "--max-conc", "4"}).exit_code, 2);
  EXPECT_EQ(with({"--no-evals", "--all-evals"}).exit_code, 2);
  EXPECT_EQ(with({"--no-evals", "--evals-only"}).exit_code, 2);
  EXPECT_EQ(with({"--seq-lens", "2k2k"}).exit_code, 2);
  EXPECT_EQ(with({"--scenario-type", "chat"}).exit_code, 2);
  EXPECT_EQ(with({"--max-conc", "many"}).exit_code, 2);
  auto result = with({"--step-size", "1"});
  EXPECT_NE(result.err.find("--step-size must be greater than 1"), std::string::npos) << result.err;
}

TEST(SweepCli, BoundsThatPlanNothingAreUsageErrors) {
  // The reference generator prints an empty matrix for these; a typo that plans nothing is an error.
  for (const char* flag : {"--min-conc", "--max-conc", "--max-tp", "--max-ep"}) {
    for (const char* value : {"0", "-4"}) {
      auto result = run_ixbench({"sweep", "full-sweep", "--config-files", fixture("valid-master.yaml"),
                                 "--runner-config", fixture("runners.yaml"), flag, value});
      EXPECT_EQ(result.exit_code, 2) << flag << " " << value << ": " << result.out;
      EXPECT_NE(result.err.find(std::string(flag) + " must be a positive integer, got " + value), std::string::npos)
          << result.err;
    }
  }
  auto result = run_ixbench({"sweep", "test-config", "--config-files", fixture("valid-master.yaml"), "--runner-config",
                             fixture("runners.yaml"), "--config-keys", "x", "--conc", "4", "0"});
  EXPECT_EQ(result.exit_code, 2) << result.out;
  EXPECT_NE(result.err.find("--conc values must be positive concurrencies, got 0"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace ix::testing
