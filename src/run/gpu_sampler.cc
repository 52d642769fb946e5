#include "run/gpu_sampler.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "common/subprocess.h"

namespace ix::run {

namespace {

// A sampler killed mid-write leaves a partial last row: drop it before appending (as
// benchmark_lib.sh's _repair_truncated_gpu_metrics_tail).
void drop_partial_last_row(const std::filesystem::path& csv) {
  std::error_code error;
  auto size = std::filesystem::file_size(csv, error);
  if (error || size == 0) return;
  std::ifstream in(csv, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.ends_with('\n')) return;
  size_t end = text.rfind('\n');
  std::filesystem::resize_file(csv, end == std::string::npos ? 0 : end + 1, error);
}

// CUDA_VISIBLE_DEVICES when it is a list of indices (as the local executor sets it).
std::optional<std::string> visible_devices() {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  if (value == nullptr || *value == '\0') return std::nullopt;
  std::string_view text(value);
  if (text.find_first_not_of("0123456789,") != std::string_view::npos) return std::nullopt;
  return std::string(text);
}

}  // namespace

std::optional<GpuSampler> GpuSampler::start(const std::filesystem::path& csv, std::string& note) {
  ProcessSpec spec;
  std::string vendor;
  if (std::string nvidia = find_program("nvidia-smi"); !nvidia.empty()) {
    vendor = "nvidia";
    spec.argv = {nvidia, std::string("--query-gpu=") + kNvidiaGpuQuery, "--format=csv", "-l", "1"};
    // A job given a share of the machine's GPUs (ixbench run --gpus) samples only those.
    if (auto devices = visible_devices()) spec.argv.insert(spec.argv.end(), {"-i", *devices});
  } else if (!find_program("amd-smi").empty()) {
    vendor = "amd";
    spec.argv = {"bash", "-c",
                 "PYTHONUNBUFFERED=1 amd-smi metric -p -c -t -u -w 1 --csv 2>/dev/null | "
                 "awk '/^timestamp,/{if(!h){print;h=1};next} h{print;fflush()}'"};
  } else {
    note = "no GPU telemetry: neither nvidia-smi nor amd-smi is on PATH";
    return std::nullopt;
  }
  spec.stdout_file = csv;
  auto child = ChildProcess::spawn(spec);
  if (!child) {
    note = "no GPU telemetry: " + child.error().message();
    return std::nullopt;
  }
  note = vendor + " telemetry every second into " + csv.string();
  return GpuSampler(std::move(*child), vendor, csv);
}

void GpuSampler::stop() {
  if (vendor_ == "amd") ::sleep(3);  // amd-smi stamps whole seconds: one more tick past the window's end
  child_.stop(5);
  drop_partial_last_row(csv_);
  if (vendor_ != "nvidia") return;
  std::vector<std::string> argv = {"nvidia-smi", std::string("--query-gpu=") + kNvidiaGpuQuery,
                                   "--format=csv,noheader"};
  if (auto devices = visible_devices()) argv.insert(argv.end(), {"-i", *devices});
  auto sample = run_subprocess(argv, {.timeout = std::chrono::seconds(30)});
  if (sample && sample->succeeded() && !sample->out.empty()) {
    std::ofstream out(csv_, std::ios::app);
    out << sample->out;
  }
}

}  // namespace ix::run
