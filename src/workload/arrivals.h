// Arrival process of an open-loop benchmark: *when* each request is due (Nighthawk's split of
// "when" from "what" and from pacing, which the runner does).
//
// vLLM semantics: `--request-rate inf` sends everything at once; otherwise inter-arrival gaps are
// Gamma(shape = burstiness, scale = 1 / (rate · burstiness)) — mean 1/rate, Poisson at
// burstiness 1, burstier below 1, more regular above. Unlike vLLM's sleep-after-send loop, the
// schedule is absolute: offset_i = Σ_{j<i} gap_j from one start time, so pacing never drifts
// however long sends take. Seeded: the same seed gives the same offsets, bit for bit.
//
// Ramp-up (vLLM's --ramp-up-strategy): request i's rate goes from the start to the end rate over
// the run, linearly (start + (end - start)·i/(N-1)) or exponentially (start·(end/start)^(i/(N-1))),
// and the gap before request i is drawn at request i's rate, as vLLM draws it.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "common/error.h"

namespace ix::workload {

enum class RampUp { kNone, kLinear, kExponential };

struct ArrivalOptions {
  double request_rate = 0.0;  // requests/s; +inf = all at time 0; ignored with a ramp-up
  double burstiness = 1.0;    // gamma shape, > 0
  uint64_t seed = 0;
  RampUp ramp_up = RampUp::kNone;
  double ramp_up_start_rps = 0.0;  // > 0, <= end
  double ramp_up_end_rps = 0.0;
};

// Whether requests are paced (a finite rate or a ramp-up) rather than all due at once.
inline bool open_loop(const ArrivalOptions& options) {
  return options.ramp_up != RampUp::kNone || options.request_rate < std::numeric_limits<double>::infinity();
}

// Request `index`'s rate of `count` (the ramp's, or request_rate without one).
double arrival_rate(size_t index, size_t count, const ArrivalOptions& options);

// The longest schedule accepted (~30 years; int64 nanoseconds reach 292).
inline constexpr double kMaxScheduleSeconds = 1e9;

// Send offsets in ns from the benchmark start, non-decreasing, first = 0.
// Errors: kInvalidArgument for a rate <= 0, burstiness <= 0 or infinite, a ramp-up whose start
// is not in (0, end] or whose end is not finite, or a schedule longer than kMaxScheduleSeconds.
Result<std::vector<int64_t>> arrival_offsets_ns(size_t count, const ArrivalOptions& options);

}  // namespace ix::workload
