// Every option of every ixbench command, parsed once and run into the command's first real step.
//
// The commands and their options come from the binary itself (`ixbench --cli-json`,
// src/cli/cli_schema.h), not from a list kept here: an option added tomorrow is run tomorrow. Each
// run is a command's base command line below with one option appended: a flag bare, an option
// with the value of its sample (kSamples of the command), else its default, else its first
// choice. An option that takes a value and has none of these fails the test, naming it: add a
// sample. Run against the asan preset's build (IXBENCH_BINARY_UNDER_TEST; scripts/test.sh does)
// this catches what only a sanitizer sees: a flag bound to storage its run callback does not own
// is written while parsing, after setup() returned (bench serve's --ignore-eos and
// --trust-remote-code did: exit 139 after the result was written).
//
// Each run must end by itself (a server: stopped with SIGTERM once it listens), not by a signal,
// with no sanitizer report on stderr, and exit 0 — or exit 1 with one clean `ixbench: error:` line
// where its sample says why that is the expected outcome. Never 2: a sample must be accepted.
// Runs go in parallel, two per core (IXBENCH_TEST_JOBS=N to change).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/json_io.h"
#include "support/server_process.h"
#include "support/subprocess.h"

namespace ix::testing {
namespace {

// ---- The command line as the binary describes it ----

struct OptionInfo {
  std::string name;                // primary name: "--tp", or a positional's name ("files")
  std::vector<std::string> names;  // every name it answers to ("--enable-prefix-caching", "--no-enable-...")
  bool flag = false;
  bool positional = false;
  int64_t expected_min = 0;
  std::string default_value;
  std::vector<std::string> choices;
};

struct CommandInfo {
  std::string path;  // "bench serve"
  std::vector<OptionInfo> options;
};

struct Listing {
  std::vector<OptionInfo> global_options;
  std::vector<CommandInfo> commands;
};

std::vector<OptionInfo> options_of(const boost::json::array& array) {
  std::vector<OptionInfo> out;
  for (const auto& item : array) {
    const auto& o = item.as_object();
    OptionInfo option;
    option.name = o.at("name").as_string().c_str();
    for (const auto& name : o.at("names").as_array()) option.names.emplace_back(name.as_string().c_str());
    option.flag = o.at("flag").as_bool();
    option.positional = o.at("positional").as_bool();
    option.expected_min = o.at("expected_min").as_int64();
    option.default_value = o.at("default").as_string().c_str();
    for (const auto& choice : o.at("choices").as_array()) option.choices.emplace_back(choice.as_string().c_str());
    out.push_back(std::move(option));
  }
  return out;
}

Listing read_listing() {
  const auto run = run_ixbench({"--cli-json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  auto parsed = json::parse(run.out, "ixbench --cli-json");
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().to_string());
  Listing listing;
  if (!parsed || !parsed->is_object()) return listing;
  const auto& root = parsed->as_object();
  listing.global_options = options_of(root.at("global_options").as_array());
  for (const auto& item : root.at("commands").as_array()) {
    const auto& c = item.as_object();
    listing.commands.push_back({c.at("path").as_string().c_str(), options_of(c.at("options").as_array())});
  }
  return listing;
}

// ---- What each command is given ----

// What a run appends to its command's base command line for one option: the option and its
// value(s), with any option it needs (--ramp-up-strategy and its rates). `{name}` placeholders as
// in the base commands.
struct Sample {
  Sample(std::initializer_list<std::string> list) : args(list) {}
  std::vector<std::string> args;
  std::string exits_1;               // why this run fails by design (exit 1); empty: it must exit 0
  std::string stderr_shows;          // with exits_1: what stderr says instead of one `ixbench: error:` line
  std::optional<std::string> input;  // stdin instead of the command's
  std::vector<std::string> drops;    // base options this run leaves out (one that excludes the option)
};

// A run that must exit 1, for the reason given. Its stderr must end with the one line
// `ixbench: error: ...` of a command that refuses its input, or, for a benchmark run that ran and
// failed (bench serve reports those as InferenceX's client does, in its log), show `stderr_shows`.
Sample fails_because(Sample sample, std::string why, std::string stderr_shows = "") {
  sample.exits_1 = std::move(why);
  sample.stderr_shows = std::move(stderr_shows);
  return sample;
}

// A run without the base's `options` (`run --jobs-from` instead of its base's --config-files).
Sample dropping(Sample sample, std::vector<std::string> options) {
  sample.drops = std::move(options);
  return sample;
}

Sample with_input(Sample sample, std::string input) {
  sample.input = std::move(input);
  return sample;
}

using Samples = std::map<std::string, Sample>;  // by option name (any of its names)

struct CommandCase {
  std::vector<std::string> base;  // after the command path
  std::string input;              // stdin
  bool server = false;            // runs until signalled: stopped with SIGTERM once it listens
  Samples samples;
};

// Placeholders: {fixture} (files written once for all runs), {tmp} (a fresh directory per run),
// {source} (the project's tree), {server} and {server_pid} (the `sim serve` bench serve runs
// against), and the master-config set's {master} {runners} {prefix} {framework} {runner}
// {precision} {config_key}.
std::map<std::string, CommandCase> command_cases() {
  std::map<std::string, CommandCase> cases;
  cases["bench serve"] = {
      // DeepSeek-R1's own tokenizer is not packaged: the DeepSeek-V3 file stands in (docs/tokenizer.md).
      .base = {"--base-url", "{server}", "--model", "deepseek-ai/DeepSeek-R1-0528", "--tokenizer", "deepseek_v3",
               "--num-prompts", "2", "--random-input-len", "32", "--random-output-len", "4", "--request-timeout", "60",
               "--no-progress", "--result-dir", "{tmp}",
               // A loaded machine delays the client; the invalid mark is not what this checks.
               "--client-lag-threshold-ms", "1000"},
      .samples = {
          {"--base-url", {"--base-url", "{server}"}},
          {"--model", {"--model", "deepseek-ai/DeepSeek-R1-0528"}},
          {"--endpoint", {"--endpoint", "/v1/completions"}},
          {"--served-model-name", {"--served-model-name", "deepseek-ai/DeepSeek-R1-0528"}},
          {"--tokenizer", {"--tokenizer", "deepseek_v3"}},
          {"--tokenizer-from-server",
           fails_because({"--tokenizer-from-server"},
                         "the base command names --tokenizer, which --tokenizer-from-server refuses (its runs are in "
                         "inferencex_client_test.cc)")},
          {"--num-prompts", {"--num-prompts", "2"}},
          {"--max-concurrency", {"--max-concurrency", "2"}},
          {"--num-warmups", {"--num-warmups", "1"}},
          {"--ramp-up-strategy",
           {"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "20", "--ramp-up-end-rps", "40"}},
          {"--ramp-up-start-rps",
           {"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "20", "--ramp-up-end-rps", "40"}},
          {"--ramp-up-end-rps",
           {"--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "20", "--ramp-up-end-rps", "40"}},
          {"--goodput", {"--goodput", "ttft:1000"}},
          {"--result-dir", {"--result-dir", "{tmp}"}},
          {"--result-filename", {"--result-filename", "result.json"}},
          {"--metadata", {"--metadata", "run=cli-options"}},
          {"--logprobs",
           fails_because({"--logprobs", "1"}, "ixbench sim serve produces no logprobs and answers 400: the run fails",
                         "ERROR bench serve: no request completed (2 of 2 failed)")},
          {"--lora-modules", {"--lora-modules", "cli-lora-a"}},  // the server also serves this name
          {"--request-id-prefix", {"--request-id-prefix", "cli-"}},
          {"--header", {"--header", "x-cli-test=1"}},
          {"--server-pid", {"--server-pid", "{server_pid}"}},
          {"--spec-acceptance-length", {"--spec-acceptance-length", "2"}},
          {"--extra-body", {"--extra-body", R"({"cli_test": true})"}},
          {"--temperature", {"--temperature", "0"}},
          {"--top-p", {"--top-p", "1"}},
          {"--top-k", {"--top-k", "1"}},
          {"--min-p", {"--min-p", "0"}},
          {"--frequency-penalty", {"--frequency-penalty", "0"}},
          {"--presence-penalty", {"--presence-penalty", "0"}},
          {"--repetition-penalty", {"--repetition-penalty", "1"}},
          {"--label", {"--label", "cli"}},
      }};
  cases["bench replay"] = {.base = {"--url", "{server}", "--model", "deepseek-ai/DeepSeek-R1-0528", "--tokenizer",
                                    "deepseek_v3", "--trace", "{source}/tests/data/traces/fanout_session.json",
                                    "--benchmark-duration", "1", "--warmup-requests-per-lane", "1", "--artifact-dir",
                                    "{tmp}", "--no-progress", "--request-timeout", "60"},
                           .samples = {
                               {"--url", {"--url", "{server}"}},
                               {"--model", {"--model", "deepseek-ai/DeepSeek-R1-0528"}},
                               {"--tokenizer", {"--tokenizer", "deepseek_v3"}},
                               {"--trace", {"--trace", "{source}/tests/data/traces/fanout_session.json"}},
                               {"--trace-format", {"--trace-format", "session"}},
                               {"--custom-dataset-type", {"--custom-dataset-type", "weka_trace"}},
                               {"--block-size", {"--block-size", "32"}},
                               {"--num-dataset-entries", {"--num-dataset-entries", "1"}},
                               {"--public-dataset", {"--public-dataset", "semianalysis_cc_traces_weka_062126"}},
                               {"--max-context-length", {"--max-context-length", "300"}},
                               {"--header", {"--header", "x-cli-test=1"}},
                               {"--server-pid", {"--server-pid", "{server_pid}"}},
                               {"--extra-inputs", {"--extra-inputs", "temperature:0"}},
                               {"--server-metrics", {"--server-metrics", "{server}/metrics"}},
                               {"--artifact-dir", {"--artifact-dir", "{tmp}"}},
                               {"--concurrency", {"--concurrency", "3"}},
                               {"--benchmark-duration", {"--benchmark-duration", "1"}},
                               {"--duration", {"--duration", "1"}},
                               {"--benchmark-grace-period", {"--benchmark-grace-period", "5"}},
                               {"--warmup-grace-period", {"--warmup-grace-period", "60"}},
                               {"--agentic-warmup-grace-period", {"--agentic-warmup-grace-period", "60"}},
                               {"--trace-idle-gap-cap-seconds", {"--trace-idle-gap-cap-seconds", "1"}},
                               {"--system-idle-gap-cap-seconds", {"--system-idle-gap-cap-seconds", "1"}},
                               {"--fixed-schedule-speedup", {"--fixed-schedule", "--fixed-schedule-speedup", "100"}},
                           }};
  cases["aggregate"] = {
      .base = {"--env-file", "{source}/tests/data/aggregate/env.json", "--raw",
               "{source}/tests/data/aggregate/raw.json", "--out", "{tmp}/agg.json"},
      .samples = {
          {"--env-file", {"--env-file", "{source}/tests/data/aggregate/env.json"}},
          {"--raw", {"--raw", "{source}/tests/data/aggregate/raw.json"}},
          {"--out", {"--out", "{tmp}/agg_out.json"}},
          {"--power-csv", {"--power-csv", "{source}/tests/data/power/nvidia_8gpu.csv"}},
          {"--require-power", fails_because({"--require-power"}, "the fixture has no telemetry: power_valid 0 fails it",
                                            "power validation failed")},
          {"--row", {"--row", "{source}/tests/data/aggregate/row.json"}},
      }};
  cases["power"] = {.base = {"--csv", "{source}/tests/data/power/nvidia_8gpu.csv", "--bench-result",
                             "{source}/tests/data/power/raw_nvidia_8gpu.json", "--expected-num-gpus", "8",
                             "--validation-result", "{tmp}/power_validation.json"},
                    .samples = {
                        {"--csv", {"--csv", "{source}/tests/data/power/nvidia_8gpu.csv"}},
                        {"--bench-result", {"--bench-result", "{source}/tests/data/power/raw_nvidia_8gpu.json"}},
                        {"--agg-result", {"--agg-result", "{tmp}/agg_missing.json"}},
                        {"--expected-num-gpus", {"--expected-num-gpus", "8"}},
                        {"--validation-result", {"--validation-result", "{tmp}/pv.json"}},
                        {"--start", {"--start", "1796119203", "--end", "2026-12-01T10:00:19Z"}},
                        {"--end", {"--start", "2026/12/01 10:00:03.5", "--end", "1796119219"}},
                    }};
  // collect's two positionals follow --out, so a sample that gives --out (all do) replaces them too.
  cases["collect"] = {.base = {"--out", "{tmp}/agg_cli.json", "{source}/tests/data/aggregate", "cli"},
                      .samples = {
                          {"dir", {"--out", "{tmp}/agg_dir.json", "{source}/tests/data/aggregate", "cli"}},
                          {"exp_name", {"--out", "{tmp}/agg_exp.json", "{source}/tests/data/aggregate", "cli"}},
                          {"--out", {"--out", "{tmp}/agg_other.json", "{source}/tests/data/aggregate", "cli"}},
                      }};
  // ingest's folder comes first: a sample's --db replaces the base's without taking the folder along.
  cases["ingest"] = {.base = {"{source}/tests/data/store/sweep", "--db", "{tmp}/cli.db"},
                     .samples = {
                         {"dirs", {"{source}/tests/data/store/agentic"}},
                         {"--db", {"--db", "sqlite:{tmp}/cli_other.db"}},
                         {"--run-id", {"--run-id", "cli-run"}},
                         {"--kind", {"--kind", "predicted"}},
                     }};
  cases["pareto"] = {.base = {"--results", "{source}/tests/data/pareto"},
                     .samples = {
                         {"--results", {"--results", "{source}/tests/data/pareto/agg_sweep.json"}},
                         {"--x", {"--x", "median_intvty"}},
                         {"--y", {"--y", "tput_per_gpu"}},
                         {"--group-by", {"--group-by", "hw,precision"}},
                         {"--format", {"--format", "json"}},
                     }};
  cases["eval gsm8k"] = {.base = {"--base-url", "{server}", "--model", "deepseek-ai/DeepSeek-R1-0528", "--dataset-dir",
                                  "{source}/tests/data/gsm8k", "--limit", "2", "--max-tokens", "32", "--output",
                                  "{tmp}/results.json", "--no-progress"},
                         .samples = {
                             {"--base-url", {"--base-url", "{server}"}},
                             {"--model", {"--model", "deepseek-ai/DeepSeek-R1-0528"}},
                             {"--endpoint", {"--endpoint", "completions"}},
                             {"--api-key", {"--api-key", "cli-test-key"}},
                             {"--header", {"--header", "x-cli-test=1"}},
                             {"--request-timeout", {"--request-timeout", "60"}},
                             {"--max-retries", {"--max-retries", "2"}},
                             {"--server-pid", {"--server-pid", "{server_pid}"}},
                             {"--task", {"--task", "{source}/tests/data/eval/gsm8k_task.yaml"}},
                             {"--dataset-dir", {"--dataset-dir", "{source}/tests/data/gsm8k"}},
                             {"--num-fewshot", {"--num-fewshot", "2"}},
                             {"--limit", {"--limit", "3"}},
                             {"--seed", {"--seed", "7"}},
                             {"--model-family", {"--model-family", "qwen"}},
                             {"--max-tokens", {"--max-tokens", "16"}},
                             {"--max-model-len", {"--max-model-len", "4096"}},
                             {"--concurrency", {"--concurrency", "1,2"}},
                             {"--output", {"--output", "{tmp}/out/results.json"}},
                             {"--model-prefix", {"--model-prefix", "dsr1"}},
                         }};
  cases["eval check"] = {.base = {"--results", "{source}/tests/data/eval"},
                         .samples = {
                             {"--results", {"--results", "{source}/tests/data/eval/results_conc64.json"}},
                             {"--model-prefix", {"--model-prefix", "dsr1"}},
                             {"--thresholds", {"--thresholds", "{source}/tests/data/eval/thresholds.yaml"}},
                             {"--min-score", {"--min-score", "0.5"}},
                             {"--meta-env", {"--meta-env", "{source}/tests/data/eval/meta_env.json"}},
                             {"--metric-prefix", {"--metric-prefix", "exact_match,"}},
                             {"--expected-concs", {"--expected-concs", "64"}},
                         }};
  const Samples dashboard = {
      {"--db", {"--db", "sqlite:{tmp}/cli_other.db"}},
      {"--gpu-hour-cost", {"--gpu-hour-cost", "h200=3.5"}},
      {"--gpu-hour-cost-file", {"--gpu-hour-cost-file", "{source}/data/report/gpu_hour_cost.json"}},
      {"--title", {"--title", "cli <report>"}},
  };
  cases["report"] = {.base = {"--db", "{tmp}/cli.db", "--out", "{tmp}/site"}, .samples = dashboard};
  cases["report"].samples.insert({
      {"--out", {"--out", "{tmp}/other-site"}},
      {"--model", {"--model", "dsr1"}},
      {"--hw", {"--hw", "h200"}},
      {"--framework", {"--framework", "sglang"}},
      {"--precision", {"--precision", "fp8"}},
      {"--from", {"--from", "2026-01-01"}},
      {"--to", {"--to", "2026-12-31"}},
  });
  cases["dashboard"] = {.base = {"--db", "{tmp}/cli.db", "--port", "0"}, .server = true, .samples = dashboard};
  cases["dashboard"].samples.insert({
      {"--port", {"--port", "0"}},
      {"--host", {"--host", "127.0.0.1"}},
  });
  // run: a dry run plans the demo repository's jobs and renders each server (its first real step).
  cases["run"] = {.base = {"--config-files", "{source}/examples/demo/configs/sim-master.yaml", "--runner-config",
                           "{source}/examples/demo/configs/runners.yaml", "--golden-al-dir",
                           "{source}/examples/demo/golden_al_distribution", "--dry-run", "--out", "{tmp}/runs", "--db",
                           "{tmp}/run.db"},
                  .samples = {
                      {"--config-files", {"--config-files", "{source}/examples/demo/configs/sim-master.yaml"}},
                      {"--runner-config", {"--runner-config", "{source}/examples/demo/configs/runners.yaml"}},
                      {"--model-prefix", {"--model-prefix", "gptoss"}},
                      {"--precision", {"--precision", "fp4"}},
                      {"--framework", {"--framework", "sim"}},
                      {"--runner-type", {"--runner-type", "h200"}},
                      {"--min-conc", {"--min-conc", "1"}},
                      {"--max-conc", {"--max-conc", "64"}},
                      {"--max-tp", {"--max-tp", "8"}},
                      {"--max-ep", {"--max-ep", "8"}},
                      {"--multi-node", fails_because({"--multi-node"}, "the demo has no multi-node config: no jobs")},
                      {"--scenario-type", {"--scenario-type", "agentic-coding"}},
                      {"--seq-lens", {"--seq-lens", "8k1k"}},
                      {"--runner-node-filter", {"--runner-node-filter", "sim"}},
                      {"--config-keys", {"--config-keys", "gptoss*"}},
                      {"--conc", {"--config-keys", "gptoss*", "--conc", "4"}},
                      {"--jobs-from", dropping({"--jobs-from", "{fixture}/matrix.json"}, {"--config-files"})},
                      {"--plan", dropping({"--plan", "{fixture}/plan.json"}, {"--config-files"})},
                      {"--db", {"--db", "sqlite:{tmp}/other.db"}},
                      {"--out", {"--out", "{tmp}/other-runs"}},
                      {"--resume", {"--resume", "run-20261203-000000"}},
                      {"--parallel", {"--parallel", "2"}},
                      {"--gpus", {"--gpus", "8"}},
                      {"--partition", {"--executor", "slurm", "--partition", "debug"}},
                      {"--time-limit", {"--executor", "slurm", "--time-limit", "30"}},
                      {"--cpus-per-task", {"--executor", "slurm", "--cpus-per-task", "2"}},
                      {"--recipes", {"--recipes", "{source}/recipes"}},
                      {"--recipe", {"--recipe", "sim"}},
                      {"--golden-al-dir", {"--golden-al-dir", "{source}/examples/demo/golden_al_distribution"}},
                      {"--thresholds", {"--thresholds", "{source}/examples/demo/evals/thresholds.yaml"}},
                      {"--gsm8k-dir", {"--gsm8k-dir", "{fixture}/gsm8k"}},
                      {"--trace", {"--trace", "{source}/examples/demo/traces/demo_sessions.jsonl"}},
                      {"--eval-limit", {"--eval-limit", "10"}},
                      {"--agentic-duration", {"--agentic-duration", "30"}},
                      {"--health-timeout", {"--health-timeout", "60"}},
                      {"--step-timeout", {"--step-timeout", "600"}},
                  }};
  // run job: one small job of the simulator, start to end.
  cases["run job"] = {.base = {"--spec", "{fixture}/job/job.json", "--dir", "{tmp}/job"},
                      .samples = {
                          {"--spec", {"--spec", "{fixture}/job/job.json"}},
                          {"--dir", {"--dir", "{tmp}/other-job"}},
                      }};
  cases["report table"] = {.base = {"{fixture}/result.json"},
                           .samples = {
                               {"files", {"{fixture}/result.json"}},
                               {"--gpus", {"--gpus", "8"}},
                           }};
  cases["sim calibrate"] = {
      .base = {"--csv", "{fixture}/measured.csv", "--iterations", "1", "--max-prompts", "8", "--jobs", "1", "--quiet"},
      .samples = {
          {"--csv", {"--csv", "{fixture}/measured.csv"}},
          {"--out", {"--out", "{tmp}/calibration.json"}},
          {"--holdout-series", {"--holdout-series", "2"}},
          {"--residuals-csv", {"--residuals-csv", "{tmp}/residuals.csv"}},
          {"--sweep-rows", {"--sweep-rows", "{source}/data/calibration/dsr1-disagg-trt-history-rows.json"}},
      }};
  // sim predict and sim serve share the engine flags (src/cli/engine_flags.h).
  const Samples engine = {
      // The default (1) does not hold DeepSeek-R1's weights on one H200.
      {"--tp", {"--tp", "8"}},
      {"--catalog-dir", {"--catalog-dir", "{source}/data/catalog"}},
      {"--prefill-workers",
       {"--prefill-workers", "1", "--decode-workers", "1", "--prefill-tp", "8", "--decode-tp", "8"}},
      {"--decode-workers",
       {"--prefill-workers", "1", "--decode-workers", "2", "--prefill-tp", "8", "--decode-tp", "8"}},
  };
  cases["sim predict"] = {.base = {"--tp", "8", "--isl", "16", "--osl", "4", "--conc", "1", "--num-prompts", "2"},
                          .samples = engine};
  cases["sim predict"].samples.insert({
      {"--isl", {"--isl", "16"}},
      {"--osl", {"--osl", "4"}},
      {"--conc", {"--conc", "1,2"}},
      {"--num-prompts", {"--num-prompts", "2"}},
      {"--row", {"--row", "{row}"}},
      {"--row-file", {"--row-file", "{fixture}/row.json"}},
      {"--prefill-sensitivity", {"--prefill-sensitivity", "0.1"}},
      {"--result-dir", {"--result-dir", "{tmp}"}},
  });
  // The agentic replay in virtual time: --trace and bench replay's schedule flags, without the
  // fixed-length benchmark's lengths.
  const auto traced = [](std::vector<std::string> args, bool with_duration = true) {
    Sample sample{"--trace",
                  "{source}/tests/data/traces/fanout_session.json",
                  "--warmup-requests-per-lane",
                  "1",
                  "--artifact-dir",
                  "{tmp}"};
    if (with_duration) sample.args.insert(sample.args.end(), {"--benchmark-duration", "2"});
    sample.args.insert(sample.args.end(), args.begin(), args.end());
    return dropping(std::move(sample), {"--isl", "--osl", "--num-prompts"});
  };
  cases["sim predict"].samples.insert({
      {"--trace", traced({})},
      {"--input-file", dropping({"--input-file", "{source}/tests/data/traces/fanout_session.json",
                                 "--benchmark-duration", "2", "--artifact-dir", "{tmp}"},
                                {"--isl", "--osl", "--num-prompts"})},
      {"--trace-format", traced({"--trace-format", "session"})},
      {"--custom-dataset-type", traced({"--custom-dataset-type", "weka_trace"})},
      {"--prompt-input-tokens-block-size", traced({"--prompt-input-tokens-block-size", "32"})},
      {"--num-dataset-entries", traced({"--num-dataset-entries", "1"})},
      {"--public-dataset", traced({"--public-dataset", "semianalysis_cc_traces_weka_062126"})},
      {"--scenario", traced({"--scenario", "cli-test"})},
      {"--artifact-dir", traced({})},
      {"--output-artifact-dir", dropping({"--trace", "{source}/tests/data/traces/fanout_session.json",
                                          "--benchmark-duration", "2", "--output-artifact-dir", "{tmp}"},
                                         {"--isl", "--osl", "--num-prompts"})},
      {"--concurrency", traced({"--concurrency", "3"})},
      {"--benchmark-duration", traced({"--benchmark-duration", "1"}, false)},
      {"--duration", traced({"--duration", "1"}, false)},
      {"--benchmark-grace-period", traced({"--benchmark-grace-period", "5"})},
      {"--random-seed", traced({"--random-seed", "7"})},
      {"--failed-request-threshold", traced({"--failed-request-threshold", "0.5"})},
      {"--trajectory-start-min-ratio", traced({"--trajectory-start-min-ratio", "0.1"})},
      {"--trajectory-start-max-ratio", traced({"--trajectory-start-max-ratio", "0.9"})},
      {"--warmup-requests-per-lane",
       dropping({"--trace", "{source}/tests/data/traces/fanout_session.json", "--benchmark-duration", "2",
                 "--artifact-dir", "{tmp}", "--warmup-requests-per-lane", "2"},
                {"--isl", "--osl", "--num-prompts"})},
      {"--warmup-grace-period", traced({"--warmup-grace-period", "60"})},
      {"--agentic-warmup-grace-period", traced({"--agentic-warmup-grace-period", "60"})},
      {"--trace-idle-gap-cap-seconds", traced({"--trace-idle-gap-cap-seconds", "1"})},
      {"--system-idle-gap-cap-seconds", traced({"--system-idle-gap-cap-seconds", "1"})},
      {"--max-context-length", traced({"--max-context-length", "300"})},
      {"--use-server-token-count", traced({"--use-server-token-count"})},
      {"--live-assistant-responses",
       fails_because(traced({"--live-assistant-responses"}),
                     "virtual time generates no text to send back as the assistant's turns")},
      {"--no-cache-bust", traced({"--no-cache-bust"})},
      {"--fixed-schedule", traced({"--fixed-schedule"})},
      {"--fixed-schedule-speedup", traced({"--fixed-schedule", "--fixed-schedule-speedup", "100"})},
      {"--single-pass", traced({"--single-pass"})},
  });
  // A whole matrix: the rows give engines, lengths and concurrencies.
  const auto jobs = [](std::vector<std::string> args) {
    Sample sample{"--jobs-from", "{fixture}/matrix.json", "--out", "{tmp}/predicted"};
    sample.args.insert(sample.args.end(), args.begin(), args.end());
    return dropping(std::move(sample), {"--isl", "--osl", "--num-prompts", "--conc"});
  };
  cases["sim predict"].samples.insert({
      {"--jobs-from", jobs({})},
      {"--out", jobs({})},
      {"--db", jobs({"--db", "{tmp}/predicted.db"})},
      {"--jobs", jobs({"--jobs", "1"})},
  });
  cases["sim serve"] = {
      .base = {"--tp", "8", "--tokenizer", "none", "--threads", "1", "--port", "0"}, .server = true, .samples = engine};
  cases["sim serve"].samples.insert({
      // The default (8000) may be taken, and runs go in parallel.
      {"--port", {"--port", "0"}},
      {"--served-model-name", {"--served-model-name", "deepseek-r1", "cli-alias"}},
      {"--fixed-ttft-ms", {"--fixed-ttft-ms", "1", "--fixed-itl-ms", "1"}},
      {"--fixed-itl-ms", {"--fixed-ttft-ms", "2", "--fixed-itl-ms", "1"}},
      {"--fault-seed", {"--fault-seed", "1"}},
      {"--fault-error-rate", {"--fault-error-rate", "0.1"}},
      {"--fault-stall-rate", {"--fault-stall-rate", "0.1"}},
      {"--fault-drop-rate", {"--fault-drop-rate", "0.1"}},
      {"--fault-malformed-rate", {"--fault-malformed-rate", "0.1"}},
      {"--fault-health-delay-ms", {"--fault-health-delay-ms", "10"}},
      {"--fault-short-rate", {"--fault-short-rate", "0.1"}},
      {"--gsm8k-answers", {"--gsm8k-answers", "{fixture}/gsm8k"}},
      // The answer mode's companions need --gsm8k-answers.
      {"--gsm8k-accuracy", {"--gsm8k-answers", "{fixture}/gsm8k", "--gsm8k-accuracy", "0.9"}},
      {"--gsm8k-runaway-rate", {"--gsm8k-answers", "{fixture}/gsm8k", "--gsm8k-runaway-rate", "0.2"}},
      {"--gsm8k-model-family", {"--gsm8k-answers", "{fixture}/gsm8k", "--gsm8k-model-family", "deepseek_v4"}},
  });
  const Samples sweep = {
      {"--config-files", {"--config-files", "{master}"}},
      // The default is relative to the current directory (an InferenceX checkout's root).
      {"--runner-config", {"--runner-config", "{runners}"}},
      {"--runner-node-filter", {"--runner-node-filter", "{runner}"}},
  };
  cases["sweep full-sweep"] = {.base = {"--config-files", "{master}", "--runner-config", "{runners}", "--model-prefix",
                                        "{prefix}", "--framework", "{framework}", "--runner-type", "{runner}"},
                               .samples = sweep};
  cases["sweep full-sweep"].samples.insert({
      {"--model-prefix", {"--model-prefix", "{prefix}"}},
      {"--precision", {"--precision", "{precision}"}},
      {"--framework", {"--framework", "{framework}"}},
      {"--runner-type", {"--runner-type", "{runner}"}},
      {"--min-conc", {"--min-conc", "1"}},
      {"--max-conc", {"--max-conc", "64"}},
      {"--max-tp", {"--max-tp", "8"}},
      {"--max-ep", {"--max-ep", "8"}},
  });
  cases["sweep test-config"] = {
      .base = {"--config-files", "{master}", "--runner-config", "{runners}", "--config-keys", "{config_key}"},
      .samples = sweep};
  cases["sweep test-config"].samples.insert({
      {"--config-keys", {"--config-keys", "{config_key}"}},
      {"--conc", {"--conc", "4"}},
  });
  cases["tokenize"] = {.base = {"--tokenizer", "deepseek_v3"},
                       .input = "Hello, world! 1 2 3",
                       .samples = {
                           {"--tokenizer", {"--tokenizer", "deepseek_v3"}},
                           {"--decode", with_input({"--decode"}, "19923 14 2058 3")},
                           {"--chat-template", {"--chat-template", "auto"}},
                       }};
  cases["trace stats"] = {.base = {"{source}/tests/data/traces/fanout_session.json"},
                          .samples = {
                              // One positional FILE, which the base already gives: nothing to add.
                              {"file", {}},
                              {"--block-size", {"--block-size", "64"}},
                          }};
  cases["changelog check"] = {.base = {"--base", "{source}/tests/data/changelog/small-append/base.yaml", "--head",
                                       "{source}/tests/data/changelog/small-append/head.yaml"},
                              .samples = {
                                  {"--base", {"--base", "{source}/tests/data/changelog/small-append/base.yaml"}},
                                  {"--head", {"--head", "{source}/tests/data/changelog/small-append/head.yaml"}},
                                  {"--pr", {"--pr", "102"}},  // the appended entry links pull request 102
                                  {"--repo-url", {"--repo-url", "https://github.com/SemiAnalysisAI/InferenceX"}},
                              }};
  const std::string plan_files = "{source}/tests/data/plan/";
  cases["plan"] = {.base = {"--base", plan_files + "base.yaml", "--head", plan_files + "head.yaml", "--config-files",
                            "{source}/examples/demo/configs/sim-master.yaml", "--runner-config",
                            "{source}/examples/demo/configs/runners.yaml"},
                   .samples = {
                       {"--base", {"--base", plan_files + "base.yaml"}},
                       {"--head", {"--head", plan_files + "head.yaml"}},
                       {"--path", {"--path", "configs/perf-changelog.yaml"}},  // only read for git refs
                       {"--config-files", {"--config-files", "{source}/examples/demo/configs/sim-master.yaml"}},
                       {"--runner-config", {"--runner-config", "{source}/examples/demo/configs/runners.yaml"}},
                       {"--trim-conc", {"--trim-conc"}},
                       {"--all-evals", {"--all-evals"}},
                       {"--evals-only", {"--evals-only"}},
                       {"--format", {"--format", "matrix"}},
                   }};
  // The demo against itself: nothing changed, every check N/A.
  cases["review"] = {.base = {"--base", "{source}/examples/demo", "--head", "{source}/examples/demo"},
                     .samples = {
                         {"--base", {"--base", "{source}/examples/demo"}},
                         {"--head", {"--head", "{source}/examples/demo"}},
                         {"--changelog", {"--changelog", "perf-changelog.yaml"}},
                         {"--config-files", {"--config-files", "configs/sim-master.yaml"}},
                         {"--pr", {"--pr", "7"}},
                         {"--results", {"--results", "{source}/tests/data/review/clean-sglang-agentic-mtp/results"}},
                         {"--db", {"--db", "{fixture}/store.db"}},
                         {"--pr-body", {"--pr-body", "{source}/tests/data/review/clean-sglang-agentic-mtp/pr-body.md"}},
                         {"--format", {"--format", "markdown"}},
                     }};
  cases["validate"] = {.base = {"--config-files", "{master}", "--runner-config", "{runners}"},
                       .samples = {
                           {"--config-files", {"--config-files", "{master}"}},
                           {"--runner-config", {"--runner-config", "{runners}"}},
                       }};
  return cases;
}

// Options of the root (--log-level), each given once before every command's path; empty while
// every root option has a default.
const Samples kGlobalSamples = {};

// ---- Files and the server the runs share ----

// Six made-up points in the measured CSV's columns (those sim::load_measured_csv needs): two
// H200 series of three concurrencies each, so --holdout and --holdout-series have points to hold
// out, and 128 output tokens, so a fit simulates little.
constexpr const char* kMeasuredCsv =
    "hardware,framework,precision,spec_decoding,tp,ep,dp_attention,isl,osl,conc,median_ttft_s,median_tpot_s,"
    "tput_per_gpu,gpus_total,is_multinode\n"
    "h200,sglang,fp8,none,8,1,false,1024,128,1,0.09,0.012,85,8,false\n"
    "h200,sglang,fp8,none,8,1,false,1024,128,2,0.10,0.013,160,8,false\n"
    "h200,sglang,fp8,none,8,1,false,1024,128,4,0.12,0.014,300,8,false\n"
    "h200,sglang,fp8,none,8,8,false,1024,128,1,0.09,0.011,90,8,false\n"
    "h200,sglang,fp8,none,8,8,false,1024,128,2,0.10,0.012,170,8,false\n"
    "h200,sglang,fp8,none,8,8,false,1024,128,4,0.12,0.013,320,8,false\n";

constexpr const char* kSweepRow =
    R"({"image": "x", "model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",)"
    R"( "framework": "sglang", "runner": "h200", "isl": 64, "osl": 8, "tp": 8, "pp": 1, "dcp-size": 1,)"
    R"( "pcp-size": 1, "conc": 2, "max-model-len": 2304, "ep": 1, "dp-attn": false, "spec-decoding": "none",)"
    R"( "exp-name": "dsr1_1k1k", "disagg": false, "run-eval": false})";

constexpr const char* kResult =
    R"({"request_throughput": 1.5, "output_throughput": 100.0, "total_token_throughput": 900.0, "completed": 4,)"
    R"( "failed": 0, "max_concurrency": 2, "median_ttft_ms": 12.5, "median_tpot_ms": 3.1, "p99_itl_ms": 4.0,)"
    R"( "median_e2el_ms": 40.0, "num_gpus": 8})";

// One GSM8K problem in test.jsonl's shape, for sim serve's --gsm8k-answers.
constexpr const char* kGsm8kTest =
    R"({"question": "Tom has 3 apples and buys 4 more. How many apples does he have?", "answer": "3+4=<<3+4=7>>7\n#### 7"})"
    "\n";

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// The master-config set validate and sweep read: InferenceX's own files in ../shared when present,
// else the project's test copies, each with filters that select some of its configs.
std::map<std::string, std::string> config_vars() {
  const std::string shared = shared_path("data/inferencex/amd-master.yaml");
  if (!shared.empty() && !shared_path("data/inferencex/runners.yaml").empty()) {
    return {{"master", shared},     {"runners", shared_path("data/inferencex/runners.yaml")},
            {"prefix", "dsv4"},     {"framework", "atom"},
            {"runner", "mi355x"},   {"precision", "fp4"},
            {"config_key", "dsv4*"}};
  }
  return {{"master", source_path("tests/data/config/valid-master.yaml")},
          {"runners", source_path("tests/data/config/runners.yaml")},
          {"prefix", "tiny"},
          {"framework", "vllm"},
          {"runner", "h200"},
          {"precision", "fp8"},
          {"config_key", "tiny*"}};
}

std::string substitute(std::string text, const std::map<std::string, std::string>& vars) {
  for (size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open)) {
    const size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    auto it = vars.find(text.substr(open + 1, close - open - 1));
    if (it == vars.end()) {
      ++open;  // not a placeholder (a JSON sample)
      continue;
    }
    text.replace(open, close - open + 1, it->second);
    open += it->second.size();
  }
  return text;
}

// ---- Runs ----

struct OptionRun {
  std::string label;  // "bench serve --dsv4"
  std::vector<std::string> args;
  std::string input;
  bool server = false;
  std::string exits_1;  // why exit 1 is expected; empty: exit 0
  std::string stderr_shows;
  ProcessResult result;
};

bool has_sanitizer_report(const std::string& err) {
  for (const char* marker : {"AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:"})
    if (err.find(marker) != std::string::npos) return true;
  return false;
}

std::string tail(const std::string& text, size_t size = 1500) {
  return text.size() <= size ? text : "..." + text.substr(text.size() - size);
}

// Empty when the run did what it should, else what went wrong.
std::string check(const OptionRun& run) {
  const ProcessResult& r = run.result;
  if (r.timed_out) return "timed out";
  if (has_sanitizer_report(r.err)) return "sanitizer report on stderr";
  if (r.signal != 0) return "killed by signal " + std::to_string(r.signal);
  if (run.server && run.exits_1.empty() && !r.ready) return "never printed 'listening on'";
  const int expected = run.exits_1.empty() ? 0 : 1;
  if (r.exit_code != expected) {
    std::string why = "exit status " + std::to_string(r.exit_code) + ", expected " + std::to_string(expected);
    if (r.exit_code == 2) why += " (a usage error: the sample value or combination is refused; fix the sample)";
    if (r.exit_code == 1) why += " (if this failure is by design, give the sample fails_because(...) and say why)";
    return why;
  }
  // Each command prints what it did (ok, a matrix, tokens, a prediction, a table, a summary).
  if (expected == 0 && !run.server && r.out.empty()) return "exit 0 with nothing on stdout: did it do its work?";
  if (expected == 1 && !run.stderr_shows.empty()) {
    if (r.err.find(run.stderr_shows) == std::string::npos)
      return "exit 1, but stderr does not say: " + run.stderr_shows;
  } else if (expected == 1) {
    std::vector<std::string> lines;
    for (size_t start = 0; start < r.err.size();) {
      const size_t end = std::min(r.err.find('\n', start), r.err.size());
      if (end > start) lines.push_back(r.err.substr(start, end - start));
      start = end + 1;
    }
    const auto errors = std::count_if(lines.begin(), lines.end(),
                                      [](const std::string& line) { return line.starts_with("ixbench: error: "); });
    if (errors != 1 || !lines.back().starts_with("ixbench: error: "))
      return "exit 1 without exactly one 'ixbench: error: ...' line, the last on stderr";
  }
  return "";
}

void run_all(std::vector<OptionRun>& runs) {
  size_t jobs = std::clamp<size_t>(2 * std::thread::hardware_concurrency(), 2, 16);
  if (const char* env = std::getenv("IXBENCH_TEST_JOBS"); env != nullptr && std::atoi(env) > 0)
    jobs = static_cast<size_t>(std::atoi(env));
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  for (size_t worker = 0; worker < jobs; ++worker) {
    workers.emplace_back([&] {
      for (size_t index = next++; index < runs.size(); index = next++) {
        OptionRun& run = runs[index];
        std::vector<std::string> argv = {ixbench_binary()};
        argv.insert(argv.end(), run.args.begin(), run.args.end());
        run.result = run.server ? run_process_until(argv, "listening on http://", SIGTERM, 120)
                                : run_process(argv, run.input, 120);
      }
    });
  }
  for (auto& worker : workers) worker.join();
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> words;
  for (size_t start = 0; start <= path.size();) {
    const size_t space = std::min(path.find(' ', start), path.size());
    words.push_back(path.substr(start, space - start));
    start = space + 1;
  }
  return words;
}

// `base` without the options a run gives itself (the option under test, under any of its names,
// and every option its sample names), each with its values: a run's value replaces the base's
// rather than adding to it (a list option such as --config-files would take both).
std::vector<std::string> without_options(const std::vector<std::string>& base, const Sample& sample,
                                         const std::vector<std::string>& option_names) {
  std::set<std::string> drop(option_names.begin(), option_names.end());
  drop.insert(sample.drops.begin(), sample.drops.end());
  for (const auto& arg : sample.args)
    if (arg.starts_with("--")) drop.insert(arg);
  std::vector<std::string> kept;
  bool dropping = false;
  for (const auto& arg : base) {
    if (arg.starts_with("-")) dropping = drop.contains(arg);
    if (!dropping) kept.push_back(arg);
  }
  return kept;
}

// The arguments one option adds, or the reason it cannot be run (no value to give it).
std::optional<Sample> sample_for(const OptionInfo& option, const std::string& name, const Samples& samples,
                                 std::string& missing) {
  for (const std::string& key : {name, option.name}) {
    if (auto it = samples.find(key); it != samples.end()) {
      Sample sample = it->second;
      // An alias runs under its own name.
      if (name != option.name && !sample.args.empty() && sample.args.front() == option.name) sample.args.front() = name;
      return sample;
    }
  }
  if (option.flag) return Sample{name};
  std::string value;
  if (!option.default_value.empty() && option.default_value.front() != '[' && option.expected_min <= 1) {
    value = option.default_value;
  } else if (!option.choices.empty() && option.expected_min <= 1) {
    value = option.choices.front();
  } else {
    missing = "takes a value and has no default: add a sample for it";
    return std::nullopt;
  }
  if (option.positional) return Sample{value};
  return Sample{name, value};
}

// One fixed-length row of 64/8 tokens at conc 1 (as `ixbench sweep` prints it), and the spec of
// the job running it (as `ixbench run` writes it).
constexpr const char* kTinyRow =
    R"({"image": "ixbench-sim", "model": "openai/gpt-oss-120b", "model-prefix": "gptoss", "precision": "fp4", )"
    R"("framework": "sim", "runner": "h200", "isl": 64, "osl": 8, "tp": 1, "pp": 1, "dcp-size": 1, "pcp-size": 1, )"
    R"("conc": 1, "max-model-len": 328, "ep": 1, "dp-attn": false, "spec-decoding": "none", "exp-name": )"
    R"("gptoss_64_8", "disagg": false, "run-eval": false})";

std::string tiny_job_spec(const std::string& recipes) {
  return std::string(R"({"job": {"id": "tiny", "runner": "h200-sim_00", "runner_label": "h200"}, "row": )") + kTinyRow +
         R"(, "settings": {"recipes_dir": ")" + recipes +
         R"(", "recipe": "", "golden_al_dir": "", "thresholds": "", "gsm8k_dir": "", "trace": "", "eval_limit": 0, )"
         R"("agentic_duration_s": 0, "health_timeout_s": 60, "step_timeout_s": 0, "prompts_per_conc": 10, )"
         R"("warmups_per_conc": 2, "random_range_ratio": 0.8, "predict": false}})";
}

class CliOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ixbench_cli_options_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    write_text(dir_ / "measured.csv", kMeasuredCsv);
    write_text(dir_ / "row.json", kSweepRow);
    write_text(dir_ / "result.json", kResult);
    std::filesystem::create_directories(dir_ / "gsm8k");
    write_text(dir_ / "gsm8k" / "test.jsonl", kGsm8kTest);
    write_text(dir_ / "matrix.json", std::string("[") + kTinyRow + "]\n");
    write_text(dir_ / "plan.json", std::string(R"({"single_node":{"1k1k":[)") + kTinyRow + "]}}\n");
    std::filesystem::create_directories(dir_ / "job");
    write_text(dir_ / "job" / "job.json", tiny_job_spec(source_path("recipes")));
    // A results store for `review --db` (a store it reads must exist).
    const auto store =
        run_ixbench({"ingest", source_path("tests/data/store/sweep"), "--db", (dir_ / "store.db").string()});
    ASSERT_EQ(store.exit_code, 0) << store.err;
    vars_ = config_vars();
    vars_["fixture"] = dir_.string();
    vars_["source"] = source_path("");
    if (!vars_["source"].empty() && vars_["source"].back() == '/') vars_["source"].pop_back();
    vars_["row"] = kSweepRow;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::map<std::string, std::string> vars_;
};

TEST_F(CliOptions, EveryOptionOfEveryCommandParsesAndRunsCleanly) {
  const Listing listing = read_listing();
  ASSERT_FALSE(listing.commands.empty());
  const auto cases = command_cases();

  // bench serve measures a real simulator: DeepSeek-R1's tokenizer for exact prompt lengths, a
  // fixed 1 ms schedule, and the name --lora-modules asks for.
  auto server = ServerProcess::start({"--model", "deepseek-ai/DeepSeek-R1-0528", "--tokenizer", "deepseek_v3",
                                      "--hardware", "h200", "--tp", "8", "--fixed-ttft-ms", "1", "--fixed-itl-ms", "1",
                                      "--served-model-name", "deepseek-ai/DeepSeek-R1-0528", "cli-lora-a"},
                                     120);
  ASSERT_TRUE(server.has_value()) << server.error().to_string();
  vars_["server"] = (*server)->base_url();
  vars_["server_pid"] = std::to_string((*server)->pid());

  std::vector<OptionRun> runs;
  size_t run_number = 0;
  auto add_run = [&](const std::string& path, const CommandCase& command, const std::vector<std::string>& before,
                     const Sample& sample, const std::vector<std::string>& option_names, const std::string& label) {
    auto vars = vars_;
    const auto tmp = dir_ / ("run" + std::to_string(run_number++));
    std::filesystem::create_directories(tmp);
    vars["tmp"] = tmp.string();
    OptionRun run;
    run.label = label;
    for (const auto& arg : before) run.args.push_back(substitute(arg, vars));
    for (const auto& word : split_path(path)) run.args.push_back(word);
    for (const auto& arg : without_options(command.base, sample, option_names))
      run.args.push_back(substitute(arg, vars));
    for (const auto& arg : sample.args) run.args.push_back(substitute(arg, vars));
    run.input = sample.input.value_or(command.input);
    run.server = command.server;
    run.exits_1 = sample.exits_1;
    run.stderr_shows = sample.stderr_shows;
    runs.push_back(std::move(run));
  };

  for (const auto& command : listing.commands) {
    auto found = cases.find(command.path);
    if (found == cases.end()) {
      ADD_FAILURE() << "'ixbench " << command.path
                    << "' has no base command line in command_cases() (tests/integration/cli_options_test.cc): add "
                       "one that gets it past parsing into its first real step";
      continue;
    }
    const CommandCase& c = found->second;
    std::set<std::string> known;
    for (const auto& option : command.options) {
      for (const auto& name : option.names) {
        known.insert(name);
        std::string missing;
        auto sample = sample_for(option, name, c.samples, missing);
        if (!sample) {
          ADD_FAILURE() << "ixbench " << command.path << " " << name << " " << missing << " in command_cases()[\""
                        << command.path << "\"].samples";
          continue;
        }
        add_run(command.path, c, {}, *sample, option.positional ? std::vector<std::string>{} : option.names,
                command.path + " " + name);
      }
      known.insert(option.name);
    }
    for (const auto& [name, sample] : c.samples)
      EXPECT_TRUE(known.contains(name)) << "a sample for " << name << ", which 'ixbench " << command.path
                                        << "' does not have: remove it";
    // The root's options, once with each command.
    for (const auto& option : listing.global_options) {
      std::string missing;
      auto sample = sample_for(option, option.name, kGlobalSamples, missing);
      if (!sample) {
        ADD_FAILURE() << "ixbench " << option.name << " " << missing << " in kGlobalSamples";
        continue;
      }
      add_run(command.path, c, sample->args, Sample{}, {}, option.name + " " + command.path);
    }
  }

  const auto start = std::chrono::steady_clock::now();
  run_all(runs);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  size_t failures_by_design = 0;
  for (const OptionRun& run : runs) {
    failures_by_design += run.exits_1.empty() ? 0 : 1;
    const std::string problem = check(run);
    if (problem.empty()) continue;
    std::string command = "ixbench";
    for (const auto& arg : run.args) command += " " + arg;
    // A sanitizer's report from its headline; anything else from the end.
    const size_t report = run.result.err.find("ERROR: ");
    const std::string err = has_sanitizer_report(run.result.err) && report != std::string::npos
                                ? run.result.err.substr(report, 3000)
                                : tail(run.result.err);
    ADD_FAILURE() << run.label << ": " << problem << "\n  command: " << command << "\n  stderr: " << err
                  << "\n  stdout: " << tail(run.result.out, 500);
  }
  EXPECT_EQ((*server)->stop(), 0) << tail((*server)->stderr_text());
  std::cout << "cli options: " << runs.size() << " command lines of " << listing.commands.size() << " commands in "
            << static_cast<int>(seconds) << " s, binary " << ixbench_binary()
            << "; exit 1 by design: " << failures_by_design << "\n";
  for (const OptionRun& run : runs)
    if (!run.exits_1.empty()) std::cout << "  " << run.label << ": " << run.exits_1 << "\n";
}

TEST(CliHelp, EveryCommandsHelpStartsWithItsFullUsageLine) {
  const Listing listing = read_listing();
  ASSERT_FALSE(listing.commands.empty());
  std::set<std::string> groups;
  for (const auto& command : listing.commands) {
    std::vector<std::string> args = split_path(command.path);
    if (args.size() > 1) groups.insert(args.front());
    args.push_back("--help");
    auto help = run_ixbench(args);
    EXPECT_EQ(help.exit_code, 0) << command.path << ": " << help.err;
    const std::string usage = "Usage: ixbench " + command.path + " [OPTIONS]";
    EXPECT_TRUE(help.out.starts_with(usage)) << "'ixbench " << command.path << " --help' starts:\n"
                                             << help.out.substr(0, 200);
  }
  // A command group without its subcommand prints its help (to stderr, exit 2), unless the group
  // is a command itself (`report --db --out`).
  for (const auto& command : listing.commands) groups.erase(command.path);
  for (const auto& group : groups) {
    auto help = run_ixbench({group});
    EXPECT_EQ(help.exit_code, 2);
    EXPECT_TRUE(help.err.starts_with("Usage: ixbench " + group + " [OPTIONS] [SUBCOMMAND]")) << help.err.substr(0, 200);
  }
  auto root = run_ixbench({"--help"});
  EXPECT_TRUE(root.out.starts_with("Usage: ixbench [OPTIONS] [SUBCOMMAND]")) << root.out.substr(0, 200);
}

TEST(CliListing, NamesEveryCommandAndItsOptionsButNotItself) {
  const Listing listing = read_listing();
  std::set<std::string> paths;
  for (const auto& command : listing.commands) paths.insert(command.path);
  for (const char* path : {"validate", "sweep full-sweep", "sweep test-config", "tokenize", "sim serve", "sim predict",
                           "sim calibrate", "bench serve", "report table", "report", "dashboard", "trace stats"})
    EXPECT_TRUE(paths.contains(path)) << path;
  for (const auto& command : listing.commands) {
    if (command.path != "bench serve") continue;
    auto find = [&](const std::string& name) {
      return std::find_if(command.options.begin(), command.options.end(),
                          [&](const OptionInfo& o) { return o.name == name; });
    };
    ASSERT_NE(find("--ignore-eos"), command.options.end());
    EXPECT_TRUE(find("--ignore-eos")->flag);
    ASSERT_NE(find("--random-input-len"), command.options.end());
    EXPECT_EQ(find("--random-input-len")->default_value, "1024");
    EXPECT_EQ(find("--help"), command.options.end()) << "help flags are left out";
  }
  for (const auto& option : listing.global_options) EXPECT_NE(option.name, "--cli-json");
  // Hidden: the root's help does not mention it.
  EXPECT_EQ(run_ixbench({"--help"}).out.find("--cli-json"), std::string::npos);
}

}  // namespace
}  // namespace ix::testing
