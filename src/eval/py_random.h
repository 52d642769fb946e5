// CPython's random.Random for integer seeds (MT19937 seeded by init_by_array), with the two
// calls lm-eval's few-shot sampler makes: getrandbits-based randbelow and sample(). Drawing the
// same few-shot examples as lm-eval for the same seed makes ixbench's prompts lm-eval's prompts.
//
// Thread-safety: an object is used by one thread at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ix::eval {

class PyRandom {
 public:
  explicit PyRandom(uint64_t seed);  // random.Random(seed)

  uint32_t next_u32();             // genrand_uint32
  uint64_t getrandbits(int k);     // k in [1, 64]
  uint64_t randbelow(uint64_t n);  // _randbelow_with_getrandbits, n >= 1
  // random.sample(range(population), k): k distinct indices in draw order (k <= population).
  std::vector<size_t> sample(size_t population, size_t k);

 private:
  static constexpr int kN = 624;
  void init_genrand(uint32_t s);
  void init_by_array(const std::vector<uint32_t>& key);
  void twist();

  std::array<uint32_t, kN> mt_{};
  int index_ = kN;
};

}  // namespace ix::eval
