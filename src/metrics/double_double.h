// Double-double arithmetic (about 106 bits) for sums that must round once: the classic
// error-free transformations two_sum (Knuth) and two_prod (one fma), renormalised after every
// step. Used by python_statistics.cc (Python's exact means) and statistics.cc (CountedSamples'
// weighted sums). Not part of the metrics/ interface.
#pragma once

#include <cmath>

namespace ix::metrics::dd {

// hi + lo with |lo| <= ulp(hi) / 2: hi is the double nearest the pair's exact sum.
struct DD {
  double hi = 0.0;
  double lo = 0.0;
};

inline DD two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

inline DD quick_two_sum(double a, double b) {
  const double s = a + b;
  return {s, b - (s - a)};
}

inline DD add(DD x, DD y) {
  DD s = two_sum(x.hi, y.hi);
  const DD t = two_sum(x.lo, y.lo);
  s.lo += t.hi;
  s = quick_two_sum(s.hi, s.lo);
  s.lo += t.lo;
  return quick_two_sum(s.hi, s.lo);
}

inline DD add(DD x, double y) {
  DD s = two_sum(x.hi, y);
  s.lo += x.lo;
  return quick_two_sum(s.hi, s.lo);
}

inline DD mul(DD x, DD y) {
  const double p = x.hi * y.hi;
  const double e = std::fma(x.hi, y.hi, -p) + (x.hi * y.lo + x.lo * y.hi);
  return quick_two_sum(p, e);
}

inline DD div(DD x, double y) {
  const double q1 = x.hi / y;
  const double p = q1 * y;
  const double p_err = std::fma(q1, y, -p);
  DD r = two_sum(x.hi, -p);
  r.lo = r.lo - p_err + x.lo;
  const double q2 = (r.hi + r.lo) / y;
  return quick_two_sum(q1, q2);
}

inline DD sqrt_dd(DD a) {
  if (a.hi <= 0.0) return {};
  const double x = std::sqrt(a.hi);
  const double xx = x * x;
  const DD square{xx, std::fma(x, x, -xx)};
  const DD r = add(a, DD{-square.hi, -square.lo});
  return quick_two_sum(x, r.hi / (2.0 * x));
}

inline DD from_int128(__int128 v) {
  const auto hi = static_cast<double>(v);
  const auto lo = static_cast<double>(v - static_cast<__int128>(hi));
  return quick_two_sum(hi, lo);
}

}  // namespace ix::metrics::dd
