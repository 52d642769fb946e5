// The local executor: jobs as child processes of ixbench, `parallel` at a time, each with its
// share of the machine's GPUs.
#include <fmt/format.h>

#include <optional>
#include <vector>

#include "common/file_io.h"
#include "run/executor.h"
#include "run/process.h"

namespace ix::run {

std::vector<std::string> job_command(const std::filesystem::path& ixbench, const std::filesystem::path& job_dir) {
  return {ixbench.string(), "run", "job", "--spec", (job_dir / "job.json").string(), "--dir", job_dir.string()};
}

namespace {

// Which of the machine's GPUs are taken.
class GpuPool {
 public:
  explicit GpuPool(int64_t count) : taken_(static_cast<size_t>(count), false) {}
  bool accounting() const { return !taken_.empty(); }
  // The indices of `n` free GPUs (marked taken), or nullopt.
  std::optional<std::vector<int64_t>> take(int64_t n) {
    std::vector<int64_t> picked;
    for (size_t i = 0; i < taken_.size() && int64_t(picked.size()) < n; ++i) {
      if (!taken_[i]) picked.push_back(int64_t(i));
    }
    if (int64_t(picked.size()) < n) return std::nullopt;
    for (int64_t i : picked) taken_[size_t(i)] = true;
    return picked;
  }
  void give_back(const std::vector<int64_t>& gpus) {
    for (int64_t i : gpus) taken_[size_t(i)] = false;
  }
  int64_t size() const { return int64_t(taken_.size()); }

 private:
  std::vector<bool> taken_;
};

struct Running {
  size_t index;
  ChildProcess child;
  std::vector<int64_t> gpus;
};

class LocalExecutor final : public Executor {
 public:
  LocalExecutor(int parallel, int64_t gpus) : parallel_(parallel < 1 ? 1 : parallel), pool_(gpus) {}

  Result<void> run(std::span<const ExecJob> jobs, const ExecEvents& events, const std::atomic<bool>& stop) override {
    size_t next = 0;
    std::vector<Running> running;
    while ((next < jobs.size() || !running.empty()) && !stop.load()) {
      while (next < jobs.size() && int(running.size()) < parallel_ && !stop.load()) {
        if (!start(jobs[next], next, events, running)) break;  // waits for GPUs to be free
        ++next;
      }
      reap(running, events, 1.0);
      if (events.tick) events.tick();
    }
    for (auto& job : running) {
      job.child.stop(60);
      events.finished(job.index);
    }
    return {};
  }

  std::string describe() const override {
    return pool_.accounting() ? fmt::format("local ({} at a time, {} GPUs)", parallel_, pool_.size())
                              : fmt::format("local ({} at a time)", parallel_);
  }

 private:
  // Starts one job (false: its GPUs are not free yet). A job that cannot start at all is
  // reported finished at once; its job.log says why and it has no status.json.
  bool start(const ExecJob& job, size_t index, const ExecEvents& events, std::vector<Running>& running) {
    std::vector<int64_t> gpus;
    ProcessSpec spec{job_command(self_executable(), job.dir), {}, job.dir / "job.log", {}, {}};
    if (pool_.accounting()) {
      if (job.gpus > pool_.size()) {
        return failed_at_once(job, index, events,
                              fmt::format("it needs {} GPUs; this machine has {}", job.gpus, pool_.size()));
      }
      auto taken = pool_.take(job.gpus);
      if (!taken) return false;
      gpus = *taken;
      std::string list;
      for (int64_t gpu : gpus) list += (list.empty() ? "" : ",") + std::to_string(gpu);
      spec.env = {{"CUDA_VISIBLE_DEVICES", list}, {"HIP_VISIBLE_DEVICES", list}};
    }
    auto child = ChildProcess::spawn(spec);
    if (!child) {
      pool_.give_back(gpus);
      return failed_at_once(job, index, events, child.error().message());
    }
    events.started(index);
    running.push_back(Running{index, std::move(*child), std::move(gpus)});
    return true;
  }

  static bool failed_at_once(const ExecJob& job, size_t index, const ExecEvents& events, const std::string& why) {
    (void)files::write_file(job.dir / "job.log", "the job could not start: " + why + "\n");
    events.started(index);
    events.finished(index);
    return true;
  }

  void reap(std::vector<Running>& running, const ExecEvents& events, double wait_s) {
    if (running.empty()) return;
    running.front().child.wait(wait_s / double(running.size()));
    for (auto it = running.begin(); it != running.end();) {
      if (it->child.poll()) {
        pool_.give_back(it->gpus);
        events.finished(it->index);
        it = running.erase(it);
      } else {
        ++it;
      }
    }
  }

  int parallel_;
  GpuPool pool_;
};

}  // namespace

std::unique_ptr<Executor> make_local_executor(int parallel, int64_t gpus) {
  return std::make_unique<LocalExecutor>(parallel, gpus);
}

}  // namespace ix::run
