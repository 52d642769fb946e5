// Scoring of an lm-eval generate_until task with regex filters and exact_match (lm-eval's
// RegexFilter + take_first, and HF evaluate's exact_match as lm-eval calls it):
//
//   filter:  m = re.findall(regex, response); m = m[group_select] (a tuple: its first non-empty
//            group); m.strip(); no match (or group_select out of range) -> fallback "[invalid]".
//   metric:  for r in regexes_to_ignore: pred = re.sub(r, "", pred); ref = re.sub(r, "", ref);
//            ignore_case: both lowered; ignore_punctuation: ASCII punctuation removed;
//            exact_match = 1.0 when pred == ref.
//   mean and its standard error: sample standard deviation / sqrt(n) (lm-eval's mean_stderr).
//
// Lowering is ASCII-only (the answers are numbers). Thread-safety: a created TaskScorer is
// immutable.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "config/lm_eval_task.h"
#include "eval/py_regex.h"

namespace ix::eval {

struct FilterVerdict {
  std::string extracted;  // the filtered response ("18", "[invalid]")
  bool correct = false;
};

class TaskScorer {
 public:
  // Errors: kInvalidArgument for a regex that does not compile (naming the filter or metric).
  static Result<TaskScorer> create(const config::LmEvalTask& task);

  // One verdict per filter, in the task's filter order.
  std::vector<FilterVerdict> score(std::string_view response, std::string_view target) const;
  // The filter's extraction alone.
  std::string extract(size_t filter, std::string_view response) const;
  // exact_match after the ignore rules.
  bool exact_match(std::string_view prediction, std::string_view reference) const;

  const std::vector<std::string>& filter_names() const { return names_; }
  const std::string& metric() const { return metric_; }

 private:
  struct Filter {
    PyRegex regex;
    int group_select;
    std::string fallback;
  };
  TaskScorer() = default;
  std::string normalize(std::string_view text) const;

  std::vector<std::string> names_;
  std::vector<Filter> filters_;
  std::vector<PyRegex> ignore_;
  bool ignore_case_ = false;
  bool ignore_punctuation_ = false;
  std::string metric_;
};

struct MeanWithStderr {
  double mean = 0.0;
  double stderr_ = 0.0;  // 0 when n < 2
  size_t n = 0;
};
// lm-eval's mean and mean_stderr over 0/1 scores.
MeanWithStderr mean_with_stderr(const std::vector<double>& values);

}  // namespace ix::eval
