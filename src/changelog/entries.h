// A changelog's YAML list -> typed entries, with a Finding for each field that is missing, of the
// wrong type or unknown (InferenceX's ChangelogEntry rules).
#pragma once

#include <vector>

#include "changelog/check.h"
#include "changelog/lines.h"
#include "config/yaml_tree.h"

namespace ix::changelog {

std::vector<Entry> read_entries(const Source& file, const config::YamlNode& root, std::vector<Finding>& out);

}  // namespace ix::changelog
