#include "metrics/statistics.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>

#include "common/strings.h"
#include "metrics/double_double.h"

namespace ix::metrics {
namespace {

// numpy/_core/src/umath/loops_utils.h.src, DOUBLE_pairwise_sum: the exact association order
// numpy uses, so sums (and therefore means and std) round identically. `at(i)` gives element i,
// so a sum of squared deviations is taken without materialising them (np.std's (x−m)² array
// holds exactly these values, summed in this order).
template <typename At>
double pairwise_sum_impl(const At& at, size_t first, size_t n) {
  constexpr size_t kBlock = 128;
  if (n < 8) {
    double res = 0.0;
    for (size_t i = 0; i < n; ++i) res += at(first + i);
    return res;
  }
  if (n <= kBlock) {
    double r[8];
    for (size_t j = 0; j < 8; ++j) r[j] = at(first + j);
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (size_t j = 0; j < 8; ++j) r[j] += at(first + i + j);
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += at(first + i);
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum_impl(at, first, n2) + pairwise_sum_impl(at, first + n2, n - n2);
}

// numpy's _lerp: a + (b-a)·t for t < 0.5, b − (b−a)·(1−t) otherwise (exact at both ends).
double numpy_lerp(double a, double b, double t) {
  const double diff = b - a;
  if (t >= 0.5) return b - diff * (1.0 - t);
  return a + diff * t;
}

// The ranks np.percentile's method "linear" reads at p among n sorted values, and the weight of
// the upper one: virtual index (p/100)·(n−1); one rank (lo == hi) at or beyond either end.
struct PercentileRanks {
  size_t lo = 0;
  size_t hi = 0;
  double gamma = 0.0;
};

PercentileRanks percentile_ranks(size_t n, double p) {
  const double virtual_index = static_cast<double>(n - 1) * (p / 100.0);
  if (virtual_index >= static_cast<double>(n - 1)) return {n - 1, n - 1, 0.0};
  if (virtual_index < 0.0) return {0, 0, 0.0};
  const double previous = std::floor(virtual_index);
  const auto lo = static_cast<size_t>(previous);
  return {lo, lo + 1, virtual_index - previous};
}

// np.percentile and np.median of n sorted values, `at(rank)` giving the value of each rank: the
// one definition behind every percentile and median here, whatever holds the values.
template <typename At>
double percentile_by_rank(size_t n, double p, const At& at) {
  if (n == 0) return 0.0;
  const PercentileRanks r = percentile_ranks(n, p);
  if (r.lo == r.hi) return at(r.lo);
  return numpy_lerp(at(r.lo), at(r.hi), r.gamma);
}

template <typename At>
double median_by_rank(size_t n, const At& at) {
  if (n == 0) return 0.0;
  if (n % 2 == 1) return at(n / 2);
  // np.median takes np.mean of the two middle elements: (0 + a + b) / 2.
  return (0.0 + at(n / 2 - 1) + at(n / 2)) / 2.0;
}

}  // namespace

double pairwise_sum(std::span<const double> values) {
  // The reduction starts from add's identity 0.0 and adds the pairwise sum of the whole array.
  return 0.0 + pairwise_sum_impl([values](size_t i) { return values[i]; }, 0, values.size());
}

double mean(std::span<const double> values) {
  if (values.empty()) return 0.0;
  return pairwise_sum(values) / static_cast<double>(values.size());
}

double std_dev(std::span<const double> values) {
  if (values.empty()) return 0.0;
  const double n = static_cast<double>(values.size());
  const double m = pairwise_sum(values) / n;
  const auto squared_deviation = [values, m](size_t i) {
    const double d = values[i] - m;
    return d * d;
  };
  return std::sqrt((0.0 + pairwise_sum_impl(squared_deviation, 0, values.size())) / n);
}

static double median_sorted(std::span<const double> sorted) {
  return median_by_rank(sorted.size(), [sorted](size_t i) { return sorted[i]; });
}

double median(std::span<const double> values) {
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return median_sorted(sorted);
}

double percentile_sorted(std::span<const double> sorted, double p) {
  return percentile_by_rank(sorted.size(), p, [sorted](size_t i) { return sorted[i]; });
}

double percentile(std::span<const double> values, double p) {
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return percentile_sorted(sorted, p);
}

std::string percentile_label(double p) {
  // vLLM: str(int(p)) if int(p) == p else str(p); Python's str(float) is the shortest repr,
  // which fmt's "{}" also produces.
  if (p == std::floor(p) && std::abs(p) < 1e15) return fmt::format("{}", static_cast<int64_t>(p));
  return fmt::format("{}", p);
}

namespace {

// The order statistics of `values` that the median and the requested percentiles read, found by
// selection (std::nth_element) instead of a full sort: each needed rank k is placed at values[k]
// with everything before it ≤ and everything after it ≥. Ranks are taken in ascending order, each
// selection within the part right of the previous one, so the cost is about one pass per rank
// instead of n·log n (a sweep's pooled ITL array holds millions of gaps). Reorders `values`.
struct OrderStatistics {
  std::span<double> values;
  std::vector<size_t> ranks;  // ascending, distinct

  explicit OrderStatistics(std::span<double> v) : values(v) {}
  // Ranks that linear interpolation at p reads, as percentile_sorted computes them.
  void need(double p) {
    if (values.empty()) return;
    const PercentileRanks r = percentile_ranks(values.size(), p);
    ranks.push_back(r.lo);
    ranks.push_back(r.hi);
  }
  void select() {
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    auto from = values.begin();
    for (size_t rank : ranks) {
      const auto nth = values.begin() + static_cast<std::ptrdiff_t>(rank);
      std::nth_element(from, nth, values.end());
      from = nth + 1;
    }
  }
};

}  // namespace

Summary summarize_in_place(std::span<double> values, std::span<const double> percentiles, double scale) {
  Summary s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) {
    for (double p : percentiles) s.percentiles.emplace_back(p, 0.0);
    return s;
  }
  // Mean and std first: numpy's pairwise sums depend on the order of the values.
  s.mean = mean(values) * scale;
  s.std_dev = std_dev(values) * scale;
  const auto [lowest, highest] = std::minmax_element(values.begin(), values.end());
  s.min = *lowest * scale;
  s.max = *highest * scale;
  OrderStatistics order(values);
  order.need(50.0);
  for (double p : percentiles) order.need(p);
  order.select();
  // Only the selected ranks are read below, and each holds its sorted value.
  const std::span<const double> sorted = values;
  s.median = median_sorted(sorted) * scale;
  for (double p : percentiles) s.percentiles.emplace_back(p, percentile_sorted(sorted, p) * scale);
  return s;
}

Summary summarize(std::span<const double> values, std::span<const double> percentiles, double scale) {
  std::vector<double> copy(values.begin(), values.end());
  return summarize_in_place(copy, percentiles, scale);
}

void SampleRecorder::merge(const SampleRecorder& other) {
  values_.insert(values_.end(), other.values_.begin(), other.values_.end());
}

Summary SampleRecorder::summarize(std::span<const double> percentiles, double scale) const {
  return metrics::summarize(values_, percentiles, scale);
}

// Moves the finished run into recent_, merging recent_ into distinct_ once it has grown as large
// (amortised O(log d) per run for d distinct values, memory at most about twice d).
void CountedSamples::add_other(double value, int64_t count) {
  for (size_t slot = 0; slot < kOpen; ++slot) {
    if (open_[slot].second > 0 && open_[slot].first == value) {
      open_[slot].second += count;
      last_ = slot;
      return;
    }
  }
  auto& slot = open_[next_slot_];
  if (slot.second > 0) recent_.push_back(slot);
  slot = {value, count};
  last_ = next_slot_;
  next_slot_ = (next_slot_ + 1) % kOpen;
  constexpr size_t kMinMerge = 4096;
  if (recent_.size() >= std::max(kMinMerge, distinct_.size())) merge_recent();
}

// distinct_ stays sorted: recent_ is sorted on its own, then the two sorted ranges are merged.
void CountedSamples::merge_recent() {
  sort_and_merge(recent_);
  const auto by_value = [](const auto& a, const auto& b) { return a.first < b.first; };
  const auto middle = static_cast<std::ptrdiff_t>(distinct_.size());
  distinct_.insert(distinct_.end(), recent_.begin(), recent_.end());
  recent_.clear();
  std::inplace_merge(distinct_.begin(), distinct_.begin() + middle, distinct_.end(), by_value);
  merge_equal(distinct_);
}

void CountedSamples::sort_and_merge(Counts& counts) {
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  merge_equal(counts);
}

void CountedSamples::merge_equal(Counts& counts) {
  size_t out = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (out > 0 && counts[out - 1].first == counts[i].first) {
      counts[out - 1].second += counts[i].second;
    } else {
      counts[out++] = counts[i];
    }
  }
  counts.resize(out);
}

Summary CountedSamples::summarize(std::span<const double> percentiles, double scale) const {
  Summary s;
  s.count = count_;
  if (count_ == 0) {
    for (double p : percentiles) s.percentiles.emplace_back(p, 0.0);
    return s;
  }
  Counts counts = distinct_;
  counts.insert(counts.end(), recent_.begin(), recent_.end());
  for (const auto& slot : open_)
    if (slot.second > 0) counts.push_back(slot);
  sort_and_merge(counts);
  const auto n = static_cast<double>(count_);
  // np.mean: the sum divided by n; np.std: the mean of the squared deviations, each as numpy
  // computes it elementwise ((x - m) then its square), then the square root.
  dd::DD sum, squares;
  for (const auto& [value, k] : counts) sum = dd::add(sum, dd::mul({value, 0.0}, {static_cast<double>(k), 0.0}));
  const double m = sum.hi / n;
  for (const auto& [value, k] : counts) {
    const double d = value - m;
    squares = dd::add(squares, dd::mul({d * d, 0.0}, {static_cast<double>(k), 0.0}));
  }
  s.mean = m * scale;
  s.std_dev = std::sqrt(squares.hi / n) * scale;
  s.min = counts.front().first * scale;
  s.max = counts.back().first * scale;
  // Rank r holds the value whose cumulative count first exceeds r.
  std::vector<int64_t> cumulative(counts.size());
  int64_t running = 0;
  for (size_t i = 0; i < counts.size(); ++i) cumulative[i] = running += counts[i].second;
  const auto at = [&](size_t rank) {
    const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), static_cast<int64_t>(rank));
    return counts[static_cast<size_t>(it - cumulative.begin())].first;
  };
  const auto total = static_cast<size_t>(count_);
  s.median = median_by_rank(total, at) * scale;
  for (double p : percentiles) s.percentiles.emplace_back(p, percentile_by_rank(total, p, at) * scale);
  return s;
}

void RunningStats::add(double value) {
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  ++count_;
  const double delta = value - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (value - mean_);
}

void RunningStats::merge(const RunningStats& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    *this = other;
    return;
  }
  const double na = static_cast<double>(count_);
  const double nb = static_cast<double>(other.count_);
  const double n = na + nb;
  const double delta = other.mean_ - mean_;
  mean_ += delta * nb / n;
  m2_ += other.m2_ + delta * delta * na * nb / n;
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

double RunningStats::std_dev() const {
  return std::sqrt(variance());
}

namespace {
constexpr int kSub = 1 << 6;

size_t bucket_index(int64_t value) {
  if (value < kSub) return static_cast<size_t>(std::max<int64_t>(value, 0));
  const int e = 63 - std::countl_zero(static_cast<uint64_t>(value));
  const int64_t sub = (value >> (e - 6)) & (kSub - 1);
  return static_cast<size_t>((e - 5) * kSub + sub);
}

int64_t bucket_upper(size_t index) {
  if (index < static_cast<size_t>(kSub)) return static_cast<int64_t>(index);
  const int e = static_cast<int>(index / kSub) + 5;
  const int64_t sub = static_cast<int64_t>(index % kSub);
  const int64_t lower = (kSub + sub) << (e - 6);
  return lower + (int64_t{1} << (e - 6)) - 1;
}
}  // namespace

LogHistogram::LogHistogram() : buckets_(static_cast<size_t>((63 - 5) * kSub), 0) {}

void LogHistogram::add(int64_t value) {
  ++buckets_[bucket_index(value)];
  ++count_;
  max_ = std::max(max_, value);
}

void LogHistogram::merge(const LogHistogram& other) {
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  max_ = std::max(max_, other.max_);
}

int64_t LogHistogram::percentile(double p) const {
  if (count_ == 0) return 0;
  auto rank = static_cast<int64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<int64_t>(rank, 1, count_);
  int64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::min(bucket_upper(i), max_);
  }
  return max_;
}

Result<std::vector<double>> parse_metric_percentiles(std::string_view text) {
  auto refuse = [text](std::string_view problem) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--metric-percentiles '{}': {}; list distinct numbers in [0, 100] separated by commas, "
                            "e.g. --metric-percentiles 90,99,99.9",
                            text, problem));
  };
  if (strip(text).empty()) return refuse("no percentile given");
  std::vector<std::string_view> items;  // every item between commas, trimmed, empty ones included
  for (size_t pos = 0; pos <= text.size();) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    items.push_back(strip(text.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  std::vector<double> out;
  std::vector<std::string_view> given;  // as written, beside `out`
  for (size_t index = 0; index < items.size(); ++index) {
    const std::string item(items[index]);
    if (item.empty()) return refuse(fmt::format("item {} of {} is empty", index + 1, items.size()));
    char* end = nullptr;
    const double value = std::strtod(item.c_str(), &end);
    if (end != item.c_str() + item.size() || !(value >= 0 && value <= 100))
      return refuse(fmt::format("'{}' is not a number in [0, 100]", item));
    // Equal values share one result key (p99 for "99" and "99.0").
    if (const auto seen = std::find(out.begin(), out.end(), value); seen != out.end()) {
      const std::string_view first = given[static_cast<size_t>(seen - out.begin())];
      return refuse(fmt::format("percentile {} is given twice{}", percentile_label(value),
                                first == item ? "" : fmt::format(" ('{}' and '{}')", first, item)));
    }
    out.push_back(value);
    given.push_back(items[index]);
  }
  return out;
}

}  // namespace ix::metrics
