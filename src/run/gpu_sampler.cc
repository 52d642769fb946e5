#include "run/gpu_sampler.h"

#include <unistd.h>

#include <chrono>
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

}  // namespace

std::optional<GpuSampler> GpuSampler::start(const std::filesystem::path& csv, std::string& note) {
  ProcessSpec spec;
  std::string vendor;
  if (std::string nvidia = find_program("nvidia-smi"); !nvidia.empty()) {
    vendor = "nvidia";
    spec.argv = {nvidia, std::string("--query-gpu=") + kNvidiaGpuQuery, "--format=csv", "-l", "1"};
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
  auto sample = run_subprocess({"nvidia-smi", std::string("--query-gpu=") + kNvidiaGpuQuery, "--format=csv,noheader"},
                               {.timeout = std::chrono::seconds(30)});
  if (sample && sample->succeeded() && !sample->out.empty()) {
    std::ofstream out(csv_, std::ios::app);
    out << sample->out;
  }
}

}  // namespace ix::run
