// Checks over perf-changelog.yaml and the master configs: the gate, and changelog coverage of
// every added or edited config key.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "changelog/check.h"
#include "changelog/plan.h"
#include "changelog/plan_scope.h"
#include "review/review.h"
#include "review/text.h"

namespace ix::review {
namespace {

changelog::Source source_of(const RepoTree& tree, const std::string& path) {
  const auto& text = tree.read(path);
  return {tree.label() + ":" + path, text.value_or("")};
}

// Top-level keys of a master config file (lines `key:` at column 1), without parsing it.
std::vector<std::string> top_level_keys(const std::string& text) {
  std::vector<std::string> keys;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + begin, end - begin);
    const size_t colon = line.find(':');
    if (!line.empty() && line[0] != ' ' && line[0] != '#' && line[0] != '-' && colon != std::string_view::npos)
      keys.emplace_back(line.substr(0, colon));
    begin = end + 1;
  }
  return keys;
}

// New entries' config-keys that name no config of the head (a typo plans nothing); returns how many.
size_t report_unmatched_patterns(const RepoTree& head, const ReviewOptions& options,
                                 const std::vector<changelog::Entry>& entries, CheckResult& result) {
  if (entries.empty()) return 0;
  std::vector<std::string> keys;
  for (const auto& path : options.config_files) {
    if (const auto& text = head.read(path)) {
      auto file_keys = top_level_keys(*text);
      keys.insert(keys.end(), file_keys.begin(), file_keys.end());
    }
  }
  const std::string changelog_text = head.read(options.changelog_path).value_or("");
  size_t count = 0;
  for (const auto& entry : entries) {
    for (const auto& pattern : entry.config_keys) {
      if (std::any_of(keys.begin(), keys.end(),
                      [&](const auto& key) { return changelog::config_key_matches(pattern, key); }))
        continue;
      ++count;
      result.evidence.push_back(
          {options.changelog_path, std::max(line_holding(changelog_text, pattern, entry.line), entry.line),
           fmt::format("config key '{}' names no config in {}", pattern, fmt::join(options.config_files, ", "))});
    }
  }
  return count;
}

}  // namespace

CheckResult check_changelog_gate(const ReviewInput& input) {
  const auto& [base, head, scope, options, submission] = input;
  CheckResult result = start_check("changelog-gate", "perf-changelog.yaml stays append-only (SPEC §3)");
  if (!head.has(options.changelog_path))
    return not_applicable(std::move(result), options.changelog_path + " is not in the head");
  if (!scope.is_changed(options.changelog_path))
    return not_applicable(std::move(result), options.changelog_path + " is unchanged");
  changelog::CheckOptions gate;
  gate.pr_number = options.pr_number;
  const auto report =
      changelog::check_change(source_of(base, options.changelog_path), source_of(head, options.changelog_path), gate);
  for (const auto& finding : report.findings) {
    result.evidence.push_back(
        {options.changelog_path, finding.line, fmt::format("{}: {}", finding.rule, finding.message)});
    if (result.fix.empty()) result.fix = finding.fix;
  }
  if (result.evidence.empty()) {
    result.summary = fmt::format("{} entr{} appended, {} pr-link correction(s)", report.appended,
                                 report.appended == 1 ? "y" : "ies", report.corrections);
    return result;
  }
  result.verdict = Verdict::kFail;
  result.summary = fmt::format("the gate fails ({} problem(s))", report.findings.size());
  return result;
}

CheckResult check_changelog_coverage(const ReviewInput& input) {
  const auto& [base, head, scope, options, submission] = input;
  CheckResult result = start_check("changelog-coverage", "Every added or edited config key has a changelog entry");
  const size_t unmatched = report_unmatched_patterns(head, options, scope.new_entries, result);
  if (scope.keys.empty() && unmatched == 0)
    return not_applicable(std::move(result), "no config key or recipe added or edited");
  for (const auto& key : scope.keys) {
    const bool covered = std::any_of(scope.new_entries.begin(), scope.new_entries.end(), [&](const auto& entry) {
      return std::any_of(entry.config_keys.begin(), entry.config_keys.end(),
                         [&](const std::string& pattern) { return changelog::config_key_matches(pattern, key.key); });
    });
    if (covered) continue;
    if (key.config_changed) {
      result.evidence.push_back({key.file, key.line,
                                 fmt::format("config '{}' is {} but no new changelog entry names it", key.key,
                                             key.added ? "added" : "edited")});
      continue;
    }
    for (const auto& recipe : key.recipes) {
      if (!scope.is_changed(recipe)) continue;
      result.evidence.push_back(
          {recipe, first_changed_line(base.read(recipe).value_or(""), head.read(recipe).value_or("")),
           fmt::format("the recipe of config '{}' is edited but no new changelog entry names '{}'", key.key, key.key)});
    }
  }
  if (result.evidence.empty()) {
    result.summary = fmt::format("{} config key(s) changed (config or recipe), each named by a new changelog entry",
                                 scope.keys.size());
    return result;
  }
  result.verdict = Verdict::kFail;
  result.summary = fmt::format("{} changed config key(s) without a changelog entry, {} entry key(s) naming no config",
                               result.evidence.size() - unmatched, unmatched);
  result.fix =
      "name each changed config (or recipe's config) in a new entry's config-keys, and only configs that exist";
  return result;
}

}  // namespace ix::review
