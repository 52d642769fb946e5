#include "run/job.h"

#include <gtest/gtest.h>

#include <string>

#include "common/file_io.h"
#include "run/job_runner.h"
#include "support/temp_files.h"
#include "unit/run/recipe_rows.h"

namespace ix::run {
namespace {

config::RunnerConfig runners() {
  config::RunnerConfig config;
  config.labels = {{"h200", {"h200-cw_00", "h200-cw_01"}}};
  return config;
}

TEST(PlanJobs, OneJobPerRowOnTheLabelsFirstRunnerWithFingerprintedStems) {
  auto row = testing::fixed_row("sim");
  row.runner = "h200";
  auto config = runners();
  auto jobs = plan_jobs({&row, 1}, &config);
  ASSERT_EQ(jobs.size(), 1u);
  const Job& job = jobs.front();
  EXPECT_EQ(job.runner, "h200-cw_00");
  EXPECT_EQ(job.runner_label, "h200");
  EXPECT_EQ(job.fingerprint, sweep::recipe_fingerprint(row));
  ASSERT_EQ(job.stems.size(), row.conc.size());
  EXPECT_EQ(job.stems.front(), sweep::result_file_stem(row, row.conc.front(), "h200-cw_00", job.fingerprint));
  EXPECT_EQ(job.id, job.stems.front());
  EXPECT_TRUE(job.throughput);
}

TEST(PlanJobs, AConcreteRunnerOfTheRowIsKeptAndItsLabelFound) {
  auto row = testing::fixed_row("sim");
  row.runner = "h200-cw_01";
  auto config = runners();
  auto jobs = plan_jobs({&row, 1}, &config);
  EXPECT_EQ(jobs.front().runner, "h200-cw_01");
  EXPECT_EQ(jobs.front().runner_label, "h200");
}

TEST(PlanJobs, EvalOnlyRowsRunNoThroughput) {
  auto row = testing::fixed_row("sim");
  row.eval_only = true;
  row.run_eval = true;
  auto jobs = plan_jobs({&row, 1}, nullptr);
  EXPECT_FALSE(jobs.front().throughput);
  EXPECT_TRUE(jobs.front().eval);
}

TEST(JobSpec, RoundTripsTheJobAndItsSettings) {
  auto row = testing::fixed_row("sim");
  row.runner = "h200";
  auto config = runners();
  Job job = plan_jobs({&row, 1}, &config).front();
  JobSettings settings;
  settings.recipes_dir = "/r";
  settings.recipe = "sim";
  settings.trace = "/t.jsonl";
  settings.eval_limit = 7;
  settings.agentic_duration_s = 30;
  settings.predict = true;
  auto spec = parse_job_spec(job_spec_json(job, settings), "job.json");
  ASSERT_TRUE(spec) << spec.error().message();
  EXPECT_EQ(spec->job.id, job.id);
  EXPECT_EQ(spec->job.stems, job.stems);
  EXPECT_EQ(spec->job.runner, "h200-cw_00");
  EXPECT_EQ(spec->settings.recipes_dir, "/r");
  EXPECT_EQ(spec->settings.recipe, "sim");
  EXPECT_EQ(spec->settings.trace, "/t.jsonl");
  EXPECT_EQ(spec->settings.eval_limit, 7);
  EXPECT_EQ(spec->settings.agentic_duration_s, 30);
  EXPECT_TRUE(spec->settings.predict);
}

TEST(JobSpec, BadSpecsNameTheFileAndTheField) {
  auto not_object = parse_job_spec("[1]", "a/job.json");
  ASSERT_FALSE(not_object);
  EXPECT_NE(not_object.error().message().find("a/job.json: not a JSON object"), std::string::npos);
  auto no_row = parse_job_spec(R"({"job": {}, "settings": {}})", "a/job.json");
  ASSERT_FALSE(no_row);
  EXPECT_NE(no_row.error().message().find("\"row\" must be an object"), std::string::npos);
  auto syntax = parse_job_spec("{\"job\": ", "a/job.json");
  ASSERT_FALSE(syntax);
  EXPECT_NE(syntax.error().message().find("a/job.json"), std::string::npos);
  auto row = testing::fixed_row("sim");
  Job job = plan_jobs({&row, 1}, nullptr).front();
  std::string text = job_spec_json(job, JobSettings{});
  text.replace(text.find("\"eval_limit\":0"), 14, "\"eval_limit\":\"x\"");
  auto bad_field = parse_job_spec(text, "a/job.json");
  ASSERT_FALSE(bad_field);
  EXPECT_NE(bad_field.error().message().find("a/job.json: settings"), std::string::npos) << bad_field.error().message();
  EXPECT_NE(bad_field.error().message().find("eval_limit"), std::string::npos);
}

TEST(JobStatus, ReadsWhatTheJobWrote) {
  const auto dir = ix::testing::scratch_dir("job_status");
  JobStatus status;
  status.job_id = "j";
  status.state = JobState::kFailed;
  status.failed_step = "server";
  status.message = "the server exited (exit 1)";
  status.steps.push_back({"server", false, 1.5, "x"});
  ASSERT_TRUE(files::write_file(dir / "status.json", job_status_json(status)));
  auto read = read_job_status(dir);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->state, JobState::kFailed);
  EXPECT_EQ(read->failed_step, "server");
  EXPECT_EQ(read->message, status.message);
  auto missing = read_job_status(dir / "none");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace ix::run
