#include "serve/openai_request.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <limits>

#include "common/json_io.h"

namespace ix::serve {
namespace {

namespace bj = boost::json;

std::unexpected<ApiError> bad(std::string message, std::string param = {}) {
  return std::unexpected(ApiError{400, "BadRequestError", std::move(message), std::move(param)});
}

// The top-level request field a path such as "messages[0].role" or "stream_options.x" is in.
std::string top_level_field(std::string_view path) {
  return std::string(path.substr(0, path.find_first_of(".[")));
}

std::expected<bj::object, ApiError> parse_object(std::string_view body) {
  if (body.empty()) return bad("request body is empty; expected a JSON object");
  auto parsed = ix::json::parse(body, "request body");
  if (!parsed) return bad("malformed JSON in request body: " + parsed.error().message());
  if (!parsed->is_object()) return bad("request body must be a JSON object");
  return std::move(parsed->as_object());
}

const char* kind_name(const bj::value& value) {
  switch (value.kind()) {
    case bj::kind::null: return "null";
    case bj::kind::bool_: return "a boolean";
    case bj::kind::int64:
    case bj::kind::uint64: return "an integer";
    case bj::kind::double_: return "a number";
    case bj::kind::string: return "a string";
    case bj::kind::array: return "an array";
    case bj::kind::object: return "an object";
  }
  return "a value";
}

std::unexpected<ApiError> wrong_type(std::string_view field, std::string_view expected, const bj::value& value) {
  return bad(fmt::format("field '{}' must be {}, got {}", field, expected, kind_name(value)), top_level_field(field));
}

// A present, non-null field.
const bj::value* present(const bj::object& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->value().is_null()) return nullptr;
  return &it->value();
}

std::expected<std::optional<bool>, ApiError> get_bool(const bj::object& object, std::string_view key) {
  const bj::value* value = present(object, key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_bool()) return wrong_type(key, "a boolean", *value);
  return value->get_bool();
}

std::expected<std::optional<int64_t>, ApiError> get_int(const bj::object& object, std::string_view key) {
  const bj::value* value = present(object, key);
  if (value == nullptr) return std::nullopt;
  if (value->is_int64()) return value->get_int64();
  if (value->is_uint64()) {
    if (value->get_uint64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return bad(fmt::format("field '{}' is too large", key), std::string(key));
    }
    return static_cast<int64_t>(value->get_uint64());
  }
  // 16.0 is an integer to Python/pydantic; 16.5 is not.
  if (value->is_double() && value->get_double() == static_cast<double>(static_cast<int64_t>(value->get_double()))) {
    return static_cast<int64_t>(value->get_double());
  }
  return wrong_type(key, "an integer", *value);
}

std::expected<std::optional<double>, ApiError> get_number(const bj::object& object, std::string_view key) {
  const bj::value* value = present(object, key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number()) return wrong_type(key, "a number", *value);
  return value->to_number<double>();
}

// `expected` words the field's shape for the wrong-type message.
std::expected<std::vector<int32_t>, ApiError> token_ids(const bj::array& array, std::string_view field,
                                                        std::string_view expected) {
  std::vector<int32_t> ids;
  ids.reserve(array.size());
  for (const auto& element : array) {
    int64_t id = 0;
    if (element.is_int64()) {
      id = element.get_int64();
    } else if (element.is_uint64()) {
      id = static_cast<int64_t>(std::min<uint64_t>(element.get_uint64(), uint64_t{1} << 40));
    } else {
      return bad(fmt::format("field '{}' must be {}, got {} in the array", field, expected, kind_name(element)),
                 top_level_field(field));
    }
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return bad(fmt::format("field '{}' holds token id {} outside [0, 2^31)", field, id), top_level_field(field));
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::expected<std::vector<ChatTurn>, ApiError> parse_messages(const bj::object& object) {
  const bj::value* value = present(object, "messages");
  if (value == nullptr) return bad("missing required field 'messages'", "messages");
  if (!value->is_array()) return wrong_type("messages", "an array of message objects", *value);
  const auto& array = value->get_array();
  if (array.empty()) return bad("field 'messages' must not be empty", "messages");
  std::vector<ChatTurn> turns;
  for (size_t index = 0; index < array.size(); ++index) {
    const auto& element = array[index];
    std::string where = fmt::format("messages[{}]", index);
    if (!element.is_object()) return wrong_type(where, "an object", element);
    const auto& message = element.get_object();
    const bj::value* role = present(message, "role");
    if (role == nullptr) return bad(fmt::format("missing required field '{}.role'", where), "messages");
    if (!role->is_string()) return wrong_type(where + ".role", "a string", *role);
    ChatTurn turn;
    turn.role = std::string(role->get_string());
    if (const bj::value* content = present(message, "content")) {
      if (content->is_string()) {
        turn.content = std::string(content->get_string());
      } else if (content->is_array()) {
        for (const auto& part : content->get_array()) {
          if (!part.is_object()) return wrong_type(where + ".content[]", "an object", part);
          const bj::value* type = present(part.get_object(), "type");
          const bj::value* text = present(part.get_object(), "text");
          if (type == nullptr || !type->is_string() || type->get_string() != "text") {
            return bad(
                fmt::format("'{}.content' parts must have type \"text\" (other content is not supported)", where),
                "messages");
          }
          if (text == nullptr || !text->is_string())
            return bad(fmt::format("'{}.content' text part needs 'text'", where), "messages");
          turn.content += std::string(text->get_string());
        }
      } else {
        return wrong_type(where + ".content", "a string, an array of text parts or null", *content);
      }
    }
    turns.push_back(std::move(turn));
  }
  return turns;
}

// prompt: string | [ids] | [string] | [[ids]]
std::expected<void, ApiError> parse_prompt(const bj::object& object, std::optional<std::string>& text,
                                           std::optional<std::vector<int32_t>>& ids) {
  const bj::value* value = present(object, "prompt");
  if (value == nullptr) return bad("missing required field 'prompt'", "prompt");
  if (value->is_string()) {
    text = std::string(value->get_string());
    return {};
  }
  if (!value->is_array()) return wrong_type("prompt", "a string or an array of token ids", *value);
  const auto& array = value->get_array();
  if (array.empty()) return bad("field 'prompt' must not be empty", "prompt");
  if (array.front().is_string() || array.front().is_array()) {
    if (array.size() != 1) return bad("batched prompts (more than one prompt per request) are not supported", "prompt");
    if (array.front().is_string()) {
      text = std::string(array.front().get_string());
      return {};
    }
    auto parsed = token_ids(array.front().get_array(), "prompt", "a string or an array of token ids (integers)");
    if (!parsed) return std::unexpected(parsed.error());
    if (parsed->empty()) return bad("field 'prompt' must not be empty", "prompt");
    ids = std::move(*parsed);
    return {};
  }
  auto parsed = token_ids(array, "prompt", "a string or an array of token ids (integers)");
  if (!parsed) return std::unexpected(parsed.error());
  ids = std::move(*parsed);
  return {};
}

// The simulator has no token probabilities and does not return the prompt: a request asking
// for them is refused (an answer with "logprobs": null would look like vLLM's but lack them).
std::unexpected<ApiError> not_simulated(std::string_view field, std::string_view wanted, std::string_view accepted) {
  return bad(fmt::format("'{}' is not supported: ixbench sim serve does not produce {}; send {} or leave the field "
                         "out",
                         field, wanted, accepted),
             std::string(field));
}

std::expected<void, ApiError> refuse_logprobs_and_echo(const bj::object& object, ApiKind kind) {
  if (const bj::value* logprobs = present(object, "logprobs")) {
    if (kind == ApiKind::kChat) {
      if (!logprobs->is_bool()) return wrong_type("logprobs", "a boolean", *logprobs);
      if (logprobs->get_bool()) return not_simulated("logprobs", "logprobs", "\"logprobs\": false or null");
    } else {
      if (!get_int(object, "logprobs")) return wrong_type("logprobs", "an integer or null", *logprobs);
      return not_simulated("logprobs", "logprobs", "\"logprobs\": null");
    }
  }
  if (kind == ApiKind::kChat && present(object, "top_logprobs") != nullptr) {
    if (auto count = get_int(object, "top_logprobs"); !count) return std::unexpected(count.error());
    return not_simulated("top_logprobs", "logprobs", "\"top_logprobs\": null");
  }
  if (present(object, "prompt_logprobs") != nullptr) {
    if (auto count = get_int(object, "prompt_logprobs"); !count) return std::unexpected(count.error());
    return not_simulated("prompt_logprobs", "prompt logprobs", "\"prompt_logprobs\": null");
  }
  auto echo = get_bool(object, "echo");
  if (!echo) return std::unexpected(echo.error());
  if (echo->value_or(false)) return not_simulated("echo", "the prompt back (echo)", "\"echo\": false");
  return {};
}

// Sampling parameters: the simulator does not sample, but a value vLLM refuses is refused here
// too (vLLM's SamplingParams._verify_args wording), so a client's mistake shows up against the
// simulator as it would against the real server.
std::expected<void, ApiError> check_sampling(const bj::object& object) {
  auto temperature = get_number(object, "temperature");
  if (!temperature) return std::unexpected(temperature.error());
  if (*temperature && **temperature < 0.0)
    return bad(fmt::format("temperature must be non-negative, got {}.", **temperature), "temperature");
  auto top_p = get_number(object, "top_p");
  if (!top_p) return std::unexpected(top_p.error());
  if (*top_p && !(**top_p > 0.0 && **top_p <= 1.0))
    return bad(fmt::format("top_p must be in (0, 1], got {}.", **top_p), "top_p");
  for (std::string_view penalty : {"presence_penalty", "frequency_penalty"}) {
    auto value = get_number(object, penalty);
    if (!value) return std::unexpected(value.error());
    if (*value && !(**value >= -2.0 && **value <= 2.0))
      return bad(fmt::format("{} must be in [-2, 2], got {}.", penalty, **value), std::string(penalty));
  }
  auto repetition = get_number(object, "repetition_penalty");
  if (!repetition) return std::unexpected(repetition.error());
  if (*repetition && !(**repetition > 0.0))
    return bad(fmt::format("repetition_penalty must be greater than zero, got {}.", **repetition),
               "repetition_penalty");
  auto min_p = get_number(object, "min_p");
  if (!min_p) return std::unexpected(min_p.error());
  if (*min_p && !(**min_p >= 0.0 && **min_p <= 1.0))
    return bad(fmt::format("min_p must be in [0, 1], got {}.", **min_p), "min_p");
  auto top_k = get_int(object, "top_k");
  if (!top_k) return std::unexpected(top_k.error());
  if (*top_k && **top_k < -1)
    return bad(fmt::format("top_k must be 0 (disable), or at least 1, got {}.", **top_k), "top_k");
  if (auto seed = get_int(object, "seed"); !seed) return std::unexpected(seed.error());
  return {};
}

std::expected<void, ApiError> parse_stops(const bj::object& object, OpenAiRequest& request) {
  if (const bj::value* stop = present(object, "stop")) {
    if (stop->is_string()) {
      request.stop.emplace_back(stop->get_string());
    } else if (stop->is_array()) {
      for (const auto& item : stop->get_array()) {
        if (!item.is_string()) return bad("field 'stop' must be a string or an array of strings", "stop");
        request.stop.emplace_back(item.get_string());
      }
    } else {
      return wrong_type("stop", "a string or an array of strings", *stop);
    }
    for (const auto& text : request.stop) {
      if (text.empty()) return bad("stop cannot contain an empty string.", "stop");
    }
  }
  if (const bj::value* ids = present(object, "stop_token_ids")) {
    if (!ids->is_array()) return wrong_type("stop_token_ids", "an array of token ids (integers)", *ids);
    auto parsed = token_ids(ids->get_array(), "stop_token_ids", "an array of token ids (integers)");
    if (!parsed) return std::unexpected(parsed.error());
    request.stop_token_ids = std::move(*parsed);
  }
  auto include = get_bool(object, "include_stop_str_in_output");
  if (!include) return std::unexpected(include.error());
  request.include_stop_str_in_output = include->value_or(false);
  return {};
}

}  // namespace

std::string error_json(const ApiError& error) {
  return fmt::format(R"({{"error":{{"message":{},"type":{},"param":{},"code":{}}}}})",
                     bj::serialize(bj::string(error.message)), bj::serialize(bj::string(error.type)),
                     error.param.empty() ? std::string("null") : bj::serialize(bj::string(error.param)), error.status);
}

std::expected<OpenAiRequest, ApiError> parse_openai_request(std::string_view body, ApiKind kind) {
  auto object_or = parse_object(body);
  if (!object_or) return std::unexpected(object_or.error());
  const bj::object& object = *object_or;
  OpenAiRequest request;
  request.kind = kind;

  if (const bj::value* model = present(object, "model")) {
    if (!model->is_string()) return wrong_type("model", "a string", *model);
    request.model = std::string(model->get_string());
  }
  if (kind == ApiKind::kCompletion) {
    if (auto ok = parse_prompt(object, request.prompt_text, request.prompt_ids); !ok) {
      return std::unexpected(ok.error());
    }
    // vLLM: "Either prompt or prompt_embeds must be provided and non-empty."
    if (request.prompt_text && request.prompt_text->empty()) {
      return bad("field 'prompt' must not be empty: an empty string gives the model nothing to continue", "prompt");
    }
  } else {
    auto messages = parse_messages(object);
    if (!messages) return std::unexpected(messages.error());
    request.messages = std::move(*messages);
  }
  auto add_special = get_bool(object, "add_special_tokens");
  if (!add_special) return std::unexpected(add_special.error());
  request.add_special_tokens = add_special->value_or(kind == ApiKind::kCompletion);

  auto stream = get_bool(object, "stream");
  if (!stream) return std::unexpected(stream.error());
  request.stream = stream->value_or(false);
  if (const bj::value* options = present(object, "stream_options")) {
    if (!options->is_object()) return wrong_type("stream_options", "an object", *options);
    if (!request.stream) return bad("Stream options can only be defined when `stream=True`.", "stream_options");
    auto include = get_bool(options->get_object(), "include_usage");
    if (!include) return bad("field 'stream_options.include_usage' must be a boolean", "stream_options");
    request.include_usage = include->value_or(false);
    auto continuous = get_bool(options->get_object(), "continuous_usage_stats");
    if (!continuous) return bad("field 'stream_options.continuous_usage_stats' must be a boolean", "stream_options");
    // vLLM sends usage in every chunk only when both are true.
    request.continuous_usage = request.include_usage && continuous->value_or(false);
  }

  auto max_tokens = get_int(object, "max_tokens");
  if (!max_tokens) return std::unexpected(max_tokens.error());
  request.max_tokens = *max_tokens;
  std::string max_tokens_field = "max_tokens";
  if (kind == ApiKind::kChat) {
    auto max_completion = get_int(object, "max_completion_tokens");
    if (!max_completion) return std::unexpected(max_completion.error());
    if (*max_completion) {
      request.max_tokens = *max_completion;
      max_tokens_field = "max_completion_tokens";
    }
  }
  if (request.max_tokens && *request.max_tokens < 1) {
    return bad(fmt::format("max_tokens must be at least 1, got {}.", *request.max_tokens), max_tokens_field);
  }
  auto min_tokens = get_int(object, "min_tokens");
  if (!min_tokens) return std::unexpected(min_tokens.error());
  request.min_tokens = min_tokens->value_or(0);
  if (request.min_tokens < 0) {
    return bad(fmt::format("min_tokens must be greater than or equal to 0, got {}.", request.min_tokens), "min_tokens");
  }
  if (request.max_tokens && request.min_tokens > *request.max_tokens) {
    return bad(fmt::format("min_tokens must be less than or equal to max_tokens={}, got {}.", *request.max_tokens,
                           request.min_tokens),
               "min_tokens");
  }

  auto ignore_eos = get_bool(object, "ignore_eos");
  if (!ignore_eos) return std::unexpected(ignore_eos.error());
  request.ignore_eos = ignore_eos->value_or(false);
  if (auto ok = parse_stops(object, request); !ok) return std::unexpected(ok.error());

  auto truncate = get_int(object, "truncate_prompt_tokens");
  if (!truncate) return std::unexpected(truncate.error());
  if (*truncate && (**truncate == 0 || **truncate < -1)) {
    return bad(fmt::format("truncate_prompt_tokens must be an integer >= 1 or -1, got {}.", **truncate),
               "truncate_prompt_tokens");
  }
  request.truncate_prompt_tokens = *truncate;

  auto n = get_int(object, "n");
  if (!n) return std::unexpected(n.error());
  if (*n && **n != 1) return bad("only n=1 is supported", "n");
  if (auto ok = refuse_logprobs_and_echo(object, kind); !ok) return std::unexpected(ok.error());
  if (auto ok = check_sampling(object); !ok) return std::unexpected(ok.error());
  if (const bj::value* user = present(object, "user")) {
    if (!user->is_string()) return wrong_type("user", "a string", *user);
    request.user = std::string(user->get_string());
  }
  return request;
}

std::expected<TokenizeRequest, ApiError> parse_tokenize_request(std::string_view body) {
  auto object_or = parse_object(body);
  if (!object_or) return std::unexpected(object_or.error());
  const bj::object& object = *object_or;
  TokenizeRequest request;
  if (const bj::value* model = present(object, "model")) {
    if (!model->is_string()) return wrong_type("model", "a string", *model);
    request.model = std::string(model->get_string());
  }
  if (object.contains("messages")) {
    auto messages = parse_messages(object);
    if (!messages) return std::unexpected(messages.error());
    request.messages = std::move(*messages);
    request.is_chat = true;
  } else if (auto ok = parse_prompt(object, request.prompt_text, request.prompt_ids); !ok) {
    return std::unexpected(ok.error());
  }
  auto add_special = get_bool(object, "add_special_tokens");
  if (!add_special) return std::unexpected(add_special.error());
  request.add_special_tokens = add_special->value_or(!request.is_chat);
  auto token_strs = get_bool(object, "return_token_strs");
  if (!token_strs) return std::unexpected(token_strs.error());
  request.return_token_strs = token_strs->value_or(false);
  if (request.is_chat) {
    auto generation_prompt = get_bool(object, "add_generation_prompt");
    if (!generation_prompt) return std::unexpected(generation_prompt.error());
    auto continue_final = get_bool(object, "continue_final_message");
    if (!continue_final) return std::unexpected(continue_final.error());
    // vLLM's check_generation_prompt looks at the fields as sent.
    if (continue_final->value_or(false) && generation_prompt->value_or(false)) {
      return bad("Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
    }
    if (continue_final->value_or(false)) {
      return bad("'continue_final_message' is not supported: ixbench sim serve renders complete turns only",
                 "continue_final_message");
    }
    request.add_generation_prompt = generation_prompt->value_or(true);
  }
  return request;
}

std::expected<DetokenizeRequest, ApiError> parse_detokenize_request(std::string_view body) {
  auto object_or = parse_object(body);
  if (!object_or) return std::unexpected(object_or.error());
  const bj::object& object = *object_or;
  DetokenizeRequest request;
  if (const bj::value* model = present(object, "model")) {
    if (!model->is_string()) return wrong_type("model", "a string", *model);
    request.model = std::string(model->get_string());
  }
  const bj::value* tokens = present(object, "tokens");
  if (tokens == nullptr) return bad("missing required field 'tokens'", "tokens");
  if (!tokens->is_array()) return wrong_type("tokens", "an array of token ids (integers)", *tokens);
  auto ids = token_ids(tokens->get_array(), "tokens", "an array of token ids (integers)");
  if (!ids) return std::unexpected(ids.error());
  request.tokens = std::move(*ids);
  return request;
}

}  // namespace ix::serve
