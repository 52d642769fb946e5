#include "run/orchestrator.h"

#include <fmt/format.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <map>
#include <memory>
#include <set>

#include "common/clock.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "common/stop_signal.h"
#include "run/job_runner.h"
#include "run/process.h"
#include "run/progress_view.h"
#include "run/recipe.h"
#include "store/ingest.h"
#include "store/store.h"

namespace ix::run {
namespace {

namespace fs = std::filesystem;
constexpr const char* kIsoFormat = "%Y-%m-%dT%H:%M:%SZ";

std::string host_name() {
  char buffer[256] = {};
  return ::gethostname(buffer, sizeof buffer - 1) == 0 ? std::string(buffer) : std::string("unknown");
}

int64_t gpus_of(const Job& job) {
  const auto& row = job.row;
  if (row.is_multinode()) {
    return row.prefill.num_worker * row.prefill.tp * row.prefill.pp +
           row.decode.num_worker * row.decode.tp * row.decode.pp;
  }
  return row.tp * row.pp * row.pcp_size;
}

// Nodes of a multi-node job: its GPUs over the runner's GPUs per node (runners.yaml), else 1.
int64_t nodes_of(const Job& job, const std::optional<config::RunnerConfig>& runners) {
  if (!job.row.is_multinode() || !runners) return 1;
  const auto* hardware = runners->find_hardware(job.runner_label);
  if (!hardware || hardware->gpus_per_node <= 0) return 1;
  return std::max<int64_t>(1, (gpus_of(job) + hardware->gpus_per_node - 1) / hardware->gpus_per_node);
}

// The run's folder and manifest; on resume, the manifest's created_at is kept.
struct RunFolder {
  std::string run_id;
  fs::path dir;
  boost::json::object manifest;
};

Result<boost::json::array> input_hashes(const std::vector<fs::path>& inputs) {
  boost::json::array out;
  for (const auto& path : inputs) {
    auto text = files::read_text_file(path, files::kMaxResultFileBytes, "a run input");
    if (!text) return fail(text.error());
    out.push_back(
        {{"path", fs::absolute(path).string()}, {"sha256", sweep::sha256_hex(*text)}, {"bytes", text->size()}});
  }
  return out;
}

Result<RunFolder> open_run_folder(const RunOptions& options) {
  RunFolder folder;
  folder.run_id = options.resume_run_id.empty() ? "run-" + utc_now_text("%Y%m%d-%H%M%S") : options.resume_run_id;
  folder.dir = options.out / folder.run_id;
  const fs::path manifest_path = folder.dir / "run_manifest.json";
  std::string created_at = utc_now_text(kIsoFormat);
  if (!options.resume_run_id.empty()) {
    auto old = ix::json::read_file(manifest_path, 1 << 20, "a run manifest");
    if (!old) {
      return fail(ErrorCode::kNotFound, fmt::format("--resume {}: {} (resume a run by the id ixbench run printed, with "
                                                    "the same --out)",
                                                    folder.run_id, old.error().message()));
    }
    if (auto at = ix::json::get_string(old->as_object(), "created_at")) created_at = *at;
  } else if (fs::exists(folder.dir)) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{} already exists: resume it with --resume {}", folder.dir.string(), folder.run_id));
  }
  std::error_code error;
  fs::create_directories(folder.dir, error);
  if (error)
    return fail(ErrorCode::kIo,
                fmt::format("cannot create the run folder {}: {}", folder.dir.string(), error.message()));
  if (auto ok = files::check_directory_writable(folder.dir); !ok) return fail(ok.error());
  auto hashes = input_hashes(options.inputs);
  if (!hashes) return fail(hashes.error());
  folder.manifest = {
      {"run_id", folder.run_id},      {"created_at", created_at},        {"ixbench_version", options.ixbench_version},
      {"host", host_name()},          {"command", options.command_line}, {"db", options.db},
      {"inputs", std::move(*hashes)}, {"jobs", options.rows.size()}};
  return folder;
}

Result<void> write_manifest(const RunFolder& folder) {
  return files::write_file(folder.dir / "run_manifest.json", ix::json::to_pretty_string(folder.manifest));
}

store::RunRecord run_record(const RunFolder& folder) {
  auto text = [&](const char* key) { return std::string(folder.manifest.at(key).as_string()); };
  return {folder.run_id, text("created_at"),      "ixbench run",
          text("host"),  text("ixbench_version"), ix::json::to_string(folder.manifest)};
}

void add_artifacts(store::ResultRecord& record, const fs::path& dir) {
  static constexpr std::pair<const char*, const char*> kFiles[] = {
      {"server_log", "server.log"}, {"telemetry", "gpu_metrics.csv"}, {"command", "server_command.sh"},
      {"commands", "commands.sh"},  {"status", "status.json"},        {"steps", "steps.log"}};
  for (auto [kind, name] : kFiles) {
    if (fs::is_regular_file(dir / name)) record.artifacts.push_back({kind, fs::absolute(dir / name).string()});
  }
}

// Loads a finished job's folder into the store as part of the run.
Result<std::vector<store::ResultRecord>> ingest_job(store::Store& db, const RunFolder& folder, const Job& job,
                                                    const fs::path& dir) {
  auto read = store::read_result_folder(dir, folder.run_id, store::ResultKind::kMeasured);
  if (!read) return fail(read.error());
  if (read->results.empty())
    return fail(ErrorCode::kNotFound, fmt::format("{} holds no agg_*.json result", dir.string()));
  const std::string row = boost::json::serialize(sweep::to_json(job.row));
  for (auto& record : read->results) {
    record.row_json = row;
    add_artifacts(record, dir);
  }
  auto stored = db.put_run_results(run_record(folder), read->results);
  if (!stored) return fail(stored.error());
  const fs::path predicted = folder.dir / "predicted" / job.id;
  if (fs::is_directory(predicted)) {
    auto prediction = store::read_result_folder(predicted, folder.run_id, store::ResultKind::kPredicted);
    if (!prediction) return fail(prediction.error());
    for (auto& record : prediction->results) record.row_json = row;
    if (auto ok = db.put_run_results(run_record(folder), prediction->results); !ok) return fail(ok.error());
  }
  return std::move(read->results);
}

void fill_headline(JobSummary& summary, const std::vector<store::ResultRecord>& records) {
  if (records.empty()) return;
  const auto* first = &records.front();
  for (const auto& r : records) {
    if (r.conc < first->conc) first = &r;
  }
  summary.tput_per_gpu = first->tput_per_gpu;
  summary.median_intvty = first->median_intvty;
  summary.median_e2el = first->median_e2el;
}

// One run in progress: the jobs, their summaries, the store and the view.
class Sweep {
 public:
  Sweep(const RunOptions& options, RunFolder folder, std::unique_ptr<store::Store> db, std::FILE* progress)
      : options_(options),
        folder_(std::move(folder)),
        db_(std::move(db)),
        jobs_(plan_jobs(options.rows, options.runners ? &*options.runners : nullptr)),
        view_(progress, jobs_.size()) {
    summary_.run_id = folder_.run_id;
    summary_.run_dir = folder_.dir;
    for (const auto& job : jobs_) summary_.jobs.push_back({job.id, JobOutcome::kNotRun, {}, {}, job.concs, {}, {}, {}});
  }

  Result<RunSummary> run(Executor& executor);

 private:
  Result<std::vector<size_t>> jobs_to_run();
  bool recover(size_t index, const std::set<std::string>& stored);
  Result<void> write_spec(size_t index);
  void on_finished(size_t index);
  void write_report();

  const RunOptions& options_;
  RunFolder folder_;
  std::unique_ptr<store::Store> db_;
  std::vector<Job> jobs_;
  ProgressView view_;
  RunSummary summary_;
  std::vector<ExecJob> exec_jobs_;
  std::vector<size_t> exec_index_;  // exec_jobs_[i] is jobs_[exec_index_[i]]
};

fs::path job_dir(const RunFolder& folder, const Job& job) {
  return folder.dir / job.id;
}

// A job of a resumed run is done when the store holds all its stems, or when its folder says it
// succeeded (then it is loaded now: ixbench stopped between the job's end and its ingest).
bool Sweep::recover(size_t index, const std::set<std::string>& stored) {
  const Job& job = jobs_[index];
  JobSummary& summary = summary_.jobs[index];
  bool all_stored = job.throughput && !job.stems.empty();
  for (const auto& stem : job.stems) all_stored &= stored.count(stem) > 0;
  if (all_stored) {
    summary.outcome = JobOutcome::kStored;
    return true;
  }
  auto status = read_job_status(job_dir(folder_, job));
  if (!status || status->state != JobState::kSucceeded) return false;
  auto records =
      job.throughput ? ingest_job(*db_, folder_, job, job_dir(folder_, job)) : std::vector<store::ResultRecord>{};
  if (!records) return false;
  summary.outcome = JobOutcome::kStored;
  fill_headline(summary, *records);
  return true;
}

// The jobs still to run; a previous attempt's folder is kept as <id>.attempt-N.
Result<std::vector<size_t>> Sweep::jobs_to_run() {
  std::set<std::string> stored;
  if (!options_.resume_run_id.empty()) {
    auto stems = db_->result_stems(folder_.run_id, store::ResultKind::kMeasured);
    if (!stems) return fail(stems.error());
    stored.insert(stems->begin(), stems->end());
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    if (!options_.resume_run_id.empty() && recover(i, stored)) continue;
    const fs::path dir = job_dir(folder_, jobs_[i]);
    for (int attempt = 1; fs::exists(dir); ++attempt) {
      fs::path kept = dir;
      kept += fmt::format(".attempt-{}", attempt);
      std::error_code error;
      if (!fs::exists(kept)) fs::rename(dir, kept, error);
      if (error)
        return fail(ErrorCode::kIo,
                    fmt::format("cannot keep {} as {}: {}", dir.string(), kept.string(), error.message()));
    }
    out.push_back(i);
  }
  return out;
}

Result<void> Sweep::write_spec(size_t index) {
  const fs::path dir = job_dir(folder_, jobs_[index]);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return fail(ErrorCode::kIo, fmt::format("cannot create {}: {}", dir.string(), error.message()));
  return files::write_file(dir / "job.json", job_spec_json(jobs_[index], options_.settings));
}

void Sweep::on_finished(size_t index) {
  const Job& job = jobs_[index];
  JobSummary& summary = summary_.jobs[index];
  const fs::path dir = job_dir(folder_, job);
  auto status = read_job_status(dir);
  if (!status) {
    summary.outcome = StopSignals::stopped() ? JobOutcome::kInterrupted : JobOutcome::kFailed;
    summary.failed_step = "job";
    std::string log = tail_file(dir / "job.log", 5);
    summary.message = status.error().message() + (log.empty() ? "" : "; job.log ends:\n" + log);
    // Its folder was taken away (or a file put in its place): the job could not even write job.log.
    std::error_code error;
    if (!fs::is_directory(dir, error))
      summary.message = fmt::format(
          "the job folder {} is gone or not a folder: the job could not write its files there", dir.string());
  } else if (status->state != JobState::kSucceeded) {
    summary.outcome = status->state == JobState::kInterrupted ? JobOutcome::kInterrupted : JobOutcome::kFailed;
    summary.failed_step = status->failed_step;
    summary.message = status->message;
  } else if (job.throughput) {
    auto records = ingest_job(*db_, folder_, job, dir);
    summary.outcome = records ? JobOutcome::kSucceeded : JobOutcome::kFailed;
    if (records) fill_headline(summary, *records);
    if (!records) summary.failed_step = "store";
    if (!records) summary.message = records.error().message();
  } else {
    summary.outcome = JobOutcome::kSucceeded;
  }
  std::string first_line = summary.message.substr(0, summary.message.find('\n'));
  view_.finished(job.id, job_outcome_name(summary.outcome), summary.outcome != JobOutcome::kSucceeded,
                 summary.failed_step.empty() ? "" : summary.failed_step + ": " + first_line);
}

void Sweep::write_report() {
  if (!options_.report) return;
  auto stems = db_->result_stems(folder_.run_id, store::ResultKind::kMeasured);
  if (!stems || stems->empty()) {
    summary_.report_note = "no report: the run stored no result";
    return;
  }
  const fs::path out = folder_.dir / "report";
  ProcessSpec spec{{self_executable().string(), "report", "--db", options_.db, "--out", out.string()},
                   {},
                   folder_.dir / "report.log",
                   {},
                   {}};
  auto status = run_to_completion(spec, 600);
  if (status && status->ok()) {
    summary_.report = out / "index.html";
  } else {
    summary_.report_note = "the report failed: " + tail_file(folder_.dir / "report.log", 5);
  }
}

Result<RunSummary> Sweep::run(Executor& executor) {
  if (auto ok = db_->put_run(run_record(folder_)); !ok) return fail(ok.error());
  if (auto ok = write_manifest(folder_); !ok) return fail(ok.error());
  auto pending = jobs_to_run();
  if (!pending) return fail(pending.error());
  for (size_t index : *pending) {
    if (auto ok = write_spec(index); !ok) return fail(ok.error());
    exec_jobs_.push_back({&jobs_[index], job_dir(folder_, jobs_[index]), gpus_of(jobs_[index]),
                          nodes_of(jobs_[index], options_.runners)});
    exec_index_.push_back(index);
  }
  view_.say(fmt::format("{}: {} jobs ({} to run) on {}, folder {}", folder_.run_id, jobs_.size(), exec_jobs_.size(),
                        executor.describe(), folder_.dir.string()));
  ExecEvents events{[&](size_t i) { view_.started(jobs_[exec_index_[i]].id, exec_jobs_[i].dir); },
                    [&](size_t i) { on_finished(exec_index_[i]); }, [&] { view_.tick(); }};
  if (auto ok = executor.run(exec_jobs_, events, StopSignals::flag()); !ok) return fail(ok.error());
  summary_.interrupted = StopSignals::stopped();
  folder_.manifest["finished_at"] = utc_now_text(kIsoFormat);
  (void)write_manifest(folder_);
  write_report();
  return std::move(summary_);
}

}  // namespace

std::string_view job_outcome_name(JobOutcome outcome) {
  switch (outcome) {
    case JobOutcome::kSucceeded: return "succeeded";
    case JobOutcome::kFailed: return "failed";
    case JobOutcome::kInterrupted: return "interrupted";
    case JobOutcome::kStored: return "stored";
    case JobOutcome::kNotRun: return "not-run";
  }
  return "failed";
}

size_t RunSummary::count(JobOutcome outcome) const {
  size_t n = 0;
  for (const auto& job : jobs) n += job.outcome == outcome;
  return n;
}

Result<RunSummary> run_sweep(const RunOptions& options, Executor& executor, std::FILE* progress) {
  if (options.rows.empty()) return fail(ErrorCode::kInvalidArgument, "no jobs: the filters left no matrix row");
  auto db = store::open_store(options.db);
  if (!db) return fail(db.error());
  auto folder = open_run_folder(options);
  if (!folder) return fail(folder.error());
  return Sweep(options, std::move(*folder), std::move(*db), progress).run(executor);
}

namespace {

// A failed job's step and message: the first line, then the lines it quotes (a log's last lines:
// where the reason is, "FAIL: gsm8k ... < 0.9") indented under it, at most the last 12.
std::string failure_lines(const JobSummary& job) {
  constexpr size_t kMaxQuoted = 12;
  std::vector<std::string_view> lines;
  std::string_view rest = job.message;
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    lines.push_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  std::string out = fmt::format("{:<12} {}: {}\n", "", job.failed_step, lines.empty() ? "" : lines.front());
  size_t first = lines.size() > kMaxQuoted + 1 ? lines.size() - kMaxQuoted : 1;
  for (size_t i = first; i < lines.size(); ++i) {
    if (!lines[i].empty()) out += fmt::format("{:<14} {}\n", "", lines[i]);
  }
  return out;
}

}  // namespace

std::string render_summary(const RunSummary& summary) {
  auto number = [](const std::optional<double>& v, const char* format) {
    return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
  };
  std::string out =
      fmt::format("{:<12} {:>13} {:>12} {:>11}  {}\n", "outcome", "tput/gpu", "intvty p50", "e2el p50 s", "job");
  for (const auto& job : summary.jobs) {
    out += fmt::format("{:<12} {:>13} {:>12} {:>11}  {}\n", job_outcome_name(job.outcome),
                       number(job.tput_per_gpu, "{:.1f}"), number(job.median_intvty, "{:.1f}"),
                       number(job.median_e2el, "{:.3f}"), job.id);
    if (!job.failed_step.empty()) out += failure_lines(job);
  }
  out += fmt::format("\n{} jobs: {} succeeded, {} already stored, {} failed, {} interrupted, {} not run\n",
                     summary.jobs.size(), summary.count(JobOutcome::kSucceeded), summary.count(JobOutcome::kStored),
                     summary.count(JobOutcome::kFailed), summary.count(JobOutcome::kInterrupted),
                     summary.count(JobOutcome::kNotRun));
  out += fmt::format("run {} in {}\n", summary.run_id, summary.run_dir.string());
  if (!summary.report.empty()) out += fmt::format("report: {}\n", summary.report.string());
  if (summary.report.empty() && !summary.report_note.empty()) out += summary.report_note + "\n";
  return out;
}

Result<std::string> render_plan(const RunOptions& options) {
  auto book = load_recipe_book(options.settings.recipes_dir);
  if (!book) return fail(book.error());
  std::string out;
  auto jobs = plan_jobs(options.rows, options.runners ? &*options.runners : nullptr);
  for (const auto& job : jobs) {
    RecipeInputs inputs =
        recipe_inputs(job, options.settings, 8000, options.out / "<run-id>" / job.id, job.eval && !job.throughput);
    auto launch = render_server(*book, inputs);
    if (!launch) return fail(ErrorCode::kInvalidArgument, fmt::format("job {}: {}", job.id, launch.error().message()));
    out += fmt::format("{}\n  concurrencies:", job.id);
    for (int64_t c : job.concs) out += fmt::format(" {}", c);
    out += fmt::format("{}{}\n  server: {}\n", job.throughput ? "" : " (eval only)", job.eval ? ", with eval" : "",
                       launch->command_line());
  }
  out += fmt::format("{} jobs\n", jobs.size());
  return out;
}

}  // namespace ix::run
