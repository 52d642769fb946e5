#include "config/golden_al.h"

#include <fmt/format.h>

#include <set>

#include "common/file_io.h"
#include "config/yaml_reader.h"

namespace ix::config {
namespace {

Result<GoldenAlCurve> parse_curve(const std::filesystem::path& source, const std::string& where, const YamlNode& node) {
  if (!node.is_map())
    return yaml_error(source.string(), node,
                      fmt::format("{} must map draft lengths to golden ALs (3: 2.49), got {}", where, node.describe()));
  GoldenAlCurve curve{.points = {}, .mark = node.mark, .present = true};
  std::set<int64_t> seen;
  for (const auto& [key, value] : node.entries) {
    const auto draft = key.as_int();
    if (!draft || *draft < 1)
      return yaml_error(source.string(), key,
                        fmt::format("{}: '{}' is not a draft length (a whole number >= 1)", where, key.scalar));
    if (!seen.insert(*draft).second)
      return yaml_error(source.string(), key, fmt::format("{}: draft length {} is given twice", where, *draft));
    const auto al = value.as_float();
    if (!al || *al < 1.0 || *al > static_cast<double>(*draft + 1))
      return yaml_error(source.string(), value,
                        fmt::format("{}.{}: the golden AL must be a number in [1, {}] (draft length + 1), got {}",
                                    where, *draft, *draft + 1, value.describe()));
    curve.points.emplace_back(*draft, *al);
  }
  return curve;
}

Result<GoldenAlModel> parse_model(const std::filesystem::path& source, const YamlNode& key, const YamlNode& node) {
  GoldenAlModel model{.name = key.scalar, .mark = key.mark, .thinking_on = {}, .thinking_off = {}};
  if (!node.is_map())
    return yaml_error(source.string(), node,
                      fmt::format("'{}' must map thinking_on / thinking_off to curves", key.scalar));
  for (const auto& [mode, curve] : node.entries) {
    if (mode.scalar != "thinking_on" && mode.scalar != "thinking_off")
      return yaml_error(source.string(), mode,
                        fmt::format("'{}': unknown key '{}' (thinking_on or thinking_off)", key.scalar, mode.scalar));
    GoldenAlCurve& target = mode.scalar == "thinking_on" ? model.thinking_on : model.thinking_off;
    if (target.present)
      return yaml_error(source.string(), mode, fmt::format("'{}.{}' is given twice", key.scalar, mode.scalar));
    auto parsed = parse_curve(source, key.scalar + "." + mode.scalar, curve);
    if (!parsed) return std::unexpected(parsed.error());
    target = std::move(*parsed);
  }
  return model;
}

std::string draft_lengths(const GoldenAlCurve& curve) {
  std::string out;
  for (const auto& [draft, al] : curve.points) out += (out.empty() ? "" : ", ") + std::to_string(draft);
  return out.empty() ? "none" : out;
}

}  // namespace

Result<GoldenAlFile> parse_golden_al(std::string_view text, const std::filesystem::path& source) {
  auto root = parse_yaml(text, source.string());
  if (!root) return std::unexpected(root.error());
  if (!root->is_map())
    return yaml_error(source.string(), *root,
                      "a golden AL file maps models to {thinking_on|thinking_off: {draft length: AL}}");
  GoldenAlFile file{.path = source, .models = {}};
  std::set<std::string> seen;
  for (const auto& [key, value] : root->entries) {
    if (!seen.insert(key.scalar).second)
      return yaml_error(source.string(), key, fmt::format("model '{}' is given twice", key.scalar));
    auto model = parse_model(source, key, value);
    if (!model) return std::unexpected(model.error());
    file.models.push_back(std::move(*model));
  }
  return file;
}

Result<GoldenAlFile> load_golden_al(const std::filesystem::path& path) {
  auto text = files::read_text_file(path, files::kMaxConfigFileBytes, "a golden AL file");
  if (!text) return std::unexpected(text.error());
  return parse_golden_al(*text, path);
}

Result<double> find_golden_al(const GoldenAlFile& file, std::string_view model, bool thinking, int64_t draft_length) {
  const std::string mode = thinking ? "thinking_on" : "thinking_off";
  const GoldenAlModel* found = nullptr;
  std::string names;
  for (const auto& entry : file.models) {
    if (entry.name == model) found = &entry;
    names += (names.empty() ? "" : ", ") + entry.name;
  }
  if (found == nullptr)
    return fail(ErrorCode::kNotFound, fmt::format("{} has no model '{}' (it holds: {})", file.path.string(), model,
                                                  names.empty() ? "nothing" : names));
  const GoldenAlCurve& curve = thinking ? found->thinking_on : found->thinking_off;
  if (!curve.present)
    return fail(ErrorCode::kNotFound,
                fmt::format("{}:{}: model '{}' has no {} curve", file.path.string(), found->mark.line, model, mode));
  for (const auto& [draft, al] : curve.points) {
    if (draft == draft_length) return al;
  }
  return fail(ErrorCode::kNotFound,
              fmt::format("{}:{}: {}.{} has no draft length {} (draft lengths there: {})", file.path.string(),
                          curve.mark.line, model, mode, draft_length, draft_lengths(curve)));
}

}  // namespace ix::config
