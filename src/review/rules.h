// The data review's checks match against (data/review/rules.json, compiled in): environment
// prefixes engines read themselves, the precision-lowering environment denylist, and the shell
// patterns that patch an engine inside its image.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"

namespace ix::review {

struct NamedRule {
  std::string name;  // a variable name, or a pattern
  std::string why;
  std::vector<std::string> only_with;  // patterns: match only on lines that also hold one of these
};

struct Rules {
  std::vector<std::string> engine_env_prefixes;
  std::vector<NamedRule> precision_lowering_env;
  std::vector<NamedRule> engine_patch_patterns;
};

// The compiled-in rules (parsed once).
const Rules& default_rules();
// Parses rules JSON (the shape of data/review/rules.json).
Result<Rules> parse_rules(std::string_view json_text, std::string_view source_name);

const char* embedded_rules_json();  // generated from data/review/rules.json

}  // namespace ix::review
