// Seeded, reproducible random streams.
//
// Every random decision in ixbench (prompt tokens, lengths, arrival gaps, fault injection,
// simulator jitter) draws from a named stream derived from one user seed, so adding a new consumer
// never shifts the numbers another consumer sees: stream("arrivals") is the same for a given seed
// whatever else is drawn. The generator is xoshiro256** seeded through SplitMix64; the algorithm
// is fixed here (not std::mt19937 + std distributions, whose outputs differ across libraries), so
// results are byte-identical across compilers and platforms.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace ix {

class Rng {
 public:
  using result_type = uint64_t;

  explicit Rng(uint64_t seed);
  // A stream independent of every other name for the same seed.
  static Rng stream(uint64_t seed, std::string_view name);

  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return UINT64_MAX; }
  uint64_t operator()() { return next(); }

  uint64_t next();
  // Uniform in [0, 1) with 53 bits.
  double uniform01();
  // Uniform integer in [lo, hi] (inclusive), unbiased.
  int64_t uniform_int(int64_t lo, int64_t hi);
  // Exponential with the given mean.
  double exponential(double mean);
  // Gamma(shape, scale) via Marsaglia–Tsang; shape > 0.
  double gamma(double shape, double scale);
  // Standard normal.
  double normal();

 private:
  std::array<uint64_t, 4> s_;
};

// 64-bit FNV-1a, for deriving stream seeds from names.
uint64_t fnv1a64(std::string_view text);

}  // namespace ix
