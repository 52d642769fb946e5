// The jobs of a run: one per matrix row (a multi-node row runs its whole concurrency list in one
// allocation), with everything a job process needs to run it anywhere (`ixbench run job --spec`),
// written as one JSON spec file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "config/master_config.h"
#include "sweep/sweep_row.h"

namespace ix::run {

// What shapes every job's steps, from the command line.
struct JobSettings {
  std::filesystem::path recipes_dir;    // recipes/*.yaml and *.sh
  std::string recipe;                   // render every row with this recipe ("" = the row's framework's)
  std::filesystem::path golden_al_dir;  // golden_al_distribution/ ("" = none)
  std::filesystem::path thresholds;     // evals/thresholds.yaml ("" = scores are not checked)
  std::filesystem::path gsm8k_dir;      // GSM8K's test.jsonl/train.jsonl ("" = `eval gsm8k`'s default)
  std::filesystem::path trace;          // agentic rows: the trace file or folder ("" = `bench replay`'s default)
  int64_t eval_limit = 0;               // problems per eval (0 = all)
  double agentic_duration_s = 0;        // profiling seconds of agentic rows (0 = the row's duration)
  double health_timeout_s = 1800;       // how long a server may take to answer /health
  double step_timeout_s = 0;            // longest benchmark or eval step (0 = none)
  int64_t prompts_per_conc = 10;        // fixed-length rows: num-prompts = 10 * conc (InferenceX)
  int64_t warmups_per_conc = 2;         // warmups = 2 * conc
  double random_range_ratio = 0.8;      // InferenceX's RANDOM_RANGE_RATIO
  bool predict = false;                 // also `sim predict` each fixed-length job (stored as predicted)
};

struct Job {
  std::string id;  // its folder under the run: the result stem of its first concurrency
  sweep::SweepRow row;
  std::vector<int64_t> concs;      // the one concurrency of a single-node row; a multi-node row's list
  std::string runner;              // the concrete runner it is recorded under (h200-cw_00)
  std::string runner_label;        // the row's runner label (h200): the hardware type
  std::string fingerprint;         // sweep::recipe_fingerprint(row)
  std::vector<std::string> stems;  // result stem per concurrency (with the recipe fingerprint)
  bool throughput = true;          // false for eval-only rows
  bool eval = false;               // run-eval (or eval-only)
};

// One job per row, in the rows' order. The concrete runner is the row's when it names one
// (--runner-node-filter), else the first node runners.yaml lists for the label, else the label.
std::vector<Job> plan_jobs(std::span<const sweep::SweepRow> rows, const config::RunnerConfig* runners);

// The spec file of one job: {"job": {...}, "row": <the row as sweep prints it>, "settings": {...}}.
std::string job_spec_json(const Job& job, const JobSettings& settings);

struct JobSpec {
  Job job;
  JobSettings settings;
};
// Reads a spec file written by job_spec_json. Errors name the file and the field.
Result<JobSpec> parse_job_spec(std::string_view text, std::string_view file_name);

}  // namespace ix::run
