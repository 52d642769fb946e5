// Checks over the shell recipes a change touches: dead knobs, engine patches, precision-lowering
// environment overrides.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "review/review.h"
#include "review/rules.h"
#include "review/shell_scan.h"

namespace ix::review {
namespace {

std::vector<std::string> changed_recipes(const RepoTree& head, const std::vector<std::string>& changed) {
  std::vector<std::string> out;
  for (const auto& path : changed) {
    if (is_shell_recipe(path) && head.has(path)) out.push_back(path);
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

// The sourced file a `source` argument names: the repository file with that file name, nearest to
// the recipe (same folder first, then any).
std::string resolve_source(const RepoTree& head, const std::string& recipe, const std::string& written) {
  const size_t slash = written.find_last_of('/');
  const std::string name = slash == std::string::npos ? written : written.substr(slash + 1);
  if (name.empty() || name.find('$') != std::string::npos) return "";
  const std::string folder = recipe.substr(0, recipe.find_last_of('/') + 1);
  if (head.has(folder + name)) return folder + name;
  for (const auto& path : head.files()) {
    if (path == name || path.ends_with("/" + name)) return path;
  }
  return "";
}

// Variables the recipe and the scripts it sources (transitively) read.
std::vector<std::string> reads_reachable(const RepoTree& head, const std::string& recipe) {
  std::vector<std::string> reads;
  std::set<std::string> seen;
  std::vector<std::string> queue = {recipe};
  while (!queue.empty()) {
    const std::string path = queue.back();
    queue.pop_back();
    if (!seen.insert(path).second) continue;
    const auto& text = head.read(path);
    if (!text) continue;
    const auto scan = scan_shell(*text);
    for (const auto& name : scan.reads) {
      if (std::find(reads.begin(), reads.end(), name) == reads.end()) reads.push_back(name);
    }
    for (const auto& source : scan.sources) {
      const std::string resolved = resolve_source(head, path, source);
      if (!resolved.empty()) queue.push_back(resolved);
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

std::string trim_text(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return std::string(text.substr(0, 160));
}

std::string code_line(std::string_view line) {
  const size_t hash = line.find('#');
  if (hash != std::string_view::npos && (hash == 0 || line[hash - 1] == ' ' || line[hash - 1] == '\t'))
    line = line.substr(0, hash);
  return std::string(line);
}

template <typename OnLine>
void for_each_line(const std::string& text, OnLine on_line) {
  int number = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    on_line(++number, std::string_view(text).substr(begin, end - begin));
    begin = end + 1;
  }
}

CheckResult verdict_of(CheckResult result, std::string_view pass_summary, std::string_view fail_summary,
                       std::string fix) {
  if (result.evidence.empty()) {
    result.verdict = Verdict::kPass;
    result.summary = std::string(pass_summary);
  } else {
    result.verdict = Verdict::kFail;
    result.summary = fmt::format("{} ({})", fail_summary, result.evidence.size());
    result.fix = std::move(fix);
  }
  return result;
}

}  // namespace

CheckResult check_dead_knobs(const RepoTree& head, const std::vector<std::string>& changed) {
  CheckResult result = start_check("dead-knob", "Exported recipe variables are read");
  const auto recipes = changed_recipes(head, changed);
  if (recipes.empty()) return not_applicable(std::move(result), "no shell recipe changed");
  // Exports not read by their own recipe nor left to the engine; then one repository search.
  std::vector<std::pair<std::string, ShellAssignment>> candidates;
  std::vector<std::string> names;
  for (const auto& recipe : recipes) {
    const auto scan = scan_shell(*head.read(recipe));
    for (const auto& assignment : scan.assignments) {
      if (!assignment.exported || engine_reads(assignment.name)) continue;
      if (std::find(scan.reads.begin(), scan.reads.end(), assignment.name) != scan.reads.end()) continue;
      if (std::any_of(candidates.begin(), candidates.end(),
                      [&](const auto& c) { return c.first == recipe && c.second.name == assignment.name; }))
        continue;
      candidates.emplace_back(recipe, assignment);
      if (std::find(names.begin(), names.end(), assignment.name) == names.end()) names.push_back(assignment.name);
    }
  }
  const auto read = read_in_repository(head, names);
  for (const auto& [recipe, assignment] : candidates) {
    if (read.contains(assignment.name)) continue;
    const std::string suggestion = closest_read(assignment.name, reads_reachable(head, recipe));
    result.evidence.push_back(
        {recipe, assignment.line,
         fmt::format(
             "{} is exported but nothing in the repository reads it{}", assignment.name,
             suggestion.empty() ? "" : fmt::format("; did you mean {} (read by this recipe's scripts)?", suggestion))});
  }
  return verdict_of(std::move(result), "every exported recipe variable is read by the repository or the engine",
                    "exported variables that nothing reads",
                    "export the variable the scripts read (or delete the dead line)");
}

CheckResult check_engine_patches(const RepoTree& head, const std::vector<std::string>& changed) {
  CheckResult result = start_check("engine-patch", "Recipes run the image's engine unpatched");
  const auto recipes = changed_recipes(head, changed);
  std::vector<std::string> patch_files;
  for (const auto& path : changed) {
    if (path.ends_with(".patch") || path.ends_with(".diff")) patch_files.push_back(path);
  }
  if (recipes.empty() && patch_files.empty())
    return not_applicable(std::move(result), "no shell recipe or patch file changed");
  for (const auto& path : patch_files) {
    if (head.has(path))
      result.evidence.push_back({path, 1, "the change adds a patch file, " + path.substr(path.rfind('/') + 1)});
  }
  for (const auto& recipe : recipes) {
    for_each_line(*head.read(recipe), [&](int number, std::string_view line) {
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
  return verdict_of(std::move(result), "no recipe patches or reinstalls the engine", "engine patches in recipes",
                    "land the change upstream and pin an image that has it; recipes run the image as shipped");
}

CheckResult check_precision_overrides(const RepoTree& head, const std::vector<std::string>& changed) {
  CheckResult result = start_check("precision-override", "No precision-lowering environment overrides");
  const auto recipes = changed_recipes(head, changed);
  if (recipes.empty()) return not_applicable(std::move(result), "no shell recipe changed");
  for (const auto& recipe : recipes) {
    for (const auto& assignment : scan_shell(*head.read(recipe)).assignments) {
      for (const auto& rule : default_rules().precision_lowering_env) {
        if (assignment.name == rule.name)
          result.evidence.push_back({recipe, assignment.line, fmt::format("{}: {}", rule.name, rule.why)});
      }
    }
  }
  return verdict_of(std::move(result), "no recipe sets a precision-lowering override",
                    "precision-lowering environment overrides",
                    "serve the model and its draft at their stored precision: drop the override");
}

}  // namespace ix::review
