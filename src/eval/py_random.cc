#include "eval/py_random.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <unordered_set>

namespace ix::eval {

PyRandom::PyRandom(uint64_t seed) {
  // random.seed(n): the 32-bit words of n, least significant first ([0] for 0).
  std::vector<uint32_t> key;
  do {
    key.push_back(static_cast<uint32_t>(seed & 0xffffffffU));
    seed >>= 32;
  } while (seed != 0);
  init_by_array(key);
}

void PyRandom::init_genrand(uint32_t s) {
  mt_[0] = s;
  for (int i = 1; i < kN; ++i) mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  index_ = kN;
}

void PyRandom::init_by_array(const std::vector<uint32_t>& key) {
  init_genrand(19650218U);
  int i = 1;
  size_t j = 0;
  for (int k = std::max<int>(kN, static_cast<int>(key.size())); k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] + static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= key.size()) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;
}

void PyRandom::twist() {
  constexpr uint32_t kUpper = 0x80000000U;
  constexpr uint32_t kLower = 0x7fffffffU;
  constexpr uint32_t kMatrix = 0x9908b0dfU;
  constexpr int kM = 397;
  for (int i = 0; i < kN; ++i) {
    const uint32_t y = (mt_[i] & kUpper) | (mt_[(i + 1) % kN] & kLower);
    mt_[i] = mt_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1U) != 0 ? kMatrix : 0U);
  }
  index_ = 0;
}

uint32_t PyRandom::next_u32() {
  if (index_ >= kN) twist();
  uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= y >> 18;
  return y;
}

uint64_t PyRandom::getrandbits(int k) {
  if (k <= 32) return next_u32() >> (32 - k);
  // Words least significant first; the last one keeps its top bits.
  const uint64_t low = next_u32();
  const uint64_t high = next_u32() >> (64 - k);
  return low | (high << 32);
}

uint64_t PyRandom::randbelow(uint64_t n) {
  const int k = std::bit_width(n);
  uint64_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

std::vector<size_t> PyRandom::sample(size_t population, size_t k) {
  std::vector<size_t> result(k);
  size_t setsize = 21;
  if (k > 5)
    setsize += static_cast<size_t>(std::pow(4.0, std::ceil(std::log(static_cast<double>(k) * 3) / std::log(4.0))));
  if (population <= setsize) {
    std::vector<size_t> pool(population);
    for (size_t i = 0; i < population; ++i) pool[i] = i;
    for (size_t i = 0; i < k; ++i) {
      const size_t j = randbelow(population - i);
      result[i] = pool[j];
      pool[j] = pool[population - i - 1];
    }
    return result;
  }
  std::unordered_set<size_t> selected;
  for (size_t i = 0; i < k; ++i) {
    size_t j = randbelow(population);
    while (selected.contains(j)) j = randbelow(population);
    selected.insert(j);
    result[i] = j;
  }
  return result;
}

}  // namespace ix::eval
