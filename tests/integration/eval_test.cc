// `ixbench eval gsm8k` and `ixbench eval check` against the real `ixbench sim serve` over
// loopback: an unreachable port, a server that dies mid-eval, retries after 429/503, refused
// inputs, threshold checks with InferenceX's rules. Small problems are read from
// tests/data/gsm8k; the real dataset from ../shared/data/gsm8k (skipped when absent).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/file_io.h"
#include "common/json_io.h"
#include "http/client.h"
#include "support/server_process.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace bj = boost::json;
using ix::testing::run_ixbench;
using ix::testing::scratch_dir;
using ix::testing::ServerProcess;
using ix::testing::source_path;

bj::object read_json(const std::filesystem::path& path) {
  auto value = json::read_file(path);
  EXPECT_TRUE(value && value->is_object()) << path;
  return value && value->is_object() ? value->as_object() : bj::object{};
}

std::vector<bj::object> read_jsonl(const std::filesystem::path& path) {
  std::vector<bj::object> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto value = json::parse(line);
    if (value && value->is_object()) out.push_back(value->as_object());
  }
  return out;
}

std::vector<std::string> eval_args(const std::string& url, const std::filesystem::path& out,
                                   std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"eval",          "gsm8k",
                                "--base-url",    url,
                                "--model",       "deepseek-r1",
                                "--dataset-dir", source_path("tests/data/gsm8k"),
                                "--output",      (out / "results.json").string(),
                                "--no-progress"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<int64_t> ints(const bj::value& value) {
  std::vector<int64_t> out;
  for (const auto& item : value.as_array()) out.push_back(item.as_int64());
  return out;
}

// The server's /metrics text.
std::string http_get_metrics(const std::string& base_url) {
  auto url = http::Url::parse(base_url);
  if (!url) return {};
  auto reply = http::fetch(*url, "GET", "/metrics");
  return reply ? reply->body : std::string();
}

uint16_t closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);  // nothing listens there now
  return ntohs(addr.sin_port);
}

TEST(EvalGsm8k, AnUnreachablePortFailsInSecondsAndTheManifestSaysSo) {
  const auto dir = scratch_dir("eval_unreachable");
  const auto started = std::chrono::steady_clock::now();
  auto run = run_ixbench(eval_args("http://127.0.0.1:" + std::to_string(closed_port()), dir, {"-c", "8,64"}), "", 60);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_LT(took, 15.0);
  EXPECT_NE(run.err.find("cannot reach the server"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("port forwarded"), std::string::npos) << run.err;
  const auto meta = read_json(dir / "meta_env.json");
  EXPECT_EQ(ints(meta.at("failed_eval_concs")), (std::vector<int64_t>{8, 64}));
  EXPECT_TRUE(ints(meta.at("completed_eval_concs")).empty());
}

TEST(EvalGsm8k, AServerThatDiesMidEvalLeavesAPartialResultMarkedIncomplete) {
  // 40 tokens at 25 ms each: a second per request, two at a time, 12 problems.
  auto server =
      ServerProcess::start({"--model", "deepseek-r1", "--tp", "8", "--fixed-ttft-ms", "5", "--fixed-itl-ms", "25"});
  ASSERT_TRUE(server) << server.error().to_string();
  const auto dir = scratch_dir("eval_server_dies");
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    (*server)->stop(2.0, SIGKILL);
  });
  auto run = run_ixbench(eval_args((*server)->base_url(), dir, {"-c", "2", "--max-tokens", "40"}), "", 120);
  killer.join();
  EXPECT_EQ(run.exit_code, 1) << run.err;
  const auto result = read_json(dir / "results_conc2.json");
  const auto& block = result.at("ixbench").as_object();
  EXPECT_FALSE(block.at("complete").as_bool());
  EXPECT_NE(std::string(block.at("stop_reason").as_string()).find("cannot be reached"), std::string::npos)
      << block.at("stop_reason");
  const int64_t answered = block.at("answered").as_int64();
  EXPECT_GE(answered, 2);
  EXPECT_LT(answered, 12);
  EXPECT_GT(block.at("retries").as_int64(), 0);  // the requests cut off were resent before giving up
  const auto samples = read_jsonl(dir / "samples_gsm8k_conc2.jsonl");
  ASSERT_EQ(samples.size(), 12U);
  int64_t kept = 0;
  for (const auto& s : samples) kept += s.at("answered").as_bool() ? 1 : 0;
  EXPECT_EQ(kept, answered);  // every answer received before the server died is in the file
  const auto meta = read_json(dir / "meta_env.json");
  EXPECT_EQ(ints(meta.at("failed_eval_concs")), (std::vector<int64_t>{2}));
  auto check = run_ixbench({"eval", "check", "--results", dir.string(), "--min-score", "0"});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(check.err.find("incomplete"), std::string::npos) << check.err;
  EXPECT_NE(check.err.find("batched eval failed for concurrency: 2"), std::string::npos) << check.err;
}

TEST(EvalGsm8k, RetriesAfter429And503AreCountedAndEveryAnswerIsKept) {
  auto server = ServerProcess::start({"--model", "deepseek-r1", "--tp", "8", "--no-delay", "--fault-error-rate", "0.4",
                                      "--fault-error-codes", "429,503", "--fault-seed", "3"});
  ASSERT_TRUE(server) << server.error().to_string();
  const auto dir = scratch_dir("eval_retries");
  auto run =
      run_ixbench(eval_args((*server)->base_url(), dir, {"-c", "4", "--max-tokens", "16", "--max-retries", "10"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto block = read_json(dir / "results_conc4.json").at("ixbench").as_object();
  EXPECT_TRUE(block.at("complete").as_bool());
  EXPECT_EQ(block.at("answered").as_int64(), 12);
  EXPECT_GT(block.at("retries").as_int64(), 0);
  EXPECT_NE(run.out.find("retries"), std::string::npos) << run.out;
  int64_t per_sample = 0;
  for (const auto& s : read_jsonl(dir / "samples_gsm8k_conc4.jsonl")) per_sample += s.at("retries").as_int64();
  EXPECT_EQ(per_sample, block.at("retries").as_int64());
}

TEST(EvalGsm8k, TimeoutsAreCountedResentAndLeaveTheResultIncomplete) {
  // Every stream stalls for 3 s mid-way; an attempt may take 0.4 s.
  auto server = ServerProcess::start(
      {"--model", "deepseek-r1", "--tp", "8", "--no-delay", "--fault-stall-rate", "1", "--fault-stall-ms", "3000"});
  ASSERT_TRUE(server) << server.error().to_string();
  const auto dir = scratch_dir("eval_timeouts");
  auto run = run_ixbench(
      eval_args((*server)->base_url(), dir,
                {"-c", "2", "--limit", "2", "--max-tokens", "16", "--request-timeout", "0.4", "--max-retries", "1"}),
      "", 60);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  const auto block = read_json(dir / "results_conc2.json").at("ixbench").as_object();
  EXPECT_FALSE(block.at("complete").as_bool());
  EXPECT_EQ(block.at("timeouts").as_int64(), 4);  // two problems, two attempts each
  EXPECT_EQ(block.at("retries").as_int64(), 2);
  EXPECT_EQ(block.at("failed").as_int64(), 2);
  for (const auto& s : read_jsonl(dir / "samples_gsm8k_conc2.jsonl")) {
    EXPECT_FALSE(s.at("answered").as_bool());
    EXPECT_EQ(s.at("timeouts").as_int64(), 2);
    EXPECT_NE(std::string(s.at("error").as_string()).find("tim"), std::string::npos) << s.at("error");
  }
}

TEST(EvalGsm8k, RefusedInputsNameWhatAndWhere) {
  const auto dir = scratch_dir("eval_refused");
  const auto data = dir / "data";
  std::filesystem::create_directories(data);
  std::filesystem::copy_file(source_path("tests/data/gsm8k/train.jsonl"), data / "train.jsonl");
  ASSERT_TRUE(
      files::write_file(data / "test.jsonl", "{\"question\": \"Q\", \"answer\": \"#### 1\"}\n{\"question\": 5}\n"));
  const std::string url = "http://127.0.0.1:" + std::to_string(closed_port());
  struct Case {
    std::vector<std::string> extra;
    std::string says;
  };
  for (const Case& c : {
           Case{{"--dataset-dir", data.string()}, (data / "test.jsonl").string() + ":2"},
           Case{{"--dataset-dir", (dir / "none").string()}, "test.jsonl"},
           Case{{"--model-family", "mistral"}, "--model-family 'mistral'"},
           Case{{"--concurrency", "0"}, "--concurrency 0"},
           Case{{"--concurrency", "8,8"}, "given twice"},
           Case{{"--endpoint", "responses"}, "--endpoint 'responses'"},
           Case{{"--num-fewshot", "9000"}, "--num-fewshot 9000"},
           Case{{"--task", source_path("tests/data/eval/thresholds.yaml")}, "not supported"},
           Case{{"--base-url", "http://127.0.0.1:1/v1/completions"}, "--endpoint is chat"},
       }) {
    auto run = run_ixbench(eval_args(url, dir / "out", c.extra));
    EXPECT_EQ(run.exit_code, 1) << c.says << "\n" << run.err;
    EXPECT_NE(run.err.find(c.says), std::string::npos) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;  // one clean error line
  }
}

double score(const bj::object& result, const std::string& filter) {
  return result.at("results").at("gsm8k").at("exact_match," + filter).as_double();
}

TEST(EvalGsm8k, ASimulatedModelRight95PercentOfTheTimeScoresWithinItsStandardError) {
  const std::string data = ix::testing::shared_path("data/gsm8k");
  if (data.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/gsm8k");
  auto server = ServerProcess::start(
      {"--model", "deepseek-r1", "--tp", "8", "--no-delay", "--gsm8k-answers", data, "--gsm8k-accuracy", "0.95"});
  ASSERT_TRUE(server) << server.error().to_string();
  const auto dir = scratch_dir("eval_p95");
  auto args = eval_args((*server)->base_url(), dir, {"-c", "16,64"});
  args[std::find(args.begin(), args.end(), "--dataset-dir") - args.begin() + 1] = data;
  auto run = run_ixbench(args, "", 300);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto c16 = read_json(dir / "results_conc16.json");
  const auto c64 = read_json(dir / "results_conc64.json");
  for (const std::string filter : {"strict-match", "flexible-extract"}) {
    const double s = score(c64, filter);
    const double se = c64.at("results").at("gsm8k").at("exact_match_stderr," + filter).as_double();
    EXPECT_NEAR(se, std::sqrt(s * (1 - s) / 1318.0), 1e-12);  // sample std / sqrt(n) of 0/1 scores
    EXPECT_LE(std::abs(s - 0.95), se) << filter << " " << s;
    EXPECT_EQ(score(c16, filter), s);  // the verdicts are per problem, not per arrival order
  }
  EXPECT_EQ(c64.at("n-samples").at("gsm8k").at("effective").as_int64(), 1319);
  // The score is exactly the share of reference answers the server gave (over both runs).
  const std::string metrics = http_get_metrics((*server)->base_url());
  const std::string key = "ixbench:gsm8k_answered_total{correct=\"true\",model_name=\"deepseek-r1\"} ";
  const size_t at = metrics.find(key);
  ASSERT_NE(at, std::string::npos) << metrics;
  const double right = std::stod(metrics.substr(at + key.size()));
  EXPECT_DOUBLE_EQ(right, 2 * std::round(score(c64, "strict-match") * 1319));
}

TEST(EvalGsm8k, RunawayRepliesAreCutAtEachFamilysMarkers) {
  for (const std::string family : {"deepseek", "deepseek_v4", "qwen", "llama", "gptoss", "kimi", "glm", "minimax"}) {
    auto server = ServerProcess::start({"--model", "deepseek-r1", "--tp", "8", "--no-delay", "--gsm8k-answers",
                                        source_path("tests/data/gsm8k"), "--gsm8k-accuracy", "1",
                                        "--gsm8k-runaway-rate", "1", "--gsm8k-model-family", family});
    ASSERT_TRUE(server) << family << ": " << server.error().to_string();
    const auto dir = scratch_dir("eval_runaway_" + family);
    auto run = run_ixbench(
        eval_args((*server)->base_url(), dir, {"-c", "4", "--max-tokens", "200", "--model-family", family}));
    ASSERT_EQ(run.exit_code, 0) << family << ": " << run.err;
    const auto result = read_json(dir / "results_conc4.json");
    EXPECT_EQ(score(result, "strict-match"), 1.0) << family;
    EXPECT_EQ(score(result, "flexible-extract"), 1.0) << family;
    const auto& block = result.at("ixbench").as_object();
    EXPECT_EQ(block.at("truncated_at_marker").as_int64(), 12) << family;
    EXPECT_EQ(block.at("finish_reasons").at("length").as_int64(), 12) << family;
    for (const auto& s : read_jsonl(dir / "samples_gsm8k_conc4.jsonl")) {
      EXPECT_TRUE(s.at("truncated_at_marker").as_bool()) << family;
      const std::string completion(s.at("resps").at(0).at(0).as_string());
      const std::string scored(s.at("scored_text").as_string());
      EXPECT_GT(completion.size(), scored.size()) << family;
      EXPECT_EQ(completion.compare(scored.size(), s.at("marker").as_string().size(), s.at("marker").as_string()), 0)
          << family;
    }
    if (family != "deepseek") continue;
    // Without the family's markers the junk after the answer is scored, and its numbers win.
    const auto bare = scratch_dir("eval_runaway_bare");
    auto unguarded = run_ixbench(
        eval_args((*server)->base_url(), bare, {"-c", "4", "--max-tokens", "200", "--model-family", "none"}));
    ASSERT_EQ(unguarded.exit_code, 0) << unguarded.err;
    const auto bare_result = read_json(bare / "results_conc4.json");
    EXPECT_LT(score(bare_result, "strict-match"), 0.5);
    EXPECT_LT(score(bare_result, "flexible-extract"), 0.5);
    EXPECT_EQ(bare_result.at("ixbench").at("truncated_at_marker").as_int64(), 0);
  }
}

TEST(EvalCheck, ThresholdsResolveModelThenDefaultThenMinScoreAndNameTheirSource) {
  const std::string fixture = source_path("tests/data/eval");
  const std::string thresholds = source_path("tests/data/eval/thresholds.yaml");
  auto pass = run_ixbench({"eval", "check", "--results", fixture, "--thresholds", thresholds});
  EXPECT_EQ(pass.exit_code, 0) << pass.err;  // dsr1 from meta_env.json: 0.91
  EXPECT_NE(pass.out.find("Model prefix: dsr1 (per-model thresholds apply)"), std::string::npos) << pass.out;
  EXPECT_NE(pass.out.find("PASS: [conc=64] gsm8k exact_match,strict-match = 0.9500 (>= 0.91 from models.dsr1)"),
            std::string::npos)
      << pass.out;
  EXPECT_NE(pass.out.find("PASS: batched eval produced every requested concurrency"), std::string::npos);

  auto strict =
      run_ixbench({"eval", "check", "--results", fixture, "--thresholds", thresholds, "--model-prefix", "strictmodel"});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.out.find("PASS: [conc=64] gsm8k exact_match,strict-match = 0.9500"), std::string::npos);
  EXPECT_NE(
      strict.err.find("FAIL: [conc=64] gsm8k exact_match,flexible-extract = 0.9400 (< 0.945 from models.strictmodel)"),
      std::string::npos)
      << strict.err;

  auto fallback =
      run_ixbench({"eval", "check", "--results", fixture, "--model-prefix", "other", "--min-score", "0.96"});
  EXPECT_EQ(fallback.exit_code, 1);
  EXPECT_NE(fallback.err.find("(< 0.96 from min-score)"), std::string::npos) << fallback.err;

  auto by_default =
      run_ixbench({"eval", "check", "--results", fixture, "--thresholds", thresholds, "--model-prefix", "other"});
  EXPECT_EQ(by_default.exit_code, 0);
  EXPECT_NE(by_default.out.find("(>= 0.9 from default)"), std::string::npos) << by_default.out;

  auto nothing = run_ixbench({"eval", "check", "--results", fixture, "--metric-prefix", "acc,"});
  EXPECT_EQ(nothing.exit_code, 1);
  EXPECT_NE(nothing.err.find("no metrics matched prefix 'acc,'"), std::string::npos) << nothing.err;

  auto missing = run_ixbench({"eval", "check", "--results", fixture, "--expected-concs", "8 64"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("does not match workflow concurrencies"), std::string::npos) << missing.err;

  const std::string real = ix::testing::shared_path("data/inferencex/evals/thresholds.yaml");
  if (real.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/evals/thresholds.yaml");
  auto glm = run_ixbench({"eval", "check", "--results", fixture, "--thresholds", real, "--model-prefix", "glm5"});
  EXPECT_EQ(glm.exit_code, 0) << glm.err;  // glm5 needs 0.94: 0.95 and 0.94 both pass
  EXPECT_NE(glm.out.find("exact_match,flexible-extract = 0.9400 (>= 0.94 from models.glm5)"), std::string::npos)
      << glm.out;
  auto qwen = run_ixbench({"eval", "check", "--results", fixture, "--thresholds", real, "--model-prefix", "qwen3.5"});
  EXPECT_EQ(qwen.exit_code, 0) << qwen.err;
  auto dsr1 = run_ixbench({"eval", "check", "--results", fixture, "--thresholds", real});
  EXPECT_EQ(dsr1.exit_code, 0) << dsr1.err;
  EXPECT_NE(dsr1.out.find("(>= 0.91 from models.dsr1)"), std::string::npos) << dsr1.out;
}

TEST(EvalCheck, UnreadableInputsAreErrors) {
  auto bad_thresholds = run_ixbench({"eval", "check", "--results", source_path("tests/data/eval"), "--thresholds",
                                     source_path("tests/data/gsm8k/test.jsonl")});
  EXPECT_EQ(bad_thresholds.exit_code, 1);
  EXPECT_NE(bad_thresholds.err.find("test.jsonl"), std::string::npos) << bad_thresholds.err;
  auto missing = run_ixbench({"eval", "check", "--results", "/nonexistent/results_conc1.json"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/results_conc1.json"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace ix
