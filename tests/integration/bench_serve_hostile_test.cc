// `ixbench bench serve` against misbehaving servers (a raw-socket scripted peer): bytes that are
// not UTF-8, a server that always answers 429, usage counts that cannot be true, credentials
// echoed back, a connection closed mid-headers. What was measured is kept, stored valid and
// redacted, and the run says what went wrong.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/json_io.h"
#include "common/utf8.h"
#include "support/scripted_server.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

using Clock = std::chrono::steady_clock;
using ix::testing::read_whole_file;

// Answers every POST with reply(post_index, request); GETs (/metrics) get 404. Records when each
// POST arrived. `close_after_reply`: the connection is closed after each reply (else kept alive).
class HostileServer {
 public:
  using Reply = std::function<std::string(int index, const std::string& request)>;
  explicit HostileServer(Reply reply, bool close_after_reply = false)
      : reply_(std::move(reply)), server_(close_after_reply ? close_each() : keep_alive()) {}

  std::string base_url() const { return server_.base_url(); }
  std::vector<Clock::time_point> arrivals() {
    std::lock_guard lock(mutex_);
    return arrivals_;
  }

 private:
  void respond(int fd, const std::string& request) {
    if (request.rfind("POST ", 0) != 0) {
      ix::testing::write_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    int index = 0;
    {
      std::lock_guard lock(mutex_);
      index = static_cast<int>(arrivals_.size());
      arrivals_.push_back(Clock::now());
    }
    ix::testing::write_all(fd, reply_(index, request));
  }
  std::function<void(int, int)> keep_alive() {
    return ix::testing::ScriptedServer::per_request([this](int fd, const std::string& r) { respond(fd, r); });
  }
  std::function<void(int, int)> close_each() {
    return [this](int fd, int) {
      std::string carry, request;
      if (ix::testing::read_request(fd, carry, &request)) respond(fd, request);
    };
  }

  Reply reply_;
  std::mutex mutex_;
  std::vector<Clock::time_point> arrivals_;
  ix::testing::ScriptedServer server_;  // last: its threads use the members above
};

// A streamed completion whose only chunk is `chunk` (an SSE data payload), then [DONE].
std::string sse_reply(std::string_view chunk) {
  std::string reply(ix::testing::kSseHead);
  reply += ix::testing::http_chunk("data: " + std::string(chunk) + "\n\n");
  reply += ix::testing::http_chunk("data: [DONE]\n\n");
  reply += "0\r\n\r\n";
  return reply;
}

std::string ok_reply() {
  return sse_reply(R"({"choices":[{"index":0,"text":" a","finish_reason":"length"}],)"
                   R"("usage":{"prompt_tokens":16,"completion_tokens":4}})");
}

struct HostileRun {
  ix::testing::ProcessResult process;
  std::string result_text;  // the result file's bytes
  std::string jsonl_text;   // the --save-detailed JSONL's bytes
  boost::json::object result;
};

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ixbench_hostile_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// bench serve's arguments for a small run against `server`, its result in `dir`.
std::vector<std::string> hostile_args(const HostileServer& server, const std::filesystem::path& dir, int prompts,
                                      const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"bench",
                                   "serve",
                                   "--base-url",
                                   server.base_url(),
                                   "--model",
                                   "deepseek-r1",
                                   "--tokenizer",
                                   "deepseek_v3",
                                   "--random-input-len",
                                   "16",
                                   "--random-output-len",
                                   "4",
                                   "--num-prompts",
                                   std::to_string(prompts),
                                   "--num-warmups",
                                   "0",
                                   "--max-concurrency",
                                   "2",
                                   "--no-progress",
                                   "--no-server-metrics",
                                   "--client-lag-threshold-ms",
                                   "1000",
                                   "--save-result",
                                   "--save-detailed",
                                   "--result-dir",
                                   dir.string(),
                                   "--result-filename",
                                   "result.json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

HostileRun run_against(const HostileServer& server, const std::string& name, int prompts,
                       const std::vector<std::string>& extra = {}) {
  const auto dir = fresh_dir(name);
  HostileRun run;
  run.process = ix::testing::run_ixbench(hostile_args(server, dir, prompts, extra), "", 120.0);
  run.result_text = read_whole_file(dir / "result.json");
  run.jsonl_text = read_whole_file(dir / "result.requests.jsonl");
  auto parsed = ix::json::parse(run.result_text);
  if (parsed && parsed->is_object()) run.result = parsed->as_object();
  std::filesystem::remove_all(dir);
  return run;
}

const boost::json::object& own(const HostileRun& run) {
  static const boost::json::object kNone;
  const auto* o = run.result.if_contains("ixbench");
  return o && o->is_object() ? o->as_object() : kNone;
}

int64_t error_count(const HostileRun& run, std::string_view kind) {
  const auto* counts = own(run).if_contains("error_counts");
  if (!counts || !counts->is_object()) return -1;
  const auto* n = counts->as_object().if_contains(kind);
  return n && n->is_int64() ? n->as_int64() : 0;
}

std::string example(const HostileRun& run, std::string_view kind) {
  const auto* examples = own(run).if_contains("error_examples");
  if (!examples || !examples->is_object()) return "";
  const auto* m = examples->as_object().if_contains(kind);
  return m && m->is_string() ? std::string(m->as_string()) : "";
}

TEST(BenchServeHostile, RawBytesOfAMalformedChunkLeaveTheResultValidUtf8Json) {
  HostileServer server([](int, const std::string&) { return sse_reply("{\"choices\":\xff\xfe\x80 garbage"); });
  auto run = run_against(server, "raw_bytes", 3);
  EXPECT_EQ(run.process.exit_code, 1) << run.process.err;
  ASSERT_FALSE(run.result_text.empty()) << run.process.err;
  EXPECT_TRUE(utf8::is_valid(run.result_text));
  EXPECT_TRUE(utf8::is_valid(run.jsonl_text));
  boost::system::error_code ec;
  boost::json::parse(run.result_text, ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(error_count(run, "malformed"), 3);
  EXPECT_NE(example(run, "malformed").find("\xEF\xBF\xBD"), std::string::npos) << example(run, "malformed");
  // Echoed to stderr escaped, never as raw bytes.
  EXPECT_EQ(run.process.err.find('\xff'), std::string::npos);
}

TEST(BenchServeHostile, AnAbsurdMaxRetriesIsRefusedNamingTheBound) {
  HostileServer server([](int, const std::string&) { return ok_reply(); });
  auto run = run_against(server, "absurd_retries", 1, {"--max-retries", "1000000"});
  EXPECT_EQ(run.process.exit_code, 1);
  EXPECT_NE(run.process.err.find("--max-retries must be between 0 and 20"), std::string::npos) << run.process.err;
  EXPECT_TRUE(server.arrivals().empty());
}

TEST(BenchServeHostile, AnAlwaysBusyServerGetsABoundedNumberOfRetries) {
  HostileServer server([](int, const std::string&) {
    return std::string("HTTP/1.1 429 Too Many Requests\r\nContent-Length: 4\r\n\r\nbusy");
  });
  constexpr int kPrompts = 20;
  auto run = run_against(server, "always_429", kPrompts, {"--max-retries", "20"});
  EXPECT_EQ(run.process.exit_code, 1) << run.process.err;
  // 20 requests + the run's retry budget (10 + 20% of 20), not 20 x 21.
  const auto posts = static_cast<int64_t>(server.arrivals().size());
  EXPECT_EQ(posts, kPrompts + 14) << run.process.err;
  EXPECT_EQ(error_count(run, "http_status"), kPrompts);
  const auto* retries = own(run).if_contains("retries");
  ASSERT_NE(retries, nullptr);
  EXPECT_EQ(retries->as_int64(), 14);
  EXPECT_GT(own(run).at("retries_refused_by_budget").as_int64(), 0);
}

TEST(BenchServeHostile, RetryAfterIsHonoured) {
  HostileServer server([](int index, const std::string&) {
    if (index == 0)
      return std::string("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 4\r\n\r\nwait");
    return ok_reply();
  });
  auto run = run_against(server, "retry_after", 1, {"--max-retries", "1"});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  const auto arrivals = server.arrivals();
  ASSERT_EQ(arrivals.size(), 2u);
  EXPECT_GE(arrivals[1] - arrivals[0], std::chrono::milliseconds(950));
  EXPECT_EQ(run.result.at("completed").as_int64(), 1);
}

TEST(BenchServeHostile, ARequestWaitingForItsRetryEndsAtOnceOnSigterm) {
  HostileServer server([](int, const std::string&) {
    return std::string("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 30\r\nContent-Length: 4\r\n\r\nwait");
  });
  const auto dir = fresh_dir("retry_sigterm");
  std::vector<std::string> argv = {ix::testing::ixbench_binary()};
  for (auto& a : hostile_args(server, dir, 1, {"--max-retries", "5"})) argv.push_back(std::move(a));
  const pid_t pid = ix::testing::spawn_quiet(argv);
  ASSERT_GT(pid, 0);
  const auto started = Clock::now();
  while (server.arrivals().empty() && Clock::now() - started < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(server.arrivals().empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the retry is now waiting its 30 s
  ::kill(pid, SIGTERM);
  const auto signalled = Clock::now();
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0 && Clock::now() - signalled < std::chrono::seconds(25))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto waited = Clock::now() - signalled;
  if (waited >= std::chrono::seconds(25)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  EXPECT_LT(waited, std::chrono::seconds(5));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  EXPECT_EQ(server.arrivals().size(), 1u);
  auto result = ix::json::read_file(dir / "result.json");
  ASSERT_TRUE(result && result->is_object());
  EXPECT_EQ(result->as_object().at("failed").as_int64(), 1);
  std::filesystem::remove_all(dir);
}

TEST(BenchServeHostile, ImpossibleUsageIsACountedErrorNotArithmetic) {
  HostileServer server([](int index, const std::string&) {
    if (index % 2 == 1) return ok_reply();
    return sse_reply(R"({"choices":[{"index":0,"text":" a","finish_reason":"length"}],)"
                     R"("usage":{"prompt_tokens":16,"completion_tokens":4611686018427387904}})");
  });
  auto run = run_against(server, "usage_2_62", 4, {"--max-failed-fraction", "0.9"});
  EXPECT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_EQ(error_count(run, "bad_usage"), 2);
  EXPECT_NE(example(run, "bad_usage").find("4611686018427387904"), std::string::npos);
  EXPECT_EQ(run.result.at("completed").as_int64(), 2);
  EXPECT_EQ(run.result.at("total_output_tokens").as_int64(), 8);
  EXPECT_GT(run.result.at("output_throughput").as_double(), 0.0);
}

TEST(BenchServeHostile, NegativeUsageIsACountedError) {
  HostileServer server([](int, const std::string&) {
    return sse_reply(R"({"choices":[{"index":0,"text":" a","finish_reason":"length"}],)"
                     R"("usage":{"prompt_tokens":16,"completion_tokens":-5}})");
  });
  auto run = run_against(server, "usage_negative", 2);
  EXPECT_EQ(error_count(run, "bad_usage"), 2) << run.process.err;
  EXPECT_NE(example(run, "bad_usage").find("usage.completion_tokens is -5"), std::string::npos);
}

TEST(BenchServeHostile, CredentialsAServerEchoesAreRedactedEverywhere) {
  HostileServer server([](int, const std::string& request) {
    const std::string body = "you sent: " + request.substr(0, request.find("\r\n\r\n"));
    return "HTTP/1.1 401 Unauthorized\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  });
  ::setenv("OPENAI_API_KEY", "sk-test-secret-4242", 1);
  auto run = run_against(server, "echo_secret", 2, {"--header", "X-Token=hdr-secret-9999"});
  ::unsetenv("OPENAI_API_KEY");
  EXPECT_EQ(run.process.exit_code, 1) << run.process.err;
  ASSERT_FALSE(run.result_text.empty()) << run.process.err;
  for (const std::string* text : {&run.result_text, &run.jsonl_text, &run.process.err, &run.process.out}) {
    EXPECT_EQ(text->find("sk-test-secret-4242"), std::string::npos) << *text;
    EXPECT_EQ(text->find("hdr-secret-9999"), std::string::npos) << *text;
  }
  EXPECT_NE(example(run, "http_status").find("<redacted>"), std::string::npos) << example(run, "http_status");
}

TEST(BenchServeHostile, AConnectionClosedMidHeadersSaysSoAndNoCompletedRequestIsAnInvalidRun) {
  HostileServer server(
      [](int, const std::string&) { return std::string("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"); },
      /*close_after_reply=*/true);
  auto run = run_against(server, "mid_headers", 3);
  EXPECT_EQ(run.process.exit_code, 1) << run.process.err;
  EXPECT_NE(example(run, "truncated").find("connection closed by the server before the response headers were complete"),
            std::string::npos)
      << example(run, "truncated");
  ASSERT_TRUE(own(run).contains("run_valid")) << run.result_text;
  EXPECT_FALSE(own(run).at("run_valid").as_bool());
  EXPECT_NE(ix::json::to_string(own(run).at("invalid_reasons")).find("no request completed (3 of 3 failed"),
            std::string::npos);
}

}  // namespace
}  // namespace ix
