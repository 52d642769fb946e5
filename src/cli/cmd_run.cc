// `ixbench run`: master configs (or a matrix) -> jobs -> engine servers, benchmarks, evals,
// aggregation -> the results store -> the report (run/orchestrator.h). `ixbench run job` runs one
// job from its spec file; every executor starts it (locally, or through sbatch/srun).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "changelog/plan.h"
#include "cli/command.h"
#include "cli/sweep_flags.h"
#include "cli/version.h"
#include "common/file_io.h"
#include "common/sanitize.h"
#include "common/stop_signal.h"
#include "config/master_config.h"
#include "run/executor.h"
#include "run/job_runner.h"
#include "run/orchestrator.h"
#include "run/process.h"
#include "run/recipe.h"
#include "store/store.h"
#include "sweep/planner.h"
#include "sweep/row_parse.h"

namespace ix::cli {
namespace {

namespace fs = std::filesystem;

struct RunFlags {
  SweepFlags sweep;
  std::string jobs_from;
  std::string plan;
  std::string db = store::kDefaultStoreLocation;
  std::string out = "ixbench-runs";
  std::string resume;
  bool dry_run = false;
  bool no_report = false;
  bool predict = false;
  std::string executor = "local";
  int parallel = 1;
  int64_t gpus = 0;
  CLI::Option* parallel_option = nullptr;
  std::string partition;
  int64_t time_limit_min = 0;
  int64_t cpus_per_task = 1;
  std::string recipes;
  std::string recipe;
  std::string golden_al_dir = "golden_al_distribution";
  std::string thresholds;
  std::string gsm8k_dir;
  std::string trace;
  int64_t eval_limit = 0;
  double agentic_duration_s = 0;
  double health_timeout_s = 1800;
  double step_timeout_s = 0;
};

struct JobFlags {
  std::string spec;
  std::string dir;
};

int usage_error(const std::string& message) {
  fmt::print(stderr, "ixbench: error: {}\n", printable(message));
  return kExitUsage;
}

bool has_full_sweep_filter(const SweepFlags& f) {
  return !f.model_prefixes.empty() || !f.precisions.empty() || !f.frameworks.empty() || !f.runner_types.empty() ||
         f.min_conc_option->count() > 0 || f.max_conc_option->count() > 0 || f.max_tp_option->count() > 0 ||
         f.max_ep_option->count() > 0 || f.single_node || f.multi_node || f.step_size != 2;
}

// The rows: from --jobs-from, or planned as `sweep test-config` (with --config-keys) or
// `sweep full-sweep` plans them. Sets `runners` when runners.yaml was read.
Result<std::vector<sweep::SweepRow>> plan_rows(const RunFlags& flags, std::optional<config::RunnerConfig>& runners) {
  if (!flags.jobs_from.empty() || !flags.plan.empty()) {
    const std::string& file = flags.plan.empty() ? flags.jobs_from : flags.plan;
    auto text =
        files::read_text_file(file, files::kMaxResultFileBytes,
                              flags.plan.empty() ? "a job matrix (JSON)" : "a plan (ixbench plan --format matrix)");
    if (!text) return fail(text.error());
    if (fs::exists(flags.sweep.runner_config)) {
      auto loaded = config::load_configs({}, flags.sweep.runner_config);
      if (loaded) runners = loaded->runners;
    }
    return flags.plan.empty() ? sweep::matrix_from_json(*text, file) : changelog::plan_rows_from_json(*text, file);
  }
  bool full = flags.sweep.config_keys.empty();
  auto options = sweep_options(flags.sweep, full);
  if (!options) return fail(options.error());
  std::vector<fs::path> files(flags.sweep.config_files.begin(), flags.sweep.config_files.end());
  auto loaded = config::load_configs(files, flags.sweep.runner_config);
  if (!loaded) return fail(loaded.error());
  runners = loaded->runners;
  return full ? sweep::plan_full_sweep(loaded->configs, loaded->runners, *options)
              : sweep::plan_test_config(loaded->configs, loaded->runners, *options);
}

std::optional<std::string> check_flags(const RunFlags& flags) {
  const auto& s = flags.sweep;
  const int sources = !flags.jobs_from.empty() + !flags.plan.empty() + !s.config_files.empty();
  if (sources == 0)
    return "give --config-files (master configs), --jobs-from (a matrix) or --plan (ixbench plan's matrix)";
  if (sources > 1) return "--config-files, --jobs-from and --plan exclude each other: give one";
  if (!s.config_keys.empty() && has_full_sweep_filter(s)) {
    return "--config-keys selects configs as `sweep test-config` does; the full-sweep filters (--model-prefix, "
           "--precision, --framework, --runner-type, --step-size, --min/max-conc, --max-tp, --max-ep, "
           "--single-node, --multi-node) do not apply to it";
  }
  if (s.config_keys.empty() && !s.conc.empty()) return "--conc needs --config-keys (as `sweep test-config`)";
  if (flags.parallel < 1) return fmt::format("--parallel must be at least 1, got {}", flags.parallel);
  if (flags.executor != "slurm" &&
      (!flags.partition.empty() || flags.time_limit_min != 0 || flags.cpus_per_task != 1)) {
    return "--partition, --time-limit and --cpus-per-task are for --executor slurm";
  }
  if (flags.executor == "slurm" && flags.gpus != 0) return "--gpus is for the local executor (Slurm allots GPUs)";
  if (flags.time_limit_min < 0 || flags.cpus_per_task < 1)
    return "--time-limit must not be negative and --cpus-per-task must be at least 1";
  if (flags.gpus < 0) return fmt::format("--gpus must not be negative, got {}", flags.gpus);
  if (flags.eval_limit < 0) return fmt::format("--eval-limit must not be negative, got {}", flags.eval_limit);
  if (flags.health_timeout_s <= 0) return "--health-timeout must be positive";
  if (flags.step_timeout_s < 0 || flags.agentic_duration_s < 0)
    return "--step-timeout and --agentic-duration must not be negative";
  return std::nullopt;
}

fs::path absolute_or_empty(const std::string& path) {
  return path.empty() ? fs::path() : fs::absolute(path);
}

// Paths go to job processes that may run elsewhere (another folder, a cluster node): absolute.
Result<run::JobSettings> job_settings(const RunFlags& flags) {
  run::JobSettings s;
  auto recipes = run::find_recipe_dir(flags.recipes);
  if (!recipes) return fail(recipes.error());
  s.recipes_dir = fs::absolute(*recipes);
  s.recipe = flags.recipe;
  s.golden_al_dir = fs::is_directory(flags.golden_al_dir) ? fs::absolute(flags.golden_al_dir) : fs::path();
  s.thresholds = absolute_or_empty(flags.thresholds);
  const char* env_gsm8k = std::getenv("IXBENCH_GSM8K_DIR");
  s.gsm8k_dir = absolute_or_empty(!flags.gsm8k_dir.empty() ? flags.gsm8k_dir : env_gsm8k ? env_gsm8k : "");
  s.trace = absolute_or_empty(flags.trace);
  s.eval_limit = flags.eval_limit;
  s.agentic_duration_s = flags.agentic_duration_s;
  s.health_timeout_s = flags.health_timeout_s;
  s.step_timeout_s = flags.step_timeout_s;
  s.predict = flags.predict;
  return s;
}

Result<std::unique_ptr<run::Executor>> make_executor(const RunFlags& flags) {
  if (flags.executor == "local") return run::make_local_executor(flags.parallel, flags.gpus);
  run::SlurmExecutorOptions slurm;
  if (!flags.partition.empty()) slurm.partition = flags.partition;
  slurm.time_limit = std::chrono::minutes(flags.time_limit_min);
  slurm.cpus_per_task = static_cast<std::uint32_t>(flags.cpus_per_task);
  slurm.max_running = flags.parallel_option->count() > 0 ? static_cast<std::uint32_t>(flags.parallel) : 0;
  return run::make_slurm_executor(slurm);
}

int run_run(const RunFlags& flags) {
  if (auto problem = check_flags(flags)) return usage_error(*problem);
  run::RunOptions options;
  auto rows = plan_rows(flags, options.runners);
  if (!rows) return report_error(rows.error());
  if (rows->empty()) return report_error(Error(ErrorCode::kInvalidArgument, "no jobs: the filters left no matrix row"));
  options.rows = std::move(*rows);
  auto settings = job_settings(flags);
  if (!settings) return report_error(settings.error());
  options.settings = std::move(*settings);
  options.db = flags.db;
  options.out = fs::absolute(flags.out);
  options.resume_run_id = flags.resume;
  options.report = !flags.no_report;
  options.command_line = run::own_command_line();
  options.ixbench_version = fmt::format("{} ({})", version_string(), git_hash());
  for (const auto& file : flags.sweep.config_files) options.inputs.emplace_back(file);
  if (!flags.jobs_from.empty()) options.inputs.emplace_back(flags.jobs_from);
  if (!flags.plan.empty()) options.inputs.emplace_back(flags.plan);
  if (fs::exists(flags.sweep.runner_config)) options.inputs.emplace_back(flags.sweep.runner_config);
  if (flags.dry_run) {
    auto plan = run::render_plan(options);
    if (!plan) return report_error(plan.error());
    std::fputs(plan->c_str(), stdout);
    return kExitOk;
  }
  auto executor = make_executor(flags);
  if (!executor) return report_error(executor.error());
  StopSignals stop_signals;
  auto summary = run::run_sweep(options, **executor, stderr);
  if (!summary) return report_error(summary.error());
  std::fputs(run::render_summary(*summary).c_str(), stdout);
  std::fflush(stdout);
  if (summary->interrupted) return 128 + StopSignals::signal();
  bool all_ok = summary->count(run::JobOutcome::kFailed) == 0 && summary->count(run::JobOutcome::kInterrupted) == 0 &&
                summary->count(run::JobOutcome::kNotRun) == 0;
  return all_ok ? kExitOk : kExitFailure;
}

int run_job_command(const JobFlags& flags) {
  auto text = files::read_text_file(flags.spec, 16 << 20, "a job spec (job.json)");
  if (!text) return report_error(text.error());
  auto spec = run::parse_job_spec(*text, flags.spec);
  if (!spec) return report_error(spec.error());
  fs::path dir = flags.dir.empty() ? fs::path(flags.spec).parent_path() : fs::path(flags.dir);
  StopSignals stop_signals;
  auto status = run::run_job(*spec, dir, StopSignals::flag());
  fmt::print("run job: {} {}{}\n", status.job_id, run::job_state_name(status.state),
             status.failed_step.empty() ? "" : " at " + status.failed_step + ": " + status.message);
  if (status.state == run::JobState::kInterrupted && StopSignals::stopped()) return 128 + StopSignals::signal();
  return status.state == run::JobState::kSucceeded ? kExitOk : kExitFailure;
}

void add_job_flags(CLI::App* cmd, RunFlags& f) {
  cmd->add_option("--recipes", f.recipes, "folder of recipes (<framework>.yaml, *.sh; default: the built-in recipes/)");
  cmd->add_option("--recipe", f.recipe,
                  "start every row's server with this recipe (e.g. sim: any matrix on the simulator, each row's "
                  "engine simulated)");
  cmd->add_option("--golden-al-dir", f.golden_al_dir,
                  "golden acceptance lengths (golden_al_distribution/*.yaml) forced on spec-decoding throughput runs")
      ->capture_default_str();
  cmd->add_option("--thresholds", f.thresholds, "eval thresholds (InferenceX's utils/evals/thresholds.yaml)");
  cmd->add_option("--gsm8k-dir", f.gsm8k_dir,
                  "GSM8K's test.jsonl/train.jsonl for eval rows (default: $IXBENCH_GSM8K_DIR)");
  cmd->add_option("--trace", f.trace, "agentic rows: the trace file or folder bench replay plays");
  cmd->add_option("--eval-limit", f.eval_limit, "GSM8K problems per eval (0 = all)")->capture_default_str();
  cmd->add_option("--agentic-duration", f.agentic_duration_s,
                  "agentic rows: profiling seconds (0 = the row's duration)")
      ->capture_default_str();
  cmd->add_option("--health-timeout", f.health_timeout_s, "seconds a server may take to answer /health")
      ->capture_default_str();
  cmd->add_option("--step-timeout", f.step_timeout_s, "longest benchmark or eval step in seconds (0 = none)")
      ->capture_default_str();
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* cmd =
      root.add_subcommand("run", "run a sweep: start each job's server, benchmark, eval, aggregate, store, report");
  auto flags = std::make_shared<RunFlags>();
  add_sweep_common_flags(cmd, flags->sweep, false);
  add_full_sweep_flags(cmd, flags->sweep);
  add_test_config_flags(cmd, flags->sweep, false);
  cmd->add_option("--jobs-from", flags->jobs_from,
                  "a job matrix (JSON, as `ixbench sweep` prints it) instead of configs");
  cmd->add_option("--plan", flags->plan,
                  "a changelog plan (`ixbench plan --format matrix`, or process_changelog.py's output): every "
                  "benchmark and eval row, with its stamped recipe fingerprint");
  cmd->add_option("--db", flags->db, "results store: a SQLite file or postgresql://...")->capture_default_str();
  cmd->add_option("--out", flags->out, "folder of runs (<out>/<run-id>/<job>/)")->capture_default_str();
  cmd->add_option("--resume", flags->resume, "resume this run: skip jobs stored, rerun failed and unfinished ones");
  cmd->add_flag("--dry-run", flags->dry_run, "print the jobs and the server command of each; run nothing");
  cmd->add_flag("--no-report", flags->no_report, "do not write the static report at the end");
  cmd->add_flag("--predict", flags->predict,
                "also predict each fixed-length job with the simulator (sim predict), stored as predicted beside it");
  cmd->add_option("--executor", flags->executor, "where jobs run")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  flags->parallel_option =
      cmd->add_option("--parallel", flags->parallel, "jobs at once (slurm: the array throttle; default none)")
          ->capture_default_str();
  cmd->add_option("--gpus", flags->gpus,
                  "local executor: GPUs of this machine shared among parallel jobs (0 = no accounting)")
      ->capture_default_str();
  cmd->add_option("--partition", flags->partition, "slurm: the partition (default: the cluster's)");
  cmd->add_option("--time-limit", flags->time_limit_min, "slurm: minutes per job (0 = the partition's limit)")
      ->capture_default_str();
  cmd->add_option("--cpus-per-task", flags->cpus_per_task, "slurm: CPUs per job")->capture_default_str();
  add_job_flags(cmd, *flags);
  registry.on_run(cmd, [flags] { return run_run(*flags); });

  auto* job = cmd->add_subcommand("job", "run one job from its spec file (what every executor starts)");
  auto job_flags = std::make_shared<JobFlags>();
  job->add_option("--spec", job_flags->spec, "the job's job.json")->required();
  job->add_option("--dir", job_flags->dir, "the job's folder (default: the spec's)");
  registry.on_run(job, [job_flags] { return run_job_command(*job_flags); });
}

}  // namespace

IX_REGISTER_COMMAND(run, setup);

}  // namespace ix::cli
