// Plans `sweep full-sweep` over both real master configs and reports wall time per stage
// (median of N runs, one thread), against the 50 ms target for the whole matrix.
//
//   bench_sweep_plan [--runs N] [--shared DIR]
//
// DIR holds data/inferencex/{nvidia-master,amd-master,runners}.yaml; default: $IXBENCH_SHARED_DIR,
// else ../shared beside the source tree.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "config/master_config.h"
#include "sweep/planner.h"
#include "timing.h"

namespace {

using ix::bench_timing::Clock;
using ix::bench_timing::median;
using ix::bench_timing::ms_since;
using ix::bench_timing::thread_cpu_ms;

}  // namespace

int main(int argc, char** argv) {
  auto args = ix::bench_timing::parse_shared_data_args(argc, argv, IXBENCH_SOURCE_DIR);
  if (!args) {
    fmt::print(stderr, "usage: bench_sweep_plan [--runs N] [--shared DIR]\n");
    return 2;
  }
  const int runs = args->runs;
  const std::filesystem::path shared = args->shared;
  std::filesystem::path data = shared / "data" / "inferencex";
  std::vector<std::filesystem::path> files{data / "nvidia-master.yaml", data / "amd-master.yaml"};
  std::filesystem::path runners = data / "runners.yaml";
  for (const auto& path : {files[0], files[1], runners}) {
    if (!std::filesystem::exists(path)) {
      fmt::print(stderr, "bench_sweep_plan: {} not found; pass --shared DIR or set IXBENCH_SHARED_DIR\n",
                 path.string());
      return 1;
    }
  }

  std::vector<double> load_ms;
  std::vector<double> plan_ms;
  std::vector<double> render_ms;
  std::vector<double> total_ms;
  std::vector<double> cpu_ms;
  size_t rows_count = 0;
  size_t bytes = 0;
  for (int run = 0; run < runs; ++run) {
    auto start = Clock::now();
    double cpu_start = thread_cpu_ms();
    auto loaded = ix::config::load_configs(files, runners);
    if (!loaded) {
      fmt::print(stderr, "bench_sweep_plan: {}\n", loaded.error().message());
      return 1;
    }
    double loaded_at = ms_since(start);
    auto plan_start = Clock::now();
    auto rows = ix::sweep::plan_full_sweep(loaded->configs, loaded->runners, ix::sweep::SweepOptions{});
    if (!rows) {
      fmt::print(stderr, "bench_sweep_plan: {}\n", rows.error().message());
      return 1;
    }
    double planned = ms_since(plan_start);
    auto render_start = Clock::now();
    std::string text = ix::sweep::render_matrix(*rows);
    double rendered = ms_since(render_start);
    total_ms.push_back(ms_since(start));
    cpu_ms.push_back(thread_cpu_ms() - cpu_start);
    load_ms.push_back(loaded_at);
    plan_ms.push_back(planned);
    render_ms.push_back(rendered);
    rows_count = rows->size();
    bytes = text.size();
  }
  constexpr double kTargetMs = 50.0;
  double total = median(total_ms);
  fmt::print("sweep full-sweep over nvidia-master.yaml + amd-master.yaml: {} rows, {} bytes of JSON, {} runs\n",
             rows_count, bytes, runs);
  fmt::print("  load+validate (read, YAML, rules) median {:8.2f} ms\n", median(load_ms));
  fmt::print("  plan (expand, filter, eval marks) median {:8.2f} ms\n", median(plan_ms));
  fmt::print("  render JSON                       median {:8.2f} ms\n", median(render_ms));
  fmt::print("  total                             median {:8.2f} ms (min {:.2f}, max {:.2f})\n", total,
             *std::min_element(total_ms.begin(), total_ms.end()), *std::max_element(total_ms.begin(), total_ms.end()));
  fmt::print("  total thread CPU time              median {:8.2f} ms\n", median(cpu_ms));
  fmt::print("  target {:.0f} ms: total is {:.2f}x the target ({})\n", kTargetMs, total / kTargetMs,
             total <= kTargetMs ? "met" : "missed");
  return 0;
}
