#include "config/eval_thresholds.h"

#include <fmt/format.h>

#include "common/file_io.h"
#include "config/yaml_reader.h"

namespace ix::config {

namespace {

constexpr size_t kMaxThresholdsFileBytes = 4 * 1024 * 1024;

Result<std::map<std::string, double>> read_scores(std::string_view source, const YamlNode& node,
                                                  std::string_view where) {
  std::map<std::string, double> out;
  if (node.is_null()) return out;
  if (!node.is_map()) return yaml_error(source, node, fmt::format("'{}' must map task names to minimum scores", where));
  for (const auto& [key, value] : node.entries) {
    auto score = value.as_float();
    if (!score)
      return yaml_error(
          source, value,
          fmt::format("{}.{}: the minimum score must be a number, got {}", where, key.scalar, value.describe()));
    if (out.contains(key.scalar))
      return yaml_error(source, key, fmt::format("{}.{} is given twice", where, key.scalar));
    out[key.scalar] = *score;
  }
  return out;
}

}  // namespace

Result<EvalThresholds> parse_eval_thresholds(std::string_view text, std::string_view source_name) {
  auto root = parse_yaml(text, source_name);
  if (!root) return std::unexpected(root.error());
  if (!root->is_map())
    return yaml_error(source_name, *root,
                      fmt::format("the thresholds config must be a mapping, got {}", root->describe()));
  EvalThresholds out;
  out.source = std::string(source_name);
  const YamlNode* defaults = nullptr;
  const YamlNode* models = nullptr;
  for (const auto& [key, value] : root->entries) {
    if (key.scalar == "default") defaults = &value;
    if (key.scalar == "models") models = &value;
  }
  if (defaults == nullptr && models == nullptr) {
    // Legacy flat format: the whole mapping is the per-task default.
    auto scores = read_scores(source_name, *root, "default");
    if (!scores) return std::unexpected(scores.error());
    out.defaults = std::move(*scores);
    return out;
  }
  if (defaults != nullptr) {
    auto scores = read_scores(source_name, *defaults, "default");
    if (!scores) return std::unexpected(scores.error());
    out.defaults = std::move(*scores);
  }
  if (models != nullptr && !models->is_null()) {
    if (!models->is_map()) return yaml_error(source_name, *models, "'models' must map model prefixes to task scores");
    for (const auto& [prefix, tasks] : models->entries) {
      auto scores = read_scores(source_name, tasks, "models." + prefix.scalar);
      if (!scores) return std::unexpected(scores.error());
      out.models[prefix.scalar] = std::move(*scores);
    }
  }
  return out;
}

Result<EvalThresholds> load_eval_thresholds(const std::filesystem::path& path) {
  auto text = files::read_text_file(path, kMaxThresholdsFileBytes, "an eval thresholds file");
  if (!text) return std::unexpected(text.error());
  return parse_eval_thresholds(*text, path.string());
}

ResolvedThreshold resolve_threshold(const EvalThresholds& thresholds, std::string_view model_prefix,
                                    std::string_view task, double fallback) {
  if (!model_prefix.empty()) {
    if (auto model = thresholds.models.find(std::string(model_prefix)); model != thresholds.models.end()) {
      if (auto score = model->second.find(std::string(task)); score != model->second.end())
        return {score->second, fmt::format("models.{}", model_prefix)};
    }
  }
  if (auto score = thresholds.defaults.find(std::string(task)); score != thresholds.defaults.end())
    return {score->second, "default"};
  return {fallback, "min-score"};
}

}  // namespace ix::config
