// bench::run_serve against a scripted loopback server: concurrency limits, request headers and
// bodies, multi-token chunks, role-only chat chunks, retries, open-loop pacing.
#include "bench/serve_runner.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "support/scripted_server.h"

namespace ix::bench {
namespace {

using namespace std::chrono_literals;

using ix::testing::kSseHead;
using ix::testing::write_all;

// The shared scripted peer: respond(fd, request) for each request of a keep-alive connection.
class ScriptedServer : public ix::testing::ScriptedServer {
 public:
  explicit ScriptedServer(std::function<void(int, const std::string&)> respond)
      : ix::testing::ScriptedServer(per_request(std::move(respond))) {}
  http::Url url() const { return *http::Url::parse(base_url()); }
};

ServeRunnerOptions base_options(const http::Url& url, size_t measured, int64_t output_len) {
  static const std::string prompt = " hello";
  ServeRunnerOptions o;
  o.base = url;
  o.model = "m";
  o.measured.assign(measured, {4, output_len});
  o.prompt = [](size_t, int64_t* waited) -> Result<std::string> {
    *waited = 0;
    return prompt;
  };
  o.scrape_server_metrics = false;
  o.request_timeout_ns = 10'000'000'000;
  o.loop_lag_threshold_ms = 1e9;
  return o;
}

TEST(ServeRunner, ClosedLoopKeepsExactlyMaxConcurrencyInFlight) {
  std::atomic<int> active{0}, peak{0};
  std::mutex mutex;
  std::vector<std::string> requests;
  ScriptedServer server([&](int fd, const std::string& request) {
    {
      std::lock_guard lock(mutex);
      requests.push_back(request);
    }
    const int now = ++active;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    std::this_thread::sleep_for(20ms);
    --active;
    write_all(fd, std::string(kSseHead) +
                      ix::testing::http_chunk(
                          "data: {\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":1}}\n\n") +
                      ix::testing::http_chunk(
                          "data: "
                          "{\"choices\":[{\"text\":\"b\",\"finish_reason\":\"length\"}],\"usage\":{\"completion_"
                          "tokens\":2}}\n\n") +
                      ix::testing::http_chunk("data: [DONE]\n\n") + "0\r\n\r\n");
  });
  ServeRunnerOptions o = base_options(server.url(), 12, 2);
  o.max_concurrency = 3;
  o.threads = 2;
  o.api_key = "sk-test";
  auto out = run_serve(o);
  ASSERT_TRUE(out.has_value()) << out.error().to_string();
  EXPECT_EQ(peak.load(), 3);
  ASSERT_EQ(out->records.size(), 12u);
  for (size_t i = 0; i < out->records.size(); ++i) {
    const auto& r = out->records[i];
    EXPECT_EQ(r.index, static_cast<int64_t>(i));
    EXPECT_TRUE(r.success) << r.error_message;
    EXPECT_EQ(r.output_len, 2);
    EXPECT_EQ(r.content_event_ns.size(), 2u);
    EXPECT_GE(r.first_token_ns - r.send_ns, 19'000'000);
    EXPECT_GE(r.send_ns, r.scheduled_ns);
  }
  EXPECT_EQ(out->generated_texts[0], "ab");
  ASSERT_EQ(requests.size(), 12u);
  EXPECT_NE(requests[0].find("POST /v1/completions HTTP/1.1"), std::string::npos);
  EXPECT_NE(requests[0].find("Authorization: Bearer sk-test"), std::string::npos);
  EXPECT_NE(requests[0].find("\"max_tokens\": 2"), std::string::npos);
  EXPECT_NE(requests[0].find("\"stream\": true"), std::string::npos);
  EXPECT_NE(requests[0].find("\"ignore_eos\": true"), std::string::npos);
  EXPECT_NE(requests[0].find("\"continuous_usage_stats\": true"), std::string::npos);
  // One Accept header (an SSE request asks for the event stream).
  EXPECT_NE(requests[0].find("Accept: text/event-stream\r\n"), std::string::npos) << requests[0];
  EXPECT_EQ(requests[0].find("Accept: */*"), std::string::npos) << requests[0];
  EXPECT_TRUE(out->client.worker_threads == 2);
  EXPECT_EQ(out->extra.at("client_connections").as_object().at("opened").as_int64(), 3);
}

TEST(ServeRunner, WithoutContinuousUsageTheBodyIsThePythonClientsOne) {
  std::mutex mutex;
  std::string seen;
  ScriptedServer server([&](int fd, const std::string& request) {
    {
      std::lock_guard lock(mutex);
      seen = request;
    }
    write_all(fd, std::string(kSseHead) +
                      ix::testing::http_chunk("data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\n"
                                              "data: {\"choices\":[],\"usage\":{\"completion_tokens\":1}}\n\n"
                                              "data: [DONE]\n\n") +
                      "0\r\n\r\n");
  });
  ServeRunnerOptions o = base_options(server.url(), 1, 1);
  o.continuous_usage = false;
  auto out = run_serve(o);
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(out->records.at(0).success) << out->records.at(0).error_message;
  std::lock_guard lock(mutex);
  EXPECT_NE(seen.find("\"include_usage\": true"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("continuous_usage_stats"), std::string::npos) << seen;
}

TEST(ServeRunner, MultiTokenChunksAndRoleOnlyChatChunks) {
  ScriptedServer server([&](int fd, const std::string&) {
    write_all(fd, std::string(kSseHead) +
                      ix::testing::http_chunk("data: "
                                              "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],"
                                              "\"usage\":{\"completion_tokens\":0}}\n\n"));
    std::this_thread::sleep_for(30ms);
    write_all(fd,
              ix::testing::http_chunk(
                  "data: {\"choices\":[{\"delta\":{\"content\":\"xy\"}}],\"usage\":{\"completion_tokens\":3}}\n\n"));
    std::this_thread::sleep_for(10ms);
    write_all(fd, ix::testing::http_chunk(
                      "data: "
                      "{\"choices\":[{\"delta\":{\"content\":\"z\"},\"finish_reason\":\"length\"}],\"usage\":{"
                      "\"completion_tokens\":5}}\n\n") +
                      ix::testing::http_chunk(
                          "data: {\"choices\":[],\"usage\":{\"completion_tokens\":5}}\n\ndata: [DONE]\n\n") +
                      "0\r\n\r\n");
  });
  ServeRunnerOptions o = base_options(server.url(), 1, 5);
  o.backend = openai::Backend::kOpenaiChat;
  o.endpoint = "/v1/chat/completions";
  auto out = run_serve(o);
  ASSERT_TRUE(out.has_value());
  const auto& r = out->records.at(0);
  ASSERT_TRUE(r.success) << r.error_message;
  ASSERT_EQ(r.content_event_ns.size(), 2u);  // the role-only chunk is not a token
  EXPECT_EQ(r.tokens_per_event, (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(r.output_len, 5);
  EXPECT_GE(r.first_token_ns - r.send_ns, 29'000'000);
}

TEST(ServeRunner, RetriesAreOffByDefaultAndResendWhenEnabled) {
  std::atomic<int> calls{0};
  auto respond = [&](int fd, const std::string&) {
    if (calls++ % 2 == 0) {
      write_all(fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy");
      return;
    }
    write_all(fd, std::string(kSseHead) +
                      ix::testing::http_chunk(
                          "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n") +
                      "0\r\n\r\n");
  };
  {
    ScriptedServer server(respond);
    auto out = run_serve(base_options(server.url(), 2, 1));
    ASSERT_TRUE(out.has_value());
    int failed = 0;
    for (const auto& r : out->records) failed += !r.success;
    EXPECT_EQ(failed, 1);
    EXPECT_EQ(out->extra.at("retries").as_int64(), 0);
  }
  calls = 0;
  {
    ScriptedServer server(respond);
    ServeRunnerOptions o = base_options(server.url(), 2, 1);
    o.max_retries = 1;
    o.max_concurrency = 1;
    auto out = run_serve(o);
    ASSERT_TRUE(out.has_value());
    for (const auto& r : out->records) EXPECT_TRUE(r.success) << r.error_message;
    EXPECT_EQ(out->extra.at("retries").as_int64(), 2);  // every first attempt got a 503
    EXPECT_EQ(out->records[0].output_len, -1);          // no usage: counted client-side later
  }
}

TEST(ServeRunner, NonStreamingAnswerIsMalformedWithTheBodyInTheMessage) {
  ScriptedServer server([&](int fd, const std::string&) {
    const std::string body = R"({"choices":[{"text":"all at once"}]})";
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  auto out = run_serve(base_options(server.url(), 1, 4));
  ASSERT_TRUE(out.has_value());
  const auto& r = out->records.at(0);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error_kind, metrics::ErrorKind::kMalformed);
  EXPECT_NE(r.error_message.find("all at once"), std::string::npos) << r.error_message;
}

TEST(ServeRunner, CompleteStreamWithoutContentFailsAsNoContent) {
  // Only empty-text chunks and a usage chunk: there is no first token to time, so the request
  // fails (as in vLLM) instead of counting with TTFT 0.
  ScriptedServer server([&](int fd, const std::string&) {
    write_all(fd, std::string(kSseHead) +
                      ix::testing::http_chunk("data: {\"choices\":[{\"text\":\"\"}]}\n\n"
                                              "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"stop\"}]}\n\n"
                                              "data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n"
                                              "data: [DONE]\n\n") +
                      "0\r\n\r\n");
  });
  auto out = run_serve(base_options(server.url(), 1, 4));
  ASSERT_TRUE(out.has_value());
  const auto& r = out->records.at(0);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error_kind, metrics::ErrorKind::kNoContent);
  EXPECT_NE(r.error_message.find("no content-bearing"), std::string::npos) << r.error_message;
}

TEST(ServeRunner, OpenLoopWithConcurrencyLimitShowsQueueTime) {
  ScriptedServer server([&](int fd, const std::string&) {
    std::this_thread::sleep_for(50ms);
    write_all(fd, std::string(kSseHead) +
                      ix::testing::http_chunk(
                          "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n") +
                      "0\r\n\r\n");
  });
  ServeRunnerOptions o = base_options(server.url(), 4, 1);
  o.arrivals.request_rate = 1000.0;  // all four due within a few ms
  o.max_concurrency = 1;             // but only one at a time
  o.threads = 3;                     // more threads than slots: reduced to one
  auto out = run_serve(o);
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->records.size(), 4u);
  // The 4th waits for three 50 ms requests: queue time ≈ 150 ms, visible from the schedule.
  const auto& last = out->records[3];
  EXPECT_GE(last.send_ns - last.scheduled_ns, 120'000'000);
  // The first is not queued behind anything: well under one 50 ms request even on a loaded
  // machine (5 ms failed once with a calibration running beside the suite on 2 cores).
  EXPECT_LT(out->records[0].send_ns - out->records[0].scheduled_ns, 40'000'000);
}

TEST(ServeRunner, APromptThatCannotBeMadeMidRunKeepsWhatWasMeasured) {
  // Before, the error was returned instead of the run: three measured requests were lost.
  ScriptedServer server([&](int fd, const std::string&) {
    write_all(fd, std::string(kSseHead) +
                      ix::testing::http_chunk(
                          "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n") +
                      "0\r\n\r\n");
  });
  ServeRunnerOptions o = base_options(server.url(), 6, 1);
  o.max_concurrency = 1;
  o.prompt = [](size_t k, int64_t* waited) -> Result<std::string> {
    *waited = 0;
    if (k >= 3) return fail(ErrorCode::kInvalidArgument, "prompt 3 cannot be made");
    return std::string(" hello");
  };
  auto out = run_serve(o);
  ASSERT_TRUE(out.has_value()) << out.error().to_string();
  ASSERT_TRUE(out->fatal.has_value());
  EXPECT_NE(out->fatal->message().find("prompt 3 cannot be made"), std::string::npos);
  EXPECT_TRUE(out->stopped_early);
  int64_t succeeded = 0;
  for (const auto& r : out->records) succeeded += r.success ? 1 : 0;
  EXPECT_EQ(succeeded, 3);
  ASSERT_FALSE(out->invalid_reasons.empty());
  EXPECT_NE(out->invalid_reasons.front().find("prompt 3 cannot be made"), std::string::npos);
}

TEST(ServeRunner, LoraChoicesThatDoNotCoverTheRequestsAreAnErrorNotACrash) {
  ServeRunnerOptions o = base_options(http::Url::parse("http://127.0.0.1:9").value(), 3, 2);
  o.lora_modules = {"a", "b"};
  o.lora_choice = {0, 1};  // one short
  auto out = run_serve(o);
  ASSERT_FALSE(out.has_value());
  EXPECT_NE(out.error().message().find("lora_choice"), std::string::npos);
  o.lora_choice = {0, 1, 2};  // 2 is no module
  EXPECT_FALSE(run_serve(o).has_value());
}

TEST(ServeRunner, ExtraHeadersReplaceTheClientsOwnInPlace) {
  ServeRunnerOptions o;
  o.api_key = "sk-test";
  o.extra_headers = {{"accept", "application/json"}, {"X-Tenant", "blue"}};
  const auto headers = server_headers(o, {{"Accept", "text/event-stream"}});
  ASSERT_EQ(headers.size(), 3u);
  EXPECT_EQ(headers[0].name, "accept");  // replaced where it was, as the user spelt it
  EXPECT_EQ(headers[0].value, "application/json");
  EXPECT_EQ(headers[1].name, "Authorization");
  EXPECT_EQ(headers[1].value, "Bearer sk-test");
  EXPECT_EQ(headers[2].name, "X-Tenant");
  o.extra_headers.push_back({"AUTHORIZATION", "Basic x"});
  const auto replaced = server_headers(o);
  ASSERT_EQ(replaced.size(), 3u);
  EXPECT_EQ(replaced[0].value, "Basic x");
  EXPECT_TRUE(server_headers(ServeRunnerOptions{}).empty());
}

}  // namespace
}  // namespace ix::bench

namespace ix::bench {
namespace {

// --profile: InferenceX's client posts its completions body to /start_profile with SGLang's
// profiler options merged in, and the plain body to /stop_profile.
TEST(ServeRunner, ProfileBodiesAreInferenceXs) {
  ServeRunnerOptions options;
  options.model = "m";
  options.backend = openai::Backend::kSglang;
  options.measured = {{.prompt_len = 10, .output_len = 64}};
  EXPECT_EQ(profile_request_body(options, true),
            R"({"model": "m", "prompt": "Hello", "temperature": 0.0, "best_of": 1, "max_tokens": 64, )"
            R"("logprobs": null, "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true, )"
            R"("num_steps": 1, "merge_profiles": true, "profile_by_stage": true})");
  EXPECT_EQ(profile_request_body(options, false),
            R"({"model": "m", "prompt": "Hello", "temperature": 0.0, "best_of": 1, "max_tokens": 64, )"
            R"("logprobs": null, "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true})");
}

}  // namespace
}  // namespace ix::bench
