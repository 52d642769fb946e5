// Serving backends of `bench serve` (vLLM's --backend names): which endpoint, which request body,
// and how a streamed response chunk is read.
//
// The bodies are InferenceX's client's (utils/bench_serving/backend_request_func.py), field for
// field and in its order:
//   vllm, sglang, openai, trt, atom  POST /v1/completions      {"model","prompt","temperature":0,
//                                    "best_of":1,"max_tokens","logprobs","stream":true,
//                                    "stream_options":{"include_usage":true},"ignore_eos"}
//   openai-chat                       POST /v1/chat/completions {"model","messages","temperature":0,
//                                    "max_completion_tokens","stream":true,"stream_options",
//                                    "ignore_eos"}
// (`ignore_eos` only when requested.) One addition, where the engine is known to accept it
// (vllm, sglang, trt): `stream_options.continuous_usage_stats`, which puts usage in every chunk
// so the client knows how many tokens each chunk carried (speculative decoding sends several);
// --no-continuous-usage-stats drops it. Sampling flags and --extra-body are merged last.
//
// Thread-safety: pure functions; StreamChunkDecoder is one-stream, one-thread.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace ix::openai {

enum class Backend { kVllm, kSglang, kOpenai, kOpenaiChat, kTrt, kAtom };

// Accepts vLLM's names: vllm, sglang, openai, openai-chat, trt, atom. vLLM's `tensorrt-llm` (the
// Triton generate_stream protocol) is refused with a pointer to `trt` / `openai`.
Result<Backend> parse_backend(std::string_view name);
std::string_view backend_name(Backend backend);
std::string_view default_endpoint(Backend backend);
bool uses_chat(Backend backend);
bool supports_continuous_usage(Backend backend);

struct CompletionRequest {
  std::string model;
  std::string prompt;  // the prompt (completions) or the user message content (chat)
  int64_t max_tokens = 16;
  bool ignore_eos = false;
  double temperature = 0.0;
  bool continuous_usage = false;
  // Completions only: "logprobs": N (vLLM's --logprobs); nullopt sends null.
  std::optional<int64_t> logprobs;
  // Extra top-level fields merged into the body (--extra-body and the sampling flags), parsed
  // once by the caller: the body is built for every request. Not owned; may be null.
  const boost::json::object* extra_body = nullptr;
};

// The JSON request body.
std::string build_request_body(Backend backend, const CompletionRequest& request);

// What one SSE `data:` payload of a streamed completion says.
struct StreamChunk {
  enum class Kind { kData, kDone, kError };
  Kind kind = Kind::kData;
  bool has_choices = false;        // choices[] non-empty
  std::string_view text;           // text / delta.content (+ reasoning) of choices[0]; valid
                                   // until the next decode()
  bool finished = false;           // choices[0].finish_reason is set
  std::string_view finish_reason;  // its value when a string ("stop", "length"); valid until the
                                   // next decode()
  size_t reasoning_bytes = 0;      // `text` starts with this many bytes of reasoning text
  int64_t completion_tokens = -1;  // usage.completion_tokens when present
  int64_t prompt_tokens = -1;
  // A usage count that is negative or not an integer: the count is then -1 (absent); the runner
  // fails the request with usage_problem(). `bad_usage_key` names the field (static text); empty
  // when the counts are fine (plain fields: a chunk per token must stay cheap to build).
  std::string_view bad_usage_key;
  bool bad_usage_integer = false;
  int64_t bad_usage_value = 0;
  // "usage.completion_tokens is -5" / "usage.prompt_tokens is not a whole number", or "".
  std::string usage_problem() const;
  std::string error;  // kError: the server's message
};

class StreamChunkDecoder {
 public:
  StreamChunkDecoder();
  // Parses one event payload ("[DONE]", a completion chunk, or {"error": ...}), validating the
  // whole JSON text without building a DOM (stream_chunk.cc). Errors: kParse (not JSON, not an
  // object), with the byte offset.
  Result<StreamChunk> decode(std::string_view data);

 private:
  std::string text_;
  std::string decoded_;  // strings with escapes, decoded
  std::string scratch_;
};

}  // namespace ix::openai
