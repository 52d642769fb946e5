// What a shell recipe does with variables, line by line, well enough for review: the variables it
// exports or assigns, the variables it reads (`$X`, `${X...}`), and the files it sources
// (`source F` / `. F`, with `$(dirname "$0")`-style prefixes resolved by the file's name).
// Comments and the insides of single-quoted strings are ignored; heredoc bodies are kept (they
// are often the code that reads a variable).
#pragma once

#include <string>
#include <string_view>
#include <vector>

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

}  // namespace ix::review
