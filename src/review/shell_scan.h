// What a shell recipe does with variables, line by line, well enough for review: the variables it
// exports or assigns, the variables it reads (`$X`, `${X...}`), and the files it sources
// (`source F` / `. F`, with `$(dirname "$0")`-style prefixes resolved by the file's name).
// Comments and the insides of single-quoted strings are ignored; heredoc bodies are kept (they
// are often the code that reads a variable).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "review/repo_tree.h"

namespace ix::review {

struct ShellAssignment {
  std::string name;
  int line = 0;
  bool exported = false;
};

struct ShellScan {
  std::vector<ShellAssignment> assignments;
  std::vector<std::string> reads;    // names read, in first-read order, each once
  std::vector<std::string> sources;  // sourced paths as written (quotes removed)
};

ShellScan scan_shell(std::string_view text);

// True for repository shell recipes review inspects (*.sh).
bool is_shell_recipe(std::string_view path);

// One value a script gives a setting.
struct SettingValue {
  std::string value;  // the literal as written ("2.49", "8192"); "" when it is no literal review can
                      // read (an expression, a command substitution, a variable nothing assigns)
  int line = 0;       // the literal's line (an assignment's, when the setting takes a variable)
  int site = 0;       // the line that names the setting
};

// The values a script gives `name`, in line order: `NAME=v` / `export NAME=v`, a flag (`--name v`,
// `--name=v`), a JSON or YAML key (`"name": v`, `\"name\": v`, `name: v`; heredoc bodies count),
// and `${NAME:-v}` defaults. A value `$VAR` / `${VAR}` is followed to VAR's values in the same
// script. Comments are skipped; reads (`$NAME`) and comparisons are not values.
std::vector<SettingValue> setting_values(std::string_view text, std::string_view name);

// A recipe and the scripts it sources, transitively (`source` arguments resolved by file name: the
// recipe's folder first, then anywhere in the tree), the recipe first; files the tree lacks are left out.
std::vector<std::string> sourced_scripts(const RepoTree& tree, const std::string& recipe);

}  // namespace ix::review
