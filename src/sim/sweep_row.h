// A row of the sweep matrix (`ixbench sweep` output, SPEC §2) as a simulator input: the engine it
// describes and its workload (isl, osl, concurrencies).
//
// Single-node rows: runner → hardware, tp/ep/dp-attn. Multi-node rows: prefill{...} and decode{...}
// workers (disaggregated when both sides have workers; a side with num-worker 0 means the other
// side serves alone). spec-decoding mtp/draft_model; DECODE_MTP_SIZE=N and
// SYNTHETIC_ACCEPTANCE_LENGTH=AL in additional-settings set the draft length and acceptance.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "sim/engine_config.h"

namespace ix::sim {

struct RowWorkload {
  EngineConfig engine;
  std::string model_id;  // the row's "model" value
  int32_t isl = 0;
  int32_t osl = 0;
  std::vector<int32_t> concurrencies;
  std::string scenario_type;  // the row's "scenario-type" (agentic-coding rows have no isl/osl); "" if none
};

// `base` supplies everything the row does not say (scheduler limits, seed, catalog dir).
Result<RowWorkload> parse_sweep_row(const boost::json::object& row, const EngineConfig& base);
Result<RowWorkload> parse_sweep_row_text(const std::string& text, const EngineConfig& base);

}  // namespace ix::sim
