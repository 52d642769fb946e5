// One job, start to end, in its own folder (`ixbench run job --spec FILE`, run by every executor):
// render the recipe, start the server and wait for /health, sample GPU telemetry, run the
// benchmark per concurrency (`bench serve` for fixed-length rows, `bench replay` for agentic
// ones), the GSM8K eval and its threshold check where the row asks, stop everything, aggregate.
// Every step is this ixbench binary run as a child process, its command line recorded in
// commands.sh and its output in <step>.log, so a job's folder says exactly what ran.
//
// Folder layout (`<out>/<run-id>/<job-id>/`): job.json (the spec), server_command.sh,
// server.log, gpu_metrics.csv, <stem>.json (raw, fixed-length) or <stem>/aiperf_artifacts/
// (agentic), agg_<stem>.json, eval/ (lm-eval results, samples, meta_env.json), commands.sh,
// steps.log (one line per step: what the progress view shows), status.json (the outcome).
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "run/job.h"
#include "run/recipe.h"

namespace ix::run {

enum class JobState { kSucceeded, kFailed, kInterrupted };
std::string_view job_state_name(JobState state);  // "succeeded" | "failed" | "interrupted"

struct StepResult {
  std::string name;  // "server", "bench conc=16", "eval conc=16", "eval check", "aggregate conc=16"
  bool ok = false;
  double seconds = 0;
  std::string message;  // why it failed, or a note ("no GPU telemetry: ...")
};

struct JobStatus {
  std::string job_id;
  JobState state = JobState::kFailed;
  std::string failed_step;  // empty when it succeeded
  std::string message;      // the failure, in full (with the server log's last lines)
  std::string started_at, finished_at;
  std::vector<StepResult> steps;
};

// What the job's recipe is rendered with: its server on `port`, in `job_dir`. `eval_server`: the
// server evals run against (never forced to the golden acceptance length).
RecipeInputs recipe_inputs(const Job& job, const JobSettings& settings, int port, const std::filesystem::path& job_dir,
                           bool eval_server);

// Runs the job in `job_dir` (created if needed) and writes status.json there. `stop` (an
// interrupted run) stops the current step and the server; the status then says interrupted.
JobStatus run_job(const JobSpec& spec, const std::filesystem::path& job_dir, const std::atomic<bool>& stop);

std::string job_status_json(const JobStatus& status);
// status.json of a job folder; kNotFound when the job never wrote one (it was killed).
Result<JobStatus> read_job_status(const std::filesystem::path& job_dir);

}  // namespace ix::run
