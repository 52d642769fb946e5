// The files of an eval, in lm-eval's and InferenceX's layout, so InferenceX's
// utils/evals/validate_scores.py and utils/collect_eval_results.py read them unchanged:
//
//   <dir>/<stem>_conc<N>.json        lm-eval's results JSON for concurrency N: results.<task>
//                                    ["exact_match,<filter>"] and ["exact_match_stderr,<filter>"],
//                                    configs, versions, n-shot, n-samples, lm_eval_version; plus
//                                    an "ixbench" block (complete, stop reason, counts of
//                                    retries, timeouts, truncations, finish reasons, stops sent)
//   <dir>/samples_<task>_conc<N>.jsonl  one line per problem: prompt, completion as returned,
//                                    the text scored, extracted answers, target, correct per
//                                    filter, finish reason, truncation at a marker, retries, error
//   <dir>/meta_env.json              the manifest: eval_concs, completed_eval_concs,
//                                    failed_eval_concs, conc, infmax_model_prefix, model, ...
//
// Thread-safety: plain functions.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/lm_eval_task.h"
#include "eval/eval_runner.h"
#include "eval/gsm8k_dataset.h"
#include "eval/scoring.h"

namespace ix::eval {

// One scored problem.
struct ScoredSample {
  size_t doc_id = 0;
  std::string target;                   // doc_to_target
  std::string completion;               // as the server returned it
  std::string scored;                   // what the filters saw (cut at the first stop marker)
  std::optional<std::string> marker;    // the marker it was cut at
  std::vector<FilterVerdict> verdicts;  // per filter
};

struct FilterScore {
  std::string name;
  MeanWithStderr score;
};

// What one concurrency's run measured, ready to write.
struct EvalCell {
  int64_t concurrency = 0;
  std::vector<ScoredSample> samples;
  std::vector<FilterScore> scores;
  EvalRunOutput run;
  int64_t truncated = 0;  // completions cut at a marker
};

// Everything the files say about the run besides the cell.
struct EvalRunInfo {
  std::string tool_version;  // "ixbench 0.x (hash)"
  std::string model;
  std::string model_prefix;  // "" = unknown
  std::string model_family;
  std::string base_url;
  std::string endpoint;
  std::vector<std::string> stops;
  int64_t max_tokens = 0;
  int max_retries = 0;
  int num_fewshot = 0;
  uint64_t seed = 0;
  std::optional<int64_t> limit;
  int64_t original_docs = 0;  // the split's size
  std::string dataset_dir;
  const config::LmEvalTask* task = nullptr;
  double started_unix_s = 0.0;
};

// The paths of one concurrency's files for `output` (<dir>/<stem>.json).
std::filesystem::path results_path(const std::filesystem::path& output, int64_t concurrency);
std::filesystem::path samples_path(const std::filesystem::path& output, std::string_view task, int64_t concurrency);
std::filesystem::path manifest_path(const std::filesystem::path& output);

// lm-eval's results JSON for one cell.
boost::json::object results_json(const EvalRunInfo& info, const EvalCell& cell);

// Writes the cell's results JSON and samples JSONL.
Result<void> write_cell(const std::filesystem::path& output, const EvalRunInfo& info, const EvalCell& cell,
                        const std::vector<Gsm8kProblem>& docs, const std::vector<std::string>& prompts);

// Writes meta_env.json: `requested` concurrencies, those completed and failed so far.
Result<void> write_manifest(const std::filesystem::path& output, const EvalRunInfo& info,
                            const std::vector<int64_t>& requested, const std::vector<int64_t>& completed,
                            const std::vector<int64_t>& failed);

}  // namespace ix::eval
