#include "metrics/statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace ix::metrics {
namespace {

// Expected values are numpy 1.26 outputs (np.mean / np.median / np.std / np.percentile) on the
// same inputs, written as the exact doubles numpy prints.

TEST(Statistics, EmptyInputGivesZeroLikeVllmsOrZero) {
  std::vector<double> none;
  EXPECT_EQ(mean(none), 0.0);
  EXPECT_EQ(median(none), 0.0);
  EXPECT_EQ(std_dev(none), 0.0);
  EXPECT_EQ(percentile(none, 99), 0.0);
}

TEST(Statistics, BasicValuesMatchNumpy) {
  std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(mean(v), 2.5);
  EXPECT_EQ(median(v), 2.5);
  EXPECT_EQ(std_dev(v), 1.118033988749895);  // np.std([1,2,3,4])
  EXPECT_EQ(percentile(v, 90), 3.7);         // np.percentile([1,2,3,4], 90)
  EXPECT_EQ(percentile(v, 0), 1.0);
  EXPECT_EQ(percentile(v, 100), 4.0);
  EXPECT_EQ(percentile(v, 50), 2.5);
  std::vector<double> odd = {5, 1, 3};
  EXPECT_EQ(median(odd), 3.0);
}

TEST(Statistics, PercentileUsesLinearInterpolationBetweenNeighbours) {
  std::vector<double> v;
  for (int i = 1; i <= 10; ++i) v.push_back(i);
  // np.percentile(np.arange(1, 11), [90, 99, 99.9]) -> [9.1, 9.91, 9.991]
  EXPECT_NEAR(percentile(v, 90), 9.1, 1e-12);
  EXPECT_NEAR(percentile(v, 99), 9.91, 1e-12);
  EXPECT_NEAR(percentile(v, 99.9), 9.991, 1e-12);
  // Single element: every percentile is that element.
  std::vector<double> one = {7.5};
  EXPECT_EQ(percentile(one, 99.9), 7.5);
  EXPECT_EQ(std_dev(one), 0.0);
}

TEST(Statistics, SumUsesNumpyPairwiseOrder) {
  // np.sum([0.1] * 10) == 1.0 exactly, while a left-to-right sum gives 0.9999999999999999:
  // numpy's 8-way unrolled pairwise summation associates differently.
  std::vector<double> tenths(10, 0.1);
  EXPECT_EQ(pairwise_sum(tenths), 1.0);
  double naive = 0.0;
  for (double x : tenths) naive += x;
  EXPECT_NE(naive, 1.0);
  EXPECT_EQ(mean(tenths), 0.1);
  // Below 8 elements numpy sums left to right.
  std::vector<double> three = {0.1, 0.2, 0.3};
  EXPECT_EQ(pairwise_sum(three), 0.1 + 0.2 + 0.3);
}

TEST(Statistics, PercentileLabelsFollowVllm) {
  EXPECT_EQ(percentile_label(99), "99");
  EXPECT_EQ(percentile_label(90.0), "90");
  EXPECT_EQ(percentile_label(99.9), "99.9");
  EXPECT_EQ(percentile_label(99.99), "99.99");
}

TEST(Statistics, SummarizeScalesAfterComputing) {
  std::vector<double> seconds = {0.05, 0.051, 0.049};
  std::vector<double> ps = {50, 99};
  Summary s = summarize(seconds, ps, 1000.0);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.mean, mean(seconds) * 1000.0);
  EXPECT_EQ(s.median, 0.05 * 1000.0);
  EXPECT_EQ(s.min, 0.049 * 1000.0);
  EXPECT_EQ(s.max, 0.051 * 1000.0);
  ASSERT_EQ(s.percentiles.size(), 2u);
  EXPECT_EQ(s.percentiles[1].first, 99);
  EXPECT_EQ(s.percentiles[1].second, percentile(seconds, 99) * 1000.0);
}

// summarize() selects only the order statistics it reads; it must give exactly what a full sort
// gives, for every size parity, ties, and percentiles at and between ranks (0, 100, tiny, 99.9),
// and std must equal np.std's definition on the materialised squared deviations.
TEST(Statistics, SummarizeBySelectionEqualsFullSort) {
  std::mt19937_64 rng(11);
  const std::vector<double> ps = {0, 0.001, 25, 50, 90, 99, 99.9, 100};
  for (size_t n : {1u, 2u, 3u, 7u, 8u, 9u, 128u, 129u, 1000u, 40001u}) {
    std::vector<double> values(n);
    for (auto& v : values) v = (rng() % 4 == 0) ? 0.25 : std::ldexp(static_cast<double>(rng() % 1000000), -20);
    const Summary s = summarize(values, ps, 1000.0);
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    const double m = pairwise_sum(values) / static_cast<double>(n);
    std::vector<double> squared(n);
    for (size_t i = 0; i < n; ++i) squared[i] = (values[i] - m) * (values[i] - m);
    EXPECT_EQ(s.count, static_cast<int64_t>(n));
    EXPECT_EQ(s.mean, m * 1000.0) << n;
    EXPECT_EQ(s.std_dev, std::sqrt(pairwise_sum(squared) / static_cast<double>(n)) * 1000.0) << n;
    EXPECT_EQ(s.median, (n % 2 ? sorted[n / 2] : (0.0 + sorted[n / 2 - 1] + sorted[n / 2]) / 2.0) * 1000.0) << n;
    EXPECT_EQ(s.min, sorted.front() * 1000.0);
    EXPECT_EQ(s.max, sorted.back() * 1000.0);
    ASSERT_EQ(s.percentiles.size(), ps.size());
    for (size_t i = 0; i < ps.size(); ++i) {
      EXPECT_EQ(s.percentiles[i].first, ps[i]);
      EXPECT_EQ(s.percentiles[i].second, percentile_sorted(sorted, ps[i]) * 1000.0) << "n " << n << " p " << ps[i];
    }
    // In place: same statistics, and the values are only permuted.
    std::vector<double> scratch = values;
    const Summary in_place = summarize_in_place(scratch, ps, 1000.0);
    EXPECT_EQ(in_place.median, s.median);
    EXPECT_EQ(in_place.std_dev, s.std_dev);
    EXPECT_EQ(in_place.percentiles, s.percentiles);
    std::sort(scratch.begin(), scratch.end());
    EXPECT_EQ(scratch, sorted);
  }
}

TEST(CountedSamples, StatisticsAreThoseOfTheListWithEveryValueRepeated) {
  std::mt19937_64 rng(5);
  const std::vector<double> ps = {0, 0.001, 25, 50, 90, 99, 99.9, 100};
  for (size_t distinct : {1u, 2u, 3u, 9u, 200u, 5000u, 20000u}) {
    CountedSamples counted;
    std::vector<double> list;
    // Runs of equal values in arrival order, as a simulator's batch emits them, and values that
    // come back later (merged with their earlier runs).
    for (size_t i = 0; i < 3 * distinct; ++i) {
      const double value = static_cast<double>(rng() % distinct + 1) / 1e9 * 1e6;
      const int64_t count = static_cast<int64_t>(rng() % 5) + 1;
      for (int64_t k = 0; k < count; ++k) list.push_back(value);
      if (i % 2) {
        counted.add(value, count);
      } else {
        for (int64_t k = 0; k < count; ++k) counted.add(value);
      }
    }
    const Summary got = counted.summarize(ps, 1000.0);
    const Summary want = summarize(list, ps, 1000.0);
    EXPECT_EQ(got.count, want.count);
    EXPECT_EQ(got.median, want.median) << distinct;
    EXPECT_EQ(got.min, want.min);
    EXPECT_EQ(got.max, want.max);
    EXPECT_EQ(got.percentiles, want.percentiles) << distinct;
    // Rounded once where numpy sums pairwise: equal but for the last bits (numpy's std of equal
    // values is the rounding of its mean, not 0).
    EXPECT_NEAR(got.mean, want.mean, 1e-15 * want.mean) << distinct;
    EXPECT_NEAR(got.std_dev, want.std_dev, 1e-15 * want.mean) << distinct;
  }
}

// The same samples added in another order, with their counts split otherwise, give the same
// statistics to the bit (the simulator's summary relies on it).
TEST(CountedSamples, TheOrderOfTheAddsDoesNotMatter) {
  std::mt19937_64 rng(9);
  const std::vector<double> ps = {1, 50, 99.9};
  for (size_t distinct : {3u, 8u, 9u, 40u, 9000u}) {
    std::vector<std::pair<double, int64_t>> samples;
    for (size_t i = 0; i < 4 * distinct + 5000; ++i)
      samples.emplace_back(static_cast<double>(rng() % distinct + 1) / 3e7, static_cast<int64_t>(rng() % 7) + 1);
    CountedSamples in_order, shuffled;
    for (const auto& [value, count] : samples) in_order.add(value, count);
    std::shuffle(samples.begin(), samples.end(), rng);
    for (const auto& [value, count] : samples)
      for (int64_t k = 0; k < count; ++k) shuffled.add(value);
    const Summary a = in_order.summarize(ps), b = shuffled.summarize(ps);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.mean, b.mean) << distinct;
    EXPECT_EQ(a.std_dev, b.std_dev) << distinct;
    EXPECT_EQ(a.median, b.median);
    EXPECT_EQ(a.percentiles, b.percentiles);
  }
}

TEST(CountedSamples, WholeNumbersGiveNumpysMeanAndEmptyGivesZero) {
  CountedSamples counted;
  const Summary none = counted.summarize(std::vector<double>{99}, 1.0);
  EXPECT_EQ(none.count, 0);
  EXPECT_EQ(none.mean, 0.0);
  ASSERT_EQ(none.percentiles.size(), 1u);
  EXPECT_EQ(none.percentiles[0].second, 0.0);
  // Tokens per chunk: whole numbers sum exactly either way.
  std::vector<double> list;
  for (int i = 0; i < 1000; ++i) {
    const double tokens = 1 + i % 4;
    counted.add(tokens);
    list.push_back(tokens);
  }
  const Summary got = counted.summarize({}, 1.0), want = summarize(list, {}, 1.0);
  EXPECT_EQ(got.mean, want.mean);
  EXPECT_EQ(got.median, want.median);
  EXPECT_EQ(got.max, 4.0);
}

TEST(SampleRecorder, MergeEqualsOneRecorderWithAllSamples) {
  SampleRecorder a, b, all;
  for (int i = 0; i < 300; ++i) {
    double x = std::sin(i) * 10 + 20;
    (i % 3 ? a : b).add(x);
  }
  for (double x : a.values()) all.add(x);
  for (double x : b.values()) all.add(x);
  a.merge(b);
  std::vector<double> ps = {90, 99};
  Summary merged = a.summarize(ps), direct = all.summarize(ps);
  EXPECT_EQ(merged.count, 300);
  EXPECT_EQ(merged.median, direct.median);
  EXPECT_EQ(merged.percentiles[1].second, direct.percentiles[1].second);
  EXPECT_EQ(merged.mean, direct.mean);
}

TEST(RunningStats, MergeMatchesSequential) {
  RunningStats a, b, all;
  for (int i = 0; i < 1000; ++i) {
    double x = (i * 37 % 101) / 7.0;
    (i < 400 ? a : b).add(x);
    all.add(x);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), 1000);
  EXPECT_NEAR(a.mean(), all.mean(), 1e-12);
  EXPECT_NEAR(a.std_dev(), all.std_dev(), 1e-9);
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
}

TEST(LogHistogram, PercentilesWithinRelativeError) {
  LogHistogram h, h2;
  for (int64_t v = 1; v <= 100000; ++v) (v % 2 ? h : h2).add(v * 1000);
  h.merge(h2);
  EXPECT_EQ(h.count(), 100000);
  const double p99 = static_cast<double>(h.percentile(99));
  EXPECT_NEAR(p99, 99'000'000.0, 99'000'000.0 / 60);
  EXPECT_GE(p99, 99'000'000.0);
  EXPECT_EQ(h.percentile(100), 100'000'000);
  EXPECT_EQ(LogHistogram().percentile(50), 0);
  LogHistogram small;
  small.add(5);
  EXPECT_EQ(small.percentile(50), 5);
}

}  // namespace
}  // namespace ix::metrics
