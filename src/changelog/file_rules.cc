// The rules one changelog file must pass by itself (SPEC §3, first bullet), in InferenceX's order:
// bytes (final newline, CR, tab, NUL, UTF-8), then YAML (syntax, duplicate keys, a root list, one
// `- config-keys:` line per entry, each entry's fields).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <string>

#include "changelog/check.h"
#include "changelog/entries.h"
#include "changelog/lines.h"
#include "common/utf8.h"
#include "config/perf_changelog_yaml.h"
#include "config/yaml_tree.h"

namespace ix::changelog {
namespace {

using config::YamlNode;

constexpr std::string_view kEntryStart = "- config-keys:";

struct Context {
  const Source& file;
  const Lines& lines;
  std::vector<Finding>& out;

  void add(std::string rule, int line, int column, std::string message, std::string fix) const {
    out.push_back({std::move(rule), "error", file.label, line, column, std::move(message), std::move(fix)});
  }
  void add_at(std::string rule, size_t offset, std::string message, std::string fix) const {
    const auto at = lines.position(offset);
    add(std::move(rule), at.line, at.column, std::move(message), std::move(fix));
  }
};

void check_final_newline(const Context& c, FileEnd end) {
  const std::string& bytes = c.file.bytes;
  if (bytes.empty()) {
    c.add("final-newline", 0, 0, "the file is empty; it must hold entries and end in exactly one \"\\n\"",
          "restore the file's entries");
    return;
  }
  if (bytes.back() != '\n') {
    c.add("final-newline", c.lines.count(), static_cast<int>(c.lines.line(c.lines.count()).size()) + 1,
          "the last line does not end with a newline; the file must end in exactly one \"\\n\"",
          "add a newline after the last line");
    return;
  }
  const size_t last_text = bytes.find_last_not_of('\n');
  const size_t newlines = last_text == std::string::npos ? bytes.size() : bytes.size() - last_text - 1;
  if (newlines < 2 || end == FileEnd::kNewline) return;
  c.add_at("final-newline", bytes.size() - newlines + 1,
           fmt::format("the file ends in {} newlines ({} blank line(s) after the last entry); it must end in exactly "
                       "one \"\\n\"",
                       newlines, newlines - 1),
           "delete the blank line(s) at the end of the file");
}

// The first `byte` in the file, with how many there are.
void check_byte(const Context& c, char byte, const char* rule, const char* what, const char* fix) {
  const size_t first = c.file.bytes.find(byte);
  if (first == std::string::npos) return;
  const auto count = std::count(c.file.bytes.begin(), c.file.bytes.end(), byte);
  c.add_at(rule, first, fmt::format("{} ({} in the file, the first here)", what, count), fix);
}

bool check_bytes(const Context& c) {
  const size_t before = c.out.size();
  check_byte(c, '\r', "carriage-return",
             "carriage return (CR) byte: the file must use \"\\n\" line ends only, never CRLF or CR",
             "convert the file to LF line ends (sed -i 's/\\r$//' FILE, or your editor's LF setting)");
  check_byte(c, '\t', "tab", "tab character: YAML indentation and entry text use spaces only",
             "replace each tab with spaces");
  check_byte(c, '\0', "nul", "NUL byte: the file must be plain text", "delete the NUL byte(s)");
  const size_t invalid = utf8::first_invalid(c.file.bytes);
  if (invalid != std::string::npos) {
    c.add_at("utf8", invalid,
             fmt::format("byte 0x{:02x} is not valid UTF-8", static_cast<unsigned char>(c.file.bytes[invalid])),
             "re-save the file as UTF-8");
  }
  return c.out.size() == before;
}

// parse_yaml's errors read "<label>:<line>:<column>: <what>".
void add_yaml_error(const Context& c, const std::string& message) {
  std::string_view rest = message;
  int line = 0;
  int column = 0;
  const std::string prefix = c.file.label + ":";
  if (rest.starts_with(prefix)) {
    rest.remove_prefix(prefix.size());
    auto [after_line, line_error] = std::from_chars(rest.data(), rest.data() + rest.size(), line);
    if (line_error == std::errc() && *after_line == ':') {
      auto [after_column, column_error] = std::from_chars(after_line + 1, rest.data() + rest.size(), column);
      if (column_error == std::errc() && std::string_view(after_column).starts_with(": ")) {
        rest = std::string_view(after_column + 2, rest.data() + rest.size() - after_column - 2);
      }
    }
  }
  c.add("yaml-syntax", line, column, std::string(rest),
        "fix the YAML at this position (compare it with the entries around it)");
}

void check_duplicates(const Context& c, const YamlNode& node) {
  if (node.is_sequence()) {
    for (const auto& item : node.items) check_duplicates(c, item);
    return;
  }
  if (!node.is_map()) return;
  std::map<std::string, config::Mark> seen;
  for (const auto& [key, value] : node.entries) {
    if (key.is_scalar()) {
      auto [first, inserted] = seen.emplace(key.scalar, key.mark);
      if (!inserted) {
        c.add("duplicate-key", key.mark.line, key.mark.column,
              fmt::format("duplicate key \"{}\" in this mapping (first at line {}, column {}); YAML loaders keep "
                          "only one of the two values",
                          key.scalar, first->second.line, first->second.column),
              fmt::format("delete one of the two \"{}\" keys", key.scalar));
      }
    }
    check_duplicates(c, value);
  }
}

// One `- config-keys:` line per entry: the first line that breaks the pairing is reported.
void check_entry_lines(const Context& c, const YamlNode& root) {
  std::set<int> key_lines;
  for (int line = 1; line <= c.lines.count(); ++line) {
    if (c.lines.line(line).starts_with(kEntryStart)) key_lines.insert(line);
  }
  std::set<int> item_lines;
  for (const auto& item : root.items) item_lines.insert(item.mark.line);
  if (key_lines.size() == root.items.size() && key_lines == item_lines) return;
  std::vector<int> unpaired;
  std::set_symmetric_difference(key_lines.begin(), key_lines.end(), item_lines.begin(), item_lines.end(),
                                std::back_inserter(unpaired));
  const int line = unpaired.empty() ? 0 : unpaired.front();
  const std::string why = key_lines.contains(line)
                              ? fmt::format("line {} starts with \"- config-keys:\" but does not start an entry", line)
                              : fmt::format("the entry at line {} does not start with a \"- config-keys:\" line", line);
  c.add("entry-count", line, 1,
        fmt::format("{} line(s) start with \"- config-keys:\" but the YAML list has {} entries: {}", key_lines.size(),
                    root.items.size(), why),
        "start every entry with \"- config-keys:\" at column 1, and no other line with it");
}

}  // namespace

std::vector<Finding> check_file(const Source& file, std::vector<Entry>* entries, FileEnd end) {
  std::vector<Finding> out;
  const Lines lines(file.bytes);
  const Context c{file, lines, out};
  check_final_newline(c, end);
  if (!check_bytes(c)) return out;
  auto root = config::parse_changelog_yaml(file.bytes, file.label);
  if (!root) {
    add_yaml_error(c, root.error().message());
    return out;
  }
  check_duplicates(c, *root);
  if (!root->is_sequence()) {
    c.add("root-list", root->mark.line, root->mark.column,
          fmt::format("the document's root is {}; perf-changelog.yaml is a YAML list of entries", root->describe()),
          "make every entry a list item that starts with \"- config-keys:\" at column 1");
    return out;
  }
  check_entry_lines(c, *root);
  auto parsed = read_entries(file, *root, out);
  if (entries != nullptr && out.empty()) *entries = std::move(parsed);
  return out;
}

}  // namespace ix::changelog
