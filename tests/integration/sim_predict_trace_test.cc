// `ixbench sim predict --trace`: the agentic replay in virtual time, against what `bench replay`
// measures on the real `ixbench sim serve` (the two clocks agree), reproducibility, the row's
// DRAM offloading tier, the fixed schedule, and every input it refuses.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/json_io.h"
#include "support/server_process.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace json = boost::json;
using ix::testing::run_ixbench;
using ix::testing::scratch_dir;
using ix::testing::source_path;

const std::string kDemoTrace = source_path("examples/demo/traces/demo_sessions.jsonl");

// The demo's agentic row (`ixbench sweep full-sweep` of examples/demo): gpt-oss-120b on one B200,
// KV offloaded to 299 GB of DRAM, conc 4, an hour.
json::object demo_row(bool dram = true) {
  json::object row{{"image", "ixbench-sim"},
                   {"model", "openai/gpt-oss-120b"},
                   {"model-prefix", "gptoss"},
                   {"precision", "fp4"},
                   {"framework", "sim"},
                   {"runner", "cluster:b200-sim"},
                   {"tp", 1},
                   {"pp", 1},
                   {"dcp-size", 1},
                   {"pcp-size", 1},
                   {"ep", 1},
                   {"dp-attn", false},
                   {"spec-decoding", "none"},
                   {"conc", 4},
                   {"duration", 3600},
                   {"exp-name", "gptoss_tp1_conc4_kvdram-native"},
                   {"scenario-type", "agentic-coding"}};
  if (dram) {
    row["kv-offloading"] = "dram";
    row["total-cpu-dram-gb"] = 299;
    row["kv-offload-backend"] = json::object{{"name", "native"}};
  } else {
    row["kv-offloading"] = "none";
  }
  return row;
}

std::string write_row(const std::filesystem::path& dir, const json::object& row, const std::string& name = "row.json") {
  const auto path = dir / name;
  std::ofstream(path) << json::serialize(row);
  return path.string();
}

json::object read_result(const std::filesystem::path& dir) {
  auto parsed = ix::json::read_file(dir / "replay_result.json");
  EXPECT_TRUE(parsed && parsed->is_object()) << (dir / "replay_result.json");
  return parsed && parsed->is_object() ? parsed->as_object() : json::object{};
}

double num(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* v = &o.at(*path.begin());
  for (auto it = path.begin() + 1; it != path.end(); ++it) v = &v->as_object().at(*it);
  return v->is_null() ? std::nan("") : v->to_number<double>();
}

// sim predict --trace with `args`, artifacts in `dir`; the process and its result.
struct Predicted {
  ix::testing::ProcessResult process;
  json::object result;
};
Predicted predict(const std::filesystem::path& dir, std::vector<std::string> args) {
  std::vector<std::string> all = {"sim", "predict", "--artifact-dir", dir.string(), "--format", "table"};
  all.insert(all.end(), args.begin(), args.end());
  Predicted p{.process = run_ixbench(all, "", 120.0)};
  // Several concurrencies write one directory each (conc<N>/) instead.
  if (p.process.exit_code == 0 && std::filesystem::exists(dir / "replay_result.json")) p.result = read_result(dir);
  return p;
}

void expect_near_share(double measured, double predicted, double share, const char* what) {
  EXPECT_NEAR(predicted, measured, share * std::abs(measured))
      << what << ": bench replay " << measured << ", sim predict " << predicted;
}

// The same trace, flags and engine through bench replay on sim serve (wall clock) and sim predict
// (virtual time): the same requests complete, with latencies and throughput within a few per cent
// (the server's tokens include the chat template's own, the prediction an estimate of them; the
// client adds its loop's delays).
TEST(SimPredictTrace, AgreesWithBenchReplayAgainstSimServe) {
  const auto dir = scratch_dir("sim_predict_trace_agree");
  auto server = ix::testing::ServerProcess::start(
      {"--model", "openai/gpt-oss-120b", "--served-model-name", "openai/gpt-oss-120b", "--hardware", "b200",
       "--precision", "fp4", "--framework", "vllm", "--tp", "1", "--kv-offloading-size", "278.47"});
  ASSERT_TRUE(server.has_value()) << server.error().to_string();
  const std::vector<std::string> schedule = {
      "--trace", kDemoTrace, "--concurrency", "4", "--benchmark-duration", "20", "--warmup-requests-per-lane", "3"};
  std::vector<std::string> replay_args = {"bench",          "replay",
                                          "--url",          (*server)->base_url(),
                                          "--model",        "openai/gpt-oss-120b",
                                          "--artifact-dir", (dir / "measured").string(),
                                          "--no-progress"};
  replay_args.insert(replay_args.end(), schedule.begin(), schedule.end());
  const auto measured_run = run_ixbench(replay_args, "", 120.0);
  ASSERT_EQ(measured_run.exit_code, 0) << measured_run.err;
  const json::object measured = read_result(dir / "measured");

  std::vector<std::string> predict_args = {"--row-file", write_row(dir, demo_row())};
  predict_args.insert(predict_args.end(), schedule.begin(), schedule.end());
  const Predicted predicted = predict(dir / "predicted", predict_args);
  ASSERT_EQ(predicted.process.exit_code, 0) << predicted.process.err;
  const json::object& p = predicted.result;

  EXPECT_NEAR(num(p, {"num_requests_successful"}), num(measured, {"num_requests_successful"}),
              0.1 * num(measured, {"num_requests_successful"}));
  for (const char* metric : {"ttft", "e2el", "itl"})
    expect_near_share(num(measured, {"request_metrics", "latency", metric, "p50"}),
                      num(p, {"request_metrics", "latency", metric, "p50"}), 0.15, metric);
  expect_near_share(num(measured, {"request_metrics", "throughput", "output", "tokens_per_second"}),
                    num(p, {"request_metrics", "throughput", "output", "tokens_per_second"}), 0.1, "output tokens/s");
  EXPECT_NEAR(num(p, {"prefix_cache", "realized", "hit_rate"}), num(measured, {"prefix_cache", "realized", "hit_rate"}),
              0.05);
  EXPECT_EQ(num(p, {"prefix_cache", "theoretical", "profiling", "hit_rate"}),
            num(measured, {"prefix_cache", "theoretical", "profiling", "hit_rate"}))
      << "the same turns were sent";
  EXPECT_EQ(p.at("run").at("tool").as_string(), "ixbench sim predict --trace");
  EXPECT_TRUE(std::filesystem::exists(dir / "predicted" / "profile_export.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(dir / "predicted" / "profile_export_aiperf.json"));
}

TEST(SimPredictTrace, ARowPredictsItsOwnConcurrencyAndDurationAndTheSameTwice) {
  const auto dir = scratch_dir("sim_predict_trace_row");
  const std::string row = write_row(dir, demo_row());
  const Predicted first = predict(dir / "a", {"--row-file", row, "--trace", kDemoTrace});
  ASSERT_EQ(first.process.exit_code, 0) << first.process.err;
  EXPECT_EQ(num(first.result, {"run", "concurrency"}), 4);
  EXPECT_EQ(num(first.result, {"run", "benchmark_duration_s"}), 3600);
  EXPECT_GE(num(first.result, {"request_metrics", "throughput", "duration_seconds"}), 3590);
  EXPECT_NE(first.process.out.find("Predicted replay, concurrency 4"), std::string::npos) << first.process.out;
  const Predicted second = predict(dir / "b", {"--row-file", row, "--trace", kDemoTrace});
  ASSERT_EQ(second.process.exit_code, 0) << second.process.err;
  EXPECT_EQ(json::serialize(first.result.at("request_metrics")), json::serialize(second.result.at("request_metrics")));
  // Flags win over the row; --conc lists several concurrencies, one directory each.
  const Predicted flags =
      predict(dir / "c", {"--row-file", row, "--trace", kDemoTrace, "--conc", "1,2", "--benchmark-duration", "60"});
  ASSERT_EQ(flags.process.exit_code, 0) << flags.process.err;
  for (int conc : {1, 2}) {
    const json::object result = read_result(dir / "c" / ("conc" + std::to_string(conc)));
    EXPECT_EQ(num(result, {"run", "concurrency"}), conc);
    EXPECT_EQ(num(result, {"run", "benchmark_duration_s"}), 60);
  }
}

// A GPU pool too small for the lanes' histories: with the row's DRAM tier the evicted prefixes
// come back from host memory (faster first tokens); without it they are computed again. Before the
// core waited for events when nothing could be scheduled, this workload made it spin forever.
TEST(SimPredictTrace, TheDramTierServesPrefixesTheGpuPoolCannotHold) {
  const auto dir = scratch_dir("sim_predict_trace_dram");
  json::object results[2];
  for (bool dram : {true, false}) {
    const auto out = dir / (dram ? "dram" : "none");
    const Predicted p =
        predict(out, {"--row-file", write_row(dir, demo_row(dram), dram ? "dram.json" : "none.json"), "--trace",
                      kDemoTrace, "--benchmark-duration", "300", "--num-gpu-blocks-override", "400"});
    ASSERT_EQ(p.process.exit_code, 0) << p.process.err;
    results[dram ? 0 : 1] = p.result;
  }
  EXPECT_GT(num(results[0], {"run", "engine_counters", "cpu_tier_hits"}), 0);
  EXPECT_GT(num(results[0], {"run", "engine_counters", "kv_offload_bytes_cpu_to_gpu"}), 0);
  EXPECT_EQ(num(results[1], {"run", "engine_counters", "cpu_tier_hits"}), 0);
  EXPECT_LT(num(results[0], {"request_metrics", "latency", "ttft", "mean"}),
            num(results[1], {"request_metrics", "latency", "ttft", "mean"}));
}

TEST(SimPredictTrace, TheFixedScheduleSendsOnTimeInVirtualTime) {
  const auto dir = scratch_dir("sim_predict_trace_fixed");
  const Predicted p =
      predict(dir, {"--tp", "8", "--trace", source_path("tests/data/traces/mooncake_small.jsonl"), "--fixed-schedule",
                    "--fixed-schedule-speedup", "10", "--benchmark-duration", "600"});
  ASSERT_EQ(p.process.exit_code, 0) << p.process.err;
  EXPECT_GT(num(p.result, {"num_requests_successful"}), 0);
  EXPECT_EQ(p.result.at("run").at("mode").as_string(), "fixed_schedule");
  EXPECT_EQ(num(p.result, {"run", "warmup_sent"}), 0);
}

// Turns longer than the context window fail as the server answers them (400), and an error share
// above --failed-request-threshold makes the run unusable (exit 1), artifacts written.
TEST(SimPredictTrace, TurnsBeyondTheContextWindowFailAsTheServerWouldAnswerThem) {
  const auto dir = scratch_dir("sim_predict_trace_context");
  const auto p = run_ixbench({"sim", "predict", "--tp", "8", "--max-model-len", "1500", "--trace", kDemoTrace,
                              "--benchmark-duration", "120", "--artifact-dir", dir.string(), "--format", "table"},
                             "", 120.0);
  EXPECT_EQ(p.exit_code, 1) << p.err;
  const json::object result = read_result(dir);
  EXPECT_GT(num(result, {"request_accounting", "records_error_dropped"}), 0);
  EXPECT_NE(json::serialize(result.at("validity")).find("error_rate_exceeded"), std::string::npos);
}

TEST(SimPredictTrace, RefusesWhatItCannotPredictWithAClearError) {
  const auto dir = scratch_dir("sim_predict_trace_bad");
  json::object no_budget = demo_row();
  no_budget.erase("total-cpu-dram-gb");
  json::object ssd = demo_row();
  ssd["kv-offloading"] = "ssd";
  const std::string row = write_row(dir, demo_row());
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--row-file", row}, "give --trace FILE|DIR"},
      {{"--tp", "8", "--trace", kDemoTrace, "--isl", "100"}, "--isl applies to fixed-length predictions"},
      {{"--tp", "8", "--isl", "16", "--osl", "4", "--conc", "1", "--concurrency", "2"}, "applies to agentic replays"},
      {{"--tp", "8", "--isl", "16", "--osl", "4", "--conc", "1", "--fixed-schedule"}, "applies to agentic replays"},
      {{"--tp", "8", "--trace", source_path("tests/data/traces/bad_json_line3.jsonl")}, "bad_json_line3.jsonl:3"},
      {{"--tp", "8", "--trace", (dir / "missing.jsonl").string()}, "missing.jsonl"},
      {{"--tp", "8", "--trace", kDemoTrace, "--live-assistant-responses"}, "generated text"},
      {{"--tp", "8", "--trace", kDemoTrace, "--concurrency", "0"}, "--concurrency must be >= 1"},
      {{"--tp", "8", "--trace", kDemoTrace, "--benchmark-duration", "-1"}, "--benchmark-duration"},
      {{"--row-file", write_row(dir, no_budget, "no_budget.json"), "--trace", kDemoTrace}, "total-cpu-dram-gb"},
      {{"--row-file", write_row(dir, ssd, "ssd.json"), "--trace", kDemoTrace}, "models none and dram"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"sim", "predict", "--artifact-dir", (dir / "out").string()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto p = run_ixbench(args, "", 60.0);
    EXPECT_EQ(p.exit_code, 1) << c.says;
    EXPECT_NE(p.err.find(c.says), std::string::npos) << "wanted '" << c.says << "' in: " << p.err;
    EXPECT_NE(p.err.find("ixbench: error:"), std::string::npos) << p.err;
  }
}

}  // namespace
}  // namespace ix
