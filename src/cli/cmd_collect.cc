// `ixbench collect DIR EXP_NAME`: every JSON file under DIR (a sweep's agg_*.json records) in one
// JSON list, agg_<EXP_NAME>.json, as InferenceX's utils/collect_results.py writes it. Files are
// taken in path order (the script takes the directory walk's order, which the file system
// decides); a file that is not JSON is an error naming it, and nothing is written.
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/file_io.h"
#include "common/json_io.h"

namespace ix::cli {
namespace {

struct Flags {
  std::string dir;
  std::string exp_name;
  std::string out;  // default: agg_<EXP_NAME>.json
};

int run(const Flags& f) {
  auto files = files::files_under(f.dir, ".json");
  if (!files) return report_error(files.error());
  boost::json::array records;
  for (const auto& path : *files) {
    auto value = json::read_file(path);
    if (!value) return report_error(value.error());
    records.push_back(std::move(*value));
  }
  const std::filesystem::path out = f.out.empty() ? "agg_" + f.exp_name + ".json" : f.out;
  std::string text = json::to_pretty_string(records);
  if (auto ok = files::write_file(out, std::string_view(text).substr(0, text.size() - 1)); !ok)
    return report_error(ok.error());
  fmt::print("{}: {} records\n", out.string(), records.size());
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* cmd = root.add_subcommand("collect", "a sweep's agg_*.json records in one list (collect_results.py)");
  auto flags = std::make_shared<Flags>();
  cmd->add_option("dir", flags->dir, "directory searched for *.json (recursively)")->required();
  cmd->add_option("exp_name", flags->exp_name, "experiment name: the output is agg_<exp_name>.json")->required();
  cmd->add_option("--out", flags->out, "output file (default: agg_<exp_name>.json)");
  registry.on_run(cmd, [flags] { return run(*flags); });
}

}  // namespace
IX_REGISTER_COMMAND(collect, setup);
}  // namespace ix::cli
