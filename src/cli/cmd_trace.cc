// `ixbench trace stats FILE`: what an agentic trace holds (sessions, turns, subagents, ISL/OSL and
// gap distributions, theoretical prefix-cache hit), as a table or JSON.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "common/json_io.h"
#include "common/sanitize.h"
#include "workload/trace.h"

namespace ix::cli {
namespace {

struct TraceStatsOptions {
  std::string file;
  std::string format = "table";
  std::string trace_format = "auto";
  int64_t block_size = 0;  // 0: the trace's own
};

workload::TraceFormat parse_trace_format(const std::string& name) {
  if (name == "mooncake") return workload::TraceFormat::kMooncake;
  if (name == "session") return workload::TraceFormat::kSession;
  return workload::TraceFormat::kAuto;
}

std::string block_sizes_text(const workload::TraceStats& stats) {
  std::string text;
  for (int64_t size : stats.block_sizes) text += fmt::format("{}{}", text.empty() ? "" : ", ", size);
  return text;
}

// ---- JSON

boost::json::object distribution_json(const workload::Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max}};
}

std::string stats_json(const workload::TraceStats& stats, const std::string& file) {
  boost::json::array block_sizes;
  for (int64_t size : stats.block_sizes) block_sizes.push_back(size);
  const boost::json::object out{
      {"file", storable(file)},
      {"format", std::string(workload::trace_format_name(stats.format))},
      {"sessions", stats.sessions},
      {"turns", stats.turns},
      {"subagents",
       boost::json::object{
           {"count", stats.subagents}, {"max_depth", stats.max_subagent_depth}, {"max_fan_out", stats.max_fan_out}}},
      {"block_sizes", std::move(block_sizes)},
      {"isl", distribution_json(stats.isl)},
      {"osl", distribution_json(stats.osl)},
      {"gap_s", distribution_json(stats.gap_s)},
      {"think_time_s", distribution_json(stats.think_time_s)},
      {"prefix_cache_hit",
       boost::json::object{
           {"hit_blocks", stats.hit_blocks}, {"total_blocks", stats.total_blocks}, {"ratio", stats.prefix_hit()}}},
  };
  return json::to_pretty_string(out);
}

// ---- Table

std::string distribution_row(std::string_view name, const workload::Distribution& d, int decimals) {
  if (d.count == 0) return fmt::format("{:<16}{:>8}  (none)\n", name, 0);
  return fmt::format("{:<16}{:>8}{:>12.{}f}{:>12.{}f}{:>12.{}f}{:>12.{}f}{:>12.{}f}\n", name, d.count, d.mean, decimals,
                     d.p50, decimals, d.p90, decimals, d.p99, decimals, d.max, decimals);
}

std::string stats_table(const workload::TraceStats& stats, const std::string& file) {
  std::string out = fmt::format("trace       {} ({})\n", printable(file), workload::trace_format_name(stats.format));
  out += fmt::format("sessions    {}\n", stats.sessions);
  out += fmt::format("turns       {}\n", stats.turns);
  out += fmt::format("subagents   {} (max depth {}, max fan-out {})\n", stats.subagents, stats.max_subagent_depth,
                     stats.max_fan_out);
  out += fmt::format("block size  {}\n", block_sizes_text(stats));
  out += fmt::format("prefix-cache hit (theoretical)  {:.1f} % ({} of {} blocks)\n\n", 100.0 * stats.prefix_hit(),
                     stats.hit_blocks, stats.total_blocks);
  out += fmt::format("{:<16}{:>8}{:>12}{:>12}{:>12}{:>12}{:>12}\n", "", "count", "mean", "p50", "p90", "p99", "max");
  out += distribution_row("ISL (tokens)", stats.isl, 1);
  out += distribution_row("OSL (tokens)", stats.osl, 1);
  out += distribution_row("gap (s)", stats.gap_s, 3);
  out += distribution_row("think time (s)", stats.think_time_s, 3);
  return out;
}

int run_trace_stats(const TraceStatsOptions& options) {
  workload::TraceLoadOptions load;
  load.format = parse_trace_format(options.trace_format);
  if (options.block_size != 0) load.block_size = options.block_size;
  auto trace = workload::load_trace(options.file, load);
  if (!trace) return report_error(trace.error());
  const workload::TraceStats stats = workload::trace_stats(*trace);
  const std::string text =
      options.format == "json" ? stats_json(stats, options.file) : stats_table(stats, options.file);
  std::fputs(text.c_str(), stdout);
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* group = find_or_add_group(root, "trace", "agentic traces (session trees, Mooncake JSONL)");
  auto* stats =
      group->add_subcommand("stats",
                            "print what a trace holds: sessions, turns, subagents, ISL/OSL and gap distributions, "
                            "theoretical prefix-cache hit");
  auto options = std::make_shared<TraceStatsOptions>();
  stats
      ->add_option("file", options->file,
                   "the trace: Mooncake JSONL, a session trace (.json: one object; .jsonl: one per line) or a "
                   "directory of session .json files")
      ->required();
  stats->add_option("--format", options->format, "output: table or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  stats
      ->add_option("--trace-format", options->trace_format,
                   "the trace's format: auto (a Mooncake line has input_length), mooncake or session")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "mooncake", "session"}));
  stats
      ->add_option("--block-size", options->block_size,
                   "tokens per hash id for every session (default: the trace's block_size; Mooncake 512)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30).description("an integer >= 1"));
  registry.on_run(stats, [options] { return run_trace_stats(*options); });
}

}  // namespace

IX_REGISTER_COMMAND(trace, setup);

}  // namespace ix::cli
