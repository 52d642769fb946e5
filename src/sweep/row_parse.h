// Matrix rows read back from their JSON form: the inverse of sweep_row.h's renderings.
//
// `run --jobs-from matrix.json` and per-job spec files hand ixbench rows as `sweep` (or
// InferenceX's generator) printed them. Reading is strict, so a hand-edited or foreign matrix is
// refused before any job starts rather than run with a silently different recipe:
//   - the kind is told apart as the generator does: a "prefill" object = multi-node,
//     "scenario-type": "agentic-coding" = agentic (any other scenario-type is an error);
//   - exactly the keys of that kind (sweep_row.h's table): an unknown key, a missing required key
//     or a value of the wrong type is an error naming the key (nested ones as "prefill.tp") and
//     the expected type: `matrix.json: row 3: "tp" must be an integer, got "8"`;
//   - spec-decoding and kv-offloading must be one of their names; multi-node `conc` a non-empty
//     list of integers; `max-model-len` (derived) must equal isl + osl + 256.
// Optional keys: router, eval-only, recipe-fingerprint (64 lowercase hex digits) on every kind;
// kv-p2p-transfer, eval-conc on multi-node rows;
// eval-all-concs on multi-node fixed rows; kv-offload-backend and run-eval on agentic rows.
//
// What the renderer keeps from the text is recovered: a worker's key order (Worker::key_order, all
// its keys as written) and whether a component wrote "version" before "name"
// (Component::version_first). Top-level keys may come in any order (the renderer prints each
// kind's fixed order). So for every matrix `sweep` prints, render_matrix(matrix_from_json(text))
// is the text again, byte for byte (without the final newline `sweep` adds).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/fwd.hpp>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "sweep/sweep_row.h"

namespace ix::sweep {

// One row object. Errors are kInvalidArgument; `where` prefixes every message
// ("matrix.json: row 3"); empty = no prefix.
Result<SweepRow> row_from_json(const boost::json::object& row, std::string_view where);

// A whole matrix: the text of a JSON array of row objects, read as from `file_name`. Errors:
// kParse "FILE:LINE:COLUMN: invalid JSON: ..." for syntax errors; kInvalidArgument for a document
// that is not an array, an empty array ("no jobs") and row errors, which name the row by its
// 0-based index in the array ("FILE: row 3: ...", as jq's `.[3]`).
Result<std::vector<SweepRow>> matrix_from_json(std::string_view text, std::string_view file_name);

}  // namespace ix::sweep
