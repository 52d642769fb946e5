// The sweep's filter flags, shared by `sweep full-sweep | test-config` and `run` (which plans the
// same rows): what they are, how they are added to a command, and the SweepOptions they give.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "sweep/planner.h"

namespace ix::cli {

struct SweepFlags {
  std::vector<std::string> config_files;
  std::string runner_config = "configs/runners.yaml";
  bool no_evals = false;
  bool evals_only = false;
  bool all_evals = false;
  std::string runner_node_filter;
  std::vector<std::string> scenario_types;
  std::vector<std::string> seq_lens;
  // full-sweep
  std::vector<std::string> model_prefixes;
  std::vector<std::string> precisions;
  std::vector<std::string> frameworks;
  std::vector<std::string> runner_types;
  int64_t step_size = 2;
  int64_t min_conc = 0;
  int64_t max_conc = 0;
  int64_t max_tp = 0;
  int64_t max_ep = 0;
  bool single_node = false;
  bool multi_node = false;
  // test-config
  std::vector<std::string> config_keys;
  std::vector<int64_t> conc;

  // Set when the optional integer flags were given.
  CLI::Option* runner_node_filter_option = nullptr;
  CLI::Option* min_conc_option = nullptr;
  CLI::Option* max_conc_option = nullptr;
  CLI::Option* max_tp_option = nullptr;
  CLI::Option* max_ep_option = nullptr;
};

// --config-files --runner-config --no-evals --evals-only --all-evals --runner-node-filter
// --scenario-type --seq-lens. `config_files_required`: false for `run`, which may read --jobs-from.
void add_sweep_common_flags(CLI::App* cmd, SweepFlags& flags, bool config_files_required = true);
// full-sweep's filters: --model-prefix --precision --framework --runner-type --step-size
// --min-conc --max-conc --max-tp --max-ep --single-node --multi-node.
void add_full_sweep_flags(CLI::App* cmd, SweepFlags& flags);
// test-config's selection: --config-keys (required when `keys_required`) and --conc.
void add_test_config_flags(CLI::App* cmd, SweepFlags& flags, bool keys_required = true);

// The planner's options from the flags; kInvalidArgument (a usage error) for bad values and flag
// combinations the reference rejects.
Result<sweep::SweepOptions> sweep_options(const SweepFlags& flags, bool full_sweep);

}  // namespace ix::cli
