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

namespace ix::review {
namespace {

changelog::Source source_of(const RepoTree& tree, const std::string& path) {
  const auto& text = tree.read(path);
  return {tree.label() + ":" + path, text.value_or("")};
}

// Each config key's YAML in one revision, from the master config files in `paths`.
std::vector<std::pair<std::string, config::YamlNode>> configs_of(const RepoTree& tree,
                                                                 const std::vector<std::string>& paths,
                                                                 std::map<std::string, std::string>& file_of) {
  std::vector<std::pair<std::string, config::YamlNode>> out;
  for (const auto& path : paths) {
    const auto& text = tree.read(path);
    if (!text) continue;
    auto trees = changelog::config_trees({path, *text});
    if (!trees) continue;  // invalid YAML is `validate`'s finding
    for (auto& [key, node] : *trees) {
      file_of[key] = path;
      out.emplace_back(key, std::move(node));
    }
  }
  return out;
}

const config::YamlNode* find_config(const std::vector<std::pair<std::string, config::YamlNode>>& configs,
                                    const std::string& key) {
  for (const auto& [k, node] : configs) {
    if (k == key) return &node;
  }
  return nullptr;
}

// The 1-based line where `key:` starts a line of the file (a top-level config key), or 0.
int key_line(const RepoTree& tree, const std::string& path, const std::string& key) {
  const auto& text = tree.read(path);
  if (!text) return 0;
  int line = 1;
  for (size_t begin = 0; begin < text->size(); ++line) {
    if (std::string_view(*text).substr(begin).starts_with(key + ":")) return line;
    const size_t end = text->find('\n', begin);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return 0;
}

bool same_entry(const changelog::Entry& a, const changelog::Entry& b) {
  return a.config_keys == b.config_keys && a.description == b.description && a.scenario_type == b.scenario_type;
}

// The head's entries that the base does not have (by keys, scenarios and description), wherever
// they are in the file: an entry inserted mid-file still names its configs (the gate reports
// where it is).
std::vector<changelog::Entry> new_entries(const RepoTree& base, const RepoTree& head, const std::string& path) {
  std::vector<changelog::Entry> before, after;
  if (base.has(path)) changelog::check_file(source_of(base, path), &before, changelog::FileEnd::kNewline);
  if (head.has(path)) changelog::check_file(source_of(head, path), &after, changelog::FileEnd::kNewline);
  std::vector<changelog::Entry> out;
  for (const auto& entry : after) {
    auto old = std::find_if(before.begin(), before.end(), [&](const auto& b) { return same_entry(b, entry); });
    if (old == before.end()) {
      out.push_back(entry);
    } else {
      before.erase(old);
    }
  }
  return out;
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

// The first line at or after `from` (1-based) that holds `text`, or `from`.
int line_holding(const std::string& file_text, int from, const std::string& text) {
  int line = 1;
  size_t begin = 0;
  while (begin < file_text.size()) {
    size_t end = file_text.find('\n', begin);
    if (end == std::string::npos) end = file_text.size();
    if (line >= from && std::string_view(file_text).substr(begin, end - begin).find(text) != std::string_view::npos)
      return line;
    begin = end + 1;
    ++line;
  }
  return from;
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
          {options.changelog_path, line_holding(changelog_text, entry.line, pattern),
           fmt::format("config key '{}' names no config in {}", pattern, fmt::join(options.config_files, ", "))});
    }
  }
  return count;
}

}  // namespace

CheckResult check_changelog_gate(const RepoTree& base, const RepoTree& head, const ReviewOptions& options) {
  CheckResult result = start_check("changelog-gate", "perf-changelog.yaml stays append-only (SPEC §3)");
  if (!head.has(options.changelog_path))
    return not_applicable(std::move(result), options.changelog_path + " is not in the head");
  if (base.read(options.changelog_path) == head.read(options.changelog_path))
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

CheckResult check_changelog_coverage(const RepoTree& base, const RepoTree& head, const ReviewOptions& options) {
  CheckResult result = start_check("changelog-coverage", "Every added or edited config key has a changelog entry");
  // Only files whose bytes differ can hold a changed config (and parsing is the cost).
  std::vector<std::string> differing;
  for (const auto& path : options.config_files) {
    if (base.read(path) != head.read(path)) differing.push_back(path);
  }
  std::map<std::string, std::string> base_files, head_files;
  const auto before = configs_of(base, differing, base_files);
  const auto after = configs_of(head, differing, head_files);
  std::vector<std::string> touched;
  for (const auto& [key, node] : after) {
    const auto* old = find_config(before, key);
    if (!old || !changelog::same_value(*old, node)) touched.push_back(key);
  }
  const auto appended = new_entries(base, head, options.changelog_path);
  const size_t unmatched = report_unmatched_patterns(head, options, appended, result);
  if (touched.empty() && unmatched == 0) return not_applicable(std::move(result), "no config key added or edited");

  for (const auto& key : touched) {
    const bool covered = std::any_of(appended.begin(), appended.end(), [&](const changelog::Entry& entry) {
      return std::any_of(entry.config_keys.begin(), entry.config_keys.end(),
                         [&](const std::string& pattern) { return changelog::config_key_matches(pattern, key); });
    });
    if (covered) continue;
    result.evidence.push_back({head_files[key], key_line(head, head_files[key], key),
                               fmt::format("config '{}' is {} but no new changelog entry names it", key,
                                           find_config(before, key) ? "edited" : "added")});
  }
  if (result.evidence.empty()) {
    result.summary = fmt::format("{} config key(s) changed, each named by a new changelog entry", touched.size());
    return result;
  }
  result.verdict = Verdict::kFail;
  result.summary = fmt::format("{} changed config key(s) without a changelog entry, {} entry key(s) naming no config",
                               result.evidence.size() - unmatched, unmatched);
  result.fix = "name each changed config in a new entry's config-keys, and only configs that exist";
  return result;
}

}  // namespace ix::review
