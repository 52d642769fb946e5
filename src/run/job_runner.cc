#include "run/job_runner.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>
#include <optional>
#include <set>
#include <thread>

#include "common/clock.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "run/engine_server.h"
#include "run/gpu_sampler.h"
#include "run/process.h"
#include "run/recipe.h"

namespace ix::run {
namespace {

namespace fs = std::filesystem;
using SteadyTime = std::chrono::steady_clock;

constexpr const char* kIsoFormat = "%Y-%m-%dT%H:%M:%SZ";

// The state of one running job; each step appends to its status and its records.
class JobRun {
 public:
  JobRun(const JobSpec& spec, fs::path dir, const std::atomic<bool>& stop)
      : spec_(spec), job_(spec.job), dir_(std::move(dir)), stop_(stop) {
    status_.job_id = job_.id;
    status_.started_at = utc_now_text(kIsoFormat);
  }

  JobStatus run();

 private:
  bool prepare();
  bool render(bool eval_server);
  bool eval_server();
  bool start_server(const std::string& telemetry_csv = "gpu_metrics.csv");
  bool bench_step(size_t index);
  bool eval_steps(int64_t conc);
  bool aggregate_step(size_t index, const fs::path& out_dir, const fs::path& raw, const fs::path& power_csv);
  bool predict_steps();
  void stop_everything();
  // Runs argv (this ixbench: argv[0] is replaced) as step `name`, output to `<log>.log`, watching the
  // server when one runs. False on failure (recorded).
  bool step(const std::string& name, std::vector<std::string> argv, const std::string& log, double timeout_s);
  std::optional<ExitStatus> watch(ChildProcess& child, double timeout_s);
  bool record(const std::string& name, bool ok, SteadyTime::time_point began, std::string message = {});
  void note(const std::string& line);
  JobStatus finish();
  fs::path raw_path(size_t index) const { return dir_ / (job_.stems[index] + ".json"); }
  fs::path replay_dir(size_t index) const { return dir_ / job_.stems[index]; }

  const JobSpec& spec_;
  const Job& job_;
  fs::path dir_;
  const std::atomic<bool>& stop_;
  JobStatus status_;
  RecipeBook book_;  // loaded once, by prepare()
  ServerLaunch launch_;
  std::optional<EngineServer> server_;
  std::optional<GpuSampler> sampler_;
  bool interrupted_ = false;
};

void JobRun::note(const std::string& line) {
  (void)files::append_line(dir_ / "steps.log", fmt::format("{} {}", utc_now_text(kIsoFormat), line));
}

bool JobRun::record(const std::string& name, bool ok, SteadyTime::time_point began, std::string message) {
  double seconds = std::chrono::duration<double>(SteadyTime::now() - began).count();
  note(fmt::format("{} {} ({:.1f} s){}", name, ok ? "ok" : "FAILED", seconds, message.empty() ? "" : ": " + message));
  if (!ok && status_.failed_step.empty()) {
    status_.failed_step = name;
    status_.message = message;
  }
  status_.steps.push_back({name, ok, seconds, std::move(message)});
  return ok;
}

bool JobRun::prepare() {
  auto began = SteadyTime::now();
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error)
    return record("prepare", false, began, fmt::format("cannot create {}: {}", dir_.string(), error.message()));
  if (auto ok = files::check_directory_writable(dir_); !ok)
    return record("prepare", false, began, ok.error().message());
  auto row = files::write_file(dir_ / "row.json", boost::json::serialize(sweep::to_json(job_.row)) + "\n");
  if (!row) return record("prepare", false, began, row.error().message());
  auto book = load_recipe_book(spec_.settings.recipes_dir);
  if (!book) return record("recipe", false, began, book.error().message());
  book_ = std::move(*book);
  return render(job_.eval && !job_.throughput);
}

// Renders the server; `eval_server`: the one evals run against, never forced to the golden AL.
bool JobRun::render(bool eval_server) {
  auto began = SteadyTime::now();
  auto port = free_local_port();
  if (!port) return record("recipe", false, began, port.error().message());
  RecipeInputs inputs = recipe_inputs(job_, spec_.settings, *port, dir_, eval_server);
  auto launch = render_server(book_, inputs);
  if (!launch) return record("recipe", false, began, launch.error().message());
  launch_ = std::move(*launch);
  for (const auto& [path, content] : launch_.files) {
    if (auto ok = files::write_file(path, content); !ok) return record("recipe", false, began, ok.error().message());
  }
  (void)files::append_line(dir_ / "server_command.sh", launch_.command_line());
  return record(eval_server && job_.throughput ? "recipe (eval server)" : "recipe", true, began);
}

// A throughput server forced to the golden AL is replaced by an unforced one for the evals.
bool JobRun::eval_server() {
  if (!launch_.forced_acceptance_length) return true;
  stop_everything();
  note("restarting the server without the forced acceptance length for the eval");
  return render(true) && start_server("gpu_metrics_eval.csv");
}

bool JobRun::start_server(const std::string& telemetry_csv) {
  auto began = SteadyTime::now();
  note("server starting: " + launch_.command_line());
  auto server = EngineServer::start(launch_, dir_ / "server.log", spec_.settings.health_timeout_s, stop_);
  if (!server) {
    interrupted_ = stop_.load();
    return record("server", false, began, server.error().message());
  }
  server_.emplace(std::move(*server));
  std::string telemetry;
  sampler_ = GpuSampler::start(dir_ / telemetry_csv, telemetry);
  return record("server", true, began, telemetry);
}

std::optional<ExitStatus> JobRun::watch(ChildProcess& child, double timeout_s) {
  auto deadline = SteadyTime::now() + std::chrono::duration<double>(timeout_s > 0 ? timeout_s : 1e9);
  while (true) {
    if (auto status = child.wait(0.2)) return status;
    if (stop_.load()) {
      interrupted_ = true;
      child.stop(10);
      return std::nullopt;
    }
    if (server_ && server_->exited()) {
      child.stop(10);
      return std::nullopt;
    }
    if (SteadyTime::now() >= deadline) {
      child.stop(10);
      return std::nullopt;
    }
  }
}

bool JobRun::step(const std::string& name, std::vector<std::string> argv, const std::string& log, double timeout_s) {
  auto began = SteadyTime::now();
  argv.front() = self_executable().string();
  (void)files::append_line(dir_ / "commands.sh", shell_command(argv));
  note(name + " running");
  auto child = ChildProcess::spawn({argv, {}, dir_ / (log + ".log"), {}, {}});
  if (!child) return record(name, false, began, child.error().message());
  auto status = watch(*child, timeout_s);
  if (!status) {
    if (interrupted_) return record(name, false, began, "interrupted");
    if (server_ && server_->exited()) return record(name, false, began, server_->death_report());
    return record(name, false, began, fmt::format("ran past its timeout ({:g} s) and was stopped", timeout_s));
  }
  // The step may end first (a benchmark given --server-pid stops when the server is gone): a server
  // that died during the step fails it, whatever the step's own exit says.
  if (server_ && server_->exited()) return record(name, false, began, server_->death_report());
  if (!status->ok()) {
    std::string tail = tail_file(dir_ / (log + ".log"), 8);
    return record(name, false, began, fmt::format("{}; the last lines of {}.log:\n{}", status->describe(), log, tail));
  }
  return record(name, true, began);
}

std::vector<std::string> bench_serve_argv(const Job& job, const ServerLaunch& launch, const JobSettings& settings,
                                          int64_t conc, const fs::path& dir, const std::string& stem, pid_t server) {
  std::vector<std::string> argv = {"ixbench",
                                   "bench",
                                   "serve",
                                   "--base-url",
                                   launch.base_url,
                                   "--backend",
                                   launch.bench_backend,
                                   "--model",
                                   launch.served_model,
                                   "--dataset-name",
                                   "random",
                                   "--random-input-len",
                                   std::to_string(job.row.isl),
                                   "--random-output-len",
                                   std::to_string(job.row.osl),
                                   "--random-range-ratio",
                                   fmt::format("{:g}", settings.random_range_ratio),
                                   "--num-prompts",
                                   std::to_string(settings.prompts_per_conc * conc),
                                   "--max-concurrency",
                                   std::to_string(conc),
                                   "--request-rate",
                                   "inf",
                                   "--ignore-eos",
                                   "--num-warmups",
                                   std::to_string(settings.warmups_per_conc * conc),
                                   "--percentile-metrics",
                                   "ttft,tpot,itl,e2el",
                                   "--save-result",
                                   "--result-dir",
                                   dir.string(),
                                   "--result-filename",
                                   stem + ".json",
                                   "--server-pid",
                                   std::to_string(server),
                                   "--no-progress"};
  if (!launch.tokenizer.empty()) argv.insert(argv.end(), {"--tokenizer", launch.tokenizer});
  return argv;
}

std::vector<std::string> bench_replay_argv(const Job& job, const ServerLaunch& launch, const JobSettings& settings,
                                           int64_t conc, const fs::path& result_dir, pid_t server) {
  double duration = settings.agentic_duration_s > 0 ? settings.agentic_duration_s : double(job.row.duration_s);
  std::vector<std::string> argv = {"ixbench",
                                   "bench",
                                   "replay",
                                   "--base-url",
                                   launch.base_url,
                                   "--model",
                                   launch.served_model,
                                   "--concurrency",
                                   std::to_string(conc),
                                   "--duration",
                                   fmt::format("{:g}", duration),
                                   "--artifact-dir",
                                   (result_dir / "aiperf_artifacts").string(),
                                   "--server-pid",
                                   std::to_string(server),
                                   "--no-progress"};
  if (!launch.tokenizer.empty()) argv.insert(argv.end(), {"--tokenizer", launch.tokenizer});
  if (!settings.trace.empty()) argv.insert(argv.end(), {"--trace", settings.trace.string()});
  return argv;
}

bool JobRun::bench_step(size_t index) {
  int64_t conc = job_.concs[index];
  pid_t pid = server_->pid();
  auto argv = job_.row.is_agentic()
                  ? bench_replay_argv(job_, launch_, spec_.settings, conc, replay_dir(index), pid)
                  : bench_serve_argv(job_, launch_, spec_.settings, conc, dir_, job_.stems[index], pid);
  return step(fmt::format("bench conc={}", conc), std::move(argv), fmt::format("bench_conc{}", conc),
              spec_.settings.step_timeout_s);
}

// The concurrency an eval runs at: the row's own (single node), eval-conc or every one (multi-node).
bool evaluates(const Job& job, int64_t conc) {
  if (!job.eval) return false;
  if (!job.row.is_multinode() || job.row.eval_all_concs) return true;
  return job.row.eval_conc ? *job.row.eval_conc == conc : conc == job.concs.back();
}

bool JobRun::eval_steps(int64_t conc) {
  const fs::path eval_dir = dir_ / "eval";
  std::vector<std::string> argv = {"ixbench",
                                   "eval",
                                   "gsm8k",
                                   "--base-url",
                                   launch_.base_url,
                                   "--model",
                                   launch_.served_model,
                                   "--concurrency",
                                   std::to_string(conc),
                                   "--output",
                                   (eval_dir / "results.json").string(),
                                   "--model-prefix",
                                   job_.row.model_prefix,
                                   "--server-pid",
                                   std::to_string(server_->pid()),
                                   "--no-progress"};
  if (spec_.settings.eval_limit > 0) argv.insert(argv.end(), {"--limit", std::to_string(spec_.settings.eval_limit)});
  if (!spec_.settings.gsm8k_dir.empty()) argv.insert(argv.end(), {"--dataset-dir", spec_.settings.gsm8k_dir.string()});
  if (!job_.row.is_agentic()) argv.insert(argv.end(), {"--max-model-len", std::to_string(job_.row.max_model_len())});
  if (!step(fmt::format("eval conc={}", conc), std::move(argv), fmt::format("eval_conc{}", conc),
            spec_.settings.step_timeout_s)) {
    return false;
  }
  std::vector<std::string> check = {
      "ixbench", "eval", "check", "--results", eval_dir.string(), "--model-prefix", job_.row.model_prefix};
  if (!spec_.settings.thresholds.empty())
    check.insert(check.end(), {"--thresholds", spec_.settings.thresholds.string()});
  return step(fmt::format("eval check conc={}", conc), std::move(check), fmt::format("eval_check_conc{}", conc), 0);
}

// The variables the aggregation reads beside the row's (an --env-file: the job's environment,
// whatever ixbench's own holds, so a stale export in the user's shell cannot leak in).
std::string aggregate_env(const Job& job, size_t index) {
  boost::json::object env{{"RESULT_FILENAME", job.stems[index]},
                          {"RUNNER_NAME", job.runner},
                          {"RECIPE_FINGERPRINT", job.fingerprint},
                          {"CONC", std::to_string(job.concs[index])}};
  if (job.row.is_multinode() && !job.row.is_agentic()) {
    env["PREFILL_GPUS"] = std::to_string(job.row.prefill.num_worker * job.row.prefill.tp);
    env["DECODE_GPUS"] = std::to_string(job.row.decode.num_worker * job.row.decode.tp);
  }
  return boost::json::serialize(env) + "\n";
}

bool JobRun::aggregate_step(size_t index, const fs::path& out_dir, const fs::path& raw, const fs::path& power_csv) {
  const std::string& stem = job_.stems[index];
  const fs::path env_file = out_dir / fmt::format("aggregate-env-c{}.json", job_.concs[index]);
  if (auto ok = files::write_file(env_file, aggregate_env(job_, index)); !ok) {
    return record("aggregate", false, SteadyTime::now(), ok.error().message());
  }
  bool agentic = job_.row.is_agentic();
  std::vector<std::string> argv = {"ixbench",     "aggregate",
                                   "--row",       (dir_ / "row.json").string(),
                                   "--env-file",  env_file.string(),
                                   "--raw",       raw.string(),
                                   "--out",       (out_dir / ("agg_" + stem + ".json")).string(),
                                   "--power-csv", power_csv.string(),
                                   "--quiet"};
  if (agentic) argv.insert(argv.end(), {"--scenario", "agentic-coding"});
  std::string what = out_dir == dir_ ? "aggregate" : "aggregate predicted";
  return step(fmt::format("{} conc={}", what, job_.concs[index]), std::move(argv),
              fmt::format("{}_conc{}", what == "aggregate" ? "aggregate" : "aggregate_predicted", job_.concs[index]),
              0);
}

// `sim serve`'s engine flags as `sim predict` takes them (the serving-only flags left out).
std::vector<std::string> predict_argv(const std::vector<std::string>& serve) {
  static const std::set<std::string> kServeOnly = {"--port", "--served-model-name", "--gsm8k-answers", "--tokenizer"};
  std::vector<std::string> out = {"ixbench", "sim", "predict"};
  for (size_t i = 3; i < serve.size(); ++i) {
    if (kServeOnly.count(serve[i]) > 0) {
      ++i;  // and its value
      continue;
    }
    out.push_back(serve[i]);
  }
  return out;
}

// The simulator's prediction of the job's fixed-length runs, beside the run's measured results
// (<run>/predicted/<job-id>/agg_<stem>.json, stored as predicted).
bool JobRun::predict_steps() {
  auto began = SteadyTime::now();
  RecipeInputs inputs = recipe_inputs(job_, spec_.settings, 1, dir_, false);
  inputs.recipe = "sim";  // the job's engine, simulated
  inputs.evaluates = false;
  auto launch = render_server(book_, inputs);
  if (!launch) return record("predict", false, began, launch.error().message());
  const fs::path out = dir_.parent_path() / "predicted" / job_.id;
  std::error_code error;
  fs::create_directories(out / "raw", error);
  if (error) return record("predict", false, began, fmt::format("cannot create {}: {}", out.string(), error.message()));
  std::string concs;
  for (int64_t c : job_.concs) concs += (concs.empty() ? "" : ",") + std::to_string(c);
  auto argv = predict_argv(launch->argv);
  argv.insert(argv.end(), {"--isl", std::to_string(job_.row.isl), "--osl", std::to_string(job_.row.osl), "--conc",
                           concs, "--result-dir", (out / "raw").string()});
  if (!step("predict", std::move(argv), "predict", 0)) return false;
  for (size_t i = 0; i < job_.concs.size(); ++i) {
    auto raw = files::files_under(out / "raw", fmt::format("_conc{}.json", job_.concs[i]));
    if (!raw || raw->size() != 1)
      return record("predict", false, began, fmt::format("sim predict wrote no result of conc {}", job_.concs[i]));
    const fs::path named = out / (job_.stems[i] + ".json");
    fs::rename(raw->front(), named, error);
    if (error) return record("predict", false, began, error.message());
    if (!aggregate_step(i, out, named, out / "gpu_metrics.csv")) return false;
  }
  return true;
}

void JobRun::stop_everything() {
  if (sampler_) sampler_->stop();
  sampler_.reset();
  if (server_) {
    auto status = server_->stop(30);
    note("server stopped (" + status.describe() + ")");
  }
  server_.reset();
}

JobStatus JobRun::finish() {
  stop_everything();
  status_.finished_at = utc_now_text(kIsoFormat);
  status_.state = interrupted_ || stop_.load()  ? JobState::kInterrupted
                  : status_.failed_step.empty() ? JobState::kSucceeded
                                                : JobState::kFailed;
  note(fmt::format("job {}", job_state_name(status_.state)));
  (void)files::write_file(dir_ / "status.json", job_status_json(status_));
  return status_;
}

JobStatus JobRun::run() {
  if (!prepare() || !start_server()) return finish();
  bool ok = true;
  for (size_t i = 0; i < job_.concs.size() && ok && job_.throughput; ++i) ok = bench_step(i);
  bool eval_server_ready = false;
  for (int64_t conc : job_.concs) {
    if (!ok || !evaluates(job_, conc)) continue;
    if (!eval_server_ready) ok = eval_server_ready = eval_server();
    if (ok) ok = eval_steps(conc);
  }
  stop_everything();  // the last telemetry sample lands before the aggregation reads it
  for (size_t i = 0; i < job_.concs.size() && ok && job_.throughput; ++i) {
    ok = aggregate_step(i, dir_, job_.row.is_agentic() ? replay_dir(i) : raw_path(i), dir_ / "gpu_metrics.csv");
  }
  if (ok && spec_.settings.predict && job_.throughput && !job_.row.is_agentic()) ok = predict_steps();
  return finish();
}

}  // namespace

std::string_view job_state_name(JobState state) {
  switch (state) {
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kInterrupted: return "interrupted";
  }
  return "failed";
}

RecipeInputs recipe_inputs(const Job& job, const JobSettings& settings, int port, const fs::path& job_dir,
                           bool eval_server) {
  return {.row = &job.row,
          .conc = job.concs.empty() ? 0 : job.concs.front(),
          .runner = job.runner,
          .hardware = job.runner_label,
          .port = port,
          .ixbench = self_executable(),
          .job_dir = job_dir,
          .eval_run = eval_server,
          .golden_al_dir = settings.golden_al_dir,
          .recipe = settings.recipe,
          .evaluates = job.eval,
          .gsm8k_dir = settings.gsm8k_dir};
}

JobStatus run_job(const JobSpec& spec, const fs::path& job_dir, const std::atomic<bool>& stop) {
  return JobRun(spec, job_dir, stop).run();
}

std::string job_status_json(const JobStatus& status) {
  boost::json::array steps;
  for (const auto& step : status.steps) {
    steps.push_back({{"name", step.name}, {"ok", step.ok}, {"seconds", step.seconds}, {"message", step.message}});
  }
  boost::json::object out{
      {"job", status.job_id},      {"state", job_state_name(status.state)}, {"failed_step", status.failed_step},
      {"message", status.message}, {"started_at", status.started_at},       {"finished_at", status.finished_at},
      {"steps", std::move(steps)}};
  return ix::json::to_pretty_string(out);
}

Result<JobStatus> read_job_status(const fs::path& job_dir) {
  const fs::path file = job_dir / "status.json";
  if (!fs::exists(file))
    return fail(ErrorCode::kNotFound, fmt::format("{} has no status.json (the job did not finish)", job_dir.string()));
  auto parsed = ix::json::read_file(file, 16 << 20, "a job status file");
  if (!parsed) return fail(parsed.error());
  if (!parsed->is_object()) return fail(ErrorCode::kParse, fmt::format("{}: not a JSON object", file.string()));
  const auto& object = parsed->get_object();
  JobStatus status;
  auto text = [&](const char* key) {
    auto value = ix::json::get_string(object, key);
    return value ? *value : std::string();
  };
  status.job_id = text("job");
  std::string state = text("state");
  status.state = state == "succeeded"     ? JobState::kSucceeded
                 : state == "interrupted" ? JobState::kInterrupted
                                          : JobState::kFailed;
  status.failed_step = text("failed_step");
  status.message = text("message");
  status.started_at = text("started_at");
  status.finished_at = text("finished_at");
  return status;
}

}  // namespace ix::run
