// The rules InferenceX's utils/process_result.py applies to a raw `bench serve` result, restated
// so tests can hold ixbench's output to them (the script itself is not part of this project):
//   - it reads model_id, max_concurrency (int()), total_token_throughput and output_throughput
//     (float()) by name;
//   - every top-level key ending in "ms" becomes key.replace("_ms", "") = float(value) / 1000;
//   - every top-level key containing "tpot" also becomes key.replace("_ms", "").replace("tpot",
//     "intvty") = 1000 / float(value).
// Python's float() takes numbers, booleans and numeric text; a list, object, null or other text
// raises, and 1000 / 0.0 raises ZeroDivisionError: each is an error here naming the key.
#pragma once

#include <boost/json/object.hpp>
#include <set>
#include <string>

#include "common/error.h"

namespace ix::testing {

// The keys process_result.py derives from `raw` (the metric keys of the agg file, without the
// ones it takes from the environment), or the error the script would raise.
ix::Result<std::set<std::string>> process_result_metric_keys(const boost::json::object& raw);

// The keys process_result.py writes into agg_*.json for a single-node result: the environment's
// (hw, conc, image, ..., input_tput_per_gpu) and the derived metric keys; power keys excluded.
ix::Result<std::set<std::string>> process_result_agg_keys(const boost::json::object& raw);

}  // namespace ix::testing
