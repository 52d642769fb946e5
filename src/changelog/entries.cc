#include "changelog/entries.h"

#include <fmt/format.h>

#include <string>

namespace ix::changelog {
namespace {

using config::YamlNode;

constexpr std::string_view kScenarioTypes[] = {"fixed-seq-len", "agentic-coding"};

struct EntryReader {
  const Source& file;
  std::vector<Finding>& out;
  int index;  // 1-based entry number

  void add(const config::Mark& at, std::string message, std::string fix) const {
    out.push_back({"entry-shape", "error", file.label, at.line, at.column,
                   fmt::format("entry {}: {}", index, std::move(message)), std::move(fix)});
  }

  void strings(const YamlNode& value, std::string_view key, std::vector<std::string>& into,
               std::vector<int>* lines = nullptr) const {
    if (!value.is_sequence() || value.items.empty()) {
      add(value.mark, fmt::format("{} must be a non-empty list of strings, got {}", key, value.describe()),
          fmt::format("write {} as a list: one \"    - text\" line per item", key));
      return;
    }
    for (const auto& item : value.items) {
      auto text = item.as_string();
      if (!text) {
        add(item.mark, fmt::format("every {} item must be a string, got {}", key, item.describe()),
            "quote the item (\"...\")");
        continue;
      }
      into.push_back(*text);
      if (lines) lines->push_back(item.mark.line);
    }
  }

  void flag(const YamlNode& value, std::string_view key, bool& into) const {
    auto parsed = value.as_bool();
    if (!parsed) {
      add(value.mark, fmt::format("{} must be true or false, got {}", key, value.describe()),
          fmt::format("write {}: true (or drop the key for false)", key));
      return;
    }
    into = *parsed;
  }

  void scenario_types(const YamlNode& value, Entry& entry) const {
    strings(value, "scenario-type", entry.scenario_type);
    for (const auto& type : entry.scenario_type) {
      if (type != kScenarioTypes[0] && type != kScenarioTypes[1]) {
        add(value.mark, fmt::format("scenario-type '{}' is not one of fixed-seq-len, agentic-coding", type),
            "use fixed-seq-len or agentic-coding");
      }
    }
  }

  void pr_link(const YamlNode& value, Entry& entry) const {
    auto text = value.as_string();
    if (!text) {
      add(value.mark, fmt::format("pr-link must be a string, got {}", value.describe()),
          "write pr-link: https://github.com/<org>/<repo>/pull/<number>");
      return;
    }
    entry.pr_link = *text;
    entry.pr_link_line = value.mark.line;
    entry.pr_link_column = value.mark.column;
  }

  void min_prefill_ep(const YamlNode& value, Entry& entry) const {
    auto number = value.as_int();
    if (!number || *number < 1) {
      add(value.mark, fmt::format("eval-min-prefill-ep must be a whole number >= 1, got {}", value.describe()),
          "write eval-min-prefill-ep: <n> with n >= 1, or drop the key");
      return;
    }
    entry.eval_min_prefill_ep = number;
  }

  bool field(const std::string& key, const YamlNode& value, Entry& entry) const {
    if (key == "config-keys")
      strings(value, key, entry.config_keys);
    else if (key == "description")
      strings(value, key, entry.description, &entry.description_lines);
    else if (key == "scenario-type")
      scenario_types(value, entry);
    else if (key == "pr-link")
      pr_link(value, entry);
    else if (key == "evals-only")
      flag(value, key, entry.evals_only);
    else if (key == "all-evals")
      flag(value, key, entry.all_evals);
    else if (key == "append-only")
      flag(value, key, entry.append_only);
    else if (key == "eval-min-prefill-ep")
      min_prefill_ep(value, entry);
    else
      return false;
    return true;
  }

  void required(const YamlNode& item, const Entry& entry, bool has_pr_link) const {
    if (entry.config_keys.empty() && !has_key(item, "config-keys")) {
      add(item.mark, "config-keys is missing", "add config-keys: the list of config-key globs this change affects");
    }
    if (entry.description.empty() && !has_key(item, "description")) {
      add(item.mark, "description is missing", "add description: a list of what changed and why");
    }
    if (!has_pr_link) add(item.mark, "pr-link is missing", "add pr-link: the pull request's URL");
    if (entry.append_only && (entry.evals_only || entry.all_evals || entry.eval_min_prefill_ep)) {
      add(item.mark, "append-only cannot be combined with evals-only, all-evals or eval-min-prefill-ep",
          "drop append-only, or the eval selection keys");
    }
  }

  static bool has_key(const YamlNode& item, std::string_view key) {
    for (const auto& [name, value] : item.entries) {
      if (name.scalar == key) return true;
    }
    return false;
  }

  Entry read(const YamlNode& item) const {
    Entry entry;
    entry.line = item.mark.line;
    if (!item.is_map()) {
      add(item.mark, fmt::format("an entry must be a mapping, got {}", item.describe()),
          "write the entry as \"- config-keys:\" followed by its indented keys");
      return entry;
    }
    for (const auto& [key, value] : item.entries) {
      if (!field(key.scalar, value, entry)) {
        add(key.mark,
            fmt::format("unknown key '{}' (allowed: config-keys, scenario-type, description, pr-link, evals-only, "
                        "all-evals, append-only, eval-min-prefill-ep)",
                        key.scalar),
            "remove the key or correct its spelling");
      }
    }
    required(item, entry, has_key(item, "pr-link"));
    return entry;
  }
};

}  // namespace

std::vector<Entry> read_entries(const Source& file, const YamlNode& root, std::vector<Finding>& out) {
  std::vector<Entry> entries;
  entries.reserve(root.items.size());
  for (size_t index = 0; index < root.items.size(); ++index) {
    const EntryReader reader{file, out, static_cast<int>(index) + 1};
    entries.push_back(reader.read(root.items[index]));
  }
  return entries;
}

}  // namespace ix::changelog
