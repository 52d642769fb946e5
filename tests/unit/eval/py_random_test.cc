// PyRandom against CPython's random module: fixed values printed by CPython 3.11, and, when
// python3 is on PATH, fresh draws for further seeds.
#include "eval/py_random.h"

#include <gtest/gtest.h>

#include <sstream>

#include "support/subprocess.h"

namespace ix::eval {
namespace {

TEST(PyRandom, SampleMatchesCPythonForLmEvalsFewshotSeed) {
  // random.Random(1234); [r.sample(range(7473), 5) for _ in range(3)]
  PyRandom r(1234);
  EXPECT_EQ(r.sample(7473, 5), (std::vector<size_t>{6374, 3610, 957, 61, 742}));
  EXPECT_EQ(r.sample(7473, 5), (std::vector<size_t>{7462, 6610, 4769, 286, 5501}));
  EXPECT_EQ(r.sample(7473, 5), (std::vector<size_t>{5677, 687, 806, 6279, 2905}));
}

TEST(PyRandom, GetrandbitsAndRandbelowMatchCPython) {
  PyRandom zero(0);  // random.Random(0).getrandbits(32) x 3
  EXPECT_EQ(zero.getrandbits(32), 3626764237U);
  EXPECT_EQ(zero.getrandbits(32), 1654615998U);
  EXPECT_EQ(zero.getrandbits(32), 3255389356U);
  PyRandom big((uint64_t{1} << 40) + 7);  // a seed of two 32-bit words
  EXPECT_EQ(big.getrandbits(40), 822974591194ULL);
  EXPECT_EQ(big.getrandbits(64), 17301799233109514933ULL);
  EXPECT_EQ(big.sample(10, 4), (std::vector<size_t>{9, 7, 4, 8}));  // the pool algorithm (n <= setsize)
  EXPECT_EQ(big.sample(30, 10), (std::vector<size_t>{4, 16, 12, 28, 23, 11, 27, 14, 22, 24}));
  PyRandom r42(42);  // random.Random(42).randrange(7473) x 3
  EXPECT_EQ(r42.randbelow(7473), 5238U);
  EXPECT_EQ(r42.randbelow(7473), 912U);
  EXPECT_EQ(r42.randbelow(7473), 204U);
}

TEST(PyRandom, SampleMatchesCPythonForMoreSeedsWhenPythonIsPresent) {
  const std::string python = ix::testing::find_on_path("python3");
  if (python.empty()) GTEST_SKIP() << "python3 is not on PATH";
  const std::string script =
      "import random\n"
      "for seed in (1, 7, 1234, 99991, 2**33 + 5):\n"
      "    r = random.Random(seed)\n"
      "    print(' '.join(' '.join(map(str, r.sample(range(n), k))) for n, k in ((7473, 5), (100, 8), (12, 12))))\n";
  auto run = ix::testing::run_process({python, "-c", script});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::istringstream lines(run.out);
  for (uint64_t seed : {uint64_t{1}, uint64_t{7}, uint64_t{1234}, uint64_t{99991}, (uint64_t{1} << 33) + 5}) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line));
    PyRandom r(seed);
    std::string ours;
    for (auto [n, k] : {std::pair<size_t, size_t>{7473, 5}, {100, 8}, {12, 12}}) {
      for (size_t v : r.sample(n, k)) ours += (ours.empty() ? "" : " ") + std::to_string(v);
    }
    EXPECT_EQ(ours, line) << "seed " << seed;
  }
}

}  // namespace
}  // namespace ix::eval
