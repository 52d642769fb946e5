// The data review's checks match against (data/review/rules.json, compiled in): environment
// prefixes engines read themselves, the precision-lowering environment denylist, the shell
// patterns that patch an engine inside its image, upstream image registries, and where multi-node
// model-variant lookups start.
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

// Frameworks whose configs must run an upstream image, and the image prefixes that are upstream.
struct UpstreamImages {
  std::string why;
  std::vector<std::string> frameworks;
  std::vector<std::string> registries;
};

// Where multi-node server scripts are dispatched from, and the agentic entry's name suffix.
struct VariantLookup {
  std::string why;
  std::string dispatcher;
  std::string agentic_suffix;
};

struct Rules {
  std::vector<std::string> engine_env_prefixes;
  std::vector<NamedRule> precision_lowering_env;
  std::vector<NamedRule> engine_patch_patterns;
  UpstreamImages upstream_images;
  VariantLookup variant_lookup;
};

// The compiled-in rules (parsed once).
const Rules& default_rules();
// Parses rules JSON (the shape of data/review/rules.json).
Result<Rules> parse_rules(std::string_view json_text, std::string_view source_name);

const char* embedded_rules_json();  // generated from data/review/rules.json

}  // namespace ix::review
