// Parsing of OpenAI request bodies: accepted shapes and the 400 errors for everything else.
#include "serve/openai_request.h"

#include <gtest/gtest.h>

namespace ix::serve {
namespace {

TEST(OpenAiRequest, ParsesStreamingCompletionWithAllHonouredFields) {
  auto parsed = parse_openai_request(
      R"({"model":"m","prompt":"hi","max_tokens":32,"stream":true,"stream_options":{"include_usage":true},)"
      R"("ignore_eos":true,"stop":["\n\n","END"],"temperature":0.0,"user":"u1"})",
      ApiKind::kCompletion);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->model, "m");
  EXPECT_EQ(parsed->prompt_text, "hi");
  EXPECT_EQ(parsed->max_tokens, 32);
  EXPECT_TRUE(parsed->stream);
  EXPECT_TRUE(parsed->include_usage);
  EXPECT_TRUE(parsed->ignore_eos);
  EXPECT_EQ(parsed->stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(parsed->user, "u1");
}

TEST(OpenAiRequest, AcceptsEveryPromptForm) {
  auto ids = parse_openai_request(R"({"prompt":[1,2,3]})", ApiKind::kCompletion);
  ASSERT_TRUE(ids);
  EXPECT_EQ(ids->prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  auto nested = parse_openai_request(R"({"prompt":[[4,5]]})", ApiKind::kCompletion);
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->prompt_ids, (std::vector<int32_t>{4, 5}));
  auto single = parse_openai_request(R"({"prompt":["text"]})", ApiKind::kCompletion);
  ASSERT_TRUE(single);
  EXPECT_EQ(single->prompt_text, "text");
}

TEST(OpenAiRequest, ParsesChatMessagesWithTextParts) {
  auto parsed = parse_openai_request(
      R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":null}],"max_completion_tokens":7,"max_tokens":3})",
      ApiKind::kChat);
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_EQ(parsed->messages.size(), 3u);
  EXPECT_EQ(parsed->messages[1].content, "ab");
  EXPECT_EQ(parsed->messages[2].content, "");
  EXPECT_EQ(parsed->max_tokens, 7);  // max_completion_tokens wins
}

TEST(OpenAiRequest, BadRequestsGet400WithAMessageNamingTheProblem) {
  struct Case {
    const char* body;
    ApiKind kind;
    const char* expected;
  };
  const Case cases[] = {
      {"", ApiKind::kCompletion, "empty"},
      {"{not json", ApiKind::kCompletion, "malformed JSON"},
      {"[1,2]", ApiKind::kCompletion, "JSON object"},
      {R"({"max_tokens":3})", ApiKind::kCompletion, "missing required field 'prompt'"},
      {R"({"prompt":5})", ApiKind::kCompletion, "'prompt'"},
      {R"({"prompt":[]})", ApiKind::kCompletion, "must not be empty"},
      {R"({"prompt":["a","b"]})", ApiKind::kCompletion, "batched"},
      {R"({"prompt":[1,"x"]})", ApiKind::kCompletion, "token ids"},
      {R"({"prompt":[-1]})", ApiKind::kCompletion, "outside"},
      {R"({"prompt":"x","max_tokens":"3"})", ApiKind::kCompletion, "'max_tokens' must be an integer"},
      {R"({"prompt":"x","max_tokens":2.5})", ApiKind::kCompletion, "'max_tokens' must be an integer"},
      {R"({"prompt":"x","max_tokens":0})", ApiKind::kCompletion, "at least 1"},
      {R"({"prompt":"x","stream":"yes"})", ApiKind::kCompletion, "'stream' must be a boolean"},
      {R"({"prompt":"x","stream_options":{"include_usage":true}})", ApiKind::kCompletion, "stream=True"},
      {R"({"prompt":"x","stream":true,"stream_options":{"include_usage":1}})", ApiKind::kCompletion, "include_usage"},
      {R"({"prompt":"x","stop":3})", ApiKind::kCompletion, "'stop'"},
      {R"({"prompt":"x","n":2})", ApiKind::kCompletion, "n=1"},
      {R"({"prompt":"x","model":7})", ApiKind::kCompletion, "'model' must be a string"},
      {R"({"prompt":"x","temperature":"hot"})", ApiKind::kCompletion, "'temperature' must be a number"},
      {R"({"prompt":"x","ignore_eos":1})", ApiKind::kCompletion, "'ignore_eos' must be a boolean"},
      {R"({"max_tokens":3})", ApiKind::kChat, "missing required field 'messages'"},
      {R"({"messages":[]})", ApiKind::kChat, "must not be empty"},
      {R"({"messages":"hi"})", ApiKind::kChat, "'messages' must be an array"},
      {R"({"messages":[{"content":"x"}]})", ApiKind::kChat, "messages[0].role"},
      {R"({"messages":[{"role":"user","content":5}]})", ApiKind::kChat, "messages[0].content"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", ApiKind::kChat, "type \"text\""},
  };
  for (const auto& test_case : cases) {
    auto parsed = parse_openai_request(test_case.body, test_case.kind);
    ASSERT_FALSE(parsed) << test_case.body;
    EXPECT_EQ(parsed.error().status, 400) << test_case.body;
    EXPECT_EQ(parsed.error().type, "BadRequestError");
    EXPECT_NE(parsed.error().message.find(test_case.expected), std::string::npos)
        << test_case.body << " -> " << parsed.error().message;
  }
}

TEST(OpenAiRequest, MalformedJsonErrorCarriesLineAndColumn) {
  auto parsed = parse_openai_request("{\n  \"prompt\": \"x\",,\n}", ApiKind::kCompletion);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("2:"), std::string::npos) << parsed.error().message;
}

TEST(OpenAiRequest, TokenizeAcceptsPromptOrMessages) {
  auto prompt = parse_tokenize_request(R"({"model":"m","prompt":"hello"})");
  ASSERT_TRUE(prompt);
  EXPECT_EQ(prompt->prompt_text, "hello");
  EXPECT_FALSE(prompt->is_chat);
  auto chat = parse_tokenize_request(R"({"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(chat);
  EXPECT_TRUE(chat->is_chat);
  EXPECT_FALSE(parse_tokenize_request(R"({"model":"m"})"));
}

}  // namespace
}  // namespace ix::serve
