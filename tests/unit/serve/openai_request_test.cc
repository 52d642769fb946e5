// Parsing of OpenAI request bodies: accepted shapes and the 400 errors for everything else.
#include "serve/openai_request.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iterator>
#include <random>
#include <string>

#include "request_field_values.h"

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

TEST(OpenAiRequest, LogprobsEchoAndPromptLogprobsAreRefusedNamingTheField) {
  // The simulator has no token probabilities: these were silently answered with "logprobs": null.
  struct Case {
    const char* body;
    ApiKind kind;
    const char* param;
    const char* expected;
  };
  const Case cases[] = {
      {R"({"prompt":"x","logprobs":5})", ApiKind::kCompletion, "logprobs", "does not produce logprobs"},
      {R"({"prompt":"x","logprobs":0})", ApiKind::kCompletion, "logprobs", "\"logprobs\": null"},
      {R"({"prompt":"x","logprobs":true})", ApiKind::kCompletion, "logprobs", "an integer or null"},
      {R"({"prompt":"x","echo":true})", ApiKind::kCompletion, "echo", "echo"},
      {R"({"prompt":"x","echo":"no"})", ApiKind::kCompletion, "echo", "'echo' must be a boolean"},
      {R"({"prompt":"x","prompt_logprobs":1})", ApiKind::kCompletion, "prompt_logprobs", "prompt logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":true})", ApiKind::kChat, "logprobs",
       "does not produce logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":1})", ApiKind::kChat, "logprobs",
       "'logprobs' must be a boolean"},
      {R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":0})", ApiKind::kChat, "top_logprobs",
       "\"top_logprobs\": null"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":false,"top_logprobs":5})", ApiKind::kChat,
       "top_logprobs", "does not produce logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"echo":true})", ApiKind::kChat, "echo", "echo"},
  };
  for (const auto& test_case : cases) {
    auto parsed = parse_openai_request(test_case.body, test_case.kind);
    ASSERT_FALSE(parsed) << test_case.body;
    EXPECT_EQ(parsed.error().status, 400) << test_case.body;
    EXPECT_EQ(parsed.error().param, test_case.param) << test_case.body;
    EXPECT_NE(parsed.error().message.find(test_case.expected), std::string::npos)
        << test_case.body << " -> " << parsed.error().message;
  }
  // What benchmark clients send stays accepted.
  EXPECT_TRUE(parse_openai_request(R"({"prompt":"x","logprobs":null,"echo":false})", ApiKind::kCompletion));
  EXPECT_TRUE(parse_openai_request(R"({"messages":[{"role":"user","content":"x"}],"logprobs":false,)"
                                   R"("top_logprobs":null,"echo":false})",
                                   ApiKind::kChat));
  EXPECT_TRUE(parse_openai_request(R"({"messages":[{"role":"user","content":"x"}],"logprobs":null})", ApiKind::kChat));
}

TEST(OpenAiRequest, SamplingParametersOutsideVllmsRangesAreRefused) {
  struct Case {
    const char* fields;
    const char* param;
    const char* expected;
  };
  const Case cases[] = {
      {R"("temperature":-0.5)", "temperature", "temperature must be non-negative, got -0.5."},
      {R"("top_p":0)", "top_p", "top_p must be in (0, 1], got 0."},
      {R"("top_p":1.5)", "top_p", "top_p must be in (0, 1], got 1.5."},
      {R"("presence_penalty":2.5)", "presence_penalty", "presence_penalty must be in [-2, 2], got 2.5."},
      {R"("frequency_penalty":-3)", "frequency_penalty", "frequency_penalty must be in [-2, 2], got -3."},
      {R"("repetition_penalty":0)", "repetition_penalty", "greater than zero"},
      {R"("min_p":1.5)", "min_p", "min_p must be in [0, 1]"},
      {R"("top_k":-2)", "top_k", "top_k must be 0 (disable), or at least 1, got -2."},
      {R"("top_k":1.5)", "top_k", "'top_k' must be an integer"},
      {R"("seed":"s")", "seed", "'seed' must be an integer"},
      {R"("top_p":"high")", "top_p", "'top_p' must be a number"},
  };
  for (const auto& test_case : cases) {
    for (ApiKind kind : {ApiKind::kCompletion, ApiKind::kChat}) {
      const std::string prompt =
          kind == ApiKind::kCompletion ? R"("prompt":"x",)" : R"("messages":[{"role":"user","content":"x"}],)";
      const std::string body = "{" + prompt + test_case.fields + "}";
      auto parsed = parse_openai_request(body, kind);
      ASSERT_FALSE(parsed) << body;
      EXPECT_EQ(parsed.error().status, 400);
      EXPECT_EQ(parsed.error().param, test_case.param) << body;
      EXPECT_NE(parsed.error().message.find(test_case.expected), std::string::npos)
          << body << " -> " << parsed.error().message;
    }
  }
  // The edges of the ranges are valid.
  EXPECT_TRUE(parse_openai_request(R"({"prompt":"x","temperature":0,"top_p":1,"presence_penalty":-2,)"
                                   R"("frequency_penalty":2,"top_k":-1,"min_p":0,"repetition_penalty":1.1,"seed":3})",
                                   ApiKind::kCompletion));
}

TEST(OpenAiRequest, ContinuousUsageStatsNeedsIncludeUsage) {
  // vLLM sends per-chunk usage only when include_usage and continuous_usage_stats are both true.
  auto alone = parse_openai_request(R"({"prompt":"x","stream":true,"stream_options":{"continuous_usage_stats":true}})",
                                    ApiKind::kCompletion);
  ASSERT_TRUE(alone);
  EXPECT_FALSE(alone->continuous_usage);
  EXPECT_FALSE(alone->include_usage);
  auto both = parse_openai_request(
      R"({"prompt":"x","stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}})",
      ApiKind::kCompletion);
  ASSERT_TRUE(both);
  EXPECT_TRUE(both->continuous_usage);
}

TEST(OpenAiRequest, MinTokensStopTokenIdsTruncationAndSpecialTokens) {
  auto parsed = parse_openai_request(
      R"({"prompt":"x","max_tokens":10,"min_tokens":4,"stop_token_ids":[7,9],"include_stop_str_in_output":true,)"
      R"("add_special_tokens":false,"truncate_prompt_tokens":3})",
      ApiKind::kCompletion);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->min_tokens, 4);
  EXPECT_EQ(parsed->stop_token_ids, (std::vector<int32_t>{7, 9}));
  EXPECT_TRUE(parsed->include_stop_str_in_output);
  EXPECT_FALSE(parsed->add_special_tokens);
  EXPECT_EQ(parsed->truncate_prompt_tokens, 3);
  // Defaults: completions add special tokens, chat does not (its template holds them).
  EXPECT_TRUE(parse_openai_request(R"({"prompt":"x"})", ApiKind::kCompletion)->add_special_tokens);
  EXPECT_FALSE(
      parse_openai_request(R"({"messages":[{"role":"user","content":"x"}]})", ApiKind::kChat)->add_special_tokens);
  EXPECT_EQ(parse_openai_request(R"({"prompt":"x","truncate_prompt_tokens":-1})", ApiKind::kCompletion)
                ->truncate_prompt_tokens,
            -1);
  EXPECT_FALSE(parse_tokenize_request(R"({"prompt":"x","add_special_tokens":false})")->add_special_tokens);
  EXPECT_TRUE(parse_tokenize_request(R"({"prompt":"x"})")->add_special_tokens);

  struct Case {
    const char* body;
    const char* param;
    const char* expected;
  };
  const Case cases[] = {
      {R"({"prompt":"x","max_tokens":5,"min_tokens":6})", "min_tokens",
       "min_tokens must be less than or equal to max_tokens=5, got 6."},
      {R"({"prompt":"x","min_tokens":-1})", "min_tokens", "min_tokens must be greater than or equal to 0, got -1."},
      {R"({"prompt":"x","stop_token_ids":[1,"a"]})", "stop_token_ids", "'stop_token_ids' must be an array"},
      {R"({"prompt":"x","stop_token_ids":[-3]})", "stop_token_ids", "outside [0, 2^31)"},
      {R"({"prompt":"x","stop_token_ids":5})", "stop_token_ids", "'stop_token_ids' must be an array"},
      {R"({"prompt":"x","include_stop_str_in_output":1})", "include_stop_str_in_output", "must be a boolean"},
      {R"({"prompt":"x","add_special_tokens":"no"})", "add_special_tokens", "must be a boolean"},
      {R"({"prompt":"x","truncate_prompt_tokens":0})", "truncate_prompt_tokens",
       "truncate_prompt_tokens must be an integer >= 1 or -1, got 0."},
      {R"({"prompt":"x","truncate_prompt_tokens":-2})", "truncate_prompt_tokens", ">= 1 or -1, got -2."},
      {R"({"prompt":"x","stop":""})", "stop", "stop cannot contain an empty string."},
      {R"({"prompt":"x","stop":["a",""]})", "stop", "stop cannot contain an empty string."},
      {R"({"prompt":""})", "prompt", "'prompt' must not be empty"},
      {R"({"prompt":[""]})", "prompt", "'prompt' must not be empty"},
  };
  for (const auto& test_case : cases) {
    auto refused = parse_openai_request(test_case.body, ApiKind::kCompletion);
    ASSERT_FALSE(refused) << test_case.body;
    EXPECT_EQ(refused.error().param, test_case.param) << test_case.body;
    EXPECT_NE(refused.error().message.find(test_case.expected), std::string::npos)
        << test_case.body << " -> " << refused.error().message;
  }
}

TEST(OpenAiRequest, ErrorJsonNamesTheParam) {
  EXPECT_EQ(error_json(ApiError{400, "BadRequestError", "bad \"x\"", "top_p"}),
            R"({"error":{"message":"bad \"x\"","type":"BadRequestError","param":"top_p","code":400}})");
  EXPECT_EQ(error_json(ApiError{404, "NotFoundError", "no", ""}),
            R"({"error":{"message":"no","type":"NotFoundError","param":null,"code":404}})");
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

TEST(OpenAiRequest, TokenizeTakesVllmsOptions) {
  auto chat = parse_tokenize_request(R"({"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(chat);
  EXPECT_TRUE(chat->add_generation_prompt);  // vLLM's defaults for messages
  EXPECT_FALSE(chat->add_special_tokens);
  EXPECT_FALSE(chat->return_token_strs);
  auto open = parse_tokenize_request(
      R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false,"return_token_strs":true})");
  ASSERT_TRUE(open);
  EXPECT_FALSE(open->add_generation_prompt);
  EXPECT_TRUE(open->return_token_strs);
  auto both = parse_tokenize_request(
      R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true,"continue_final_message":true})");
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().message, "Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
  auto cont = parse_tokenize_request(
      R"({"messages":[{"role":"assistant","content":"hi"}],"add_generation_prompt":false,"continue_final_message":true})");
  ASSERT_FALSE(cont);
  EXPECT_EQ(cont.error().param, "continue_final_message");
  auto wrong = parse_tokenize_request(R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":1})");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().param, "add_generation_prompt");
  EXPECT_FALSE(parse_tokenize_request(R"({"prompt":"x","return_token_strs":"yes"})"));
}

TEST(OpenAiRequest, DetokenizeTakesModelAndTokenIds) {
  auto parsed = parse_detokenize_request(R"({"model":"m","tokens":[0,17,2147483647]})");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->model, "m");
  EXPECT_EQ(parsed->tokens, (std::vector<int32_t>{0, 17, 2147483647}));
  auto empty = parse_detokenize_request(R"({"tokens":[]})");
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->model);
  EXPECT_TRUE(empty->tokens.empty());
  const std::pair<const char*, const char*> refused[] = {
      {"", "empty"},
      {"{", "malformed JSON"},
      {"[1,2]", "JSON object"},
      {R"({"model":"m"})", "missing required field 'tokens'"},
      {R"({"tokens":null})", "missing required field 'tokens'"},
      {R"({"tokens":"1 2"})", "must be an array of token ids"},
      {R"({"tokens":[1,"2"]})", "got a string in the array"},
      {R"({"tokens":[1.5]})", "got a number in the array"},
      {R"({"tokens":[[1]]})", "got an array in the array"},
      {R"({"tokens":[-1]})", "outside [0, 2^31)"},
      {R"({"tokens":[2147483648]})", "outside [0, 2^31)"},
      {R"({"tokens":[18446744073709551615]})", "outside [0, 2^31)"},
      {R"({"tokens":[1],"model":3})", "field 'model' must be a string"},
  };
  for (const auto& [body, message] : refused) {
    auto r = parse_detokenize_request(body);
    ASSERT_FALSE(r) << body;
    EXPECT_EQ(r.error().status, 400) << body;
    EXPECT_NE(r.error().message.find(message), std::string::npos) << body << " -> " << r.error().message;
  }
  EXPECT_EQ(parse_detokenize_request(R"({"tokens":[-1]})").error().param, "tokens");
}

}  // namespace
}  // namespace ix::serve

namespace ix::serve {
namespace {

// "Never a crash, a 400 naming the problem": every field the parser reads, given every JSON type
// and boundary value, in both endpoints and the tokenize body, either parses or is a 4xx error
// with a message; seeded byte mutations of valid bodies the same. (Run under the asan preset this
// also checks for undefined behaviour in the conversions.)
void expect_parsed_or_client_error(std::string_view body, ApiKind kind) {
  auto parsed = parse_openai_request(body, kind);
  if (!parsed) {
    EXPECT_GE(parsed.error().status, 400) << body;
    EXPECT_LT(parsed.error().status, 500) << body;
    EXPECT_FALSE(parsed.error().message.empty()) << body;
    EXPECT_FALSE(error_json(parsed.error()).empty());
  } else {
    // Whatever parsed is usable: one prompt form, and a token budget that is positive if set.
    const int forms = parsed->prompt_text.has_value() + parsed->prompt_ids.has_value() + !parsed->messages.empty();
    EXPECT_EQ(forms, 1) << body;
    if (parsed->max_tokens) {
      EXPECT_GE(*parsed->max_tokens, 1) << body;
    }
    EXPECT_GE(parsed->min_tokens, 0) << body;
  }
  auto tokenize = parse_tokenize_request(body);
  if (!tokenize) {
    EXPECT_FALSE(tokenize.error().message.empty()) << body;
  }
  auto detokenize = parse_detokenize_request(body);
  if (!detokenize) {
    EXPECT_EQ(detokenize.error().status, 400) << body;
    EXPECT_FALSE(detokenize.error().message.empty()) << body;
  }
}

TEST(OpenAiRequest, EveryFieldWithEveryJsonTypeParsesOrIsAClientError) {
  for (ApiKind kind : {ApiKind::kCompletion, ApiKind::kChat}) {
    const std::string base =
        kind == ApiKind::kCompletion ? R"("prompt":"hello")" : R"("messages":[{"role":"user","content":"hello"}])";
    for (const char* field : request_sweep::kRequestFields) {
      for (const char* value : request_sweep::kBoundaryJsonValues) {
        // The field beside a valid prompt, and alone (a prompt field replaced by the value).
        expect_parsed_or_client_error(fmt::format(R"({{{},"{}":{}}})", base, field, value), kind);
        expect_parsed_or_client_error(fmt::format(R"({{"{}":{}}})", field, value), kind);
      }
    }
  }
}

TEST(OpenAiRequest, MutatedBodiesParseOrAreClientErrors) {
  const std::pair<const char*, ApiKind> seeds[] = {
      {R"({"model":"m","prompt":"hello there","max_tokens":16,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"ignore_eos":true,"stop":["\n"],"temperature":0,"top_k":-1,"seed":3,"truncate_prompt_tokens":8})",
       ApiKind::kCompletion},
      {R"({"prompt":[1,2,3,4],"max_tokens":2,"min_tokens":1,"stop_token_ids":[5]})", ApiKind::kCompletion},
      {R"({"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_completion_tokens":4,"stream":true,"user":"s1"})",
       ApiKind::kChat},
  };
  const std::string_view significant = "{}[]\":,\\0123456789-.eEtrufalsn \x80\xff";
  std::mt19937_64 rng(20261201);
  for (int i = 0; i < 30000; ++i) {
    const auto& [seed, kind] = seeds[static_cast<size_t>(i) % std::size(seeds)];
    std::string body = seed;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !body.empty(); ++e) {
      const size_t at = rng() % body.size();
      switch (rng() % 3) {
        case 0: body[at] = significant[rng() % significant.size()]; break;
        case 1: body.insert(at, 1, significant[rng() % significant.size()]); break;
        default: body.erase(at, 1 + rng() % 8); break;
      }
    }
    expect_parsed_or_client_error(body, kind);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "mutation " << i << ": " << body;
      return;
    }
  }
}

}  // namespace
}  // namespace ix::serve
