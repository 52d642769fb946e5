// `ixbench bench serve` against the real `ixbench sim serve` over loopback: timing accuracy
// against the simulator's exact schedule, every failure kind through its fault injection, open-loop
// pacing, result schema, and clean stops.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/json_io.h"
#include "http/client.h"
#include "support/scripted_server.h"
#include "support/server_process.h"
#include "support/subprocess.h"
#include "support/temp_files.h"
#include "tls_proxy.h"

namespace ix {
namespace {

using ix::testing::scratch_dir;
using ix::testing::ServerProcess;

struct BenchRun {
  ix::testing::ProcessResult process;
  boost::json::object result;
  std::vector<boost::json::object> requests;
};

// Runs bench serve with the common flags plus `args`; loads the result file and JSONL records.
BenchRun bench(const ServerProcess& server, const std::string& name, std::vector<std::string> args,
               double timeout_s = 120.0) {
  const auto dir = scratch_dir(name);
  std::vector<std::string> all = {"bench", "serve", "--base-url", server.base_url(), "--model", "deepseek-r1",
                                  "--tokenizer", "deepseek_v3", "--save-result", "--save-detailed", "--result-dir",
                                  dir.string(), "--result-filename", "result.json", "--no-progress",
                                  // Other processes share this machine's cores; a descheduled client is
                                  // not what these tests check (capacity bench does).
                                  "--client-lag-threshold-ms", "1000"};
  all.insert(all.end(), args.begin(), args.end());
  BenchRun run;
  run.process = ix::testing::run_ixbench(all, "", timeout_s);
  auto parsed = ix::json::read_file(dir / "result.json");
  if (parsed && parsed->is_object()) run.result = parsed->as_object();
  std::ifstream lines(dir / "result.requests.jsonl");
  for (std::string line; std::getline(lines, line);) {
    auto r = ix::json::parse(line);
    if (r && r->is_object()) run.requests.push_back(r->as_object());
  }
  std::filesystem::remove_all(dir);
  return run;
}

// The "ixbench" object of a result (empty when the result has none).
const boost::json::object& ixb(const boost::json::object& result) {
  static const boost::json::object kNone;
  const auto* own = result.if_contains("ixbench");
  return own && own->is_object() ? own->as_object() : kNone;
}

double num(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v) return std::nan("");
  return v->is_double() ? v->as_double() : v->is_int64() ? static_cast<double>(v->as_int64()) : std::nan("");
}

std::unique_ptr<ServerProcess> start_server(const std::vector<std::string>& args) {
  // The client's tokenizer, so prompt counts are exact on both sides.
  std::vector<std::string> all = {"--model", "deepseek-r1", "--tokenizer", "deepseek_v3"};
  all.insert(all.end(), args.begin(), args.end());
  auto server = ServerProcess::start(all);
  EXPECT_TRUE(server.has_value()) << (server ? "" : server.error().to_string());
  return server ? std::move(*server) : nullptr;
}

TEST(BenchServe, MeasuresTheSimulatorsFixedScheduleWithin1ms) {
  auto server = start_server({"--fixed-ttft-ms", "100", "--fixed-itl-ms", "10"});
  ASSERT_TRUE(server);
  auto run = bench(*server, "fixed",
                   {"--random-input-len", "64", "--random-output-len", "20", "--random-range-ratio", "1.0",
                    "--max-concurrency", "4", "--num-prompts", "24"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err << run.process.out;
  const auto& r = run.result;
  EXPECT_EQ(num(r, "completed"), 24);
  EXPECT_EQ(num(r, "failed"), 0);
  EXPECT_EQ(num(r, "total_output_tokens"), 24 * 20);
  EXPECT_EQ(num(r, "total_input_tokens"), 24 * 64);  // exact prompt lengths under the tokenizer
  EXPECT_NEAR(num(r, "median_ttft_ms"), 100.0, 1.0);
  EXPECT_NEAR(num(r, "median_itl_ms"), 10.0, 1.0);
  EXPECT_NEAR(num(r, "median_tpot_ms"), 10.0, 1.0);
  EXPECT_NEAR(num(r, "median_e2el_ms"), 100.0 + 19 * 10.0, 1.0);
  EXPECT_LT(num(ixb(r), "median_queue_ms"), 1.0);
  EXPECT_EQ(num(ixb(r), "num_warmups"), 8);  // 2 x concurrency
  ASSERT_EQ(run.requests.size(), 24u);
  for (const auto& q : run.requests) {
    EXPECT_TRUE(q.at("success").as_bool());
    EXPECT_EQ(q.at("content_event_ms").as_array().size(), 20u);
  }
  // The console summary is vLLM's.
  EXPECT_NE(run.process.out.find("============ Serving Benchmark Result ============"), std::string::npos);
  EXPECT_NE(run.process.out.find("Mean TTFT (ms):"), std::string::npos);
}

TEST(BenchServe, HttpErrorsAreCountedAndFailTheRunWithTheReportWritten) {
  auto server = start_server({"--no-delay", "--fault-error-rate", "1", "--fault-error-codes", "429,503"});
  ASSERT_TRUE(server);
  auto run = bench(*server, "errors",
                   {"--random-input-len", "16", "--random-output-len", "4", "--max-concurrency", "2", "--num-prompts",
                    "10", "--num-warmups", "0"});
  EXPECT_EQ(run.process.exit_code, 1) << run.process.err;
  EXPECT_EQ(num(run.result, "failed"), 10);
  EXPECT_EQ(num(ixb(run.result).at("error_counts").as_object(), "http_status"), 10);
  const std::string example(ixb(run.result).at("error_examples").as_object().at("http_status").as_string());
  EXPECT_TRUE(example.starts_with("HTTP 429") || example.starts_with("HTTP 503")) << example;
  EXPECT_NE(run.process.err.find("no request completed (10 of 10 failed)"), std::string::npos) << run.process.err;
}

TEST(BenchServe, StreamFaultsAreCountedByKind) {
  struct Case {
    std::vector<std::string> server_flags;
    std::vector<std::string> bench_flags;
    std::string kind;
  };
  const std::vector<Case> cases = {
      {{"--fixed-ttft-ms", "1", "--fixed-itl-ms", "1", "--fault-stall-rate", "1", "--fault-stall-ms", "5000"},
       {"--request-timeout", "0.3"},
       "timeout"},
      {{"--no-delay", "--fault-drop-rate", "1"}, {}, "truncated"},
      {{"--no-delay", "--fault-malformed-rate", "1"}, {}, "malformed"},
  };
  for (const Case& c : cases) {
    auto server = start_server(c.server_flags);
    ASSERT_TRUE(server);
    std::vector<std::string> flags = {"--random-input-len", "16", "--random-output-len", "8", "--max-concurrency", "2",
                                      "--num-prompts",      "6",  "--num-warmups",       "0"};
    flags.insert(flags.end(), c.bench_flags.begin(), c.bench_flags.end());
    auto run = bench(*server, "fault_" + c.kind, flags);
    EXPECT_EQ(run.process.exit_code, 1) << c.kind << run.process.err;
    ASSERT_TRUE(ixb(run.result).contains("error_counts")) << c.kind << run.process.err;
    EXPECT_EQ(num(ixb(run.result).at("error_counts").as_object(), c.kind), 6)
        << c.kind << " " << ix::json::to_string(ixb(run.result).at("error_counts"));
    EXPECT_FALSE(ixb(run.result).at("error_examples").as_object().at(c.kind).as_string().empty());
    ASSERT_EQ(run.requests.size(), 6u);
    EXPECT_EQ(run.requests[0].at("error_kind").as_string(), c.kind);
  }
}

TEST(BenchServe, ShortOutputsAreReportedButSucceed) {
  auto server = start_server({"--no-delay", "--fault-short-rate", "1"});
  ASSERT_TRUE(server);
  auto run = bench(*server, "short",
                   {"--random-input-len", "16", "--random-output-len", "32", "--max-concurrency", "2", "--num-prompts",
                    "6", "--num-warmups", "0"});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_EQ(num(run.result, "completed"), 6);
  EXPECT_EQ(num(ixb(run.result), "short_output_requests"), 6);
}

TEST(BenchServe, OpenLoopSendsOnTheSeededSchedule) {
  auto server = start_server({"--no-delay"});
  ASSERT_TRUE(server);
  auto run = bench(*server, "open",
                   {"--random-input-len", "16", "--random-output-len", "4", "--request-rate", "100", "--num-prompts",
                    "200", "--num-warmups", "0", "--seed", "5"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  // Sends happen at the scheduled times (absolute schedule, no drift).
  EXPECT_LT(num(ixb(run.result), "median_queue_ms"), 0.5);
  // The tail may be late only by as much as the OS delayed the client's loop, which the client
  // measures and reports (on an oversubscribed machine, e.g. tests beside a parallel build).
  const double lag_p99 = ixb(run.result).at("client").as_object().at("event_loop_lag_p99_ms").to_number<double>();
  EXPECT_LT(num(ixb(run.result), "p99_queue_ms"), 5.0 + lag_p99) << "client loop lag p99 " << lag_p99 << " ms";
  const auto& offsets = ixb(run.result).at("scheduled_offsets_ms").as_array();
  ASSERT_EQ(offsets.size(), 200u);
  const double last_s = offsets.back().as_double() / 1000.0;
  EXPECT_NEAR(last_s, 2.0, 0.45);  // 199 Poisson gaps of mean 10 ms
  EXPECT_NEAR(num(run.result, "duration"), last_s, 0.2);
  // Same seed, same schedule.
  auto again = bench(*server, "open2",
                     {"--random-input-len", "16", "--random-output-len", "4", "--request-rate", "100", "--num-prompts",
                      "200", "--num-warmups", "0", "--seed", "5"});
  EXPECT_EQ(ix::json::to_string(ixb(again.result).at("scheduled_offsets_ms")), ix::json::to_string(offsets));
  EXPECT_EQ(ix::json::to_string(again.result.at("input_lens")), ix::json::to_string(run.result.at("input_lens")));
}

TEST(BenchServe, RampUpRaisesTheRateOverTheRunAsVllmDoes) {
  auto server = start_server({"--no-delay"});
  ASSERT_TRUE(server);
  const std::vector<std::string> common = {"--random-input-len",
                                           "16",
                                           "--random-output-len",
                                           "2",
                                           "--num-prompts",
                                           "300",
                                           "--num-warmups",
                                           "0",
                                           "--seed",
                                           "3"};
  auto args = common;
  args.insert(args.end(), {"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "40", "--ramp-up-end-rps", "400"});
  auto run = bench(*server, "ramp", args);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_EQ(ixb(run.result).at("ramp_up_strategy").as_string(), "linear");
  EXPECT_EQ(num(ixb(run.result), "ramp_up_start_rps"), 40);
  EXPECT_EQ(num(ixb(run.result), "ramp_up_end_rps"), 400);
  EXPECT_EQ(run.result.at("request_rate").as_string(), "inf");
  // The schedule: gaps of the first 50 requests (40-100 req/s) several times those of the last
  // 50 (340-400 req/s).
  const auto& offsets = ixb(run.result).at("scheduled_offsets_ms").as_array();
  ASSERT_EQ(offsets.size(), 300u);
  const double first = offsets[50].as_double() - offsets[0].as_double();
  const double last = offsets[299].as_double() - offsets[249].as_double();
  EXPECT_GT(first, 3 * last) << first << " ms vs " << last << " ms";
  EXPECT_LT(num(ixb(run.result), "median_queue_ms"), 1.0);  // sent when due
  // vLLM's rps_change_events: the start rate, then every whole rate passed, in order.
  const auto& events = ixb(run.result).at("rps_change_events").as_array();
  ASSERT_EQ(events.size(), 361u);
  std::string previous;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i].as_object();
    EXPECT_EQ(num(e, "rps"), 40.0 + static_cast<double>(i));
    const std::string stamp(e.at("timestamp").as_string());
    EXPECT_TRUE(std::regex_match(stamp, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})"))) << stamp;
    EXPECT_GE(stamp, previous);
    previous = stamp;
  }
  // Same seed, same ramp: the same schedule; exponential spends longer at low rates.
  auto exponential = common;
  exponential.insert(exponential.end(),
                     {"--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "40", "--ramp-up-end-rps", "400"});
  auto exp_run = bench(*server, "ramp_exp", exponential);
  ASSERT_EQ(exp_run.process.exit_code, 0) << exp_run.process.err;
  EXPECT_GT(ixb(exp_run.result).at("scheduled_offsets_ms").as_array().back().as_double(), offsets.back().as_double());
  auto again = bench(*server, "ramp_again", args);
  EXPECT_EQ(ix::json::to_string(ixb(again.result).at("scheduled_offsets_ms")), ix::json::to_string(offsets));

  // vLLM's default file name for a ramp.
  const auto dir = scratch_dir("ramp_name");
  auto named = ix::testing::run_ixbench({"bench",
                                         "serve",
                                         "--base-url",
                                         server->base_url(),
                                         "--model",
                                         "deepseek-ai/DeepSeek-R1",
                                         "--served-model-name",
                                         "deepseek-r1",
                                         "--tokenizer",
                                         "deepseek_v3",
                                         "--random-input-len",
                                         "16",
                                         "--random-output-len",
                                         "2",
                                         "--num-prompts",
                                         "20",
                                         "--max-concurrency",
                                         "4",
                                         "--num-warmups",
                                         "0",
                                         "--no-progress",
                                         "--client-lag-threshold-ms",  // a loaded CI machine is not the subject
                                         "1000",
                                         "--save-result",
                                         "--result-dir",
                                         dir.string(),
                                         "--ramp-up-strategy",
                                         "exponential",
                                         "--ramp-up-start-rps",
                                         "50",
                                         "--ramp-up-end-rps",
                                         "400"});
  ASSERT_EQ(named.exit_code, 0) << named.err;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  ASSERT_EQ(names.size(), 1u);
  EXPECT_TRUE(names[0].starts_with("vllm-ramp-up-exponential-50qps-400qps-concurrency4-DeepSeek-R1-")) << names[0];
  std::filesystem::remove_all(dir);

  // vLLM's rules, as errors before anything is sent (and rates without a strategy are not ignored).
  for (const auto& [extra, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"}, "needs --ramp-up-start-rps and"},
           {{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "5", "--ramp-up-end-rps", "10", "--request-rate",
             "4"},
            "remove --request-rate 4"},
           {{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "0", "--ramp-up-end-rps", "10"},
            "--ramp-up-start-rps must be >= 1"},
           {{"--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "20", "--ramp-up-end-rps", "10"},
            "must be <= --ramp-up-end-rps (10)"},
           {{"--ramp-up-strategy", "sigmoid", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "10"},
            "--ramp-up-strategy must be linear or exponential, got 'sigmoid'"},
           {{"--ramp-up-end-rps", "10"}, "need --ramp-up-strategy"}}) {
    auto bad = common;
    bad.insert(bad.end(), extra.begin(), extra.end());
    auto refused = bench(*server, "ramp_bad", bad);
    EXPECT_EQ(refused.process.exit_code, 1) << says;
    EXPECT_NE(refused.process.err.find(says), std::string::npos) << refused.process.err;
    EXPECT_TRUE(refused.result.empty()) << says;
  }
}

TEST(BenchServe, ResultKeysMatchTheGolden) {
  auto server = start_server({"--no-delay"});
  ASSERT_TRUE(server);
  auto run = bench(*server, "schema",
                   {"--random-input-len", "16", "--random-output-len", "4", "--max-concurrency", "2", "--num-prompts",
                    "4", "--goodput", "ttft:1000", "--metadata", "run=ci"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  std::string keys;
  for (const auto& [key, value] : run.result) {
    const char* kind = value.is_null()     ? "null"
                       : value.is_string() ? "string"
                       : value.is_array()  ? "array"
                       : value.is_object() ? "object"
                       : value.is_bool()   ? "bool"
                                           : "number";
    keys += std::string(key) + " " + kind + "\n";
  }
  const std::string golden = ix::testing::source_path("tests/data/bench/bench_serve_keys.golden");
  if (std::getenv("IXBENCH_UPDATE_GOLDENS")) std::ofstream(golden) << keys;
  std::ifstream in(golden);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(keys, expected.str());
  EXPECT_EQ(run.result.at("run").as_string(), "ci");
  EXPECT_EQ(num(run.result, "request_goodput:"), num(run.result, "request_throughput"));
  // The API key never reaches the result.
  EXPECT_EQ(ix::json::to_string(run.result).find("Bearer"), std::string::npos);
}

// Requests the simulator finished (vllm:request_success_total, all reasons), or -1.
double finished_requests(const ix::http::Url& url) {
  auto r = ix::http::fetch(url, "GET", "/metrics");
  if (!r || r->status != 200) return -1;
  double total = 0;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("vllm:request_success_total{")) total += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return total;
}

TEST(BenchServe, StopsCleanlyWhenTheServerDiesAndKeepsWhatItMeasured) {
  auto server = start_server({"--fixed-ttft-ms", "5", "--fixed-itl-ms", "20"});
  ASSERT_TRUE(server);
  // Kill the server once it has finished more requests than one wave of the client (not after a
  // fixed time: under sanitizers the client's start-up alone takes a second).
  std::thread killer([&] {
    const auto url = *ix::http::Url::parse(server->base_url());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline && finished_requests(url) < 8) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    server->stop();
  });
  auto run = bench(*server, "died",
                   {"--random-input-len", "16", "--random-output-len", "30", "--max-concurrency", "4", "--num-prompts",
                    "400", "--num-warmups", "0", "--server-pid", std::to_string(server->pid())},
                   60.0);
  killer.join();
  EXPECT_EQ(run.process.exit_code, 1) << run.process.err;
  ASSERT_TRUE(ixb(run.result).contains("invalid_reasons")) << run.process.err;
  EXPECT_FALSE(ixb(run.result).at("run_valid").as_bool());
  EXPECT_NE(ix::json::to_string(ixb(run.result).at("invalid_reasons")).find("exited"), std::string::npos);
  EXPECT_GT(num(run.result, "completed"), 4);
  EXPECT_LE(num(run.result, "completed") + num(run.result, "failed"), 400);
  // Nothing more is sent once the server refuses connections, even while its process is still
  // shutting down: the failures are the streams cut by the kill (4 in flight), not the
  // remaining requests burnt on refused connections (300+ before).
  EXPECT_LT(num(run.result, "failed"), 20) << ix::json::to_string(ixb(run.result).at("error_counts"));
}

TEST(BenchServe, EveryBackendRunsEndToEndAgainstTheSimulator) {
  // Each backend's endpoint and body, through a real server: every request completes with the
  // drawn lengths, and the server generated what the client counted.
  auto server = start_server({"--fixed-ttft-ms", "5", "--fixed-itl-ms", "1"});
  ASSERT_TRUE(server);
  for (const std::string backend : {"vllm", "sglang", "openai", "openai-chat", "trt", "atom"}) {
    SCOPED_TRACE(backend);
    auto run = bench(*server, "backend_" + backend,
                     {"--backend", backend, "--random-input-len", "64", "--random-output-len", "12",
                      "--max-concurrency", "4", "--num-prompts", "8", "--num-warmups", "0", "--seed", "5"});
    ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
    EXPECT_EQ(num(run.result, "completed"), 8);
    EXPECT_EQ(num(run.result, "failed"), 0);
    const auto& output_lens = run.result.at("output_lens").as_array();
    ASSERT_EQ(output_lens.size(), 8u);
    double total = 0;
    for (const auto& len : output_lens) {
      EXPECT_GE(len.to_number<double>(), 9);  // [floor(0.8 * 12), 12]
      EXPECT_LE(len.to_number<double>(), 12);
      total += len.to_number<double>();
    }
    EXPECT_EQ(num(run.result, "total_output_tokens"), total);
    const auto& mismatch = ixb(run.result).at("output_token_mismatch").as_object();
    EXPECT_EQ(num(mismatch, "compared_requests"), 8);
    EXPECT_EQ(num(mismatch, "mismatched_requests"), 0) << ix::json::to_string(mismatch);
  }
}

TEST(BenchServe, PercentileMetricsChooseTheReportedMetricsAsVllm) {
  // vLLM reports mean/median/std/p* only for the --percentile-metrics it was given.
  auto server = start_server({"--no-delay"});
  ASSERT_TRUE(server);
  auto run = bench(*server, "percentile_metrics",
                   {"--random-input-len", "32", "--random-output-len", "8", "--num-prompts", "8", "--max-concurrency",
                    "2", "--percentile-metrics", "ttft,e2el", "--metric-percentiles", "50,99"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  for (const char* key : {"mean_ttft_ms", "median_e2el_ms", "std_ttft_ms", "p50_ttft_ms", "p99_e2el_ms"})
    EXPECT_TRUE(run.result.contains(key)) << key;
  for (const char* key : {"mean_tpot_ms", "median_itl_ms", "p99_tpot_ms", "p99_itl_ms", "p90_ttft_ms", "p99.9_e2el_ms"})
    EXPECT_FALSE(run.result.contains(key)) << key;
  EXPECT_EQ(run.process.out.find("TPOT"), std::string::npos) << run.process.out;
  EXPECT_NE(run.process.out.find("P50 TTFT (ms):"), std::string::npos) << run.process.out;
}

TEST(BenchServe, HttpsTargetStreamsThroughTls) {
  // The TLS read path (asio's ssl stream; stamps at read completion, no kernel timestamps) end to
  // end: bench serve -> TLS proxy -> sim serve on a fixed schedule.
  auto server = start_server({"--fixed-ttft-ms", "20", "--fixed-itl-ms", "5"});
  ASSERT_TRUE(server);
  std::string error;
  auto proxy = ix::testing::TlsProxy::start(server->port(), &error);
  ASSERT_TRUE(proxy) << error;
  const auto dir = scratch_dir("https");
  const std::vector<std::string> base = {"bench",
                                         "serve",
                                         "--base-url",
                                         proxy->base_url(),
                                         "--model",
                                         "deepseek-r1",
                                         "--tokenizer",
                                         "deepseek_v3",
                                         "--random-input-len",
                                         "64",
                                         "--random-output-len",
                                         "20",
                                         "--random-range-ratio",
                                         "1",
                                         "--max-concurrency",
                                         "4",
                                         "--num-prompts",
                                         "12",
                                         "--num-warmups",
                                         "0",
                                         "--no-progress",
                                         "--client-lag-threshold-ms",
                                         "1000",
                                         "--save-result",
                                         "--result-dir",
                                         dir.string(),
                                         "--result-filename",
                                         "result.json"};
  std::vector<std::string> insecure = base;
  insecure.push_back("--insecure");
  auto run = ix::testing::run_ixbench(insecure, "", 120.0);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto parsed = ix::json::read_file(dir / "result.json");
  ASSERT_TRUE(parsed && parsed->is_object());
  const auto& result = parsed->as_object();
  EXPECT_EQ(num(result, "completed"), 12);
  EXPECT_EQ(num(result, "total_output_tokens"), 12 * 20);
  // The schedule through TLS: TTFT 20 ms and 5 ms between tokens, plus the proxy's hop.
  EXPECT_GE(num(result, "median_ttft_ms"), 20.0);
  EXPECT_LT(num(result, "median_ttft_ms"), 40.0);
  EXPECT_GT(num(result, "median_tpot_ms"), 4.5);
  EXPECT_LT(num(result, "median_tpot_ms"), 7.0);
  // Verifying the self-signed certificate fails every request, with the reason.
  auto verified = ix::testing::run_ixbench(base, "", 120.0);
  EXPECT_EQ(verified.exit_code, 1) << verified.err;
  EXPECT_NE(verified.err.find("TLS handshake"), std::string::npos) << verified.err;
  std::filesystem::remove_all(dir);
}

TEST(BenchServe, ServerSideViewProfileAndExactChatPromptLengths) {
  auto server = start_server({"--tp", "8", "--spec-decoding", "mtp", "--acceptance-length", "2.5"});
  ASSERT_TRUE(server);
  auto run = bench(*server, "server_view",
                   {"--backend", "openai-chat", "--random-input-len", "200", "--random-output-len", "40",
                    "--max-concurrency", "4", "--num-prompts", "16", "--spec-acceptance-length", "2.5", "--profile"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  const auto& server_view = ixb(run.result).at("server_metrics").as_object();
  EXPECT_NEAR(num(server_view, "spec_decode_acceptance_length"), 2.5, 0.35);
  EXPECT_EQ(num(server_view, "configured_acceptance_length"), 2.5);
  EXPECT_TRUE(server_view.contains("prefix_cache_hit_rate"));
  // The chat template's overhead is subtracted: the server saw exactly the drawn prompt lengths
  // and generated exactly what the client counted.
  EXPECT_EQ(num(server_view, "prompt_tokens"), num(run.result, "total_input_tokens"));
  EXPECT_EQ(num(server_view, "generation_tokens"), num(run.result, "total_output_tokens"));
  EXPECT_EQ(num(ixb(run.result), "profile_start"), 200);
  EXPECT_EQ(num(ixb(run.result), "profile_stop"), 200);
}

// Starts bench serve with the common flags plus `extra`, sends SIGINT after `after_ms`, and
// returns how it ended, how long after the signal, and the result file it wrote.
struct Interrupted {
  int status = 0;
  double exit_after_signal_s = 0;
  std::optional<boost::json::value> result;
};
// Sends the signal after_ms after the launch, and not before the server has finished
// after_finished more requests (a loaded machine can take seconds to start the client); `times`
// signals in a row (GNU timeout sends SIGTERM to the child and again to its process group).
Interrupted interrupt_after(const ServerProcess& server, const std::string& name, std::vector<std::string> extra,
                            int after_ms, int signal_number = SIGINT, int after_finished = 0, int times = 1) {
  const auto url = *ix::http::Url::parse(server.base_url());
  const double finished_before = after_finished > 0 ? finished_requests(url) : 0;
  const auto dir = scratch_dir(name);
  std::vector<std::string> args = {ix::testing::ixbench_binary(),
                                   "bench",
                                   "serve",
                                   "--base-url",
                                   server.base_url(),
                                   "--model",
                                   "deepseek-r1",
                                   "--tokenizer",
                                   "deepseek_v3",
                                   "--save-result",
                                   "--result-dir",
                                   dir.string(),
                                   "--result-filename",
                                   "result.json",
                                   "--no-progress",
                                   "--client-lag-threshold-ms",
                                   "1000"};
  args.insert(args.end(), extra.begin(), extra.end());
  const pid_t pid = ix::testing::spawn_quiet(args);
  std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (after_finished > 0 && finished_requests(url) - finished_before < after_finished &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int sent = 0; sent < times; ++sent) kill(pid, signal_number);
  const auto signalled = std::chrono::steady_clock::now();
  Interrupted out;
  waitpid(pid, &out.status, 0);
  out.exit_after_signal_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  if (auto parsed = ix::json::read_file(dir / "result.json")) out.result = std::move(*parsed);
  std::filesystem::remove_all(dir);
  return out;
}

TEST(BenchServe, PlainPromptsReachTheServerWithExactlyTheDrawnLength) {
  // The server adds DeepSeek's BOS to a completion prompt (as vLLM does); the client's text has
  // one token less, so the server's prompt tokens equal the reported input lengths (as vLLM's
  // random dataset; before, every request was one token longer than reported).
  auto server = start_server({"--tp", "8"});
  ASSERT_TRUE(server);
  auto run = bench(*server, "plain_len",
                   {"--backend", "vllm", "--random-input-len", "200", "--random-output-len", "10", "--max-concurrency",
                    "5", "--num-prompts", "20", "--num-warmups", "0"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  const auto& server_view = ixb(run.result).at("server_metrics").as_object();
  EXPECT_EQ(num(server_view, "prompt_tokens"), num(run.result, "total_input_tokens"));
}

TEST(BenchServe, CtrlCAndSigtermWriteWhatWasMeasured) {
  // SIGTERM is what `timeout`, Slurm's time limit and container stops send first: it used to kill
  // the client and lose the whole run.
  auto server = start_server({"--fixed-ttft-ms", "5", "--fixed-itl-ms", "20"});
  ASSERT_TRUE(server);
  // Exit status 128 + the signal, as a shell reports it; a second signal (timeout(1) sends two) does
  // not kill the process before the result is written.
  for (const auto& [name, signal, times] : {std::tuple{"sigint", SIGINT, 1}, std::tuple{"sigterm", SIGTERM, 1},
                                            std::tuple{"sighup", SIGHUP, 1}, std::tuple{"sigterm_twice", SIGTERM, 2}}) {
    SCOPED_TRACE(name);
    auto run = interrupt_after(*server, name,
                               {"--random-input-len", "16", "--random-output-len", "30", "--max-concurrency", "4",
                                "--num-prompts", "400", "--num-warmups", "0"},
                               0, signal, 8, times);
    ASSERT_TRUE(WIFEXITED(run.status)) << "killed by the signal instead of stopping cleanly";
    EXPECT_EQ(WEXITSTATUS(run.status), 128 + signal);
    EXPECT_LT(run.exit_after_signal_s, 3.0);
    ASSERT_TRUE(run.result.has_value()) << "no result written after the signal";
    const auto& result = run.result->as_object();
    EXPECT_NE(ix::json::to_string(ixb(result).at("invalid_reasons")).find("interrupted by a signal"),
              std::string::npos);
    // Signalled once the server had finished 8 (two waves of four): a fixed 2 s after the launch
    // saw only the first wave on a loaded machine, whose client took ~1.5 s to start.
    EXPECT_GT(num(result, "completed"), 4);
    EXPECT_LT(num(result, "completed"), 400);
  }
}

TEST(BenchServe, CtrlCStopsAnOpenLoopRunAtOnceNotAtTheNextArrival) {
  // At 0.1 requests/s the next arrival is seconds away; the run used to wait for it (~18 s).
  auto server = start_server({"--no-delay"});
  ASSERT_TRUE(server);
  auto run = interrupt_after(*server, "sigint_open",
                             {"--random-input-len", "16", "--random-output-len", "4", "--num-prompts", "20",
                              "--request-rate", "0.1", "--seed", "3", "--num-warmups", "0"},
                             500, SIGINT, 1);
  ASSERT_TRUE(WIFEXITED(run.status));
  EXPECT_EQ(WEXITSTATUS(run.status), 128 + SIGINT);
  EXPECT_LT(run.exit_after_signal_s, 3.0);
  ASSERT_TRUE(run.result.has_value()) << "no result written after Ctrl-C";
  EXPECT_GE(num(run.result->as_object(), "completed"), 1);
}

TEST(BenchServe, OpenLoopConcurrencyCapIsOneLimitOverAllClientThreads) {
  // 30 requests arriving at once, at most 3 in flight: ten waves of 20 + 9 x 10 ms. With the cap
  // split per thread and arrivals dealt round-robin, a thread's queue waited while another
  // thread's slot was free (2 in flight on average, 2.9 s).
  auto server = start_server({"--fixed-ttft-ms", "20", "--fixed-itl-ms", "10"});
  ASSERT_TRUE(server);
  auto run =
      bench(*server, "open_cap",
            {"--random-input-len", "16", "--random-output-len", "10", "--random-range-ratio", "1", "--num-prompts",
             "30", "--max-concurrency", "3", "--num-warmups", "0", "--request-rate", "1000", "--threads", "2"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  ASSERT_EQ(run.requests.size(), 30u);
  std::vector<std::pair<double, int>> edges;
  for (const auto& r : run.requests) {
    edges.emplace_back(num(r, "send_ms"), +1);
    edges.emplace_back(num(r, "end_ms"), -1);
  }
  std::sort(edges.begin(), edges.end());
  int in_flight = 0, most = 0;
  double weighted = 0, last = edges.front().first;
  for (const auto& [t, d] : edges) {
    weighted += in_flight * (t - last);
    last = t;
    in_flight += d;
    most = std::max(most, in_flight);
  }
  EXPECT_EQ(most, 3);
  const double mean_in_flight = weighted / (edges.back().first - edges.front().first);
  EXPECT_GT(mean_in_flight, 2.7) << "the cap was not used fully";
}

TEST(BenchServe, OutOfRangeFlagValuesAreErrorsBeforeTheRun) {
  // Each was accepted before: a nan/0/negative timeout, negative retries or threads, a failed
  // fraction outside [0, 1] ("more than -100%"), a watched pid that is no process (0 watched the
  // process group, a dead pid cancelled every request), a nan goodput SLO.
  const std::vector<std::vector<std::string>> bad = {
      {"--request-timeout", "0"},
      {"--request-timeout", "nan"},
      {"--max-retries", "-1"},
      {"--threads", "-1"},
      {"--threads", "100000"},
      {"--max-failed-fraction", "2"},
      {"--max-failed-fraction", "-1"},
      {"--client-lag-threshold-ms", "-1"},
      {"--spec-acceptance-length", "-1"},
      {"--server-pid", "0"},
      {"--server-pid", "-5"},
      {"--server-pid", "999999999"},
      {"--goodput", "ttft:nan"},
      // Accepted before: an infinite burstiness (failed after the warmups), a nan percentile
      // ("pnan_ttft_ms"), lengths and counts that ended in std::bad_alloc or an abort; the
      // repeated --num-prompts also checks that the last value wins, as argparse's.
      {"--burstiness", "inf"},
      {"--metric-percentiles", "90,NaN"},
      {"--random-input-len", "3000000000"},
      {"--num-prompts", "100000000000"},
      {"--num-warmups", "100000000000"},
  };
  for (const auto& args : bad) {
    std::vector<std::string> argv = {"bench",         "serve",       "--model",      "deepseek-r1",
                                     "--tokenizer",   "deepseek_v3", "--base-url",   "http://127.0.0.1:1",
                                     "--num-prompts", "1",           "--no-progress"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = ix::testing::run_ixbench(argv, "", 60.0);
    EXPECT_EQ(r.exit_code, 1) << args[0] << " " << args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(args[0]), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("requests failed"), std::string::npos) << args[0] << " ran: " << r.err;
  }
}

TEST(BenchServe, FlagCombinationsThatCannotRunAreErrorsBeforeTheRun) {
  const std::vector<std::string> base = {"bench",       "serve",       "--model",      "deepseek-r1",
                                         "--tokenizer", "deepseek_v3", "--no-progress"};
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      // The nanosecond schedule overflowed: every request went out at t = 0.
      {{"--base-url", "http://127.0.0.1:1", "--num-prompts", "5", "--request-rate", "1e-12"}, "--request-rate 1e-12"},
      // The error named --base-url.
      {{"--port", "0"}, "--port must be in [1, 65535], got 0"},
      {{"--port", "70000"}, "--port must be in [1, 65535], got 70000"},
      // The last value of a repeated option wins (vLLM's argparse), instead of a usage error.
      {{"--base-url", "http://127.0.0.1:1", "--num-prompts", "5", "--num-prompts", "0"},
       "--num-prompts must be in [1, 10000000], got 0"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto r = ix::testing::run_ixbench(argv, "", 60.0);
    EXPECT_EQ(r.exit_code, 1) << c.args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("requests failed"), std::string::npos) << r.err;
  }
}

TEST(BenchServe, UnwritableResultDirectoryIsAnErrorBeforeTheRun) {
  const auto dir = scratch_dir("unwritable");
  std::ofstream(dir / "file") << "x";
  // Before: the whole run was measured, then lost ("cannot write ...: Not a directory").
  auto r = ix::testing::run_ixbench(
      {"bench", "serve", "--model", "deepseek-r1", "--tokenizer", "deepseek_v3", "--base-url", "http://127.0.0.1:1",
       "--num-prompts", "1", "--no-progress", "--save-result", "--result-dir", (dir / "file" / "sub").string()},
      "", 60.0);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--result-dir"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("requests failed"), std::string::npos) << r.err;
  // A failed run says why on the console, not only how often.
  auto refused = ix::testing::run_ixbench({"bench", "serve", "--model", "deepseek-r1", "--tokenizer", "deepseek_v3",
                                           "--base-url", "http://127.0.0.1:1", "--num-prompts", "2", "--no-progress"},
                                          "", 60.0);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("e.g. connect: cannot connect"), std::string::npos) << refused.err;
  // A result file name that is a directory: refused before the run (it failed at the rename).
  std::filesystem::create_directories(dir / "taken.json");
  auto taken =
      ix::testing::run_ixbench({"bench", "serve", "--model", "deepseek-r1", "--tokenizer", "deepseek_v3", "--base-url",
                                "http://127.0.0.1:1", "--num-prompts", "1", "--no-progress", "--save-result",
                                "--result-dir", dir.string(), "--result-filename", "taken.json"},
                               "", 60.0);
  EXPECT_EQ(taken.exit_code, 1);
  EXPECT_NE(taken.err.find("is a directory"), std::string::npos) << taken.err;
  EXPECT_EQ(taken.err.find("requests failed"), std::string::npos) << taken.err;
  std::filesystem::remove_all(dir);
}

TEST(BenchServe, InputsThatWouldFailDuringOrAfterTheRunAreRefusedBeforeIt) {
  const auto dir = scratch_dir("refused_early");
  const std::vector<std::string> base = {"bench",       "serve",       "--model",           "deepseek-r1",
                                         "--tokenizer", "deepseek_v3", "--no-progress",     "--num-prompts",
                                         "20",          "--base-url",  "http://127.0.0.1:1"};
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      // A drawn length below the chat template's own tokens ended the run at that request and
      // discarded everything measured before it, without naming a flag.
      {{"--use-chat-template", "--random-input-len", "20", "--random-range-ratio", "0", "--max-concurrency", "1"},
       "--random-input-len 20 with --random-range-ratio 0 draws 1-token prompts"},
      {{"--backend", "openai-chat", "--random-input-len", "3"}, "(--backend openai-chat): raise them"},
      // Every request failed with HTTP 400 (no '/' between the port and the path).
      {{"--endpoint", "v1/completions"}, "--endpoint 'v1/completions' must be a path starting with '/'"},
      // Found at the first send, after the tokenizer: here the bad tokenizer must not be reached.
      {{"--extra-body", "{", "--tokenizer", "/nonexistent"}, "--extra-body"},
      {{"--extra-body", "[1]"}, "--extra-body must be a JSON object"},
      // The error named --base-url.
      {{"--base-url", "", "--host", ""}, "--host must not be empty"},
      // The nanosecond timeout overflowed: every connect timed out at once.
      {{"--request-timeout", "1e12"}, "--request-timeout must be a number of seconds in (0, 1000000000]"},
      // "sub/" was created as a directory before the run, and the write failed after it.
      {{"--save-result", "--result-dir", dir.string(), "--result-filename", "sub/"},
       "--result-filename: 'sub/' names a directory, not a file"},
      {{"--save-result", "--result-dir", dir.string(), "--result-filename", "."}, "names a directory"},
      // A key of spaces only.
      {{"--metadata", " =x"}, "--metadata ' =x': expected KEY=VALUE"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto r = ix::testing::run_ixbench(argv, "", 60.0);
    EXPECT_EQ(r.exit_code, 1) << c.message << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("requests failed"), std::string::npos) << c.message << " ran: " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "sub"));
  // CLI11 wrapped -1 to 2^64-1 and saturated 2^64 (numpy refuses both): a usage error now.
  for (const std::string seed : {"-1", "18446744073709551616", "1.5"}) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), {"--seed", seed});
    auto r = ix::testing::run_ixbench(argv, "", 60.0);
    EXPECT_EQ(r.exit_code, 2) << seed << ": " << r.err;
    EXPECT_NE(r.err.find("--seed: '" + seed +
                         (seed == "18446744073709551616" ? "' is out of range for this option"
                                                         : "' is not a whole number >= 0")),
              std::string::npos)
        << r.err;
  }
  std::filesystem::remove_all(dir);
}

TEST(BenchServe, EmptyOrRepeatedMetricPercentilesAreRefusedBeforeTheRun) {
  // An empty list or item was dropped silently ("" reported no percentile at all; vLLM fails on
  // float('')), and a repeated value printed its summary lines twice and wrote its key twice.
  const std::vector<std::string> base = {"bench",         "serve",       "--model",      "deepseek-r1",
                                         "--tokenizer",   "deepseek_v3", "--base-url",   "http://127.0.0.1:1",
                                         "--num-prompts", "1",           "--no-progress"};
  const std::string example = "e.g. --metric-percentiles 90,99,99.9";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "--metric-percentiles '': no percentile given"},
      {" ", "--metric-percentiles ' ': no percentile given"},
      {"90,,99", "--metric-percentiles '90,,99': item 2 of 3 is empty"},
      {"90,99,", "--metric-percentiles '90,99,': item 3 of 3 is empty"},
      {"99,99", "--metric-percentiles '99,99': percentile 99 is given twice"},
      {"90,99,99.0", "--metric-percentiles '90,99,99.0': percentile 99 is given twice ('99' and '99.0')"},
      {"90,abc", "--metric-percentiles '90,abc': 'abc' is not a number in [0, 100]"},
  };
  for (const auto& [value, message] : cases) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), {"--metric-percentiles", value});
    auto r = ix::testing::run_ixbench(argv, "", 60.0);
    EXPECT_EQ(r.exit_code, 1) << "'" << value << "': " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(example), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("requests failed"), std::string::npos) << "'" << value << "' ran: " << r.err;
  }
}

TEST(BenchServe, LengthAndCountFlagsAreReadAsTypedOrRefusedQuotingTheText) {
  const std::vector<std::string> base = {"bench",        "serve",       "--model",    "deepseek-r1",
                                         "--tokenizer",  "deepseek_v3", "--base-url", "http://127.0.0.1:1",
                                         "--no-progress"};
  // CLI11 saturated these at 2^63-1, and the range error then reported 9223372036854775807 (or,
  // for --max-concurrency, asked for that many open files) instead of what was typed.
  for (const std::string flag :
       {"--random-input-len", "--random-output-len", "--num-prompts", "--max-concurrency", "--num-warmups"}) {
    for (const std::string value : {"99999999999999999999", "-99999999999999999999", "12abc", ""}) {
      std::vector<std::string> argv = base;
      argv.insert(argv.end(), {flag, value});
      auto r = ix::testing::run_ixbench(argv, "", 60.0);
      EXPECT_EQ(r.exit_code, 2) << flag << " " << value << ": " << r.err;
      const bool digits = value.find_first_not_of("-0123456789") == std::string::npos && !value.empty();
      EXPECT_NE(
          r.err.find(flag + ": '" + value + (digits ? "' is out of range for this option" : "' is not a whole number")),
          std::string::npos)
          << r.err;
      EXPECT_EQ(r.err.find("got 9223372036854775807"), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("requests failed"), std::string::npos) << flag << " ran: " << r.err;
    }
  }
  // Decimal, as Python's int(): "0100000000" was octal (16777216) to CLI11.
  for (const std::string value : {"0100000000", "+100000000"}) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), {"--num-prompts", value});
    auto r = ix::testing::run_ixbench(argv, "", 60.0);
    EXPECT_EQ(r.exit_code, 1) << value << ": " << r.err;
    EXPECT_NE(r.err.find("--num-prompts must be in [1, 10000000], got 100000000\n"), std::string::npos) << r.err;
  }
}

TEST(BenchServe, AResultThatCannotBeWrittenWhereAskedIsSavedInTheTemporaryDirectory) {
  // The result directory checked before the run is replaced by a file during it: the run used
  // to end with "cannot create ...: Not a directory" and only the console summary.
  auto server = start_server({"--no-delay"});
  ASSERT_TRUE(server);
  const auto dir = scratch_dir("gone");
  std::thread saboteur([&] {
    const auto url = *ix::http::Url::parse(server->base_url());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline && finished_requests(url) < 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::filesystem::remove_all(dir / "out");
    std::ofstream(dir / "out") << "not a directory";
  });
  auto r = ix::testing::run_ixbench({"bench",
                                     "serve",
                                     "--base-url",
                                     server->base_url(),
                                     "--model",
                                     "deepseek-r1",
                                     "--tokenizer",
                                     "deepseek_v3",
                                     "--no-progress",
                                     "--random-input-len",
                                     "16",
                                     "--random-output-len",
                                     "4",
                                     "--num-prompts",
                                     "4",
                                     "--request-rate",
                                     "2",
                                     "--seed",
                                     "1",
                                     "--save-result",
                                     "--save-detailed",
                                     "--result-dir",
                                     (dir / "out").string(),
                                     "--result-filename",
                                     "result.json",
                                     "--client-lag-threshold-ms",
                                     "1000"},
                                    "", 60.0);
  saboteur.join();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string marker = "saved to ";
  const size_t at = r.err.find(marker);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::filesystem::path saved = r.err.substr(at + marker.size(), r.err.find(" instead", at) - at - marker.size());
  EXPECT_EQ(saved.parent_path(), std::filesystem::temp_directory_path());
  auto result = ix::json::read_file(saved);
  ASSERT_TRUE(result && result->is_object()) << saved;
  EXPECT_EQ(num(result->as_object(), "completed"), 4);
  std::filesystem::path detailed = saved;
  detailed.replace_extension(".requests.jsonl");
  EXPECT_TRUE(std::filesystem::exists(detailed)) << detailed;
  std::filesystem::remove(saved);
  std::filesystem::remove(detailed);
  std::filesystem::remove_all(dir);
}

TEST(BenchServe, MetadataNeverReplacesAMeasurementAndWarmupsAreCounted) {
  auto server = start_server({"--no-delay"});
  ASSERT_TRUE(server);
  // --metadata completed=999 used to overwrite "completed" with a string and end in "internal
  // error: not an int64"; num_warmups_excluded was always 0.
  auto run = bench(
      *server, "metadata",
      {"--random-input-len", "16", "--random-output-len", "4", "--max-concurrency", "2", "--num-prompts", "4",
       "--metadata", "completed=999", "--metadata", "run=ci", "--metadata", " tp = 8 ", "--metric-percentiles", "50"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  ASSERT_TRUE(run.result.at("completed").is_int64());
  EXPECT_EQ(num(run.result, "completed"), 4);
  EXPECT_EQ(run.result.at("run").as_string(), "ci");
  // Spaces around the key and the value are dropped, as vLLM's strip().
  ASSERT_TRUE(run.result.contains("tp")) << ix::json::to_string(run.result);
  EXPECT_EQ(run.result.at("tp").as_string(), "8");
  EXPECT_NE(run.process.err.find("--metadata completed"), std::string::npos) << run.process.err;
  EXPECT_EQ(num(ixb(run.result), "num_warmups_excluded"), 4);
  // No p99 asked for: the summary does not print a made-up 0.
  EXPECT_EQ(run.process.out.find("P99"), std::string::npos) << run.process.out;
}

// A completions server that answers 503 ("loading") to its first `loading_posts` POSTs, then one
// streamed token per request, and records every POST's head and body (vLLM's sampling flags,
// extra body, headers and the ready-check probe are checked on what the server received).
class LoadingServer {
 public:
  explicit LoadingServer(int loading_posts)
      : server_(ix::testing::ScriptedServer::per_request([this, loading_posts](int fd, const std::string& request) {
          if (request.rfind("POST ", 0) != 0) {
            ix::testing::write_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
            return;
          }
          int index = 0;
          {
            std::lock_guard lock(mutex_);
            index = posts_++;
            const size_t body = request.find("\r\n\r\n");
            if (index >= loading_posts && body != std::string::npos) {
              bodies_.push_back(request.substr(body + 4));
              heads_.push_back(request.substr(0, body + 2));
            }
          }
          if (index < loading_posts) {
            ix::testing::write_all(fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 7\r\n\r\nloading");
            return;
          }
          std::string reply(ix::testing::kSseHead);
          reply += ix::testing::http_chunk(
              "data: {\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":\"length\"}],"
              "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\n");
          reply += ix::testing::http_chunk("data: [DONE]\n\n");
          reply += "0\r\n\r\n";
          ix::testing::write_all(fd, reply);
        })) {}

  std::string base_url() const { return server_.base_url(); }
  std::vector<std::string> heads() {
    std::lock_guard lock(mutex_);
    return heads_;
  }
  int posts() {
    std::lock_guard lock(mutex_);
    return posts_;
  }
  std::vector<boost::json::object> bodies() {
    std::lock_guard lock(mutex_);
    std::vector<boost::json::object> out;
    for (const auto& text : bodies_) {
      auto parsed = ix::json::parse(text);
      if (parsed && parsed->is_object()) out.push_back(parsed->as_object());
    }
    return out;
  }

 private:
  std::mutex mutex_;
  int posts_ = 0;
  std::vector<std::string> bodies_;
  std::vector<std::string> heads_;
  ix::testing::ScriptedServer server_;  // last: its threads use the members above
};

std::vector<std::string> vllm_flags_run(const std::string& base_url, const std::filesystem::path& dir) {
  return {"bench",
          "serve",
          "--base-url",
          base_url,
          "--model",
          "deepseek-r1",
          "--tokenizer",
          "deepseek_v3",
          "--random-input-len",
          "16",
          "--random-output-len",
          "1",
          "--num-prompts",
          "3",
          "--num-warmups",
          "0",
          "--no-progress",
          "--client-lag-threshold-ms",
          "1000",
          "--no-server-metrics",
          "--temperature",
          "0.7",
          "--top-k",
          "5",
          "--extra-body",
          R"({"top_k": 7, "seed": 1})",
          "--label",
          "nightly",
          "--append-result",
          "--result-dir",
          dir.string(),
          "--result-filename",
          "runs.jsonl",
          "--ready-check-timeout-sec",
          "30"};
}

// The first result line a vllm_flags_run wrote (--append-result), or an empty object.
boost::json::object appended_result(const std::filesystem::path& dir) {
  std::ifstream in(dir / "runs.jsonl");
  std::string line;
  std::getline(in, line);
  auto parsed = ix::json::parse(line);
  return parsed && parsed->is_object() ? parsed->as_object() : boost::json::object{};
}

// A vllm_flags_run with `extra` flags appended.
ix::testing::ProcessResult run_vllm_flags(LoadingServer& server, const std::filesystem::path& dir,
                                          const std::vector<std::string>& extra) {
  auto args = vllm_flags_run(server.base_url(), dir);
  args.insert(args.end(), extra.begin(), extra.end());
  return ix::testing::run_ixbench(args);
}

// A vllm_flags_run with `extra` flags must exit 1 naming `says`, before anything is sent.
void expect_refused(LoadingServer& server, const std::filesystem::path& dir, const std::vector<std::string>& extra,
                    const std::string& says) {
  const int posts = server.posts();
  auto refused = run_vllm_flags(server, dir, extra);
  EXPECT_EQ(refused.exit_code, 1) << says;
  EXPECT_NE(refused.err.find(says), std::string::npos) << refused.err;
  EXPECT_EQ(server.posts(), posts) << says;
}

TEST(BenchServe, VllmSamplingLabelAppendAndReadyCheckFlags) {
  LoadingServer server(/*loading_posts=*/2);
  const auto dir = scratch_dir("vllm_flags");
  auto first = ix::testing::run_ixbench(vllm_flags_run(server.base_url(), dir));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("answered after"), std::string::npos) << first.err;  // two 503s, then ready
  auto second = ix::testing::run_ixbench(vllm_flags_run(server.base_url(), dir));
  ASSERT_EQ(second.exit_code, 0) << second.err;

  // Two runs appended as two JSON lines (vLLM's --append-result), each labelled.
  std::ifstream in(dir / "runs.jsonl");
  std::vector<boost::json::object> results;
  for (std::string line; std::getline(in, line);) {
    auto parsed = ix::json::parse(line);
    ASSERT_TRUE(parsed && parsed->is_object()) << line;
    results.push_back(parsed->as_object());
  }
  ASSERT_EQ(results.size(), 2u);
  for (const auto& result : results) {
    EXPECT_EQ(ixb(result).at("label").as_string(), "nightly");
    EXPECT_EQ(num(result, "completed"), 3);
    // What was sent: the flag, or the --extra-body entry that overrides it.
    EXPECT_EQ(num(ixb(result).at("sampling_params").as_object(), "temperature"), 0.7);
    EXPECT_EQ(num(ixb(result).at("sampling_params").as_object(), "top_k"), 7);
  }
  EXPECT_GT(num(ixb(results[0]), "ready_check_wait_s"), 1.5);  // retried once a second
  EXPECT_LT(num(ixb(results[1]), "ready_check_wait_s"), 1.0);  // ready at once

  // The server saw the probes (1-token "Hello") and the measured requests, all with the
  // sampling fields: 1 + 3 requests per run after the two 503s.
  const auto bodies = server.bodies();
  ASSERT_EQ(bodies.size(), 8u);
  int probes = 0;
  for (const auto& body : bodies) {
    EXPECT_EQ(num(body, "temperature"), 0.7);
    EXPECT_EQ(num(body, "top_k"), 7);
    EXPECT_EQ(num(body, "seed"), 1);
    EXPECT_FALSE(body.contains("top_p"));  // not given: left to the server
    if (body.at("prompt").as_string() == "Hello") {
      ++probes;
      EXPECT_EQ(num(body, "max_tokens"), 1);
    }
  }
  EXPECT_EQ(probes, 2);
  std::filesystem::remove_all(dir);
}

TEST(BenchServe, AServerThatNeverAnswersFailsTheReadyCheckWithoutAResult) {
  LoadingServer server(/*loading_posts=*/1'000'000);
  const auto dir = scratch_dir("never_ready");
  auto args = vllm_flags_run(server.base_url(), dir);
  args.back() = "1.5";  // --ready-check-timeout-sec
  auto r = ix::testing::run_ixbench(args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("did not answer 200 within 1.5 s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HTTP 503: loading"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "runs.jsonl"));
  // Out-of-range sampling values are refused before anything is sent.
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--top-p", "0"}, {"--temperature", "-1"}, {"--min-p", "1.5"}, {"--presence-penalty", "3"}}) {
    auto bad = vllm_flags_run(server.base_url(), dir);
    bad.insert(bad.end(), {flag, value});
    auto refused = ix::testing::run_ixbench(bad);
    EXPECT_EQ(refused.exit_code, 1) << flag;
    EXPECT_NE(refused.err.find(flag + " must be"), std::string::npos) << refused.err;
  }
  std::filesystem::remove_all(dir);
}

TEST(BenchServe, HeadersGoWithEveryRequestAndOnlyTheirNamesIntoTheResult) {
  LoadingServer server(/*loading_posts=*/0);
  const auto dir = scratch_dir("headers");
  // vLLM's form: several values after one flag, or the flag repeated; an Authorization header
  // replaces the client's own (from OPENAI_API_KEY) as vLLM's extra headers do.
  auto r = run_vllm_flags(server, dir,
                          {"--header", "x-tenant = blue", "X-Trace=a=b", "--header", "Authorization=Basic c2VjcmV0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto heads = server.heads();
  ASSERT_EQ(heads.size(), 4u);  // the ready-check probe and 3 measured requests
  for (const auto& head : heads) {
    EXPECT_NE(head.find("\r\nx-tenant: blue\r\n"), std::string::npos) << head;
    EXPECT_NE(head.find("\r\nX-Trace: a=b\r\n"), std::string::npos) << head;
    EXPECT_NE(head.find("\r\nAuthorization: Basic c2VjcmV0\r\n"), std::string::npos) << head;
    EXPECT_EQ(head.find("Bearer"), std::string::npos) << head;
  }
  std::ifstream in(dir / "runs.jsonl");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(ix::json::to_string(ixb(appended_result(dir)).at("extra_header_names")),
            R"(["x-tenant", "X-Trace", "Authorization"])");
  EXPECT_EQ(text.find("c2VjcmV0"), std::string::npos) << "a header value reached the result";
  EXPECT_EQ(r.err.find("c2VjcmV0"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("c2VjcmV0"), std::string::npos) << r.out;

  // Bad headers are refused before anything is sent.
  for (const auto& [value, says] : std::vector<std::pair<std::string, std::string>>{
           {"x-tenant", "--header 'x-tenant': expected KEY=VALUE"},
           {"x tenant=1", "is not an HTTP header name"},
           {"=1", "is not an HTTP header name"},
           {"x-evil=a\r\nInjected: 1", "--header x-evil: the value holds a control character"},
           {"Host=example.com", "--header Host: set by the client itself"},
           {"content-length=5", "--header content-length: set by the client itself"}})
    expect_refused(server, dir, {"--header", value}, says);
  expect_refused(server, dir, {"--header", "x-a=1", "X-A=2"}, "--header X-A is given twice");
  std::filesystem::remove_all(dir);
}

TEST(BenchServe, RequestIdPrefixNamesEachMeasuredRequest) {
  LoadingServer server(/*loading_posts=*/0);
  const auto dir = scratch_dir("request_ids");
  auto r = run_vllm_flags(server, dir, {"--request-id-prefix", "run7-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> ids;
  int without = 0;
  const std::regex id_line("\r\nx-request-id: ([^\r]*)\r\n");
  for (const auto& head : server.heads()) {
    std::smatch m;
    if (std::regex_search(head, m, id_line)) {
      ids.insert(m[1]);
    } else {
      ++without;
    }
  }
  EXPECT_EQ(ids, (std::set<std::string>{"run7-0", "run7-1", "run7-2"}));
  EXPECT_EQ(without, 1);  // the ready-check probe is not a measured request
  EXPECT_EQ(ixb(appended_result(dir)).at("request_id_prefix").as_string(), "run7-");
  expect_refused(server, dir, {"--request-id-prefix", "a b"}, "--request-id-prefix 'a b' must be non-empty printable");
  expect_refused(server, dir, {"--request-id-prefix", ""}, "--request-id-prefix '' must be non-empty printable");
  expect_refused(server, dir, {"--request-id-prefix", "x-", "--header", "X-Request-Id=1"},
                 "remove --header x-request-id");
  std::filesystem::remove_all(dir);
}

TEST(BenchServe, LoraModulesSpreadTheMeasuredRequestsOverTheAdapters) {
  LoadingServer server(/*loading_posts=*/0);
  const auto dir = scratch_dir("lora");
  auto args = vllm_flags_run(server.base_url(), dir);
  const auto prompts = std::find(args.begin(), args.end(), "--num-prompts");
  ASSERT_NE(prompts, args.end());
  *(prompts + 1) = "40";
  args.insert(args.end(), {"--lora-modules", "sql-lora", "chat-lora"});
  auto count_models = [&server] {
    std::map<std::string, int> models;
    for (const auto& body : server.bodies()) models[std::string(body.at("model").as_string())] += 1;
    return models;
  };
  auto r = ix::testing::run_ixbench(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto first = count_models();
  EXPECT_EQ(first.size(), 3u);
  EXPECT_EQ(first.at("deepseek-r1"), 1);  // the ready-check probe asks for the base model
  EXPECT_EQ(first.at("sql-lora") + first.at("chat-lora"), 40);
  EXPECT_GE(first.at("sql-lora"), 10);
  EXPECT_GE(first.at("chat-lora"), 10);
  EXPECT_EQ(ix::json::to_string(ixb(appended_result(dir)).at("lora_modules")), R"(["sql-lora", "chat-lora"])");
  // Seeded: the same run asks for each adapter as often again.
  auto again = ix::testing::run_ixbench(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto both = count_models();
  for (const auto& [model, n] : first) EXPECT_EQ(both.at(model), 2 * n) << model;
  expect_refused(server, dir, {"--lora-modules", ""}, "--lora-modules: '' is not an adapter name");
  std::filesystem::remove_all(dir);
}

TEST(BenchServe, LogprobsAreAskedForInEveryCompletionsBody) {
  LoadingServer server(/*loading_posts=*/0);
  const auto dir = scratch_dir("logprobs");
  auto r = run_vllm_flags(server, dir, {"--logprobs", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto bodies = server.bodies();
  ASSERT_EQ(bodies.size(), 4u);  // probe + 3 measured
  for (const auto& body : bodies) EXPECT_EQ(num(body, "logprobs"), 2) << ix::json::to_string(body);
  EXPECT_EQ(num(ixb(appended_result(dir)), "logprobs"), 2);
  expect_refused(server, dir, {"--logprobs", "-1"}, "--logprobs must be >= 0, got -1");
  expect_refused(server, dir, {"--logprobs", "1", "--backend", "openai-chat"},
                 "--logprobs applies to the completions backends");
  std::filesystem::remove_all(dir);
}

// --dsv4: DeepSeek-V4's encoding in thinking mode, as InferenceX's encoding_dsv4.encode_messages
// renders one user message: BOS, the user marker, the text, the assistant marker and <think>.
TEST(BenchServe, Dsv4PromptsAreDeepSeekV4sThinkingEncoding) {
  LoadingServer server(/*loading_posts=*/0);
  const auto dir = scratch_dir("dsv4");
  auto r = run_vllm_flags(server, dir, {"--dsv4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto bodies = server.bodies();
  ASSERT_EQ(bodies.size(), 4u);  // probe + 3 measured
  for (size_t i = 1; i < bodies.size(); ++i) {
    const std::string prompt(bodies[i].at("prompt").as_string());
    EXPECT_TRUE(prompt.starts_with("<｜begin▁of▁sentence｜><｜User｜>")) << prompt;
    EXPECT_TRUE(prompt.ends_with("<｜Assistant｜><think>")) << prompt;
  }
  EXPECT_EQ(ixb(appended_result(dir)).at("chat_encoding").as_string(), "deepseek_v4");
  std::filesystem::remove_all(dir);
}

TEST(BenchServe, UsageErrors) {
  auto r = ix::testing::run_ixbench({"bench", "serve", "--model", "deepseek-r1", "--backend", "tgi"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown backend 'tgi'"), std::string::npos) << r.err;
  auto missing = ix::testing::run_ixbench({"bench", "serve"});
  EXPECT_EQ(missing.exit_code, 2);
  auto bad_goodput = ix::testing::run_ixbench(
      {"bench", "serve", "--model", "deepseek-r1", "--tokenizer", "deepseek_v3", "--goodput", "latency:5"});
  EXPECT_EQ(bad_goodput.exit_code, 1);
  EXPECT_NE(bad_goodput.err.find("--goodput"), std::string::npos) << bad_goodput.err;
}

}  // namespace
}  // namespace ix
