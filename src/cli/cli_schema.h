// The command line as data: every leaf subcommand of the ixbench CLI11 tree and its options, as
// JSON, for tests that must reach every option of every command without a hand-kept list
// (tests/integration/cli_options_test.cc). Printed by the hidden root flag `ixbench --cli-json`.
//
// {"global_options": [OPTION...], "commands": [{"path": "bench serve", "description": "...",
//   "options": [OPTION...]}...]}
// OPTION: {"name": "--tp", "names": ["--tp"], "positional": false, "flag": false,
//   "expected_min": 1, "expected_max": 1 (-1: unbounded), "default": "1" ("" when none),
//   "required": false, "type": "INT", "choices": [] (from an IsMember check), "excludes": [...],
//   "needs": [...], "description": "..."}
// Help, help-all and version flags and the --cli-json flag itself are left out; commands are in
// CLI11's registration order.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace ix::cli {

// `root` after every command was set up; `skip` is an option of `root` to leave out (the flag
// that asks for this listing).
std::string describe_commands_json(const CLI::App& root, const CLI::Option* skip);

// CLI11's help with the usage line first and naming the full command path
// ("Usage: ixbench bench serve [OPTIONS]"), however help() was reached (`--help`, or main.cc
// printing a command group's help). Installed on the root before commands are added, so every
// subcommand inherits it.
class UsageFirstFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override;
};

// "ixbench bench serve": the names from the root down to `app`.
std::string command_path(const CLI::App& app);

}  // namespace ix::cli
