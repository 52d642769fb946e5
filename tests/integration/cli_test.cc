// The real ixbench binary: help, version, and the exit-code contract
// (0 ok, 1 failure, 2 usage error; never a crash).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "support/subprocess.h"

namespace ix::testing {
namespace {

size_t count_lines(const std::string& text) {
  size_t lines = 0;
  for (char c : text) lines += (c == '\n');
  return lines;
}

TEST(Cli, HelpListsUsageAndExitsZero) {
  auto result = run_ixbench({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("ixbench"), std::string::npos);
  EXPECT_NE(result.out.find("--log-level"), std::string::npos);
}

TEST(Cli, VersionPrintsVersionAndGitHash) {
  auto result = run_ixbench({"--version"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("ixbench 0."), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("(git "), std::string::npos) << result.out;
}

TEST(Cli, UnknownCommandIsOneLineUsageError) {
  auto result = run_ixbench({"frobnicate"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(count_lines(result.err), 1u) << result.err;
  EXPECT_NE(result.err.find("unknown command 'frobnicate'"), std::string::npos) << result.err;
}

TEST(Cli, UnknownFlagIsOneLineUsageError) {
  auto result = run_ixbench({"--no-such-flag"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(count_lines(result.err), 1u) << result.err;
  EXPECT_NE(result.err.find("--no-such-flag"), std::string::npos) << result.err;
}

TEST(Cli, UnknownOptionOfASubcommandNamesTheCommandAndTheOptionInOrder) {
  // CLI11 said "The following arguments were not expected: d.json --dataset-path" (last first, no
  // command).
  auto result = run_ixbench({"bench", "serve", "--model", "m", "--dataset-path", "d.json"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(count_lines(result.err), 1u) << result.err;
  EXPECT_NE(result.err.find("'ixbench bench serve' does not take --dataset-path d.json"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("'ixbench bench serve --help'"), std::string::npos) << result.err;
  auto nested = run_ixbench({"sim", "predict", "--tp", "8", "stray"});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_NE(nested.err.find("'ixbench sim predict' does not take stray"), std::string::npos) << nested.err;
}

TEST(Cli, ControlCharactersInArgumentsAreEscapedInUsageErrors) {
  // An argument holding ESC and a line break was echoed raw, forging a second line.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--x\x1b[31m\nixbench: ok"},
        std::vector<std::string>{"sim", "predict", "--tp", "8", "y\x1b[31m\nixbench: ok"},
        std::vector<std::string>{"sweep", "full-sweep", "--config-files", "a.yaml", "--seq-lens", "z\x1b\n"}}) {
    auto result = run_ixbench(args);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(count_lines(result.err), 1u) << result.err;
    EXPECT_EQ(result.err.find('\x1b'), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("\\x1b"), std::string::npos) << result.err;
  }
}

TEST(Cli, MissingCommandIsUsageError) {
  auto result = run_ixbench({"--log-level", "debug"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(count_lines(result.err), 1u) << result.err;
  EXPECT_NE(result.err.find("a command is required"), std::string::npos) << result.err;
}

TEST(Cli, NoArgumentsPrintsHelpAndUsageExit) {
  auto result = run_ixbench({});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.out.find("Usage"), std::string::npos) << result.out;
}

TEST(Cli, GarbageArgumentsNeverCrash) {
  const std::vector<std::vector<std::string>> cases = {
      {"--"}, {"-"}, {"--log-level"}, {"--version=3"}, {std::string(10000, 'x')}, {"\xff\xfe"}, {"-h", "-h"},
  };
  for (const auto& args : cases) {
    auto result = run_ixbench(args);
    EXPECT_EQ(result.signal, 0) << args.front();
    EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 2) << args.front() << " -> " << result.exit_code;
  }
}

TEST(Cli, OutOfRangePortsAreOneLineUsageErrors) {
  // sim serve's --port said only "Could not convert: --port = 70000"; bench serve's is checked
  // after parsing (exit 1). Neither may start anything. ("-1", "0x10", "abc": not whole numbers
  // >= 0, as for every unsigned option.)
  for (const std::string port : {"70000", "65536"}) {
    auto sim = run_ixbench({"sim", "serve", "--no-delay", "--tokenizer", "none", "--port", port}, "", 20.0);
    EXPECT_EQ(sim.exit_code, 2) << port << ": " << sim.err;
    EXPECT_EQ(count_lines(sim.err), 1u) << sim.err;
    EXPECT_NE(sim.err.find("--port: '" + port + "' is not a port number in [0, 65535]"), std::string::npos) << sim.err;
    EXPECT_EQ(sim.out.find("listening"), std::string::npos) << sim.out;
  }
  auto bench = run_ixbench({"bench", "serve", "--port", "70000", "--model", "m", "--tokenizer", "none"});
  EXPECT_EQ(bench.exit_code, 1) << bench.err;
  EXPECT_NE(bench.err.find("--port must be in [1, 65535], got 70000"), std::string::npos) << bench.err;
}

TEST(Cli, ValuesAnOptionsTypeCannotHoldSayWhatItTakes) {
  // CLI11 said only "Could not convert: --tp = abc".
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"sim", "predict", "--tp", "abc"}, "--tp: 'abc' is not a whole number"},
      {{"sim", "predict", "--tp", "99999999999999999999"}, "--tp: '99999999999999999999' is out of range"},
      {{"sim", "predict", "--tp", "4294967296"}, "--tp: '4294967296' is out of range for this option (default 1)"},
      {{"sim", "serve", "--port", "-1"}, "--port: '-1' is not a whole number >= 0"},
      {{"sim", "predict", "--isl", "1e3"}, "--isl: '1e3' is not a whole number"},
      {{"sim", "serve", "--acceptance-length", "x"}, "--acceptance-length: 'x' is not a number"},
  };
  for (const auto& [args, expected] : cases) {
    auto result = run_ixbench(args);
    EXPECT_EQ(result.exit_code, 2) << args[2] << " " << args[3] << ": " << result.err;
    EXPECT_EQ(count_lines(result.err), 1u) << result.err;
    EXPECT_NE(result.err.find(expected), std::string::npos) << result.err;
  }
}

TEST(Cli, EveryIntegerOptionReadsDecimalAndRefusesOverflow) {
  // Each command's integer options, not only those a command remembered to check: CLI11 read
  // "010" as octal 8 and saturated an int64 option at 2^63-1 ("got 9223372036854775807").
  auto timeout = run_ixbench({"sim", "serve", "--no-delay", "--tokenizer", "none", "--port", "0",
                              "--request-timeout-ms", "99999999999999999999"},
                             "", 20.0);
  EXPECT_EQ(timeout.exit_code, 2) << timeout.err;
  EXPECT_NE(timeout.err.find("--request-timeout-ms: '99999999999999999999' is out of range for this option"),
            std::string::npos)
      << timeout.err;
  EXPECT_EQ(timeout.out.find("listening"), std::string::npos);
  auto seed = run_ixbench({"sim", "predict", "--tp", "8", "--isl", "16", "--osl", "4", "--conc", "1", "--seed", "010"});
  ASSERT_EQ(seed.exit_code, 0) << seed.err;
  EXPECT_NE(seed.out.find("\"seed\": 10,"), std::string::npos) << seed.out.substr(0, 2000);
}

}  // namespace
}  // namespace ix::testing
