#include "openai/backend.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "common/json_io.h"

namespace ix::openai {

Result<Backend> parse_backend(std::string_view name) {
  if (name == "vllm") return Backend::kVllm;
  if (name == "sglang") return Backend::kSglang;
  if (name == "openai") return Backend::kOpenai;
  if (name == "openai-chat") return Backend::kOpenaiChat;
  if (name == "trt") return Backend::kTrt;
  if (name == "tensorrt-llm")
    return fail(ErrorCode::kInvalidArgument,
                "backend 'tensorrt-llm' is vLLM's client for Triton's generate_stream protocol (text_input / "
                "text_output), which ixbench does not speak; for trtllm-serve (OpenAI API) use --backend trt, or "
                "--backend openai as InferenceX's TRT-LLM scripts do");
  if (name == "atom") return Backend::kAtom;
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("unknown backend '{}': use one of vllm, sglang, openai, openai-chat, trt, atom", name));
}

std::string_view backend_name(Backend backend) {
  switch (backend) {
    case Backend::kVllm: return "vllm";
    case Backend::kSglang: return "sglang";
    case Backend::kOpenai: return "openai";
    case Backend::kOpenaiChat: return "openai-chat";
    case Backend::kTrt: return "trt";
    case Backend::kAtom: return "atom";
  }
  return "vllm";
}

bool uses_chat(Backend backend) {
  return backend == Backend::kOpenaiChat;
}

std::string_view default_endpoint(Backend backend) {
  return uses_chat(backend) ? "/v1/chat/completions" : "/v1/completions";
}

bool supports_continuous_usage(Backend backend) {
  // The engines whose OpenAI front ends parse stream_options.continuous_usage_stats (vLLM's
  // protocol, SGLang's, trtllm-serve's); ATOM's and other OpenAI servers are not known to.
  return backend == Backend::kVllm || backend == Backend::kSglang || backend == Backend::kTrt;
}

std::string build_request_body(Backend backend, const CompletionRequest& r) {
  boost::json::object body;
  body["model"] = r.model;
  if (uses_chat(backend)) {
    body["messages"] = boost::json::array{boost::json::object{{"role", "user"}, {"content", r.prompt}}};
    body["temperature"] = r.temperature;
    body["max_completion_tokens"] = r.max_tokens;
  } else {
    body["prompt"] = r.prompt;
    body["temperature"] = r.temperature;
    body["best_of"] = 1;
    body["max_tokens"] = r.max_tokens;
    if (r.logprobs) {
      body["logprobs"] = *r.logprobs;
    } else {
      body["logprobs"] = nullptr;
    }
  }
  body["stream"] = true;
  boost::json::object stream_options{{"include_usage", true}};
  if (r.continuous_usage) stream_options["continuous_usage_stats"] = true;
  body["stream_options"] = std::move(stream_options);
  if (r.ignore_eos) body["ignore_eos"] = true;
  if (r.extra_body) {
    for (const auto& [key, value] : *r.extra_body) body[key] = value;
  }
  return json::to_string(body);
}

}  // namespace ix::openai
