#include "openai/backend.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/json_io.h"
#include "support/subprocess.h"

namespace ix::openai {
namespace {

TEST(Backend, NamesAndEndpoints) {
  for (const char* name : {"vllm", "sglang", "openai", "openai-chat", "trt", "atom"}) {
    auto b = parse_backend(name);
    ASSERT_TRUE(b.has_value()) << name;
    EXPECT_EQ(backend_name(*b), name);
  }
  // vLLM's tensorrt-llm client speaks Triton's generate_stream protocol: refused, not silently trt.
  auto triton = parse_backend("tensorrt-llm");
  ASSERT_FALSE(triton.has_value());
  EXPECT_NE(triton.error().message().find("--backend trt"), std::string::npos) << triton.error().message();
  EXPECT_FALSE(parse_backend("tgi").has_value());
  EXPECT_EQ(default_endpoint(Backend::kVllm), "/v1/completions");
  EXPECT_EQ(default_endpoint(Backend::kOpenaiChat), "/v1/chat/completions");
}

// The fields of InferenceX's client (utils/bench_serving/backend_request_func.py), in its order.
TEST(Backend, BodiesCarryInferenceXsFieldsInItsOrder) {
  const CompletionRequest r{.model = "m", .prompt = "hello", .max_tokens = 8, .ignore_eos = true};
  auto keys_of = [](const std::string& body) {
    std::vector<std::string> keys;
    const boost::json::value parsed = boost::json::parse(body);
    for (const auto& [key, value] : parsed.as_object()) keys.emplace_back(key);
    return keys;
  };
  const std::vector<std::string> completions = {"model",    "prompt", "temperature",    "best_of",   "max_tokens",
                                                "logprobs", "stream", "stream_options", "ignore_eos"};
  const std::vector<std::string> chat = {"model",  "messages",       "temperature", "max_completion_tokens",
                                         "stream", "stream_options", "ignore_eos"};
  for (Backend b : {Backend::kVllm, Backend::kSglang, Backend::kOpenai, Backend::kTrt, Backend::kAtom})
    EXPECT_EQ(keys_of(build_request_body(b, r)), completions) << backend_name(b);
  EXPECT_EQ(keys_of(build_request_body(Backend::kOpenaiChat, r)), chat);
  // continuous_usage_stats only where the engine is known to accept it.
  for (Backend b : {Backend::kVllm, Backend::kSglang, Backend::kTrt}) EXPECT_TRUE(supports_continuous_usage(b));
  for (Backend b : {Backend::kOpenai, Backend::kOpenaiChat, Backend::kAtom}) EXPECT_FALSE(supports_continuous_usage(b));
}

// Every backend's body as bench serve sends it by default (golden; IXBENCH_UPDATE_GOLDENS=1
// rewrites it).
TEST(Backend, RequestBodiesGolden) {
  std::string text;
  for (const char* name : {"vllm", "sglang", "openai", "openai-chat", "trt", "atom"}) {
    const Backend b = *parse_backend(name);
    const CompletionRequest r{.model = "deepseek-ai/DeepSeek-R1-0528",
                              .prompt = "hello",
                              .max_tokens = 1024,
                              .ignore_eos = true,
                              .continuous_usage = supports_continuous_usage(b)};
    text += fmt::format("{} {}\n{}\n", name, default_endpoint(b), build_request_body(b, r));
  }
  const std::string golden = ix::testing::source_path("tests/data/openai/request_bodies.golden");
  if (std::getenv("IXBENCH_UPDATE_GOLDENS")) std::ofstream(golden) << text;
  std::ifstream in(golden);
  ASSERT_TRUE(in) << "missing " << golden << " (run with IXBENCH_UPDATE_GOLDENS=1)";
  std::stringstream buffer;
  buffer << in.rdbuf();
  EXPECT_EQ(text, buffer.str());
}

TEST(Backend, LogprobsGoIntoCompletionsBodies) {
  CompletionRequest r{.model = "m", .prompt = "p", .max_tokens = 2, .logprobs = 3};
  EXPECT_NE(build_request_body(Backend::kSglang, r).find(R"("logprobs": 3,)"), std::string::npos)
      << build_request_body(Backend::kSglang, r);
  r.logprobs = 0;
  EXPECT_NE(build_request_body(Backend::kVllm, r).find(R"("logprobs": 0,)"), std::string::npos);
}

TEST(Backend, ChatBodyUsesMessagesAndExtraBody) {
  // A non-object --extra-body is refused by bench serve before the run (bench_serve_test).
  const boost::json::object extra{{"top_k", 1}, {"temperature", 0.6}};
  CompletionRequest r{.model = "m", .prompt = "q", .max_tokens = 3, .extra_body = &extra};
  EXPECT_EQ(build_request_body(Backend::kOpenaiChat, r),
            R"({"model": "m", "messages": [{"role": "user", "content": "q"}], "temperature": 0.6, )"
            R"("max_completion_tokens": 3, "stream": true, "stream_options": {"include_usage": true}, "top_k": 1})");
}

TEST(StreamChunkDecoder, ReadsTextUsageFinishAndDone) {
  StreamChunkDecoder d;
  auto a = d.decode(
      R"({"id":"x","choices":[{"index":0,"text":"Hi","finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}})");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, StreamChunk::Kind::kData);
  EXPECT_TRUE(a->has_choices);
  EXPECT_EQ(a->text, "Hi");
  EXPECT_EQ(a->completion_tokens, 2);
  EXPECT_EQ(a->prompt_tokens, 5);
  EXPECT_FALSE(a->finished);
  auto b = d.decode(R"({"choices":[{"delta":{"role":"assistant","content":"!"},"finish_reason":"length"}]})");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->text, "!");
  EXPECT_TRUE(b->finished);
  auto u = d.decode(R"({"choices":[],"usage":{"completion_tokens":9}})");
  ASSERT_TRUE(u.has_value());
  EXPECT_FALSE(u->has_choices);
  EXPECT_EQ(u->completion_tokens, 9);
  auto done = d.decode("[DONE]");
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->kind, StreamChunk::Kind::kDone);
  auto err = d.decode(R"({"error":{"message":"overloaded","code":503}})");
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->kind, StreamChunk::Kind::kError);
  EXPECT_EQ(err->error, "overloaded");
}

TEST(StreamChunkDecoder, MalformedPayloadsAreParseErrors) {
  StreamChunkDecoder d;
  const std::string good = R"({"choices":[{"text":"abc"}]})";
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = d.decode(std::string_view(good).substr(0, n));
    EXPECT_FALSE(r.has_value()) << n;
  }
  EXPECT_FALSE(d.decode("[1,2]").has_value());
  EXPECT_TRUE(d.decode(good).has_value());
  // A large chunk overflows the stack arena and still parses.
  const std::string big = R"({"choices":[{"text":")" + std::string(50000, 'x') + R"("}]})";
  auto r = d.decode(big);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->text.size(), 50000u);
}

}  // namespace
}  // namespace ix::openai
