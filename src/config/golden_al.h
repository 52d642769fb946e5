// Golden acceptance-length curves (InferenceX's golden_al_distribution/*.yaml, SPEC §7):
//
//   deepseek-v4-pro:          # the measured model
//     thinking_on:            # thinking mode
//       3: 2.49               # num_speculative_tokens (draft length): golden AL
//     thinking_off: {...}
//
// Every value must be a number in [1, draft length + 1] (an AL counts the verified token).
// Errors name "<file>:<line>:<column>". Lookups that find nothing say what was looked up where
// and what the file holds instead.
//
// Thread-safety: plain values and functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "config/yaml_tree.h"

namespace ix::config {

struct GoldenAlCurve {
  std::vector<std::pair<int64_t, double>> points;  // draft length -> AL, in file order
  Mark mark;
  bool present = false;
};

struct GoldenAlModel {
  std::string name;
  Mark mark;
  GoldenAlCurve thinking_on;
  GoldenAlCurve thinking_off;
};

struct GoldenAlFile {
  std::filesystem::path path;
  std::vector<GoldenAlModel> models;
};

Result<GoldenAlFile> parse_golden_al(std::string_view text, const std::filesystem::path& source);
Result<GoldenAlFile> load_golden_al(const std::filesystem::path& path);

// The golden AL of `model` in thinking mode `thinking` with `draft_length` draft tokens.
// kNotFound naming the file, the model, the mode and the draft length, and what exists instead.
Result<double> find_golden_al(const GoldenAlFile& file, std::string_view model, bool thinking, int64_t draft_length);

}  // namespace ix::config
