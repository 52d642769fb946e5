#include "common/rng.h"

#include <cmath>

namespace ix {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

Rng::Rng(uint64_t seed) {
  uint64_t state = seed;
  for (auto& word : s_) word = splitmix64(state);
}

Rng Rng::stream(uint64_t seed, std::string_view name) {
  uint64_t mixed = seed;
  uint64_t salt = fnv1a64(name);
  return Rng(splitmix64(mixed) ^ salt);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform01() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (range == 0) return static_cast<int64_t>(next());  // the full 64-bit range
  // Lemire's rejection keeps the draw unbiased.
  const uint64_t threshold = (0 - range) % range;
  while (true) {
    uint64_t x = next();
    __uint128_t m = static_cast<__uint128_t>(x) * range;
    if (static_cast<uint64_t>(m) >= threshold) return lo + static_cast<int64_t>(m >> 64);
  }
}

double Rng::exponential(double mean) {
  double u = uniform01();
  return -std::log1p(-u) * mean;
}

double Rng::normal() {
  // Marsaglia polar method; the spare value is dropped to keep the stream stateless.
  while (true) {
    double u = 2.0 * uniform01() - 1.0;
    double v = 2.0 * uniform01() - 1.0;
    double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
  }
}

double Rng::gamma(double shape, double scale) {
  if (shape < 1.0) {
    // Boost shape by one and correct with U^(1/shape).
    double u = uniform01();
    while (u == 0.0) u = uniform01();
    return gamma(shape + 1.0, scale) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x = normal();
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    double u = uniform01();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

}  // namespace ix
