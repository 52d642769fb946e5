// `ixbench sim predict`: the fixed-length benchmark InferenceX runs (random prompts with lengths
// uniform in [⌊r·ISL⌋, ISL] and [⌊r·OSL⌋, OSL], num-prompts = 10·conc, closed loop at max
// concurrency, ignore-eos) played against the engine core in virtual time, reported in the
// raw-result JSON of SPEC §4, plus the SPEC §5 aggregates (tput_per_gpu, output/input_tput_per_gpu,
// *_intvty). The result is built by metrics::ServeSummary from per-request records and the token
// events summarised as the engine emits them (inter-token gaps as counted step times): memory
// follows the requests, not the tokens.
//
// Thread-safety: pure function of its options (deterministic for a seed).
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "sim/cost_model.h"
#include "sim/engine_config.h"
#include "sim/engine_core.h"

namespace ix::sim {

// Bounds on one simulated benchmark (10 x conc requests by default): beyond them the per-request
// records alone would not fit in memory.
inline constexpr int32_t kMaxPredictConcurrency = 1'000'000;
inline constexpr int32_t kMaxPredictPrompts = 10'000'000;

struct PredictOptions {
  EngineConfig engine;
  int32_t isl = 1024;
  int32_t osl = 1024;
  std::vector<int32_t> concurrencies = {1, 4, 16, 64};
  int32_t num_prompts = 0;          // 0 = 10 · conc (InferenceX)
  double random_range_ratio = 0.8;  // lengths uniform in [⌊ratio·L⌋, L]
  // Fraction of every prompt that is one shared prefix (0 = independent random prompts).
  double shared_prefix_fraction = 0.0;
  std::vector<double> metric_percentiles = {90, 99, 99.9};
  std::string model_id;       // written as model_id/tokenizer_id; empty = the engine's model name
  std::string date;           // result header date ("%Y%m%d-%H%M%S"); empty = none
  bool record_costs = false;  // fill PredictPoint cost attribution (calibration)
  // Only the medians and throughputs of PredictPoint (no token statistics, no result JSON): what
  // calibration needs, at a fraction of the time for 10k-request points.
  bool summary_only = false;
  // With summary_only: the benchmark these requests stand for sends this many (0 = num_prompts).
  // The first `conc` requests start together at t=0 (a cold-start burst with long TTFTs); when
  // fewer requests are simulated than measured, the later ones are weighted up in the medians
  // and cost attribution so that the burst keeps its measured share (conc of represented_prompts)
  // instead of dominating the median TTFT.
  int32_t represented_prompts = 0;
};

struct PredictPoint {
  int32_t conc = 0;
  int32_t num_gpus = 0;
  boost::json::object result;  // SPEC §4 raw result + SPEC §5 per-GPU and interactivity keys
  double median_ttft_s = 0;
  double median_tpot_s = 0;
  double median_e2el_s = 0;
  double tput_per_gpu = 0;
  double output_tput_per_gpu = 0;
  double duration_s = 0;  // virtual
  // Cost attribution (record_costs): mean seconds per bucket from arrival to first token, and
  // per output token after the first.
  CostBuckets ttft_cost{};
  CostBuckets tpot_cost{};
  int64_t num_preemptions = 0;
  int64_t kv_blocks_per_rank = 0;
  // Mean time from sending a request to the engine first scheduling it (waiting for a running
  // slot, a prefill rank's budget or SGLang's next poll), over the mean TTFT (same weights as the
  // medians). Near 1 the TTFT is a queue, which moves with capacity far more steeply than TPOT
  // and throughput do (docs/simulator.md, "knife edge"). Also `sim_ttft_queue_share` in the JSON.
  double ttft_queue_share = 0;
};

// One concurrency.
Result<PredictPoint> predict_point(const ResolvedEngine& engine, const PredictOptions& options, int32_t conc);
// Every concurrency of options.concurrencies, in order.
Result<std::vector<PredictPoint>> predict(const PredictOptions& options);

// What the prediction rests on: model, hardware and calibration entries with their sources and
// the efficiency values in force.
boost::json::object describe_engine(const ResolvedEngine& engine);

}  // namespace ix::sim
