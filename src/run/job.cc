#include "run/job.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "common/json_io.h"
#include "sweep/row_parse.h"

namespace ix::run {

namespace {

std::string label_of(const sweep::SweepRow& row, const config::RunnerConfig* runners) {
  if (!runners) return row.runner;
  for (const auto& [label, nodes] : runners->labels) {
    if (label == row.runner) return label;
    for (const auto& node : nodes) {
      if (node == row.runner) return label;
    }
  }
  return row.runner;
}

std::string concrete_runner(const sweep::SweepRow& row, const std::string& label, const config::RunnerConfig* runners) {
  if (row.runner != label || !runners) return row.runner;
  const auto* nodes = runners->nodes(label);
  return nodes && !nodes->empty() ? nodes->front() : row.runner;
}

Job make_job(const sweep::SweepRow& row, const config::RunnerConfig* runners) {
  Job job;
  job.row = row;
  job.concs = row.conc;
  job.runner_label = label_of(row, runners);
  job.runner = concrete_runner(row, job.runner_label, runners);
  // A row `plan` stamped keeps its stamp: the planner fingerprinted the generator's row, which
  // the matrix it prints no longer spells byte for byte.
  job.fingerprint = row.stamped_fingerprint.empty() ? sweep::recipe_fingerprint(row) : row.stamped_fingerprint;
  for (int64_t conc : job.concs) job.stems.push_back(sweep::result_file_stem(row, conc, job.runner, job.fingerprint));
  job.id = job.stems.empty() ? row.exp_name : job.stems.front();
  job.throughput = !row.eval_only;
  job.eval = row.eval_only || row.run_eval.value_or(false);
  return job;
}

boost::json::object settings_json(const JobSettings& s) {
  return {{"recipes_dir", s.recipes_dir.string()},
          {"recipe", s.recipe},
          {"golden_al_dir", s.golden_al_dir.string()},
          {"thresholds", s.thresholds.string()},
          {"gsm8k_dir", s.gsm8k_dir.string()},
          {"trace", s.trace.string()},
          {"eval_limit", s.eval_limit},
          {"agentic_duration_s", s.agentic_duration_s},
          {"health_timeout_s", s.health_timeout_s},
          {"step_timeout_s", s.step_timeout_s},
          {"prompts_per_conc", s.prompts_per_conc},
          {"warmups_per_conc", s.warmups_per_conc},
          {"random_range_ratio", s.random_range_ratio},
          {"predict", s.predict}};
}

// The error of a spec field, prefixed with where it is.
std::unexpected<Error> at(std::string_view where, const Error& error) {
  return fail(error.code(), fmt::format("{}: {}", where, error.message()));
}

Result<JobSettings> read_settings(const boost::json::object& object, std::string_view where) {
  JobSettings s;
  std::pair<const char*, std::filesystem::path*> paths[] = {{"recipes_dir", &s.recipes_dir},
                                                            {"golden_al_dir", &s.golden_al_dir},
                                                            {"thresholds", &s.thresholds},
                                                            {"gsm8k_dir", &s.gsm8k_dir},
                                                            {"trace", &s.trace}};
  for (auto [key, target] : paths) {
    auto value = ix::json::get_string(object, key);
    if (!value) return at(where, value.error());
    *target = *value;
  }
  auto recipe = ix::json::get_string(object, "recipe");
  if (!recipe) return at(where, recipe.error());
  s.recipe = *recipe;
  std::pair<const char*, int64_t*> integers[] = {{"eval_limit", &s.eval_limit},
                                                 {"prompts_per_conc", &s.prompts_per_conc},
                                                 {"warmups_per_conc", &s.warmups_per_conc}};
  for (auto [key, target] : integers) {
    auto value = ix::json::get_int(object, key);
    if (!value) return at(where, value.error());
    *target = *value;
  }
  std::pair<const char*, double*> numbers[] = {{"agentic_duration_s", &s.agentic_duration_s},
                                               {"health_timeout_s", &s.health_timeout_s},
                                               {"step_timeout_s", &s.step_timeout_s},
                                               {"random_range_ratio", &s.random_range_ratio}};
  for (auto [key, target] : numbers) {
    auto value = ix::json::get_number(object, key);
    if (!value) return at(where, value.error());
    *target = *value;
  }
  auto predict = ix::json::get_bool(object, "predict");
  if (!predict) return at(where, predict.error());
  s.predict = *predict;
  return s;
}

}  // namespace

std::vector<Job> plan_jobs(std::span<const sweep::SweepRow> rows, const config::RunnerConfig* runners) {
  std::vector<Job> jobs;
  jobs.reserve(rows.size());
  for (const auto& row : rows) jobs.push_back(make_job(row, runners));
  return jobs;
}

std::string job_spec_json(const Job& job, const JobSettings& settings) {
  boost::json::object spec;
  spec["job"] = boost::json::object{{"id", job.id}, {"runner", job.runner}, {"runner_label", job.runner_label}};
  spec["row"] = sweep::to_json(job.row);
  spec["settings"] = settings_json(settings);
  return boost::json::serialize(spec) + "\n";
}

Result<JobSpec> parse_job_spec(std::string_view text, std::string_view file_name) {
  auto parsed = ix::json::parse(text, file_name);
  if (!parsed) return fail(parsed.error());
  if (!parsed->is_object()) return fail(ErrorCode::kInvalidArgument, fmt::format("{}: not a JSON object", file_name));
  const auto& top = parsed->get_object();
  std::string where(file_name);
  for (const char* key : {"job", "row", "settings"}) {
    const auto* value = top.if_contains(key);
    if (!value || !value->is_object()) {
      return fail(ErrorCode::kInvalidArgument, fmt::format("{}: \"{}\" must be an object", where, key));
    }
  }
  auto row = sweep::row_from_json(top.at("row").get_object(), where + ": row");
  if (!row) return fail(row.error());
  auto settings = read_settings(top.at("settings").get_object(), where + ": settings");
  if (!settings) return fail(settings.error());
  const auto& job_object = top.at("job").get_object();
  auto runner = ix::json::get_string(job_object, "runner");
  if (!runner) return at(where + ": job", runner.error());
  auto label = ix::json::get_string(job_object, "runner_label");
  if (!label) return at(where + ": job", label.error());
  JobSpec spec{make_job(*row, nullptr), *settings};
  spec.job.runner = *runner;
  spec.job.runner_label = *label;
  spec.job.stems.clear();
  for (int64_t conc : spec.job.concs) {
    spec.job.stems.push_back(sweep::result_file_stem(spec.job.row, conc, spec.job.runner, spec.job.fingerprint));
  }
  spec.job.id = spec.job.stems.empty() ? spec.job.row.exp_name : spec.job.stems.front();
  return spec;
}

}  // namespace ix::run
