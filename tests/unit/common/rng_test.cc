#include "common/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ix {
namespace {

TEST(Rng, SameSeedSameSequence) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int index = 0; index < 100; ++index) {
    uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differs |= (x != c.next());
  }
  EXPECT_TRUE(differs);
}

TEST(Rng, KnownFirstValuesArePinned) {
  // Pinned so a change of algorithm (which would change every seeded prompt) is caught.
  Rng rng(0);
  EXPECT_EQ(rng.next(), 0x99ec5f36cb75f2b4ULL);
}

TEST(Rng, NamedStreamsAreIndependent) {
  Rng a = Rng::stream(7, "arrivals");
  Rng b = Rng::stream(7, "prompts");
  Rng a2 = Rng::stream(7, "arrivals");
  EXPECT_NE(a.next(), b.next());
  a = Rng::stream(7, "arrivals");
  EXPECT_EQ(a.next(), a2.next());
}

TEST(Rng, UniformIntStaysInRangeAndCoversIt) {
  Rng rng(1);
  std::vector<int> counts(7, 0);
  for (int index = 0; index < 7000; ++index) {
    int64_t v = rng.uniform_int(3, 9);
    ASSERT_GE(v, 3);
    ASSERT_LE(v, 9);
    ++counts[static_cast<size_t>(v - 3)];
  }
  for (int count : counts) EXPECT_GT(count, 800);
  EXPECT_EQ(rng.uniform_int(5, 5), 5);
}

TEST(Rng, DistributionMeansMatch) {
  Rng rng(2);
  const int n = 200000;
  double sum_u = 0, sum_e = 0, sum_g = 0, sum_g_small = 0, sum_n = 0, sum_n2 = 0;
  for (int index = 0; index < n; ++index) {
    double u = rng.uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum_u += u;
    sum_e += rng.exponential(2.0);
    sum_g += rng.gamma(4.0, 0.5);
    sum_g_small += rng.gamma(0.5, 2.0);
    double z = rng.normal();
    sum_n += z;
    sum_n2 += z * z;
  }
  EXPECT_NEAR(sum_u / n, 0.5, 0.01);
  EXPECT_NEAR(sum_e / n, 2.0, 0.03);
  EXPECT_NEAR(sum_g / n, 2.0, 0.03);        // shape * scale
  EXPECT_NEAR(sum_g_small / n, 1.0, 0.03);  // shape < 1 path
  EXPECT_NEAR(sum_n / n, 0.0, 0.01);
  EXPECT_NEAR(sum_n2 / n, 1.0, 0.02);
}

}  // namespace
}  // namespace ix
