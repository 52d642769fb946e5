// Efficiency factors and fixed overheads of the step-time model, and the calibration table that
// sets them per (hardware, framework, precision).
//
// The nominal values are SIMULATOR.md's starting points. Calibration (`ixbench sim calibrate`,
// src/sim/fit.h) fits four multipliers per group on measured points and ships them in
// data/catalog/calibration.json with the rows they were fitted on; a prediction reports which
// group (or fallback) it used.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"

namespace ix::sim {

struct Efficiency {
  // Nominal roofline efficiencies.
  double mem_efficiency = 0.8;   // achieved / peak HBM bandwidth
  double gemm_mfu_min = 0.1;     // GEMM MFU at M <= 16 rows
  double gemm_mfu_max = 0.6;     // GEMM MFU at M >= 4096 rows
  double attention_mfu = 0.5;    // prefill attention
  double link_efficiency = 0.7;  // achieved / peak scale-up or scale-out bandwidth
  double comm_overlap = 0.5;     // share of EP all-to-all hidden by two-batch overlap
  // Nominal fixed costs.
  double step_overhead_s = 130e-6;
  double layer_overhead_s = 30e-6;
  double request_overhead_s = 4e-6;
  double api_overhead_s = 5e-3;  // request arrival -> visible to the scheduler
  // Front-end load: a new request additionally waits frontend_delay_s2 x (output tokens streamed
  // per second by the engine, decayed over ~1 s) before the scheduler sees it. The HTTP /
  // tokenizer front end serves every streamed token and the new request's admission on the same
  // loop, so its queueing delay grows with the token rate (SGLang on Blackwell: TTFT 0.15 s at
  // conc 4 -> 0.5 s at conc 64 with the prefill time unchanged). Units: seconds per (token/s).
  double frontend_delay_s2 = 1e-5;
  double kv_transfer_setup_s = 2e-3;  // disaggregated prefill -> decode transfer setup
  double draft_cost_fraction = 0.1;   // one draft token, relative to a decode step
  // Routing correlation: n tokens of one step touch the distinct experts of n^a independent
  // top-k draws, E_eff = E (1 - (1 - k/E)^(n^a)). a = 1: every token routes independently; a < 1:
  // tokens of one batch (random-token benchmark prompts) pick alike, so fewer experts are read at
  // small batches and the expert reads keep growing at larger ones. A property of the model and
  // workload, not of the hardware: `sim calibrate` fits one value on all groups.
  double expert_routing_exponent = 1.0;

  // Fitted multipliers (1 = nominal). Step time = fixed_scale * (t_step + L t_layer)
  // + fixed_scale * request_scale * B t_req + memory_scale * weight-read terms + compute_scale *
  // GEMM terms + attention_scale * decode attention + communication; prefill compute (GEMM share
  // of prefill tokens and prefill attention) additionally scales by prefill_scale.
  // api_overhead_s is fitted directly. See cost_model.h (CostBucket).
  double fixed_scale = 1.0;
  double memory_scale = 1.0;
  double compute_scale = 1.0;
  double prefill_scale = 1.0;
  double request_scale = 1.0;
  double attention_scale = 1.0;
};

struct CalibrationGroup {
  std::string hardware;    // catalog name
  std::string framework;   // matrix name (sglang, dynamo-trt, ...) or "*" (any)
  std::string precision;   // fp4 | fp8 | bf16 | "*"
  std::string spec = "*";  // speculative decoding: none | mtp | draft_model | "*"
  Efficiency efficiency;
  int32_t fit_rows = 0;  // measured points it was fitted on
  // Of those, single-node points (-1: not recorded). 0 marks factors fitted only on
  // multi-node deployments: single-node engines on that device use its catalog
  // calibration_sibling's group instead (resolve_engine).
  int32_t single_node_rows = -1;
};

class CalibrationTable {
 public:
  // `origin` names the file in error messages. Unknown keys are errors (a misspelt factor would
  // silently keep its default).
  static Result<CalibrationTable> parse(const std::string& text, const std::string& origin = "calibration.json");
  static Result<CalibrationTable> builtin();

  // Most specific group first: (hw, framework, precision, spec), (hw, framework, precision, *),
  // (hw, framework, *, *), (hw, *, precision, *), (hw, *, *, spec), (hw, *, *, *), then the
  // defaults. `used` names the group chosen.
  Efficiency lookup(const std::string& hardware, const std::string& framework, const std::string& precision,
                    const std::string& spec = "*", std::string* used = nullptr) const;
  // The group lookup() would use (most specific first); nullptr = the defaults.
  const CalibrationGroup* find(const std::string& hardware, const std::string& framework, const std::string& precision,
                               const std::string& spec = "*") const;
  // A group's factors (the defaults for nullptr) and how lookup() names it.
  const Efficiency& efficiency_of(const CalibrationGroup* group) const { return group ? group->efficiency : defaults_; }
  static std::string describe(const CalibrationGroup* group);

  const std::vector<CalibrationGroup>& groups() const { return groups_; }
  const std::string& source() const { return source_; }
  const Efficiency& defaults() const { return defaults_; }

  void set_defaults(const Efficiency& efficiency) { defaults_ = efficiency; }
  void add(CalibrationGroup group) { groups_.push_back(std::move(group)); }
  void set_source(std::string source) { source_ = std::move(source); }
  // calibration.json text (deterministic).
  std::string to_json() const;

 private:
  std::vector<CalibrationGroup> groups_;
  Efficiency defaults_;
  std::string source_;
};

}  // namespace ix::sim
