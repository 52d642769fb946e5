// Append-only changelog entries (InferenceX's `append-only: true`): a change that only adds points
// to curves the base already publishes. Two checks, as process_changelog.py makes them:
//   - scope: nothing outside the entries' configs changed; inside a selected config, no scenario
//     added or removed, no unselected scenario changed, and no config-wide field changed while the
//     config has unselected scenarios (configs compared as the YAML values they load to);
//   - delta: the head's rows of those configs keep every base recipe and concurrency; the result is
//     only the added points, each on an existing visual curve whose base rows share one image.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "changelog/plan.h"

namespace ix::changelog {

// config key -> the scenario types ("fixed-seq-len", "agentic-coding") its entries select.
using ScopeSelection = std::map<std::string, std::set<std::string>>;

Result<void> check_append_only_scope(const ConfigSnapshot& base, const ConfigSnapshot& head,
                                     const ScopeSelection& selection);

Result<std::vector<sweep::SweepRow>> append_only_delta(const std::vector<sweep::SweepRow>& base_rows,
                                                       const std::vector<sweep::SweepRow>& head_rows);

// A master-config file's top-level keys and their YAML.
Result<std::vector<std::pair<std::string, config::YamlNode>>> config_trees(const NamedText& file);

// Python's == on the values the two nodes load to (PyYAML SafeLoader): maps by key regardless of
// order, lists item by item, 1 == 1.0 == true, a quoted "1" is a string.
bool same_value(const config::YamlNode& a, const config::YamlNode& b);

}  // namespace ix::changelog
