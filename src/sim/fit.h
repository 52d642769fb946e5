// Calibration of the step-time model on measured benchmark points
// (../shared/data/calibration/measured_dsr1.csv: one row per measured point, latencies in
// seconds, tput_per_gpu over gpus_total).
//
// Method. Every measured point is simulated with the current factors, recording how its TTFT and
// TPOT split into cost buckets (fixed overheads, memory-bound, compute-bound, communication, API
// overhead). Because the buckets scale linearly with the fitted multipliers (fixed_scale,
// memory_scale, compute_scale, api_overhead_s), the prediction for new multipliers is known in
// closed form; they are fitted per group by minimising a Huber loss of the log errors of TPOT,
// tput_per_gpu and TTFT (Nelder-Mead in log space, with a ridge toward the parent level), then
// the points are simulated again with the new factors and refitted (`iterations` rounds).
// Levels: all hardware (the defaults), per hardware, per (hw, framework, precision) with >= 3
// points; with spec_groups also per (hw, spec decoding) and (hw, framework, precision, spec).
//
// Validation: with `holdout`, each (group, isl, osl, topology, spec) series is fitted only on its
// lowest and highest concurrency and judged on the concurrencies between them. With
// `holdout_series` N, every Nth series of each hardware (in the order of their keys) is held out
// whole: the fit never sees that deployment, which is how a new recipe is predicted, and the only
// split that judges hardware whose series have one or two concurrencies (the disaggregated
// gb200/gb300/h100 rows).
#pragma once

#include <boost/json/array.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "sim/calibration.h"
#include "sim/engine_config.h"

namespace ix::sim {

struct MeasuredPoint {
  int32_t line = 0;  // CSV line (1-based, header = 1)
  EngineConfig engine;
  std::string hardware;
  std::string framework;
  std::string precision;
  int32_t isl = 0;
  int32_t osl = 0;
  int32_t conc = 0;
  int32_t gpus_total = 0;
  bool multinode = false;  // is_multinode: the engine(s) span nodes (disaggregated or one wide engine)
  double ttft_s = 0;
  double tpot_s = 0;
  double tput_per_gpu = 0;
  std::string series;  // group + isl/osl + topology + spec: the concurrency sweep it belongs to
};

struct CsvLoad {
  std::vector<MeasuredPoint> points;
  std::vector<std::string> skipped;  // "path:line: why"
};
// Reads measured_dsr1.csv. Rows whose GPU accounting cannot be reconciled, or with missing or
// non-positive lengths/measurements, are skipped (reported). A malformed file fails with every
// bad field as path:line: a wrong field count, a value that is not a finite number / integer /
// boolean, an unknown hardware, precision, framework or spec-decoding method.
Result<CsvLoad> load_measured_csv(const std::string& path);

// What the measured CSV does not record but the deployment's sweep row does (`ixbench sweep
// full-sweep` output, or the older master versions' rows of data/calibration/): a disaggregated
// point takes the decode and prefill sides' running-request limits per rank and the MTP draft
// length that its row names (sim/sweep_row.h). A point matches a row of the same hardware (catalog
// name), framework, precision, spec decoding, isl/osl and prefill/decode workers × tp/ep/dp-attn
// whose concurrencies include the point's; a matching row that names no limit does not vote, and
// when the others disagree the point is left as it is (ambiguous).
struct RowJoin {
  int32_t rows_used = 0;     // rows that parse as simulator inputs
  int32_t rows_skipped = 0;  // rows that do not (other models, agentic, ...)
  int32_t points_matched = 0;
  int32_t points_changed = 0;  // got a decode or prefill batch limit or a draft length
  int32_t points_ambiguous = 0;
};
RowJoin join_sweep_rows(CsvLoad& data, const boost::json::array& rows);

struct FitOptions {
  int32_t iterations = 2;
  bool holdout = false;        // hold out the concurrencies between each series' lowest and highest
  int32_t holdout_series = 0;  // >= 2: also hold out every Nth series of each hardware whole; 0 = off
  // Requests simulated per point: min(10·conc, max(cap, 3·conc)); keeps the 16k-concurrency
  // points affordable while the low-concurrency ones run in full. The medians weight the
  // requests after the t=0 burst up to the measured 10·conc (PredictOptions::represented_prompts).
  int32_t max_prompts = 200;
  uint64_t seed = 0;
  // Also fit per-spec-decoding groups (hw/*/*/spec and hw/framework/precision/spec). Off by
  // default: it lowers the in-sample error but raises the held-out error (docs/simulator.md).
  bool spec_groups = false;
  // Log errors beyond this count linearly, not squared (Huber loss; 0.2 ~ 22 %). The measured
  // file repeats configurations whose TPOT differs up to 3x between dates, and some series end
  // deep in saturation; with plain squares (0) those few points pull a whole group's factors and
  // the held-out error of b300/mi355x rises by 5-11 points (docs/simulator.md).
  double huber_delta = 0.2;
  // Candidate expert routing exponents (Efficiency::expert_routing_exponent), searched in the
  // first round: each is simulated and fitted, the lowest loss on the fitting points wins and is
  // shared by every group. One value: no search.
  std::vector<double> routing_exponents = {1.0, 0.7, 0.5, 0.4, 0.3};
  // Points simulated in parallel; 0 = one per hardware thread. Results do not depend on it.
  int32_t jobs = 0;
  // No fitting: simulate every point with the built-in calibration (data/catalog/calibration.json)
  // and report its residuals, e.g. to judge the shipped factors on one's own measurements.
  bool evaluate_only = false;
};

// Which points are fitted (true) under `holdout` / `holdout_series` (all when neither is set).
// Deterministic: series are ordered by their key within each hardware.
std::vector<bool> fitting_points(const std::vector<MeasuredPoint>& points, const FitOptions& options);

struct PointResidual {
  const MeasuredPoint* point = nullptr;
  bool fitted = false;  // used for fitting (false: held out)
  double ttft_s = 0;    // predicted
  double tpot_s = 0;
  double tput_per_gpu = 0;
};

struct FitReport {
  CalibrationTable table;
  std::vector<PointResidual> residuals;
  std::vector<std::string> skipped;
};

// `progress` (optional) receives one line per phase.
Result<FitReport> fit_calibration(const CsvLoad& data, const FitOptions& options,
                                  const std::function<void(const std::string&)>& progress = {});

// Median absolute relative error per hardware on TPOT, tput_per_gpu and TTFT, over held-out
// points (or all points when nothing was held out), as a Markdown table.
std::string residual_table(const FitReport& report, bool held_out_only);

}  // namespace ix::sim
