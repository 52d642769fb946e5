// Accuracy thresholds (`utils/evals/thresholds.yaml` in InferenceX): `default.<task>` and
// `models.<prefix>.<task>` minimum scores. A file with neither key is the legacy flat format: the
// whole mapping is the per-task default (as validate_scores.py reads it). YAML or JSON.
//
// Thread-safety: plain values and functions.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace ix::config {

struct EvalThresholds {
  std::map<std::string, double> defaults;                       // task -> minimum score
  std::map<std::string, std::map<std::string, double>> models;  // model prefix -> task -> minimum
  std::string source;
};

// Errors: kParse / kInvalidArgument "<source>:<line>:<column>: ..." (a score that is not a
// number, a section that is not a mapping).
Result<EvalThresholds> parse_eval_thresholds(std::string_view text, std::string_view source_name);
Result<EvalThresholds> load_eval_thresholds(const std::filesystem::path& path);

// The minimum score for `task` of `model_prefix`, most specific first: models.<prefix>.<task>,
// then default.<task>, then `fallback`; with the source named as validate_scores.py names it
// ("models.dsr1", "default", "min-score").
struct ResolvedThreshold {
  double min_score = 0.0;
  std::string source;
};
ResolvedThreshold resolve_threshold(const EvalThresholds& thresholds, std::string_view model_prefix,
                                    std::string_view task, double fallback);

}  // namespace ix::config
