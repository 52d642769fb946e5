// lm-evaluation-harness task YAML (`utils/evals/gsm8k.yaml` in InferenceX) as a typed struct.
//
// Only what a generate_until task with regex filters and exact_match needs is understood; a key
// outside that set, or a filter function other than regex/take_first, is refused naming
// file:line (an unknown knob silently ignored would score differently from lm-eval). Keys that
// only describe where lm-eval downloads the data (dataset_path, dataset_name, tag) are kept as
// information.
//
// Thread-safety: plain values and functions.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::config {

// One filter pipeline: regex (with group_select, fallback), then take_first.
struct LmEvalFilter {
  std::string name;  // "strict-match"
  std::string regex_pattern;
  int group_select = 0;  // Python index into re.findall's matches (-1: the last)
  std::string fallback = "[invalid]";
};

struct LmEvalMetric {
  std::string metric = "exact_match";
  std::string aggregation = "mean";
  bool higher_is_better = true;
  bool ignore_case = false;
  bool ignore_punctuation = false;
  std::vector<std::string> regexes_to_ignore;  // applied in order with re.sub(regex, "")
};

struct LmEvalTask {
  std::string task;
  std::vector<std::string> tags;
  std::string dataset_path;
  std::string dataset_name;
  std::string output_type = "generate_until";
  std::string training_split;
  std::string fewshot_split;
  std::string test_split;
  std::string doc_to_text;    // a Jinja template over the document's fields
  std::string doc_to_target;  // likewise
  std::string target_delimiter = " ";
  std::string fewshot_delimiter = "\n\n";
  std::vector<LmEvalMetric> metrics;
  std::vector<std::string> until;  // generation_kwargs.until: the task's stop strings
  bool do_sample = false;
  double temperature = 0.0;
  int repeats = 1;
  int num_fewshot = 0;
  std::vector<LmEvalFilter> filters;
  double version = 0.0;  // metadata.version
  std::string source;    // the file it came from
};

// Parses a task YAML. Errors: kParse / kInvalidArgument "<source>:<line>:<column>: ..." naming the
// key and what was expected.
Result<LmEvalTask> parse_lm_eval_task(std::string_view text, std::string_view source_name);
Result<LmEvalTask> load_lm_eval_task(const std::filesystem::path& path);

}  // namespace ix::config
