// A small YAML document tree with source positions, built from yaml-cpp's event parser.
//
// Why not YAML::Node: it forgets whether a scalar was quoted (so `version: 1.3` and
// `version: "1.3"` look alike), silently keeps one of two duplicate mapping keys, and is slow on
// 10k-line files. This tree keeps every mapping entry in document order (duplicates included, so
// validation can report them), each node's 1-based line:column, and whether a scalar was plain.
//
// Plain scalars resolve like PyYAML's SafeLoader (YAML 1.1), because that is what the reference
// generator reads the same files with: `3_095_781` is an int, `yes`/`on` are booleans, `1e3`
// (no dot) is a string, `0.80` is a float.
//
// This is the only place yaml-cpp is used; its exceptions never leave parse_yaml().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ix::config {

// 1-based position in a source file (0 = unknown).
struct Mark {
  int line = 0;
  int column = 0;
};

enum class YamlKind { kNull, kScalar, kSequence, kMap };

struct YamlNode {
  YamlKind kind = YamlKind::kNull;
  Mark mark;
  std::string scalar;                                  // kScalar: the text as written (unquoted, unescaped)
  bool plain = true;                                   // kScalar: false when quoted or block-literal (always a string)
  std::vector<YamlNode> items;                         // kSequence
  std::vector<std::pair<YamlNode, YamlNode>> entries;  // kMap, in document order

  bool is_null() const { return kind == YamlKind::kNull; }
  bool is_scalar() const { return kind == YamlKind::kScalar; }
  bool is_sequence() const { return kind == YamlKind::kSequence; }
  bool is_map() const { return kind == YamlKind::kMap; }

  // YAML 1.1 (PyYAML) resolution of a plain scalar; nullopt when the node is not a plain scalar
  // of that type. as_string() accepts any scalar that does not resolve to null/bool/int/float.
  std::optional<int64_t> as_int() const;
  std::optional<bool> as_bool() const;
  std::optional<double> as_float() const;  // ints are floats too (`dram-utilization: 1`)
  std::optional<std::string> as_string() const;

  // Human name of what this node holds, for "expected X, got Y" messages.
  std::string describe() const;
};

// Parses the first document of `text`. An empty document is a null node. Syntax errors become
// ErrorCode::kParse with "<source_name>:<line>:<column>: <what>" and a hint.
Result<YamlNode> parse_yaml(std::string_view text, std::string_view source_name);

}  // namespace ix::config
