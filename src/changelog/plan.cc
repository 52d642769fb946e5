#include "changelog/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "changelog/plan_scope.h"
#include "sweep/planner.h"

namespace ix::changelog {
namespace {

using sweep::ScenarioType;
using sweep::SweepRow;

constexpr ScenarioType kAllScenarios[] = {ScenarioType::kFixedSeqLen, ScenarioType::kAgenticCoding};

std::string_view scenario_name(ScenarioType type) {
  return type == ScenarioType::kFixedSeqLen ? "fixed-seq-len" : "agentic-coding";
}

}  // namespace

bool config_key_matches(std::string_view pattern, std::string_view name) {
  size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

std::string where(const PlanOptions& options, const Entry& entry) {
  return fmt::format("{}:{}", options.changelog_label, entry.line);
}

// The entry's config keys resolved against the head configs, in first-seen order.
Result<std::vector<std::string>> resolve_keys(const Entry& entry, const config::MasterConfigSet& configs,
                                              const PlanOptions& options) {
  std::vector<std::string> keys;
  auto add = [&keys](const std::string& key) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  };
  for (const auto& pattern : entry.config_keys) {
    if (pattern.find('*') == std::string::npos) {
      if (!configs.find(pattern))
        return fail(ErrorCode::kInvalidArgument,
                    fmt::format("{}: config key '{}' is not in the master configs; fix the key (a typo?) or add the "
                                "config in the same change",
                                where(options, entry), pattern));
      add(pattern);
      continue;
    }
    bool matched = false;
    for (const auto& config : configs.configs) {
      if (!config_key_matches(pattern, config.key)) continue;
      matched = true;
      add(config.key);
    }
    if (!matched)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{}: the pattern '{}' matches no config key in the master configs; fix the pattern",
                              where(options, entry), pattern));
  }
  return keys;
}

std::vector<ScenarioType> entry_scenarios(const Entry& entry) {
  if (entry.scenario_type.empty()) return {std::begin(kAllScenarios), std::end(kAllScenarios)};
  std::vector<ScenarioType> out;
  for (ScenarioType type : kAllScenarios) {
    if (std::find(entry.scenario_type.begin(), entry.scenario_type.end(), scenario_name(type)) !=
        entry.scenario_type.end())
      out.push_back(type);
  }
  return out;
}

// Configs grouped by the scenarios not yet planned for them (process_changelog.py's grouping: one
// generator call per group, groups in first-seen order).
using Groups = std::vector<std::pair<std::vector<ScenarioType>, std::vector<std::string>>>;
Groups unseen_groups(const std::vector<std::string>& keys, const std::vector<ScenarioType>& scenarios,
                     std::map<std::string, std::set<ScenarioType>>& seen) {
  Groups groups;
  for (const auto& key : keys) {
    std::vector<ScenarioType> unseen;
    for (ScenarioType type : scenarios) {
      if (!seen[key].contains(type)) unseen.push_back(type);
    }
    if (unseen.empty()) continue;
    seen[key].insert(unseen.begin(), unseen.end());
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == unseen; });
    if (group == groups.end()) {
      groups.push_back({unseen, {key}});
    } else {
      group->second.push_back(key);
    }
  }
  return groups;
}

Result<std::vector<SweepRow>> generate(const ConfigSnapshot& snapshot, const std::vector<std::string>& keys,
                                       const std::vector<ScenarioType>& scenarios, bool evals, bool all_evals) {
  sweep::SweepOptions options;
  options.config_keys = keys;
  // The benchmark call names scenarios only when they are not all of them; the eval call always.
  if (evals || scenarios.size() != std::size(kAllScenarios)) options.scenario_types = scenarios;
  options.no_evals = !evals;
  options.evals_only = evals;
  options.all_evals = evals && all_evals;
  auto rows = sweep::plan_test_config(snapshot.loaded.configs, snapshot.loaded.runners, options);
  if (!rows) return fail(rows.error().code(), snapshot.label + ": " + rows.error().message());
  return rows;
}

void drop_below_prefill_ep(std::vector<SweepRow>& rows, std::optional<int64_t> min_ep) {
  if (!min_ep) return;
  std::erase_if(rows, [&](const SweepRow& row) { return row.is_multinode() && row.prefill.ep < *min_ep; });
}

// One concurrency per recipe: single-node rows of one recipe keep the lowest, multi-node rows
// keep [min(conc)].
std::vector<SweepRow> trim_conc(std::vector<SweepRow> rows) {
  static constexpr std::string_view kPointKeys[] = {"conc", "exp-name"};
  std::map<std::string, size_t> keep;  // recipe -> index of its lowest-concurrency row
  for (size_t index = 0; index < rows.size(); ++index) {
    auto& row = rows[index];
    if (row.is_multinode()) {
      if (row.conc.size() > 1) row.conc = {*std::min_element(row.conc.begin(), row.conc.end())};
      continue;
    }
    auto [it, inserted] = keep.emplace(sweep::canonical_json(row, kPointKeys), index);
    if (!inserted && row.conc.front() < rows[it->second].conc.front()) it->second = index;
  }
  std::vector<bool> kept(rows.size(), false);
  for (size_t index = 0; index < rows.size(); ++index) kept[index] = rows[index].is_multinode();
  for (const auto& [recipe, index] : keep) kept[index] = true;
  std::vector<SweepRow> out;
  for (size_t index = 0; index < rows.size(); ++index) {
    if (kept[index]) out.push_back(std::move(rows[index]));
  }
  return out;
}

void add_to_bucket(std::vector<PlanBucket>& buckets, std::string name, SweepRow row) {
  auto bucket = std::find_if(buckets.begin(), buckets.end(), [&](const auto& b) { return b.name == name; });
  if (bucket == buckets.end()) bucket = buckets.insert(buckets.end(), PlanBucket{std::move(name), {}});
  bucket->rows.push_back(std::move(row));
}

void bucket_benchmarks(std::vector<SweepRow> rows, Plan& plan) {
  for (auto& row : rows) {
    row.stamped_fingerprint = sweep::recipe_fingerprint(row);
    const std::string name = row.is_agentic() ? "agentic" : sweep::seq_len_name(row.isl, row.osl);
    add_to_bucket(row.is_multinode() ? plan.multi_node : plan.single_node, name, std::move(row));
  }
}

void bucket_evals(std::vector<SweepRow> rows, Plan& plan) {
  for (auto& row : rows) {
    auto& bucket = row.is_multinode() ? (row.is_agentic() ? plan.multinode_agentic_evals : plan.multinode_evals)
                                      : (row.is_agentic() ? plan.agentic_evals : plan.evals);
    bucket.push_back(std::move(row));
  }
}

Result<void> check_mode(const std::vector<Entry>& entries, const PlanOptions& options) {
  const auto append_only = std::count_if(entries.begin(), entries.end(), [](const Entry& e) { return e.append_only; });
  if (append_only == 0) return {};
  if (static_cast<size_t>(append_only) != entries.size())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}: append-only entries cannot share a sweep with regular entries; split the change into "
                            "two pull requests",
                            options.changelog_label));
  if (options.all_evals || options.evals_only)
    return fail(ErrorCode::kInvalidArgument,
                "append-only sweeps take neither --all-evals nor --evals-only; drop the flag");
  return {};
}

// The selected configs and, per config, the scenarios its entries name.
ScopeSelection append_only_scope(const std::vector<std::pair<const Entry*, std::vector<std::string>>>& resolved) {
  ScopeSelection selection;
  for (const auto& [entry, keys] : resolved) {
    for (const auto& key : keys) {
      auto& scenarios = selection[key];
      for (ScenarioType type : entry_scenarios(*entry)) scenarios.insert(std::string(scenario_name(type)));
    }
  }
  return selection;
}

}  // namespace

Result<ConfigSnapshot> load_snapshot(std::string label, const std::vector<NamedText>& config_files,
                                     const NamedText& runner_file, bool with_trees) {
  std::vector<config::Diagnostic> diagnostics;
  ConfigSnapshot snapshot;
  snapshot.label = std::move(label);
  for (const auto& file : config_files) {
    auto configs = config::parse_master_configs(file.text, file.name, diagnostics);
    std::move(configs.begin(), configs.end(), std::back_inserter(snapshot.loaded.configs.configs));
  }
  snapshot.loaded.runners = config::parse_runner_config(runner_file.text, runner_file.name, diagnostics);
  config::check_config_set(snapshot.loaded.configs.configs, &snapshot.loaded.runners, diagnostics);
  if (!diagnostics.empty())
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}: {} problem(s) in the configs:\n{}", snapshot.label,
                                                         diagnostics.size(), config::format_diagnostics(diagnostics)));
  if (with_trees) {
    for (const auto& file : config_files) {
      auto tree = config_trees(file);
      if (!tree) return std::unexpected(tree.error());
      std::move(tree->begin(), tree->end(), std::back_inserter(snapshot.trees));
    }
  }
  return snapshot;
}

size_t Plan::benchmark_rows() const {
  size_t count = 0;
  for (const auto* buckets : {&single_node, &multi_node}) {
    for (const auto& bucket : *buckets) count += bucket.rows.size();
  }
  return count;
}

size_t Plan::eval_rows() const {
  return evals.size() + agentic_evals.size() + multinode_evals.size() + multinode_agentic_evals.size();
}

bool needs_base_configs(const std::vector<Entry>& entries) {
  return std::any_of(entries.begin(), entries.end(), [](const Entry& e) { return e.append_only; });
}

Result<Plan> plan_entries(const std::vector<Entry>& entries, const ConfigSnapshot& head, const ConfigSnapshot* base,
                          const PlanOptions& options) {
  if (entries.empty())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}: the change appends no entry, so there is nothing to plan; append an entry at the "
                            "tail that names the changed config keys",
                            options.changelog_label));
  if (auto mode = check_mode(entries, options); !mode) return std::unexpected(mode.error());
  const bool append_only = needs_base_configs(entries);
  if (append_only && !base)
    return fail(ErrorCode::kInvalidArgument,
                "append-only entries compare the configs at the base revision with the head's: give --base as a git "
                "ref (e.g. origin/main), not a file");

  std::vector<std::pair<const Entry*, std::vector<std::string>>> resolved;
  for (const auto& entry : entries) {
    auto keys = resolve_keys(entry, head.loaded.configs, options);
    if (!keys) return std::unexpected(keys.error());
    resolved.emplace_back(&entry, std::move(*keys));
  }
  if (append_only) {
    if (auto scope = check_append_only_scope(*base, head, append_only_scope(resolved)); !scope)
      return std::unexpected(scope.error());
  }
  // all-evals entries first, so their wider eval selection wins for a config named twice.
  std::stable_sort(resolved.begin(), resolved.end(),
                   [](const auto& a, const auto& b) { return a.first->all_evals && !b.first->all_evals; });

  std::vector<SweepRow> benchmarks;
  std::vector<SweepRow> evals;
  std::map<std::string, std::set<ScenarioType>> benchmark_seen;
  std::map<std::string, std::set<ScenarioType>> eval_seen;
  for (const auto& [entry, keys] : resolved) {
    const auto scenarios = entry_scenarios(*entry);
    if (!(options.evals_only || entry->evals_only || entry->all_evals)) {
      for (const auto& [group_scenarios, group_keys] : unseen_groups(keys, scenarios, benchmark_seen)) {
        auto rows = generate(head, group_keys, group_scenarios, false, false);
        if (!rows) return std::unexpected(rows.error());
        if (append_only) {
          auto base_rows = generate(*base, group_keys, group_scenarios, false, false);
          if (!base_rows) return std::unexpected(base_rows.error());
          auto delta = append_only_delta(*base_rows, *rows);
          if (!delta) return fail(delta.error().code(), where(options, *entry) + ": " + delta.error().message());
          rows = std::move(delta);
        }
        std::move(rows->begin(), rows->end(), std::back_inserter(benchmarks));
      }
    }
    if (append_only) continue;
    for (const auto& [group_scenarios, group_keys] : unseen_groups(keys, scenarios, eval_seen)) {
      auto rows = generate(head, group_keys, group_scenarios, true, options.all_evals || entry->all_evals);
      if (!rows) return std::unexpected(rows.error());
      drop_below_prefill_ep(*rows, entry->eval_min_prefill_ep);
      std::move(rows->begin(), rows->end(), std::back_inserter(evals));
    }
  }

  Plan plan;
  plan.entries = entries;
  plan.base_ref = options.base_ref;
  plan.head_ref = options.head_ref;
  bucket_benchmarks(options.trim_conc ? trim_conc(std::move(benchmarks)) : std::move(benchmarks), plan);
  bucket_evals(std::move(evals), plan);
  return plan;
}

}  // namespace ix::changelog
