// OpenAI request bodies (/v1/completions, /v1/chat/completions, /tokenize, /detokenize) parsed into
// typed values, with the errors a client gets back: HTTP status, OpenAI error type and a message
// naming the field, as vLLM words them where it has a wording.
//
// Accepted (a field not listed here is ignored, as vLLM ignores fields it does not know):
//   completions  prompt: non-empty string | [token ids] | [one string] | [[token ids]] (one prompt
//                only); add_special_tokens (bool, default true: the tokenizer's BOS);
//   chat         messages: [{role, content: string | [{type:"text", text}] | null}, ...];
//                add_special_tokens (bool, default false: the chat template holds them);
//                logprobs (bool; only false), top_logprobs (only null);
//   both         model (string, optional), stream (bool), stream_options.include_usage and
//                .continuous_usage_stats (bools, only with stream; per-chunk usage needs both),
//                max_tokens (int >= 1; chat also max_completion_tokens, which wins), min_tokens
//                (int >= 0), ignore_eos (bool), stop (string | [strings]), stop_token_ids ([ids]),
//                include_stop_str_in_output (bool), truncate_prompt_tokens (int >= 1, or -1 =
//                max_model_len), n (must be 1), user (string), temperature (>= 0), top_p (in
//                (0, 1]), presence_penalty / frequency_penalty (in [-2, 2]), top_k (>= -1), min_p
//                (in [0, 1]), repetition_penalty (> 0), seed (int);
//   refused      logprobs (completions: a number), echo: true, prompt_logprobs (not null): the
//                simulator produces no token probabilities and no prompt text.
// Checks that need the served model (min_tokens <= the default max_tokens, token ids in the
// vocabulary, truncate_prompt_tokens <= max_model_len) are the server's.
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
  std::string param;  // the request field at fault, "" = none (the error JSON's "param")
};

// The OpenAI error body: {"error":{"message","type","param","code"}} (param null when empty).
std::string error_json(const ApiError& error);

struct OpenAiRequest {
  ApiKind kind = ApiKind::kCompletion;
  std::optional<std::string> model;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;      // usage in every chunk: continuous_usage_stats and include_usage (vLLM)
  std::optional<int64_t> max_tokens;  // nullopt: the endpoint's default (the server applies it)
  int64_t min_tokens = 0;
  bool ignore_eos = false;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool include_stop_str_in_output = false;
  bool add_special_tokens = true;                 // completions default true, chat false (vLLM)
  std::optional<int64_t> truncate_prompt_tokens;  // k >= 1 keeps the last k tokens; -1 = max_model_len
  // Exactly one prompt form is set: text, token ids (completions) or messages (chat).
  std::optional<std::string> prompt_text;
  std::optional<std::vector<int32_t>> prompt_ids;
  std::vector<ChatTurn> messages;
  // "user" field when present (routing hint for session-sticky data-parallel attention).
  std::optional<std::string> user;
};

std::expected<OpenAiRequest, ApiError> parse_openai_request(std::string_view body, ApiKind kind);

struct TokenizeRequest {
  std::optional<std::string> model;  // checked like a completion's (vLLM: 404 for a name not served)
  std::optional<std::string> prompt_text;
  std::optional<std::vector<int32_t>> prompt_ids;
  std::vector<ChatTurn> messages;  // when the body has "messages"
  bool is_chat = false;
  bool add_special_tokens = true;     // default: true for a prompt, false for messages (vLLM)
  bool add_generation_prompt = true;  // messages only (vLLM's default: true)
  bool return_token_strs = false;     // also answer "token_strs" (the ids' vocabulary strings)
};

// /tokenize: {"prompt": string | [ids], "add_special_tokens"?, "return_token_strs"?} or
// {"messages": [...], "add_generation_prompt"? (default true), "add_special_tokens"? (default
// false), "return_token_strs"?}; "continue_final_message": true is refused (together with
// add_generation_prompt: true in vLLM's words), as the chat templates render complete turns only.
std::expected<TokenizeRequest, ApiError> parse_tokenize_request(std::string_view body);

struct DetokenizeRequest {
  std::optional<std::string> model;  // checked like a completion's
  std::vector<int32_t> tokens;       // may be empty (decodes to "")
};

// /detokenize: {"model"?: string, "tokens": [ids]}; ids are integers in [0, 2^31) (vLLM: >= 0).
std::expected<DetokenizeRequest, ApiError> parse_detokenize_request(std::string_view body);

}  // namespace ix::serve
