// The Slurm executor: buckets of jobs as sbatch arrays, polled until every task has ended.
#include <fmt/format.h>

#include <chrono>
#include <map>
#include <thread>

#include "common/file_io.h"
#include "run/executor.h"
#include "run/process.h"
#include "run/recipe.h"

namespace ix::run {
namespace {

namespace fs = std::filesystem;
using SteadyTime = std::chrono::steady_clock;

// One sbatch call and the jobs its tasks run (task i runs jobs[indices[i]]).
struct Submission {
  SlurmJobId id;
  std::vector<size_t> indices;
};

struct TaskProgress {
  bool started = false;
  bool finished = false;
  std::optional<SteadyTime::time_point> unknown_since;
};

// The batch script: task i runs the job whose folder is line i+1 of the list.
std::string batch_script(const fs::path& list, const fs::path& ixbench) {
  return fmt::format(
      "#!/bin/bash\n"
      "# One ixbench job per array task: its folder is line SLURM_ARRAY_TASK_ID+1 of the list.\n"
      "set -u\n"
      "dir=$(sed -n \"$(( ${{SLURM_ARRAY_TASK_ID:-0}} + 1 ))p\" {})\n"
      "exec srun --ntasks=1 --nodes=1 {} run job --spec \"$dir/job.json\" --dir \"$dir\" >>\"$dir/job.log\" 2>&1\n",
      shell_quote(list.string()), shell_quote(ixbench.string()));
}

class SlurmExecutor final : public Executor {
 public:
  SlurmExecutor(SlurmExecutorOptions options, SlurmClient client)
      : options_(std::move(options)), client_(std::move(client)) {}

  Result<void> run(std::span<const ExecJob> jobs, const ExecEvents& events, const std::atomic<bool>& stop) override {
    if (jobs.empty()) return {};
    if (auto ok = client_.check(); !ok) return fail(ok.error());
    progress_.assign(jobs.size(), {});
    auto submitted = submit_all(jobs);
    if (!submitted) {
      cancel_all();
      return fail(submitted.error());
    }
    while (!all_finished() && !stop.load()) {
      poll_once(events);
      if (events.tick) events.tick();
      sleep_interval(stop);
    }
    if (stop.load()) finish_cancelled(events);
    return {};
  }

  std::string describe() const override {
    return options_.partition ? fmt::format("slurm (partition {})", *options_.partition) : std::string("slurm");
  }

 private:
  Result<void> submit_all(std::span<const ExecJob> jobs) {
    std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> buckets;  // (nodes, gpus) -> single-node jobs
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (jobs[i].nodes > 1) {
        if (auto ok = submit(jobs, {i}, fmt::format("multinode-{}", i)); !ok) return ok;
      } else {
        buckets[{jobs[i].nodes, jobs[i].gpus}].push_back(i);
      }
    }
    for (const auto& [key, indices] : buckets) {
      if (auto ok = submit(jobs, indices, fmt::format("gpus{}", key.second)); !ok) return ok;
    }
    return {};
  }

  Result<void> submit(std::span<const ExecJob> jobs, const std::vector<size_t>& indices, const std::string& name) {
    const fs::path dir = jobs[indices.front()].dir.parent_path() / "slurm";
    std::error_code error;
    fs::create_directories(dir, error);
    if (error) return fail(ErrorCode::kIo, fmt::format("cannot create {}: {}", dir.string(), error.message()));
    std::string list;
    for (size_t i : indices) list += jobs[i].dir.string() + "\n";
    const fs::path list_file = dir / (name + ".list"), script = dir / (name + ".sh");
    if (auto ok = files::write_file(list_file, list); !ok) return ok;
    if (auto ok = files::write_file(script, batch_script(list_file, self_executable())); !ok) return ok;
    BatchSubmission batch;
    batch.script = script;
    batch.job_name = "ixbench-" + name;
    batch.array_size = static_cast<std::uint32_t>(indices.size());
    batch.array_max_running = options_.max_running;
    batch.nodes = static_cast<std::uint32_t>(std::max<int64_t>(1, jobs[indices.front()].nodes));
    batch.cpus_per_task = options_.cpus_per_task;
    batch.partition = options_.partition;
    batch.output_pattern = (dir / (name + "_%A_%a.out")).string();
    batch.working_dir = dir;
    batch.time_limit = options_.time_limit;
    auto id = client_.submit(batch);
    if (!id) return fail(id.error());
    submissions_.push_back({*id, indices});
    return {};
  }

  void poll_once(const ExecEvents& events) {
    for (const auto& submission : submissions_) {
      auto states = client_.poll(submission.id);
      if (!states) continue;  // a transient tool failure: asked again next round
      for (size_t task = 0; task < states->size() && task < submission.indices.size(); ++task) {
        update(submission.indices[task], (*states)[task].state, events);
      }
    }
  }

  void update(size_t index, SlurmState state, const ExecEvents& events) {
    TaskProgress& task = progress_[index];
    if (task.finished) return;
    if (state == SlurmState::kUnknown) {
      if (!task.unknown_since) task.unknown_since = SteadyTime::now();
      if (std::chrono::duration<double>(SteadyTime::now() - *task.unknown_since).count() < options_.unknown_grace_s)
        return;
    } else {
      task.unknown_since.reset();
      if (state == SlurmState::kPending) return;
    }
    if (!task.started) {
      task.started = true;
      events.started(index);
    }
    if (state == SlurmState::kRunning) return;
    task.finished = true;
    events.finished(index);
  }

  void cancel_all() {
    for (const auto& submission : submissions_) (void)client_.cancel(submission.id);
  }

  // Ctrl-C: every submission cancelled, then the tasks that had started reported once they end.
  void finish_cancelled(const ExecEvents& events) {
    cancel_all();
    auto deadline = SteadyTime::now() + std::chrono::seconds(60);
    while (SteadyTime::now() < deadline && !all_started_finished()) {
      for (const auto& submission : submissions_) {
        auto states = client_.poll(submission.id);
        if (!states) continue;
        for (size_t task = 0; task < states->size() && task < submission.indices.size(); ++task) {
          TaskProgress& p = progress_[submission.indices[task]];
          if (p.started && !p.finished && is_terminal((*states)[task].state)) {
            p.finished = true;
            events.finished(submission.indices[task]);
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    for (size_t i = 0; i < progress_.size(); ++i) {
      if (progress_[i].started && !progress_[i].finished) events.finished(i);
    }
  }

  bool all_finished() const {
    for (const auto& task : progress_) {
      if (!task.finished) return false;
    }
    return true;
  }

  bool all_started_finished() const {
    for (const auto& task : progress_) {
      if (task.started && !task.finished) return false;
    }
    return true;
  }

  void sleep_interval(const std::atomic<bool>& stop) const {
    auto until = SteadyTime::now() + std::chrono::duration<double>(options_.poll_interval_s);
    while (SteadyTime::now() < until && !stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  SlurmExecutorOptions options_;
  SlurmClient client_;
  std::vector<Submission> submissions_;
  std::vector<TaskProgress> progress_;
};

}  // namespace

std::unique_ptr<Executor> make_slurm_executor(SlurmExecutorOptions options, SlurmClient client) {
  return std::make_unique<SlurmExecutor>(std::move(options), std::move(client));
}

}  // namespace ix::run
