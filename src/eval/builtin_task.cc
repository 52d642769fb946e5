#include "eval/builtin_task.h"

#include <cstdlib>

#include "common/log.h"

namespace ix::eval {

// InferenceX's utils/evals/gsm8k.yaml (the task their submissions are scored with).
std::string_view builtin_gsm8k_yaml() {
  return R"yaml(tag:
  - math_word_problems
task: gsm8k
dataset_path: openai/gsm8k
dataset_name: main
output_type: generate_until
training_split: train
fewshot_split: train
test_split: test
doc_to_text: "Question: {{question}}\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer:"
doc_to_target: "{{answer}}"
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: false
    regexes_to_ignore:
      - ","
      - "\\$"
      - "(?s).*#### "
      - "\\.$"
generation_kwargs:
  until:
    - "</s>"
    - "<|im_end|>"
  do_sample: false
  temperature: 0.0
repeats: 1
num_fewshot: 5
filter_list:
  - name: "strict-match"
    filter:
      - function: "regex"
        group_select: -1
        regex_pattern: "#### (\\-?[0-9\\.\\,]+)"
      - function: "take_first"
  - name: "flexible-extract"
    filter:
      - function: "regex"
        group_select: -1
        regex_pattern: "(-?[$0-9.,]{2,})|(-?[0-9]+)"
      - function: "take_first"
metadata:
  version: 3.0
)yaml";
}

const config::LmEvalTask& builtin_gsm8k_task() {
  static const config::LmEvalTask task = [] {
    auto parsed = config::parse_lm_eval_task(builtin_gsm8k_yaml(), "built-in gsm8k.yaml");
    if (!parsed) {
      log::error("the built-in gsm8k task does not parse: {}", parsed.error().message());
      std::abort();
    }
    return std::move(*parsed);
  }();
  return task;
}

}  // namespace ix::eval
