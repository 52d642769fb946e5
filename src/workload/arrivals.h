// Arrival process of an open-loop benchmark: *when* each request is due (Nighthawk's split of
// "when" from "what" and from pacing, which the runner does).
//
// vLLM semantics: `--request-rate inf` sends everything at once; otherwise inter-arrival gaps are
// Gamma(shape = burstiness, scale = 1 / (rate · burstiness)) — mean 1/rate, Poisson at
// burstiness 1, burstier below 1, more regular above. Unlike vLLM's sleep-after-send loop, the
// schedule is absolute: offset_i = Σ_{j<i} gap_j from one start time, so pacing never drifts
// however long sends take. Seeded: the same seed gives the same offsets, bit for bit.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "common/error.h"

namespace ix::workload {

struct ArrivalOptions {
  double request_rate = 0.0;  // requests/s; +inf = all at time 0
  double burstiness = 1.0;    // gamma shape, > 0
  uint64_t seed = 0;
};

// The longest schedule accepted (~30 years; int64 nanoseconds reach 292).
inline constexpr double kMaxScheduleSeconds = 1e9;

// Send offsets in ns from the benchmark start, non-decreasing, first = 0.
// Errors: kInvalidArgument for a rate <= 0, burstiness <= 0 or infinite, or a schedule longer
// than kMaxScheduleSeconds.
Result<std::vector<int64_t>> arrival_offsets_ns(size_t count, const ArrivalOptions& options);

}  // namespace ix::workload
