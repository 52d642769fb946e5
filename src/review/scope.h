// What a change touches, worked out once for every check (tests/data/review/README.md, "Scope"):
//   - the files that differ between base and head;
//   - the config keys of the master configs that are new or whose YAML value changed (comments
//     and formatting are not changes), with the head's typed config;
//   - the recipes in scope: the shell recipes that changed, plus the recipes of changed keys;
//     a recipe maps back to the keys it serves, so a recipe-only edit puts its key in scope;
//   - the new changelog entries: the head's entries the base does not have, wherever they sit.
//
// A key's recipe is found as InferenceX's runners/launch_*.sh find it:
//   benchmarks/single_node/{agentic|fixed_seq_len}/<prefix>_<precision>_<gpu>_<framework><_mtp>.sh,
//   else the same without `_<framework>` (or with `_trt` / `_atom` only), gpu = the runner label
//   without `cluster:` up to its first `-`; multi-node keys: benchmarks/multi_node[/agentic]/
//   <prefix>_<precision>_<gpu>_<framework>.sh.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "changelog/check.h"
#include "config/master_config.h"
#include "review/repo_tree.h"

namespace ix::review {

struct ReviewOptions;

struct ScopedKey {
  std::string key;
  std::string file;                                 // the master config holding it in head
  int line = 0;                                     // its `key:` line in that file
  bool added = false;                               // not in the base
  bool config_changed = false;                      // added, or its YAML value changed (else in scope by its recipe)
  std::optional<config::MasterConfig> config;       // head's typed config (absent if it does not parse)
  std::optional<config::MasterConfig> base_config;  // the base's, when the key changed and was there
  std::vector<std::string> recipes;                 // its recipe scripts present in head
};

struct ScopedRecipe {
  std::string path;
  bool changed = false;           // the file differs (else in scope through a changed key)
  std::vector<std::string> keys;  // the head keys it serves
};

struct ChangeScope {
  std::vector<std::string> changed;  // sorted
  std::vector<ScopedKey> keys;       // head file order
  std::vector<ScopedRecipe> recipes;
  std::vector<changelog::Entry> new_entries;  // head order; `line` is the entry's first line

  bool is_changed(const std::string& path) const;
  const ScopedKey* find_key(const std::string& key) const;
};

Result<ChangeScope> compute_scope(const RepoTree& base, const RepoTree& head, const ReviewOptions& options);

// The typed configs of a revision's master config files, file by file (a file that does not parse
// contributes what did; its diagnostics are `validate`'s findings, not review's).
// `keep` (when given) selects configs by key and model prefix; the others are not parsed.
using ConfigFilter = std::function<bool(std::string_view key, std::string_view model_prefix)>;
std::vector<config::MasterConfig> typed_configs(const RepoTree& tree, const std::vector<std::string>& paths,
                                                const ConfigFilter& keep = {});

// A master config's text with every top-level config `keep` rejects blanked out, line numbers kept
// (so a large file parses only the configs wanted, with their real locations).
std::string keep_configs(std::string_view text, const ConfigFilter& keep);

// The recipe paths InferenceX's launchers would try for `config` (existing or not), most specific first.
std::vector<std::string> recipe_candidates(const config::MasterConfig& config);

// Whether any of the config's rows decodes speculatively (MTP or a draft model).
bool has_draft(const config::MasterConfig& config);

// The GPU name of a runner label: `cluster:mi355x-amds` -> `mi355x`.
std::string runner_gpu(std::string_view runner);

}  // namespace ix::review
