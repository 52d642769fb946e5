// Subcommand registration.
//
// Each subcommand lives in its own file `cmd_<name>.cc` in this directory: it parses flags with
// CLI11 into a plain options struct and calls one library. It registers itself with
// IX_REGISTER_COMMAND, so adding a subcommand never touches main.cc.
//
// Exit codes: 0 success; 1 the command ran and failed (invalid config, failed run, internal
// error); 2 usage error (unknown command, bad flag). See kExit* below.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string_view>

#include "common/error.h"

namespace ix::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

using RunFn = std::function<int()>;

class CommandRegistry {
 public:
  virtual ~CommandRegistry() = default;
  // Attach what runs when `app` is the innermost subcommand on the command line.
  virtual void on_run(CLI::App* app, RunFn run) = 0;
};

using SetupFn = void (*)(CLI::App& root, CommandRegistry& registry);

// Static registration; returns true so it can initialise a namespace-scope constant.
bool register_command(std::string_view name, SetupFn setup);

// A command group shared by several files (e.g. `sim` holds `serve` and `predict`, each in its own
// cmd_ file): returns the existing subcommand `name` of `parent`, or adds it.
CLI::App* find_or_add_group(CLI::App& parent, const std::string& name, const std::string& description);

// Integer text as Python's int() reads it, rewritten to plain decimal for CLI11 to convert (it
// reads "010" as octal 8 and saturates out-of-range text at +-(2^63-1) or wraps "-1" to 2^64-1,
// where argparse, numpy and Python read or refuse them); anything else is refused quoting the text
// as given (a usage error, exit 2). run_main attaches them to every INT / UINT option as
// Option::transform, so commands need not.
CLI::Validator unsigned_integer();
CLI::Validator signed_integer();

// Prints "ixbench: error: <message>" to stderr and returns kExitFailure.
int report_error(const Error& error);

}  // namespace ix::cli

#define IX_REGISTER_COMMAND(name, setup) \
  [[maybe_unused]] static const bool ix_command_registered_##name = ::ix::cli::register_command(#name, setup)
