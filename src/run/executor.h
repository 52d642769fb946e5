// Where jobs run. Every executor runs the same thing — `ixbench run job --spec <dir>/job.json
// --dir <dir>` — and the job writes its outcome to <dir>/status.json, so the orchestrator reads
// outcomes the same way whether the job ran here or on a cluster node (the run folder is then on a
// shared file system).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "run/job.h"
#include "run/slurm.h"

namespace ix::run {

struct ExecJob {
  const Job* job = nullptr;
  std::filesystem::path dir;  // the job's folder (holds job.json)
  int64_t gpus = 0;           // GPUs it needs on one node (tp x pp x pcp; multi-node: its allocation)
  int64_t nodes = 1;
};

// Events the orchestrator shows and acts on, called from the thread that called run().
struct ExecEvents {
  std::function<void(size_t index)> started;
  std::function<void(size_t index)> finished;  // the job's process ended (its status.json says how)
  std::function<void()> tick;                  // about once a second while jobs run (progress view)
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs every job, returning when all have ended or `stop` was set (running jobs are then stopped
  // and reported finished; jobs not started are not reported).
  virtual Result<void> run(std::span<const ExecJob> jobs, const ExecEvents& events, const std::atomic<bool>& stop) = 0;
  virtual std::string describe() const = 0;
};

// The command every executor runs for a job.
std::vector<std::string> job_command(const std::filesystem::path& ixbench, const std::filesystem::path& job_dir);

// Jobs on this machine, `parallel` at a time. With `gpus` > 0, a job starts only when that many
// of the machine's GPUs are free for it and sees only them (CUDA_VISIBLE_DEVICES,
// HIP_VISIBLE_DEVICES); a job needing more GPUs than the machine has fails at once.
std::unique_ptr<Executor> make_local_executor(int parallel, int64_t gpus);

// What the Slurm executor asks of the cluster.
struct SlurmExecutorOptions {
  std::optional<std::string> partition;  // --partition ("" = the cluster's default)
  std::chrono::seconds time_limit{0};    // --time per job (0 = the partition's)
  std::uint32_t cpus_per_task = 1;       // --cpus-per-task of each job
  std::uint32_t max_running = 0;         // array throttle (%k): at most this many of a bucket at once
  double poll_interval_s = 2;            // squeue/sacct/scontrol polling
  double unknown_grace_s = 60;           // a task no tool knows for this long is taken as ended
};

// Jobs on a Slurm cluster: one `sbatch --array` per bucket of single-node jobs needing the same
// GPUs, one allocation per multi-node job; each task runs `srun ixbench run job` on its folder.
// The run folder and this ixbench binary must be on a file system the nodes share. State is
// polled (run/slurm.h); an interrupted run scancels every submission.
std::unique_ptr<Executor> make_slurm_executor(SlurmExecutorOptions options, SlurmClient client = SlurmClient());

}  // namespace ix::run
