// Timing helpers the benchmark programs share: wall milliseconds, the thread's CPU time (on a
// shared machine it moves far less than wall time when other processes compete for the core),
// and the median of repeated runs.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ix::bench_timing {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

inline double thread_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

// `--runs N` and `--shared DIR` (default $IXBENCH_SHARED_DIR, else ../shared beside the source
// tree), the arguments of the benchmarks over ../shared's data; nullopt on anything else.
struct SharedDataArgs {
  int runs = 21;
  std::filesystem::path shared;
};
inline std::optional<SharedDataArgs> parse_shared_data_args(int argc, char** argv, const char* source_dir) {
  SharedDataArgs args;
  if (const char* env = std::getenv("IXBENCH_SHARED_DIR")) args.shared = env;
  if (args.shared.empty()) args.shared = std::filesystem::path(source_dir) / ".." / "shared";
  for (int index = 1; index < argc; ++index) {
    std::string arg = argv[index];
    if (arg == "--runs" && index + 1 < argc) {
      args.runs = std::max(1, std::atoi(argv[++index]));
    } else if (arg == "--shared" && index + 1 < argc) {
      args.shared = argv[++index];
    } else {
      return std::nullopt;
    }
  }
  return args;
}

}  // namespace ix::bench_timing
