// golden-al: spec-decoding recipes of the change force the golden acceptance length (SPEC §7) on
// throughput runs, and only there (tests/data/review/README.md gives the rule).
//
// Per single-node recipe serving speculative rows: the golden file is the golden_al_distribution/
// file the recipe names (a comment or a path), else the model prefix's only file (of several, the
// only one holding the config's model); the model is the file's top-level key (of several, the
// config's model), the mode thinking_on (AgentX); the draft length is what the recipe gives
// the draft-length settings, and each forced value (rules.json golden_al) is compared with the
// golden AL for the draft length set nearest to it (an engine that counts accepted draft tokens
// takes AL - 1).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include "config/golden_al.h"
#include "review/review.h"
#include "review/rules.h"
#include "review/shell_scan.h"
#include "review/text.h"

namespace ix::review {
namespace {

constexpr std::string_view kGoldenDir = "golden_al_distribution/";
constexpr std::string_view kEvalOnly = "EVAL_ONLY";

struct Report {
  CheckResult& result;
  Tally tally;
  void fail(std::string file, int line, std::string message) {
    tally.fail = true;
    result.evidence.push_back({std::move(file), line, std::move(message)});
  }
  void warn(std::string file, int line, std::string message) {
    tally.warn = true;
    result.evidence.push_back({std::move(file), line, std::move(message)});
  }
};

struct SpecRecipe {
  std::string path;
  const config::MasterConfig* config = nullptr;  // the first key it serves (none: a changed recipe alone)
  bool agentic = false;
};

bool serves_spec_rows(const std::string& path, const config::MasterConfig& config) {
  auto spec = [&](const auto& scenarios) {
    return std::any_of(scenarios.begin(), scenarios.end(), [&](const auto& scenario) {
      return std::any_of(scenario.search_space.begin(), scenario.search_space.end(), [&](const auto& e) {
        return e.spec_decoding != config::SpecDecoding::kNone &&
               (e.spec_decoding == config::SpecDecoding::kMtp) == path.ends_with("_mtp.sh");
      });
    });
  };
  return path.find("/agentic/") != std::string::npos ? spec(config.agentic_coding) : spec(config.fixed_seq_len);
}

// The single-node recipes in scope that serve speculative rows (multi-node launches force the AL in
// their server scripts, which this check does not read).
std::vector<SpecRecipe> spec_recipes(const ReviewInput& input) {
  std::vector<SpecRecipe> out;
  for (const auto& recipe : input.scope.recipes) {
    if (!input.head.has(recipe.path) || recipe.path.find("single_node/") == std::string::npos) continue;
    SpecRecipe spec{recipe.path, nullptr, recipe.path.find("/agentic/") != std::string::npos};
    bool serves = recipe.keys.empty() && recipe.path.ends_with("_mtp.sh");
    for (const auto& key : recipe.keys) {
      const auto* scoped = input.scope.find_key(key);
      if (!scoped || !scoped->config || !serves_spec_rows(recipe.path, *scoped->config)) continue;
      serves = true;
      if (!spec.config) spec.config = &*scoped->config;
    }
    if (serves) out.push_back(std::move(spec));
  }
  return out;
}

enum class Runs { kAll, kThroughput, kEval };

Runs opposite(Runs runs) {
  return runs == Runs::kAll ? Runs::kAll : runs == Runs::kEval ? Runs::kThroughput : Runs::kEval;
}

// The runs a test of EVAL_ONLY selects: `[ "$EVAL_ONLY" = "true" ]` eval runs, `!= "true"`
// throughput runs (`false` the other way round); any other test: all.
Runs tested_runs(std::string_view condition) {
  if (condition.find(kEvalOnly) == std::string_view::npos) return Runs::kAll;
  const bool negated = condition.find("!=") != std::string_view::npos;
  const bool is_true = condition.find("true") != std::string_view::npos;
  if (!is_true && condition.find("false") == std::string_view::npos) return Runs::kAll;
  return negated == is_true ? Runs::kThroughput : Runs::kEval;
}

// The delimiter of a heredoc the line opens (`<< EOF`, `<<-'EOF'`), or "".
std::string heredoc_delimiter(std::string_view code) {
  const size_t at = code.find("<<");
  if (at == std::string_view::npos || code.substr(at).starts_with("<<<")) return "";
  std::string_view rest = code.substr(at + 2);
  while (!rest.empty() && (rest.front() == '-' || rest.front() == ' ' || rest.front() == '\'' || rest.front() == '"'))
    rest.remove_prefix(1);
  return std::string(rest.substr(0, rest.find_first_of("'\" ;>")));
}

// The runs each line executes on (index = line number), from the `if` / `elif` / `else` blocks and
// the `[ ... ] &&` / `||` guards that test EVAL_ONLY. Heredoc bodies are text, not code.
std::vector<Runs> runs_by_line(std::string_view text) {
  struct Block {
    Runs current;  // the branch being read
    Runs rest;     // the branches after one that tested EVAL_ONLY
  };
  std::vector<Block> blocks;
  std::vector<Runs> out(1, Runs::kAll);
  std::string heredoc;
  for_each_line(text, [&](int, std::string_view line) {
    const std::string full = code_line(line);
    const std::string_view code = trim(full);
    Runs runs = Runs::kAll;
    for (const auto& block : blocks) runs = block.current == Runs::kAll ? runs : block.current;
    const Runs tested = tested_runs(code);
    if (!heredoc.empty()) {
      if (code == heredoc) heredoc.clear();
      out.push_back(runs);
      return;
    }
    if (code.starts_with("if ") && (code.ends_with("; fi") || code.ends_with(";fi"))) {
      runs = tested == Runs::kAll ? runs : tested;
    } else if (code.starts_with("if ")) {
      blocks.push_back({tested, opposite(tested)});
    } else if (code.starts_with("elif ") && !blocks.empty()) {
      blocks.back().current = tested == Runs::kAll ? blocks.back().rest : tested;
      if (blocks.back().rest == Runs::kAll) blocks.back().rest = opposite(tested);
    } else if ((code == "else" || code.starts_with("else ")) && !blocks.empty()) {
      blocks.back().current = blocks.back().rest;
    } else if ((code == "fi" || code.starts_with("fi ") || code.starts_with("fi;")) && !blocks.empty()) {
      blocks.pop_back();
    } else if (tested != Runs::kAll && code.find("&&") != std::string_view::npos) {
      runs = tested_runs(code.substr(0, code.find("&&")));
    } else if (tested != Runs::kAll && code.find("||") != std::string_view::npos) {
      runs = opposite(tested_runs(code.substr(0, code.find("||"))));
    }
    heredoc = heredoc_delimiter(code);
    out.push_back(runs);
  });
  return out;
}

struct Draft {
  int64_t length = 0;
  int line = 0;
};

struct Drafts {
  std::vector<Draft> lengths;  // the literal draft lengths, one per line
  int told = 0;                // where the engine is told the draft length (0: nowhere)
};

Drafts draft_lengths(std::string_view text) {
  Drafts out;
  for (const auto& name : default_rules().golden_al.draft_length_settings) {
    for (const auto& value : setting_values(text, name)) {
      if (out.told == 0) out.told = value.site;
      const auto length = parse_number(value.value);
      const bool seen =
          std::any_of(out.lengths.begin(), out.lengths.end(), [&](const auto& d) { return d.line == value.line; });
      if (length && *length >= 1 && *length == std::floor(*length) && !seen)
        out.lengths.push_back({static_cast<int64_t>(*length), value.line});
    }
  }
  return out;
}

// The draft length set nearest to `line` (ties: the earlier one).
std::optional<int64_t> nearest(const Drafts& drafts, int line) {
  const Draft* best = nullptr;
  for (const auto& d : drafts.lengths) {
    if (!best || std::abs(d.line - line) < std::abs(best->line - line) ||
        (std::abs(d.line - line) == std::abs(best->line - line) && d.line < best->line))
      best = &d;
  }
  return best ? std::optional<int64_t>(best->length) : std::nullopt;
}

struct Forced {
  const ForcedAlSetting* setting;
  SettingValue value;
};

std::vector<Forced> forced_values(std::string_view text) {
  std::vector<Forced> out;
  for (const auto& setting : default_rules().golden_al.forced_settings) {
    for (auto& value : setting_values(text, setting.name)) out.push_back({&setting, std::move(value)});
  }
  return out;
}

struct Golden {
  std::string path;
  config::GoldenAlFile file;
  std::string model;
};

// `golden_al_distribution/<file>.yaml` as the recipe names it (comment, path or URL): path and line.
std::pair<std::string, int> named_golden_file(std::string_view text) {
  std::pair<std::string, int> named;
  for_each_line(text, [&](int number, std::string_view line) {
    const size_t at = line.find(kGoldenDir);
    if (!named.first.empty() || at == std::string_view::npos) return;
    std::string file(kGoldenDir);
    for (size_t i = at + kGoldenDir.size(); i < line.size(); ++i) {
      const char c = line[i];
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') break;
      file += c;
    }
    if (file.ends_with(".yaml") || file.ends_with(".yml")) named = {file, number};
  });
  return named;
}

std::string model_prefix(const SpecRecipe& recipe) {
  if (recipe.config) return recipe.config->model_prefix;
  const std::string name = recipe.path.substr(recipe.path.rfind('/') + 1);
  return name.substr(0, name.find('_'));
}

// golden_al_distribution/<prefix>.yaml, <prefix>_*.yaml and <prefix>-*.yaml (`glm5` is not `glm5.2`).
std::vector<std::string> prefix_golden_files(const RepoTree& head, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& path : head.files()) {
    if (!path.starts_with(kGoldenDir) || path.find('/', kGoldenDir.size()) != std::string::npos) continue;
    const std::string name = path.substr(kGoldenDir.size());
    const bool of_prefix = name == prefix + ".yaml" || name.starts_with(prefix + "_") || name.starts_with(prefix + "-");
    if (of_prefix && name.ends_with(".yaml")) out.push_back(path);
  }
  return out;
}

// The line of "<path>:<line>:..." at the start of a parser's message, else 1.
int message_line(const std::string& message, const std::string& path) {
  int line = 0;
  if (!message.starts_with(path + ":")) return 1;
  const auto [end, ec] = std::from_chars(message.data() + path.size() + 1, message.data() + message.size(), line);
  return ec == std::errc() && line > 0 ? line : 1;
}

// The config's model as golden files key it: `deepseek-ai/DeepSeek-V4-Pro` -> `deepseek-v4-pro`.
std::string model_key(const config::MasterConfig* config) {
  std::string model = config ? config->model.substr(config->model.rfind('/') + 1) : "";
  std::transform(model.begin(), model.end(), model.begin(), [](unsigned char c) { return std::tolower(c); });
  return model;
}

bool holds(const config::GoldenAlFile& file, const std::string& model) {
  return std::any_of(file.models.begin(), file.models.end(), [&](const auto& m) { return m.name == model; });
}

// The file's model: its only top-level key, else the config's model.
std::string golden_model(const config::GoldenAlFile& file, const config::MasterConfig* config) {
  if (file.models.size() == 1) return file.models.front().name;
  return holds(file, model_key(config)) ? model_key(config) : "";
}

// Of several golden files of a prefix, those that hold the config's model (files that do not
// parse are left out here).
std::vector<std::string> holding_model(const RepoTree& head, const std::vector<std::string>& paths,
                                       const config::MasterConfig* config) {
  std::vector<std::string> out;
  for (const auto& path : paths) {
    auto file = config::parse_golden_al(head.read(path).value_or(""), path);
    if (file && holds(*file, model_key(config))) out.push_back(path);
  }
  return out;
}

// The golden curve the recipe's forced values must match; a finding when there is none.
std::optional<Golden> golden_of(const RepoTree& head, const SpecRecipe& recipe, std::string_view text, Report& report) {
  const auto [named, named_line] = named_golden_file(text);
  const std::string prefix = model_prefix(recipe);
  auto candidates = prefix_golden_files(head, prefix);
  const std::string listed = candidates.empty() ? "none" : fmt::format("{}", fmt::join(candidates, ", "));
  if (named.empty() && candidates.size() > 1) {
    auto holding = holding_model(head, candidates, recipe.config);
    if (holding.size() == 1) candidates = std::move(holding);
  }
  if (!named.empty() && !head.has(named)) {
    report.fail(
        recipe.path, named_line,
        fmt::format("names {}, which the repository does not have (files for prefix {}: {})", named, prefix, listed));
    return std::nullopt;
  }
  if (named.empty() && candidates.size() != 1) {
    report.warn(recipe.path, 1,
                candidates.empty()
                    ? fmt::format("no {} file for model prefix {}: the forced AL cannot be checked", kGoldenDir, prefix)
                    : fmt::format("model prefix {} has several golden files ({}) and the recipe names none: name the "
                                  "one its draft was measured with in a comment",
                                  prefix, listed));
    return std::nullopt;
  }
  Golden golden{named.empty() ? candidates.front() : named, {}, ""};
  auto file = config::parse_golden_al(head.read(golden.path).value_or(""), golden.path);
  if (!file) {
    report.fail(golden.path, message_line(file.error().message(), golden.path),
                fmt::format("the golden AL file {} reads does not parse: {}", recipe.path, file.error().message()));
    return std::nullopt;
  }
  golden.file = std::move(*file);
  golden.model = golden_model(golden.file, recipe.config);
  if (golden.model.empty()) {
    report.warn(recipe.path, 1,
                fmt::format("{} holds {} models and none is the config's model: the forced AL cannot be checked",
                            golden.path, golden.file.models.size()));
    return std::nullopt;
  }
  return golden;
}

// Forcing that also reaches eval runs (they must measure the real acceptance): one finding per line.
void report_eval_forcing(const SpecRecipe& recipe, const std::vector<Forced>& forced, const std::vector<Runs>& runs,
                         Report& report) {
  std::vector<int> reported;
  for (const auto& f : forced) {
    const int site = f.value.site;
    if (runs[site] == Runs::kThroughput || std::find(reported.begin(), reported.end(), site) != reported.end())
      continue;
    reported.push_back(site);
    report.fail(recipe.path, site,
                fmt::format("{} is forced on {}: eval runs must measure the draft's real acceptance; set it only when "
                            "{} != true",
                            f.setting->name,
                            runs[site] == Runs::kEval ? "EVAL_ONLY=true runs" : "eval runs too (no EVAL_ONLY guard)",
                            kEvalOnly));
  }
}

// The golden AL for `draft` draft tokens, or a finding at `line`.
std::optional<double> golden_al(const Golden& golden, int64_t draft, const std::string& recipe, int line,
                                Report& report) {
  auto al = config::find_golden_al(golden.file, golden.model, true, draft);
  if (!al) report.fail(recipe, line, al.error().message());
  return al ? std::optional<double>(*al) : std::nullopt;
}

// Each forced value on throughput runs against the golden AL of the draft length set nearest to it.
void report_wrong_values(const SpecRecipe& recipe, const std::vector<Forced>& forced, const std::vector<Runs>& runs,
                         const Drafts& drafts, const Golden& golden, Report& report) {
  std::vector<int> checked;
  for (const auto& [setting, value] : forced) {
    if (runs[value.site] == Runs::kEval || std::find(checked.begin(), checked.end(), value.line) != checked.end())
      continue;
    checked.push_back(value.line);
    const auto forced_value = parse_number(value.value);
    const auto draft = nearest(drafts, value.line);
    if (!forced_value) {
      report.warn(recipe.path, value.line,
                  fmt::format("{} is forced to no literal the review can read", setting->name));
      continue;
    }
    if (!draft) {
      report.warn(recipe.path, value.line,
                  fmt::format("{} is forced but the recipe sets no draft length ({})", setting->name,
                              fmt::join(default_rules().golden_al.draft_length_settings, ", ")));
      continue;
    }
    const auto al = golden_al(golden, *draft, recipe.path, value.line, report);
    if (!al) continue;
    const double expected = setting->minus_one ? *al - 1.0 : *al;
    if (std::abs(*forced_value - expected) < 1e-6) continue;
    report.fail(recipe.path, value.line,
                fmt::format("{} is {} but the golden AL of {} thinking_on with {} draft tokens is {} ({}){}: set {}",
                            setting->name, value.value, golden.model, *draft, format_number(*al), golden.path,
                            setting->minus_one ? ", and this engine takes AL - 1 (accepted draft tokens only)" : "",
                            format_number(expected)));
  }
}

// The settings that force the AL on the config's engine (all of them when the framework is unknown).
std::vector<const ForcedAlSetting*> engine_settings(const config::MasterConfig* config) {
  std::vector<const ForcedAlSetting*> out, all;
  for (const auto& setting : default_rules().golden_al.forced_settings) {
    all.push_back(&setting);
    for (const auto& framework : setting.frameworks) {
      if (config && (config->framework == framework || config->framework.starts_with(framework + "-")))
        out.push_back(&setting);
    }
  }
  return out.empty() ? all : out;
}

// An agentic recipe whose throughput path forces nothing measures the draft's own acceptance on
// replayed traces: the finding names the AL to force, where the engine is told the draft length.
void report_unforced(const SpecRecipe& recipe, const std::vector<Forced>& forced, const std::vector<Runs>& runs,
                     const Drafts& drafts, const std::optional<Golden>& golden, Report& report) {
  if (std::any_of(forced.begin(), forced.end(), [&](const auto& f) { return runs[f.value.site] != Runs::kEval; }))
    return;
  const int line = drafts.told > 0 ? drafts.told : 1;
  std::optional<double> al;
  if (golden && !drafts.lengths.empty())
    al = golden_al(*golden, drafts.lengths.front().length, recipe.path, line, report);
  std::vector<std::string> how;
  for (const auto* setting : engine_settings(recipe.config)) {
    how.push_back(al ? fmt::format("{} {}", setting->name, format_number(setting->minus_one ? *al - 1.0 : *al))
                     : setting->name);
  }
  report.fail(recipe.path, line,
              al ? fmt::format("the agentic throughput path forces no acceptance length: force the golden AL {} ({} "
                               "thinking_on, {} draft tokens, {}) with {}, when {} != true",
                               format_number(*al), golden->model, drafts.lengths.front().length, golden->path,
                               fmt::join(how, " / "), kEvalOnly)
                 : fmt::format("the agentic throughput path forces no acceptance length: force the golden AL with {}, "
                               "when {} != true",
                               fmt::join(how, " / "), kEvalOnly));
}

void check_recipe(const ReviewInput& input, const SpecRecipe& recipe, Report& report) {
  const std::string text = input.head.read(recipe.path).value_or("");
  const auto runs = runs_by_line(text);
  const auto drafts = draft_lengths(text);
  const auto forced = forced_values(text);
  const auto golden = golden_of(input.head, recipe, text, report);
  report_eval_forcing(recipe, forced, runs, report);
  if (golden) report_wrong_values(recipe, forced, runs, drafts, *golden, report);
  if (recipe.agentic) report_unforced(recipe, forced, runs, drafts, golden, report);
}

}  // namespace

CheckResult check_golden_al(const ReviewInput& input) {
  CheckResult result = start_check("golden-al", "Spec-decoding recipes force the golden acceptance length (SPEC §7)");
  const auto recipes = spec_recipes(input);
  if (recipes.empty()) return not_applicable(std::move(result), "no single-node spec-decoding recipe in scope");
  Report report{result, {}};
  for (const auto& recipe : recipes) check_recipe(input, recipe, report);
  return verdict_of(
      std::move(result), report.tally,
      fmt::format("{} spec-decoding recipe(s) force the golden AL on throughput runs only", recipes.size()),
      "spec-decoding recipes that do not force the golden AL as SPEC §7 says, or cannot be checked",
      "force the golden_al_distribution/ AL for the recipe's model, thinking_on and draft length on "
      "throughput runs only (EVAL_ONLY != true); TensorRT-LLM takes AL - 1");
}

}  // namespace ix::review
