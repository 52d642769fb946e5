// The data review's checks match against (data/review/rules.json, compiled in): environment
// prefixes engines read themselves, the precision-lowering environment denylist, the shell
// patterns that patch an engine inside its image, upstream image registries, where multi-node
// model-variant lookups start, the settings that carry a recipe's draft length and forced
// acceptance length (golden-al), and the settings changelog prose names (prose).
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

// A setting that forces the acceptance length on one engine (SPEC §7).
struct ForcedAlSetting {
  std::string name;                     // a variable, flag or JSON key
  std::vector<std::string> frameworks;  // the master-config frameworks whose engine reads it
  bool minus_one = false;               // takes AL - 1 (accepted draft tokens only)
  std::string why;
};

struct GoldenAlRules {
  std::vector<std::string> draft_length_settings;  // the engine-facing ones first
  std::vector<ForcedAlSetting> forced_settings;
};

// A setting changelog prose names: the phrases that name it, and where its value is set.
struct ProseSetting {
  std::string name;
  std::vector<std::string> phrases;
  std::vector<std::string> recipe;  // variables, flags and config keys of recipes (and what they source)
  std::string config;               // a master-config field: "conc", "tp", "dram-utilization" ("" = none)
};

struct Rules {
  std::vector<std::string> engine_env_prefixes;
  std::vector<NamedRule> precision_lowering_env;
  std::vector<NamedRule> engine_patch_patterns;
  UpstreamImages upstream_images;
  VariantLookup variant_lookup;
  GoldenAlRules golden_al;
  std::vector<ProseSetting> prose_settings;
};

// The compiled-in rules (parsed once).
const Rules& default_rules();
// Parses rules JSON (the shape of data/review/rules.json).
Result<Rules> parse_rules(std::string_view json_text, std::string_view source_name);

const char* embedded_rules_json();  // generated from data/review/rules.json

}  // namespace ix::review
