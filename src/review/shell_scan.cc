#include "review/shell_scan.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "review/text.h"

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

bool setting_char(char c) {
  return name_char(c) || c == '-';
}

// A value as written after a setting: `2.49`, `"$VAR"`, `${VAR:-8}`, `$((2 * CONC))`.
struct Written {
  std::string literal;   // "" when none
  std::string variable;  // the variable it expands, "" when none
  bool opaque = false;   // an expression or command substitution
};

// The `:-v` / `-v` / `:=v` default of `${NAME...}` whose name ends at `rest`'s start, if any.
std::string default_of(std::string_view rest) {
  for (std::string_view op : {":-", ":=", "-", "="}) {
    if (!rest.starts_with(op)) continue;
    rest.remove_prefix(op.size());
    return std::string(rest.substr(0, rest.find('}')));
  }
  return "";
}

Written read_value(std::string_view rest) {
  while (!rest.empty() && (rest.front() == '"' || rest.front() == '\'' || rest.front() == '\\' ||
                           std::isblank(static_cast<unsigned char>(rest.front()))))
    rest.remove_prefix(1);
  Written out;
  if (rest.starts_with("$(") || rest.starts_with("`")) {
    out.opaque = true;
    return out;
  }
  if (rest.starts_with("$")) {
    const bool braced = rest.starts_with("${");
    size_t end = braced ? 2 : 1;
    while (end < rest.size() && name_char(rest[end])) ++end;
    out.variable = std::string(rest.substr(braced ? 2 : 1, end - (braced ? 2 : 1)));
    if (braced && end < rest.size() && rest[end] != '}') out.literal = default_of(rest.substr(end));
    out.opaque = out.variable.empty() || (braced && end < rest.size() && rest[end] != '}' && out.literal.empty());
    return out;
  }
  size_t end = 0;
  while (end < rest.size() && std::string_view(" \t\"',;}])\\").find(rest[end]) == std::string_view::npos) ++end;
  out.literal = std::string(rest.substr(0, end));
  out.opaque = out.literal.find_first_of("$`(") != std::string::npos;
  if (out.opaque) out.literal.clear();
  return out;
}

// What each occurrence of `name` on a code line writes as its value.
std::vector<Written> written_on(std::string_view code, std::string_view name) {
  std::vector<Written> out;
  for (size_t at = code.find(name); at != std::string_view::npos; at = code.find(name, at + 1)) {
    const size_t end = at + name.size();
    if (end < code.size() && setting_char(code[end])) continue;
    if (at > 0 && (setting_char(code[at - 1]) || code[at - 1] == '$')) continue;  // a longer name, or a read
    if (at >= 2 && code.substr(at - 2, 2) == "${") {                              // a read with a default
      const std::string fallback = default_of(code.substr(end));
      if (!fallback.empty()) out.push_back({fallback, "", false});
      continue;
    }
    size_t i = end;
    while (i < code.size() && (code[i] == '"' || code[i] == '\'' || code[i] == '\\')) ++i;
    const bool assigns = i < code.size() && (code[i] == ':' || (code[i] == '=' && code.substr(i, 2) != "=="));
    const bool flag_value =
        name.starts_with("--") && i < code.size() && std::isblank(static_cast<unsigned char>(code[i]));
    if (!assigns && !flag_value) continue;
    Written value = read_value(code.substr(assigns ? i + 1 : i));
    if (value.variable == name) continue;  // `NAME=$NAME` (an echo) gives nothing new
    if (!value.literal.empty() || !value.variable.empty() || value.opaque) out.push_back(std::move(value));
  }
  return out;
}

void collect_values(std::string_view text, std::string_view name, std::set<std::string> followed,
                    std::vector<SettingValue>& out) {
  followed.insert(std::string(name));
  for_each_line(text, [&](int number, std::string_view line) {
    for (const auto& written : written_on(code_line(line), name)) {
      if (!written.literal.empty()) out.push_back({written.literal, number, number});
      if (written.opaque) out.push_back({"", number, number});
      if (written.variable.empty() || followed.contains(written.variable)) continue;
      std::vector<SettingValue> assigned;
      collect_values(text, written.variable, followed, assigned);
      if (assigned.empty() && written.literal.empty()) out.push_back({"", number, number});
      for (const auto& value : assigned) out.push_back({value.value, value.line, number});
    }
  });
}

// The sourced file a `source` argument names: the repository file with that file name, nearest to
// the recipe (same folder first, then any).
std::string resolve_source(const RepoTree& tree, const std::string& recipe, const std::string& written) {
  const size_t slash = written.find_last_of('/');
  const std::string name = slash == std::string::npos ? written : written.substr(slash + 1);
  if (name.empty() || name.find('$') != std::string::npos) return "";
  const std::string folder = recipe.substr(0, recipe.find_last_of('/') + 1);
  if (tree.has(folder + name)) return folder + name;
  for (const auto& path : tree.files()) {
    if (path == name || path.ends_with("/" + name)) return path;
  }
  return "";
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

std::vector<SettingValue> setting_values(std::string_view text, std::string_view name) {
  std::vector<SettingValue> out;
  collect_values(text, name, {}, out);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.site, a.line, a.value) < std::tie(b.site, b.line, b.value);
  });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const auto& a, const auto& b) {
                          return a.site == b.site && a.line == b.line && a.value == b.value;
                        }),
            out.end());
  return out;
}

std::vector<std::string> sourced_scripts(const RepoTree& tree, const std::string& recipe) {
  std::vector<std::string> out;
  std::vector<std::string> queue = {recipe};
  while (!queue.empty()) {
    const std::string path = queue.back();
    queue.pop_back();
    if (std::find(out.begin(), out.end(), path) != out.end()) continue;
    const auto& text = tree.read(path);
    if (!text) continue;
    out.push_back(path);
    for (const auto& source : scan_shell(*text).sources) {
      const std::string resolved = resolve_source(tree, path, source);
      if (!resolved.empty()) queue.push_back(resolved);
    }
  }
  return out;
}

}  // namespace ix::review
