// Statistics with numpy semantics, and mergeable sample recorders.
//
// vLLM and InferenceX compute every latency statistic with numpy (np.mean, np.median, np.std,
// np.percentile), and dashboards compare ixbench output with theirs digit for digit. These
// functions reproduce numpy's float64 arithmetic, not just its definitions:
//   - mean: numpy's pairwise summation (blocks of 8, 128-element leaves), divided by n;
//   - std: population (ddof = 0): sqrt(mean((x - mean(x))^2)), same summation;
//   - median: middle element, or the mean of the two middle elements;
//   - percentile(p): method "linear" (numpy's default): virtual index (p/100)·(n−1), linear
//     interpolation with numpy's two-sided lerp (exact at both ends).
// Empty input: vLLM calls `np.mean(xs or 0)`, i.e. statistics of [0], so every function returns 0
// for an empty span (never NaN), matching the result files peers write.
//
// Thread-safety: free functions are pure. SampleRecorder and RunningStats are plain values: one
// per worker thread, no internal locking; merge them once at the end (Nighthawk style).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ix::metrics {

// numpy's float64 pairwise sum (np.add.reduce over a contiguous array).
double pairwise_sum(std::span<const double> values);

double mean(std::span<const double> values);
double median(std::span<const double> values);
// Population standard deviation (np.std, ddof = 0).
double std_dev(std::span<const double> values);
// np.percentile(values, p), p in [0, 100], method "linear".
double percentile(std::span<const double> values, double p);
// Same, on values already sorted ascending (no copy).
double percentile_sorted(std::span<const double> sorted, double p);

// Python's statistics module (3.11), as InferenceX's agentic aggregation uses it. Python computes
// mean() and pstdev() as exact rationals rounded once to a double; these compute them in
// double-double arithmetic (about 106 bits, error-free sums and products) and round once, which
// gives the same double unless the exact value lies within about 2^-90 (relative) of a rounding
// boundary. Non-finite inputs give the plain floating-point result. Empty input: 0.
double python_mean(std::span<const double> values);
// Population standard deviation (statistics.pstdev).
double python_pstdev(std::span<const double> values);

// statistics.mean() of integers: an integer when the count divides the sum, else the correctly
// rounded quotient.
struct PythonNumber {
  bool is_int = false;
  int64_t int_value = 0;
  double float_value = 0.0;
};
PythonNumber python_mean(std::span<const int64_t> values);
double python_pstdev(std::span<const int64_t> values);

// The suffix vLLM uses in key names: 99 -> "99", 99.9 -> "99.9", 50.0 -> "50".
std::string percentile_label(double p);

// --metric-percentiles text ("90,99,99.9"): distinct numbers in [0, 100] separated by commas.
// vLLM fails on an empty item (float('')); dropping it silently left "" reporting no percentile
// at all, and a repeated value (also "99" beside "99.0": one result key) printed its summary lines
// twice and wrote its JSON key twice. Errors quote the text and give an example.
Result<std::vector<double>> parse_metric_percentiles(std::string_view text);

struct Summary {
  int64_t count = 0;
  double mean = 0.0;
  double median = 0.0;
  double std_dev = 0.0;
  double min = 0.0;
  double max = 0.0;
  // (p, value) in the order requested.
  std::vector<std::pair<double, double>> percentiles;
};

// All statistics at once (selection of the needed order statistics, not a full sort). `scale`
// multiplies every statistic *after* it is computed on the raw values, as vLLM does
// (`np.mean(ttfts) * 1000`), so seconds→ms matches bit for bit.
Summary summarize(std::span<const double> values, std::span<const double> percentiles, double scale = 1.0);
// Same, without a copy: reorders `values` (for callers done with them, e.g. a run's pooled ITLs).
Summary summarize_in_place(std::span<double> values, std::span<const double> percentiles, double scale = 1.0);

// Keeps every sample so percentiles are exact (numpy-compatible), at 8 bytes per sample.
// Mergeable: per-worker recorders are appended to one another at the end of a run; the result of
// statistics does not depend on merge order except through sample order, and all statistics
// here except mean/std rounding are order-independent (mean/std follow numpy on the merged order).
class SampleRecorder {
 public:
  void add(double value) { values_.push_back(value); }
  void reserve(size_t n) { values_.reserve(n); }
  void merge(const SampleRecorder& other);
  void clear() { values_.clear(); }

  size_t count() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  std::span<const double> values() const { return values_; }
  Summary summarize(std::span<const double> percentiles, double scale = 1.0) const;

 private:
  std::vector<double> values_;
};

// Samples kept as distinct values with counts, for samples that repeat: a simulator's inter-token
// gaps are step times shared by every request of a batch, so the hundreds of millions of gaps of
// a large sweep point hold a few hundred thousand distinct values. Statistics are those of the
// list with each value repeated `count` times: median, percentiles, min and max exactly as
// summarize() gives them (the same order statistics, the same interpolation); mean and std as
// numpy defines them (std over the same squared deviations from the mean), each sum rounded
// once (double-double, about 106 bits) where numpy sums the list pairwise in its order, so the
// two may differ in the last bit. The order of the adds does not matter. Finite values only.
// Memory: O(distinct values); a value equal to one of the last kOpen distinct values added costs
// a few comparisons (a batch's gap split over 1..k tokens by speculative decoding cycles through
// k values).
class CountedSamples {
 public:
  void add(double value, int64_t count = 1) {
    count_ += count;
    if (open_[last_].second > 0 && value == open_[last_].first) {
      open_[last_].second += count;
      return;
    }
    add_other(value, count);
  }
  int64_t count() const { return count_; }
  Summary summarize(std::span<const double> percentiles, double scale = 1.0) const;

 private:
  using Counts = std::vector<std::pair<double, int64_t>>;  // (value, count)
  static constexpr size_t kOpen = 8;
  void add_other(double value, int64_t count);
  void merge_recent();
  static void sort_and_merge(Counts& counts);  // ascending, each value once
  static void merge_equal(Counts& counts);     // sorted -> each value once
  Counts distinct_;                            // sorted and merged
  Counts recent_;                              // added since distinct_ was last merged
  // The latest distinct values and their counts so far (count 0: unused), not in recent_ yet.
  std::array<std::pair<double, int64_t>, kOpen> open_{};
  size_t last_ = 0;       // the slot of the latest value
  size_t next_slot_ = 0;  // the slot the next new value takes (round robin)
  int64_t count_ = 0;
};

// Constant-memory running statistics (count, mean, variance via Welford, min, max), mergeable
// with Chan et al.'s formula. For high-rate self-measurements (event-loop lag) where keeping every
// sample is wasteful; not numpy-bit-exact (use SampleRecorder for reported latency statistics).
class RunningStats {
 public:
  void add(double value);
  void merge(const RunningStats& other);

  int64_t count() const { return count_; }
  double mean() const { return count_ ? mean_ : 0.0; }
  double variance() const { return count_ ? m2_ / static_cast<double>(count_) : 0.0; }
  double std_dev() const;
  double min() const { return count_ ? min_ : 0.0; }
  double max() const { return count_ ? max_ : 0.0; }

 private:
  int64_t count_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;
  double min_ = 0.0;
  double max_ = 0.0;
};

// Log-linear histogram of non-negative integers (e.g. nanoseconds) with bounded relative error
// (1/64 ≈ 1.6 %) and constant memory, mergeable by adding buckets. For self-measurement
// percentiles (event-loop lag p99) at millions of samples per second.
class LogHistogram {
 public:
  LogHistogram();
  void add(int64_t value);
  void merge(const LogHistogram& other);
  int64_t count() const { return count_; }
  int64_t max() const { return max_; }
  // Upper bound of the bucket holding the p-th percentile sample (nearest-rank); 0 when empty.
  int64_t percentile(double p) const;

 private:
  static constexpr int kSubBits = 6;
  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  int64_t max_ = 0;
};

}  // namespace ix::metrics
