#include "config/yaml_tree.h"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/utf8.h"

namespace ix::config {
namespace {

bool is_digit(char c, int base) {
  switch (base) {
    case 2: return c == '0' || c == '1';
    case 8: return c >= '0' && c <= '7';
    case 16: return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    default: return c >= '0' && c <= '9';
  }
}

// Digits of `base` and underscores (PyYAML allows `_` as a group separator), at least one digit.
std::optional<int64_t> parse_digits(std::string_view text, int base) {
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  bool any = false;
  for (char c : text) {
    if (c == '_') continue;
    if (!is_digit(c, base)) return std::nullopt;
    int digit = (c >= '0' && c <= '9') ? c - '0' : (c | 0x20) - 'a' + 10;
    if (value > (INT64_MAX - digit) / base) return std::nullopt;  // out of range: not an int64
    value = value * base + digit;
    any = true;
  }
  if (!any) return std::nullopt;
  return value;
}

std::optional<int64_t> resolve_int(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  std::optional<int64_t> value;
  if (text.starts_with("0b")) {
    value = parse_digits(text.substr(2), 2);
  } else if (text.starts_with("0x")) {
    value = parse_digits(text.substr(2), 16);
  } else if (text == "0") {
    value = 0;
  } else if (text[0] == '0') {
    value = parse_digits(text.substr(1), 8);
  } else if (text[0] >= '1' && text[0] <= '9') {
    value = parse_digits(text, 10);
  }
  if (!value) return std::nullopt;
  return negative ? -*value : *value;
}

bool all_digits_or_underscore(std::string_view text) {
  for (char c : text) {
    if (!(is_digit(c, 10) || c == '_')) return false;
  }
  return true;
}

std::optional<double> resolve_float(std::string_view text) {
  std::string_view body = text;
  double sign = 1.0;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    sign = body[0] == '-' ? -1.0 : 1.0;
    body.remove_prefix(1);
  }
  if (body == ".inf" || body == ".Inf" || body == ".INF") return sign * HUGE_VAL;
  if (text == ".nan" || text == ".NaN" || text == ".NAN") return std::nan("");
  // [0-9][0-9_]*\.[0-9_]*([eE][-+][0-9]+)?  or  \.[0-9_]+([eE][-+][0-9]+)?  (the latter unsigned)
  size_t dot = body.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view whole = body.substr(0, dot);
  std::string_view rest = body.substr(dot + 1);
  std::string_view fraction = rest;
  std::string_view exponent;
  size_t e = rest.find_first_of("eE");
  if (e != std::string_view::npos) {
    fraction = rest.substr(0, e);
    exponent = rest.substr(e + 1);
    if (exponent.size() < 2 || (exponent[0] != '-' && exponent[0] != '+')) return std::nullopt;
    for (char c : exponent.substr(1)) {
      if (!is_digit(c, 10)) return std::nullopt;
    }
  }
  if (whole.empty()) {
    if (sign < 0 || text[0] == '+' || fraction.empty()) return std::nullopt;
  } else if (!is_digit(whole[0], 10)) {
    return std::nullopt;
  }
  if (!all_digits_or_underscore(whole) || !all_digits_or_underscore(fraction)) return std::nullopt;
  std::string cleaned;
  for (char c : body) {
    if (c != '_') cleaned += c;
  }
  return sign * std::strtod(cleaned.c_str(), nullptr);
}

std::optional<bool> resolve_bool(std::string_view text) {
  static constexpr std::string_view kTrue[] = {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
  static constexpr std::string_view kFalse[] = {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
  for (auto word : kTrue) {
    if (text == word) return true;
  }
  for (auto word : kFalse) {
    if (text == word) return false;
  }
  return std::nullopt;
}

// A document may hold at most this many nodes (scalars and collections), aliases counted as the
// copies they become. The shipped master configs hold ~25k; a node costs ~300 bytes in memory, so
// the bound keeps a parse under ~300 MB.
constexpr size_t kMaxYamlNodes = 1'000'000;

struct NodeBudgetExceeded {
  YAML::Mark mark;
  size_t alias_copies = 0;  // nodes that aliases added when the budget ran out
};

struct MergeError {
  Mark mark;
};

// Builds YamlNodes from parser events. Finished children are moved into their parent frame, so
// no pointer into a growing vector is ever kept.
class TreeBuilder : public YAML::EventHandler {
 public:
  YamlNode take_root() { return std::move(root_); }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    YamlNode node;
    node.kind = YamlKind::kNull;
    node.mark = to_mark(mark);
    finish(std::move(node), anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    YamlNode node;
    if (anchor < anchors_.size()) {
      // Every alias is a copy: nested aliases grow tenfold per level ("billion laughs"), so the
      // copies count against the node budget.
      alias_copies_ += anchor_nodes_[anchor];
      count(anchor_nodes_[anchor], mark);
      node = anchors_[anchor];
    }
    node.mark = to_mark(mark);
    finish(std::move(node), 0);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    count(1, mark);
    YamlNode node;
    node.kind = YamlKind::kScalar;
    node.mark = to_mark(mark);
    node.scalar = value;
    // yaml-cpp tags plain scalars "?" and quoted/literal ones "!"; an explicit tag such as
    // !!str also makes the value a string.
    node.plain = tag == "?" || tag.empty();
    finish(std::move(node), anchor);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(YamlKind::kSequence, mark, anchor);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(YamlKind::kMap, mark, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    YamlNode node;
    YAML::anchor_t anchor = 0;
    std::optional<YamlNode> pending_key;
  };

  static Mark to_mark(const YAML::Mark& mark) { return Mark{mark.line + 1, mark.column + 1}; }

  void open(YamlKind kind, const YAML::Mark& mark, YAML::anchor_t anchor) {
    count(1, mark);
    Frame frame;
    frame.node.kind = kind;
    frame.node.mark = to_mark(mark);
    frame.anchor = anchor;
    stack_.push_back(std::move(frame));
  }

  void close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    if (frame.node.kind == YamlKind::kMap) resolve_merge_keys(frame.node);
    finish(std::move(frame.node), frame.anchor);
  }

  // YAML 1.1 merge keys, as PyYAML's SafeLoader: `<<: *base` (or a list of aliases) adds the
  // entries of the merged mappings that the mapping does not set itself; earlier sources win.
  static void resolve_merge_keys(YamlNode& map) {
    const auto is_merge = [](const YamlNode& key) { return key.is_scalar() && key.plain && key.scalar == "<<"; };
    if (std::none_of(map.entries.begin(), map.entries.end(), [&](const auto& e) { return is_merge(e.first); })) return;
    std::vector<std::pair<YamlNode, YamlNode>> own, merged;
    std::vector<const YamlNode*> sources;
    for (auto& entry : map.entries) {
      if (!is_merge(entry.first)) {
        own.push_back(std::move(entry));
        continue;
      }
      if (entry.second.is_map()) {
        sources.push_back(&entry.second);
      } else if (entry.second.is_sequence()) {
        for (const auto& item : entry.second.items) {
          if (!item.is_map()) throw MergeError{item.mark};
          sources.push_back(&item);
        }
      } else {
        throw MergeError{entry.second.mark};
      }
    }
    const auto has_key = [](const std::vector<std::pair<YamlNode, YamlNode>>& entries, const YamlNode& key) {
      return std::any_of(entries.begin(), entries.end(), [&](const auto& e) {
        return e.first.is_scalar() && key.is_scalar() && e.first.scalar == key.scalar;
      });
    };
    for (const YamlNode* source : sources) {
      for (const auto& entry : source->entries) {
        if (!has_key(own, entry.first) && !has_key(merged, entry.first)) merged.push_back(entry);
      }
    }
    map.entries = std::move(merged);
    for (auto& entry : own) map.entries.push_back(std::move(entry));
  }

  void finish(YamlNode node, YAML::anchor_t anchor) {
    if (anchor != 0) {
      if (anchors_.size() <= anchor) {
        anchors_.resize(anchor + 1);
        anchor_nodes_.resize(anchor + 1);
      }
      anchors_[anchor] = node;
      anchor_nodes_[anchor] = node_count(node);
    }
    if (stack_.empty()) {
      root_ = std::move(node);
      return;
    }
    Frame& parent = stack_.back();
    if (parent.node.kind == YamlKind::kSequence) {
      parent.node.items.push_back(std::move(node));
    } else if (!parent.pending_key) {
      parent.pending_key = std::move(node);
    } else {
      parent.node.entries.emplace_back(std::move(*parent.pending_key), std::move(node));
      parent.pending_key.reset();
    }
  }

  static size_t node_count(const YamlNode& node) {
    size_t n = 1;
    for (const auto& item : node.items) n += node_count(item);
    for (const auto& [key, value] : node.entries) n += node_count(key) + node_count(value);
    return n;
  }

  void count(size_t nodes, const YAML::Mark& mark) {
    nodes_ += nodes;
    if (nodes_ > kMaxYamlNodes) throw NodeBudgetExceeded{mark, alias_copies_};
  }

  std::vector<Frame> stack_;
  std::vector<YamlNode> anchors_;
  std::vector<size_t> anchor_nodes_;  // nodes in each anchored subtree
  size_t nodes_ = 0;
  size_t alias_copies_ = 0;
  YamlNode root_;
};

// Notes where a second document starts.
class DocumentProbe : public YAML::EventHandler {
 public:
  std::optional<Mark> start;
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (!start) start = Mark{mark.line + 1, mark.column + 1};
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// The first byte that is not valid UTF-8 (or a NUL), as a 1-based position, or nullopt.
std::optional<std::pair<Mark, unsigned char>> first_invalid_utf8(std::string_view text) {
  int line = 1, column = 1;
  for (size_t i = 0; i < text.size();) {
    const size_t length = text[i] == '\0' ? 0 : utf8::valid_sequence_length(text, i);
    if (length == 0) return std::pair{Mark{line, column}, static_cast<unsigned char>(text[i])};
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> YamlNode::as_int() const {
  if (kind != YamlKind::kScalar || !plain) return std::nullopt;
  return resolve_int(scalar);
}

std::optional<bool> YamlNode::as_bool() const {
  if (kind != YamlKind::kScalar || !plain) return std::nullopt;
  return resolve_bool(scalar);
}

std::optional<double> YamlNode::as_float() const {
  if (kind != YamlKind::kScalar || !plain) return std::nullopt;
  if (auto value = resolve_float(scalar)) return value;
  if (auto value = resolve_int(scalar)) return static_cast<double>(*value);
  return std::nullopt;
}

std::optional<std::string> YamlNode::as_string() const {
  if (kind != YamlKind::kScalar) return std::nullopt;
  if (plain && (resolve_bool(scalar) || resolve_int(scalar) || resolve_float(scalar))) return std::nullopt;
  return scalar;
}

std::string YamlNode::describe() const {
  switch (kind) {
    case YamlKind::kNull: return "null (nothing)";
    case YamlKind::kSequence: return "a list";
    case YamlKind::kMap: return "a mapping";
    case YamlKind::kScalar: break;
  }
  if (plain) {
    if (auto value = resolve_bool(scalar)) return fmt::format("the boolean {}", *value ? "true" : "false");
    if (resolve_int(scalar)) return fmt::format("the integer {}", scalar);
    if (resolve_float(scalar)) return fmt::format("the number {}", scalar);
  }
  // Long values (a pasted blob) are cut so one message stays one readable line.
  constexpr size_t kMaxShown = 80;
  if (scalar.size() > kMaxShown) return fmt::format("the string '{}...'", scalar.substr(0, kMaxShown));
  return fmt::format("the string '{}'", scalar);
}

// Most of the budget spent on alias copies means nested anchors ("billion laughs"); otherwise the
// document itself is that large.
Error node_budget_error(std::string_view source_name, const NodeBudgetExceeded& error) {
  const std::string where = fmt::format("{}:{}:{}", source_name, error.mark.line + 1, error.mark.column + 1);
  if (error.alias_copies * 2 > kMaxYamlNodes) {
    return Error(ErrorCode::kParse,
                 fmt::format("{}: YAML aliases expand the document past {} nodes here ({} of them copies made by "
                             "aliases of nested anchors); write the values out or use fewer nested aliases",
                             where, kMaxYamlNodes, error.alias_copies));
  }
  return Error(ErrorCode::kParse,
               fmt::format("{}: the document holds more than {} YAML nodes (scalars, lists and mappings; a shipped "
                           "master config holds about 25,000); split it into several files or shorten its lists",
                           where, kMaxYamlNodes));
}

Result<YamlNode> parse_yaml(std::string_view text, std::string_view source_name) {
  if (auto bad = first_invalid_utf8(text)) {
    return fail(ErrorCode::kParse,
                fmt::format("{}:{}:{}: {} (the file must be UTF-8 text; re-save it as UTF-8)", source_name,
                            bad->first.line, bad->first.column,
                            bad->second == 0 ? std::string("NUL byte")
                                             : fmt::format("byte 0x{:02x} is not valid UTF-8", bad->second)));
  }
  try {
    std::istringstream input{std::string(text)};
    YAML::Parser parser(input);
    TreeBuilder builder;
    if (!parser.HandleNextDocument(builder)) return YamlNode{};
    DocumentProbe probe;
    if (parser.HandleNextDocument(probe)) {
      const Mark at = probe.start.value_or(Mark{});
      return fail(ErrorCode::kParse,
                  fmt::format("{}:{}:{}: a second YAML document ('---'): a master config is one document (merge them, "
                              "or pass each file to --config-files)",
                              source_name, at.line, at.column));
    }
    return builder.take_root();
  } catch (const MergeError& error) {
    return fail(ErrorCode::kParse, fmt::format("{}:{}:{}: a merge key (<<) takes a mapping or a list of mappings",
                                               source_name, error.mark.line, error.mark.column));
  } catch (const NodeBudgetExceeded& error) {
    return fail(node_budget_error(source_name, error));
  } catch (const YAML::DeepRecursion& error) {
    // yaml-cpp's recursion guard says only "bad file".
    return fail(ErrorCode::kParse, fmt::format("{}:{}:{}: YAML nested deeper than {} levels here; a master config "
                                               "nests a few levels (flatten the value)",
                                               source_name, error.mark.line + 1, error.mark.column + 1, error.depth()));
  } catch (const YAML::Exception& error) {
    // yaml-cpp may quote the offending byte; keep the message printable on one line.
    std::string what;
    for (unsigned char c : error.msg) {
      if (c >= 0x20 && c < 0x7f) {
        what += static_cast<char>(c);
      } else {
        what += fmt::format("\\x{:02x}", c);
      }
    }
    return fail(ErrorCode::kParse,
                fmt::format("{}:{}:{}: YAML syntax error: {} (fix the YAML at this position; check indentation, "
                            "quoting and matching brackets)",
                            source_name, error.mark.line + 1, error.mark.column + 1, what));
  } catch (const std::exception& error) {
    return fail(ErrorCode::kParse, fmt::format("{}: cannot parse YAML: {}", source_name, error.what()));
  }
}

}  // namespace ix::config
