// Python's statistics.mean() / pstdev() in double-double arithmetic (statistics.h says how close
// that is to Python's exact rationals; double_double.h has the arithmetic).
#include <cmath>
#include <cstdint>
#include <span>

#include "metrics/double_double.h"
#include "metrics/statistics.h"

namespace ix::metrics {
namespace {

using namespace dd;

bool all_finite(std::span<const double> values) {
  for (double v : values)
    if (!std::isfinite(v)) return false;
  return true;
}

double plain_mean(std::span<const double> values) {
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

DD mean_dd(std::span<const double> values) {
  DD sum;
  for (double v : values) sum = add(sum, v);
  return div(sum, static_cast<double>(values.size()));
}

}  // namespace

double python_mean(std::span<const double> values) {
  if (values.empty()) return 0.0;
  if (!all_finite(values)) return plain_mean(values);
  return mean_dd(values).hi;
}

double python_pstdev(std::span<const double> values) {
  if (values.empty()) return 0.0;
  if (!all_finite(values)) return std::sqrt(std::fabs(plain_mean(values)));
  const DD c = mean_dd(values);
  DD ss;
  for (double v : values) {
    const DD d = add(DD{-c.hi, -c.lo}, v);
    ss = add(ss, mul(d, d));
  }
  return sqrt_dd(div(ss, static_cast<double>(values.size()))).hi;
}

PythonNumber python_mean(std::span<const int64_t> values) {
  PythonNumber out;
  if (values.empty()) {
    out.is_int = true;
    return out;
  }
  __int128 sum = 0;
  for (int64_t v : values) sum += v;
  const auto n = static_cast<__int128>(values.size());
  if (sum % n == 0 && sum / n >= INT64_MIN && sum / n <= INT64_MAX) {
    out.is_int = true;
    out.int_value = static_cast<int64_t>(sum / n);
    return out;
  }
  out.float_value = div(from_int128(sum), static_cast<double>(values.size())).hi;
  return out;
}

double python_pstdev(std::span<const int64_t> values) {
  if (values.size() < 2) return 0.0;
  // Python's exact form: variance = (n * sum(x^2) - sum(x)^2) / n^2, so the deviation is
  // sqrt(n * sum(x^2) - sum(x)^2) / n.
  __int128 sx = 0, sxx = 0;
  for (int64_t v : values) {
    sx += v;
    sxx += static_cast<__int128>(v) * v;
  }
  const auto n = static_cast<__int128>(values.size());
  const __int128 numerator = n * sxx - sx * sx;
  return div(sqrt_dd(from_int128(numerator)), static_cast<double>(values.size())).hi;
}

}  // namespace ix::metrics
