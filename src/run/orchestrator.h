// `ixbench run`: a sweep from planned rows to stored, reported results (SPEC §13).
//
// A run is a folder `<out>/<run-id>/` holding run_manifest.json (ixbench version, host, command,
// the inputs' SHA-256, times) and one folder per job (run/job_runner.h). Jobs go to an executor;
// each one that succeeds is loaded into the results store at once (its run id, measured), so an
// interrupted or killed run keeps everything finished. `--resume RUN_ID` skips the jobs the store
// holds for that run (by result stem, which carries the recipe fingerprint), loads finished jobs
// that were not stored yet, and reruns the rest (a failed attempt's folder is kept as
// <job-id>.attempt-N). The summary lists every job with its state and headline numbers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/master_config.h"
#include "run/executor.h"
#include "run/job.h"
#include "sweep/sweep_row.h"

namespace ix::run {

struct RunOptions {
  std::vector<sweep::SweepRow> rows;
  std::optional<config::RunnerConfig> runners;
  JobSettings settings;
  std::string db;  // the results store (store::open_store's location)
  std::filesystem::path out = "ixbench-runs";
  std::string resume_run_id;                  // --resume: this run's folder and stored results
  bool dry_run = false;                       // print the jobs and their server commands, run nothing
  bool report = true;                         // end with the static report (`ixbench report`)
  std::vector<std::filesystem::path> inputs;  // hashed into the manifest (configs, runners, matrix)
  std::string command_line;
  std::string ixbench_version;
};

enum class JobOutcome { kSucceeded, kFailed, kInterrupted, kStored, kNotRun };
std::string_view job_outcome_name(JobOutcome outcome);  // succeeded failed interrupted stored not-run

struct JobSummary {
  std::string id;
  JobOutcome outcome = JobOutcome::kNotRun;
  std::string failed_step, message;
  std::vector<int64_t> concs;
  std::optional<double> tput_per_gpu, median_intvty, median_e2el;  // the first concurrency's
};

struct RunSummary {
  std::string run_id;
  std::filesystem::path run_dir;
  std::vector<JobSummary> jobs;
  std::filesystem::path report;  // empty when no report was written
  std::string report_note;       // why not
  bool interrupted = false;
  size_t count(JobOutcome outcome) const;
};

// Runs the sweep. Progress (one line per event, a live line on a terminal) goes to `progress`.
// Errors are what stops the run before any job starts (store unreachable, run folder unwritable,
// --resume of an unknown run); a failed job is an outcome in the summary, not an error.
Result<RunSummary> run_sweep(const RunOptions& options, Executor& executor, std::FILE* progress);

// The end-of-run table: every job with its outcome and headline numbers, then the report path.
std::string render_summary(const RunSummary& summary);

// `--dry-run`: the jobs, their result stems and the server command each would start.
Result<std::string> render_plan(const RunOptions& options);

}  // namespace ix::run
