// Changelog planning (SPEC §3): the entries a change appends to perf-changelog.yaml -> the sweep
// rows they trigger, bucketed as InferenceX's `utils/process_changelog.py` buckets them, each
// benchmark row stamped with its recipe fingerprint.
//
// Per entry (entries with all-evals first, otherwise in file order):
//   - config-keys resolve against the head's master configs: `*` matches any run of characters,
//     every other character itself; a key or pattern that names nothing is an error at the
//     entry's line;
//   - benchmark rows: `sweep test-config --no-evals` over the entry's configs, restricted to its
//     scenario-type(s) not yet planned for that config by an earlier entry; skipped for evals-only
//     and all-evals entries (and --evals-only);
//   - eval rows: `sweep test-config --evals-only [--all-evals]` the same way, multi-node rows
//     whose prefill ep is below eval-min-prefill-ep dropped;
//   - append-only entries (all of a change's entries, or none): only the points the head adds to
//     curves the base already has, and nothing changed outside the entries' configs/scenarios.
// Then --trim-conc (one concurrency per recipe), fingerprints, buckets: single_node/multi_node by
// sequence length ("1k1k", "8k1k", "<isl>_<osl>") or "agentic"; evals, agentic_evals,
// multinode_evals, multinode_agentic_evals.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "changelog/check.h"
#include "common/error.h"
#include "config/master_config.h"
#include "config/yaml_tree.h"
#include "sweep/sweep_row.h"

namespace ix::changelog {

// One revision's master configs and runners.yaml. `trees` (each top-level config key's YAML, all
// files merged) is filled only when an append-only change needs to compare revisions.
struct ConfigSnapshot {
  std::string label;  // "the head" / "the base (origin/main)"
  config::LoadedConfigs loaded;
  std::vector<std::pair<std::string, config::YamlNode>> trees;
};

// A named file's text (a path, or "<ref>:<path>" for one read from git).
struct NamedText {
  std::string name;
  std::string text;
};

// Parses and validates one revision's files; `with_trees` keeps the YAML for append-only scope
// checks. Errors list every config diagnostic, named by the files' names.
Result<ConfigSnapshot> load_snapshot(std::string label, const std::vector<NamedText>& config_files,
                                     const NamedText& runner_file, bool with_trees);

struct PlanOptions {
  bool trim_conc = false;       // one concurrency per recipe (the lowest)
  bool all_evals = false;       // every entry expands its eval selection
  bool evals_only = false;      // no benchmark rows for any entry
  std::string changelog_label;  // where the entries are, for messages ("perf-changelog.yaml")
  std::string base_ref;         // as given; echoed in the matrix's changelog_metadata
  std::string head_ref;
};

struct PlanBucket {
  std::string name;  // "1k1k", "8k1k", "1024_2048", "agentic"
  std::vector<sweep::SweepRow> rows;
};

struct Plan {
  std::vector<PlanBucket> single_node;  // buckets in the order their first row was planned
  std::vector<PlanBucket> multi_node;
  std::vector<sweep::SweepRow> evals;
  std::vector<sweep::SweepRow> agentic_evals;
  std::vector<sweep::SweepRow> multinode_evals;
  std::vector<sweep::SweepRow> multinode_agentic_evals;
  std::vector<Entry> entries;
  std::string base_ref;
  std::string head_ref;

  size_t benchmark_rows() const;
  size_t eval_rows() const;
};

// InferenceX's config-key patterns: `*` matches any run of characters, every other character itself.
bool config_key_matches(std::string_view pattern, std::string_view name);

// Does the entries' append-only flag ask for the base revision's configs? (Entries either all
// carry it or none; plan_entries reports a mix.)
bool needs_base_configs(const std::vector<Entry>& entries);

// The plan for `entries` (appended, in file order). `base` is required when the entries are
// append-only. Errors are kInvalidArgument naming the entry's file:line and what to change.
Result<Plan> plan_entries(const std::vector<Entry>& entries, const ConfigSnapshot& head, const ConfigSnapshot* base,
                          const PlanOptions& options);

// What a CI matrix consumes: process_changelog.py's output, byte for byte (its pydantic models'
// key order, defaults filled in, compact separators), with a final newline.
std::string render_plan_matrix(const Plan& plan);
// For people: a summary line, then each bucket's rows (exp-name, concurrencies, runner,
// topology, fingerprint prefix).
std::string render_plan_text(const Plan& plan);

// Every row of a plan matrix (benchmark buckets in order, then the eval buckets), for `run --plan`.
// Errors name the file and the bucket ("plan.json: single_node.1k1k row 2: ...").
Result<std::vector<sweep::SweepRow>> plan_rows_from_json(std::string_view text, std::string_view file_name);

}  // namespace ix::changelog
