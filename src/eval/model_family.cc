#include "eval/model_family.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "common/strings.h"

namespace ix::eval {

namespace {

struct FamilyInfo {
  ModelFamily family;
  std::string_view name;
  std::vector<std::string_view> markers;
};

const std::array<FamilyInfo, 9>& families() {
  static const std::array<FamilyInfo, 9> table{{
      {ModelFamily::kNone, "none", {}},
      {ModelFamily::kDeepseek, "deepseek", {"<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"}},
      {ModelFamily::kDeepseekV4,
       "deepseek_v4",
       {"<｜end▁of▁sentence｜>", "<｜begin▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "\u202e"}},
      {ModelFamily::kQwen, "qwen", {"<|im_end|>", "<|endoftext|>", "<|im_start|>"}},
      {ModelFamily::kLlama, "llama", {"<|eot_id|>", "<|end_of_text|>", "<|eom_id|>", "<|start_header_id|>"}},
      {ModelFamily::kGptOss, "gptoss", {"<|return|>", "<|call|>", "<|endoftext|>"}},
      {ModelFamily::kKimi, "kimi", {"<|im_end|>", "[EOS]", "<|im_user|>", "<|im_assistant|>"}},
      {ModelFamily::kGlm, "glm", {"<|endoftext|>", "<|user|>", "<|observation|>"}},
      {ModelFamily::kMinimax, "minimax", {"[e~[", "]~b]", "]~!b["}},
  }};
  return table;
}

const FamilyInfo& info(ModelFamily family) {
  for (const auto& entry : families())
    if (entry.family == family) return entry;
  return families()[0];
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace

std::string_view model_family_name(ModelFamily family) {
  return info(family).name;
}

Result<ModelFamily> parse_model_family(std::string_view name) {
  const std::string lower = ascii_lower(name);
  for (const auto& entry : families())
    if (entry.name == lower) return entry.family;
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("--model-family '{}': not a model family; choose deepseek, deepseek_v4, qwen, llama, gptoss, "
                          "kimi, glm, minimax or none",
                          name));
}

std::optional<ModelFamily> guess_model_family(std::string_view model) {
  const std::string m = ascii_lower(model);
  if (contains(m, "deepseek-v4") || contains(m, "deepseek_v4") || contains(m, "dsv4")) return ModelFamily::kDeepseekV4;
  if (contains(m, "deepseek") || contains(m, "dsr1")) return ModelFamily::kDeepseek;
  if (contains(m, "qwen")) return ModelFamily::kQwen;
  if (contains(m, "llama")) return ModelFamily::kLlama;
  if (contains(m, "gpt-oss") || contains(m, "gptoss") || contains(m, "gpt_oss")) return ModelFamily::kGptOss;
  if (contains(m, "kimi")) return ModelFamily::kKimi;
  if (contains(m, "glm")) return ModelFamily::kGlm;
  if (contains(m, "minimax")) return ModelFamily::kMinimax;
  return std::nullopt;
}

std::span<const std::string_view> family_markers(ModelFamily family) {
  return info(family).markers;
}

std::vector<std::string> stop_strings(const std::vector<std::string>& task_stops, ModelFamily family) {
  std::vector<std::string> out = task_stops;
  for (std::string_view marker : family_markers(family))
    if (std::find(out.begin(), out.end(), marker) == out.end()) out.emplace_back(marker);
  return out;
}

std::optional<MarkerCut> find_cut(std::string_view text, const std::vector<std::string>& markers) {
  std::optional<MarkerCut> best;
  for (const auto& marker : markers) {
    if (marker.empty()) continue;
    const size_t at = text.find(marker);
    if (at != std::string_view::npos && (!best || at < best->at)) best = MarkerCut{at, &marker};
  }
  return best;
}

std::optional<size_t> first_marker(std::string_view text, const std::vector<std::string>& markers) {
  if (auto cut = find_cut(text, markers)) return cut->at;
  return std::nullopt;
}

std::optional<int64_t> family_default_max_tokens(ModelFamily family) {
  if (family == ModelFamily::kDeepseekV4) return 1024;
  return std::nullopt;
}

}  // namespace ix::eval
