// The prompts of an lm-eval generate_until task, as lm-eval builds them for a chat model with
// --apply_chat_template (few-shot examples collapsed into one user message):
//
//   doc_to_text(shot_1) + target_delimiter + doc_to_target(shot_1) + fewshot_delimiter
//   ... (num_fewshot shots) ...
//   doc_to_text(doc)
//
// Shots are drawn from the few-shot pool as lm-eval's sampler draws them: one random.Random(seed)
// per task (lm-eval's fewshot_random_seed, 1234 by default), random.sample(pool, num_fewshot)
// for each document in order. So the same seed gives lm-eval's prompts, and --limit K gives the
// first K of the full run's prompts.
//
// Thread-safety: a built PromptBuilder is immutable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/lm_eval_task.h"
#include "eval/gsm8k_dataset.h"
#include "jinja/template.h"

namespace ix::eval {

struct EvalPrompt {
  std::string text;
  std::vector<size_t> shots;  // indices into the few-shot pool
};

class PromptBuilder {
 public:
  // Errors: kParse from a doc_to_text / doc_to_target template that is not Jinja.
  static Result<PromptBuilder> create(const config::LmEvalTask& task);

  // doc_to_text / doc_to_target of one problem. Errors: kInvalidArgument from rendering.
  Result<std::string> text(const Gsm8kProblem& problem) const;
  Result<std::string> target(const Gsm8kProblem& problem) const;

  // The prompts of `docs` (in order) with `num_fewshot` shots from `pool`. Errors: a pool smaller
  // than num_fewshot (kInvalidArgument), rendering errors.
  Result<std::vector<EvalPrompt>> build(const std::vector<Gsm8kProblem>& docs, const std::vector<Gsm8kProblem>& pool,
                                        int num_fewshot, uint64_t seed) const;

 private:
  PromptBuilder(jinja::Template text, jinja::Template target, std::string target_delimiter,
                std::string fewshot_delimiter)
      : text_(std::move(text)),
        target_(std::move(target)),
        target_delimiter_(std::move(target_delimiter)),
        fewshot_delimiter_(std::move(fewshot_delimiter)) {}
  jinja::Template text_;
  jinja::Template target_;
  std::string target_delimiter_;
  std::string fewshot_delimiter_;
};

}  // namespace ix::eval
