#include "review/shell_scan.h"

#include <algorithm>
#include <cctype>

namespace ix::review {
namespace {

bool name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// The line without a trailing comment and single-quoted text (both hold no variable reads).
std::string code_of(std::string_view line) {
  std::string out;
  bool single = false;
  bool dquote = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (single) {
      if (c == '\'') single = false;
      continue;
    }
    if (c == '\\' && i + 1 < line.size()) {
      out += c;
      out += line[++i];
      continue;
    }
    if (c == '"') dquote = !dquote;
    if (c == '\'' && !dquote) {
      single = true;
      out += ' ';
      continue;
    }
    if (c == '#' && !dquote && (i == 0 || std::isspace(static_cast<unsigned char>(line[i - 1])))) break;
    out += c;
  }
  return out;
}

void add_read(ShellScan& scan, std::string name) {
  if (std::find(scan.reads.begin(), scan.reads.end(), name) == scan.reads.end()) scan.reads.push_back(std::move(name));
}

void scan_reads(std::string_view code, ShellScan& scan) {
  for (size_t i = 0; i + 1 < code.size(); ++i) {
    if (code[i] != '$') continue;
    size_t at = i + 1;
    if (code[at] == '{') {
      ++at;
      if (at < code.size() && (code[at] == '!' || code[at] == '#')) ++at;
    }
    if (at >= code.size() || !name_start(code[at])) continue;
    size_t end = at;
    while (end < code.size() && name_char(code[end])) ++end;
    add_read(scan, std::string(code.substr(at, end - at)));
    i = end - 1;
  }
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

// `export A=1 B`, `A=1`, `declare -x A=1`, `local A=1`, `readonly A=1`.
void scan_assignments(std::string_view code, int line, ShellScan& scan) {
  std::string_view rest = trim(code);
  bool exported = false;
  for (std::string_view keyword : {"export ", "declare -x ", "declare ", "local ", "readonly "}) {
    if (rest.starts_with(keyword)) {
      exported = keyword.starts_with("export") || keyword.starts_with("declare -x");
      rest = trim(rest.substr(keyword.size()));
      break;
    }
  }
  // Each word: NAME or NAME=value (only the first word unless a keyword preceded).
  while (!rest.empty()) {
    size_t end = 0;
    while (end < rest.size() && name_char(rest[end])) ++end;
    if (end == 0 || !name_start(rest[0])) return;
    const std::string name(rest.substr(0, end));
    const bool assigns = end < rest.size() && (rest[end] == '=' || rest.substr(end).starts_with("+="));
    if (!assigns && !exported) return;
    scan.assignments.push_back({name, line, exported});
    if (!exported) return;  // `A=1 cmd ...`: one prefix assignment is enough for review
    // Skip the value: up to the next unquoted space.
    size_t at = end;
    bool dquote = false;
    while (at < rest.size() && (dquote || !std::isspace(static_cast<unsigned char>(rest[at])))) {
      if (rest[at] == '"') dquote = !dquote;
      ++at;
    }
    rest = trim(rest.substr(at));
  }
}

void scan_source(std::string_view code, ShellScan& scan) {
  std::string_view rest = trim(code);
  if (rest.starts_with("source ")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with(". ")) {
    rest.remove_prefix(2);
  } else {
    return;
  }
  rest = trim(rest);
  std::string path;
  bool dquote = false;
  for (char c : rest) {
    if (c == '"') {
      dquote = !dquote;
      continue;
    }
    if (!dquote && std::isspace(static_cast<unsigned char>(c))) break;
    path += c;
  }
  if (!path.empty()) scan.sources.push_back(path);
}

}  // namespace

ShellScan scan_shell(std::string_view text) {
  ShellScan scan;
  int number = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    const std::string code = code_of(text.substr(begin, end - begin));
    scan_reads(code, scan);
    scan_assignments(code, number, scan);
    scan_source(code, scan);
    begin = end + 1;
  }
  return scan;
}

bool is_shell_recipe(std::string_view path) {
  return path.ends_with(".sh");
}

}  // namespace ix::review
