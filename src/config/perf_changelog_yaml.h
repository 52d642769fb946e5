// perf-changelog.yaml's YAML, read entry by entry: the same tree parse_yaml() builds (marks,
// plain flags, duplicate keys kept), in a fraction of its time on InferenceX's 6,000-line file.
//
// The file is a top-level list whose items start at `- config-keys:` lines. Each item in the shape
// nearly every entry has (keys at indent 2, one-line plain or quoted scalars, block lists at
// indent 4) is read directly; any other item goes through parse_yaml() on its own lines, and if
// one of those fails, or the file does not start with an entry, the whole text does, so every
// error is parse_yaml()'s own.
#pragma once

#include <string_view>

#include "config/yaml_tree.h"

namespace ix::config {

Result<YamlNode> parse_changelog_yaml(std::string_view text, std::string_view source_name);

}  // namespace ix::config
