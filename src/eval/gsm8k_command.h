// `ixbench eval gsm8k`: GSM8K accuracy of a served model, as InferenceX's run_lm_eval scores it
// (lm-eval with utils/evals/gsm8k.yaml, local-chat-completions, temperature 0), on the
// benchmarks' request engine. See docs/eval.md.
//
// Steps: the task (built-in InferenceX gsm8k.yaml, or --task FILE) and the dataset are loaded;
// prompts are built (few-shot from the train split, lm-eval's draws for --seed); the stop
// strings are the task's plus the model family's markers; the server is checked once (GET
// /v1/models) so an unreachable port fails in seconds; then, for each concurrency, every problem
// is sent, completions are cut at the first marker (when the server ignored the stops), scored,
// and the cell's files are written at once (eval/eval_results.h) with the manifest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace ix::eval {

struct EvalGsm8kOptions {
  std::string base_url;  // the server ("http://host:port"; a trailing /v1[/chat]/completions is the endpoint)
  std::string model;
  std::string endpoint = "chat";   // chat | completions
  std::optional<int> num_fewshot;  // default: the task's (5)
  std::vector<int64_t> concurrency{64};
  std::optional<int64_t> limit;       // the first K problems
  std::optional<int64_t> max_tokens;  // default: from max_model_len, capped for the family
  int64_t max_model_len = 16384;      // InferenceX's EVAL_MAX_MODEL_LEN default
  std::string model_family;           // "" = guessed from --model
  std::string dataset_dir;            // "" = $IXBENCH_GSM8K_DIR
  uint64_t seed = 1234;               // lm-eval's fewshot_random_seed (and the request seed)
  std::string output = "eval_results/results.json";
  std::string task_file;  // "" = the built-in InferenceX gsm8k.yaml
  double request_timeout_s = 1800.0;
  int max_retries = 5;
  std::string api_key;  // default $OPENAI_API_KEY
  std::vector<std::string> headers;
  std::string model_prefix;  // recorded in meta_env.json (infmax_model_prefix)
  std::optional<int64_t> server_pid;
  bool insecure = false;
  bool progress = true;
  std::string tool_version;
};

// The generation cap: --max-tokens, else InferenceX's budget from the context length
// (max_model_len - 4096 above 4096, else half; at most 16384), capped by the family's default
// (DeepSeek-V4: 1024).
int64_t eval_max_tokens(const EvalGsm8kOptions& options, std::optional<int64_t> family_cap);

// Runs the eval and writes its files. Exit status: 0 when every concurrency completed; 1 when a
// cell is incomplete (files written, marked incomplete); 128 + signal when a signal stopped it.
// Errors (nothing sent): bad options, task, dataset; a server that cannot be reached.
Result<int> run_eval_gsm8k(const EvalGsm8kOptions& options);

}  // namespace ix::eval
