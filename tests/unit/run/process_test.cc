#include "run/process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "support/temp_files.h"

namespace ix::run {
namespace {

namespace fs = std::filesystem;

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

TEST(ChildProcess, ReportsTheExitCodeAndWritesItsOutputToTheLog) {
  const fs::path dir = ix::testing::scratch_dir("process_exit");
  auto status =
      run_to_completion({{"sh", "-c", "echo out; echo err >&2; exit 3"}, {{"IX_X", "1"}}, dir / "log", {}, {}});
  ASSERT_TRUE(status) << status.error().message();
  EXPECT_EQ(status->code, 3);
  EXPECT_EQ(status->describe(), "exit 3");
  EXPECT_EQ(ix::testing::read_whole_file(dir / "log"), "out\nerr\n");
}

TEST(ChildProcess, SetsTheGivenEnvironmentOverTheInheritedOne) {
  const fs::path dir = ix::testing::scratch_dir("process_env");
  ::setenv("IX_PROCESS_TEST", "inherited", 1);
  auto status = run_to_completion({{"sh", "-c", "echo $IX_PROCESS_TEST $IX_OTHER"},
                                   {{"IX_PROCESS_TEST", "given"}, {"IX_OTHER", "x"}},
                                   {},
                                   dir / "out",
                                   {}});
  ASSERT_TRUE(status && status->ok());
  EXPECT_EQ(ix::testing::read_whole_file(dir / "out"), "given x\n");
}

TEST(ChildProcess, AProgramThatCannotStartIsAnErrorNamingIt) {
  auto child = ChildProcess::spawn({{"/nonexistent/engine-server"}, {}, {}, {}, {}});
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(child.error().message().find("cannot start '/nonexistent/engine-server'"), std::string::npos);
}

TEST(ChildProcess, StopReachesTheWholeGroupAndEscalatesToSigkill) {
  const fs::path dir = ix::testing::scratch_dir("process_group");
  // A leader that ignores SIGTERM, with a background member that writes its pid.
  auto child = ChildProcess::spawn(
      {{"sh", "-c", "trap '' TERM; sleep 300 & echo $! > " + (dir / "member").string() + "; wait"}, {}, {}, {}, {}});
  ASSERT_TRUE(child);
  for (int i = 0; i < 100 && !fs::exists(dir / "member"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  pid_t member = std::stoi(ix::testing::read_whole_file(dir / "member"));
  ASSERT_TRUE(alive(member));
  auto began = std::chrono::steady_clock::now();
  ExitStatus status = child->stop(0.5);
  EXPECT_EQ(status.signal, SIGKILL) << status.describe();
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
  for (int i = 0; i < 100 && alive(member); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(alive(member)) << "the group member outlived the stop";
}

TEST(ChildProcess, RunToCompletionStopsAChildPastItsTimeout) {
  auto status = run_to_completion({{"sleep", "30"}, {}, {}, {}, {}}, 0.2);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code(), ErrorCode::kTimeout);
}

TEST(ShellCommand, QuotesOnlyWordsThatNeedIt) {
  EXPECT_EQ(shell_command({"ixbench", "run", "--config-keys", "dsr1*", "it's"}),
            "ixbench run --config-keys 'dsr1*' 'it'\\''s'");
}

TEST(TailFile, KeepsTheLastLines) {
  const fs::path dir = ix::testing::scratch_dir("process_tail");
  std::ofstream(dir / "log") << "1\n2\n3\n4\n";
  EXPECT_EQ(tail_file(dir / "log", 2), "3\n4\n");
  EXPECT_EQ(tail_file(dir / "missing", 2), "");
}

TEST(FreeLocalPort, GivesABindablePort) {
  auto port = free_local_port();
  ASSERT_TRUE(port);
  EXPECT_GT(*port, 0);
}

}  // namespace
}  // namespace ix::run
