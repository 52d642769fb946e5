#include "workload/arrivals.h"

#include <fmt/format.h>

#include <cmath>

#include "common/rng.h"

namespace ix::workload {

Result<std::vector<int64_t>> arrival_offsets_ns(size_t count, const ArrivalOptions& options) {
  if (!(options.request_rate > 0)) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--request-rate must be > 0 or inf (got {})", options.request_rate));
  }
  if (!(options.burstiness > 0) || std::isinf(options.burstiness)) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("--burstiness must be > 0 (got {})", options.burstiness));
  }
  std::vector<int64_t> offsets(count, 0);
  if (std::isinf(options.request_rate)) return offsets;
  Rng rng = Rng::stream(options.seed, "arrivals");
  const double theta = 1.0 / (options.request_rate * options.burstiness);
  // Accumulate in double seconds and round each absolute time once: no drift from rounding
  // every gap.
  double t_s = 0.0;
  for (size_t i = 1; i < count; ++i) {
    t_s += rng.gamma(options.burstiness, theta);
    // A schedule past ~30 years is a typo in the rate (1e-12 requests/s), not a benchmark; the
    // nanosecond offsets would overflow.
    if (!(t_s < kMaxScheduleSeconds)) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--request-rate {} schedules request {} of {} after {:.3g} s (more than {:.0f} "
                              "years): raise the rate",
                              options.request_rate, i + 1, count, t_s, kMaxScheduleSeconds / 3.15576e7));
    }
    offsets[i] = static_cast<int64_t>(std::llround(t_s * 1e9));
  }
  return offsets;
}

}  // namespace ix::workload
