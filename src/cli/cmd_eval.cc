// `ixbench eval gsm8k` (GSM8K accuracy of a served model, scored as InferenceX scores it) and
// `ixbench eval check` (scores against thresholds, validate_scores.py's rules). See docs/eval.md.
#include <fmt/format.h>

#include <memory>
#include <sstream>
#include <string>

#include "cli/command.h"
#include "cli/version.h"
#include "eval/check_command.h"
#include "eval/gsm8k_command.h"

namespace ix::cli {
namespace {

struct Gsm8kFlags {
  eval::EvalGsm8kOptions options;
  bool no_progress = false;
};

void add_gsm8k_target(CLI::App* cmd, eval::EvalGsm8kOptions& o) {
  cmd->add_option("--base-url,--url", o.base_url, "the server, http://host:port (a trailing /v1/... is the endpoint)")
      ->required();
  cmd->add_option("--model,-m", o.model, "model name sent in every request")->required();
  cmd->add_option("--endpoint", o.endpoint, "chat (/v1/chat/completions) or completions (/v1/completions)")
      ->capture_default_str();
  cmd->add_option("--api-key", o.api_key, "bearer token (default: $OPENAI_API_KEY; never logged or stored)");
  cmd->add_option("--header,-H", o.headers, "KEY=VALUE HTTP headers sent with every request (values not logged)");
  cmd->add_option("--request-timeout", o.request_timeout_s,
                  "seconds before an attempt counts as timed out (then resent)")
      ->capture_default_str();
  cmd->add_option("--max-retries", o.max_retries, "resends of a request after 429, 5xx, timeouts and lost connections")
      ->capture_default_str();
  cmd->add_flag("--insecure", o.insecure, "do not verify https certificates");
  cmd->add_option("--server-pid", o.server_pid, "stop (files kept, marked incomplete) if this process exits");
}

void add_gsm8k_task(CLI::App* cmd, eval::EvalGsm8kOptions& o) {
  cmd->add_option("--task", o.task_file,
                  "an lm-eval task YAML (default: InferenceX's utils/evals/gsm8k.yaml, built in)");
  cmd->add_option("--dataset-dir", o.dataset_dir,
                  "directory with GSM8K's test.jsonl and train.jsonl ($IXBENCH_GSM8K_DIR)");
  cmd->add_option("--num-fewshot", o.num_fewshot, "few-shot examples per prompt (default: the task's, 5)");
  cmd->add_option("--limit", o.limit, "evaluate the first K problems only");
  cmd->add_option("--seed", o.seed, "few-shot draw seed (lm-eval's fewshot_random_seed) and request seed")
      ->capture_default_str();
  cmd->add_option("--model-family", o.model_family,
                  "stop markers: deepseek | deepseek_v4 | qwen | llama | gptoss | kimi | glm | minimax | none "
                  "(default: guessed from --model)");
  cmd->add_option("--max-tokens", o.max_tokens, "generation cap (default: from --max-model-len; DeepSeek-V4 1024)");
  cmd->add_option("--max-model-len", o.max_model_len, "context length the cap is derived from (InferenceX's budget)")
      ->capture_default_str();
}

void add_gsm8k_outputs(CLI::App* cmd, Gsm8kFlags& f) {
  eval::EvalGsm8kOptions& o = f.options;
  cmd->add_option("--concurrency,-c", o.concurrency, "requests in flight; several (16,64) run one after another")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--output,-o", o.output,
                  "results file: <stem>_conc<N>.json per concurrency, samples_gsm8k_conc<N>.jsonl and meta_env.json "
                  "beside it")
      ->capture_default_str();
  cmd->add_option("--model-prefix", o.model_prefix,
                  "InferenceX model prefix (dsr1, dsv4, ...) recorded in meta_env.json");
  cmd->add_flag("--no-progress", f.no_progress, "no progress lines");
}

void setup_gsm8k(CLI::App* group, CommandRegistry& registry) {
  CLI::App* cmd = group->add_subcommand("gsm8k", "GSM8K accuracy of a served model (InferenceX's lm-eval task)");
  auto flags = std::make_shared<Gsm8kFlags>();
  add_gsm8k_target(cmd, flags->options);
  add_gsm8k_task(cmd, flags->options);
  add_gsm8k_outputs(cmd, *flags);
  registry.on_run(cmd, [flags] {
    eval::EvalGsm8kOptions& options = flags->options;
    options.progress = !flags->no_progress;
    options.tool_version = fmt::format("ixbench {} ({})", version_string(), git_hash());
    auto status = eval::run_eval_gsm8k(options);
    return status ? *status : report_error(status.error());
  });
}

struct CheckFlags {
  eval::EvalCheckOptions options;
  std::string expected_concs;  // space-separated, as validate_scores.py's --expected-concs
};

// "8 64" -> {8, 64}: unique positive integers.
Result<std::vector<int64_t>> parse_concs(const std::string& text) {
  std::vector<int64_t> out;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(word, &used);
    } catch (...) {
      used = 0;
    }
    if (used != word.size() || value <= 0 || std::find(out.begin(), out.end(), value) != out.end())
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--expected-concs '{}': expected unique positive integers separated by spaces", text));
    out.push_back(value);
  }
  if (out.empty()) return fail(ErrorCode::kInvalidArgument, "--expected-concs is empty");
  return out;
}

void setup_check(CLI::App* group, CommandRegistry& registry) {
  CLI::App* cmd = group->add_subcommand("check", "check eval scores against thresholds (validate_scores.py's rules)");
  auto flags = std::make_shared<CheckFlags>();
  eval::EvalCheckOptions& o = flags->options;
  cmd->add_option("--results,-r", o.results, "result files, or directories holding results*.json")->required();
  cmd->add_option("--model-prefix", o.model_prefix, "model prefix (default: meta_env.json, then $MODEL_PREFIX)");
  cmd->add_option("--thresholds", o.thresholds, "thresholds YAML/JSON (e.g. InferenceX's utils/evals/thresholds.yaml)");
  cmd->add_option("--min-score", o.min_score, "minimum score when no threshold matches")->capture_default_str();
  cmd->add_option("--meta-env", o.meta_env, "meta_env.json (default: beside the results)");
  cmd->add_option("--metric-prefix", o.metric_prefix, "check metrics whose name starts with this")
      ->capture_default_str();
  cmd->add_option("--expected-concs", flags->expected_concs, "space-separated concurrencies the workflow requested");
  registry.on_run(cmd, [flags] {
    if (!flags->expected_concs.empty()) {
      auto concs = parse_concs(flags->expected_concs);
      if (!concs) return report_error(concs.error());
      flags->options.expected_concs = std::move(*concs);
    }
    auto status = eval::run_eval_check(flags->options);
    return status ? *status : report_error(status.error());
  });
}

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* group = find_or_add_group(root, "eval", "accuracy evals");
  setup_gsm8k(group, registry);
  setup_check(group, registry);
}

}  // namespace
IX_REGISTER_COMMAND(eval, setup);
}  // namespace ix::cli
