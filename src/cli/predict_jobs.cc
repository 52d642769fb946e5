#include "cli/predict_jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cli/aggregate_step.h"
#include "cli/predict_trace.h"
#include "common/clock.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "common/log.h"
#include "common/stop_signal.h"
#include "sim/predict.h"
#include "sim/sweep_row.h"
#include "store/ingest.h"
#include "sweep/row_parse.h"
#include "sweep/sweep_row.h"

namespace ix::cli {
namespace {

namespace fs = std::filesystem;

// One row of the matrix, ready to predict.
struct JobRow {
  sweep::SweepRow row;
  boost::json::object json;  // the row as `ixbench sweep` prints it
  sim::RowWorkload workload;
  sim::ResolvedEngine engine;
  std::string error;  // why the simulator cannot take the row; empty when it can
};

// One concurrency of one row, and what its prediction gave.
struct Point {
  size_t row = 0;
  int64_t conc = 0;
  std::string stem;
  bool done = false;
  std::string error;  // empty when it succeeded
  double ttft_p50_ms = 0, itl_p50_ms = 0, e2el_p50_s = 0, tput_per_gpu = 0, output_tput = 0;
};

// The engine of a row (kUnsupported for what the simulator does not model, e.g. pp > 1).
Result<sim::ResolvedEngine> row_engine(JobRow& job, const sim::EngineConfig& base) {
  auto workload = sim::parse_sweep_row(job.json, base);
  if (!workload) return fail(workload.error());
  job.workload = std::move(*workload);
  return sim::resolve_engine(job.workload.engine);
}

// The matrix's rows; a row the simulator cannot take is kept with its error (its points fail).
Result<std::vector<JobRow>> load_rows(const JobsPredictOptions& o) {
  auto text = files::read_text_file(o.matrix, files::kMaxResultFileBytes, "a job matrix (JSON)");
  if (!text) return fail(text.error().with_context("--jobs-from"));
  auto rows = sweep::matrix_from_json(*text, o.matrix);
  if (!rows) return fail(rows.error());
  std::vector<JobRow> out;
  for (size_t i = 0; i < rows->size(); ++i) {
    JobRow job;
    job.row = (*rows)[i];
    job.json = sweep::to_json(job.row);
    if (auto engine = row_engine(job, o.base); !engine) {
      job.error = engine.error().with_context(fmt::format("row {}", i)).message();
    } else {
      job.engine = std::move(*engine);
    }
    if (job.row.is_agentic() && o.replay.trace.empty() && o.replay.public_dataset.empty())
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{}: row {} ({}) is agentic-coding: give --trace FILE|DIR, the trace its replay "
                              "plays (nothing is downloaded), or leave agentic rows out of the matrix",
                              o.matrix, i, job.row.exp_name));
    out.push_back(std::move(job));
  }
  return out;
}

std::vector<Point> points_of(const std::vector<JobRow>& rows) {
  std::vector<Point> points;
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t conc : rows[i].row.conc) {
      Point point;
      point.row = i;
      point.conc = conc;
      point.stem = sweep::result_file_stem(rows[i].row, conc, rows[i].row.runner, rows[i].row.stamped_fingerprint);
      point.error = rows[i].error;
      point.done = !point.error.empty();
      points.push_back(std::move(point));
    }
  return points;
}

double number_at(const boost::json::object& o, std::initializer_list<std::string_view> path) {
  const boost::json::object* object = &o;
  const boost::json::value* v = nullptr;
  for (std::string_view key : path) {
    if (!object || !object->contains(key)) return 0.0;
    v = &object->at(key);
    object = v->if_object();
  }
  return v && v->is_number() ? v->to_number<double>() : 0.0;
}

// The variables the aggregation reads beside the row's, as `ixbench run` gives a job's.
std::string aggregate_env(const JobRow& job, const Point& point) {
  boost::json::object env{{"RESULT_FILENAME", point.stem},
                          {"RUNNER_NAME", job.row.runner},
                          {"RECIPE_FINGERPRINT", job.row.stamped_fingerprint},
                          {"CONC", std::to_string(point.conc)}};
  if (job.row.is_multinode() && !job.row.is_agentic()) {
    env["PREFILL_GPUS"] = std::to_string(job.row.prefill.num_worker * job.row.prefill.tp);
    env["DECODE_GPUS"] = std::to_string(job.row.decode.num_worker * job.row.decode.tp);
  }
  return boost::json::serialize(env) + "\n";
}

Result<void> aggregate(const JobRow& job, const Point& point, const fs::path& out, const fs::path& raw,
                       const fs::path& record) {
  const fs::path work = out / "aggregate" / point.stem;
  std::error_code ec;
  fs::create_directories(work, ec);
  if (ec) return fail(ErrorCode::kIo, fmt::format("cannot create {}: {}", work.string(), ec.message()));
  if (auto ok = files::write_file(work / "row.json", boost::json::serialize(job.json) + "\n"); !ok) return ok;
  if (auto ok = files::write_file(work / "env.json", aggregate_env(job, point)); !ok) return ok;
  const int status = run_aggregate({.env_file = (work / "env.json").string(),
                                    .raw = raw.string(),
                                    .out = record.string(),
                                    .silent = true,
                                    .power_csv = (work / "gpu_metrics.csv").string(),
                                    .scenario = job.row.is_agentic() ? "agentic-coding" : "fixed-seq-len",
                                    .row = (work / "row.json").string()});
  if (status != 0) return fail(ErrorCode::kInternal, fmt::format("aggregating {} failed (see above)", point.stem));
  return {};
}

Result<void> predict_fixed(const JobRow& job, Point& point, const fs::path& out) {
  sim::PredictOptions options;
  options.engine = job.workload.engine;
  options.model_id = job.workload.model_id;
  options.isl = job.workload.isl;
  options.osl = job.workload.osl;
  options.date = utc_now_text("%Y%m%d-%H%M%S");
  auto predicted = sim::predict_point(job.engine, options, int32_t(point.conc));
  if (!predicted) return fail(predicted.error());
  const fs::path raw = out / (point.stem + ".json");
  if (auto ok = files::write_file(raw, json::to_pretty_string(predicted->result)); !ok) return ok;
  const boost::json::object& r = predicted->result;
  point.ttft_p50_ms = number_at(r, {"median_ttft_ms"});
  point.itl_p50_ms = number_at(r, {"median_itl_ms"});
  point.e2el_p50_s = number_at(r, {"median_e2el_ms"}) / 1000;
  point.tput_per_gpu = number_at(r, {"tput_per_gpu"});
  point.output_tput = number_at(r, {"output_throughput"});
  return aggregate(job, point, out, raw, out / ("agg_" + point.stem + ".json"));
}

Result<void> predict_agentic(const JobRow& job, const workload::Trace& trace, const JobsPredictOptions& o, Point& point,
                             const fs::path& out) {
  bench::BenchReplayOptions replay = o.replay;
  if (!o.duration_given && job.workload.duration_s > 0) replay.benchmark_duration_s = job.workload.duration_s;
  const fs::path artifacts = out / "agentic" / point.stem / "aiperf_artifacts";
  auto result = predict_trace_point(job.engine, trace, replay, point.conc, artifacts.string());
  if (!result) return fail(result.error());
  point.ttft_p50_ms = number_at(*result, {"request_metrics", "latency", "ttft", "p50"}) * 1000;
  point.itl_p50_ms = number_at(*result, {"request_metrics", "latency", "itl", "p50"}) * 1000;
  point.e2el_p50_s = number_at(*result, {"request_metrics", "latency", "e2el", "p50"});
  point.output_tput = number_at(*result, {"request_metrics", "throughput", "output", "tokens_per_second"});
  point.tput_per_gpu = number_at(*result, {"request_metrics", "throughput", "total", "tokens_per_second"}) /
                       std::max(1, total_gpus(job.engine.config));
  return aggregate(job, point, out, artifacts.parent_path(), out / ("agg_" + point.stem + ".json"));
}

std::string table(const std::vector<JobRow>& rows, const std::vector<Point>& points) {
  std::string out = fmt::format("{:<52} {:>6} {:>8} {:>12} {:>11} {:>11} {:>13}  {}\n", "exp-name", "conc", "kind",
                                "ttft_p50_ms", "itl_p50_ms", "e2el_p50_s", "tput_per_gpu", "status");
  for (const Point& p : points) {
    const sweep::SweepRow& row = rows[p.row].row;
    const std::string status = !p.done ? "not run (stopped)" : p.error.empty() ? "ok" : "failed: " + p.error;
    out += fmt::format("{:<52} {:>6} {:>8} {:>12.1f} {:>11.2f} {:>11.2f} {:>13.1f}  {}\n", row.exp_name, p.conc,
                       row.is_agentic() ? "agentic" : "fixed", p.ttft_p50_ms, p.itl_p50_ms, p.e2el_p50_s,
                       p.tput_per_gpu, status);
  }
  return out;
}

// Workers take the next point until none is left (or a stop signal arrives).
void run_points(const std::vector<JobRow>& rows, const workload::Trace* trace, const JobsPredictOptions& o,
                std::vector<Point>& points) {
  std::atomic<size_t> next{0};
  std::mutex report;
  auto work = [&] {
    for (size_t i = next++; i < points.size() && !StopSignals::stopped(); i = next++) {
      Point& point = points[i];
      if (point.done) continue;  // its row was refused
      const JobRow& job = rows[point.row];
      auto ok = job.row.is_agentic() ? predict_agentic(job, *trace, o, point, o.out_dir)
                                     : predict_fixed(job, point, o.out_dir);
      std::lock_guard lock(report);
      point.done = true;
      if (!ok) {
        point.error = ok.error().message();
        fmt::print(stderr, "ixbench: {} conc {}: {}\n", job.row.exp_name, point.conc, point.error);
      }
    }
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min<size_t>(points.size(), o.jobs > 0 ? size_t(o.jobs) : cores);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
}

}  // namespace

Result<int> run_jobs_prediction(const JobsPredictOptions& o) {
  StopSignals stop_signals;
  auto rows = load_rows(o);
  if (!rows) return fail(rows.error());
  std::optional<workload::Trace> trace;
  const bool any_agentic = std::any_of(rows->begin(), rows->end(), [](const JobRow& r) { return r.row.is_agentic(); });
  if (any_agentic) {
    if (auto ok = bench::check_schedule_flags(o.replay); !ok) return fail(ok.error());
    auto loaded = bench::load_replay_trace(o.replay);
    if (!loaded) return fail(loaded.error());
    trace = std::move(*loaded);
  }
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return fail(ErrorCode::kIo, fmt::format("cannot create --out '{}': {}", o.out_dir, ec.message()));
  std::vector<Point> points = points_of(*rows);
  for (const JobRow& job : *rows)
    if (!job.error.empty()) fmt::print(stderr, "ixbench: {}: {}\n", job.row.exp_name, job.error);
  // Each point's aggregation logs what `ixbench aggregate` would (and the missing telemetry a
  // prediction never has): the table says it once for all.
  const log::Level level = log::level();
  log::set_level(log::Level::kError);
  run_points(*rows, trace ? &*trace : nullptr, o, points);
  log::set_level(level);
  fmt::print("{}", table(*rows, points));
  const auto failed = std::count_if(points.begin(), points.end(), [](const Point& p) { return !p.error.empty(); });
  fmt::print("{} points of {} rows predicted into {}{}\n", points.size() - size_t(failed), rows->size(), o.out_dir,
             failed > 0 ? fmt::format(", {} failed", failed) : "");
  if (!o.db.empty()) {
    store::IngestOptions ingest;
    ingest.dirs = {o.out_dir};
    ingest.db = o.db;
    ingest.kind = store::ResultKind::kPredicted;
    auto stored = store::ingest_folders(ingest);
    if (!stored) return fail(stored.error().with_context("--db"));
    for (const auto& folder : *stored)
      fmt::print("stored in {}: run {}: {} inserted, {} updated, {} unchanged\n", o.db, folder.run_id,
                 folder.stats.inserted, folder.stats.updated, folder.stats.unchanged);
  }
  if (const int sig = StopSignals::signal()) return 128 + sig;
  return failed > 0 ? 1 : 0;
}

}  // namespace ix::cli
