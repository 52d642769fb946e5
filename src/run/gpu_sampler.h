// GPU telemetry during a job, as InferenceX's benchmark_lib.sh samples it: nvidia-smi's
// `--query-gpu=timestamp,index,power.draw,temperature.gpu,clocks.current.sm,clocks.current.memory,
// utilization.gpu,utilization.memory --format=csv -l 1`, or amd-smi's `metric -p -c -t -u -w 1 --csv`
// (preamble and repeated headers dropped), into gpu_metrics.csv beside the raw results, where
// `ixbench aggregate` finds it (SPEC §9). On a machine with neither tool nothing is sampled and
// the records say power was not measured.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "run/process.h"

namespace ix::run {

inline constexpr const char* kNvidiaGpuQuery =
    "timestamp,index,power.draw,temperature.gpu,clocks.current.sm,clocks.current.memory,utilization.gpu,"
    "utilization.memory";

class GpuSampler {
 public:
  // Starts sampling into `csv` when nvidia-smi or amd-smi is on $PATH; nullopt (with `note` saying
  // why) when neither is, or it cannot be started.
  static std::optional<GpuSampler> start(const std::filesystem::path& csv, std::string& note);
  // Stops the sampler and, for nvidia-smi, appends one sample taken after the stop, so the window's
  // end is bracketed (the benchmark ends between two ticks).
  void stop();
  const std::string& vendor() const { return vendor_; }

 private:
  GpuSampler(ChildProcess child, std::string vendor, std::filesystem::path csv)
      : child_(std::move(child)), vendor_(std::move(vendor)), csv_(std::move(csv)) {}
  ChildProcess child_;
  std::string vendor_;
  std::filesystem::path csv_;
};

}  // namespace ix::run
