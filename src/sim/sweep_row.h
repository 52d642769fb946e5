// A row of the sweep matrix (`ixbench sweep` output, SPEC §2) as a simulator input: the engine it
// describes and its workload (isl, osl, concurrencies).
//
// Single-node rows: runner → hardware, tp/ep/dp-attn. Multi-node rows: prefill{...} and decode{...}
// workers (disaggregated when both sides have workers; a side with num-worker 0 means the other
// side serves alone). spec-decoding mtp/draft_model; DECODE_MTP_SIZE=N and
// SYNTHETIC_ACCEPTANCE_LENGTH=AL in additional-settings set the draft length and acceptance.
// CONFIG_FILE=...: a recipe named by the srt-slurm TRT-LLM convention
// (ctx1_gen3_tep16_batch1_eplb0_mtp3.yaml) gives the decode side's max batch per rank (batchN) and,
// without DECODE_MTP_SIZE, the MTP draft length (mtpN). Older master entries give the limits as
// settings instead: DECODE_MAX_BATCH_SIZE=N (decode side) and PREFILL_MAX_BATCH_SIZE=N (prefill side);
// a setting wins over the recipe name. ixbench's own extension, for rows that carry their recipe's
// SGLang server flags (data/calibration/): "recipe": {"prefill": {...}, "decode": {...}} whose
// max-running-requests (per server; divided over dp-size ranks with enable-dp-attention) gives that
// side's running requests per rank when nothing above names a limit. A row without "recipe" whose
// CONFIG_FILE is in the recipe catalog (data/catalog/recipes.json, or DIR/recipes.json with
// --catalog-dir DIR) takes the catalog entry's flags the same way. Agentic rows: `duration`, and
// `kv-offloading: dram` with `total-cpu-dram-gb` as the KV offloading tier (kv_offloading_size_gib).
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <string>
#include <string_view>
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
  double duration_s = 0;      // an agentic row's "duration" (seconds of replay); 0 if none
};

// What a recipe's file name says (0 = not named): `batchN` and `mtpN` tokens of the base name,
// split at '_' and '-'.
struct RecipeNameHints {
  int32_t decode_batch = 0;
  int32_t mtp = 0;
};
RecipeNameHints recipe_name_hints(std::string_view config_file);

// `base` supplies everything the row does not say (scheduler limits, seed, catalog dir).
Result<RowWorkload> parse_sweep_row(const boost::json::object& row, const EngineConfig& base);
// `source` names the text in errors: "--row" for the flag's text, the path for a --row-file.
Result<RowWorkload> parse_sweep_row_text(const std::string& text, const EngineConfig& base,
                                         const std::string& source = "--row");

}  // namespace ix::sim
