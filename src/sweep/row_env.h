// The environment InferenceX's workflows give the job of one matrix row: the callers' `with:`
// (run-sweep.yml, e2e-tests.yml: `tp: ${{ matrix.config.tp }}`, ...) into benchmark-tmpl.yml's
// and benchmark-multinode-tmpl.yml's `env:` (TP, EP_SIZE, CONC, ...), plus what their launch step
// exports (RUNNER_TYPE, IS_MULTINODE, RESULT_FILENAME). So `ixbench aggregate --row ROW.json` sees
// the variables a recipe would have exported, from a row exactly as `ixbench sweep` prints it.
//
// Values render as GitHub expressions render them: numbers in decimal, booleans true/false, text
// as is; objects (router, kv-offload-backend) as JSON (toJson). Fields the workflows pass as
// constants for a kind are set so (agentic rows: ISL=OSL=MAX_MODEL_LEN=0, single-node agentic
// DISAGG=false); optional fields a row lacks give an empty value, as `${{ ... || '' }}` does.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ix::sweep {

enum class RowJobKind { kSingleNodeFixed, kMultiNodeFixed, kSingleNodeAgentic, kMultiNodeAgentic };

struct RowEnvironment {
  RowJobKind kind = RowJobKind::kSingleNodeFixed;
  std::vector<std::pair<std::string, std::string>> variables;  // in the workflows' order
};

// The row's variables. Agentic: "scenario-type": "agentic-coding"; multi-node: a "prefill" object.
// Errors (kInvalidArgument) name the first field the aggregation needs that the row lacks or
// holds in the wrong shape: `the row has no "tp" (the aggregation reads it as TP)`.
Result<RowEnvironment> row_environment(const boost::json::object& row);

// RESULT_FILENAME as the launch step forms it from the (merged) variables: single node
// {EXP_NAME}_{PRECISION}_{FRAMEWORK}_tp{TP}-pp{PP_SIZE}-dcp{DCP_SIZE}-pcp{PCP_SIZE}-ep{EP_SIZE}-
// dpa{DP_ATTENTION}_disagg-{DISAGG}_spec-{SPEC_DECODING}_conc{CONC}_{runner}; multi-node agentic
// the multi-node template's name (conc list joined by 'x') then the launcher's _conc{CONC};
// then _recipe-<16 hex> with a RECIPE_FINGERPRINT. `runner` is RUNNER_NAME (the concrete runner
// the workflow names), else RUNNER_TYPE. nullopt for multi-node fixed-seq-len rows, whose result
// files carry GPU counts only the benchmark knows.
std::optional<std::string> row_result_filename(RowJobKind kind,
                                               const std::function<std::optional<std::string>(const char*)>& get);

}  // namespace ix::sweep
