#include "config/recipe_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/file_io.h"
#include "common/strings.h"
#include "config/yaml_reader.h"

namespace ix::config {
namespace {

constexpr std::string_view kFormatHint = "see docs/recipes.md for the recipe format";

class Reader : public YamlReader {
 public:
  explicit Reader(std::string source) : YamlReader(std::move(source), unknown_key_message, RepeatedKeys::kRefuse) {}

  Result<RecipeTemplate> templ(const YamlNode& node, std::string_view key) const {
    auto value = string(node, key);
    if (!value) return std::unexpected(value.error());
    return RecipeTemplate{std::move(*value), node.mark};
  }
  Result<std::vector<RecipeEnvEntry>> env(const YamlNode& node, std::string_view key) const;
  Result<std::vector<RecipeVar>> vars(const YamlNode& node) const;
  Result<GoldenAlSource> golden_al(const YamlNode& node) const;
  Result<RecipeModelEntry> model_entry(const YamlNode& key, const YamlNode& node) const;

 private:
  static std::string unknown_key_message(std::string_view what, std::string_view key, std::string_view known) {
    return fmt::format("{}: unknown key '{}' (known: {}; {})", what, key, known, kFormatHint);
  }
};

bool is_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

Result<std::vector<RecipeEnvEntry>> Reader::env(const YamlNode& node, std::string_view key) const {
  if (!node.is_map())
    return error(node, fmt::format("'{}' must be a mapping NAME: value, got {}", key, node.describe()));
  std::vector<RecipeEnvEntry> out;
  std::set<std::string> seen;
  for (const auto& [name, value] : node.entries) {
    if (!is_env_name(name.scalar))
      return error(name, fmt::format("'{}': '{}' is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", key,
                                     name.scalar));
    if (!seen.insert(name.scalar).second)
      return error(name, fmt::format("'{}': variable '{}' is given twice", key, name.scalar));
    RecipeEnvEntry entry{name.scalar, {}};
    IX_READ(entry.value, templ(value, name.scalar));
    out.push_back(std::move(entry));
  }
  return out;
}

Result<std::vector<RecipeVar>> Reader::vars(const YamlNode& node) const {
  if (!node.is_map()) return error(node, fmt::format("'vars' must be a mapping name: value, got {}", node.describe()));
  std::vector<RecipeVar> out;
  for (const auto& [name, value] : node.entries) {
    if (!value.is_scalar())
      return error(value, fmt::format("vars: '{}' must be a scalar, got {}", name.scalar, value.describe()));
    RecipeVar var;
    var.name = name.scalar;
    var.text = value.scalar;
    if (auto b = value.as_bool()) {
      var.kind = RecipeVar::Kind::kBool;
      var.bool_value = *b;
    } else if (auto i = value.as_int()) {
      var.kind = RecipeVar::Kind::kInt;
      var.int_value = *i;
    } else if (auto f = value.as_float()) {
      var.kind = RecipeVar::Kind::kFloat;
      var.float_value = *f;
    }
    out.push_back(std::move(var));
  }
  return out;
}

Result<GoldenAlSource> Reader::golden_al(const YamlNode& node) const {
  GoldenAlSource source{.file = {}, .model = {}, .mark = node.mark};
  auto ok = each(node, "golden-al",
                 {{"file",
                   [&](const YamlNode& v) -> Result<void> {
                     IX_READ(source.file, string(v, "file"));
                     return {};
                   }},
                  {"model", [&](const YamlNode& v) -> Result<void> {
                     IX_READ(source.model, string(v, "model"));
                     return {};
                   }}});
  if (!ok) return std::unexpected(ok.error());
  if (source.file.empty() || source.model.empty())
    return error(node,
                 "golden-al needs both 'file' (a golden_al_distribution/*.yaml name) and 'model' (its top-level key)");
  return source;
}

Result<RecipeModelEntry> Reader::model_entry(const YamlNode& key, const YamlNode& node) const {
  RecipeModelEntry entry;
  entry.key = key.scalar;
  entry.mark = key.mark;
  const std::string what = fmt::format("models: '{}'", key.scalar);
  auto ok = each(node, what,
                 {{"args",
                   [&](const YamlNode& v) -> Result<void> {
                     IX_READ(entry.args, templ(v, "args"));
                     return {};
                   }},
                  {"env",
                   [&](const YamlNode& v) -> Result<void> {
                     IX_READ(entry.env, env(v, "env"));
                     return {};
                   }},
                  {"vars",
                   [&](const YamlNode& v) -> Result<void> {
                     IX_READ(entry.vars, vars(v));
                     return {};
                   }},
                  {"num-spec-tokens",
                   [&](const YamlNode& v) -> Result<void> {
                     auto n = v.as_int();
                     if (!n || *n < 1 || *n > 64)
                       return error(
                           v, fmt::format("'num-spec-tokens' must be a whole number in [1, 64], got {}", v.describe()));
                     entry.num_spec_tokens = *n;
                     return {};
                   }},
                  {"golden-al",
                   [&](const YamlNode& v) -> Result<void> {
                     IX_READ(entry.golden_al, golden_al(v));
                     return {};
                   }},
                  {"thinking", [&](const YamlNode& v) -> Result<void> {
                     auto b = v.as_bool();
                     if (!b) return error(v, fmt::format("'thinking' must be on or off, got {}", v.describe()));
                     entry.thinking = *b;
                     return {};
                   }}});
  if (!ok) return std::unexpected(ok.error());
  return entry;
}

// `files:` path -> content template; paths stay inside the job folder.
Result<void> read_files(const Reader& r, const YamlNode& v, RecipeFile& file) {
  if (!v.is_map()) return r.error(v, "'files' must map relative paths to content templates");
  for (const auto& [key, content] : v.entries) {
    const std::filesystem::path path(key.scalar);
    if (key.scalar.empty() || path.is_absolute() || std::find(path.begin(), path.end(), "..") != path.end())
      return r.error(key, fmt::format("files: '{}' must be a relative path inside the job folder", key.scalar));
    RecipeFileEntry entry{key.scalar, {}};
    IX_READ(entry.content, r.templ(content, key.scalar));
    file.files.push_back(std::move(entry));
  }
  return {};
}

Result<void> read_models(const Reader& r, const YamlNode& v, RecipeFile& file) {
  if (!v.is_map()) return r.error(v, "'models' must be a mapping of model keys to entries");
  std::set<std::string> seen;
  for (const auto& [key, entry] : v.entries) {
    if (!seen.insert(key.scalar).second) return r.error(key, fmt::format("models: '{}' is given twice", key.scalar));
    RecipeModelEntry parsed;
    IX_READ(parsed, r.model_entry(key, entry));
    file.models.push_back(std::move(parsed));
  }
  return {};
}

Result<void> read_frameworks(const Reader& r, const YamlNode& v, RecipeFile& file) {
  file.frameworks_mark = v.mark;
  if (!v.is_sequence() || v.items.empty())
    return r.error(v, "'frameworks' must be a non-empty list of the rows' framework names");
  for (const auto& item : v.items) {
    std::string name;
    IX_READ(name, r.string(item, "frameworks"));
    file.frameworks.push_back(std::move(name));
  }
  return {};
}

Result<void> read_top(const Reader& r, const YamlNode& root, RecipeFile& file) {
  auto string_field = [&](std::string& target, const char* key) {
    return [&, key](const YamlNode& v) -> Result<void> {
      IX_READ(target, r.string(v, key));
      return {};
    };
  };
  auto template_field = [&](RecipeTemplate& target, const char* key) {
    return [&, key](const YamlNode& v) -> Result<void> {
      IX_READ(target, r.templ(v, key));
      return {};
    };
  };
  auto with_file = [&](Result<void> (*read)(const Reader&, const YamlNode&, RecipeFile&)) {
    return [&, read](const YamlNode& v) { return read(r, v, file); };
  };
  return r.each(root, "a recipe",
                {{"frameworks", with_file(read_frameworks)},
                 {"bench-backend", string_field(file.bench_backend, "bench-backend")},
                 {"served-model", template_field(file.served_model, "served-model")},
                 {"tokenizer", template_field(file.tokenizer, "tokenizer")},
                 {"health-path", string_field(file.health_path, "health-path")},
                 {"model-entry",
                  [&](const YamlNode& v) -> Result<void> {
                    if (v.scalar != "required" && v.scalar != "optional")
                      return r.error(v,
                                     fmt::format("'model-entry' must be required or optional, got {}", v.describe()));
                    file.model_entry_required = v.scalar == "required";
                    return {};
                  }},
                 {"command", template_field(file.command, "command")},
                 {"env",
                  [&](const YamlNode& v) -> Result<void> {
                    IX_READ(file.env, r.env(v, "env"));
                    return {};
                  }},
                 {"files", with_file(read_files)},
                 {"models", with_file(read_models)}});
}

}  // namespace

Result<RecipeFile> parse_recipe_file(std::string_view text, const std::filesystem::path& source) {
  auto root = parse_yaml(text, source.string());
  if (!root) return std::unexpected(root.error());
  const Reader r(source.string());
  RecipeFile file;
  file.path = source;
  if (auto ok = read_top(r, *root, file); !ok) return std::unexpected(ok.error());
  if (file.frameworks.empty())
    return r.error(*root, "a recipe needs 'frameworks': the rows' framework names it serves");
  if (file.bench_backend.empty())
    return r.error(*root, "a recipe needs 'bench-backend' (vllm, sglang, openai, openai-chat, trt or atom)");
  if (strip(file.command.text).empty())
    return r.error(*root, "a recipe needs 'command': the server's command template");
  if (file.health_path.empty() || file.health_path[0] != '/')
    return r.error(*root, fmt::format("'health-path' must start with '/', got '{}'", file.health_path));
  return file;
}

Result<RecipeFile> load_recipe_file(const std::filesystem::path& path) {
  auto text = files::read_text_file(path, files::kMaxConfigFileBytes, "a recipe file");
  if (!text) return std::unexpected(text.error());
  return parse_recipe_file(*text, path);
}

}  // namespace ix::config
