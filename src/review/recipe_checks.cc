// Checks over the shell recipes a change touches: dead knobs, engine patches, precision-lowering
// environment overrides.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "review/review.h"
#include "review/rules.h"
#include "review/shell_scan.h"
#include "review/text.h"

namespace ix::review {
namespace {

// The recipes in scope that exist in head: changed ones, and those of changed config keys.
std::vector<std::string> scoped_recipes(const ReviewInput& input) {
  std::vector<std::string> out;
  for (const auto& recipe : input.scope.recipes) {
    if (input.head.has(recipe.path)) out.push_back(recipe.path);
  }
  return out;
}

std::vector<std::string> name_words(std::string_view name) {
  std::vector<std::string> words;
  size_t begin = 0;
  while (begin <= name.size()) {
    size_t end = name.find('_', begin);
    if (end == std::string_view::npos) end = name.size();
    if (end - begin >= 3) words.emplace_back(name.substr(begin, end - begin));
    begin = end + 1;
  }
  return words;
}

// Variables the recipe and the scripts it sources (transitively) read.
std::vector<std::string> reads_reachable(const RepoTree& head, const std::string& recipe) {
  std::vector<std::string> reads;
  for (const auto& path : sourced_scripts(head, recipe)) {
    for (const auto& name : scan_shell(*head.read(path)).reads) {
      if (std::find(reads.begin(), reads.end(), name) == reads.end()) reads.push_back(name);
    }
  }
  return reads;
}

// The read variable sharing the most name words with `name` (ties: the first read), or "".
std::string closest_read(const std::string& name, const std::vector<std::string>& reads) {
  const auto words = name_words(name);
  std::string best;
  size_t best_shared = 0;
  for (const auto& read : reads) {
    if (read == name) continue;
    size_t shared = 0;
    for (const auto& word : name_words(read)) shared += std::count(words.begin(), words.end(), word);
    if (shared > best_shared) {
      best_shared = shared;
      best = read;
    }
  }
  return best_shared >= 1 ? best : "";
}

bool engine_reads(const std::string& name) {
  const auto& prefixes = default_rules().engine_env_prefixes;
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const auto& p) { return name.starts_with(p); });
}

// The names of `candidates` the repository reads. A shell line reads a name when it expands it
// (`$NAME`, `${NAME...}`); an assignment or export elsewhere is not a read. Any other file
// (Python reading the environment, YAML handing it on) that names it counts as a read.
std::set<std::string> read_in_repository(const RepoTree& head, const std::vector<std::string>& candidates) {
  std::set<std::string> read;
  for (const auto& hit : head.grep_words(candidates)) {
    const auto reads = is_shell_recipe(hit.path) ? scan_shell(hit.text).reads : std::vector<std::string>{};
    for (const auto& name : candidates) {
      if (!is_shell_recipe(hit.path) ? hit.text.find(name) != std::string::npos
                                     : std::find(reads.begin(), reads.end(), name) != reads.end())
        read.insert(name);
    }
  }
  return read;
}

// Levenshtein distance of two names, capped: a typo is one or two edits away.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A read name one or two edits from `name` (the assignment is then a typo of it), or "".
std::string typo_of(const std::string& name, const std::vector<std::string>& reads) {
  for (const auto& read : reads) {
    if (read != name && edit_distance(read, name) <= (name.size() >= 8 ? 2u : 1u)) return read;
  }
  return "";
}

// Whether a recipe serves a draft model: one of its configs' rows decodes speculatively, or it is
// an `_mtp` recipe.
bool serves_draft(const ReviewInput& input, const std::string& recipe, const std::vector<std::string>& keys) {
  if (recipe.ends_with("_mtp.sh")) return true;
  for (const auto& key : keys) {
    const auto* scoped = input.scope.find_key(key);
    if (scoped && scoped->config && has_draft(*scoped->config)) return true;
  }
  return false;
}

const std::vector<std::string>& keys_of(const ReviewInput& input, const std::string& recipe) {
  static const std::vector<std::string> kNone;
  for (const auto& r : input.scope.recipes) {
    if (r.path == recipe) return r.keys;
  }
  return kNone;
}

// The top-level entries of a models*.yaml file that the change adds or edits: name -> [first, last] line.
std::vector<std::pair<std::string, std::pair<int, int>>> changed_model_entries(const std::string& before,
                                                                               const std::string& after) {
  auto blocks = [](const std::string& text) {
    std::vector<std::tuple<std::string, int, int, std::string>> out;  // name, first, last, body
    for_each_line(text, [&](int number, std::string_view line) {
      const bool top = !line.empty() && line[0] != ' ' && line[0] != '#' && line.find(':') != std::string_view::npos;
      if (top) out.emplace_back(std::string(line.substr(0, line.find(':'))), number, number, "");
      // Blank and comment lines belong to no entry (a comment above the next entry is not an edit).
      const std::string code = code_line(line);
      if (out.empty() || trim(code).empty()) return;
      std::get<2>(out.back()) = number;
      std::get<3>(out.back()) += code + "\n";
    });
    return out;
  };
  const auto old_blocks = blocks(before);
  std::vector<std::pair<std::string, std::pair<int, int>>> out;
  for (const auto& [name, first, last, body] : blocks(after)) {
    const bool same = std::any_of(old_blocks.begin(), old_blocks.end(),
                                  [&](const auto& b) { return std::get<0>(b) == name && std::get<3>(b) == body; });
    if (!same) out.push_back({name, {first, last}});
  }
  return out;
}

bool is_models_yaml(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  return name.starts_with("models") && (name.ends_with(".yaml") || name.ends_with(".yml"));
}

// Whether any config in scope that a models_<engine>.yaml serves has a draft (all scoped configs
// when none of them runs that engine).
bool models_file_serves_draft(const ReviewInput& input, const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  const std::string engine = name.starts_with("models_") ? name.substr(7, name.find('.') - 7) : "";
  bool any_of_engine = false, draft = false, draft_any = false;
  for (const auto& key : input.scope.keys) {
    if (!key.config) continue;
    const bool drafts = has_draft(*key.config);
    draft_any = draft_any || drafts;
    if (!engine.empty() && key.config->framework.starts_with(engine)) {
      any_of_engine = true;
      draft = draft || drafts;
    }
  }
  return any_of_engine ? draft : draft_any;
}

struct Candidate {
  std::string recipe;
  ShellAssignment assignment;
};

// Assignments of in-scope recipes their own recipe does not read and the engine does not own.
std::vector<Candidate> unread_assignments(const ReviewInput& input, const std::vector<std::string>& recipes) {
  std::vector<Candidate> out;
  for (const auto& recipe : recipes) {
    const auto scan = scan_shell(*input.head.read(recipe));
    for (const auto& assignment : scan.assignments) {
      if (engine_reads(assignment.name)) continue;
      if (std::find(scan.reads.begin(), scan.reads.end(), assignment.name) != scan.reads.end()) continue;
      auto same = std::find_if(out.begin(), out.end(), [&](const Candidate& c) {
        return c.recipe == recipe && c.assignment.name == assignment.name;
      });
      if (same == out.end()) {
        out.push_back({recipe, assignment});
      } else if (assignment.exported && !same->assignment.exported) {
        same->assignment = assignment;  // the export is the knob
      }
    }
  }
  return out;
}

}  // namespace

CheckResult check_dead_knobs(const ReviewInput& input) {
  CheckResult result = start_check("dead-knob", "Recipe variables are read");
  const auto recipes = scoped_recipes(input);
  if (recipes.empty()) return not_applicable(std::move(result), "no shell recipe in scope");
  const auto candidates = unread_assignments(input, recipes);
  std::vector<std::string> names;
  for (const auto& c : candidates) {
    if (std::find(names.begin(), names.end(), c.assignment.name) == names.end()) names.push_back(c.assignment.name);
  }
  const auto read = read_in_repository(input.head, names);
  Tally tally;
  for (const auto& [recipe, assignment] : candidates) {
    if (read.contains(assignment.name)) continue;
    const auto reads = reads_reachable(input.head, recipe);
    if (assignment.exported) {
      tally.fail = true;
      const std::string suggestion = closest_read(assignment.name, reads);
      result.evidence.push_back(
          {recipe, assignment.line,
           fmt::format("{} is exported but nothing in the repository reads it{}", assignment.name,
                       suggestion.empty()
                           ? ""
                           : fmt::format("; did you mean {} (read by this recipe's scripts)?", suggestion))});
      continue;
    }
    const std::string typo = typo_of(assignment.name, reads);
    if (!typo.empty()) {
      tally.fail = true;
      result.evidence.push_back(
          {recipe, assignment.line,
           fmt::format(
               "{} is assigned but never read, and {} (read by this recipe's scripts) stays unset: a typo of {}?",
               assignment.name, typo, typo)});
    } else {
      tally.warn = true;
      result.evidence.push_back({recipe, assignment.line,
                                 fmt::format("{} is assigned but nothing reads it (a dead setting)", assignment.name)});
    }
  }
  return verdict_of(std::move(result), tally, "every recipe variable is read by the repository or the engine",
                    "recipe variables that nothing reads",
                    "set the variable the scripts read (or delete the dead line)");
}

CheckResult check_engine_patches(const ReviewInput& input) {
  CheckResult result = start_check("engine-patch", "Recipes run the image's engine unpatched");
  const auto recipes = scoped_recipes(input);
  std::vector<std::string> patch_files;
  bool benchmarks_changed = false;
  for (const auto& path : input.scope.changed) {
    if (path.ends_with(".patch") || path.ends_with(".diff")) patch_files.push_back(path);
    benchmarks_changed = benchmarks_changed || path.starts_with("benchmarks/");
  }
  if (recipes.empty() && patch_files.empty() && !benchmarks_changed)
    return not_applicable(std::move(result), "no recipe, patch file or benchmark script changed");
  for (const auto& path : patch_files) {
    if (input.head.has(path))
      result.evidence.push_back({path, 1, "the change adds a patch file, " + path.substr(path.rfind('/') + 1)});
  }
  for (const auto& recipe : recipes) {
    for_each_line(*input.head.read(recipe), [&](int number, std::string_view line) {
      const std::string code = code_line(line);
      for (const auto& rule : default_rules().engine_patch_patterns) {
        if (code.find(rule.name) == std::string::npos) continue;
        const bool writes =
            rule.only_with.empty() || std::any_of(rule.only_with.begin(), rule.only_with.end(),
                                                  [&](const auto& w) { return code.find(w) != std::string::npos; });
        if (!writes) continue;
        result.evidence.push_back({recipe, number, fmt::format("'{}': {}: {}", rule.name, rule.why, trim_text(code))});
        break;
      }
    });
  }
  // A maintainer's written waiver for this PR keeps the finding visible but not blocking.
  const std::string waiver =
      input.options.pr_number ? fmt::format("docs/waiver/{}.md", *input.options.pr_number) : std::string();
  const bool waived = !waiver.empty() && input.head.has(waiver);
  if (waived) {
    for (auto& e : result.evidence) e.message += fmt::format(" (waived by {})", waiver);
  }
  return verdict_of(std::move(result), {.fail = !waived, .warn = waived}, "no recipe patches or reinstalls the engine",
                    waived ? "engine patches in recipes, waived by " + waiver : "engine patches in recipes",
                    waived ? "the waiver lets this merge; still land the change upstream and pin an image that has it"
                           : "land the change upstream and pin an image that has it; recipes run the image as shipped");
}

CheckResult check_precision_overrides(const ReviewInput& input) {
  CheckResult result = start_check("precision-override", "No precision-lowering overrides reach a draft model");
  const auto recipes = scoped_recipes(input);
  std::vector<std::string> models_files;
  for (const auto& path : input.scope.changed) {
    if (is_models_yaml(path) && input.head.has(path)) models_files.push_back(path);
  }
  if (recipes.empty() && models_files.empty())
    return not_applicable(std::move(result), "no shell recipe or models file in scope");
  const auto& denylist = default_rules().precision_lowering_env;
  size_t allowed = 0;
  for (const auto& recipe : recipes) {
    const bool draft = serves_draft(input, recipe, keys_of(input, recipe));
    for (const auto& assignment : scan_shell(*input.head.read(recipe)).assignments) {
      for (const auto& rule : denylist) {
        if (assignment.name != rule.name) continue;
        if (!draft) {
          ++allowed;
          continue;
        }
        result.evidence.push_back(
            {recipe, assignment.line, fmt::format("{} reaches the draft model: {}", rule.name, rule.why)});
      }
    }
  }
  for (const auto& path : models_files) {
    const std::string& text = *input.head.read(path);
    const bool draft = models_file_serves_draft(input, path);
    for (const auto& [entry, lines] : changed_model_entries(input.base.read(path).value_or(""), text)) {
      for_each_line(text, [&](int number, std::string_view line) {
        if (number < lines.first || number > lines.second) return;
        for (const auto& rule : denylist) {
          if (code_line(line).find(rule.name + "=") == std::string::npos) continue;
          if (!draft) {
            ++allowed;
            continue;
          }
          result.evidence.push_back({path, number,
                                     fmt::format("{} in the env of models entry '{}' reaches the draft model: {}",
                                                 rule.name, entry, rule.why)});
        }
      });
    }
  }
  const std::string pass = allowed == 0 ? "no precision-lowering override in scope"
                                        : fmt::format(
                                              "{} precision-lowering override(s), none reaches a draft model "
                                              "(lower target precision is allowed)",
                                              allowed);
  return verdict_of(std::move(result), {.fail = true}, pass, "precision-lowering overrides reaching a draft model",
                    "serve the draft at its stored precision: drop the override for spec-decoding configs");
}

}  // namespace ix::review
