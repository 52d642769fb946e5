// Times `sim predict` work: a whole 6-point DeepSeek-R1 8k/1k sweep (InferenceX defaults:
// 10·conc prompts per point) in virtual time, full SPEC §4 results included, against the 2 s
// budget of the simulator issue; and the engine-core throughput in simulated request-steps/s.
//
// Usage: bench_sim_predict [hardware] [tp]   (defaults: h200 8)
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "sim/predict.h"

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  ix::sim::PredictOptions options;
  options.engine.model = "deepseek-r1";
  options.engine.hardware = argc > 1 ? argv[1] : "h200";
  options.engine.tp = argc > 2 ? std::atoi(argv[2]) : 8;
  options.engine.precision = "fp8";
  options.engine.framework = "sglang";
  options.isl = 8192;
  options.osl = 1024;
  const std::vector<int32_t> concurrencies = {4, 8, 16, 32, 64, 128};
  auto engine = ix::sim::resolve_engine(options.engine);
  if (!engine) {
    fmt::print(stderr, "bench_sim_predict: {}\n", engine.error().message());
    return 1;
  }
  fmt::print("DeepSeek-R1 {}x{} fp8 8k/1k, num-prompts = 10 x conc\n", options.engine.tp, engine->hardware.name);
  fmt::print("{:>6} {:>10} {:>14} {:>12} {:>14}\n", "conc", "wall_ms", "output_tokens", "virtual_s", "Mtok/s (sim)");
  double total_s = 0;
  for (int32_t conc : concurrencies) {
    const auto start = Clock::now();
    auto point = ix::sim::predict_point(*engine, options, conc);
    const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!point) {
      fmt::print(stderr, "bench_sim_predict: {}\n", point.error().message());
      return 1;
    }
    total_s += wall_s;
    const double tokens = point->result.at("total_output_tokens").to_number<double>();
    fmt::print("{:>6} {:>10.1f} {:>14.0f} {:>12.1f} {:>14.2f}\n", conc, wall_s * 1e3, tokens, point->duration_s,
               tokens / wall_s / 1e6);
  }
  fmt::print("whole sweep: {:.3f} s; budget 2 s; ratio budget/measured = {:.1f}x\n", total_s, 2.0 / total_s);
  return total_s < 2.0 ? 0 : 1;
}
