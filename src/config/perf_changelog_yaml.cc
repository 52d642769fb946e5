#include "config/perf_changelog_yaml.h"

#include <optional>
#include <string>
#include <vector>

#include "common/utf8.h"

namespace ix::config {
namespace {

constexpr std::string_view kEntryStart = "- config-keys:";

YamlNode scalar_node(std::string text, bool plain, int line, int column) {
  YamlNode node;
  node.kind = YamlKind::kScalar;
  node.scalar = std::move(text);
  node.plain = plain;
  node.mark = {line, column};
  return node;
}

std::string_view trim_right(std::string_view text) {
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

bool only_spaces(std::string_view text) {
  return text.find_first_not_of(' ') == std::string_view::npos;
}

// '...' with '' for a quote, all on this line.
std::optional<std::string> single_quoted(std::string_view text) {
  std::string value;
  for (size_t at = 1; at < text.size(); ++at) {
    if (text[at] != '\'') {
      value += text[at];
    } else if (at + 1 < text.size() && text[at + 1] == '\'') {
      value += '\'';
      ++at;
    } else {
      if (!only_spaces(text.substr(at + 1))) return std::nullopt;
      return value;
    }
  }
  return std::nullopt;
}

// "..." without escapes, all on this line.
std::optional<std::string> double_quoted(std::string_view text) {
  const size_t close = text.find_first_of("\"\\", 1);
  if (close == std::string_view::npos || text[close] != '"' || !only_spaces(text.substr(close + 1))) {
    return std::nullopt;
  }
  return std::string(text.substr(1, close - 1));
}

// A plain scalar that cannot be anything else: no indicator first, no ": " or " #", no tab.
bool simple_plain(std::string_view text) {
  if (text.empty() || std::string_view("-?:,[]{}#&*!|>'\"%@`").find(text.front()) != std::string_view::npos) {
    return false;
  }
  return text.find(": ") == std::string_view::npos && text.find(" #") == std::string_view::npos &&
         text.find('\t') == std::string_view::npos && text.back() != ':';
}

// The scalar that fills the rest of a line, starting at 1-based `column`.
std::optional<YamlNode> line_scalar(std::string_view text, int line, int column) {
  text = trim_right(text);
  if (text.empty()) return std::nullopt;
  std::optional<std::string> value;
  if (text.front() == '"') {
    value = double_quoted(text);
  } else if (text.front() == '\'') {
    value = single_quoted(text);
  } else if (simple_plain(text)) {
    return scalar_node(std::string(text), true, line, column);
  }
  if (!value) return std::nullopt;
  return scalar_node(std::move(*value), false, line, column);
}

// One entry's lines in the common shape, or nullopt for anything else.
class EntryReader {
 public:
  EntryReader(int first_line) : line_(first_line) {
    map_.kind = YamlKind::kMap;
    map_.mark = {first_line, 3};
  }

  std::optional<YamlNode> read(std::string_view chunk) {
    bool first = true;
    for (size_t begin = 0; begin < chunk.size(); ++line_) {
      size_t end = chunk.find('\n', begin);
      if (end == std::string_view::npos) end = chunk.size();
      const std::string_view text = chunk.substr(begin, end - begin);
      begin = end + 1;
      const bool ok = first ? trim_right(text) == kEntryStart && open_key("config-keys", 3) : read_line(text);
      first = false;
      if (!ok) return std::nullopt;
    }
    if (!close_value()) return std::nullopt;
    return std::move(map_);
  }

 private:
  bool read_line(std::string_view text) {
    if (only_spaces(text)) return true;
    if (text.starts_with("    - ")) return add_item(text.substr(6));
    if (text.size() < 3 || !text.starts_with("  ") || text[2] < 'a' || text[2] > 'z') return false;
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos) return false;
    const std::string_view key = text.substr(2, colon - 2);
    if (key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") != std::string_view::npos) return false;
    if (!close_value() || !open_key(key, 3)) return false;
    const std::string_view rest = text.substr(colon + 1);
    if (only_spaces(rest)) return true;
    if (rest.front() != ' ') return false;
    const size_t start = rest.find_first_not_of(' ');
    auto value = line_scalar(rest.substr(start), line_, static_cast<int>(colon + 2 + start));
    if (!value) return false;
    map_.entries.back().second = std::move(*value);
    state_ = State::kScalar;
    return true;
  }

  bool open_key(std::string_view key, int column) {
    map_.entries.emplace_back(scalar_node(std::string(key), true, line_, column), YamlNode{});
    state_ = State::kPending;
    return true;
  }

  bool add_item(std::string_view text) {
    YamlNode& value = map_.entries.back().second;
    if (state_ == State::kPending) {
      value.kind = YamlKind::kSequence;
      value.mark = {line_, 5};
      state_ = State::kSequence;
    }
    if (state_ != State::kSequence) return false;
    auto item = line_scalar(text, line_, 7);
    if (!item) return false;
    value.items.push_back(std::move(*item));
    return true;
  }

  // A key with nothing after it is left to parse_yaml (null, or a value on the lines below).
  bool close_value() const { return map_.entries.empty() || state_ != State::kPending; }

  enum class State { kPending, kScalar, kSequence };
  int line_;
  YamlNode map_;
  State state_ = State::kPending;
};

void shift_lines(YamlNode& node, int lines) {
  node.mark.line += lines;
  for (auto& item : node.items) shift_lines(item, lines);
  for (auto& [key, value] : node.entries) {
    shift_lines(key, lines);
    shift_lines(value, lines);
  }
}

// parse_yaml() on one item's lines, its marks moved to the file's lines. yaml-cpp accepts a
// quote left open at the end of the text, which the next item would have closed: a last item
// after the chunk must come back as itself, or the whole file is parsed instead.
bool parse_chunk(std::string_view chunk, int first_line, std::string_view source_name, YamlNode& root) {
  constexpr std::string_view kEnd = "ix-changelog-chunk-end";
  std::string text(chunk);
  if (!text.ends_with('\n')) text += '\n';
  text += "- " + std::string(kEnd) + "\n";
  auto parsed = parse_yaml(text, source_name);
  if (!parsed || !parsed->is_sequence() || parsed->items.empty()) return false;
  const YamlNode& end = parsed->items.back();
  if (!end.is_scalar() || !end.plain || end.scalar != kEnd || end.mark.column != 3) return false;
  parsed->items.pop_back();
  for (auto& item : parsed->items) {
    shift_lines(item, first_line - 1);
    root.items.push_back(std::move(item));
  }
  return true;
}

}  // namespace

Result<YamlNode> parse_changelog_yaml(std::string_view text, std::string_view source_name) {
  if (!text.starts_with(kEntryStart) || !utf8::is_valid(text) || text.find('\0') != std::string_view::npos) {
    return parse_yaml(text, source_name);
  }
  YamlNode root;
  root.kind = YamlKind::kSequence;
  root.mark = {1, 1};
  size_t begin = 0;
  int line = 1;
  while (begin < text.size()) {
    size_t next = text.find("\n- config-keys:", begin);
    const size_t end = next == std::string_view::npos ? text.size() : next + 1;
    const std::string_view chunk = text.substr(begin, end - begin);
    auto item = EntryReader(line).read(chunk);
    if (item) {
      root.items.push_back(std::move(*item));
    } else if (!parse_chunk(chunk, line, source_name, root)) {
      return parse_yaml(text, source_name);
    }
    for (char c : chunk) line += c == '\n';
    begin = end;
  }
  return root;
}

}  // namespace ix::config
