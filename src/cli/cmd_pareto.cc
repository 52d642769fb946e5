// `ixbench pareto`: Pareto frontiers of aggregated records per curve, and their coverage
// (SPEC §10; metrics/pareto.h). Inputs: agg_*.json files, collect's lists, or directories of them.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "common/strings.h"
#include "metrics/pareto.h"

namespace ix::cli {
namespace {

namespace bj = boost::json;

struct Flags {
  std::vector<std::string> results;
  std::string x = "median_e2el";
  std::string y = "tput_per_gpu";
  std::vector<std::string> group_by{"infmax_model_prefix", "isl", "osl", "hw", "precision"};
  std::string format = "table";
};

struct Records {
  std::vector<bj::object> records;
  std::vector<std::string> sources;  // the file of each record
};

Result<void> add_file(const std::filesystem::path& path, Records& out) {
  auto value = json::read_file(path);
  if (!value) return std::unexpected(value.error());
  auto add = [&](const bj::value& v) -> Result<void> {
    if (!v.is_object())
      return fail(ErrorCode::kInvalidArgument, path.string() + ": expected agg records (JSON objects)");
    out.records.push_back(v.as_object());
    out.sources.push_back(path.string());
    return {};
  };
  if (value->is_array()) {
    for (const auto& item : value->as_array())
      if (auto ok = add(item); !ok) return ok;
    return {};
  }
  return add(*value);
}

Result<Records> load(const std::vector<std::string>& inputs) {
  Records out;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(input, ec)) {
      if (auto ok = add_file(input, out); !ok) return std::unexpected(ok.error());
      continue;
    }
    auto files = files::files_under(input, ".json", "agg_");
    if (!files) return std::unexpected(files.error());
    for (const auto& file : *files)
      if (auto ok = add_file(file, out); !ok) return std::unexpected(ok.error());
  }
  if (out.records.empty()) return fail(ErrorCode::kInvalidArgument, "no agg records in the given --results");
  return out;
}

std::string conc_of(const bj::object& record) {
  const bj::value* c = record.if_contains("conc");
  return c == nullptr ? "-" : bj::serialize(*c);
}

void print_table(const std::vector<metrics::ParetoCurve>& curves, const Records& in, const Flags& f) {
  for (const auto& curve : curves) {
    fmt::print("{}: {}: {}\n", curve.key, metrics::coverage_text(curve), curve.pass() ? "PASS" : "WARN");
    fmt::print("  {:>14} {:>14} {:>6}\n", f.x, f.y, "conc");
    for (const auto& p : curve.frontier)
      fmt::print("  {:>14.6g} {:>14.6g} {:>6}\n", p.x, p.y, conc_of(in.records[p.record]));
    for (const auto& d : curve.dropped)
      fmt::print("  dropped: {} conc {} ({})\n", in.sources[d.record], conc_of(in.records[d.record]), d.why);
  }
}

bj::array curves_json(const std::vector<metrics::ParetoCurve>& curves, const Records& in) {
  bj::array out;
  for (const auto& curve : curves) {
    bj::array frontier;
    for (const auto& p : curve.frontier)
      frontier.push_back(
          bj::object{{"x", p.x},
                     {"y", p.y},
                     {"conc", in.records[p.record].contains("conc") ? in.records[p.record].at("conc") : nullptr},
                     {"source", in.sources[p.record]}});
    bj::array dropped;
    for (const auto& d : curve.dropped) dropped.push_back(bj::object{{"source", in.sources[d.record]}, {"why", d.why}});
    out.push_back(bj::object{{"curve", curve.key},
                             {"coverage", curve.pass() ? "PASS" : "WARN"},
                             {"points", static_cast<int64_t>(curve.points.size())},
                             {"frontier", std::move(frontier)},
                             {"dropped", std::move(dropped)}});
  }
  return out;
}

int run(const Flags& f) {
  if (f.format != "table" && f.format != "json")
    return report_error(
        Error(ErrorCode::kInvalidArgument, fmt::format("--format '{}': choose table or json", f.format)));
  auto in = load(f.results);
  if (!in) return report_error(in.error());
  const auto curves = metrics::pareto_curves(in->records, f.x, f.y, f.group_by);
  if (f.format == "json") {
    fmt::print("{}", json::to_pretty_string(curves_json(curves, *in)));
  } else {
    print_table(curves, *in, f);
  }
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* cmd = root.add_subcommand("pareto", "Pareto frontiers per curve and their coverage (SPEC §10)");
  auto flags = std::make_shared<Flags>();
  cmd->add_option("--results", flags->results,
                  "agg_*.json files, collect lists, or directories (their agg_*.json files)")
      ->required();
  cmd->add_option("--x", flags->x, "x metric: median_e2el, p90_e2el, median_intvty, median_ttft, ...")
      ->capture_default_str();
  cmd->add_option("--y", flags->y, "y metric: tput_per_gpu, output_tput_per_gpu, ...")->capture_default_str();
  cmd->add_option("--group-by", flags->group_by, "record fields that make a curve")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--format", flags->format, "table | json")->capture_default_str();
  registry.on_run(cmd, [flags] { return run(*flags); });
}

}  // namespace
IX_REGISTER_COMMAND(pareto, setup);
}  // namespace ix::cli
