// `ixbench sim predict`: predicts the InferenceX fixed-length benchmark for each concurrency by
// running the engine simulator in virtual time (src/sim/predict.h), or with --trace (or an
// agentic row) the agentic replay `bench replay` would make (cli/predict_trace.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "cli/engine_flags.h"
#include "cli/predict_jobs.h"
#include "cli/predict_trace.h"
#include "cli/replay_flags.h"
#include "common/clock.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "common/strings.h"
#include "metrics/statistics.h"
#include "sim/predict.h"
#include "sim/sweep_row.h"

namespace ix::cli {
namespace {

// "1,4,16" -> {1, 4, 16}: every item a positive integer, none repeated.
Result<std::vector<int32_t>> parse_concurrencies(const std::string& text) {
  std::vector<int32_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    int32_t value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || value < 1)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--conc '{}': '{}' is not a positive integer (e.g. --conc 1,4,16,64)", text, item));
    if (std::find(out.begin(), out.end(), value) != out.end())
      return fail(ErrorCode::kInvalidArgument, fmt::format("--conc '{}' lists {} twice", text, value));
    out.push_back(value);
    start = comma + 1;
  }
  return out;
}

// One raw result file per predicted configuration and concurrency: the name carries everything
// that distinguishes two predictions written into the same --result-dir.
std::string result_file_name(const sim::ResolvedEngine& engine, const sim::PredictOptions& options, int32_t conc) {
  const sim::EngineConfig& c = engine.config;
  auto side = [](const sim::WorkerTopology& t) {
    return fmt::format("{}x-tp{}ep{}{}", t.num_workers, t.tp, t.ep, t.dp_attn ? "dpa" : "");
  };
  const std::string topology = c.disagg ? fmt::format("p{}-d{}", side(c.prefill), side(c.decode))
                                        : fmt::format("tp{}ep{}{}{}", c.tp, c.ep, c.dp_attn ? "dpa" : "",
                                                      c.num_replicas > 1 ? fmt::format("x{}", c.num_replicas) : "");
  return fmt::format("sim_{}_{}_{}_{}_{}_{}_isl{}_osl{}_conc{}.json", engine.model.name, engine.hardware.name,
                     c.precision, ascii_lower(c.framework), topology, sim::spec_decoding_name(c.spec_decoding),
                     options.isl, options.osl, conc);
}

struct PredictFlags {
  EngineFlags engine;
  std::optional<int32_t> isl;
  std::optional<int32_t> osl;
  std::vector<std::string> concurrencies;  // each "1,4,16"; repeated --conc flags add up
  std::optional<int32_t> num_prompts;
  double random_range_ratio = 0.8;
  double shared_prefix_fraction = 0.0;
  std::string percentiles = "90,99,99.9";
  std::string row;
  std::string row_file;
  std::string format = "json";
  std::string result_dir;
  bool explain = false;
  double prefill_sensitivity = 0;    // 0 = off; else predict again with prefill cost x (1 -/+ this)
  bench::BenchReplayOptions replay;  // --trace and bench replay's schedule flags
  std::string jobs_from;             // a sweep matrix: every row predicted (cli/predict_jobs.h)
  std::string out_dir = "predicted";
  std::string db;
  int jobs = 0;
  std::vector<const CLI::Option*> replay_flags;  // what a fixed-length prediction refuses
  const CLI::Option* concurrency_flag = nullptr;
  const CLI::Option* out_option = nullptr;
  const CLI::Option* duration_flag = nullptr;
};

std::string utc_date() {
  return utc_now_text("%Y%m%d-%H%M%S");
}

std::string table(const std::vector<sim::PredictPoint>& points) {
  std::string out = fmt::format("{:>6} {:>12} {:>12} {:>12} {:>12} {:>14} {:>14} {:>8}\n", "conc", "ttft_p50_ms",
                                "tpot_p50_ms", "itl_p50_ms", "e2el_p50_s", "tput_per_gpu", "intvty_p50", "preempt");
  for (const auto& p : points) {
    auto get = [&](std::string_view key) {
      auto it = p.result.find(key);
      return it != p.result.end() && it->value().is_number() ? it->value().to_number<double>() : 0.0;
    };
    out += fmt::format("{:>6} {:>12.1f} {:>12.2f} {:>12.2f} {:>12.2f} {:>14.1f} {:>14.1f} {:>8}\n", p.conc,
                       get("median_ttft_ms"), get("median_tpot_ms"), get("median_itl_ms"), get("median_e2el_ms") / 1000,
                       get("tput_per_gpu"), get("median_intvty"), p.num_preemptions);
  }
  return out;
}

// --prefill-sensitivity F: the same concurrency predicted with the prefill cost x (1 - F) and
// x (1 + F) (`sim_prefill_sensitivity` in each result). Where TTFT is a queue at the prefill
// side's capacity edge it moves by multiples while TPOT and throughput move by a few per cent
// (docs/simulator.md, "knife edge"): the range says how far to trust that point's TTFT.
constexpr double kKnifeEdgeRatio = 2.0;  // TTFT across the range, high over low

Result<void> add_prefill_sensitivity(const sim::ResolvedEngine& engine, const sim::PredictOptions& options,
                                     double fraction, std::vector<sim::PredictPoint>& points) {
  const std::array<double, 2> factors = {1.0 - fraction, 1.0 + fraction};
  for (auto& point : points) {
    boost::json::array ttft, tpot, tput;
    for (double factor : factors) {
      sim::ResolvedEngine scaled = engine;
      scaled.efficiency.prefill_scale *= factor;
      auto other = sim::predict_point(scaled, options, point.conc);
      if (!other)
        return fail(other.error().with_context(fmt::format("--prefill-sensitivity, prefill cost x{}", factor)));
      ttft.push_back(other->median_ttft_s * 1000.0);
      tpot.push_back(other->median_tpot_s * 1000.0);
      tput.push_back(other->tput_per_gpu);
    }
    const double low = ttft[0].as_double(), high = ttft[1].as_double();
    boost::json::object out;
    out["prefill_cost_factors"] = boost::json::array{factors[0], factors[1]};
    out["median_ttft_ms"] = std::move(ttft);
    out["median_tpot_ms"] = std::move(tpot);
    out["tput_per_gpu"] = std::move(tput);
    out["ttft_knife_edge"] = low > 0 && high >= kKnifeEdgeRatio * low;
    point.result["sim_prefill_sensitivity"] = std::move(out);
  }
  return {};
}

std::string sensitivity_table(const std::vector<sim::PredictPoint>& points, double fraction) {
  std::string out =
      fmt::format("\nwith the prefill cost x{:.2f} / x{:.2f} (--prefill-sensitivity):\n", 1 - fraction, 1 + fraction);
  out += fmt::format("{:>6} {:>25} {:>21} {:>25}\n", "conc", "ttft_p50_ms", "tpot_p50_ms", "tput_per_gpu");
  bool any_edge = false;
  for (const auto& p : points) {
    const auto& s = p.result.at("sim_prefill_sensitivity").as_object();
    auto pair = [&](std::string_view key, int digits) {
      const auto& values = s.at(key).as_array();
      return fmt::format("{:.{}f} / {:.{}f}", values[0].as_double(), digits, values[1].as_double(), digits);
    };
    const bool edge = s.at("ttft_knife_edge").as_bool();
    any_edge = any_edge || edge;
    out += fmt::format("{:>6} {:>25} {:>21} {:>25}{}\n", p.conc, pair("median_ttft_ms", 1), pair("median_tpot_ms", 2),
                       pair("tput_per_gpu", 1), edge ? "  knife edge" : "");
  }
  if (any_edge)
    out += fmt::format(
        "knife edge: TTFT moves {}x or more within this range, far more than TPOT and throughput; the TTFT "
        "of such a point is a queue at the prefill capacity (docs/simulator.md)\n",
        kKnifeEdgeRatio);
  return out;
}

// The cost terms of the simulated steps (sim/cost_model.h CostBucket), as sim calibrate fits them.
constexpr std::array<std::string_view, sim::kNumBuckets> kCostTermNames = {
    "fixed_overheads", "weights_and_kv_reads", "decode_gemm",      "communication_and_kv_transfer",
    "api_overhead",    "per_request",          "decode_attention", "prefill",
    "frontend"};

// --explain: where a request's mean TTFT and TPOT go, by cost term: the time of the engine steps
// that ran while it waited for its first token (or between its tokens), plus its own API,
// front-end and KV-transfer delays. Idle engine time is in no term, and a step the request
// joined midway counts whole, so the terms add up to about the mean, not exactly.
boost::json::object cost_attribution(const sim::PredictPoint& point) {
  boost::json::object ttft, tpot;
  for (size_t b = 0; b < kCostTermNames.size(); ++b) {
    ttft[kCostTermNames[b]] = point.ttft_cost[b] * 1e3;
    tpot[kCostTermNames[b]] = point.tpot_cost[b] * 1e3;
  }
  return {{"ttft_mean_ms", std::move(ttft)}, {"tpot_mean_ms", std::move(tpot)}};
}

// "prefill 62%, frontend 21%, ..." for the largest terms of `costs` (seconds), at most `top`.
std::string largest_terms(const sim::CostBuckets& costs, size_t top) {
  double total = 0;
  for (double c : costs) total += c;
  std::vector<size_t> order(costs.size());
  for (size_t b = 0; b < order.size(); ++b) order[b] = b;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::string out;
  for (size_t i = 0; i < std::min(top, order.size()) && total > 0 && costs[order[i]] > 0; ++i)
    out +=
        fmt::format("{}{} {:.0f}%", out.empty() ? "" : ", ", kCostTermNames[order[i]], 100 * costs[order[i]] / total);
  return out.empty() ? "-" : out;
}

// What the flags and the row say: the engine, the lengths and concurrencies, the row's kind.
struct PredictInputs {
  sim::PredictOptions options;
  std::string scenario_type;
  double row_duration_s = 0;  // an agentic row's duration
};

Result<std::string> row_text_of(const PredictFlags& flags) {
  if (!flags.row.empty() && !flags.row_file.empty())
    return fail(ErrorCode::kInvalidArgument, "give --row or --row-file, not both");
  if (flags.row_file.empty()) return flags.row;
  auto text = files::read_text_file(flags.row_file, files::kMaxConfigFileBytes, "a sweep row JSON file");
  if (!text) return fail(text.error().with_context("--row-file"));
  if (text->find_first_not_of(" \t\r\n") == std::string::npos)
    return fail(ErrorCode::kParse, fmt::format("--row-file '{}' is empty", flags.row_file));
  return text;
}

Result<PredictInputs> predict_inputs(const PredictFlags& flags) {
  PredictInputs in;
  sim::PredictOptions& options = in.options;
  options.concurrencies.clear();
  // No built-in lengths: they come from --isl/--osl or the row.
  options.isl = 0;
  options.osl = 0;
  auto row_text = row_text_of(flags);
  if (!row_text) return fail(row_text.error());
  if (!row_text->empty()) {
    // The row decides the engine; flags it does not cover (limits, seed) still apply.
    sim::EngineConfig base = flags.engine.config;
    // --spec-decoding applies to a row that does not say (its own spec-decoding wins).
    auto spec = sim::parse_spec_decoding(flags.engine.spec_decoding);
    if (!spec) return fail(spec.error());
    base.spec_decoding = *spec;
    auto row = sim::parse_sweep_row_text(*row_text, base, flags.row_file.empty() ? "--row" : flags.row_file);
    if (!row) return fail(row.error());
    options.engine = row->engine;
    options.model_id = row->model_id;
    options.isl = row->isl;
    options.osl = row->osl;
    options.concurrencies = row->concurrencies;
    in.scenario_type = row->scenario_type;
    in.row_duration_s = row->duration_s;
  } else {
    auto config = engine_config_from_flags(flags.engine);
    if (!config) return fail(config.error());
    options.engine = *config;
    options.model_id = flags.engine.config.model;
  }
  if (flags.isl) options.isl = *flags.isl;
  if (flags.osl) options.osl = *flags.osl;
  if (!flags.concurrencies.empty()) {
    std::string joined;
    for (const auto& item : flags.concurrencies) joined += (joined.empty() ? "" : ",") + item;
    auto list = parse_concurrencies(joined);
    if (!list) return fail(list.error());
    options.concurrencies = *list;
  }
  return in;
}

Result<void> check_common_flags(const PredictFlags& flags) {
  for (const auto& [name, value] :
       {std::pair{"--isl", flags.isl}, {"--osl", flags.osl}, {"--num-prompts", flags.num_prompts}})
    if (value && *value < 1)
      return fail(ErrorCode::kInvalidArgument, fmt::format("{} must be >= 1, got {}", name, *value));
  if (!(flags.prefill_sensitivity >= 0 && flags.prefill_sensitivity < 1))
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--prefill-sensitivity must be a fraction in (0, 1), e.g. 0.1 for "
                            "+-10 %, or 0 for off; got {}",
                            flags.prefill_sensitivity));
  return {};
}

Result<void> write_fixed_results(const PredictFlags& flags, const sim::ResolvedEngine& engine,
                                 const sim::PredictOptions& options, const std::vector<sim::PredictPoint>& points) {
  if (flags.result_dir.empty()) return {};
  std::error_code ec;
  std::filesystem::create_directories(flags.result_dir, ec);
  if (ec)
    return fail(ErrorCode::kIo, fmt::format("cannot create --result-dir '{}': {}", flags.result_dir, ec.message()));
  for (const auto& point : points) {
    auto path = std::filesystem::path(flags.result_dir) / result_file_name(engine, options, point.conc);
    if (auto ok = files::write_file(path, json::to_pretty_string(point.result)); !ok) return fail(ok.error());
  }
  return {};
}

void print_fixed_table(const PredictFlags& flags, const std::vector<sim::PredictPoint>& points) {
  std::cout << table(points);
  if (flags.prefill_sensitivity > 0) std::cout << sensitivity_table(points, flags.prefill_sensitivity);
  if (!flags.explain) return;
  std::cout << "\nwhere the mean TTFT and TPOT go (engine steps while waiting, API, front end, KV transfer):\n";
  for (const auto& p : points)
    std::cout << fmt::format("{:>6}  TTFT: {}\n{:>6}  TPOT: {}\n", p.conc, largest_terms(p.ttft_cost, 4), "",
                             largest_terms(p.tpot_cost, 4));
}

// The fixed-length benchmark at each concurrency.
int run_fixed(const PredictFlags& flags, PredictInputs in) {
  sim::PredictOptions& options = in.options;
  for (const CLI::Option* option : flags.replay_flags)
    if (option->count() > 0)
      return report_error(Error(ErrorCode::kInvalidArgument,
                                fmt::format("{} applies to agentic replays: give --trace FILE (or an agentic-coding "
                                            "--row) with it",
                                            option->get_name())));
  if (options.isl <= 0 || options.osl <= 0)
    return report_error(Error(ErrorCode::kInvalidArgument, "--isl and --osl are required (or a --row that has them)"));
  if (options.concurrencies.empty())
    return report_error(Error(ErrorCode::kInvalidArgument, "--conc is required (or a --row that has conc)"));
  options.num_prompts = flags.num_prompts.value_or(0);
  options.random_range_ratio = flags.random_range_ratio;
  options.shared_prefix_fraction = flags.shared_prefix_fraction;
  auto percentiles = metrics::parse_metric_percentiles(flags.percentiles);
  if (!percentiles) return report_error(percentiles.error());
  options.metric_percentiles = std::move(*percentiles);
  options.date = utc_date();
  options.record_costs = flags.explain;

  auto points = sim::predict(options);
  if (!points) return report_error(points.error());
  if (flags.explain)
    for (auto& point : *points) point.result["sim_cost_attribution"] = cost_attribution(point);
  auto engine = sim::resolve_engine(options.engine);
  if (!engine) return report_error(engine.error());
  if (flags.prefill_sensitivity > 0)
    if (auto ok = add_prefill_sensitivity(*engine, options, flags.prefill_sensitivity, *points); !ok)
      return report_error(ok.error());
  if (auto ok = write_fixed_results(flags, *engine, options, *points); !ok) return report_error(ok.error());
  if (flags.format == "table") {
    print_fixed_table(flags, *points);
    return kExitOk;
  }
  boost::json::object out;
  out["engine"] = sim::describe_engine(*engine);
  out["isl"] = options.isl;
  out["osl"] = options.osl;
  out["random_range_ratio"] = options.random_range_ratio;
  boost::json::array results;
  for (auto& point : *points) results.push_back(std::move(point.result));
  out["results"] = std::move(results);
  std::cout << json::to_pretty_string(out);
  return kExitOk;
}

bool is_agentic(const PredictInputs& in) {
  return !in.scenario_type.empty() && in.scenario_type != "fixed-seq-len";
}

// Flags of the fixed-length benchmark that a trace replay has no use for.
Result<void> check_trace_flags(const PredictFlags& flags) {
  const std::pair<const char*, bool> unused[] = {{"--isl", bool(flags.isl)},
                                                 {"--osl", bool(flags.osl)},
                                                 {"--num-prompts", bool(flags.num_prompts)},
                                                 {"--explain", flags.explain},
                                                 {"--prefill-sensitivity", flags.prefill_sensitivity > 0},
                                                 {"--result-dir", !flags.result_dir.empty()}};
  for (const auto& [name, given] : unused)
    if (given)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{} applies to fixed-length predictions; a trace replay takes its lengths from the "
                              "trace and writes into --artifact-dir",
                              name));
  return bench::check_schedule_flags(flags.replay);
}

// An agentic replay: --trace (required), lanes from --concurrency, else --conc, else the row's.
int run_trace(const PredictFlags& flags, const PredictInputs& in) {
  if (flags.replay.trace.empty() && flags.replay.public_dataset.empty())
    return report_error(Error(ErrorCode::kInvalidArgument,
                              fmt::format("the row's scenario-type is '{}': give --trace FILE|DIR, the trace its "
                                          "benchmark replays (nothing is downloaded)",
                                          in.scenario_type)));
  if (auto ok = check_trace_flags(flags); !ok) return report_error(ok.error());
  auto engine = sim::resolve_engine(in.options.engine);
  if (!engine) return report_error(engine.error());
  TracePredictRun run{.engine = std::move(*engine), .replay = flags.replay, .table = flags.format == "table"};
  if (flags.concurrency_flag->count() > 0 || in.options.concurrencies.empty()) {
    run.concurrencies = {flags.replay.concurrency};
  } else {
    run.concurrencies.assign(in.options.concurrencies.begin(), in.options.concurrencies.end());
  }
  if (flags.duration_flag->count() == 0 && in.row_duration_s > 0) run.replay.benchmark_duration_s = in.row_duration_s;
  auto status = run_trace_prediction(run);
  return status ? *status : report_error(status.error());
}

// Every row of a sweep matrix: the rows give engines, lengths and concurrencies; the engine flags
// what the rows do not say; the trace and schedule flags the agentic rows' replay.
int run_jobs(const PredictFlags& flags) {
  const std::pair<const char*, bool> row_flags[] = {{"--row", !flags.row.empty()},
                                                    {"--row-file", !flags.row_file.empty()},
                                                    {"--isl", bool(flags.isl)},
                                                    {"--osl", bool(flags.osl)},
                                                    {"--conc", !flags.concurrencies.empty()},
                                                    {"--num-prompts", bool(flags.num_prompts)},
                                                    {"--concurrency", flags.concurrency_flag->count() > 0},
                                                    {"--explain", flags.explain},
                                                    {"--prefill-sensitivity", flags.prefill_sensitivity > 0},
                                                    {"--result-dir", !flags.result_dir.empty()}};
  for (const auto& [name, given] : row_flags)
    if (given)
      return report_error(Error(ErrorCode::kInvalidArgument,
                                fmt::format("{} and --jobs-from exclude each other: the matrix's rows give the "
                                            "engines, lengths and concurrencies",
                                            name)));
  if (flags.jobs < 0)
    return report_error(Error(ErrorCode::kInvalidArgument, fmt::format("--jobs must be >= 0, got {}", flags.jobs)));
  JobsPredictOptions options{.matrix = flags.jobs_from,
                             .out_dir = flags.out_dir,
                             .db = flags.db,
                             .jobs = flags.jobs,
                             .base = flags.engine.config,
                             .replay = flags.replay,
                             .duration_given = flags.duration_flag->count() > 0};
  auto spec = sim::parse_spec_decoding(flags.engine.spec_decoding);
  if (!spec) return report_error(spec.error());
  options.base.spec_decoding = *spec;
  auto status = run_jobs_prediction(options);
  return status ? *status : report_error(status.error());
}

int run_predict(const PredictFlags& flags) {
  if (auto ok = check_common_flags(flags); !ok) return report_error(ok.error());
  if (!flags.jobs_from.empty()) return run_jobs(flags);
  for (const auto& [name, value] : {std::pair{"--out", flags.out_option->count() > 0},
                                    std::pair{"--db", !flags.db.empty()}, std::pair{"--jobs", flags.jobs != 0}})
    if (value)
      return report_error(
          Error(ErrorCode::kInvalidArgument, fmt::format("{} applies to --jobs-from (a whole matrix)", name)));
  auto inputs = predict_inputs(flags);
  if (!inputs) return report_error(inputs.error());
  if (!flags.replay.trace.empty() || !flags.replay.public_dataset.empty() || is_agentic(*inputs))
    return run_trace(flags, *inputs);
  return run_fixed(flags, std::move(*inputs));
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* group = find_or_add_group(root, "sim", "engine simulator");
  auto* cmd = group->add_subcommand(
      "predict",
      "predict a fixed-length benchmark sweep (SPEC §4 result per concurrency) or, with --trace, an agentic replay "
      "(SPEC §6) in virtual time");
  auto flags = std::make_shared<PredictFlags>();
  add_engine_flags(*cmd, flags->engine);
  cmd->add_option("--isl", flags->isl, "input sequence length (max of the uniform range)");
  cmd->add_option("--osl", flags->osl, "output sequence length (max of the uniform range)");
  cmd->add_option("--conc", flags->concurrencies, "concurrencies, e.g. 1,4,16,64");
  cmd->add_option("--num-prompts", flags->num_prompts, "requests per concurrency (default 10 x conc)");
  cmd->add_option("--random-range-ratio", flags->random_range_ratio, "lengths uniform in [floor(r*L), L]")
      ->capture_default_str();
  cmd->add_option("--shared-prefix-fraction", flags->shared_prefix_fraction,
                  "fraction of each prompt shared by all prompts (prefix-cache what-if)")
      ->capture_default_str();
  cmd->add_option("--metric-percentiles", flags->percentiles, "percentiles to report (comma-separated)")
      ->capture_default_str();
  cmd->add_option("--row", flags->row, "a sweep row as JSON (as printed by ixbench sweep)");
  cmd->add_option("--row-file", flags->row_file, "file holding a sweep row as JSON");
  cmd->add_flag("--explain", flags->explain,
                "also report where each concurrency's mean TTFT and TPOT go, by cost term "
                "(sim_cost_attribution in the JSON; the largest terms under the table)");
  cmd->add_option("--prefill-sensitivity", flags->prefill_sensitivity,
                  "also predict each concurrency with the prefill cost x(1-F) and x(1+F), 0 < F < 1 "
                  "(sim_prefill_sensitivity in the JSON; TTFT that moves 2x or more is marked 'knife edge')");
  cmd->add_option("--format", flags->format, "json | table")
      ->check(CLI::IsMember({"json", "table"}))
      ->capture_default_str();
  cmd->add_option("--result-dir", flags->result_dir, "also write one raw result JSON per concurrency here");
  cmd->add_option("--jobs-from", flags->jobs_from,
                  "a sweep matrix (ixbench sweep's JSON): predict every row at each of its concurrencies");
  flags->out_option = cmd->add_option("--out", flags->out_dir,
                                      "--jobs-from: directory of every point's raw result and aggregated record")
                          ->capture_default_str();
  cmd->add_option("--db", flags->db, "--jobs-from: also store the records as predicted (a file, sqlite:, postgresql:)");
  cmd->add_option("--jobs", flags->jobs, "--jobs-from: points predicted at once (0 = one per core)")
      ->capture_default_str();
  const size_t before = cmd->get_options().size();
  add_replay_trace_flags(cmd, flags->replay, ReplayFlagSet::kBesideEngineFlags);
  add_replay_schedule_flags(cmd, flags->replay, ReplayFlagSet::kBesideEngineFlags);
  const auto options = cmd->get_options();
  flags->replay_flags.assign(options.begin() + std::ptrdiff_t(before), options.end());
  flags->concurrency_flag = cmd->get_option("--concurrency");
  flags->duration_flag = cmd->get_option("--benchmark-duration");
  registry.on_run(cmd, [flags] { return run_predict(*flags); });
}

}  // namespace
IX_REGISTER_COMMAND(sim_predict, setup);
}  // namespace ix::cli
