#include "openai/backend.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "common/json_io.h"

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

TEST(Backend, CompletionsBodyMatchesVllmBenchmark) {
  CompletionRequest r{.model = "m",
                      .prompt = "hello",
                      .max_tokens = 8,
                      .ignore_eos = true,
                      .continuous_usage = true,
                      .extra_body = nullptr};
  EXPECT_EQ(build_request_body(Backend::kVllm, r),
            R"({"model": "m", "prompt": "hello", "temperature": 0.0, "repetition_penalty": 1.0, "max_tokens": 8, )"
            R"("logprobs": null, "stream": true, "stream_options": {"include_usage": true, )"
            R"("continuous_usage_stats": true}, "ignore_eos": true})");
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
