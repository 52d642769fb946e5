// Timing helpers the benchmark programs share: wall milliseconds, the thread's CPU time (on a
// shared machine it moves far less than wall time when other processes compete for the core),
// and the median of repeated runs.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
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

}  // namespace ix::bench_timing
