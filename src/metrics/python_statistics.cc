// Python's statistics.mean() / pstdev() in double-double arithmetic (statistics.h says how close
// that is to Python's exact rationals). The building blocks are the classic error-free
// transformations: two_sum (Knuth) and two_prod (one fma), renormalised after every step.
#include <cmath>
#include <cstdint>
#include <span>

#include "metrics/statistics.h"

namespace ix::metrics {
namespace {

// hi + lo with |lo| <= ulp(hi) / 2: hi is the double nearest the pair's exact sum.
struct DD {
  double hi = 0.0;
  double lo = 0.0;
};

DD two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

DD quick_two_sum(double a, double b) {
  const double s = a + b;
  return {s, b - (s - a)};
}

DD add(DD x, DD y) {
  DD s = two_sum(x.hi, y.hi);
  const DD t = two_sum(x.lo, y.lo);
  s.lo += t.hi;
  s = quick_two_sum(s.hi, s.lo);
  s.lo += t.lo;
  return quick_two_sum(s.hi, s.lo);
}

DD add(DD x, double y) {
  DD s = two_sum(x.hi, y);
  s.lo += x.lo;
  return quick_two_sum(s.hi, s.lo);
}

DD mul(DD x, DD y) {
  const double p = x.hi * y.hi;
  const double e = std::fma(x.hi, y.hi, -p) + (x.hi * y.lo + x.lo * y.hi);
  return quick_two_sum(p, e);
}

DD div(DD x, double y) {
  const double q1 = x.hi / y;
  const double p = q1 * y;
  const double p_err = std::fma(q1, y, -p);
  DD r = two_sum(x.hi, -p);
  r.lo = r.lo - p_err + x.lo;
  const double q2 = (r.hi + r.lo) / y;
  return quick_two_sum(q1, q2);
}

DD sqrt_dd(DD a) {
  if (a.hi <= 0.0) return {};
  const double x = std::sqrt(a.hi);
  const double xx = x * x;
  const DD square{xx, std::fma(x, x, -xx)};
  const DD r = add(a, DD{-square.hi, -square.lo});
  return quick_two_sum(x, r.hi / (2.0 * x));
}

DD from_int128(__int128 v) {
  const auto hi = static_cast<double>(v);
  const auto lo = static_cast<double>(v - static_cast<__int128>(hi));
  return quick_two_sum(hi, lo);
}

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
