// A thin typed client over Slurm's command-line tools (sbatch, squeue, sacct, scontrol, scancel),
// for the orchestrator's Slurm executor. Each call runs one or more of the tools as child
// processes (common/subprocess.h); nothing here links against Slurm.
//
// Where a job's state comes from (poll): a job is asked of
//   1. squeue    while it is pending or running (squeue lists only live jobs), then, for the tasks
//                squeue no longer lists,
//   2. sacct     the accounting database (needs slurmdbd; a cluster without accounting answers
//                "accounting storage is disabled", and the client stops asking sacct), then
//   3. scontrol  `show job`, which the controller answers for MinJobAge seconds (default 300)
//                after a job ends.
// A task squeue lists has squeue's state; any other takes the first terminal state a later source
// reports (sacct may lag behind the controller and still say RUNNING for a task squeue no longer
// lists; scontrol then settles it). A task no source knows is kUnknown: never taken as success. Parsers of each tool's
// output are pure functions below, tested on captured output of Slurm 22.05 (tests/data/slurm/).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/subprocess.h"

namespace ix::run {

// A submitted job: the id sbatch printed, and how many array tasks it has (0: not an array).
struct SlurmJobId {
  std::uint64_t id = 0;
  std::uint32_t array_size = 0;
  bool operator==(const SlurmJobId&) const = default;
};

// One sbatch call. Everything is passed as sbatch options; the job's environment is this
// process's environment plus `environment` (sbatch --export=ALL), so values may hold any text.
struct BatchSubmission {
  std::filesystem::path script;  // the batch script; must exist (sbatch copies it at submit)
  std::vector<std::string> script_args;
  std::string job_name;                 // --job-name
  std::uint32_t array_size = 0;         // 0: one job; N: tasks 0..N-1 (--array=0-<N-1>)
  std::uint32_t array_max_running = 0;  // 0: no limit; else at most this many tasks at once (%k)
  std::uint32_t nodes = 1;              // --nodes
  std::uint32_t ntasks = 1;             // --ntasks
  std::uint32_t cpus_per_task = 1;      // --cpus-per-task
  std::optional<std::string> partition;
  std::string output_pattern;         // --output, e.g. "/shared/logs/%A_%a.out"; "": Slurm's default
  std::string error_pattern;          // --error; "": into the output file
  std::filesystem::path working_dir;  // --chdir; "": this process's working directory
  std::vector<std::pair<std::string, std::string>> environment;
  std::chrono::seconds time_limit{0};  // --time (Slurm rounds up to whole minutes); 0: the partition's
};

enum class SlurmState {
  kPending,      // PENDING, CONFIGURING, REQUEUED, held
  kRunning,      // RUNNING, COMPLETING, SUSPENDED, STAGE_OUT, ...
  kCompleted,    // COMPLETED: exit status 0
  kFailed,       // FAILED, BOOT_FAIL, SPECIAL_EXIT, PREEMPTED
  kCancelled,    // CANCELLED (scancel, or the admin), REVOKED
  kTimeout,      // TIMEOUT, DEADLINE
  kNodeFail,     // NODE_FAIL
  kOutOfMemory,  // OUT_OF_MEMORY
  kUnknown,      // no source knows the task, or a state this client does not know
};

// "PENDING", "RUNNING", ... "UNKNOWN".
std::string_view slurm_state_name(SlurmState state);
// Slurm's state word ("CANCELLED by 0" and "CANCELLED+" read as CANCELLED) -> SlurmState.
SlurmState slurm_state_from_text(std::string_view text);
// The task has ended and will not change (kUnknown is not: the caller decides how long to wait).
bool is_terminal(SlurmState state);

enum class SlurmSource { kNone, kSqueue, kSacct, kScontrol };
std::string_view slurm_source_name(SlurmSource source);

struct SlurmTaskState {
  std::uint64_t job_id = 0;                   // the array's job id (what sbatch printed)
  std::optional<std::uint32_t> array_task{};  // nullopt: not an array job
  SlurmState state = SlurmState::kUnknown;
  std::string slurm_state{};       // Slurm's own word, "" when no source knows the task
  std::string reason{};            // squeue/scontrol's Reason ("Resources", "NonZeroExitCode"), or ""
  std::optional<int> exit_code{};  // the script's exit status, once the task ended
  int signal = 0;                  // the signal that ended it (scancel: 15), 0 if none
  SlurmSource source = SlurmSource::kNone;
  bool operator==(const SlurmTaskState&) const = default;
};

struct SlurmClientOptions {
  std::filesystem::path bin_dir{};  // where sbatch & co. are; "": $PATH
  std::chrono::milliseconds command_timeout{std::chrono::seconds(60)};
};

class SlurmClient {
 public:
  explicit SlurmClient(SlurmClientOptions options = {}) : options_(std::move(options)) {}

  // Ok when sbatch is there and the controller answers `scontrol ping`; else why not.
  Result<void> check() const;
  // sbatch --parsable. Errors: kInvalidArgument (the submission, before anything runs),
  // kUnavailable (sbatch refused it: its message).
  Result<SlurmJobId> submit(const BatchSubmission& submission) const;
  // One entry per task: tasks 0..array_size-1 in order (or the one job); see the top of the file.
  Result<std::vector<SlurmTaskState>> poll(const SlurmJobId& job) const;
  // scancel: every task of the job. A job that already ended is not an error.
  Result<void> cancel(const SlurmJobId& job) const;

 private:
  Result<SubprocessResult> tool(const std::string& name, const std::vector<std::string>& args,
                                const std::vector<std::pair<std::string, std::string>>& environment = {}) const;
  Result<std::vector<SlurmTaskState>> from_squeue(const SlurmJobId& job) const;
  Result<std::vector<SlurmTaskState>> from_sacct(const SlurmJobId& job) const;
  Result<std::vector<SlurmTaskState>> from_scontrol(const SlurmJobId& job) const;

  SlurmClientOptions options_;
  // Set once sacct says the cluster keeps no accounting; shared by copies, safe across threads.
  std::shared_ptr<std::atomic<bool>> sacct_disabled_ = std::make_shared<std::atomic<bool>>(false);
};

// sbatch is on PATH and the controller answers.
bool slurm_available();

// ---- Pure parts (tested on captured output) ----

// The sbatch command line for `submission` (without the program name). Errors: kInvalidArgument.
Result<std::vector<std::string>> sbatch_arguments(const BatchSubmission& submission);
// Slurm's --time text for a limit: "D-HH:MM:SS".
std::string slurm_time_limit(std::chrono::seconds limit);
// sbatch --parsable's stdout: "123" or "123;cluster".
Result<std::uint64_t> parse_sbatch_parsable(std::string_view out);
// An array task list: "3", "0-4", "1,3,5-7", "0-9:2", with an optional "%k" throttle; at most
// kMaxArrayTasks tasks.
inline constexpr std::uint32_t kMaxArrayTasks = 1u << 20;
Result<std::vector<std::uint32_t>> parse_array_tasks(std::string_view text);
// A job id as squeue and sacct print it: "9", "5_2", "5_[2-4%1]" -> tasks (pending ranges
// expanded).
struct ParsedJobId {
  std::uint64_t job_id = 0;
  std::optional<std::vector<std::uint32_t>> tasks{};  // nullopt: not an array element
};
Result<ParsedJobId> parse_job_id(std::string_view text);
// "3:0" -> {3, 0}: exit status, signal.
Result<std::pair<int, int>> parse_exit_code(std::string_view text);

// squeue -h -r -o '%i|%T|%r' (kSqueueFormat).
inline constexpr std::string_view kSqueueFormat = "%i|%T|%r";
Result<std::vector<SlurmTaskState>> parse_squeue(std::string_view out);
// sacct -n -P -X -o JobID,State,ExitCode (kSacctFields); job steps ("5_0.batch") are skipped.
inline constexpr std::string_view kSacctFields = "JobID,State,ExitCode";
Result<std::vector<SlurmTaskState>> parse_sacct(std::string_view out);
// scontrol -o show job: one line per job or array task, or per range of pending tasks.
Result<std::vector<SlurmTaskState>> parse_scontrol_jobs(std::string_view out);

// The poll rule over each source's answer, in order (squeue, sacct, scontrol): one entry per
// expected task (0..array_size-1, or the one job). The first source is the live one: a task it
// lists takes its state. Any other task takes the first terminal state a later source reports,
// else the first state one lists, else kUnknown. With array_size 0 and array records present (an
// id that is an array after all), every listed task is returned. Records of other jobs are ignored.
std::vector<SlurmTaskState> merge_task_states(const SlurmJobId& job,
                                              const std::vector<std::vector<SlurmTaskState>>& sources);

}  // namespace ix::run
