// The change from base to head (SPEC §3, the additions, pr-link and history bullets): head is
// base's exact bytes plus new entries at the tail, or base with `  pr-link:` lines corrected to
// canonical links (nothing else, and never both).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "changelog/check.h"
#include "changelog/lines.h"
#include "changelog/pr_link.h"

namespace ix::changelog {
namespace {

constexpr std::string_view kEntryStart = "- config-keys:";
constexpr std::string_view kPrLinkLine = "  pr-link:";

std::string plural(size_t count, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

std::string joined_keys(const Entry& entry) {
  std::string keys;
  for (const auto& key : entry.config_keys) keys += (keys.empty() ? "" : ", ") + key;
  return keys;
}

// An entry's text: from its `- config-keys:` line to the next entry, blank lines at its end cut.
std::vector<std::string_view> entry_spans(std::string_view bytes, const Lines& lines,
                                          const std::vector<Entry>& entries) {
  std::vector<std::string_view> spans;
  for (size_t index = 0; index < entries.size(); ++index) {
    const size_t begin = lines.offset(entries[index].line);
    const size_t end = index + 1 < entries.size() ? lines.offset(entries[index + 1].line) : bytes.size();
    std::string_view span = bytes.substr(begin, end - begin);
    while (span.ends_with('\n')) span.remove_suffix(1);
    spans.push_back(span);
  }
  return spans;
}

// Lines 1..base.count() compared: the first that differs and is not a pr-link line on both sides
// (0 if none), and the pr-link lines that differ.
struct HistoryDiff {
  int first_other = 0;
  std::vector<int> pr_link_lines;
};

HistoryDiff diff_history(const Lines& base, const Lines& head) {
  HistoryDiff diff;
  for (int line = 1; line <= base.count(); ++line) {
    const auto old_line = base.raw_line(line);
    const auto new_line = head.raw_line(line);
    if (old_line == new_line) continue;
    const bool pr_links = old_line.starts_with(kPrLinkLine) && new_line.starts_with(kPrLinkLine) &&
                          old_line.ends_with('\n') && new_line.ends_with('\n');
    if (!pr_links) {
      diff.first_other = line;
      return diff;
    }
    diff.pr_link_lines.push_back(line);
  }
  return diff;
}

class ChangeCheck {
 public:
  ChangeCheck(const Source& base, const Source& head, const std::vector<Entry>& base_entries,
              const std::vector<Entry>& head_entries, const CheckOptions& options, CheckReport& report)
      : base_(base),
        head_(head),
        base_lines_(base.bytes),
        head_lines_(head.bytes),
        base_entries_(base_entries),
        head_entries_(head_entries),
        options_(options),
        report_(report) {}

  void run() {
    if (head_.bytes == base_.bytes) return;
    if (head_entries_.size() < base_entries_.size()) return deleted();
    if (head_.bytes.starts_with(base_.bytes)) return appended();
    const auto diff = diff_history(base_lines_, head_lines_);
    const bool same_count = head_entries_.size() == base_entries_.size();
    if (diff.first_other == 0 && !diff.pr_link_lines.empty() && !same_count) return mixed(diff);
    if (diff.first_other == 0 && same_count && head_lines_.count() == base_lines_.count()) {
      return corrections(diff.pr_link_lines);
    }
    const bool pr_link_first =
        !diff.pr_link_lines.empty() && (diff.first_other == 0 || diff.pr_link_lines.front() < diff.first_other);
    if (same_count && pr_link_first && head_lines_.count() != base_lines_.count()) {
      add("pr-link-correction", diff.pr_link_lines.front(), 1,
          fmt::format("{} has {} lines, {} has {}: a pr-link correction changes lines, it never adds or deletes them",
                      head_.label, head_lines_.count(), base_.label, base_lines_.count()),
          fmt::format("restore {}'s other bytes exactly and change only the pr-link line(s)", base_.label));
      return;
    }
    history_changed();
  }

 private:
  void add(std::string rule, int line, int column, std::string message, std::string fix) {
    report_.findings.push_back(
        {std::move(rule), "error", head_.label, line, column, std::move(message), std::move(fix)});
  }

  size_t common_prefix() const {
    const auto [base_end, head_end] =
        std::mismatch(base_.bytes.begin(), base_.bytes.end(), head_.bytes.begin(), head_.bytes.end());
    return static_cast<size_t>(head_end - head_.bytes.begin());
  }

  // "line L, column C: base line L is "...", head line L is "...""
  std::string where_they_differ(const Position& at) const {
    auto quoted = [](const Lines& lines, int line) {
      return line <= lines.count() ? quote_line(lines.line(line)) : std::string("<end of file>");
    };
    return fmt::format("line {}, column {}: {} line {} is {}, {} line {} is {}", at.line, at.column, base_.label,
                       at.line, quoted(base_lines_, at.line), head_.label, at.line, quoted(head_lines_, at.line));
  }

  Position first_difference() const {
    const size_t offset = common_prefix();
    if (offset >= head_.bytes.size()) {
      return {head_lines_.count() + 1, 1};
    }
    return head_lines_.position(offset);
  }

  void deleted() {
    const auto at = first_difference();
    add("entries-deleted", at.line, at.column,
        fmt::format("{} has {} entries, {} has {}: entries were deleted; the first difference is at {}", head_.label,
                    head_entries_.size(), base_.label, base_entries_.size(), where_they_differ(at)),
        fmt::format("restore {}'s entries byte-for-byte; history is never deleted, a new entry at the tail "
                    "describes a change",
                    base_.label));
  }

  void history_changed();
  bool report_insertion(const Position& at);
  void appended();
  void check_suffix_start();
  void check_separators(size_t additions);
  void check_new_links(size_t additions);
  void mixed(const HistoryDiff& diff);
  void corrections(const std::vector<int>& lines);
  const Entry& head_entry_at(int line) const;

  const Source& base_;
  const Source& head_;
  const Lines base_lines_;
  const Lines head_lines_;
  const std::vector<Entry>& base_entries_;
  const std::vector<Entry>& head_entries_;
  const CheckOptions& options_;
  CheckReport& report_;
};

void ChangeCheck::history_changed() {
  const auto at = first_difference();
  if (head_entries_.size() > base_entries_.size() && report_insertion(at)) return;
  add("append-only", at.line, at.column,
      fmt::format("historical bytes changed at {}; perf-changelog.yaml is append-only: {} must start with {}'s exact "
                  "bytes (only a \"  pr-link:\" line may change, to a canonical link, and then with no new entry)",
                  where_they_differ(at), head_.label, base_.label),
      fmt::format("restore line {} (and any later changed line) as it is in {}; a new entry goes at the tail of "
                  "the file: move the block there, behind one blank line",
                  at.line, base_.label));
}

// Head = base's entries with new ones spliced in before base entry i: names the block and where
// it belongs.
bool ChangeCheck::report_insertion(const Position& at) {
  const auto base_spans = entry_spans(base_.bytes, base_lines_, base_entries_);
  const auto head_spans = entry_spans(head_.bytes, head_lines_, head_entries_);
  size_t first = 0;
  while (first < base_spans.size() && base_spans[first] == head_spans[first]) ++first;
  if (first == base_spans.size()) return false;
  const size_t extra = head_spans.size() - base_spans.size();
  for (size_t inserted = 1; inserted <= extra; ++inserted) {
    if (!std::equal(base_spans.begin() + static_cast<std::ptrdiff_t>(first), base_spans.end(),
                    head_spans.begin() + static_cast<std::ptrdiff_t>(first + inserted))) {
      continue;
    }
    const int block_begin = head_entries_[first].line;
    const auto& last = head_spans[first + inserted - 1];
    const int block_end =
        head_lines_.position(static_cast<size_t>(last.data() + last.size() - head_.bytes.data()) - 1).line;
    add("append-only", at.line, at.column,
        fmt::format("{} inserted mid-file: lines {}-{} ({}config-keys: {}) come before the existing entry that {} "
                    "has at line {}; {} then differs from {} at {}; perf-changelog.yaml is append-only",
                    plural(inserted, "entry", "entries"), block_begin, block_end, inserted > 1 ? "first " : "",
                    joined_keys(head_entries_[first]), base_.label, base_entries_[first].line, head_.label, base_.label,
                    where_they_differ(at)),
        fmt::format("move lines {}-{} to the tail of the file (after the last entry, behind one blank line) so "
                    "that {} starts with {}'s exact bytes",
                    block_begin, block_end, head_.label, base_.label));
    return true;
  }
  return false;
}

void ChangeCheck::appended() {
  const size_t additions = head_entries_.size() - base_entries_.size();
  if (additions == 0) {
    const size_t text = head_.bytes.find_first_not_of('\n', base_.bytes.size());
    const auto at = head_lines_.position(text == std::string::npos ? base_.bytes.size() : text);
    add("append-only", at.line, at.column,
        fmt::format("{} adds text after {}'s last byte but no entry: {}", head_.label, base_.label,
                    quote_line(head_lines_.line(at.line))),
        "remove the added text, or complete it as an entry that starts with \"- config-keys:\"");
    return;
  }
  report_.appended = static_cast<int>(additions);
  report_.appended_entries.assign(head_entries_.end() - static_cast<std::ptrdiff_t>(additions), head_entries_.end());
  check_suffix_start();
  check_separators(additions);
  check_new_links(additions);
}

// Base ends in "\n" (or "\n\n"); one blank line must separate its last entry from the first new one.
void ChangeCheck::check_suffix_start() {
  const std::string_view suffix = std::string_view(head_.bytes).substr(base_.bytes.size());
  const bool base_blank = base_.bytes.ends_with("\n\n");
  const std::string expected = base_blank ? std::string(kEntryStart) : "\n" + std::string(kEntryStart);
  if (suffix.starts_with(expected)) return;
  const size_t newlines = std::min(suffix.find_first_not_of('\n'), suffix.size());
  const size_t blank = newlines + (base_blank ? 1 : 0);
  const size_t entry_offset = base_.bytes.size() + newlines;
  const auto at = head_lines_.position(std::min(entry_offset, head_.bytes.size() - 1));
  std::string what;
  if (!suffix.substr(newlines).starts_with(kEntryStart)) {
    what = fmt::format("the appended text starts with {}, not with a \"- config-keys:\" entry",
                       quote_line(head_lines_.line(at.line)));
  } else {
    what = fmt::format("the first new entry (line {}) follows the last entry of {} after {}", at.line, base_.label,
                       blank == 0 ? std::string("no blank line") : plural(blank, "blank line", "blank lines"));
  }
  add("separator", at.line, at.column, what + "; exactly one blank line separates entries",
      fmt::format("leave exactly one blank line between {}'s last entry and the first new one", base_.label));
}

void ChangeCheck::check_separators(size_t additions) {
  for (size_t index = head_entries_.size() - additions + 1; index < head_entries_.size(); ++index) {
    const int line = head_entries_[index].line;
    const std::string_view before = std::string_view(head_.bytes).substr(0, head_lines_.offset(line));
    const size_t last_text = before.find_last_not_of('\n');
    const size_t newlines = last_text == std::string_view::npos ? before.size() : before.size() - last_text - 1;
    if (newlines == 2) continue;
    add("separator", line, 1,
        fmt::format("the new entry at line {} follows the one before it after {}; exactly one blank line "
                    "separates entries",
                    line,
                    newlines < 2 ? std::string("no blank line") : plural(newlines - 1, "blank line", "blank lines")),
        "leave exactly one blank line between the new entries");
  }
}

void ChangeCheck::check_new_links(size_t additions) {
  const std::string repo = repo_shown(options_.repo_url);
  for (size_t index = head_entries_.size() - additions; index < head_entries_.size(); ++index) {
    const Entry& entry = head_entries_[index];
    if (!options_.pr_number) {
      if (is_canonical_link(entry.pr_link, options_.repo_url)) continue;
      add("pr-link", entry.pr_link_line, entry.pr_link_column,
          fmt::format("the new entry at line {} has pr-link {}: on main a new entry's pr-link must be {}/pull/<number>",
                      entry.line, quote_line(entry.pr_link), repo),
          fmt::format("set pr-link to the URL of the pull request that adds the entry ({}/pull/<number>)", repo));
      continue;
    }
    const int64_t pr = *options_.pr_number;
    if (is_pull_request_link(entry.pr_link, pr, options_.repo_url)) continue;
    add("pr-link", entry.pr_link_line, entry.pr_link_column,
        fmt::format("the new entry at line {} has pr-link {}: in pull request {} a new entry's pr-link must be "
                    "{}/pull/{}, XXX or {}/pull/XXX",
                    entry.line, quote_line(entry.pr_link), pr, repo, pr, repo),
        fmt::format("set pr-link: {}/pull/{}", repo, pr));
  }
}

void ChangeCheck::mixed(const HistoryDiff& diff) {
  const int line = diff.pr_link_lines.front();
  const size_t added = head_entries_.size() - base_entries_.size();
  add("pr-link-correction", line, 1,
      fmt::format("{} corrects {} (the first at line {}) and also appends {}: a historical pr-link correction is "
                  "never mixed with new entries",
                  head_.label, plural(diff.pr_link_lines.size(), "historical pr-link line", "historical pr-link lines"),
                  line, plural(added, "entry", "entries")),
      fmt::format("restore line {} as it is in {} (correct it in a change of its own), and keep the new entries", line,
                  base_.label));
}

const Entry& ChangeCheck::head_entry_at(int line) const {
  auto after = std::upper_bound(head_entries_.begin(), head_entries_.end(), line,
                                [](int value, const Entry& entry) { return value < entry.line; });
  return after == head_entries_.begin() ? head_entries_.front() : *(after - 1);
}

void ChangeCheck::corrections(const std::vector<int>& lines) {
  for (int line : lines) {
    const Entry& entry = head_entry_at(line);
    const Entry& old_entry = base_entries_[static_cast<size_t>(&entry - head_entries_.data())];
    if (entry.pr_link == old_entry.pr_link) {
      add("pr-link-correction", line, 1,
          fmt::format("line {} changes only the formatting of pr-link {}; historical whitespace and formatting are "
                      "immutable",
                      line, quote_line(entry.pr_link)),
          fmt::format("restore line {} as it is in {}", line, base_.label));
    } else if (!is_canonical_link(entry.pr_link, options_.repo_url)) {
      add("pr-link-correction", entry.pr_link_line, entry.pr_link_column,
          fmt::format("line {} corrects pr-link {} to {}, which is not a canonical link ({}/pull/<number>)", line,
                      quote_line(old_entry.pr_link), quote_line(entry.pr_link), repo_shown(options_.repo_url)),
          fmt::format("correct it to the pull request's URL, {}/pull/<number>", repo_shown(options_.repo_url)));
    }
  }
  if (report_.findings.empty()) report_.corrections = static_cast<int>(lines.size());
}

}  // namespace

CheckReport check_change(const Source& base, const Source& head, const CheckOptions& options) {
  CheckReport report;
  std::vector<Entry> base_entries;
  std::vector<Entry> head_entries;
  report.findings = check_file(base, &base_entries, FileEnd::kNewline);
  auto head_findings =
      check_file(head, &head_entries, head.bytes == base.bytes ? FileEnd::kNewline : FileEnd::kExactlyOneNewline);
  report.findings.insert(report.findings.end(), head_findings.begin(), head_findings.end());
  report.base_entries = static_cast<int>(base_entries.size());
  report.head_entries = static_cast<int>(head_entries.size());
  if (!report.findings.empty()) return report;
  ChangeCheck(base, head, base_entries, head_entries, options, report).run();
  return report;
}

}  // namespace ix::changelog
