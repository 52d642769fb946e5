#include "workload/arrivals.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/rng.h"

namespace ix::workload {

double arrival_rate(size_t index, size_t count, const ArrivalOptions& options) {
  if (options.ramp_up == RampUp::kNone) return options.request_rate;
  const double progress = static_cast<double>(index) / static_cast<double>(std::max<size_t>(count, 2) - 1);
  const double start = options.ramp_up_start_rps;
  const double end = options.ramp_up_end_rps;
  if (options.ramp_up == RampUp::kLinear) return start + (end - start) * progress;
  return start * std::pow(end / start, progress);
}

Result<std::vector<int64_t>> arrival_offsets_ns(size_t count, const ArrivalOptions& options) {
  const bool ramp = options.ramp_up != RampUp::kNone;
  if (ramp && !(options.ramp_up_start_rps > 0 && options.ramp_up_start_rps <= options.ramp_up_end_rps &&
                std::isfinite(options.ramp_up_end_rps))) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--ramp-up-start-rps ({}) must be > 0 and <= --ramp-up-end-rps ({}), both finite",
                            options.ramp_up_start_rps, options.ramp_up_end_rps));
  }
  if (!ramp && !(options.request_rate > 0)) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--request-rate must be > 0 or inf (got {})", options.request_rate));
  }
  if (!(options.burstiness > 0) || std::isinf(options.burstiness)) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("--burstiness must be > 0 (got {})", options.burstiness));
  }
  std::vector<int64_t> offsets(count, 0);
  if (!open_loop(options)) return offsets;
  Rng rng = Rng::stream(options.seed, "arrivals");
  // Accumulate in double seconds and round each absolute time once: no drift from rounding
  // every gap.
  double t_s = 0.0;
  for (size_t i = 1; i < count; ++i) {
    const double theta = 1.0 / (arrival_rate(i, count, options) * options.burstiness);
    t_s += rng.gamma(options.burstiness, theta);
    // A schedule past ~30 years is a typo in the rate (1e-12 requests/s), not a benchmark; the
    // nanosecond offsets would overflow.
    if (!(t_s < kMaxScheduleSeconds)) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{} schedules request {} of {} after {:.3g} s (more than {:.0f} years): raise the rate",
                              ramp ? fmt::format("--ramp-up-start-rps {}", options.ramp_up_start_rps)
                                   : fmt::format("--request-rate {}", options.request_rate),
                              i + 1, count, t_s, kMaxScheduleSeconds / 3.15576e7));
    }
    offsets[i] = static_cast<int64_t>(std::llround(t_s * 1e9));
  }
  return offsets;
}

}  // namespace ix::workload
