// The perf-changelog.yaml gate (SPEC §3): both files' own rules (one final newline; no CR, tab or
// NUL; UTF-8; valid YAML without duplicate keys; a root list whose every entry starts with a
// `- config-keys:` line and has the entry's fields), then the change from base to head
// (append-only bytes, one blank line between entries, pr-links of new entries, pr-link-only
// corrections of history). Every problem is a Finding with file:line:column and a fix.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ix::changelog {

// One changelog entry, as typed fields (the keys InferenceX's ChangelogEntry allows).
struct Entry {
  std::vector<std::string> config_keys;
  std::vector<std::string> scenario_type;
  std::vector<std::string> description;
  std::vector<int> description_lines;  // 1-based line of each description item
  std::string pr_link;
  bool evals_only = false;
  bool all_evals = false;
  bool append_only = false;
  std::optional<int64_t> eval_min_prefill_ep;
  int line = 0;  // 1-based line of the entry's `- config-keys:`
  int pr_link_line = 0;
  int pr_link_column = 0;
};

struct Finding {
  std::string rule;  // "final-newline", "append-only", "pr-link", ... (docs/changelog.md lists them)
  std::string severity = "error";
  std::string file;  // the label of the file it is in
  int line = 0;      // 1-based; 0 when the finding is about the file as a whole
  int column = 0;    // 1-based, in bytes
  std::string message;
  std::string fix;
};

struct CheckOptions {
  // The pull request the change belongs to; absent: the change is on main.
  std::optional<int64_t> pr_number;
  // "https://github.com/<org>/<repo>": pr-links must name this repository; empty: any
  // https://github.com/<org>/<repo>.
  std::string repo_url;
};

struct CheckReport {
  std::vector<Finding> findings;
  int base_entries = 0;
  int head_entries = 0;
  int appended = 0;
  int corrections = 0;                  // historical pr-link lines changed to a canonical link
  std::vector<Entry> appended_entries;  // head's entries after base's, in file order
  bool ok() const { return findings.empty(); }
};

// A changelog file's bytes and the name findings use for it (a path, or "<ref>:<path>").
struct Source {
  std::string label;
  std::string bytes;
};

CheckReport check_change(const Source& base, const Source& head, const CheckOptions& options);

// How a file may end: every file ends in "\n"; the file a change writes (head, when it differs
// from base) in exactly one. A base that ends in "\n\n" is history (InferenceX's checker takes it,
// and then wants the appended text to start with "- config-keys:").
enum class FileEnd { kNewline, kExactlyOneNewline };

// One file's own rules only; `entries` receives its entries when it passes.
std::vector<Finding> check_file(const Source& file, std::vector<Entry>* entries,
                                FileEnd end = FileEnd::kExactlyOneNewline);

// "file:line:col: rule: message" and "  fix: ..." per finding, then a summary line
// ("ok: N entries (K appended)" or "failed: N problem(s) ...").
std::string format_text(const CheckReport& report);
// {"ok", "base_entries", "head_entries", "appended", "corrections", "findings": [{rule, severity,
// file, line, column, message, fix}]}
std::string format_json(const CheckReport& report);

}  // namespace ix::changelog
