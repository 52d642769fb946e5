// Sweep planning: master configs -> the job matrix (SPEC §2), exactly as InferenceX's reference
// generator (`generate_sweep_configs.py full-sweep | test-config`) expands it.
//
// Pure functions over validated configs: no I/O, deterministic (same input, same rows in the same
// order). Row order follows the configs' file/document order, then scenarios, search-space
// entries, concurrencies and concrete runners, as the reference does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/master_config.h"
#include "sweep/sweep_row.h"

namespace ix::sweep {

enum class ScenarioType { kFixedSeqLen, kAgenticCoding };

struct SweepOptions {
  // Common to both modes.
  std::vector<ScenarioType> scenario_types;           // empty = all
  std::vector<std::pair<int64_t, int64_t>> seq_lens;  // (isl, osl) allowed; empty = all
  std::optional<std::string> runner_node_filter;      // substring; one row per matching concrete runner
  bool no_evals = false;                              // skip eval marking
  bool evals_only = false;                            // keep only eval rows, mark them eval-only
  bool all_evals = false;  // every 8k1k fixed row (and agentic row) becomes an eval row; implies eval-only

  // full-sweep filters.
  std::vector<std::string> model_prefixes;  // prefixes of the config *key*
  std::vector<std::string> precisions;
  std::vector<std::string> frameworks;
  std::vector<std::string> runner_types;  // must be labels of runners.yaml
  int64_t step_size = 2;                  // > 1
  std::optional<int64_t> min_conc;
  std::optional<int64_t> max_conc;
  std::optional<int64_t> max_tp;
  std::optional<int64_t> max_ep;
  bool single_node = false;  // neither flag = both
  bool multi_node = false;

  // test-config selection.
  std::vector<std::string> config_keys;  // exact keys or fnmatch globs (*, ?, [..])
  std::vector<int64_t> conc;             // keep only these concurrencies; empty = all
};

// Parses "1k1k" / "8k1k".
Result<std::pair<int64_t, int64_t>> parse_seq_len(std::string_view name);
Result<ScenarioType> parse_scenario_type(std::string_view name);

// Checks flag combinations the reference rejects (step size, min > max, --no-evals with
// --all-evals or --evals-only). Returns kInvalidArgument naming the flags.
Result<void> check_options(const SweepOptions& options, bool full_sweep);

// `sweep full-sweep`: every config passing the filters, then eval marking.
Result<std::vector<SweepRow>> plan_full_sweep(const config::MasterConfigSet& configs,
                                              const config::RunnerConfig& runners, const SweepOptions& options);

// `sweep test-config`: the configs named by --config-keys (globs must match), then eval marking.
Result<std::vector<SweepRow>> plan_test_config(const config::MasterConfigSet& configs,
                                               const config::RunnerConfig& runners, const SweepOptions& options);

// Python fnmatch.fnmatchcase: `*`, `?`, `[seq]`, `[!seq]`; the whole name must match.
bool glob_match(std::string_view pattern, std::string_view name);

// DRAM budget in GB for an agentic row (SPEC §2):
//   floor(min(avail_MiB, 2_861_022) * 1_048_576 * utilization * gpu_count / gpus_per_node / 1e9)
// computed exactly (the utilization as the decimal Python prints for it).
int64_t dram_budget_gb(int64_t available_cpu_dram_mib, double dram_utilization, int64_t gpu_count,
                       int64_t gpus_per_node);

// Eval marking (SPEC §2) and the --evals-only / --all-evals expansion, in place. Exposed for
// `plan`, which marks rows from several changelog entries.
void apply_eval_policy(std::vector<SweepRow>& rows, const SweepOptions& options);

}  // namespace ix::sweep
