#include "serve/openai_request.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <limits>

#include "common/json_io.h"

namespace ix::serve {
namespace {

namespace bj = boost::json;

std::unexpected<ApiError> bad(std::string message) {
  return std::unexpected(ApiError{400, "BadRequestError", std::move(message)});
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
  return bad(fmt::format("field '{}' must be {}, got {}", field, expected, kind_name(value)));
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
      return bad(fmt::format("field '{}' is too large", key));
    }
    return static_cast<int64_t>(value->get_uint64());
  }
  // 16.0 is an integer to Python/pydantic; 16.5 is not.
  if (value->is_double() && value->get_double() == static_cast<double>(static_cast<int64_t>(value->get_double()))) {
    return static_cast<int64_t>(value->get_double());
  }
  return wrong_type(key, "an integer", *value);
}

std::expected<std::vector<int32_t>, ApiError> token_ids(const bj::array& array, std::string_view field) {
  std::vector<int32_t> ids;
  ids.reserve(array.size());
  for (const auto& element : array) {
    int64_t id = 0;
    if (element.is_int64()) {
      id = element.get_int64();
    } else if (element.is_uint64()) {
      id = static_cast<int64_t>(std::min<uint64_t>(element.get_uint64(), uint64_t{1} << 40));
    } else {
      return bad(fmt::format("field '{}' must be a string or an array of token ids (integers)", field));
    }
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return bad(fmt::format("field '{}' holds token id {} outside [0, 2^31)", field, id));
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::expected<std::vector<ChatTurn>, ApiError> parse_messages(const bj::object& object) {
  const bj::value* value = present(object, "messages");
  if (value == nullptr) return bad("missing required field 'messages'");
  if (!value->is_array()) return wrong_type("messages", "an array of message objects", *value);
  const auto& array = value->get_array();
  if (array.empty()) return bad("field 'messages' must not be empty");
  std::vector<ChatTurn> turns;
  for (size_t index = 0; index < array.size(); ++index) {
    const auto& element = array[index];
    std::string where = fmt::format("messages[{}]", index);
    if (!element.is_object()) return wrong_type(where, "an object", element);
    const auto& message = element.get_object();
    const bj::value* role = present(message, "role");
    if (role == nullptr) return bad(fmt::format("missing required field '{}.role'", where));
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
                fmt::format("'{}.content' parts must have type \"text\" (other content is not supported)", where));
          }
          if (text == nullptr || !text->is_string())
            return bad(fmt::format("'{}.content' text part needs 'text'", where));
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
  if (value == nullptr) return bad("missing required field 'prompt'");
  if (value->is_string()) {
    text = std::string(value->get_string());
    return {};
  }
  if (!value->is_array()) return wrong_type("prompt", "a string or an array of token ids", *value);
  const auto& array = value->get_array();
  if (array.empty()) return bad("field 'prompt' must not be empty");
  if (array.front().is_string() || array.front().is_array()) {
    if (array.size() != 1) return bad("batched prompts (more than one prompt per request) are not supported");
    if (array.front().is_string()) {
      text = std::string(array.front().get_string());
      return {};
    }
    auto parsed = token_ids(array.front().get_array(), "prompt");
    if (!parsed) return std::unexpected(parsed.error());
    if (parsed->empty()) return bad("field 'prompt' must not be empty");
    ids = std::move(*parsed);
    return {};
  }
  auto parsed = token_ids(array, "prompt");
  if (!parsed) return std::unexpected(parsed.error());
  ids = std::move(*parsed);
  return {};
}

}  // namespace

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
  } else {
    auto messages = parse_messages(object);
    if (!messages) return std::unexpected(messages.error());
    request.messages = std::move(*messages);
  }

  auto stream = get_bool(object, "stream");
  if (!stream) return std::unexpected(stream.error());
  request.stream = stream->value_or(false);
  if (const bj::value* options = present(object, "stream_options")) {
    if (!options->is_object()) return wrong_type("stream_options", "an object", *options);
    if (!request.stream) return bad("Stream options can only be defined when `stream=True`.");
    auto include = get_bool(options->get_object(), "include_usage");
    if (!include) return bad("field 'stream_options.include_usage' must be a boolean");
    request.include_usage = include->value_or(false);
    auto continuous = get_bool(options->get_object(), "continuous_usage_stats");
    if (!continuous) return bad("field 'stream_options.continuous_usage_stats' must be a boolean");
    request.continuous_usage = continuous->value_or(false);
  }

  auto max_tokens = get_int(object, "max_tokens");
  if (!max_tokens) return std::unexpected(max_tokens.error());
  request.max_tokens = *max_tokens;
  if (kind == ApiKind::kChat) {
    auto max_completion = get_int(object, "max_completion_tokens");
    if (!max_completion) return std::unexpected(max_completion.error());
    if (*max_completion) request.max_tokens = *max_completion;
  }
  if (request.max_tokens && *request.max_tokens < 1) {
    return bad(fmt::format("max_tokens must be at least 1, got {}.", *request.max_tokens));
  }
  auto min_tokens = get_int(object, "min_tokens");
  if (!min_tokens) return std::unexpected(min_tokens.error());
  if (*min_tokens && **min_tokens < 0) return bad("min_tokens must be greater than or equal to 0");

  auto ignore_eos = get_bool(object, "ignore_eos");
  if (!ignore_eos) return std::unexpected(ignore_eos.error());
  request.ignore_eos = ignore_eos->value_or(false);

  if (const bj::value* stop = present(object, "stop")) {
    if (stop->is_string()) {
      if (!stop->get_string().empty()) request.stop.emplace_back(stop->get_string());
    } else if (stop->is_array()) {
      for (const auto& item : stop->get_array()) {
        if (!item.is_string()) return bad("field 'stop' must be a string or an array of strings");
        if (!item.get_string().empty()) request.stop.emplace_back(item.get_string());
      }
    } else {
      return wrong_type("stop", "a string or an array of strings", *stop);
    }
  }
  auto n = get_int(object, "n");
  if (!n) return std::unexpected(n.error());
  if (*n && **n != 1) return bad("only n=1 is supported");
  for (std::string_view number_field : {"temperature", "top_p", "frequency_penalty", "presence_penalty"}) {
    if (const bj::value* value = present(object, number_field); value && !value->is_number()) {
      return wrong_type(number_field, "a number", *value);
    }
  }
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
  if (object.contains("messages")) {
    auto messages = parse_messages(object);
    if (!messages) return std::unexpected(messages.error());
    request.messages = std::move(*messages);
    request.is_chat = true;
    return request;
  }
  if (auto ok = parse_prompt(object, request.prompt_text, request.prompt_ids); !ok) return std::unexpected(ok.error());
  return request;
}

}  // namespace ix::serve
