#include "changelog/plan_scope.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <variant>

namespace ix::changelog {
namespace {

using config::YamlNode;
using sweep::SweepRow;

// A scalar as PyYAML loads it: None, a number (bools are ints in Python), or a string.
using Scalar = std::variant<std::monostate, int64_t, double, std::string>;

Scalar load_scalar(const YamlNode& node) {
  if (node.is_null()) return std::monostate{};
  if (node.plain) {
    if (node.scalar.empty() || node.scalar == "~" || node.scalar == "null" || node.scalar == "Null" ||
        node.scalar == "NULL")
      return std::monostate{};
    if (auto b = node.as_bool()) return int64_t{*b ? 1 : 0};
    if (auto i = node.as_int()) return *i;
    if (auto f = node.as_float()) return *f;
  }
  return node.scalar;
}

bool same_scalar(const Scalar& a, const Scalar& b) {
  auto number = [](const Scalar& s) -> std::optional<double> {
    if (auto* i = std::get_if<int64_t>(&s)) return static_cast<double>(*i);
    if (auto* d = std::get_if<double>(&s)) return *d;
    return std::nullopt;
  };
  if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b)) return a == b;
  auto x = number(a), y = number(b);
  if (x && y) return *x == *y;
  return a == b;
}

const YamlNode* map_get(const YamlNode& map, std::string_view key) {
  for (const auto& [k, v] : map.entries) {
    if (k.scalar == key) return &v;
  }
  return nullptr;
}

const YamlNode* lookup(const ConfigSnapshot& snapshot, std::string_view key) {
  for (const auto& [k, v] : snapshot.trees) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool same_optional(const YamlNode* a, const YamlNode* b) {
  if (!a || !b) return a == b;
  return same_value(*a, *b);
}

// A config's keys other than `scenarios`, compared as a dict.
bool same_config_wide_fields(const YamlNode& a, const YamlNode& b) {
  auto fields = [](const YamlNode& config) {
    std::vector<const std::pair<YamlNode, YamlNode>*> out;
    for (const auto& entry : config.entries) {
      if (entry.first.scalar != "scenarios") out.push_back(&entry);
    }
    return out;
  };
  const auto fa = fields(a), fb = fields(b);
  if (fa.size() != fb.size()) return false;
  return std::all_of(fa.begin(), fa.end(),
                     [&](const auto* entry) { return same_optional(&entry->second, map_get(b, entry->first.scalar)); });
}

std::set<std::string> scenario_names(const YamlNode* scenarios) {
  std::set<std::string> names;
  if (scenarios && scenarios->is_map()) {
    for (const auto& [k, v] : scenarios->entries) names.insert(k.scalar);
  }
  return names;
}

Result<void> check_selected_config(const std::string& key, const YamlNode& base, const YamlNode& head,
                                   const std::set<std::string>& selected) {
  const YamlNode* base_scenarios = map_get(base, "scenarios");
  const YamlNode* head_scenarios = map_get(head, "scenarios");
  const auto base_names = scenario_names(base_scenarios);
  if (base_names != scenario_names(head_scenarios))
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("append-only added or removed a scenario in config '{}'; an append-only change only adds "
                            "points to existing scenarios (drop append-only to plan a new scenario)",
                            key));
  std::vector<std::string> unselected;
  for (const auto& name : base_names) {
    if (!selected.contains(name)) unselected.push_back(name);
  }
  if (!unselected.empty() && !same_config_wide_fields(base, head))
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("append-only changed config-wide fields of '{}', which also reach its scenario(s) {} "
                            "outside the entry's scenario-type; restore them, or select those scenarios too",
                            key, fmt::join(unselected, ", ")));
  for (const auto& name : unselected) {
    if (!same_optional(map_get(*base_scenarios, name), map_get(*head_scenarios, name)))
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("append-only changed scenario '{}' of config '{}', outside the entry's scenario-type; "
                              "restore it, or add it to scenario-type",
                              name, key));
  }
  return {};
}

std::set<int64_t> point_set(const SweepRow& row) {
  return {row.conc.begin(), row.conc.end()};
}

// Identifies one curve: the row without its point-level fields.
std::string curve_key(const SweepRow& row) {
  static constexpr std::string_view kPointKeys[] = {"conc", "exp-name", "recipe-fingerprint"};
  return sweep::canonical_json(row, kPointKeys);
}

// The dashboard curve an added point lands on.
std::string visual_series(const SweepRow& row) {
  const bool agentic = row.is_agentic();
  return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", row.model, row.model_prefix,
                     row.precision, row.framework, row.runner, row.disagg,
                     agentic ? "agentic" : fmt::format("{}/{}", row.isl, row.osl),
                     row.kv_offloading == config::KvOffloading::kNone ? "off" : "on",
                     agentic ? "" : config::spec_decoding_name(row.spec_decoding),
                     row.is_multinode() ? row.prefill.hardware.value_or("") : "",
                     row.is_multinode() ? row.decode.hardware.value_or("") : "");
}

using Groups = std::vector<std::pair<std::string, std::set<int64_t>>>;

Groups group_points(const std::vector<SweepRow>& rows) {
  Groups groups;
  for (const auto& row : rows) {
    const std::string key = curve_key(row);
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (group == groups.end()) group = groups.insert(groups.end(), {key, {}});
    const auto points = point_set(row);
    group->second.insert(points.begin(), points.end());
  }
  return groups;
}

const std::set<int64_t>* find_group(const Groups& groups, const std::string& key) {
  for (const auto& [k, points] : groups) {
    if (k == key) return &points;
  }
  return nullptr;
}

Result<void> check_base_kept(const Groups& base, const Groups& head) {
  for (const auto& [key, points] : base) {
    const auto* kept = find_group(head, key);
    if (!kept)
      return fail(ErrorCode::kInvalidArgument,
                  "append-only may not remove or modify existing generated recipes; restore the base search-space "
                  "entries and add new ones beside them");
    std::vector<int64_t> removed;
    std::set_difference(points.begin(), points.end(), kept->begin(), kept->end(), std::back_inserter(removed));
    if (!removed.empty())
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("append-only may not remove existing concurrency points: [{}]; keep them in the "
                              "conc-list (or conc range)",
                              fmt::join(removed, ", ")));
  }
  return {};
}

Result<void> check_visual_curves(const std::vector<SweepRow>& base_rows, const std::vector<SweepRow>& delta) {
  std::map<std::string, std::set<std::string>> images;
  for (const auto& row : base_rows) images[visual_series(row)].insert(row.image);
  for (const auto& row : delta) {
    auto found = images.find(visual_series(row));
    if (found == images.end() || found->second != std::set<std::string>{row.image})
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("append-only additions must belong to an existing visual curve with one unchanged "
                              "image; '{}' (image {}) does not; drop append-only to publish a new curve",
                              row.exp_name, row.image));
  }
  return {};
}

}  // namespace

bool same_value(const YamlNode& a, const YamlNode& b) {
  const bool a_scalar = a.is_scalar() || a.is_null();
  const bool b_scalar = b.is_scalar() || b.is_null();
  if (a_scalar || b_scalar) return a_scalar && b_scalar && same_scalar(load_scalar(a), load_scalar(b));
  if (a.kind != b.kind) return false;
  if (a.is_sequence()) {
    if (a.items.size() != b.items.size()) return false;
    for (size_t i = 0; i < a.items.size(); ++i) {
      if (!same_value(a.items[i], b.items[i])) return false;
    }
    return true;
  }
  if (a.entries.size() != b.entries.size()) return false;
  return std::all_of(a.entries.begin(), a.entries.end(),
                     [&](const auto& entry) { return same_optional(&entry.second, map_get(b, entry.first.scalar)); });
}

Result<std::vector<std::pair<std::string, YamlNode>>> config_trees(const NamedText& file) {
  auto root = config::parse_yaml(file.text, file.name);
  if (!root) return std::unexpected(root.error());
  std::vector<std::pair<std::string, YamlNode>> out;
  for (auto& [key, value] : root->entries) out.emplace_back(key.scalar, std::move(value));
  return out;
}

Result<void> check_append_only_scope(const ConfigSnapshot& base, const ConfigSnapshot& head,
                                     const ScopeSelection& selection) {
  std::vector<std::string> missing;
  for (const auto& [key, scenarios] : selection) {
    if (!lookup(base, key)) missing.push_back(key);
  }
  if (!missing.empty())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("append-only requires every selected config to exist in {}; missing: {}; drop "
                            "append-only to plan a new config",
                            base.label, fmt::join(missing, ", ")));
  std::set<std::string> keys;
  for (const auto* snapshot : {&base, &head}) {
    for (const auto& [key, tree] : snapshot->trees) keys.insert(key);
  }
  std::vector<std::string> unrelated;
  for (const auto& key : keys) {
    if (!selection.contains(key) && !same_optional(lookup(base, key), lookup(head, key))) unrelated.push_back(key);
  }
  if (!unrelated.empty())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("append-only change edits configs its changelog entries do not select: {}; add them to "
                            "config-keys, or move those edits to another change",
                            fmt::join(unrelated, ", ")));
  for (const auto& [key, scenarios] : selection) {
    const YamlNode* head_config = lookup(head, key);
    if (!head_config) continue;  // resolved against the head, so present
    if (auto checked = check_selected_config(key, *lookup(base, key), *head_config, scenarios); !checked)
      return checked;
  }
  return {};
}

Result<std::vector<SweepRow>> append_only_delta(const std::vector<SweepRow>& base_rows,
                                                const std::vector<SweepRow>& head_rows) {
  const Groups base = group_points(base_rows);
  const Groups head = group_points(head_rows);
  if (base.empty())
    return fail(ErrorCode::kInvalidArgument,
                "append-only requires an existing curve in the base revision; drop append-only to plan a new one");
  if (auto kept = check_base_kept(base, head); !kept) return std::unexpected(kept.error());

  std::vector<SweepRow> delta;
  std::map<std::string, std::set<int64_t>> emitted;
  for (const auto& row : head_rows) {
    const std::string key = curve_key(row);
    const auto* before = find_group(base, key);
    auto is_new = [&](int64_t conc) { return (!before || !before->contains(conc)) && !emitted[key].contains(conc); };
    std::vector<int64_t> added;
    for (int64_t conc : row.conc) {
      if (!is_new(conc)) continue;
      added.push_back(conc);
      emitted[key].insert(conc);
    }
    if (added.empty()) continue;
    SweepRow point = row;
    point.conc = std::move(added);
    delta.push_back(std::move(point));
  }
  if (delta.empty())
    return fail(ErrorCode::kInvalidArgument,
                "append-only did not add any generated points; add concurrencies or search-space entries, or drop "
                "the entry");
  if (auto curves = check_visual_curves(base_rows, delta); !curves) return std::unexpected(curves.error());
  return delta;
}

}  // namespace ix::changelog
