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
//
// The command is three steps other callers use too (`ixbench review`'s evals check): read an eval
// set (read_eval_results), judge it against thresholds (check_eval_results, no printing), print.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/eval_thresholds.h"

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

// meta_env.json, the fields the checks read.
struct EvalManifest {
  std::string model_prefix;  // infmax_model_prefix; "" when absent or "unknown"
  bool batched = false;      // it has eval_concs
  // nullopt: the field is missing or not a list of positive integers.
  std::optional<std::vector<int64_t>> eval_concs, completed_eval_concs, failed_eval_concs;
};

struct EvalScore {
  std::string task;    // "gsm8k"
  std::string metric;  // "exact_match,strict-match"
  double value = 0.0;
};

// One lm-eval results file (or a store's record of one).
struct EvalResultFile {
  std::string path;
  std::optional<int64_t> conc;            // `_conc<N>` at the end of its name
  std::optional<std::string> incomplete;  // why, when its "ixbench" block marks the eval incomplete
  std::vector<EvalScore> scores;          // every numeric metric of results.<task>, in file order
};

struct EvalResultSet {
  std::optional<EvalManifest> manifest;  // nullopt: meta_env.json missing or not a JSON object
  std::vector<EvalResultFile> files;     // in path order
};

// Reads options.results (files, or directories' results*.json) and the manifest (options.meta_env,
// else meta_env.json beside the first results). Errors: a results file that cannot be read, is
// not JSON or not a JSON object (the message names the file).
Result<EvalResultSet> read_eval_results(const EvalCheckOptions& options);

// One PASS / FAIL line of the check.
struct EvalCheckLine {
  bool passed = true;
  std::string file;  // the results file it is about; "" for the set as a whole (the manifest)
  std::string text;  // "[conc=64] gsm8k exact_match,strict-match = 0.9500 (>= 0.91 from models.dsr1)"
};

struct EvalCheckReport {
  std::string model_prefix;          // the prefix thresholds were looked up for; "" = unknown
  std::vector<EvalCheckLine> lines;  // the manifest's, then each file's (completeness, then scores)
  int checked = 0;                   // scores compared with a threshold
  bool passed() const;               // something was checked and no line failed
};

// The set against `thresholds` with the options' prefix, --min-score, --metric-prefix and
// --expected-concs. The model prefix is options.model_prefix, else the manifest's, else unknown
// (global defaults).
EvalCheckReport check_eval_results(const EvalResultSet& set, const config::EvalThresholds& thresholds,
                                   const EvalCheckOptions& options);

// Exit status: 0 when every check passed (and something was checked), 1 otherwise. Errors: a
// thresholds file or results file that cannot be read or parsed.
Result<int> run_eval_check(const EvalCheckOptions& options);

}  // namespace ix::eval
