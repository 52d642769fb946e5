// SimServer end to end over loopback (in-process): OpenAI shapes, SSE framing, errors, faults,
// fixed-schedule timing, metrics, cancellation.
#include "serve/sim_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "request_field_values.h"
#include "serve/schedule_engines.h"
#include "support/server_process.h"

namespace ix::serve {
namespace {

namespace bj = boost::json;
using testing::make_get;
using testing::make_post;
using testing::RawHttpClient;
using testing::RawResponse;
using testing::sse_data_lines;

enum class Mode { kNoDelay, kFixed };

// Like NoDelayEngine (every event inline, from submit), but each event carries `tokens_per_event`
// tokens (as with speculative decoding), and without ignore_eos the request ends with a natural
// stop after `natural_tokens` tokens (0 = at max_tokens), as the cost model's engine does.
class BurstEngine final : public sim::LiveEngine {
 public:
  BurstEngine(int32_t tokens_per_event, int32_t natural_tokens)
      : tokens_per_event_(tokens_per_event), natural_tokens_(natural_tokens) {}
  Result<uint64_t> submit(sim::GenerationRequest request, Sink sink) override {
    int32_t length = request.max_tokens;
    sim::FinishReason reason = sim::FinishReason::kLength;
    if (!request.ignore_eos && natural_tokens_ > 0 && natural_tokens_ < length) {
      length = natural_tokens_;
      reason = sim::FinishReason::kStop;
    }
    sim::TokenEvent event;
    event.request_id = ++next_id_;
    event.time_ns = steady_clock_instance().now_ns();
    event.prompt_tokens = static_cast<int32_t>(request.prompt_token_ids.size());
    while (event.total_output_tokens < length) {
      event.new_tokens = std::min(tokens_per_event_, length - event.total_output_tokens);
      event.total_output_tokens += event.new_tokens;
      event.finish = event.total_output_tokens == length ? reason : sim::FinishReason::kNone;
      sink(event);
    }
    return event.request_id;
  }
  void cancel(uint64_t) override {}
  sim::EngineMetrics metrics() const override { return {}; }
  int32_t max_model_len() const override { return 4096; }

 private:
  int32_t tokens_per_event_;
  int32_t natural_tokens_;
  std::atomic<uint64_t> next_id_{0};
};

struct Server {
  std::unique_ptr<SimServer> server;

  explicit Server(Mode mode = Mode::kNoDelay, FaultOptions faults = {}, double ttft_ms = 30, double itl_ms = 10,
                  int32_t max_model_len = 4096, std::unique_ptr<TextCodec> codec = nullptr,
                  std::vector<std::string> aliases = {}) {
    const Clock& clock = steady_clock_instance();
    std::unique_ptr<sim::LiveEngine> engine;
    if (mode == Mode::kNoDelay) {
      engine = std::make_unique<NoDelayEngine>(max_model_len, clock);
    } else {
      engine = std::make_unique<FixedScheduleEngine>(ttft_ms, itl_ms, max_model_len, clock);
    }
    start(std::move(engine), faults, std::move(codec), std::move(aliases));
  }
  Server(std::unique_ptr<sim::LiveEngine> engine, FaultOptions faults) {
    start(std::move(engine), faults, nullptr, {});
  }

  void start(std::unique_ptr<sim::LiveEngine> engine, FaultOptions faults, std::unique_ptr<TextCodec> codec,
             std::vector<std::string> aliases) {
    SimServeOptions options;
    options.port = 0;
    options.threads = 2;
    options.model_name = "test-model";
    options.faults = faults;
    options.model_aliases = std::move(aliases);
    auto started = SimServer::start(options, std::move(engine), codec ? std::move(codec) : make_fallback_codec());
    EXPECT_TRUE(started) << started.error().message();
    server = std::move(*started);
  }

  RawResponse exchange(const std::string& request, double timeout_s = 10.0) {
    auto client = RawHttpClient::connect(server->port());
    EXPECT_TRUE(client);
    EXPECT_TRUE(client->send(request));
    auto response = client->read_response(timeout_s);
    EXPECT_TRUE(response) << response.error().message();
    return response ? *response : RawResponse();
  }
  RawResponse post(const std::string& path, const std::string& body) { return exchange(make_post(path, body)); }
  RawResponse get(const std::string& path) { return exchange(make_get(path)); }
};

bj::object parse_object(const std::string& text) {
  boost::system::error_code ec;
  bj::value value = bj::parse(text, ec);
  EXPECT_FALSE(ec) << text;
  EXPECT_TRUE(value.is_object()) << text;
  return value.is_object() ? value.as_object() : bj::object();
}

// `param`: the request field the error names ("" = not checked; "null" = none named).
void expect_openai_error(const RawResponse& response, int status, const std::string& message_part,
                         const std::string& param = "") {
  EXPECT_EQ(response.status, status) << response.body;
  EXPECT_EQ(response.header("content-type"), "application/json");
  auto object = parse_object(response.body);
  ASSERT_TRUE(object.contains("error")) << response.body;
  const auto& error = object.at("error").as_object();
  EXPECT_EQ(error.at("code").as_int64(), status);
  EXPECT_TRUE(error.at("type").is_string());
  EXPECT_TRUE(error.at("param").is_null() || error.at("param").is_string()) << response.body;
  if (param == "null") {
    EXPECT_TRUE(error.at("param").is_null()) << response.body;
  } else if (!param.empty()) {
    EXPECT_TRUE(error.at("param").is_string() && error.at("param").as_string() == param) << response.body;
  }
  EXPECT_NE(std::string(error.at("message").as_string()).find(message_part), std::string::npos) << response.body;
}

TEST(SimServer, StreamingCompletionHasVllmChunksUsageAndDone) {
  Server server;
  auto response = server.post("/v1/completions", R"({"model":"test-model","prompt":"hello there","max_tokens":5,)"
                                                 R"("stream":true,"stream_options":{"include_usage":true}})");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.header("content-type"), "text/event-stream; charset=utf-8");
  EXPECT_TRUE(response.chunked);
  ASSERT_TRUE(response.complete);
  // Framing: every event is "data: ...\n\n".
  EXPECT_EQ(response.body.rfind("data: ", 0), 0u);
  EXPECT_EQ(response.body.substr(response.body.size() - 14), "data: [DONE]\n\n");
  auto lines = sse_data_lines(response.body);
  ASSERT_EQ(lines.size(), 7u);  // 5 tokens, usage, [DONE]
  std::string id;
  for (int index = 0; index < 5; ++index) {
    auto chunk = parse_object(lines[static_cast<size_t>(index)]);
    EXPECT_EQ(chunk.at("object").as_string(), "text_completion");
    EXPECT_EQ(chunk.at("model").as_string(), "test-model");
    EXPECT_TRUE(chunk.at("created").is_int64());
    if (index == 0) id = std::string(chunk.at("id").as_string());
    EXPECT_EQ(chunk.at("id").as_string(), id);
    EXPECT_EQ(id.rfind("cmpl-", 0), 0u);
    const auto& choice = chunk.at("choices").as_array().at(0).as_object();
    EXPECT_EQ(choice.at("index").as_int64(), 0);
    EXPECT_FALSE(choice.at("text").as_string().empty());
    EXPECT_TRUE(choice.at("logprobs").is_null());
    if (index < 4) {
      EXPECT_TRUE(choice.at("finish_reason").is_null());
    } else {
      EXPECT_EQ(choice.at("finish_reason").as_string(), "length");
    }
  }
  auto usage_chunk = parse_object(lines[5]);
  EXPECT_TRUE(usage_chunk.at("choices").as_array().empty());
  const auto& usage = usage_chunk.at("usage").as_object();
  EXPECT_EQ(usage.at("completion_tokens").as_int64(), 5);
  EXPECT_GT(usage.at("prompt_tokens").as_int64(), 0);
  EXPECT_EQ(usage.at("total_tokens").as_int64(),
            usage.at("prompt_tokens").as_int64() + usage.at("completion_tokens").as_int64());
  EXPECT_EQ(usage.at("prompt_tokens_details").as_object().at("cached_tokens").as_int64(), 0);
  EXPECT_EQ(lines[6], "[DONE]");
}

TEST(SimServer, StreamWithoutIncludeUsageHasNoUsageChunk) {
  Server server;
  auto response = server.post("/v1/completions", R"({"prompt":[1,2,3],"max_tokens":3,"stream":true})");
  auto lines = sse_data_lines(response.body);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines.back(), "[DONE]");
  for (size_t index = 0; index < 3; ++index) EXPECT_FALSE(parse_object(lines[index]).contains("usage"));
}

TEST(SimServer, ContinuousUsageStatsPutsRunningUsageInEveryTokenChunk) {
  // vLLM's stream_options.continuous_usage_stats, which bench serve asks for to learn how many
  // tokens each chunk carried (speculative decoding); it used to be ignored.
  Server server;
  for (const std::string path : {"/v1/completions", "/v1/chat/completions"}) {
    const std::string prompt =
        path == "/v1/completions" ? R"("prompt":"hello there")" : R"("messages":[{"role":"user","content":"hi"}])";
    auto response = server.post(path, "{" + prompt +
                                          R"(,"max_tokens":5,"stream":true,)"
                                          R"("stream_options":{"include_usage":true,"continuous_usage_stats":true}})");
    ASSERT_EQ(response.status, 200) << response.body;
    int64_t previous = 0;
    int token_chunks = 0;
    for (const auto& line : sse_data_lines(response.body)) {
      if (line == "[DONE]") continue;
      auto chunk = parse_object(line);
      const auto& choices = chunk.at("choices").as_array();
      if (!choices.empty() && choices.at(0).as_object().contains("delta") &&
          choices.at(0).as_object().at("delta").as_object().contains("role")) {
        continue;  // the chat role chunk carries no token
      }
      ASSERT_TRUE(chunk.contains("usage")) << path << ": " << line;
      const int64_t completion = chunk.at("usage").as_object().at("completion_tokens").as_int64();
      EXPECT_GE(completion, previous) << line;
      if (!choices.empty()) {
        EXPECT_GT(completion, previous) << line;
        ++token_chunks;
      }
      previous = completion;
    }
    EXPECT_GT(token_chunks, 0);
    EXPECT_EQ(previous, 5) << path;
  }
  auto bad = server.post("/v1/completions", R"({"prompt":"x","max_tokens":2,"stream":true,)"
                                            R"("stream_options":{"continuous_usage_stats":1}})");
  expect_openai_error(bad, 400, "continuous_usage_stats");
}

TEST(SimServer, ChatStreamStartsWithRoleAndUsesDeltas) {
  Server server;
  auto response =
      server.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":4,)"
                                          R"("stream":true,"stream_options":{"include_usage":true}})");
  auto lines = sse_data_lines(response.body);
  ASSERT_EQ(lines.size(), 7u);  // role, 4 tokens, usage, [DONE]
  auto role = parse_object(lines[0]);
  EXPECT_EQ(role.at("object").as_string(), "chat.completion.chunk");
  EXPECT_EQ(std::string(role.at("id").as_string()).rfind("chatcmpl-", 0), 0u);
  const auto& role_delta = role.at("choices").as_array().at(0).at("delta").as_object();
  EXPECT_EQ(role_delta.at("role").as_string(), "assistant");
  EXPECT_EQ(role_delta.at("content").as_string(), "");
  std::string text;
  for (size_t index = 1; index <= 4; ++index) {
    auto chunk = parse_object(lines[index]);
    const auto& choice = chunk.at("choices").as_array().at(0).as_object();
    text += std::string(choice.at("delta").as_object().at("content").as_string());
    EXPECT_EQ(choice.at("finish_reason").is_null(), index < 4);
  }
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(parse_object(lines[5]).at("usage").as_object().at("completion_tokens").as_int64(), 4);
}

TEST(SimServer, NonStreamingResponsesHaveContentLengthAndUsage) {
  Server server;
  auto completion = server.post("/v1/completions", R"({"prompt":"a b c","max_tokens":6})");
  EXPECT_EQ(completion.status, 200);
  EXPECT_FALSE(completion.chunked);
  EXPECT_EQ(completion.header("content-length"), std::to_string(completion.body.size()));
  auto object = parse_object(completion.body);
  EXPECT_EQ(object.at("object").as_string(), "text_completion");
  const auto& choice = object.at("choices").as_array().at(0).as_object();
  EXPECT_EQ(choice.at("finish_reason").as_string(), "length");
  EXPECT_FALSE(choice.at("text").as_string().empty());
  EXPECT_EQ(object.at("usage").as_object().at("completion_tokens").as_int64(), 6);

  auto chat = server.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"max_tokens":2})");
  auto chat_object = parse_object(chat.body);
  EXPECT_EQ(chat_object.at("object").as_string(), "chat.completion");
  const auto& message = chat_object.at("choices").as_array().at(0).at("message").as_object();
  EXPECT_EQ(message.at("role").as_string(), "assistant");
  EXPECT_EQ(chat_object.at("usage").as_object().at("completion_tokens").as_int64(), 2);
}

TEST(SimServer, DefaultMaxTokensIs16ForCompletions) {
  Server server;
  auto object = parse_object(server.post("/v1/completions", R"({"prompt":"x"})").body);
  EXPECT_EQ(object.at("usage").as_object().at("completion_tokens").as_int64(), 16);
}

TEST(SimServer, NonStreamedResponseDropsAStopStringThatSpansTokens) {
  Server server(Mode::kFixed, {}, 1, 0.05);  // one token per engine event
  // Two consecutive output words: a stop string over both begins in an earlier token than the
  // one that completes it. The output cycles through a fixed passage (each request starting
  // where the last one stopped), so a long enough request meets the pair. The non-streamed text
  // must end before the match; it kept the first word.
  auto full = parse_object(server.post("/v1/completions", R"({"prompt":"x","max_tokens":40,"ignore_eos":true})").body);
  const std::string text(full.at("choices").as_array().at(0).at("text").as_string());
  const size_t first = text.find(' ', 1);
  const size_t second = text.find(' ', first + 1);
  const size_t third = text.find(' ', second + 1);
  ASSERT_NE(third, std::string::npos) << text;
  const std::string word = text.substr(first + 1, second - first - 1);
  const std::string stop = text.substr(first + 1, third - first - 1);  // "word next"
  for (const char* endpoint : {"/v1/completions", "/v1/chat/completions"}) {
    const bool chat = std::string(endpoint).find("chat") != std::string::npos;
    const std::string body = std::string(chat ? R"({"messages":[{"role":"user","content":"x"}])" : R"({"prompt":"x")") +
                             R"(,"max_tokens":3000,"ignore_eos":true,"stop":[")" + stop + R"("]})";
    auto object = parse_object(server.post(endpoint, body).body);
    const auto& choice = object.at("choices").as_array().at(0).as_object();
    const std::string got(chat ? choice.at("message").at("content").as_string() : choice.at("text").as_string());
    EXPECT_EQ(choice.at("finish_reason").as_string(), "stop") << endpoint;
    EXPECT_EQ(got.find(stop), std::string::npos) << endpoint;
    EXPECT_FALSE(got.ends_with(word)) << endpoint << " kept the start of the match: ..." << got.substr(got.size() - 30);
    EXPECT_TRUE(got.ends_with(" ")) << endpoint << ": ..." << got.substr(got.size() - 30);
  }
}

TEST(SimServer, TokenIdPromptsCountExactly) {
  Server server;
  auto object = parse_object(server.post("/v1/completions", R"({"prompt":[5,6,7,8,9],"max_tokens":1})").body);
  EXPECT_EQ(object.at("usage").as_object().at("prompt_tokens").as_int64(), 5);
}

TEST(SimServer, StopStringEndsTheStreamWithStop) {
  Server server;
  // The output cycles through a fixed passage; every word occurs in it, so " the" is reached.
  auto response = server.post("/v1/completions", R"({"prompt":"x","max_tokens":200,"stop":[" the"],"stream":true,)"
                                                 R"("stream_options":{"include_usage":true}})");
  auto lines = sse_data_lines(response.body);
  ASSERT_GE(lines.size(), 3u);
  auto last_chunk = parse_object(lines[lines.size() - 3]);
  const auto& choice = last_chunk.at("choices").as_array().at(0).as_object();
  EXPECT_EQ(choice.at("finish_reason").as_string(), "stop");
  EXPECT_EQ(choice.at("stop_reason").as_string(), " the");
  std::string text;
  for (size_t index = 0; index + 2 < lines.size(); ++index) {
    text += std::string(parse_object(lines[index]).at("choices").as_array().at(0).at("text").as_string());
  }
  EXPECT_EQ(text.find(" the"), std::string::npos) << text;
  EXPECT_LT(parse_object(lines[lines.size() - 2]).at("usage").at("completion_tokens").as_int64(), 200);
}

TEST(SimServer, RequestsEndedByAStopAreInTheLatencyHistograms) {
  // Counted as finished ("stop") and, as in vLLM, observed in the latency histograms too. Tokens
  // coming over time (a fixed schedule, as with the cost model), the engine is cancelled at the
  // stop and never reports the end, so the histograms used to miss these requests.
  Server server(Mode::kFixed, {}, 5, 1);
  auto response = server.post("/v1/completions", R"({"prompt":"x","max_tokens":200,"stop":[" the"],"stream":true})");
  auto lines = sse_data_lines(response.body);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(parse_object(lines[lines.size() - 2]).at("choices").at(0).at("finish_reason").as_string(), "stop");
  const std::string metrics = server.get("/metrics").body;
  for (const std::string series :
       {"vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"test-model\"} 1.0\n",
        "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"test-model\"} 1.0\n",
        "vllm:request_inference_time_seconds_count{engine=\"0\",model_name=\"test-model\"} 1.0\n"}) {
    EXPECT_NE(metrics.find(series), std::string::npos) << series << metrics;
  }
}

TEST(SimServer, BadRequestsGet400OpenAiErrors) {
  Server server;
  expect_openai_error(server.post("/v1/completions", "{bad json"), 400, "malformed JSON");
  expect_openai_error(server.post("/v1/completions", R"({"max_tokens":5})"), 400, "'prompt'");
  expect_openai_error(server.post("/v1/completions", R"({"prompt":"x","max_tokens":"many"})"), 400, "max_tokens");
  expect_openai_error(server.post("/v1/chat/completions", R"({"prompt":"x"})"), 400, "'messages'");
  expect_openai_error(server.post("/v1/completions", R"({"prompt":"x","max_tokens":5000})"), 400,
                      "maximum context length is 4096");
  // The largest int64 budget: prompt + max_tokens overflowed, the check passed and the engine
  // refused "max_tokens=-1" in a message about min_tokens.
  expect_openai_error(server.post("/v1/completions", R"({"prompt":"x","max_tokens":9223372036854775807})"), 400,
                      "you requested 9223372036854775808 tokens (1 in the messages, 9223372036854775807 in the "
                      "completion)");
  std::string long_prompt = "[" + std::string(4096 * 2 - 1, '1') + "]";
  for (size_t index = 2; index < long_prompt.size() - 1; index += 2) long_prompt[index] = ',';
  expect_openai_error(server.post("/v1/completions", R"({"prompt":)" + long_prompt + "}"), 400,
                      "maximum context length");
  expect_openai_error(server.post("/v1/completions", R"({"model":"other","prompt":"x"})"), 404,
                      "The model `other` does not exist.");
}

// Every field with every JSON type and boundary value, through the whole server (parsing, the
// context checks, the int32 conversions into the engine request, streaming and not): a 200 that
// completes, or an OpenAI 4xx error; never a 5xx, a dropped connection or a crash (the sum
// prompt + max_tokens used to overflow for max_tokens = 2^63 - 1).
TEST(SimServer, EveryFieldWithEveryJsonValueIsAnsweredOrRefusedCleanly) {
  Server server;
  int answered = 0;
  for (const bool stream : {false, true}) {
    for (const bool chat : {false, true}) {
      const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
      const std::string prompt =
          chat ? R"("messages":[{"role":"user","content":"hi there"}])" : R"("prompt":"hi there")";
      for (const char* field : request_sweep::kRequestFields) {
        for (const char* value : request_sweep::kBoundaryJsonValues) {
          const std::string body = "{" + prompt + (stream ? R"(,"stream":true)" : "") + ",\"" + field + "\":" + value +
                                   (std::string_view(field).find("max_") == 0 ? "" : R"(,"max_tokens":4)") + "}";
          const RawResponse response = server.post(path, body);
          if (response.status == 200) {
            ++answered;
            // The "stream" field of the sweep may override the outer loop's (last key wins).
            if (response.header("content-type").starts_with("text/event-stream")) {
              const auto lines = sse_data_lines(response.body);
              ASSERT_FALSE(lines.empty()) << body;
              EXPECT_EQ(lines.back(), "[DONE]") << body;
            } else {
              EXPECT_TRUE(parse_object(response.body).contains("choices")) << body;
            }
          } else {
            ASSERT_TRUE(response.status == 400 || response.status == 404)
                << response.status << " " << body << " -> " << response.body;
            EXPECT_TRUE(parse_object(response.body).contains("error")) << body;
          }
        }
      }
    }
  }
  EXPECT_GT(answered, 100);  // the sweep reached the engine, not only the parser
}

TEST(SimServer, LogprobsEchoAndOutOfRangeSamplingAreRefusedNamingTheParam) {
  // These were answered 200 with "logprobs": null / no prompt text, or sampled "as if" valid.
  Server server;
  const std::string chat = R"("messages":[{"role":"user","content":"hi"}])";
  expect_openai_error(server.post("/v1/completions", R"({"prompt":"x","logprobs":1})"), 400,
                      "does not produce logprobs", "logprobs");
  expect_openai_error(server.post("/v1/completions", R"({"prompt":"x","echo":true})"), 400, "echo", "echo");
  expect_openai_error(server.post("/v1/chat/completions", "{" + chat + R"(,"logprobs":true})"), 400,
                      "does not produce logprobs", "logprobs");
  expect_openai_error(server.post("/v1/chat/completions", "{" + chat + R"(,"logprobs":"yes"})"), 400,
                      "'logprobs' must be a boolean", "logprobs");
  expect_openai_error(server.post("/v1/chat/completions", "{" + chat + R"(,"top_logprobs":2})"), 400, "top_logprobs",
                      "top_logprobs");
  expect_openai_error(server.post("/v1/completions", R"({"prompt":"x","temperature":-1})"), 400,
                      "temperature must be non-negative", "temperature");
  expect_openai_error(server.post("/v1/completions", R"({"prompt":"x","top_p":0})"), 400, "top_p must be in (0, 1]",
                      "top_p");
  expect_openai_error(server.post("/v1/chat/completions", "{" + chat + R"(,"presence_penalty":3})"), 400,
                      "presence_penalty must be in [-2, 2]", "presence_penalty");
  expect_openai_error(server.post("/v1/completions", R"({"prompt":""})"), 400, "must not be empty", "prompt");
  // Completions default to max_tokens 16: a larger min_tokens is refused, as vLLM does.
  expect_openai_error(server.post("/v1/completions", R"({"prompt":"x","min_tokens":20})"), 400,
                      "min_tokens must be less than or equal to max_tokens=16, got 20.", "min_tokens");
  // What benchmark clients send is still served.
  EXPECT_EQ(server.post("/v1/completions", R"({"prompt":"x","max_tokens":2,"logprobs":null,"echo":false})").status,
            200);
  EXPECT_EQ(server.post("/v1/chat/completions", "{" + chat + R"(,"max_tokens":2,"logprobs":false,"top_logprobs":null})")
                .status,
            200);
}

TEST(SimServer, ContinuousUsageStatsWithoutIncludeUsageSendsNoUsage) {
  // vLLM puts usage in every chunk only when include_usage is true too; this sent it regardless.
  Server server;
  auto response = server.post("/v1/completions", R"({"prompt":"x","max_tokens":4,"stream":true,)"
                                                 R"("stream_options":{"continuous_usage_stats":true}})");
  auto lines = sse_data_lines(response.body);
  ASSERT_EQ(lines.size(), 5u);  // 4 tokens, [DONE]: no usage chunk either
  for (size_t index = 0; index < 4; ++index) EXPECT_FALSE(parse_object(lines[index]).contains("usage")) << lines[index];
}

// The id of " the" under the approximate codec: a single piece, and frequent in the output passage.
int64_t id_of_the(Server& server) {
  auto tokens = parse_object(server.post("/tokenize", R"({"prompt":" the"})").body);
  EXPECT_EQ(tokens.at("count").as_int64(), 1);
  return tokens.at("tokens").as_array().at(0).as_int64();
}

int64_t token_count(Server& server, const std::string& text) {
  if (text.empty()) return 0;
  bj::object body{{"prompt", text}};
  return parse_object(server.post("/tokenize", bj::serialize(body)).body).at("count").as_int64();
}

TEST(SimServer, StopTokenIdsEndTheRequestLikeVllm) {
  // stop_token_ids used to be ignored (the request ran to max_tokens, finish "length").
  Server server;
  const int64_t the = id_of_the(server);
  for (bool include : {false, true}) {
    const std::string body = R"({"prompt":"x","max_tokens":3000,"ignore_eos":true,"stop_token_ids":[)" +
                             std::to_string(the) + R"(],"include_stop_str_in_output":)" + (include ? "true" : "false") +
                             "}";
    auto object = parse_object(server.post("/v1/completions", body).body);
    const auto& choice = object.at("choices").as_array().at(0).as_object();
    EXPECT_EQ(choice.at("finish_reason").as_string(), "stop");
    ASSERT_TRUE(choice.at("stop_reason").is_int64()) << object;
    EXPECT_EQ(choice.at("stop_reason").as_int64(), the);  // vLLM reports the token id
    const std::string text(choice.at("text").as_string());
    const int64_t completion = object.at("usage").as_object().at("completion_tokens").as_int64();
    EXPECT_LT(completion, 3000);
    // The stop token is counted; its text is in the output only with include_stop_str_in_output.
    EXPECT_EQ(text.ends_with(" the"), include) << text;
    EXPECT_EQ(token_count(server, text), include ? completion : completion - 1) << text;
  }
  // Streamed: the last token chunk carries the reason.
  auto response =
      server.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"max_tokens":3000,)"
                                          R"("stream":true,"stop_token_ids":[)" +
                                              std::to_string(the) + "]}");
  auto lines = sse_data_lines(response.body);
  ASSERT_GE(lines.size(), 3u);
  const auto last_chunk = parse_object(lines[lines.size() - 2]);
  const auto& last = last_chunk.at("choices").as_array().at(0).as_object();
  EXPECT_EQ(last.at("finish_reason").as_string(), "stop");
  EXPECT_EQ(last.at("stop_reason").as_int64(), the);
}

TEST(SimServer, IncludeStopStrInOutputKeepsTheMatchedStopString) {
  Server server;
  for (const char* endpoint : {"/v1/completions", "/v1/chat/completions"}) {
    const bool chat = std::string(endpoint).find("chat") != std::string::npos;
    const std::string prompt = chat ? R"("messages":[{"role":"user","content":"x"}])" : R"("prompt":"x")";
    auto object = parse_object(
        server.post(endpoint, "{" + prompt + R"(,"max_tokens":3000,"stop":[" the"],"include_stop_str_in_output":true})")
            .body);
    const auto& choice = object.at("choices").as_array().at(0).as_object();
    const std::string text(chat ? choice.at("message").at("content").as_string() : choice.at("text").as_string());
    EXPECT_EQ(choice.at("finish_reason").as_string(), "stop");
    EXPECT_EQ(choice.at("stop_reason").as_string(), " the");
    EXPECT_TRUE(text.ends_with(" the")) << endpoint << ": " << text;
    EXPECT_EQ(text.find(" the"), text.size() - 4) << "the first match ends the text: " << text;
  }
}

TEST(SimServer, MinTokensHoldsBackStopStringsAndStopTokenIds) {
  // vLLM neither matches stop strings nor samples stop tokens within the first min_tokens tokens.
  // " the" occurs at least every ~70 tokens of the output passage, so without min_tokens both stop
  // well before 150.
  Server server;
  const int64_t the = id_of_the(server);
  for (const std::string& stop :
       std::vector<std::string>{R"("stop":[" the"])", R"("stop_token_ids":[)" + std::to_string(the) + "]"}) {
    auto object = parse_object(
        server.post("/v1/completions", R"({"prompt":"x","max_tokens":3000,"min_tokens":150,)" + stop + "}").body);
    const auto& choice = object.at("choices").as_array().at(0).as_object();
    const std::string text(choice.at("text").as_string());
    EXPECT_EQ(choice.at("finish_reason").as_string(), "stop") << stop;
    const int64_t completion = object.at("usage").as_object().at("completion_tokens").as_int64();
    EXPECT_GT(completion, 150) << stop;
    EXPECT_LT(completion, 400) << stop;
    EXPECT_NE(text.find(" the"), std::string::npos) << stop << ": earlier occurrences stay in the text";
  }
}

TEST(SimServer, TruncatePromptTokensKeepsTheLastTokens) {
  Server server;
  auto prompt_tokens = [&](const std::string& extra) {
    auto object = parse_object(
        server.post("/v1/completions", R"({"prompt":[1,2,3,4,5,6,7,8,9,10],"max_tokens":1)" + extra + "}").body);
    return object.at("usage").as_object().at("prompt_tokens").as_int64();
  };
  EXPECT_EQ(prompt_tokens(R"(,"truncate_prompt_tokens":3)"), 3);
  EXPECT_EQ(prompt_tokens(R"(,"truncate_prompt_tokens":30)"), 10);
  EXPECT_EQ(prompt_tokens(R"(,"truncate_prompt_tokens":-1)"), 10);  // vLLM: -1 = max_model_len
  auto chat = parse_object(server
                               .post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"a b c d e f"}],)"
                                                             R"("max_tokens":1,"truncate_prompt_tokens":2})")
                               .body);
  EXPECT_EQ(chat.at("usage").as_object().at("prompt_tokens").as_int64(), 2);
  expect_openai_error(server.post("/v1/completions", R"({"prompt":"x","truncate_prompt_tokens":0})"), 400,
                      "truncate_prompt_tokens must be an integer >= 1 or -1, got 0.", "truncate_prompt_tokens");
  expect_openai_error(server.post("/v1/completions", R"({"prompt":"x","truncate_prompt_tokens":5000})"), 400,
                      "truncate_prompt_tokens value (5000) is greater than max_model_len (4096)",
                      "truncate_prompt_tokens");
}

TEST(SimServer, ABodyThatIsNotDeclaredJsonIs415) {
  Server server;
  const std::string body = R"({"prompt":"x","max_tokens":2})";
  auto raw_post = [&](const std::string& path, const std::string& content_type_line) {
    return server.exchange("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + content_type_line +
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  };
  for (const char* path : {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}) {
    expect_openai_error(raw_post(path, "Content-Type: text/plain\r\n"), 415,
                        "Unsupported Media Type: Only 'application/json' is allowed");
    expect_openai_error(raw_post(path, "Content-Type: application/x-www-form-urlencoded\r\n"), 415,
                        "'application/x-www-form-urlencoded'");
  }
  // A missing Content-Type is read as JSON (curl without -H); parameters and case are fine.
  EXPECT_EQ(raw_post("/v1/completions", "").status, 200);
  EXPECT_EQ(raw_post("/v1/completions", "Content-Type: Application/JSON; charset=utf-8\r\n").status, 200);
}

TEST(SimServer, EveryServedModelNameIsAcceptedAndTheFirstIsReported) {
  Server server(Mode::kNoDelay, {}, 30, 10, 4096, nullptr, {"alias-a", "alias-b"});
  auto object = parse_object(server.post("/v1/completions", R"({"model":"alias-b","prompt":"x","max_tokens":1})").body);
  EXPECT_EQ(object.at("model").as_string(), "test-model");
  auto models = parse_object(server.get("/v1/models").body).at("data").as_array();
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].at("id").as_string(), "test-model");
  EXPECT_EQ(models[1].at("id").as_string(), "alias-a");
  EXPECT_EQ(models[2].at("id").as_string(), "alias-b");
  expect_openai_error(server.post("/v1/completions", R"({"model":"other","prompt":"x"})"), 404,
                      "The model `other` does not exist.", "model");
}

TEST(SimServer, ExactTokenizerHonoursAddSpecialTokensAndItsVocabulary) {
  auto codec = make_tokenizer_codec("deepseek_v3");
  if (!codec) GTEST_SKIP() << "DeepSeek tokenizer not installed: " << codec.error().to_string();
  const int32_t vocab = *(*codec)->vocab_size();
  Server server(Mode::kNoDelay, {}, 30, 10, 4096, std::move(*codec));
  auto prompt_tokens = [&](const std::string& extra) {
    auto object =
        parse_object(server.post("/v1/completions", R"({"prompt":"hello world","max_tokens":1)" + extra + "}").body);
    return object.at("usage").as_object().at("prompt_tokens").as_int64();
  };
  const int64_t with_bos = prompt_tokens("");
  EXPECT_EQ(prompt_tokens(R"(,"add_special_tokens":true)"), with_bos);
  EXPECT_EQ(prompt_tokens(R"(,"add_special_tokens":false)"), with_bos - 1);  // no BOS
  auto tokenized =
      parse_object(server.post("/tokenize", R"({"prompt":"hello world","add_special_tokens":false})").body);
  EXPECT_EQ(tokenized.at("count").as_int64(), with_bos - 1);
  // Token-id prompts must be in the vocabulary (vLLM: "Token id ... is out of vocabulary").
  expect_openai_error(
      server.post("/v1/completions", R"({"prompt":[1,)" + std::to_string(vocab) + R"(],"max_tokens":1})"), 400,
      "Token id " + std::to_string(vocab) + " is out of vocabulary", "prompt");
  EXPECT_EQ(
      server.post("/v1/completions", R"({"prompt":[1,)" + std::to_string(vocab - 1) + R"(],"max_tokens":1})").status,
      200);
}

// The deepseek_v3 codec, or nullptr (the test skips) when the package is not installed.
std::unique_ptr<TextCodec> deepseek_codec() {
  auto codec = make_tokenizer_codec("deepseek_v3");
  return codec ? std::move(*codec) : nullptr;
}

TEST(SimServer, DetokenizeDecodesTokenIdsLikeVllm) {
  auto codec = deepseek_codec();
  if (!codec) GTEST_SKIP() << "DeepSeek tokenizer not installed; run scripts/bootstrap.sh";
  const int32_t vocab = *codec->vocab_size();
  Server server(Mode::kNoDelay, {}, 30, 10, 4096, std::move(codec));
  auto tokenized = parse_object(server.post("/tokenize", R"({"prompt":"Hello, 東京 world!"})").body);
  std::string ids;
  for (const auto& id : tokenized.at("tokens").as_array()) ids += (ids.empty() ? "" : ",") + bj::serialize(id);
  // Special tokens are kept (vLLM decodes with skip_special_tokens=False): the BOS comes back.
  auto response = server.post("/detokenize", R"({"model":"test-model","tokens":[)" + ids + "]}");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.header("content-type"), "application/json");
  auto object = parse_object(response.body);
  EXPECT_EQ(object.size(), 1u) << response.body;  // vLLM's DetokenizeResponse: {"prompt"}
  EXPECT_EQ(object.at("prompt").as_string(), "<｜begin▁of▁sentence｜>Hello, 東京 world!");
  EXPECT_EQ(parse_object(server.post("/detokenize", R"({"tokens":[]})").body).at("prompt").as_string(), "");
  // Text that needs escaping in JSON survives the round trip.
  auto quoted =
      parse_object(server.post("/tokenize", R"({"prompt":"a \"q\"\n\tb\\","add_special_tokens":false})").body);
  std::string quoted_ids;
  for (const auto& id : quoted.at("tokens").as_array()) {
    quoted_ids += (quoted_ids.empty() ? "" : ",") + bj::serialize(id);
  }
  EXPECT_EQ(
      parse_object(server.post("/detokenize", R"({"tokens":[)" + quoted_ids + "]}").body).at("prompt").as_string(),
      "a \"q\"\n\tb\\");

  expect_openai_error(server.post("/detokenize", R"({"model":"other","tokens":[1]})"), 404, "does not exist", "model");
  expect_openai_error(server.post("/detokenize", R"({"tokens":[1,)" + std::to_string(vocab) + "]}"), 400,
                      "Token id " + std::to_string(vocab) + " is out of vocabulary", "tokens");
  expect_openai_error(server.post("/detokenize", R"({"tokens":[-1]})"), 400, "outside [0, 2^31)", "tokens");
  expect_openai_error(server.post("/detokenize", R"({"tokens":"1,2"})"), 400, "array of token ids", "tokens");
  expect_openai_error(server.post("/detokenize", R"({"prompt":"x"})"), 400, "missing required field 'tokens'",
                      "tokens");
  expect_openai_error(server.post("/detokenize", R"({"tokens":[1,2)"), 400, "malformed JSON", "null");
  expect_openai_error(server.post("/detokenize", "[1,2]"), 400, "JSON object", "null");
  expect_openai_error(server.post("/detokenize", ""), 400, "empty", "null");
  auto get = server.get("/detokenize");
  expect_openai_error(get, 405, "not allowed");
  EXPECT_EQ(get.header("allow"), "POST");
}

TEST(SimServer, DetokenizeWithoutATokenizerIs501) {
  Server server;  // the approximate codec: ids are hashes, there is no text to give back
  expect_openai_error(server.post("/detokenize", R"({"tokens":[1,2,3]})"), 501, "--tokenizer", "null");
  expect_openai_error(server.post("/tokenize", R"({"prompt":"hi","return_token_strs":true})"), 501, "--tokenizer");
  // Bad input is still a 400 first.
  expect_openai_error(server.post("/detokenize", R"({"tokens":[-5]})"), 400, "outside", "tokens");
}

TEST(SimServer, TokenizeAnswersInVllmsShape) {
  auto codec = deepseek_codec();
  if (!codec) GTEST_SKIP() << "DeepSeek tokenizer not installed; run scripts/bootstrap.sh";
  Server server(Mode::kNoDelay, {}, 30, 10, 4096, std::move(codec));
  auto plain = parse_object(server.post("/tokenize", R"({"prompt":"hello world"})").body);
  // vLLM's TokenizeResponse: count, max_model_len, tokens, token_strs (null unless asked for).
  EXPECT_EQ(plain.size(), 4u);
  EXPECT_EQ(plain.at("count").as_int64(), static_cast<int64_t>(plain.at("tokens").as_array().size()));
  EXPECT_EQ(plain.at("max_model_len").as_int64(), 4096);
  EXPECT_TRUE(plain.at("token_strs").is_null());
  auto strs = parse_object(server.post("/tokenize", R"({"prompt":"hello world","return_token_strs":true})").body);
  ASSERT_TRUE(strs.at("token_strs").is_array());
  const auto& token_strs = strs.at("token_strs").as_array();
  ASSERT_EQ(token_strs.size(), 3u);  // BOS, "hello", " world"
  EXPECT_EQ(token_strs[0].as_string(), "<｜begin▁of▁sentence｜>");
  EXPECT_EQ(token_strs[2].as_string(), "Ġworld");  // the vocabulary form, as convert_ids_to_tokens

  // Messages: the generation prompt by default (vLLM's add_generation_prompt=true), none on request.
  const std::string messages = R"("messages":[{"role":"user","content":"hello world"}])";
  auto with_prompt = parse_object(server.post("/tokenize", "{" + messages + "}").body);
  auto without = parse_object(server.post("/tokenize", "{" + messages + R"(,"add_generation_prompt":false})").body);
  EXPECT_EQ(with_prompt.at("count").as_int64(), without.at("count").as_int64() + 1);  // "<｜Assistant｜>"
  expect_openai_error(
      server.post("/tokenize", "{" + messages + R"(,"add_generation_prompt":true,"continue_final_message":true})"), 400,
      "Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
  expect_openai_error(server.post("/tokenize", "{" + messages + R"(,"add_generation_prompt":"no"})"), 400,
                      "add_generation_prompt", "add_generation_prompt");
  // The chat count is what a chat completion of the same messages reports as prompt_tokens.
  auto completion = parse_object(server.post("/v1/chat/completions", "{" + messages + R"(,"max_tokens":1})").body);
  EXPECT_EQ(completion.at("usage").as_object().at("prompt_tokens").as_int64(), with_prompt.at("count").as_int64());
}

TEST(SimServer, TokenizeAndDetokenizeAnswerEveryFieldValueCleanly) {
  auto codec = deepseek_codec();
  const bool exact = codec != nullptr;
  Server server(Mode::kNoDelay, {}, 30, 10, 4096, std::move(codec));
  const std::pair<const char*, const char*> bases[] = {
      {"/tokenize", R"("prompt":"hi there")"},
      {"/tokenize", R"("messages":[{"role":"user","content":"hi there"}])"},
      {"/detokenize", R"("tokens":[1,2,3])"},
  };
  int answered = 0;
  for (const auto& [path, base] : bases) {
    for (const char* field : request_sweep::kRequestFields) {
      for (const char* value : request_sweep::kBoundaryJsonValues) {
        const std::string body = "{" + std::string(base) + ",\"" + field + "\":" + value + "}";
        const RawResponse response = server.post(path, body);
        const auto object = parse_object(response.body);
        if (response.status == 200) {
          ++answered;
          EXPECT_TRUE(object.contains(std::string_view(path) == "/tokenize" ? "tokens" : "prompt")) << body;
        } else {
          ASSERT_TRUE(response.status == 400 || response.status == 404 || (!exact && response.status == 501))
              << response.status << " " << body << " -> " << response.body;
          EXPECT_TRUE(object.contains("error")) << body;
        }
      }
    }
  }
  EXPECT_GT(answered, 100);
}

TEST(SimServer, UnknownPathIs404AndWrongMethodIs405) {
  Server server;
  expect_openai_error(server.get("/v1/nothing"), 404, "no route");
  auto response = server.get("/v1/completions");
  expect_openai_error(response, 405, "not allowed");
  EXPECT_EQ(response.header("allow"), "POST");
  expect_openai_error(server.post("/metrics", "{}"), 405, "not allowed");
}

TEST(SimServer, HeadIsAllowedWhereGetIsAndSendsNoBody) {
  FaultOptions faults;
  faults.health_delay_ms = 60'000;  // /health answers 503 with an error body for GET
  Server server(Mode::kNoDelay, faults);
  for (const char* path : {"/v1/models", "/metrics", "/version", "/health"}) {
    auto client = RawHttpClient::connect(server.server->port());
    ASSERT_TRUE(client);
    // A HEAD, then a GET on the same connection: a body after the HEAD's head would be read as
    // the GET's response.
    ASSERT_TRUE(client->send(std::string("HEAD ") + path + " HTTP/1.1\r\nHost: x\r\n\r\n" + make_get("/version")));
    std::string bytes;
    char buffer[8192];
    while (bytes.find("ixbench-sim") == std::string::npos) {
      pollfd poll_fd{client->fd(), POLLIN, 0};
      if (::poll(&poll_fd, 1, 3000) <= 0) break;
      const ssize_t got = ::recv(client->fd(), buffer, sizeof(buffer), 0);
      if (got <= 0) break;
      bytes.append(buffer, static_cast<size_t>(got));
    }
    const size_t head_end = bytes.find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos) << path << ": " << bytes;
    const int status = std::string_view(path) == "/health" ? 503 : 200;
    EXPECT_EQ(bytes.compare(0, 13, "HTTP/1.1 " + std::to_string(status) + " "), 0) << path << ": " << bytes;
    EXPECT_EQ(bytes.compare(head_end + 4, 13, "HTTP/1.1 200 "), 0) << path << ": " << bytes;
  }
  auto response = server.exchange("DELETE /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
  expect_openai_error(response, 405, "not allowed");
  EXPECT_EQ(response.header("allow"), "GET, HEAD");
  // HEAD does not open a profiling window.
  EXPECT_EQ(server.exchange("HEAD /start_profile HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status, 405);
  EXPECT_NE(server.get("/metrics").body.find("ixbench:profile_starts_total{model_name=\"test-model\"} 0.0"),
            std::string::npos);
}

TEST(SimServer, ModelsHealthTokenizeVersionAndProfile) {
  Server server;
  auto models = parse_object(server.get("/v1/models").body);
  EXPECT_EQ(models.at("object").as_string(), "list");
  const auto& model = models.at("data").as_array().at(0).as_object();
  EXPECT_EQ(model.at("id").as_string(), "test-model");
  EXPECT_EQ(model.at("max_model_len").as_int64(), 4096);
  EXPECT_EQ(server.get("/health").status, 200);
  auto tokens = parse_object(server.post("/tokenize", R"({"prompt":[3,4,5]})").body);
  EXPECT_EQ(tokens.at("count").as_int64(), 3);
  EXPECT_EQ(tokens.at("tokens").as_array().size(), 3u);
  EXPECT_EQ(tokens.at("max_model_len").as_int64(), 4096);
  auto text_tokens = parse_object(server.post("/tokenize", R"({"prompt":"hello world, again"})").body);
  EXPECT_GT(text_tokens.at("count").as_int64(), 0);
  expect_openai_error(server.post("/tokenize", "[]"), 400, "JSON object");
  // As vLLM's /tokenize: the model, when given, must be one that is served.
  expect_openai_error(server.post("/tokenize", R"({"model":"other","prompt":"hi"})"), 404, "does not exist", "model");
  EXPECT_EQ(server.post("/tokenize", R"({"model":"test-model","prompt":"hi"})").status, 200);
  expect_openai_error(server.post("/tokenize", R"({"model":7,"prompt":"hi"})"), 400, "model", "model");
  EXPECT_EQ(server.get("/version").status, 200);
  EXPECT_EQ(server.post("/start_profile", "").status, 200);
  EXPECT_EQ(server.post("/stop_profile", "").status, 200);
  auto metrics = server.get("/metrics").body;
  EXPECT_NE(metrics.find("ixbench:profile_starts_total{model_name=\"test-model\"} 1.0"), std::string::npos);
  EXPECT_NE(metrics.find("ixbench:profile_stops_total{model_name=\"test-model\"} 1.0"), std::string::npos);
}

TEST(SimServer, MetricsCountRequestsAndTokens) {
  Server server(Mode::kFixed, {}, 5, 1);
  for (int index = 0; index < 3; ++index) {
    server.post("/v1/completions", R"({"prompt":[1,2,3,4],"max_tokens":10,"stream":true})");
  }
  auto response = server.get("/metrics");
  EXPECT_EQ(response.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = response.body;
  EXPECT_NE(text.find("vllm:prompt_tokens_total{engine=\"0\",model_name=\"test-model\"} 12.0"), std::string::npos)
      << text;
  EXPECT_NE(text.find("vllm:generation_tokens_total{engine=\"0\",model_name=\"test-model\"} 30.0"), std::string::npos);
  EXPECT_NE(text.find("vllm:num_requests_running{engine=\"0\",model_name=\"test-model\"} 0.0"), std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"test-model\"} 3.0"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_per_output_token_seconds_count{engine=\"0\",model_name=\"test-model\"} 27.0"),
            std::string::npos);
  EXPECT_NE(
      text.find("vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"test-model\"} 3.0"),
      std::string::npos);
  for (const char* name :
       {"vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
        "vllm:num_requests_waiting", "vllm:spec_decode_num_draft_tokens_total",
        "vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_drafts_total"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + name), std::string::npos) << name;
  }
}

TEST(SimServer, FixedScheduleTimingOverHttp) {
  Server server(Mode::kFixed, {}, 200, 50);
  auto client = RawHttpClient::connect(server.server->port());
  ASSERT_TRUE(client);
  int64_t sent = steady_clock_instance().now_ns();
  ASSERT_TRUE(client->send(make_post("/v1/completions", R"({"prompt":"x","max_tokens":6,"stream":true})")));
  auto response = client->read_response();
  ASSERT_TRUE(response && response->complete);
  ASSERT_EQ(sse_data_lines(response->body).size(), 7u);
  // Token i is due 200 + 50 i ms after receipt and is never sent earlier. (A loaded machine may
  // send it late, together with the next one, and then the next gap is shorter: the schedule is
  // absolute.) Each chunk is checked against the last token it carries.
  int tokens_so_far = 0;
  for (size_t index = 0; index < response->chunks.size(); ++index) {
    const std::string& chunk = response->chunks[index];
    for (size_t pos = chunk.find("data: {"); pos != std::string::npos; pos = chunk.find("data: {", pos + 1)) {
      ++tokens_so_far;
    }
    double arrival_ms = static_cast<double>(response->chunk_times_ns[index] - sent) / 1e6;
    EXPECT_GE(arrival_ms, 200.0 + 50.0 * (tokens_so_far - 1) - 2.0) << index;
  }
  EXPECT_EQ(tokens_so_far, 6);
  double ttft_ms = static_cast<double>(response->chunk_times_ns[0] - sent) / 1e6;
  EXPECT_LT(ttft_ms, 600.0);
  double last_ms = static_cast<double>(response->chunk_times_ns.back() - sent) / 1e6;
  EXPECT_LT(last_ms, 1000.0);
}

// The server's own timing error is exported: one delivery-lateness sample per token event, never
// negative (never early), and small against a 50 ms schedule on an idle machine.
TEST(SimServer, FixedScheduleExportsDeliveryLateness) {
  Server server(Mode::kFixed, {}, 20, 10);
  auto client = RawHttpClient::connect(server.server->port());
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->send(make_post("/v1/completions", R"({"prompt":"x","max_tokens":5,"stream":true})")));
  auto response = client->read_response();
  ASSERT_TRUE(response && response->complete);
  // The stream's samples are merged when the connection lets go of the finished stream.
  std::string metrics;
  for (int attempt = 0; attempt < 100; ++attempt) {
    metrics = server.get("/metrics").body;
    if (metrics.find("ixbench:token_delivery_lateness_seconds_count{model_name=\"test-model\"} 5.0") !=
        std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(metrics.find("ixbench:token_delivery_lateness_seconds_count{model_name=\"test-model\"} 5.0"),
            std::string::npos)
      << metrics;
  // At most one token may be later than 50 ms (a loaded test machine), none beyond 10 s.
  const std::string le50 = "ixbench:token_delivery_lateness_seconds_bucket{le=\"0.05\",model_name=\"test-model\"} ";
  const size_t at = metrics.find(le50);
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GE(std::stod(metrics.substr(at + le50.size())), 4.0);
  // The first token alone, once per stream: what the server adds to a client's TTFT.
  EXPECT_NE(metrics.find("ixbench:first_token_delivery_lateness_seconds_count{model_name=\"test-model\"} 1.0"),
            std::string::npos)
      << metrics;
  const std::string first50 =
      "ixbench:first_token_delivery_lateness_seconds_bucket{le=\"0.05\",model_name=\"test-model\"} ";
  const size_t first_at = metrics.find(first50);
  ASSERT_NE(first_at, std::string::npos) << metrics;
  EXPECT_EQ(std::stod(metrics.substr(first_at + first50.size())), 1.0);
}

// With several loop threads each connection's loop produces its own stream's events from its
// timers (no engine thread): every stream gets every token, none early, all counted.
TEST(SimServer, FixedScheduleIsDeliveredByEachConnectionsLoop) {
  const Clock& clock = steady_clock_instance();
  auto engine = std::make_unique<FixedScheduleEngine>(20.0, 5.0, 4096, clock);
  FixedScheduleEngine* fixed = engine.get();
  SimServeOptions options;
  options.port = 0;
  options.threads = 4;
  options.model_name = "test-model";
  auto started = SimServer::start(options, std::move(engine), make_fallback_codec());
  ASSERT_TRUE(started) << started.error().message();
  SimServer& server = **started;

  constexpr int kStreams = 32;
  constexpr int kTokens = 20;
  std::vector<std::string> problems(kStreams);
  std::vector<std::thread> clients;
  for (int stream = 0; stream < kStreams; ++stream) {
    clients.emplace_back([&, stream] {
      auto client = RawHttpClient::connect(server.port());
      if (!client) {
        problems[stream] = "connect failed";
        return;
      }
      const int64_t sent = clock.now_ns();
      client->send(make_post("/v1/completions", R"({"prompt":"x","max_tokens":20,"stream":true})"));
      auto response = client->read_response(10.0);
      if (!response || !response->complete) {
        problems[stream] = "incomplete response";
        return;
      }
      auto lines = sse_data_lines(response->body);
      if (lines.size() != kTokens + 1 || lines.back() != "[DONE]") {
        problems[stream] = "got " + std::to_string(lines.size()) + " events";
        return;
      }
      // Token i is due 20 + 5 i ms after the request was admitted (after `sent`): never earlier.
      int tokens_so_far = 0;
      for (size_t index = 0; index < response->chunks.size(); ++index) {
        const std::string& chunk = response->chunks[index];
        for (size_t pos = chunk.find("data: {"); pos != std::string::npos; pos = chunk.find("data: {", pos + 1)) {
          ++tokens_so_far;
        }
        const int64_t due = sent + 20'000'000 + 5'000'000 * int64_t{std::max(tokens_so_far - 1, 0)};
        if (tokens_so_far > 0 && response->chunk_times_ns[index] < due) {
          problems[stream] = "token " + std::to_string(tokens_so_far) + " early";
          return;
        }
      }
    });
  }
  for (auto& client : clients) client.join();
  for (int stream = 0; stream < kStreams; ++stream) EXPECT_EQ(problems[stream], "") << stream;
  EXPECT_FALSE(fixed->delivery_thread_started());

  const std::string count = "ixbench:token_delivery_lateness_seconds_count{model_name=\"test-model\"} 640.0";
  std::string metrics;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto client = RawHttpClient::connect(server.port());
    ASSERT_TRUE(client);
    ASSERT_TRUE(client->send(make_get("/metrics")));
    auto response = client->read_response(10.0);
    ASSERT_TRUE(response);
    metrics = response->body;
    if (metrics.find(count) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(metrics.find(count), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("vllm:generation_tokens_total{engine=\"0\",model_name=\"test-model\"} 640.0"),
            std::string::npos);
  EXPECT_NE(metrics.find("vllm:num_requests_running{engine=\"0\",model_name=\"test-model\"} 0.0"), std::string::npos);
  EXPECT_NE(metrics.find(
                "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"test-model\"} 32.0"),
            std::string::npos);
}

TEST(SimServer, FixedScheduleWithZeroItlSendsEveryTokenWithTheFirst) {
  Server server(Mode::kFixed, {}, 20, 0);
  auto response = server.post("/v1/completions", R"({"prompt":"x","max_tokens":50,"stream":true})");
  EXPECT_EQ(sse_data_lines(response.body).size(), 51u);
}

TEST(SimServer, ClientDisconnectCancelsTheEngineRequest) {
  Server server(Mode::kFixed, {}, 1, 50);
  {
    auto client = RawHttpClient::connect(server.server->port());
    ASSERT_TRUE(client);
    ASSERT_TRUE(client->send(make_post("/v1/completions", R"({"prompt":"x","max_tokens":4000,"stream":true})")));
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    auto metrics = server.get("/metrics").body;
    EXPECT_NE(metrics.find("vllm:num_requests_running{engine=\"0\",model_name=\"test-model\"} 1.0"), std::string::npos);
  }
  std::string metrics;
  for (int attempt = 0; attempt < 100; ++attempt) {
    metrics = server.get("/metrics").body;
    if (metrics.find("vllm:num_requests_running{engine=\"0\",model_name=\"test-model\"} 0.0") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(metrics.find("vllm:num_requests_running{engine=\"0\",model_name=\"test-model\"} 0.0"), std::string::npos);
  EXPECT_NE(metrics.find("finished_reason=\"abort\",model_name=\"test-model\"} 1.0"), std::string::npos);
}

// --- fault injection ---------------------------------------------------------------------------

// The longest gap between two consecutive reads of a response (a stall shows as one).
int64_t longest_gap_ns(const std::vector<int64_t>& chunk_times_ns) {
  int64_t longest = 0;
  for (size_t chunk = 1; chunk < chunk_times_ns.size(); ++chunk)
    longest = std::max(longest, chunk_times_ns[chunk] - chunk_times_ns[chunk - 1]);
  return longest;
}

TEST(SimServerFaults, ErrorRateAnswersWithConfiguredCodes) {
  FaultOptions faults;
  faults.error_rate = 1.0;
  faults.error_codes = {429, 503};
  Server server(Mode::kNoDelay, faults);
  std::set<int> seen;
  for (int index = 0; index < 30; ++index) {
    auto response = server.post("/v1/completions", R"({"prompt":"x","max_tokens":3,"stream":true})");
    seen.insert(response.status);
    expect_openai_error(response, response.status, "injected fault");
  }
  EXPECT_EQ(seen, (std::set<int>{429, 503}));
}

TEST(SimServerFaults, StallPausesMidStream) {
  FaultOptions faults;
  faults.stall_rate = 1.0;
  faults.stall_ms = 300;
  Server server(Mode::kFixed, faults, 1, 5);
  auto client = RawHttpClient::connect(server.server->port());
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->send(make_post("/v1/completions", R"({"prompt":"x","max_tokens":10,"stream":true})")));
  auto response = client->read_response();
  ASSERT_TRUE(response && response->complete);
  EXPECT_EQ(sse_data_lines(response->body).size(), 11u);
  EXPECT_GE(longest_gap_ns(response->chunk_times_ns), 280'000'000);
}

TEST(SimServerFaults, DropClosesTheConnectionMidStream) {
  FaultOptions faults;
  faults.drop_rate = 1.0;
  Server server(Mode::kNoDelay, faults);
  auto response = server.post("/v1/completions", R"({"prompt":"x","max_tokens":20,"stream":true})");
  EXPECT_EQ(response.status, 200);
  EXPECT_FALSE(response.complete);
  auto lines = sse_data_lines(response.body);
  EXPECT_GE(lines.size(), 1u);
  EXPECT_LT(lines.size(), 20u);
  EXPECT_EQ(response.body.find("[DONE]"), std::string::npos);
}

TEST(SimServerFaults, MalformedEventIsInsertedOnce) {
  FaultOptions faults;
  faults.malformed_rate = 1.0;
  Server server(Mode::kNoDelay, faults);
  auto response = server.post("/v1/completions", R"({"prompt":"x","max_tokens":20,"stream":true})");
  ASSERT_TRUE(response.complete);
  auto lines = sse_data_lines(response.body);
  ASSERT_EQ(lines.size(), 22u);  // 20 tokens + 1 malformed + [DONE]
  int malformed = 0;
  for (const auto& line : lines) {
    if (line == "[DONE]") continue;
    boost::system::error_code ec;
    bj::parse(line, ec);
    malformed += ec ? 1 : 0;
  }
  EXPECT_EQ(malformed, 1);
}

TEST(SimServerFaults, ShortFinishesEarlyWithStop) {
  FaultOptions faults;
  faults.short_rate = 1.0;
  Server server(Mode::kNoDelay, faults);
  auto response = server.post("/v1/completions", R"({"prompt":"x","max_tokens":50,"stream":true,)"
                                                 R"("stream_options":{"include_usage":true}})");
  auto lines = sse_data_lines(response.body);
  ASSERT_GE(lines.size(), 3u);
  int64_t completion = parse_object(lines[lines.size() - 2]).at("usage").at("completion_tokens").as_int64();
  EXPECT_GE(completion, 1);
  EXPECT_LT(completion, 50);
  EXPECT_EQ(static_cast<int64_t>(lines.size()), completion + 2);
  auto last = parse_object(lines[lines.size() - 3]);
  EXPECT_EQ(last.at("choices").as_array().at(0).at("finish_reason").as_string(), "stop");
}

TEST(SimServerFaults, HealthDelayThen200) {
  FaultOptions faults;
  faults.health_delay_ms = 300;
  Server server(Mode::kNoDelay, faults);
  expect_openai_error(server.get("/health"), 503, "starting");
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_EQ(server.get("/health").status, 200);
}

TEST(SimServerFaults, NonStreamingFaults) {
  FaultOptions drop;
  drop.drop_rate = 1.0;
  Server dropping(Mode::kNoDelay, drop);
  auto client = RawHttpClient::connect(dropping.server->port());
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->send(make_post("/v1/completions", R"({"prompt":"x","max_tokens":5})")));
  EXPECT_FALSE(client->read_response(3.0));

  FaultOptions malformed;
  malformed.malformed_rate = 1.0;
  Server malforming(Mode::kNoDelay, malformed);
  auto response = malforming.post("/v1/completions", R"({"prompt":"x","max_tokens":5})");
  EXPECT_EQ(response.status, 200);
  boost::system::error_code ec;
  bj::parse(response.body, ec);
  EXPECT_TRUE(ec);
}

// Mid-stream faults are drawn at a token position in [1, max_tokens - 1]; a request whose events
// carry several tokens, or that ends before that position, still gets its fault (it used to get
// none when the drawn event count was never reached, while injected_faults_total counted it).
TEST(SimServerFaults, DropHappensWhenEventsCarrySeveralTokens) {
  FaultOptions faults;
  faults.drop_rate = 1.0;
  Server server(std::make_unique<BurstEngine>(4, 0), faults);
  for (int index = 0; index < 12; ++index) {
    auto response = server.post("/v1/completions", R"({"prompt":"x","max_tokens":20,"stream":true,"ignore_eos":true})");
    EXPECT_EQ(response.status, 200);
    EXPECT_FALSE(response.complete) << response.body;
    EXPECT_EQ(response.body.find("[DONE]"), std::string::npos) << response.body;
    EXPECT_EQ(response.body.find("\"finish_reason\":\"length\""), std::string::npos) << response.body;
    EXPECT_GE(sse_data_lines(response.body).size(), 1u);
  }
  auto metrics = server.get("/metrics").body;
  EXPECT_NE(metrics.find("ixbench:injected_faults_total{model_name=\"test-model\"} 12.0"), std::string::npos);
  EXPECT_NE(metrics.find("finished_reason=\"abort\",model_name=\"test-model\"} 12.0"), std::string::npos) << metrics;
}

int count_malformed(const std::vector<std::string>& lines) {
  int malformed = 0;
  for (const auto& line : lines) {
    if (line == "[DONE]") continue;
    boost::system::error_code ec;
    bj::parse(line, ec);
    malformed += ec ? 1 : 0;
  }
  return malformed;
}

TEST(SimServerFaults, MalformedAndStallHappenWhenANaturalStopComesFirst) {
  FaultOptions faults;
  faults.malformed_rate = 1.0;
  faults.stall_rate = 1.0;
  faults.stall_ms = 150;
  // Three tokens, then a natural EOS, while the positions are drawn in [1, 49].
  Server server(std::make_unique<BurstEngine>(1, 3), faults);
  for (int index = 0; index < 4; ++index) {
    auto client = RawHttpClient::connect(server.server->port());
    ASSERT_TRUE(client);
    ASSERT_TRUE(client->send(make_post("/v1/completions", R"({"prompt":"x","max_tokens":50,"stream":true})")));
    auto response = client->read_response();
    ASSERT_TRUE(response && response->complete);
    auto lines = sse_data_lines(response->body);
    ASSERT_EQ(lines.size(), 5u) << response->body;  // 3 tokens + 1 malformed + [DONE]
    EXPECT_EQ(count_malformed(lines), 1) << response->body;
    EXPECT_EQ(lines.back(), "[DONE]");
    // The last token event (finish_reason stop) comes after the faults.
    EXPECT_NE(lines[lines.size() - 2].find("\"finish_reason\":\"stop\""), std::string::npos) << response->body;
    EXPECT_GE(longest_gap_ns(response->chunk_times_ns), 130'000'000);
  }
}

TEST(SimServerFaults, ASingleTokenRequestIsDroppedBeforeDone) {
  FaultOptions drop;
  drop.drop_rate = 1.0;
  Server dropping(Mode::kNoDelay, drop);
  auto dropped = dropping.post("/v1/completions", R"({"prompt":"x","max_tokens":1,"stream":true})");
  EXPECT_FALSE(dropped.complete);
  EXPECT_EQ(dropped.body.find("[DONE]"), std::string::npos) << dropped.body;

  FaultOptions malformed;
  malformed.malformed_rate = 1.0;
  Server malforming(Mode::kNoDelay, malformed);
  auto response = malforming.post("/v1/completions", R"({"prompt":"x","max_tokens":1,"stream":true})");
  ASSERT_TRUE(response.complete);
  auto lines = sse_data_lines(response.body);
  EXPECT_EQ(lines.size(), 3u) << response.body;
  EXPECT_EQ(count_malformed(lines), 1) << response.body;
}

TEST(SimServerFaults, NoShortFaultWhenMinTokensEqualsMaxTokens) {
  FaultOptions faults;
  faults.short_rate = 1.0;
  Server server(Mode::kNoDelay, faults);
  auto body = parse_object(server.post("/v1/completions", R"({"prompt":"x","max_tokens":6,"min_tokens":6})").body);
  EXPECT_EQ(body.at("usage").at("completion_tokens").as_int64(), 6);
  EXPECT_EQ(body.at("choices").at(0).at("finish_reason").as_string(), "length");
  auto metrics = server.get("/metrics").body;
  EXPECT_NE(metrics.find("ixbench:injected_faults_total{model_name=\"test-model\"} 0.0"), std::string::npos);
}

}  // namespace
}  // namespace ix::serve
