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
  if (name == "trt" || name == "tensorrt-llm") return Backend::kTrt;
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
  return backend != Backend::kOpenai && backend != Backend::kOpenaiChat;
}

Result<std::string> build_request_body(Backend backend, const CompletionRequest& r) {
  boost::json::object body;
  body["model"] = r.model;
  if (uses_chat(backend)) {
    body["messages"] = boost::json::array{boost::json::object{{"role", "user"}, {"content", r.prompt}}};
    body["temperature"] = r.temperature;
    body["max_completion_tokens"] = r.max_tokens;
  } else {
    body["prompt"] = r.prompt;
    body["temperature"] = r.temperature;
    body["repetition_penalty"] = 1.0;
    body["max_tokens"] = r.max_tokens;
    body["logprobs"] = nullptr;
  }
  body["stream"] = true;
  boost::json::object stream_options{{"include_usage", true}};
  if (r.continuous_usage) stream_options["continuous_usage_stats"] = true;
  body["stream_options"] = std::move(stream_options);
  if (r.ignore_eos) body["ignore_eos"] = true;
  if (!r.extra_body_json.empty()) {
    auto extra = json::parse(r.extra_body_json, "--extra-body");
    if (!extra) return std::unexpected(extra.error());
    if (!extra->is_object()) return fail(ErrorCode::kInvalidArgument, "--extra-body must be a JSON object");
    for (const auto& [key, value] : extra->as_object()) body[key] = value;
  }
  return json::to_string(body);
}

StreamChunkDecoder::StreamChunkDecoder() = default;

Result<StreamChunk> StreamChunkDecoder::decode(std::string_view data) {
  StreamChunk chunk;
  if (data == "[DONE]") {
    chunk.kind = StreamChunk::Kind::kDone;
    return chunk;
  }
  // A fresh arena per chunk: parsing allocates only from the stack buffer for typical chunks.
  boost::json::monotonic_resource arena(arena_, sizeof(arena_));
  parser_.reset(boost::json::storage_ptr(&arena));
  boost::system::error_code ec;
  parser_.write(data.data(), data.size(), ec);
  if (ec) {
    std::string head(data.substr(0, 80));
    return fail(ErrorCode::kParse, fmt::format("stream chunk is not JSON ({}): '{}'", ec.message(), head));
  }
  const boost::json::value root = parser_.release();
  const boost::json::object* obj = root.if_object();
  if (!obj) return fail(ErrorCode::kParse, "stream chunk is not a JSON object");
  if (const auto* err = obj->if_contains("error"); err && !err->is_null()) {
    chunk.kind = StreamChunk::Kind::kError;
    if (err->is_object()) {
      const auto* msg = err->as_object().if_contains("message");
      chunk.error = msg && msg->is_string() ? std::string(msg->as_string()) : json::to_string(*err);
    } else {
      chunk.error = err->is_string() ? std::string(err->as_string()) : json::to_string(*err);
    }
    return chunk;
  }
  text_.clear();
  if (const auto* choices = obj->if_contains("choices");
      choices && choices->is_array() && !choices->as_array().empty()) {
    chunk.has_choices = true;
    const auto* c0 = choices->as_array()[0].if_object();
    if (c0) {
      if (const auto* t = c0->if_contains("text"); t && t->is_string()) text_.append(t->as_string());
      if (const auto* d = c0->if_contains("delta"); d && d->is_object()) {
        for (const char* key : {"reasoning_content", "reasoning", "content"}) {
          if (const auto* t = d->as_object().if_contains(key); t && t->is_string()) text_.append(t->as_string());
        }
      }
      if (const auto* f = c0->if_contains("finish_reason"); f && !f->is_null()) chunk.finished = true;
    }
  }
  chunk.text = text_;
  if (const auto* usage = obj->if_contains("usage"); usage && usage->is_object()) {
    const auto& u = usage->as_object();
    if (const auto* v = u.if_contains("completion_tokens"); v && v->is_int64()) chunk.completion_tokens = v->as_int64();
    if (const auto* v = u.if_contains("prompt_tokens"); v && v->is_int64()) chunk.prompt_tokens = v->as_int64();
  }
  return chunk;
}

}  // namespace ix::openai
