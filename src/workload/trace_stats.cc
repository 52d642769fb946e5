// trace_stats() of trace.h: counts, distributions and the theoretical prefix-cache hit.
#include <algorithm>
#include <array>
#include <unordered_set>

#include "metrics/statistics.h"
#include "workload/trace.h"

namespace ix::workload {
namespace {

using SeenBlocks = std::unordered_set<int64_t>;

Distribution distribution(std::span<const double> values) {
  static constexpr std::array<double, 3> kPercentiles = {50.0, 90.0, 99.0};
  const metrics::Summary summary = metrics::summarize(values, kPercentiles);
  return Distribution{.count = summary.count,
                      .mean = summary.mean,
                      .p50 = summary.percentiles[0].second,
                      .p90 = summary.percentiles[1].second,
                      .p99 = summary.percentiles[2].second,
                      .max = summary.max};
}

double entry_start(const TraceEntry& entry) {
  return std::visit([](const auto& e) { return e.t; }, entry.value);
}

// Samples gathered over the walk, then summarised.
struct Samples {
  std::vector<double> isl, osl, gaps, think;
};

class Walker {
 public:
  Walker(TraceStats& stats, Samples& samples) : stats_(stats), samples_(samples) {}

  // One turn: its lengths, think time and leading hash blocks already in `seen`.
  void turn(const TraceTurn& turn, SeenBlocks& seen) {
    ++stats_.turns;
    samples_.isl.push_back(static_cast<double>(turn.in));
    samples_.osl.push_back(static_cast<double>(turn.out));
    if (turn.think_time) samples_.think.push_back(*turn.think_time);
    size_t leading = 0;
    while (leading < turn.hash_ids.size() && seen.contains(turn.hash_ids[leading])) ++leading;
    stats_.hit_blocks += static_cast<int64_t>(leading);
    stats_.total_blocks += static_cast<int64_t>(turn.hash_ids.size());
    seen.insert(turn.hash_ids.begin(), turn.hash_ids.end());
  }

  // One list of entries at nesting `depth` (0: the tree's top level), in recorded order.
  void entries(const std::vector<TraceEntry>& list, int64_t depth, SeenBlocks& seen) {
    std::optional<double> previous_start;
    int64_t subagents_in_a_row = 0;
    for (const TraceEntry& entry : list) {
      const double start = entry_start(entry);
      if (previous_start) samples_.gaps.push_back(start - *previous_start);
      previous_start = start;
      if (const auto* t = std::get_if<TraceTurn>(&entry.value)) {
        turn(*t, seen);
        subagents_in_a_row = 0;
        continue;
      }
      const auto& subagent = std::get<TraceSubagent>(entry.value);
      ++stats_.subagents;
      stats_.max_subagent_depth = std::max(stats_.max_subagent_depth, depth + 1);
      stats_.max_fan_out = std::max(stats_.max_fan_out, ++subagents_in_a_row);
      entries(subagent.requests, depth + 1, seen);
    }
  }

 private:
  TraceStats& stats_;
  Samples& samples_;
};

// Mooncake: rows in file order, one seen-set for the file, gaps between row timestamps.
void mooncake_rows(const Trace& trace, Walker& walker, Samples& samples) {
  SeenBlocks seen;
  std::optional<double> previous;
  for (const SessionTree& tree : trace.trees) {
    for (const TraceEntry& entry : tree.requests) {
      const double start = entry_start(entry);
      if (previous) samples.gaps.push_back(start - *previous);
      previous = start;
      if (const auto* t = std::get_if<TraceTurn>(&entry.value)) walker.turn(*t, seen);
    }
  }
}

}  // namespace

TraceStats trace_stats(const Trace& trace) {
  TraceStats stats;
  stats.format = trace.format;
  stats.sessions = static_cast<int64_t>(trace.trees.size());
  Samples samples;
  Walker walker(stats, samples);
  if (trace.format == TraceFormat::kMooncake) {
    mooncake_rows(trace, walker, samples);
  } else {
    for (const SessionTree& tree : trace.trees) {
      SeenBlocks seen;  // shared by the tree's turns and its subagents'
      walker.entries(tree.requests, 0, seen);
    }
  }
  for (const SessionTree& tree : trace.trees) stats.block_sizes.push_back(tree.block_size);
  std::sort(stats.block_sizes.begin(), stats.block_sizes.end());
  stats.block_sizes.erase(std::unique(stats.block_sizes.begin(), stats.block_sizes.end()), stats.block_sizes.end());
  stats.isl = distribution(samples.isl);
  stats.osl = distribution(samples.osl);
  stats.gap_s = distribution(samples.gaps);
  stats.think_time_s = distribution(samples.think);
  return stats;
}

}  // namespace ix::workload
