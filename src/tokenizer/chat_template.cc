#include "tokenizer/chat_template.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include "common/file_io.h"
#include "common/strings.h"
#include "tokenizer/tokenizer.h"

namespace ix::tok {
namespace {

constexpr std::string_view kDsBos = "<｜begin▁of▁sentence｜>";
constexpr std::string_view kDsEos = "<｜end▁of▁sentence｜>";
constexpr std::string_view kDsUser = "<｜User｜>";
constexpr std::string_view kDsAssistant = "<｜Assistant｜>";

struct PlainMessage {
  std::string role;
  std::string content;
};

std::string today_utc() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[16];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d", &tm);
  return buffer;
}

// "YYYY-MM-DD" -> a broken-down local time at midnight.
Result<std::tm> parse_date(std::string_view date) {
  std::tm tm{};
  int year = 0, month = 0, day = 0;
  char tail = 0;
  const std::string text(date);
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c", &year, &month, &day, &tail) != 3 || month < 1 || month > 12 ||
      day < 1 || day > 31) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("current date '{}' is not YYYY-MM-DD", date));
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_isdst = -1;
  std::tm normalized = tm;
  timegm(&normalized);  // fills tm_wday / tm_yday for %a, %j, ...
  tm.tm_wday = normalized.tm_wday;
  tm.tm_yday = normalized.tm_yday;
  return tm;
}

Error bad_role(std::string_view encoding, const PlainMessage& message) {
  return Error(ErrorCode::kInvalidArgument, fmt::format("chat template {} does not support role '{}' (use system, "
                                                        "user or assistant)",
                                                        encoding, message.role));
}

// Role and text of each message, for the native encodings (content parts are joined; null is "").
Result<std::vector<PlainMessage>> plain_messages(const jinja::Value& messages) {
  std::vector<PlainMessage> out;
  for (const auto& m : messages.items()) {
    const jinja::Value* role = m.find("role");
    if (!role || !role->is_string()) return fail(ErrorCode::kInvalidArgument, "a chat message has no string 'role'");
    PlainMessage plain{role->as_string(), ""};
    const jinja::Value* content = m.find("content");
    if (content && content->is_string()) {
      plain.content = content->as_string();
    } else if (content && content->is_sequence()) {
      for (const auto& part : content->items()) {
        const jinja::Value* text = part.find("text");
        if (text && text->is_string()) plain.content += text->as_string();
      }
    }
    out.push_back(std::move(plain));
  }
  return out;
}

Result<std::string> render_deepseek_v4(std::span<const PlainMessage> messages, const ChatOptions& options) {
  std::string out(kDsBos);
  bool first_system = true;
  for (const auto& m : messages) {
    if (m.role != "system") continue;
    if (!first_system) out += "\n\n";
    out += m.content;
    first_system = false;
  }
  bool last_was_user = false;
  for (const auto& m : messages) {
    if (m.role == "system") continue;
    if (m.role == "user") {
      out += kDsUser;
      out += m.content;
      last_was_user = true;
    } else if (m.role == "assistant") {
      // The turn is opened (non-thinking) only right after a user message; past reasoning is
      // dropped.
      std::string_view content = m.content;
      if (auto cut = content.find("</think>"); cut != std::string_view::npos) content = content.substr(cut + 8);
      if (last_was_user) {
        out += kDsAssistant;
        out += "</think>";
      }
      out += content;
      out += kDsEos;
      last_was_user = false;
    } else {
      return fail(bad_role("deepseek_v4", m));
    }
  }
  if (options.add_generation_prompt && last_was_user) {
    out += kDsAssistant;
    out += options.thinking == Thinking::kOn ? "<think>" : "</think>";
  }
  return out;
}

Result<std::string> render_harmony(std::span<const PlainMessage> messages, const ChatOptions& options) {
  const std::string date = options.current_date.empty() ? today_utc() : options.current_date;
  std::string out = fmt::format(
      "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
      "Knowledge cutoff: 2024-06\nCurrent date: {}\n\nReasoning: {}\n\n"
      "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>",
      date, options.reasoning_effort.value_or("medium"));
  size_t start = 0;
  if (messages.front().role == "system" || messages.front().role == "developer") {
    if (!messages.front().content.empty()) {
      out += "<|start|>developer<|message|># Instructions\n\n" + messages.front().content + "\n\n<|end|>";
    }
    start = 1;
  }
  for (size_t i = start; i < messages.size(); ++i) {
    const PlainMessage& m = messages[i];
    if (m.role == "user") {
      out += "<|start|>user<|message|>" + m.content + "<|end|>";
    } else if (m.role == "assistant") {
      const bool final_turn = i + 1 == messages.size() && !options.add_generation_prompt;
      out += "<|start|>assistant<|channel|>final<|message|>" + m.content + (final_turn ? "<|return|>" : "<|end|>");
    } else if (m.role == "system" || m.role == "developer") {
      // The gpt-oss encoding renders only the first system/developer message.
      continue;
    } else {
      return fail(bad_role("harmony", m));
    }
  }
  if (options.add_generation_prompt) out += "<|start|>assistant";
  return out;
}

bool has_harmony_vocabulary(const Tokenizer& tokenizer) {
  for (const char* token : {"<|start|>", "<|channel|>", "<|message|>", "<|return|>"}) {
    if (!tokenizer.token_to_id(token)) return false;
  }
  return true;
}

}  // namespace

Result<ChatTemplate> ChatTemplate::from_jinja(std::string_view source, std::string_view name,
                                              SpecialTokens special_tokens) {
  auto parsed = jinja::Template::parse(source, name);
  if (!parsed) return fail(parsed.error());
  ChatTemplate chat(Kind::kJinja, std::string(name));
  chat.template_ = std::make_shared<const jinja::Template>(std::move(*parsed));
  chat.special_tokens_ = std::move(special_tokens);
  return chat;
}

namespace {

ChatTemplate::SpecialTokens special_tokens_of(const TokenizerConfig& config) {
  return {config.bos_token, config.eos_token, config.pad_token};
}

}  // namespace

Result<ChatTemplate> ChatTemplate::for_tokenizer(const Tokenizer& tokenizer) {
  const TokenizerConfig& config = tokenizer.config();
  if (config.chat_template) {
    std::string name = config.chat_template_origin.empty() ? "chat_template" : config.chat_template_origin;
    if (std::string_view(name).ends_with("tokenizer_config.json")) name += " chat_template";
    return from_jinja(*config.chat_template, name, special_tokens_of(config));
  }
  if (has_harmony_vocabulary(tokenizer)) return harmony();
  const std::filesystem::path source(tokenizer.source());
  const std::filesystem::path dir = source.has_parent_path() ? source.parent_path() : std::filesystem::path(".");
  std::string message =
      fmt::format("the tokenizer {} has no chat template: looked for `chat_template` in {} and for {}",
                  tokenizer.source(), (dir / "tokenizer_config.json").string(), (dir / "chat_template.jinja").string());
  if (!config.chat_template_names.empty()) {
    std::string names;
    for (const auto& n : config.chat_template_names) names += (names.empty() ? "" : ", ") + n;
    message += fmt::format(" (tokenizer_config.json lists templates {} but none named 'default')", names);
  }
  return fail(ErrorCode::kNotFound, message);
}

Result<ChatTemplate> ChatTemplate::from_file(const std::filesystem::path& path, const Tokenizer& tokenizer) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return fail(ErrorCode::kNotFound, fmt::format("chat template file {} not found", path.string()));
  }
  auto text = files::read_text_file(path, files::kMaxConfigFileBytes, "a chat template file");
  if (!text) return fail(text.error());
  return from_jinja(*text, path.string(), special_tokens_of(tokenizer.config()));
}

Result<ChatTemplate> ChatTemplate::from_spec(std::string_view spec, const Tokenizer& tokenizer) {
  const std::string name = ascii_lower(spec);
  if (name == "auto") return for_tokenizer(tokenizer);
  if (name == "deepseek_v4" || name == "deepseek-v4") return deepseek_v4();
  if (name == "harmony") return harmony();
  std::error_code ec;
  if (std::filesystem::is_regular_file(std::filesystem::path(std::string(spec)), ec)) {
    return from_file(std::string(spec), tokenizer);
  }
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("unknown chat template '{}' (expected auto for the model's own, deepseek_v4, harmony, or "
                          "the path of a Jinja template file)",
                          spec));
}

ChatTemplate ChatTemplate::deepseek_v4() {
  return ChatTemplate(Kind::kDeepSeekV4, "deepseek_v4");
}

ChatTemplate ChatTemplate::harmony() {
  return ChatTemplate(Kind::kHarmony, "harmony");
}

Result<std::string> ChatTemplate::render(std::span<const ChatMessage> messages, const ChatOptions& options) const {
  std::vector<jinja::Value> list;
  list.reserve(messages.size());
  for (const auto& m : messages) list.push_back(jinja::Value::dict({{"role", m.role}, {"content", m.content}}));
  return render(jinja::Value::list(std::move(list)), options);
}

Result<std::string> ChatTemplate::render(const jinja::Value& messages, const ChatOptions& options) const {
  if (!messages.is_sequence()) {
    return fail(ErrorCode::kInvalidArgument, "chat messages must be a list of {role, content} objects");
  }
  if (messages.items().empty()) return fail(ErrorCode::kInvalidArgument, "cannot render an empty conversation");
  if (kind_ != Kind::kJinja) {
    auto plain = plain_messages(messages);
    if (!plain) return fail(plain.error());
    return kind_ == Kind::kDeepSeekV4 ? render_deepseek_v4(*plain, options) : render_harmony(*plain, options);
  }
  // The variables transformers' apply_chat_template passes (tools and documents are None when
  // absent), then the caller's extras.
  std::vector<jinja::DictEntry> variables = {
      {jinja::Value("messages"), messages},
      {jinja::Value("tools"), options.tools.is_undefined() ? jinja::Value::none() : options.tools},
      {jinja::Value("documents"), jinja::Value::none()},
      {jinja::Value("add_generation_prompt"), jinja::Value(options.add_generation_prompt)},
  };
  for (const auto& [key, token] :
       {std::pair{"bos_token", &special_tokens_.bos_token}, std::pair{"eos_token", &special_tokens_.eos_token},
        std::pair{"pad_token", &special_tokens_.pad_token}}) {
    if (*token) variables.emplace_back(jinja::Value(key), jinja::Value(**token));
  }
  if (options.thinking != Thinking::kDefault) {
    const bool on = options.thinking == Thinking::kOn;
    variables.emplace_back(jinja::Value("enable_thinking"), jinja::Value(on));
    variables.emplace_back(jinja::Value("thinking"), jinja::Value(on));
  }
  if (options.reasoning_effort) {
    variables.emplace_back(jinja::Value("reasoning_effort"), jinja::Value(*options.reasoning_effort));
  }
  for (const auto& [key, value] : options.extra) variables.emplace_back(jinja::Value(key), value);
  jinja::RenderOptions render_options;
  if (!options.current_date.empty()) {
    auto date = parse_date(options.current_date);
    if (!date) return fail(date.error());
    render_options.now = *date;
  }
  return template_->render(jinja::Value::dict(std::move(variables)), render_options);
}

Result<size_t> ChatTemplate::overhead_tokens(const Tokenizer& tokenizer, const ChatOptions& options) const {
  const ChatMessage empty{"user", ""};
  auto rendered = render(std::span<const ChatMessage>(&empty, 1), options);
  if (!rendered) return fail(rendered.error());
  return tokenizer.count_tokens(*rendered);
}

}  // namespace ix::tok
