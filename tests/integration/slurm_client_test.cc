// The Slurm client (src/run/slurm.h) against a real Slurm cluster: the one-node cluster that
// scripts/start-slurm.sh starts and announces with IXBENCH_TEST_SLURM=1 (scripts/test.sh does;
// skipped without it). Job arrays whose tasks write files into a shared folder, per-task states
// and exit codes, steps under srun, cancelling, sbatch's refusals, and a job no source knows.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "run/slurm.h"
#include "support/temp_files.h"

namespace ix::run {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kSlurmVariable = "IXBENCH_TEST_SLURM";

std::string slurm_skip_message() {
  return std::string("Slurm is not running for the tests (") + kSlurmVariable +
         " is not set): start a one-node cluster with `eval \"$(scripts/start-slurm.sh)\"` as root "
         "(scripts/test.sh does)";
}

fs::path write_script(const fs::path& dir, const std::string& name, const std::string& body) {
  const fs::path path = dir / name;
  std::ofstream(path) << "#!/bin/sh\n" << body;
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

std::string describe(const std::vector<SlurmTaskState>& states) {
  std::string text;
  for (const auto& state : states) {
    text += std::to_string(state.array_task.value_or(0)) + ":" + std::string(slurm_state_name(state.state)) + "(" +
            state.slurm_state + "," + std::string(slurm_source_name(state.source)) + ") ";
  }
  return text;
}

class SlurmClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* flag = std::getenv(kSlurmVariable);
    if (flag == nullptr || *flag == '\0') GTEST_SKIP() << slurm_skip_message();
    // The variable says a cluster was started and ran a job: not answering now is a failure.
    auto checked = client_.check();
    ASSERT_TRUE(checked) << checked.error().to_string();
    dir_ =
        testing::scratch_dir("slurm_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }

  // Polls until every task ended (or `deadline`); the last answer.
  std::vector<SlurmTaskState> wait_for_end(const SlurmJobId& job, std::chrono::seconds deadline = 120s) {
    const auto until = std::chrono::steady_clock::now() + deadline;
    std::vector<SlurmTaskState> states;
    while (std::chrono::steady_clock::now() < until) {
      auto polled = client_.poll(job);
      EXPECT_TRUE(polled) << polled.error().to_string();
      if (!polled) return {};
      states = std::move(*polled);
      if (std::all_of(states.begin(), states.end(), [](const auto& s) { return is_terminal(s.state); })) break;
      std::this_thread::sleep_for(200ms);
    }
    return states;
  }

  // Polls until `want` (or `deadline`); whether it came.
  bool wait_for_state(const SlurmJobId& job, SlurmState want, std::chrono::seconds deadline = 60s) {
    const auto until = std::chrono::steady_clock::now() + deadline;
    while (std::chrono::steady_clock::now() < until) {
      auto polled = client_.poll(job);
      if (polled && !polled->empty() && (*polled)[0].state == want) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  SlurmClient client_;
  fs::path dir_;
};

TEST_F(SlurmClientTest, ArrayTasksWriteFilesAndReportTheirOwnExitCodes) {
  BatchSubmission job;
  job.script = write_script(dir_, "task.sh",
                            "echo \"task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT: $IXBENCH_TEST_VALUE\" "
                            "> \"$IXBENCH_TEST_DIR/task_$SLURM_ARRAY_TASK_ID.txt\"\n"
                            "sleep 1\n"
                            "[ \"$SLURM_ARRAY_TASK_ID\" = 1 ] && exit 3\n"
                            "exit 0\n");
  job.job_name = "ixbench-test-array";
  job.array_size = 3;
  job.output_pattern = (dir_ / "%A_%a.out").string();
  job.working_dir = dir_;
  job.time_limit = 5min;
  job.environment = {{"IXBENCH_TEST_DIR", dir_.string()}, {"IXBENCH_TEST_VALUE", "a, b=c 'd'"}};
  auto submitted = client_.submit(job);
  ASSERT_TRUE(submitted) << submitted.error().to_string();
  EXPECT_EQ(submitted->array_size, 3u);

  // Right after sbatch the controller knows every task.
  auto first = client_.poll(*submitted);
  ASSERT_TRUE(first) << first.error().to_string();
  ASSERT_EQ(first->size(), 3u);
  for (const auto& state : *first) EXPECT_NE(state.state, SlurmState::kUnknown) << describe(*first);

  const auto states = wait_for_end(*submitted);
  ASSERT_EQ(states.size(), 3u) << describe(states);
  const std::vector<SlurmState> want_states = {SlurmState::kCompleted, SlurmState::kFailed, SlurmState::kCompleted};
  for (std::uint32_t index = 0; index < 3; ++index) {
    const auto& state = states[index];
    EXPECT_EQ(state.job_id, submitted->id);
    EXPECT_EQ(state.array_task, index);
    EXPECT_EQ(state.state, want_states[index]) << describe(states);
    EXPECT_EQ(state.exit_code, index == 1 ? 3 : 0) << describe(states);
    EXPECT_EQ(state.signal, 0);
    EXPECT_NE(state.source, SlurmSource::kNone);
    EXPECT_EQ(testing::read_whole_file(dir_ / ("task_" + std::to_string(index) + ".txt")),
              "task " + std::to_string(index) + " of 3: a, b=c 'd'\n");
    EXPECT_TRUE(fs::exists(dir_ / (std::to_string(submitted->id) + "_" + std::to_string(index) + ".out")));
  }
}

TEST_F(SlurmClientTest, ALongJobCancelledEndsCancelled) {
  BatchSubmission job;
  job.script = write_script(dir_, "long.sh", "echo started > \"$IXBENCH_TEST_DIR/started\"\nsleep 300\n");
  job.job_name = "ixbench-test-long";
  job.output_pattern = (dir_ / "%j.out").string();
  job.time_limit = 10min;
  job.environment = {{"IXBENCH_TEST_DIR", dir_.string()}};
  auto submitted = client_.submit(job);
  ASSERT_TRUE(submitted) << submitted.error().to_string();
  EXPECT_EQ(submitted->array_size, 0u);
  ASSERT_TRUE(wait_for_state(*submitted, SlurmState::kRunning)) << "the job never ran";

  auto cancelled = client_.cancel(*submitted);
  ASSERT_TRUE(cancelled) << cancelled.error().to_string();
  const auto states = wait_for_end(*submitted, 60s);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].state, SlurmState::kCancelled) << describe(states);
  EXPECT_FALSE(states[0].array_task);
  EXPECT_EQ(states[0].slurm_state, "CANCELLED");
  EXPECT_EQ(testing::read_whole_file(dir_ / "started"), "started\n");
  // Cancelling a job that already ended is not an error.
  auto again = client_.cancel(*submitted);
  EXPECT_TRUE(again) << again.error().to_string();
}

TEST_F(SlurmClientTest, StepsUnderSrunRunEachTaskOfTheAllocation) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs a node of 2 CPUs";
  BatchSubmission job;
  job.script =
      write_script(dir_, "steps.sh", "srun sh -c 'echo rank $SLURM_PROCID' | sort > \"$IXBENCH_TEST_DIR/ranks\"\n");
  job.job_name = "ixbench-test-steps";
  job.ntasks = 2;
  job.output_pattern = (dir_ / "%j.out").string();
  job.time_limit = 5min;
  job.environment = {{"IXBENCH_TEST_DIR", dir_.string()}};
  auto submitted = client_.submit(job);
  ASSERT_TRUE(submitted) << submitted.error().to_string();
  const auto states = wait_for_end(*submitted);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(states[0].state, SlurmState::kCompleted)
      << describe(states) << testing::read_whole_file(dir_ / (std::to_string(submitted->id) + ".out"));
  EXPECT_EQ(testing::read_whole_file(dir_ / "ranks"), "rank 0\nrank 1\n");
}

TEST_F(SlurmClientTest, SbatchRefusalsComeBackWithSlurmsMessage) {
  BatchSubmission job;
  job.script = write_script(dir_, "noop.sh", "true\n");
  job.job_name = "ixbench-test-refused";
  job.partition = "ixbench-no-such-partition";
  auto submitted = client_.submit(job);
  ASSERT_FALSE(submitted);
  EXPECT_EQ(submitted.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(submitted.error().message().find("sbatch of job 'ixbench-test-refused' failed (exit status 1)"),
            std::string::npos)
      << submitted.error().message();
  EXPECT_NE(submitted.error().message().find("invalid partition"), std::string::npos) << submitted.error().message();
}

TEST_F(SlurmClientTest, AJobNoSourceKnowsIsUnknown) {
  auto polled = client_.poll({.id = 60000000, .array_size = 2});
  ASSERT_TRUE(polled) << polled.error().to_string();
  ASSERT_EQ(polled->size(), 2u);
  for (const auto& state : *polled) {
    EXPECT_EQ(state.state, SlurmState::kUnknown);
    EXPECT_EQ(state.source, SlurmSource::kNone);
    EXPECT_FALSE(state.exit_code);
  }
  EXPECT_TRUE(slurm_available());
}

}  // namespace
}  // namespace ix::run
