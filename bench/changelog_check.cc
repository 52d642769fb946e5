// Times `changelog check` on InferenceX's real perf-changelog.yaml: the file's own rules (read
// into typed entries), and the whole gate of the file against itself plus one appended entry
// (median of N runs, one thread), against the 20 ms target.
//
//   bench_changelog_check [--runs N] [--shared DIR]
//
// DIR holds data/inferencex/perf-changelog.yaml; default: $IXBENCH_SHARED_DIR, else ../shared
// beside the source tree.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "changelog/check.h"
#include "timing.h"

namespace {

using ix::bench_timing::Clock;
using ix::bench_timing::median;
using ix::bench_timing::ms_since;
using ix::bench_timing::thread_cpu_ms;

constexpr char kAppended[] =
    "\n- config-keys:\n    - dsv4-fp4-mi355x-atom-agentic-mtp\n  scenario-type:\n    - agentic-coding\n"
    "  description:\n    - \"One appended entry\"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2700\n";

}  // namespace

int main(int argc, char** argv) {
  auto args = ix::bench_timing::parse_shared_data_args(argc, argv, IXBENCH_SOURCE_DIR);
  if (!args) {
    fmt::print(stderr, "usage: bench_changelog_check [--runs N] [--shared DIR]\n");
    return 2;
  }
  const int runs = args->runs;
  const std::filesystem::path shared = args->shared;
  const auto path = shared / "data" / "inferencex" / "perf-changelog.yaml";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fmt::print(stderr, "bench_changelog_check: {} not found; pass --shared DIR or set IXBENCH_SHARED_DIR\n",
               path.string());
    return 1;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const ix::changelog::Source base{"base", buffer.str()};
  const ix::changelog::Source head{"head", base.bytes + kAppended};

  std::vector<double> file_ms;
  std::vector<double> gate_ms;
  std::vector<double> cpu_ms;
  ix::changelog::CheckReport report;
  for (int run = 0; run < runs; ++run) {
    auto start = Clock::now();
    std::vector<ix::changelog::Entry> entries;
    if (!ix::changelog::check_file(base, &entries).empty()) {
      fmt::print(stderr, "bench_changelog_check: {} fails its own rules\n", path.string());
      return 1;
    }
    file_ms.push_back(ms_since(start));
    start = Clock::now();
    const double cpu_start = thread_cpu_ms();
    report = ix::changelog::check_change(base, head, {});
    gate_ms.push_back(ms_since(start));
    cpu_ms.push_back(thread_cpu_ms() - cpu_start);
  }
  if (!report.ok() || report.appended != 1) {
    fmt::print(stderr, "bench_changelog_check: the gate did not pass with one appended entry:\n{}",
               ix::changelog::format_text(report));
    return 1;
  }
  constexpr double kTargetMs = 20.0;
  const double gate = median(gate_ms);
  fmt::print("changelog check on perf-changelog.yaml: {} bytes, {} entries, {} runs\n", base.bytes.size(),
             report.base_entries, runs);
  fmt::print("  one file's rules (bytes, YAML, entries)      median {:8.2f} ms\n", median(file_ms));
  fmt::print("  gate: base vs base + one appended entry      median {:8.2f} ms (min {:.2f}, max {:.2f})\n", gate,
             *std::min_element(gate_ms.begin(), gate_ms.end()), *std::max_element(gate_ms.begin(), gate_ms.end()));
  fmt::print("  gate thread CPU time                         median {:8.2f} ms\n", median(cpu_ms));
  fmt::print("  target {:.0f} ms: the gate is {:.2f}x the target ({})\n", kTargetMs, gate / kTargetMs,
             gate <= kTargetMs ? "met" : "missed");
  return 0;
}
