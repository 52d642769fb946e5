#include "cli/cli_schema.h"

#include <algorithm>
#include <boost/json.hpp>
#include <set>
#include <string_view>
#include <vector>

#include "common/json_io.h"

namespace ix::cli {
namespace {

std::string primary_name(const CLI::Option& option) {
  if (!option.get_lnames().empty()) return "--" + option.get_lnames().front();
  if (!option.get_snames().empty()) return "-" + option.get_snames().front();
  return option.get_single_name();
}

// CLI11 appends each check's description to the type name ("TEXT:{json,table}"); an IsMember
// check's is the set in braces.
boost::json::array choices_of(const std::string& type) {
  boost::json::array choices;
  const size_t open = type.find(":{");
  if (open == std::string::npos) return choices;
  const size_t close = type.find('}', open);
  if (close == std::string::npos) return choices;
  std::string_view items = std::string_view(type).substr(open + 2, close - open - 2);
  while (!items.empty()) {
    const size_t comma = items.find(',');
    choices.emplace_back(items.substr(0, comma));
    if (comma == std::string_view::npos) break;
    items.remove_prefix(comma + 1);
  }
  return choices;
}

boost::json::array names_of(const std::set<CLI::Option*>& options) {
  std::vector<std::string> sorted;
  for (const CLI::Option* option : options) sorted.push_back(primary_name(*option));
  std::sort(sorted.begin(), sorted.end());
  boost::json::array names;
  for (auto& name : sorted) names.emplace_back(std::move(name));
  return names;
}

boost::json::object describe_option(const CLI::Option& option) {
  const int max_items = option.get_items_expected_max();
  boost::json::object out;
  out["name"] = primary_name(option);
  boost::json::array names;
  for (const auto& name : option.get_lnames()) names.emplace_back("--" + name);
  for (const auto& name : option.get_snames()) names.emplace_back("-" + name);
  if (names.empty()) names.emplace_back(primary_name(option));
  out["names"] = std::move(names);
  out["positional"] = option.get_positional() && !option.nonpositional();
  out["flag"] = max_items == 0;
  out["expected_min"] = option.get_items_expected_min();
  out["expected_max"] = max_items >= CLI::detail::expected_max_vector_size ? -1 : max_items;
  out["default"] = option.get_default_str();
  out["required"] = option.get_required();
  const std::string type = option.get_type_name();
  out["type"] = type;
  out["choices"] = choices_of(type);
  out["excludes"] = names_of(option.get_excludes());
  out["needs"] = names_of(option.get_needs());
  out["description"] = option.get_description();
  return out;
}

bool skipped(const CLI::App& app, const CLI::Option* option, const CLI::Option* skip) {
  return option == skip || option == app.get_help_ptr() || option == app.get_help_all_ptr() ||
         option == app.get_version_ptr();
}

boost::json::array describe_options(const CLI::App& app, const CLI::Option* skip) {
  boost::json::array options;
  for (const CLI::Option* option : app.get_options()) {
    if (!skipped(app, option, skip)) options.push_back(describe_option(*option));
  }
  return options;
}

void add_leaves(const CLI::App& app, boost::json::array& commands) {
  auto subcommands = app.get_subcommands([](const CLI::App*) { return true; });
  // Unnamed subcommands are CLI11 option groups, not commands.
  std::erase_if(subcommands, [](const CLI::App* sub) { return sub->get_name().empty(); });
  // A leaf is a command; so is a group with options of its own (`report --db --out` beside
  // `report table`). A group without options (`sim`) only holds commands.
  boost::json::array options = describe_options(app, nullptr);
  if (app.get_parent() != nullptr && (subcommands.empty() || !options.empty())) {
    const std::string path = command_path(app);
    boost::json::object command;
    command["path"] = path.substr(path.find(' ') + 1);
    command["description"] = app.get_description();
    command["options"] = std::move(options);
    commands.push_back(std::move(command));
  }
  for (const CLI::App* sub : subcommands) add_leaves(*sub, commands);
}

}  // namespace

std::string command_path(const CLI::App& app) {
  std::string path;
  for (const CLI::App* at = &app; at != nullptr; at = at->get_parent()) {
    if (at->get_name().empty()) continue;
    path = path.empty() ? at->get_name() : at->get_name() + " " + path;
  }
  return path;
}

std::string describe_commands_json(const CLI::App& root, const CLI::Option* skip) {
  boost::json::object out;
  out["global_options"] = describe_options(root, skip);
  boost::json::array commands;
  add_leaves(root, commands);
  out["commands"] = std::move(commands);
  return json::to_pretty_string(out);
}

std::string UsageFirstFormatter::make_help(const CLI::App* app, std::string, CLI::AppFormatMode mode) const {
  if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
  std::string out = make_usage(app, command_path(*app));
  if (const std::string description = make_description(app); !description.empty()) out += "\n" + description;
  out += make_positionals(app);
  out += make_groups(app, mode);
  out += make_subcommands(app, mode);
  out += "\n" + make_footer(app);
  return out;
}

}  // namespace ix::cli
