// `ixbench eval check`: are an eval's scores above their thresholds? The rules of InferenceX's
// utils/evals/validate_scores.py:
//   - thresholds (`--thresholds`, YAML or JSON): models.<prefix>.<task>, then default.<task>,
//     then --min-score (0.85);
//   - the model prefix: --model-prefix, else meta_env.json's infmax_model_prefix, else
//     $MODEL_PREFIX;
//   - every metric of results.<task> whose name starts with --metric-prefix ("exact_match,") and
//     is not a stderr is checked: strict-match and flexible-extract must both pass;
//   - a batched manifest (meta_env.json with eval_concs) must show every requested concurrency
//     completed, none failed, and one result file per concurrency (`_conc<N>` in its name);
//   - nothing checked is a failure.
// ixbench adds one rule: a result its "ixbench" block marks incomplete fails (its score covers
// problems that were never answered).
// Every check prints a PASS/FAIL line naming the score, the threshold and its source.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace ix::eval {

struct EvalCheckOptions {
  std::vector<std::string> results;  // files or directories (their results*.json)
  std::string model_prefix;          // "" = from meta_env.json / $MODEL_PREFIX
  std::string thresholds;            // "" = no file (defaults from --min-score)
  double min_score = 0.85;
  std::string meta_env;  // "" = meta_env.json beside the (first) results
  std::string metric_prefix = "exact_match,";
  std::optional<std::vector<int64_t>> expected_concs;
};

// Exit status: 0 when every check passed (and something was checked), 1 otherwise. Errors: a
// thresholds file or results file that cannot be read or parsed.
Result<int> run_eval_check(const EvalCheckOptions& options);

}  // namespace ix::eval
