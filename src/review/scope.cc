#include "review/scope.h"

#include <algorithm>
#include <set>

#include "changelog/plan_scope.h"
#include "review/review.h"
#include "review/shell_scan.h"
#include "review/text.h"

namespace ix::review {
namespace {

using KeyTrees = std::vector<std::pair<std::string, config::YamlNode>>;

// Each config key's YAML in one revision, with the file it is in.
KeyTrees trees_of(const RepoTree& tree, const std::vector<std::string>& paths,
                  std::map<std::string, std::string>& file_of) {
  KeyTrees out;
  for (const auto& path : paths) {
    const auto& text = tree.read(path);
    if (!text) continue;
    auto trees = changelog::config_trees({path, *text});
    if (!trees) continue;  // invalid YAML is `validate`'s finding
    for (auto& [key, node] : *trees) {
      file_of[key] = path;
      out.emplace_back(key, std::move(node));
    }
  }
  return out;
}

const config::YamlNode* find_tree(const KeyTrees& trees, const std::string& key) {
  auto it = std::find_if(trees.begin(), trees.end(), [&](const auto& t) { return t.first == key; });
  return it == trees.end() ? nullptr : &it->second;
}

bool same_entry(const changelog::Entry& a, const changelog::Entry& b) {
  return a.config_keys == b.config_keys && a.description == b.description && a.scenario_type == b.scenario_type;
}

std::vector<changelog::Entry> entries_of(const RepoTree& tree, const std::string& path) {
  std::vector<changelog::Entry> entries;
  if (const auto& text = tree.read(path))
    changelog::check_file({tree.label() + ":" + path, *text}, &entries, changelog::FileEnd::kNewline);
  return entries;
}

std::vector<changelog::Entry> new_entries(const RepoTree& base, const RepoTree& head, const std::string& path) {
  auto before = entries_of(base, path);
  std::vector<changelog::Entry> out;
  for (auto& entry : entries_of(head, path)) {
    auto old = std::find_if(before.begin(), before.end(), [&](const auto& b) { return same_entry(b, entry); });
    if (old == before.end()) {
      out.push_back(std::move(entry));
    } else {
      before.erase(old);
    }
  }
  return out;
}

// The recipes of `config` that exist in head: per scenario folder and spec suffix, the first
// candidate present.
std::vector<std::string> existing_recipes(const RepoTree& head, const config::MasterConfig& config) {
  std::vector<std::string> out;
  std::set<std::string> groups;
  for (const auto& path : recipe_candidates(config)) {
    if (!head.has(path)) continue;
    // Group = folder + spec suffix: the fallback of a group is taken only when its first is absent.
    const std::string group = path.substr(0, path.rfind('/')) + (path.ends_with("_mtp.sh") ? "+mtp" : "");
    if (groups.insert(group).second) out.push_back(path);
  }
  return out;
}

void add_recipe(ChangeScope& scope, const std::string& path, bool changed, const std::string& key) {
  auto it = std::find_if(scope.recipes.begin(), scope.recipes.end(), [&](const auto& r) { return r.path == path; });
  if (it == scope.recipes.end()) {
    scope.recipes.push_back({path, changed, {}});
    it = scope.recipes.end() - 1;
  }
  if (!key.empty() && std::find(it->keys.begin(), it->keys.end(), key) == it->keys.end()) it->keys.push_back(key);
}

}  // namespace

bool ChangeScope::is_changed(const std::string& path) const {
  return std::binary_search(changed.begin(), changed.end(), path);
}

const ScopedKey* ChangeScope::find_key(const std::string& key) const {
  auto it = std::find_if(keys.begin(), keys.end(), [&](const auto& k) { return k.key == key; });
  return it == keys.end() ? nullptr : &*it;
}

bool has_draft(const config::MasterConfig& config) {
  auto any = [](const auto& scenarios) {
    return std::any_of(scenarios.begin(), scenarios.end(), [](const auto& scenario) {
      return std::any_of(scenario.search_space.begin(), scenario.search_space.end(),
                         [](const auto& e) { return e.spec_decoding != config::SpecDecoding::kNone; });
    });
  };
  return any(config.fixed_seq_len) || any(config.agentic_coding);
}

std::string keep_configs(std::string_view text, const ConfigFilter& keep) {
  std::string out;
  out.reserve(text.size());
  std::vector<std::string_view> block;
  auto flush = [&] {
    std::string_view key, prefix;
    if (!block.empty() && !block[0].starts_with('#') && !block[0].starts_with(' '))
      key = block[0].substr(0, block[0].find(':'));
    for (const auto line : block) {
      if (line.starts_with("  model-prefix:")) prefix = trim(line.substr(15));
    }
    while (prefix.size() >= 2 && (prefix.front() == '"' || prefix.front() == '\'') && prefix.back() == prefix.front())
      prefix = prefix.substr(1, prefix.size() - 2);
    const bool kept = !key.empty() && keep(key, prefix);
    for (const auto line : block) {
      if (kept) out.append(line);
      out.push_back('\n');
    }
    block.clear();
  };
  for_each_line(text, [&](int, std::string_view line) {
    if (!line.empty() && line[0] != ' ' && line[0] != '#' && line.find(':') != std::string_view::npos) flush();
    block.push_back(line);
  });
  flush();
  return out;
}

std::vector<config::MasterConfig> typed_configs(const RepoTree& tree, const std::vector<std::string>& paths,
                                                const ConfigFilter& keep) {
  std::vector<config::MasterConfig> out;
  for (const auto& path : paths) {
    const auto& text = tree.read(path);
    if (!text) continue;
    std::vector<config::Diagnostic> ignored;  // `validate`'s findings, not review's
    auto configs = config::parse_master_configs(keep ? keep_configs(*text, keep) : *text, path, ignored);
    for (auto& c : configs) out.push_back(std::move(c));
  }
  return out;
}

std::string runner_gpu(std::string_view runner) {
  if (runner.starts_with("cluster:")) runner.remove_prefix(8);
  return std::string(runner.substr(0, runner.find('-')));
}

std::vector<std::string> recipe_candidates(const config::MasterConfig& config) {
  const std::string stem = config.model_prefix + "_" + config.precision + "_" + runner_gpu(config.runner);
  std::vector<std::string> out;
  if (config.multinode) {
    if (!config.agentic_coding.empty())
      out.push_back("benchmarks/multi_node/agentic/" + stem + "_" + config.framework + ".sh");
    if (!config.fixed_seq_len.empty()) out.push_back("benchmarks/multi_node/" + stem + "_" + config.framework + ".sh");
    return out;
  }
  auto add_folder = [&](const std::string& folder, const std::vector<config::SearchEntry>& entries) {
    std::set<std::string> suffixes;
    for (const auto& entry : entries) suffixes.insert(entry.spec_decoding == config::SpecDecoding::kMtp ? "_mtp" : "");
    for (const auto& spec : suffixes) {
      out.push_back(folder + stem + "_" + config.framework + spec + ".sh");
      out.push_back(folder + stem + spec + ".sh");
    }
  };
  for (const auto& scenario : config.agentic_coding)
    add_folder("benchmarks/single_node/agentic/", scenario.search_space);
  for (const auto& scenario : config.fixed_seq_len)
    add_folder("benchmarks/single_node/fixed_seq_len/", scenario.search_space);
  std::vector<std::string> unique;
  for (auto& path : out) {
    if (std::find(unique.begin(), unique.end(), path) == unique.end()) unique.push_back(std::move(path));
  }
  return unique;
}

Result<ChangeScope> compute_scope(const RepoTree& base, const RepoTree& head, const ReviewOptions& options) {
  auto changed = changed_files(base, head);
  if (!changed) return std::unexpected(changed.error());
  ChangeScope scope;
  scope.changed = std::move(*changed);
  scope.new_entries = new_entries(base, head, options.changelog_path);

  // Keys whose YAML changed: only files whose bytes differ can hold one (and parsing is the cost).
  std::vector<std::string> differing;
  for (const auto& path : options.config_files) {
    if (base.read(path) != head.read(path)) differing.push_back(path);
  }
  std::map<std::string, std::string> base_files, head_files;
  const KeyTrees before = trees_of(base, differing, base_files);
  const KeyTrees after = trees_of(head, differing, head_files);
  std::set<std::string> touched;
  for (const auto& [key, node] : after) {
    const auto* old = find_tree(before, key);
    if (!old || !changelog::same_value(*old, node)) touched.insert(key);
  }
  std::vector<std::string> changed_recipes;
  for (const auto& path : scope.changed) {
    if (is_shell_recipe(path) && path.starts_with("benchmarks/") && head.has(path)) changed_recipes.push_back(path);
  }
  if (touched.empty() && changed_recipes.empty()) return scope;

  // Typed head configs map keys to recipes and back: the changed keys, and the keys of the model
  // prefixes changed recipes are named after (`<prefix>_<precision>_<gpu>...`); the other configs
  // of a large master file are not parsed.
  std::set<std::string, std::less<>> recipe_prefixes;
  for (const auto& recipe : changed_recipes) {
    const std::string name = recipe.substr(recipe.rfind('/') + 1);
    recipe_prefixes.insert(name.substr(0, name.find('_')));
  }
  const ConfigFilter in_scope = [&](std::string_view key, std::string_view prefix) {
    return touched.contains(std::string(key)) || recipe_prefixes.contains(prefix);
  };
  auto base_configs = typed_configs(base, differing, in_scope);
  for (auto& config : typed_configs(head, options.config_files, in_scope)) {
    auto recipes = existing_recipes(head, config);
    const bool by_config = touched.contains(config.key);
    const bool by_recipe = std::any_of(recipes.begin(), recipes.end(), [&](const auto& r) {
      return std::find(changed_recipes.begin(), changed_recipes.end(), r) != changed_recipes.end();
    });
    if (!by_config && !by_recipe) continue;
    ScopedKey scoped;
    scoped.key = config.key;
    scoped.file = config.location.file;
    scoped.line =
        config.location.line > 0 ? config.location.line : key_line(head.read(scoped.file).value_or(""), config.key);
    scoped.added = by_config && !find_tree(before, config.key);
    scoped.config_changed = by_config;
    scoped.recipes = recipes;
    if (by_config) {
      auto old =
          std::find_if(base_configs.begin(), base_configs.end(), [&](const auto& c) { return c.key == config.key; });
      if (old != base_configs.end()) scoped.base_config = std::move(*old);
    }
    for (const auto& recipe : recipes) add_recipe(scope, recipe, scope.is_changed(recipe), config.key);
    scoped.config = std::move(config);
    scope.keys.push_back(std::move(scoped));
    touched.erase(scope.keys.back().key);
  }
  // Changed keys whose typed config did not parse are still in scope, by their YAML.
  for (const auto& key : touched) {
    ScopedKey scoped;
    scoped.key = key;
    scoped.file = head_files[key];
    scoped.line = key_line(head.read(scoped.file).value_or(""), key);
    scoped.added = !find_tree(before, key);
    scoped.config_changed = true;
    scope.keys.push_back(std::move(scoped));
  }
  for (const auto& recipe : changed_recipes) add_recipe(scope, recipe, true, "");
  return scope;
}

}  // namespace ix::review
