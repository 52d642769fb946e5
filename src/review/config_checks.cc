// Checks over the config keys a change adds or edits: deprecated scenarios and retired models
// (MODELS.md, configs/deprecated/), and upstream images for vLLM / SGLang.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "review/review.h"
#include "review/rules.h"
#include "review/text.h"

namespace ix::review {
namespace {

constexpr std::string_view kModelsMd = "MODELS.md";
constexpr std::string_view kArchive = "configs/deprecated/";

// What MODELS.md deprecates: scenarios for all models ("1k1k"), scenarios per model prefix, and
// retired prefixes; each with the line that says so.
struct Deprecations {
  std::map<std::string, int> for_all;                           // scenario -> line
  std::map<std::string, std::map<std::string, int>> by_prefix;  // prefix -> scenario -> line
  std::map<std::string, int> retired;                           // prefix -> line
};

std::vector<std::string> table_cells(std::string_view line) {
  std::vector<std::string> cells;
  size_t begin = line.find('|') + 1;
  while (begin < line.size()) {
    const size_t end = line.find('|', begin);
    if (end == std::string_view::npos) break;
    cells.push_back(trim_text(line.substr(begin, end - begin)));
    begin = end + 1;
  }
  return cells;
}

int column(const std::vector<std::string>& header, std::string_view name) {
  auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::vector<std::string> backticked(const std::string& cell) {
  std::vector<std::string> out;
  static const std::regex kTicked("`([^`]+)`");
  for (std::sregex_iterator it(cell.begin(), cell.end(), kTicked), end; it != end; ++it) out.push_back((*it)[1]);
  return out;
}

// Scenario names a cell deprecates: "Single-turn 8k1k" -> 8k1k; "Agentic coding" (the whole
// scenario, not an arm of it such as "Agentic coding, non-MTP") -> agentic.
std::vector<std::string> scenario_names(const std::string& cell) {
  std::vector<std::string> out;
  static const std::regex kSingleTurn(R"(Single-turn (\d+k\d+k))");
  for (std::sregex_iterator it(cell.begin(), cell.end(), kSingleTurn), end; it != end; ++it) out.push_back((*it)[1]);
  constexpr std::string_view kAgentic = "Agentic coding";
  for (size_t at = cell.find(kAgentic); at != std::string::npos; at = cell.find(kAgentic, at + 1)) {
    const std::string_view rest = std::string_view(cell).substr(at + kAgentic.size());
    if (!rest.starts_with(" non-") && !rest.starts_with(", non-")) {
      out.push_back("agentic");
      break;
    }
  }
  return out;
}

void read_table_row(Deprecations& out, const std::vector<std::string>& header, const std::vector<std::string>& row,
                    int line) {
  auto cell = [&](std::string_view name) -> const std::string* {
    const int i = column(header, name);
    return i >= 0 && i < static_cast<int>(row.size()) ? &row[static_cast<size_t>(i)] : nullptr;
  };
  if (const auto* status = cell("Status"); status && cell("Scenario")) {
    if (status->find("Deprecated for all models") != std::string::npos) {
      for (const auto& name : scenario_names(*cell("Scenario"))) out.for_all.emplace(name, line);
    }
    return;
  }
  const std::string* prefix_cell = cell("Prefix") ? cell("Prefix") : cell("Model");
  if (!prefix_cell) return;
  for (const auto& prefix : backticked(*prefix_cell)) {
    if (const auto* active = cell("Active scenarios"); active && active->starts_with("None"))
      out.retired.emplace(prefix, line);
    for (const auto* deprecated : {cell("Deprecated scenarios"), cell("Deprecated")}) {
      if (!deprecated) continue;
      for (const auto& name : scenario_names(*deprecated)) out.by_prefix[prefix].emplace(name, line);
    }
  }
}

Deprecations read_models_md(std::string_view text) {
  Deprecations out;
  std::vector<std::string> header;
  for_each_line(text, [&](int number, std::string_view line) {
    if (!line.starts_with("|")) {
      header.clear();
      return;
    }
    auto cells = table_cells(line);
    if (header.empty()) {
      header = std::move(cells);
    } else if (!cells.empty() && !cells[0].starts_with("---")) {
      read_table_row(out, header, cells, number);
    }
  });
  return out;
}

std::string scenario_name(int64_t isl, int64_t osl) {
  if (isl % 1024 == 0 && osl % 1024 == 0) return fmt::format("{}k{}k", isl / 1024, osl / 1024);
  return fmt::format("{}/{}", isl, osl);
}

// The line of a key's `- isl: N` block followed by `osl: M`, searching from the key's line.
int scenario_line(std::string_view text, int from, int64_t isl, int64_t osl) {
  int found = 0, candidate = 0;
  for_each_line(text, [&](int number, std::string_view line) {
    if (found || number < from) return;
    const std::string code = trim_text(line);
    if (code.find(fmt::format("isl: {}", isl)) != std::string::npos) candidate = number;
    if (candidate && number - candidate <= 3 && code.find(fmt::format("osl: {}", osl)) != std::string::npos)
      found = candidate;
  });
  return found ? found : from;
}

// The archived configs' keys (configs/deprecated/*.yaml): key -> file.
std::map<std::string, std::string> archived_keys(const RepoTree& head) {
  std::map<std::string, std::string> out;
  for (const auto& path : head.files()) {
    if (!path.starts_with(kArchive) || !(path.ends_with(".yaml") || path.ends_with(".yml"))) continue;
    for_each_line(head.read(path).value_or(""), [&](int, std::string_view line) {
      const size_t colon = line.find(':');
      if (!line.empty() && line[0] != ' ' && line[0] != '#' && colon != std::string_view::npos)
        out.emplace(std::string(line.substr(0, colon)), path);
    });
  }
  return out;
}

bool had_scenario(const ScopedKey& key, int64_t isl, int64_t osl) {
  if (!key.base_config) return false;
  return std::any_of(key.base_config->fixed_seq_len.begin(), key.base_config->fixed_seq_len.end(),
                     [&](const auto& s) { return s.isl == isl && s.osl == osl; });
}

// One key's deprecation findings: a retired model, a re-added archived key, new deprecated scenarios.
void deprecated_findings(const ScopedKey& key, const Deprecations& models,
                         const std::map<std::string, std::string>& archive, const std::string& config_text,
                         CheckResult& result) {
  const auto& config = *key.config;
  if (auto retired = models.retired.find(config.model_prefix); retired != models.retired.end())
    result.evidence.push_back({key.file, key.line,
                               fmt::format("'{}' serves model prefix {}, retired ({}:{})", key.key, config.model_prefix,
                                           kModelsMd, retired->second)});
  if (auto archived = archive.find(key.key); key.added && archived != archive.end())
    result.evidence.push_back(
        {key.file, key.line,
         fmt::format("'{}' is archived in {}: deprecated keys are not re-added", key.key, archived->second)});
  const auto by_prefix = models.by_prefix.find(config.model_prefix);
  auto deprecated_line = [&](const std::string& name) {
    if (auto all = models.for_all.find(name); all != models.for_all.end()) return all->second;
    if (by_prefix == models.by_prefix.end()) return 0;
    auto it = by_prefix->second.find(name);
    return it == by_prefix->second.end() ? 0 : it->second;
  };
  for (const auto& scenario : config.fixed_seq_len) {
    const std::string name = scenario_name(scenario.isl, scenario.osl);
    const int line = deprecated_line(name);
    if (line == 0 || had_scenario(key, scenario.isl, scenario.osl)) continue;
    result.evidence.push_back({key.file, scenario_line(config_text, key.line, scenario.isl, scenario.osl),
                               fmt::format("'{}' adds the {} scenario ({}/{}), deprecated ({}:{})", key.key, name,
                                           scenario.isl, scenario.osl, kModelsMd, line)});
  }
  const bool had_agentic = key.base_config && !key.base_config->agentic_coding.empty();
  if (const int line = deprecated_line("agentic"); line && !config.agentic_coding.empty() && !had_agentic)
    result.evidence.push_back({key.file, key.line,
                               fmt::format("'{}' adds agentic coding, deprecated for {} ({}:{})", key.key,
                                           config.model_prefix, kModelsMd, line)});
}

bool upstream(const std::string& image) {
  const auto& registries = default_rules().upstream_images.registries;
  return std::any_of(registries.begin(), registries.end(), [&](const auto& r) { return image.starts_with(r); });
}

}  // namespace

CheckResult check_deprecated(const ReviewInput& input) {
  CheckResult result = start_check("deprecated", "No deprecated model or scenario comes back");
  std::vector<const ScopedKey*> keys;
  for (const auto& key : input.scope.keys) {
    if (key.config_changed && key.config) keys.push_back(&key);
  }
  if (keys.empty()) return not_applicable(std::move(result), "no config key added or edited");
  const Deprecations models = read_models_md(input.head.read(std::string(kModelsMd)).value_or(""));
  const auto archive = archived_keys(input.head);
  for (const auto* key : keys)
    deprecated_findings(*key, models, archive, input.head.read(key->file).value_or(""), result);
  if (result.evidence.empty()) {
    result.summary = fmt::format("{} changed key(s): no retired model, archived key or deprecated scenario ({} and {})",
                                 keys.size(), kModelsMd, kArchive);
    return result;
  }
  result.verdict = Verdict::kFail;
  result.summary = fmt::format("deprecated models or scenarios submitted ({})", result.evidence.size());
  result.fix = "drop the deprecated scenario or retired model (MODELS.md says what is active)";
  return result;
}

CheckResult check_upstream_images(const ReviewInput& input) {
  CheckResult result = start_check("upstream-image", "vLLM and SGLang keys use upstream images");
  const auto& rule = default_rules().upstream_images;
  size_t judged = 0;
  for (const auto& key : input.scope.keys) {
    if (!key.config) continue;
    const auto& frameworks = rule.frameworks;
    if (std::find(frameworks.begin(), frameworks.end(), key.config->framework) == frameworks.end()) continue;
    ++judged;
    if (upstream(key.config->image)) continue;
    const std::string text = input.head.read(key.file).value_or("");
    const int line = line_holding(text, "image:", key.line);
    result.evidence.push_back(
        {key.file, line ? line : key.line,
         fmt::format("'{}' ({}) runs {}, not an upstream image ({})", key.key, key.config->framework, key.config->image,
                     fmt::join(rule.registries.begin(), rule.registries.begin() + 2, ", "))});
  }
  if (judged == 0) return not_applicable(std::move(result), "no vLLM or SGLang key (or its recipe) added or edited");
  if (result.evidence.empty()) {
    result.summary = fmt::format("{} vLLM/SGLang key(s) on upstream images", judged);
    return result;
  }
  result.verdict = Verdict::kFail;
  result.summary = fmt::format("vLLM/SGLang keys on non-upstream images ({})", result.evidence.size());
  result.fix = "use the engine's upstream image (Docker Hub vllm/ or lmsysorg/); " + rule.why;
  return result;
}

}  // namespace ix::review
