// ixbench entry point: builds the CLI from registered subcommands, maps every failure to an exit
// code (never an uncaught exception), and runs the selected subcommand.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "cli/cli_schema.h"
#include "cli/command.h"
#include "cli/version.h"
#include "common/log.h"
#include "common/sanitize.h"

namespace ix::cli {
namespace {

std::vector<std::pair<std::string, SetupFn>>& registered() {
  static std::vector<std::pair<std::string, SetupFn>> commands;
  return commands;
}

class Registry final : public CommandRegistry {
 public:
  void on_run(CLI::App* app, RunFn run) override { runs_[app] = std::move(run); }
  const RunFn* find(CLI::App* app) const {
    auto it = runs_.find(app);
    return it == runs_.end() ? nullptr : &it->second;
  }

 private:
  std::map<CLI::App*, RunFn> runs_;
};

// The innermost subcommand the user selected, or nullptr.
CLI::App* selected_leaf(CLI::App& app) {
  CLI::App* current = &app;
  while (true) {
    auto subs = current->get_subcommands();
    if (subs.empty()) return current == &app ? nullptr : current;
    current = subs.front();
  }
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "ixbench: error: %s (see 'ixbench --help')\n", printable(message).c_str());
  return kExitUsage;
}

// CLI11 reports a value its option's type cannot hold as "Could not convert: --tp = abc"; say what
// the option takes instead (its type and default), as the project's own checks do.
std::string conversion_message(CLI::App& app, const CLI::ConversionError& error) {
  static const std::string prefix = "Could not convert: ";
  const std::string what = error.what();
  const size_t eq = what.find(" = ");
  if (what.rfind(prefix, 0) != 0 || eq == std::string::npos) return what;
  const std::string name = what.substr(prefix.size(), eq - prefix.size());
  const std::string value = what.substr(eq + 3);
  CLI::App* leaf = selected_leaf(app);
  const CLI::Option* option = (leaf ? leaf : &app)->get_option_no_throw(name);
  if (option == nullptr) return what;
  // Integer text reaches conversion only as plain decimal (read_integers_as_decimal), so an
  // integer option fails here only on a value its type cannot hold (5000000000 for an int32).
  const std::string type = option->get_type_name();
  const std::string expected = type.find("INT") != std::string::npos ? "is out of range for this option"
                               : type.rfind("FLOAT", 0) == 0         ? "is not a number"
                                                                     : "is not a value of type " + type;
  const std::string fallback = option->get_default_str();
  return fmt::format("{}: '{}' {}{}", name, value, expected,
                     fallback.empty() ? "" : fmt::format(" (default {})", fallback));
}

// Every integer option reads its text as Python's int() does (vLLM's flags are argparse ints):
// decimal only ("010" is 10, CLI11 read it as octal 8), and a value beyond 64 bits is an error
// quoting the text (CLI11 saturated int64 options at 2^63-1 and went on).
void read_integers_as_decimal(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type.rfind("UINT", 0) == 0) {
      option->transform(unsigned_integer());
    } else if (type.rfind("INT", 0) == 0) {
      option->transform(signed_integer());
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) read_integers_as_decimal(*sub);
}

// A scalar option given twice keeps its last value, as Python's argparse does (vLLM's and
// InferenceX's scripts append overrides to a base command line); CLI11 refuses by default.
void take_last_of_repeated_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_size_max() == 1 && option->get_expected_max() == 1)
      option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) take_last_of_repeated_options(*sub);
}

int run_main(int argc, char** argv) {
  CLI::App app("ixbench: continuous LLM-inference benchmark (InferenceX-compatible)", "ixbench");
  app.set_version_flag("--version", fmt::format("ixbench {} (git {})", version_string(), git_hash()));
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "stderr log level: trace|debug|info|warn|error|off")->capture_default_str();
  app.fallthrough();
  // Before the commands are added: each subcommand takes its parent's formatter.
  app.formatter(std::make_shared<UsageFirstFormatter>());
  // Hidden (no group): every leaf command and its options as JSON, for the tests that run each
  // option of each command (cli_schema.h).
  bool cli_json = false;
  CLI::Option* cli_json_flag =
      app.add_flag("--cli-json", cli_json, "print every command and its options as JSON")->group("");

  Registry registry;
  auto& commands = registered();
  std::sort(commands.begin(), commands.end());
  for (const auto& [name, setup] : commands) setup(app, registry);
  take_last_of_repeated_options(app);
  read_integers_as_decimal(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    if (selected_leaf(app) == nullptr) {
      for (int index = 1; index < argc; ++index) {
        std::string arg = argv[index];
        if (!arg.empty() && arg[0] != '-') return usage_error(fmt::format("unknown command '{}'", arg));
      }
    }
    // CLI11 lists the extras last-first ("1 --top-k"); name them in command-line order, with the
    // command they were given to.
    if (CLI::App* leaf = selected_leaf(app)) {
      std::vector<std::string> extras;
      for (const CLI::App* at = leaf; at != nullptr; at = at->get_parent()) {
        auto mine = at->remaining();
        extras.insert(extras.begin(), mine.begin(), mine.end());
      }
      std::string path;
      for (const CLI::App* at = leaf; at != nullptr && at->get_parent() != nullptr; at = at->get_parent())
        path = at->get_name() + (path.empty() ? "" : " " + path);
      if (!extras.empty()) {
        fmt::print(stderr,
                   "ixbench: error: 'ixbench {}' does not take {}: unknown option or extra value (see "
                   "'ixbench {} --help')\n",
                   path, printable(fmt::format("{}", fmt::join(extras, " "))), path);
        return kExitUsage;
      }
    }
    return usage_error(e.what());
  } catch (const CLI::ConversionError& e) {
    return usage_error(conversion_message(app, e));
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }

  if (cli_json) {
    std::fputs(describe_commands_json(app, cli_json_flag).c_str(), stdout);
    return kExitOk;
  }

  auto level = log::parse_level(log_level);
  if (!level) return usage_error(level.error().message());
  log::set_level(*level);

  CLI::App* leaf = selected_leaf(app);
  if (leaf == nullptr) {
    if (argc <= 1) {
      std::fputs(app.help().c_str(), stdout);
      return kExitUsage;
    }
    return usage_error("a command is required");
  }
  const RunFn* run = registry.find(leaf);
  if (run == nullptr) {
    // A command group (`ixbench sim`) without its subcommand.
    std::fputs(leaf->help().c_str(), stderr);
    return kExitUsage;
  }
  return (*run)();
}

}  // namespace

bool register_command(std::string_view name, SetupFn setup) {
  registered().emplace_back(std::string(name), setup);
  return true;
}

CLI::App* find_or_add_group(CLI::App& parent, const std::string& name, const std::string& description) {
  for (CLI::App* sub : parent.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == name) return sub;
  }
  return parent.add_subcommand(name, description);
}

namespace {

// Integer text as Python's int() reads it (optional sign, decimal digits), rewritten to plain
// decimal; `not_whole` completes the error for text that is not such a number of type T.
template <typename T>
CLI::Validator integer_text(std::string not_whole) {
  return CLI::Validator(
      [not_whole](std::string& text) -> std::string {
        std::string_view digits = text;
        if (digits.starts_with('+')) digits.remove_prefix(1);
        T value{};
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        const bool well_formed = !digits.empty() && !(text.starts_with('+') && digits.starts_with('-')) &&
                                 end == digits.data() + digits.size();
        if (well_formed && ec == std::errc::result_out_of_range)
          return "'" + text + "' is out of range for this option";
        if (!well_formed || ec != std::errc()) return "'" + text + "' " + not_whole;
        text = std::to_string(value);
        return {};
      },
      "");
}

}  // namespace

CLI::Validator unsigned_integer() {
  return integer_text<uint64_t>("is not a whole number >= 0");
}

CLI::Validator signed_integer() {
  return integer_text<int64_t>("is not a whole number");
}

int report_error(const Error& error) {
  // Messages quote files, configs and servers: no control character reaches the terminal (the
  // line breaks are the ones between diagnostics).
  constexpr size_t kMaxMessage = size_t{1} << 20;
  std::fprintf(stderr, "ixbench: error: %s\n", printable_lines(error.message(), kMaxMessage).c_str());
  return kExitFailure;
}

}  // namespace ix::cli

int main(int argc, char** argv) {
  try {
    return ix::cli::run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ixbench: internal error: %s\n", ix::printable(e.what()).c_str());
    return ix::cli::kExitFailure;
  } catch (...) {
    std::fprintf(stderr, "ixbench: internal error: unknown exception\n");
    return ix::cli::kExitFailure;
  }
}
