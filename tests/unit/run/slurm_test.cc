// The Slurm client's pure parts on output captured from Slurm 22.05 (tests/data/slurm/): squeue
// and scontrol from the one-node cluster scripts/start-slurm.sh starts, sacct from the same
// cluster with slurmdbd (MariaDB) accounting turned on for the capture; sbatch's command line; the
// rule that merges the sources of a job's state.
#include "run/slurm.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::run {
namespace {

using namespace std::chrono_literals;

std::string captured(const std::string& name) {
  return testing::read_whole_file(testing::source_path("tests/data/slurm/" + name));
}

SlurmTaskState task(std::uint64_t job, std::optional<std::uint32_t> index, SlurmState state, SlurmSource source,
                    std::string slurm_state, std::optional<int> exit_code = std::nullopt, int signal = 0,
                    std::string reason = "") {
  return {.job_id = job,
          .array_task = index,
          .state = state,
          .slurm_state = std::move(slurm_state),
          .reason = std::move(reason),
          .exit_code = exit_code,
          .signal = signal,
          .source = source};
}

TEST(SlurmParse, SqueueListsEachArrayTaskOfAMixedArray) {
  // squeue -h -r -j 5 -o '%i|%T|%r': five tasks of `sleep 30` on two CPUs.
  auto states = parse_squeue(captured("squeue_mixed.txt"));
  ASSERT_TRUE(states) << states.error().to_string();
  const std::vector<SlurmTaskState> want = {
      task(5, 2, SlurmState::kPending, SlurmSource::kSqueue, "PENDING", std::nullopt, 0, "Resources"),
      task(5, 3, SlurmState::kPending, SlurmSource::kSqueue, "PENDING", std::nullopt, 0, "Resources"),
      task(5, 4, SlurmState::kPending, SlurmSource::kSqueue, "PENDING", std::nullopt, 0, "Resources"),
      task(5, 1, SlurmState::kRunning, SlurmSource::kSqueue, "RUNNING"),
      task(5, 0, SlurmState::kRunning, SlurmSource::kSqueue, "RUNNING"),
  };
  EXPECT_EQ(*states, want);
}

TEST(SlurmParse, SqueueExpandsAPendingRangeAndReadsAPlainJob) {
  auto states = parse_squeue("12_[3-4%1]|PENDING|JobArrayTaskLimit\n13|COMPLETING|None\n\n");
  ASSERT_TRUE(states) << states.error().to_string();
  ASSERT_EQ(states->size(), 3u);
  EXPECT_EQ((*states)[0].array_task, 3u);
  EXPECT_EQ((*states)[1].array_task, 4u);
  EXPECT_EQ((*states)[1].reason, "JobArrayTaskLimit");
  EXPECT_EQ((*states)[2], task(13, std::nullopt, SlurmState::kRunning, SlurmSource::kSqueue, "COMPLETING"));
  EXPECT_TRUE(parse_squeue("")->empty());
}

TEST(SlurmParse, SqueueRefusesALineOfAnotherFormat) {
  auto states = parse_squeue("JOBID PARTITION NAME\n");
  ASSERT_FALSE(states);
  EXPECT_EQ(states.error().code(), ErrorCode::kParse);
  EXPECT_NE(states.error().message().find("squeue printed a line this client cannot read: 'JOBID PARTITION NAME'"),
            std::string::npos);
}

TEST(SlurmParse, ScontrolGivesExitCodesOfAFinishedArray) {
  // scontrol -o show job 2: tasks 0..2 of a script where task 1 exits 3.
  auto states = parse_scontrol_jobs(captured("scontrol_done.txt"));
  ASSERT_TRUE(states) << states.error().to_string();
  const std::vector<SlurmTaskState> want = {
      task(2, 2, SlurmState::kCompleted, SlurmSource::kScontrol, "COMPLETED", 0),
      task(2, 1, SlurmState::kFailed, SlurmSource::kScontrol, "FAILED", 3, 0, "NonZeroExitCode"),
      task(2, 0, SlurmState::kCompleted, SlurmSource::kScontrol, "COMPLETED", 0),
  };
  EXPECT_EQ(*states, want);
}

TEST(SlurmParse, ScontrolExpandsTheRecordOfPendingTasks) {
  // The array's own record stands for its tasks not yet started: ArrayTaskId=2-4.
  auto states = parse_scontrol_jobs(captured("scontrol_pending.txt"));
  ASSERT_TRUE(states) << states.error().to_string();
  ASSERT_EQ(states->size(), 5u);
  for (int index = 0; index < 3; ++index) {
    EXPECT_EQ((*states)[index], task(5, 2 + index, SlurmState::kPending, SlurmSource::kScontrol, "PENDING",
                                     std::nullopt, 0, "Resources"));
  }
  EXPECT_EQ((*states)[3], task(5, 1, SlurmState::kRunning, SlurmSource::kScontrol, "RUNNING"));
  EXPECT_EQ((*states)[4], task(5, 0, SlurmState::kRunning, SlurmSource::kScontrol, "RUNNING"));
}

TEST(SlurmParse, ScontrolShowsCancelledTasksAndTheirSignals) {
  // Task 1 cancelled alone, then the whole array: running tasks end by SIGTERM (task 0's shell
  // reported 143), pending ones never ran.
  auto states = parse_scontrol_jobs(captured("scontrol_cancelled.txt"));
  ASSERT_TRUE(states) << states.error().to_string();
  const std::vector<SlurmTaskState> want = {
      task(5, 3, SlurmState::kCancelled, SlurmSource::kScontrol, "CANCELLED", 0, 0, "Resources"),
      task(5, 4, SlurmState::kCancelled, SlurmSource::kScontrol, "CANCELLED", 0, 0, "Resources"),
      task(5, 2, SlurmState::kCancelled, SlurmSource::kScontrol, "CANCELLED", 0, 15),
      task(5, 1, SlurmState::kCancelled, SlurmSource::kScontrol, "CANCELLED", 0, 15),
      task(5, 0, SlurmState::kCancelled, SlurmSource::kScontrol, "CANCELLED", 143, 0),
  };
  EXPECT_EQ(*states, want);
}

TEST(SlurmParse, ScontrolReadsAJobThatIsNoArray) {
  auto states = parse_scontrol_jobs(captured("scontrol_single.txt"));
  ASSERT_TRUE(states) << states.error().to_string();
  const std::vector<SlurmTaskState> want = {
      task(9, std::nullopt, SlurmState::kFailed, SlurmSource::kScontrol, "FAILED", 7, 0, "NonZeroExitCode")};
  EXPECT_EQ(*states, want);
}

TEST(SlurmParse, ScontrolReadsTheMultiLineFormToo) {
  auto states = parse_scontrol_jobs(
      "JobId=40 ArrayJobId=40 ArrayTaskId=1 JobName=a b\n   UserId=root(0) JobState=TIMEOUT Reason=TimeLimit\n"
      "   ExitCode=0:1\n\nJobId=41 JobName=x\n   JobState=OUT_OF_MEMORY Reason=OutOfMemory ExitCode=0:125\n");
  ASSERT_TRUE(states) << states.error().to_string();
  ASSERT_EQ(states->size(), 2u);
  EXPECT_EQ((*states)[0], task(40, 1, SlurmState::kTimeout, SlurmSource::kScontrol, "TIMEOUT", 0, 1, "TimeLimit"));
  EXPECT_EQ((*states)[1], task(41, std::nullopt, SlurmState::kOutOfMemory, SlurmSource::kScontrol, "OUT_OF_MEMORY", 0,
                               125, "OutOfMemory"));
}

TEST(SlurmParse, SacctReadsAllocationsAndSkipsSteps) {
  // sacct -n -P -j 28,35 -o JobID,State,ExitCode (without -X: the batch steps too).
  auto states = parse_sacct(captured("sacct_steps.txt"));
  ASSERT_TRUE(states) << states.error().to_string();
  const std::vector<SlurmTaskState> want = {
      task(28, 0, SlurmState::kCompleted, SlurmSource::kSacct, "COMPLETED", 0),
      task(28, 1, SlurmState::kFailed, SlurmSource::kSacct, "FAILED", 3),
      task(28, 2, SlurmState::kCompleted, SlurmSource::kSacct, "COMPLETED", 0),
      task(35, std::nullopt, SlurmState::kFailed, SlurmSource::kSacct, "FAILED", 7),
  };
  EXPECT_EQ(*states, want);
  EXPECT_FALSE(parse_sacct("7_0|COMPLETED|zero\n"));
}

TEST(SlurmParse, SacctOfCancelledTasksKeepsTheStaleRangeRecord) {
  // sacct -n -P -X -j 28,29: array 29 (five `sleep 30` on two CPUs) cancelled task 1 first, then
  // whole. Cancelled allocations show exit code 0:0, and the array's own record still names the
  // range it had when pending (29_[2-4]) although task 2 had started by then.
  auto states = parse_sacct(captured("sacct_done.txt"));
  ASSERT_TRUE(states) << states.error().to_string();
  ASSERT_EQ(states->size(), 9u);
  EXPECT_EQ((*states)[1], task(28, 1, SlurmState::kFailed, SlurmSource::kSacct, "FAILED", 3));
  for (size_t index = 3; index < 9; ++index) {
    EXPECT_EQ((*states)[index].state, SlurmState::kCancelled);
    EXPECT_EQ((*states)[index].exit_code, 0);
    EXPECT_EQ((*states)[index].slurm_state, "CANCELLED");
  }
  EXPECT_EQ((*states)[5].array_task, 2u);
  EXPECT_EQ((*states)[6].array_task, 2u);
  const auto merged = merge_task_states({.id = 29, .array_size = 5}, {{}, *states});
  ASSERT_EQ(merged.size(), 5u);
  for (const auto& state : merged) EXPECT_EQ(state.state, SlurmState::kCancelled);
}

TEST(SlurmParse, SacctLaggingBehindTheController) {
  // Seconds after slurmctld started tasks 0 and 1, sacct lists them running and the array's own
  // record still as 28_[0-2] pending: live states come from squeue, never from here.
  auto states = parse_sacct(captured("sacct_lagging.txt"));
  ASSERT_TRUE(states) << states.error().to_string();
  ASSERT_EQ(states->size(), 10u);
  const auto merged = merge_task_states({.id = 28, .array_size = 3}, {{}, *states});
  EXPECT_EQ(merged[0].state, SlurmState::kRunning);
  EXPECT_EQ(merged[1].state, SlurmState::kRunning);
  EXPECT_EQ(merged[2].state, SlurmState::kPending);
}

TEST(SlurmParse, StateWords) {
  EXPECT_EQ(slurm_state_from_text("CANCELLED by 1000"), SlurmState::kCancelled);
  EXPECT_EQ(slurm_state_from_text("CANCELLED+"), SlurmState::kCancelled);
  EXPECT_EQ(slurm_state_from_text("CONFIGURING"), SlurmState::kPending);
  EXPECT_EQ(slurm_state_from_text("DEADLINE"), SlurmState::kTimeout);
  EXPECT_EQ(slurm_state_from_text("BOOT_FAIL"), SlurmState::kFailed);
  EXPECT_EQ(slurm_state_from_text("SOMETHING_NEW"), SlurmState::kUnknown);
  EXPECT_EQ(slurm_state_from_text(""), SlurmState::kUnknown);
  EXPECT_TRUE(is_terminal(SlurmState::kCancelled));
  EXPECT_FALSE(is_terminal(SlurmState::kRunning));
  EXPECT_FALSE(is_terminal(SlurmState::kUnknown));
  EXPECT_EQ(slurm_state_name(SlurmState::kOutOfMemory), "OUT_OF_MEMORY");
}

TEST(SlurmParse, ArrayTaskLists) {
  EXPECT_EQ(*parse_array_tasks("3"), (std::vector<std::uint32_t>{3}));
  EXPECT_EQ(*parse_array_tasks("0-4%2"), (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(*parse_array_tasks("1,3,5-7"), (std::vector<std::uint32_t>{1, 3, 5, 6, 7}));
  EXPECT_EQ(*parse_array_tasks("0-9:4"), (std::vector<std::uint32_t>{0, 4, 8}));
  for (const char* bad : {"", "4-2", "a", "1-", "0-3:0", "0-99999999"}) {
    auto parsed = parse_array_tasks(bad);
    EXPECT_FALSE(parsed) << bad;
    if (!parsed) {
      EXPECT_EQ(parsed.error().code(), ErrorCode::kParse);
    }
  }
  auto id = parse_job_id("5_[2-4]");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->job_id, 5u);
  EXPECT_EQ(*id->tasks, (std::vector<std::uint32_t>{2, 3, 4}));
  EXPECT_FALSE(parse_job_id("9")->tasks);
  EXPECT_FALSE(parse_job_id("x_1"));
  EXPECT_EQ(*parse_exit_code("3:0"), std::pair(3, 0));
  EXPECT_EQ(*parse_exit_code("0:15"), std::pair(0, 15));
  EXPECT_FALSE(parse_exit_code("3:"));
}

TEST(SlurmParse, SbatchParsable) {
  EXPECT_EQ(*parse_sbatch_parsable("123\n"), 123u);
  EXPECT_EQ(*parse_sbatch_parsable("77;ixbench\n"), 77u);
  auto bad = parse_sbatch_parsable("sbatch: Submitted batch job 5\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("not a job id"), std::string::npos);
}

TEST(SlurmMerge, AJobNoSourceKnowsIsUnknownNeverDone) {
  const auto merged = merge_task_states({.id = 40, .array_size = 2}, {{}, {}});
  ASSERT_EQ(merged.size(), 2u);
  for (std::uint32_t index = 0; index < 2; ++index) {
    EXPECT_EQ(merged[index], (SlurmTaskState{.job_id = 40, .array_task = index}));
  }
  const auto single = merge_task_states({.id = 41}, {{}, {}, {}});
  EXPECT_EQ(single, (std::vector<SlurmTaskState>{{.job_id = 41}}));
}

TEST(SlurmMerge, LiveStateWinsThenTheFirstTerminalState) {
  const SlurmJobId job{.id = 5, .array_size = 4};
  const std::vector<SlurmTaskState> live = {task(5, 0, SlurmState::kRunning, SlurmSource::kSqueue, "RUNNING"),
                                            task(6, 1, SlurmState::kRunning, SlurmSource::kSqueue, "RUNNING")};
  // sacct lags: it still says task 1 runs, and it knows task 0's earlier run as failed.
  const std::vector<SlurmTaskState> accounted = {task(5, 0, SlurmState::kFailed, SlurmSource::kSacct, "FAILED", 1),
                                                 task(5, 1, SlurmState::kRunning, SlurmSource::kSacct, "RUNNING"),
                                                 task(5, 2, SlurmState::kRunning, SlurmSource::kSacct, "RUNNING")};
  const std::vector<SlurmTaskState> shown = {
      task(5, 1, SlurmState::kCompleted, SlurmSource::kScontrol, "COMPLETED", 0)};
  const auto merged = merge_task_states(job, {live, accounted, shown});
  ASSERT_EQ(merged.size(), 4u);
  EXPECT_EQ(merged[0], live[0]);
  EXPECT_EQ(merged[1], shown[0]);
  EXPECT_EQ(merged[2], accounted[2]);
  EXPECT_EQ(merged[3], (SlurmTaskState{.job_id = 5, .array_task = 3}));
}

TEST(SlurmMerge, AnIdOfUnknownSizeReturnsWhatIsListed) {
  const auto merged = merge_task_states({.id = 2}, {{}, {}, *parse_scontrol_jobs(captured("scontrol_done.txt"))});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].array_task, 0u);
  EXPECT_EQ(merged[1].exit_code, 3);
  EXPECT_EQ(merged[2].state, SlurmState::kCompleted);
}

class SlurmSubmission : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::scratch_dir("slurm_submission");
    std::ofstream(dir_ / "job.sh") << "#!/bin/sh\ntrue\n";
    job_.script = dir_ / "job.sh";
    job_.job_name = "ixbench-bucket-1";
  }
  std::filesystem::path dir_;
  BatchSubmission job_;
};

TEST_F(SlurmSubmission, EveryFieldBecomesAnSbatchOption) {
  job_.script_args = {"--row", "a b"};
  job_.array_size = 3;
  job_.array_max_running = 2;
  job_.nodes = 2;
  job_.ntasks = 4;
  job_.cpus_per_task = 8;
  job_.partition = "gpu";
  job_.output_pattern = "/shared/logs/%A_%a.out";
  job_.error_pattern = "/shared/logs/%A_%a.err";
  job_.working_dir = dir_;
  job_.time_limit = 26h + 90s;
  auto args = sbatch_arguments(job_);
  ASSERT_TRUE(args) << args.error().to_string();
  const std::vector<std::string> want = {"--parsable",
                                         "--job-name=ixbench-bucket-1",
                                         "--export=ALL",
                                         "--nodes=2",
                                         "--ntasks=4",
                                         "--cpus-per-task=8",
                                         "--array=0-2%2",
                                         "--partition=gpu",
                                         "--output=/shared/logs/%A_%a.out",
                                         "--error=/shared/logs/%A_%a.err",
                                         "--chdir=" + dir_.string(),
                                         "--time=1-02:01:30",
                                         job_.script.string(),
                                         "--row",
                                         "a b"};
  EXPECT_EQ(*args, want);
}

TEST_F(SlurmSubmission, DefaultsGiveAPlainJob) {
  auto args = sbatch_arguments(job_);
  ASSERT_TRUE(args) << args.error().to_string();
  const std::vector<std::string> want = {"--parsable", "--job-name=ixbench-bucket-1", "--export=ALL",      "--nodes=1",
                                         "--ntasks=1", "--cpus-per-task=1",           job_.script.string()};
  EXPECT_EQ(*args, want);
}

TEST_F(SlurmSubmission, RefusesWhatSbatchWouldMisread) {
  const auto refused = [&](BatchSubmission job, const std::string& message) {
    auto args = sbatch_arguments(job);
    ASSERT_FALSE(args) << message;
    EXPECT_EQ(args.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(args.error().message().find(message), std::string::npos) << args.error().message();
  };
  BatchSubmission job = job_;
  job.script = dir_ / "missing.sh";
  refused(job, "the batch script " + (dir_ / "missing.sh").string() + " is not a file");
  job = job_;
  job.job_name = "a\nb";
  refused(job, "the job name must be one line");
  job = job_;
  job.nodes = 3;
  job.ntasks = 2;
  refused(job, "ntasks 2 is below nodes 3");
  job = job_;
  job.environment = {{"1BAD", "x"}};
  refused(job, "'1BAD' is not an environment variable name");
  job = job_;
  job.working_dir = dir_ / "nowhere";
  refused(job, "the working directory");
}

TEST(SlurmTime, LimitText) {
  EXPECT_EQ(slurm_time_limit(90s), "0-00:01:30");
  EXPECT_EQ(slurm_time_limit(51h), "2-03:00:00");
}

}  // namespace
}  // namespace ix::run
