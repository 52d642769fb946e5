#include "common/subprocess.h"

#include <gtest/gtest.h>

#include <chrono>

namespace ix {
namespace {

using namespace std::chrono_literals;

TEST(Subprocess, CapturesStdoutStderrAndTheExitStatus) {
  auto ran = run_subprocess({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(ran) << ran.error().to_string();
  EXPECT_EQ(ran->exit_code, 3);
  EXPECT_EQ(ran->signal, 0);
  EXPECT_FALSE(ran->timed_out);
  EXPECT_FALSE(ran->succeeded());
  EXPECT_EQ(ran->out, "out\n");
  EXPECT_EQ(ran->err, "err\n");
  EXPECT_EQ(ran->describe_end(), "exit status 3");
}

TEST(Subprocess, PassesArgumentsWithoutAShell) {
  auto ran = run_subprocess({"printf", "%s|", "a b", "$HOME", "'q'"});
  ASSERT_TRUE(ran) << ran.error().to_string();
  EXPECT_TRUE(ran->succeeded());
  EXPECT_EQ(ran->out, "a b|$HOME|'q'|");
}

TEST(Subprocess, SetsEnvironmentOnTopOfOurs) {
  auto ran = run_subprocess({"sh", "-c", "echo \"$IX_A|$IX_B|${PATH:+path}\""},
                            {.environment = {{"IX_A", "one, two"}, {"IX_B", "x"}, {"IX_B", "y=z"}}});
  ASSERT_TRUE(ran) << ran.error().to_string();
  EXPECT_EQ(ran->out, "one, two|y=z|path\n");
}

TEST(Subprocess, StdinIsEmpty) {
  auto ran = run_subprocess({"cat"});
  ASSERT_TRUE(ran) << ran.error().to_string();
  EXPECT_TRUE(ran->succeeded());
  EXPECT_EQ(ran->out, "");
}

TEST(Subprocess, KillsAProgramThatRunsPastTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  auto ran = run_subprocess({"sleep", "30"}, {.timeout = 200ms});
  ASSERT_TRUE(ran) << ran.error().to_string();
  EXPECT_TRUE(ran->timed_out);
  EXPECT_EQ(ran->signal, 9);
  EXPECT_FALSE(ran->succeeded());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(Subprocess, ReportsTheSignalThatEndedIt) {
  auto ran = run_subprocess({"sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(ran) << ran.error().to_string();
  EXPECT_EQ(ran->exit_code, -1);
  EXPECT_EQ(ran->signal, 15);
  EXPECT_NE(ran->describe_end().find("signal 15"), std::string::npos);
}

TEST(Subprocess, ReadsLargeOutputOnBothPipesAndCapsWhatItKeeps) {
  auto ran = run_subprocess({"sh", "-c", "head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2"},
                            {.max_output_bytes = 1000000});
  ASSERT_TRUE(ran) << ran.error().to_string();
  EXPECT_TRUE(ran->succeeded());
  EXPECT_EQ(ran->out.size(), 1000000u);
  EXPECT_EQ(ran->err.size(), 1000000u);
}

TEST(Subprocess, AProgramNotOnPathIsNotFound) {
  auto ran = run_subprocess({"ixbench-no-such-program"});
  ASSERT_FALSE(ran);
  EXPECT_EQ(ran.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(ran.error().message().find("'ixbench-no-such-program' is not an executable program on PATH"),
            std::string::npos);
  EXPECT_EQ(find_program("ixbench-no-such-program"), "");
  EXPECT_EQ(find_program("/bin/sh"), "/bin/sh");
  EXPECT_NE(find_program("sh"), "");
}

}  // namespace
}  // namespace ix
