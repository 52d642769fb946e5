// OpenAI request bodies (/v1/completions, /v1/chat/completions, /tokenize) parsed into typed
// values, with the errors a client gets back: HTTP status, OpenAI error type and a message naming
// the field, as vLLM words them where it has a wording.
//
// Accepted (everything else in the body is ignored, as vLLM ignores sampling parameters it does
// not need to honour here):
//   completions  prompt: string | [token ids] | [one string] | [[token ids]] (one prompt only);
//   chat         messages: [{role, content: string | [{type:"text", text}] | null}, ...];
//   both         model (string, optional), stream (bool), stream_options.include_usage (bool,
//                only with stream), max_tokens (int >= 1; chat also max_completion_tokens, which
//                wins), ignore_eos (bool), stop (string | [strings]), n (must be 1),
//                min_tokens (int >= 0, accepted; the schedule engines always produce max_tokens).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/text_codec.h"

namespace ix::serve {

enum class ApiKind { kCompletion, kChat };

struct ApiError {
  int status = 400;
  std::string type = "BadRequestError";
  std::string message;
};

struct OpenAiRequest {
  ApiKind kind = ApiKind::kCompletion;
  std::optional<std::string> model;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;  // stream_options.continuous_usage_stats (vLLM): usage in every chunk
  std::optional<int64_t> max_tokens;
  bool ignore_eos = false;
  std::vector<std::string> stop;
  // Exactly one prompt form is set: text, token ids (completions) or messages (chat).
  std::optional<std::string> prompt_text;
  std::optional<std::vector<int32_t>> prompt_ids;
  std::vector<ChatTurn> messages;
  // "user" field when present (routing hint for session-sticky data-parallel attention).
  std::optional<std::string> user;
};

std::expected<OpenAiRequest, ApiError> parse_openai_request(std::string_view body, ApiKind kind);

struct TokenizeRequest {
  std::optional<std::string> prompt_text;
  std::optional<std::vector<int32_t>> prompt_ids;
  std::vector<ChatTurn> messages;  // when the body has "messages"
  bool is_chat = false;
};

std::expected<TokenizeRequest, ApiError> parse_tokenize_request(std::string_view body);

}  // namespace ix::serve
