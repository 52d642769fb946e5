// The model-variant lookup of multi-node servers: a config's framework is dispatched (by
// benchmarks/multi_node/amd_utils/server.sh, as ENGINE) to a server script, which picks the
// config's entry in a models YAML by MODEL_NAME (the basename of the config's model, as
// runners/launch_mi355x-amds.sh sets it). Agentic runs need `<MODEL_NAME>-AgentX`: a lookup by the
// bare name, or a suffixed lookup that falls back to the bare entry because the agentic one is
// missing, runs the agentic benchmark on the fixed-seq-len (throughput) recipe.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>

#include "review/review.h"
#include "review/rules.h"
#include "review/text.h"

namespace ix::review {
namespace {

// The dispatcher's branches: ENGINE value -> server script file name; `fallback` is the else branch.
struct Dispatch {
  std::string default_engine;
  std::map<std::string, std::string> by_engine;
  std::string fallback;
  const std::string* script_for(const std::string& framework) const {
    if (auto it = by_engine.find(framework); it != by_engine.end()) return &it->second;
    return framework == default_engine && !fallback.empty() ? &fallback : nullptr;
  }
};

Dispatch read_dispatch(std::string_view text) {
  static const std::regex kDefault(R"(ENGINE="?\$\{ENGINE:-([\w.-]+)\})");
  static const std::regex kBranch(R"re(^\s*(?:if|elif)\s+\[\[\s*"?\$\{?ENGINE\}?"?\s*==\s*"?([\w.-]+)"?)re");
  static const std::regex kElse(R"(^\s*else\b)");
  static const std::regex kSource(R"((?:source|\.)\s+\S*?(server_[\w.-]+\.sh))");
  Dispatch dispatch;
  std::string branch;
  bool in_else = false;
  for_each_line(text, [&](int, std::string_view raw) {
    const std::string line = code_line(raw);
    std::smatch m;
    if (std::regex_search(line, m, kDefault)) dispatch.default_engine = m[1];
    if (std::regex_search(line, m, kBranch)) {
      branch = m[1];
      in_else = false;
    } else if (std::regex_search(line, kElse)) {
      branch.clear();
      in_else = true;
    } else if (std::regex_search(line, m, kSource)) {
      if (!branch.empty()) dispatch.by_engine.emplace(branch, m[1]);
      if (in_else) dispatch.fallback = m[1];
    }
  });
  return dispatch;
}

// How a server script looks its entry up.
struct Lookup {
  std::string models_file;  // repository path of the models YAML it reads
  bool suffixed = false;    // builds `<MODEL_NAME><agentic suffix>` (and falls back to the bare name)
  int bare_line = 0;        // the line that looks the bare MODEL_NAME up (when not suffixed)
};

Lookup read_lookup(std::string_view script, const std::string& folder, const std::string& suffix) {
  static const std::regex kModelsFile(R"((models[\w-]*\.ya?ml))");
  Lookup lookup;
  for_each_line(script, [&](int number, std::string_view raw) {
    const std::string line(raw);
    std::smatch m;
    if (lookup.models_file.empty() && std::regex_search(line, m, kModelsFile)) lookup.models_file = folder + m[1].str();
    if (line.find("}" + suffix) != std::string::npos) lookup.suffixed = true;
    const bool reads_entry = line.find(".get(") != std::string::npos || line.find("[") != std::string::npos;
    if (!lookup.bare_line && line.find("MODEL_NAME}") != std::string::npos && reads_entry) lookup.bare_line = number;
  });
  return lookup;
}

std::vector<std::string> top_level_names(std::string_view yaml) {
  std::vector<std::string> names;
  for_each_line(yaml, [&](int, std::string_view line) {
    const size_t colon = line.find(':');
    if (!line.empty() && line[0] != ' ' && line[0] != '#' && colon != std::string_view::npos)
      names.emplace_back(line.substr(0, colon));
  });
  return names;
}

std::string model_name(const std::string& model) {
  return model.substr(model.find_last_of('/') + 1);
}

// One agentic key's lookup through `script` (a repository path).
void lookup_findings(const ReviewInput& input, const ScopedKey& key, const std::string& script, CheckResult& result) {
  const auto& rule = default_rules().variant_lookup;
  const std::string folder = script.substr(0, script.rfind('/') + 1);
  const Lookup lookup = read_lookup(input.head.read(script).value_or(""), folder, rule.agentic_suffix);
  const std::string name = model_name(key.config->model);
  const std::string wanted = name + rule.agentic_suffix;
  if (!lookup.suffixed) {
    result.evidence.push_back(
        {script, lookup.bare_line,
         fmt::format("looks up {} by the bare ${{MODEL_NAME}}: agentic '{}' gets entry '{}', never '{}'",
                     lookup.models_file, key.key, name, wanted)});
    return;
  }
  const auto entries = top_level_names(input.head.read(lookup.models_file).value_or(""));
  if (std::find(entries.begin(), entries.end(), wanted) != entries.end()) return;
  result.evidence.push_back(
      {key.file, key.line,
       fmt::format("{} has no '{}' entry: agentic '{}' falls back to '{}' (the throughput recipe)", lookup.models_file,
                   wanted, key.key, name)});
}

}  // namespace

CheckResult check_variant_lookup(const ReviewInput& input) {
  CheckResult result = start_check("variant-lookup", "Multi-node model lookups resolve to the agentic entry");
  const auto& rule = default_rules().variant_lookup;
  const auto& dispatcher = input.head.read(rule.dispatcher);
  const Dispatch dispatch = read_dispatch(dispatcher.value_or(""));
  const std::string folder = rule.dispatcher.substr(0, rule.dispatcher.rfind('/') + 1);
  size_t judged = 0;
  for (const auto& key : input.scope.keys) {
    if (!key.config || !key.config->multinode || !dispatcher) continue;
    const std::string* script = dispatch.script_for(key.config->framework);
    if (!script) continue;
    ++judged;
    if (!key.config->agentic_coding.empty()) lookup_findings(input, key, folder + *script, result);
  }
  if (judged == 0)
    return not_applicable(std::move(result),
                          fmt::format("no multi-node key in scope dispatched by {}", rule.dispatcher));
  if (result.evidence.empty()) {
    result.summary =
        fmt::format("{} multi-node key(s): agentic runs resolve to their {} entry", judged, rule.agentic_suffix);
    return result;
  }
  result.verdict = Verdict::kFail;
  result.summary = fmt::format("agentic runs fall back to the throughput entry ({})", result.evidence.size());
  result.fix =
      fmt::format("look the entry up as <MODEL_NAME>{} for agentic runs, and add that entry to the models file",
                  rule.agentic_suffix);
  return result;
}

}  // namespace ix::review
