// The agentic path of `ixbench aggregate`: what InferenceX's benchmark_lib.sh runs after a replay
// (write_agentic_result_json, then the AgentX power adapter), in one step:
//   1. process_agentic_result: the artifact folder + the variables -> the record
//      (metrics/agentic_aggregate.h), written as $AGENTIC_OUTPUT_DIR/$RESULT_FILENAME.json;
//   2. power_adapter (ENABLE_AGENTX_POWER unset or 1|true|yes, and IS_MULTINODE not "true"): the
//      profile's window -> <result dir>/agentic_power_window.json, integrated over
//      <result dir>/gpu_metrics.csv by the power step (cli/power_step.h) into the record, with
//      <result dir>/power_validation.json; a window that cannot be formed writes the adapter's
//      failure (power_valid 0, its reason, window_source "aiperf_profile_lifecycle").
// Files are written as Python's json.dump(indent=2) writes them.
#pragma once

#include <string>

#include "metrics/agentic_aggregate.h"

namespace ix::cli {

struct AgenticStepOptions {
  // The input: a result folder (holding aiperf_artifacts/), an artifact folder (holding
  // profile_export.jsonl) or that file; empty: $RESULT_DIR, else "results" (the script's default).
  std::string raw;
  std::string out;        // the record; empty: $AGENTIC_OUTPUT_DIR (default ".")/$RESULT_FILENAME.json
  std::string power_csv;  // empty: <result dir>/gpu_metrics.csv
  bool require_power = false;
  bool quiet = false;   // print the path written instead of the record
  bool silent = false;  // print neither
};

// Runs both steps; returns the exit status (1 on an error, or on an invalid power measurement with
// require_power / REQUIRE_POWER).
int run_agentic_aggregate(const AgenticStepOptions& options, const metrics::agentic::EnvLookup& get);

}  // namespace ix::cli
