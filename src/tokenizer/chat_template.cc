#include "tokenizer/chat_template.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>

#include "common/utf8.h"
#include "tokenizer/tokenizer.h"

namespace ix::tok {
namespace {

constexpr std::string_view kDsBos = "<｜begin▁of▁sentence｜>";
constexpr std::string_view kDsEos = "<｜end▁of▁sentence｜>";
constexpr std::string_view kDsUser = "<｜User｜>";
constexpr std::string_view kDsAssistant = "<｜Assistant｜>";

// Python's str.isspace() set, which Jinja's `trim` filter (str.strip()) removes.
bool python_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string python_strip(std::string_view text) {
  if (!utf8::is_valid(text)) return python_strip(utf8::to_valid(text));
  size_t begin = 0;
  while (begin < text.size()) {
    size_t pos = begin;
    if (!python_space(utf8::next_code_point(text, pos))) break;
    begin = pos;
  }
  size_t end = begin;
  size_t pos = begin;
  while (pos < text.size()) {
    const char32_t cp = utf8::next_code_point(text, pos);
    if (!python_space(cp)) end = pos;
  }
  return std::string(text.substr(begin, end - begin));
}

std::string_view strip_char(std::string_view text, char c, bool left, bool right) {
  while (left && !text.empty() && text.front() == c) text.remove_prefix(1);
  while (right && !text.empty() && text.back() == c) text.remove_suffix(1);
  return text;
}

std::string today_utc() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[16];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d", &tm);
  return buffer;
}

Error bad_role(ChatFamily family, const ChatMessage& message) {
  return Error(ErrorCode::kInvalidArgument, fmt::format("chat template {} does not support role '{}' (use system, "
                                                        "user or assistant)",
                                                        chat_family_name(family), message.role));
}

Result<std::string> render_deepseek(std::span<const ChatMessage> messages, const ChatOptions& options, bool v4) {
  const ChatFamily family = v4 ? ChatFamily::kDeepSeekV4 : ChatFamily::kDeepSeekV3;
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
      if (v4) {
        // V3.1-style templates open the turn (non-thinking) only right after a user message and
        // drop past reasoning.
        std::string_view content = m.content;
        if (auto cut = content.find("</think>"); cut != std::string_view::npos) content = content.substr(cut + 8);
        if (last_was_user) {
          out += kDsAssistant;
          out += "</think>";
        }
        out += content;
      } else {
        out += kDsAssistant;
        out += m.content;
      }
      out += kDsEos;
      last_was_user = false;
    } else {
      return fail(bad_role(family, m));
    }
  }
  if (options.add_generation_prompt && (!v4 || last_was_user)) {
    out += kDsAssistant;
    if (v4) {
      out += options.thinking == Thinking::kOn ? "<think>" : "</think>";
    } else if (options.thinking == Thinking::kOn) {
      out += "<think>\n";
    }
  }
  return out;
}

Result<std::string> render_chatml(std::span<const ChatMessage> messages, const ChatOptions& options) {
  std::string out;
  if (messages.front().role == "system") out += "<|im_start|>system\n" + messages.front().content + "<|im_end|>\n";
  size_t last_query = messages.size() - 1;
  for (size_t i = messages.size(); i-- > 0;) {
    const auto& c = messages[i].content;
    if (messages[i].role == "user" && !(c.starts_with("<tool_response>") && c.ends_with("</tool_response>"))) {
      last_query = i;
      break;
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      std::string_view content = m.content;
      std::string_view reasoning;
      if (const size_t close = content.rfind("</think>"); close != std::string_view::npos) {
        const std::string_view before = content.substr(0, content.find("</think>"));
        content = strip_char(std::string_view(m.content).substr(close + 8), '\n', true, false);
        reasoning = strip_char(before, '\n', false, true);
        if (const size_t open = reasoning.rfind("<think>"); open != std::string_view::npos) {
          reasoning = reasoning.substr(open + 7);
        }
        reasoning = strip_char(reasoning, '\n', true, false);
      }
      const bool last = i + 1 == messages.size();
      if (i > last_query && (last || !reasoning.empty())) {
        out += "<|im_start|>assistant\n<think>\n";
        out += strip_char(reasoning, '\n', true, true);
        out += "\n</think>\n\n";
        out += strip_char(content, '\n', true, false);
      } else {
        out += "<|im_start|>assistant\n";
        out += content;
      }
      out += "<|im_end|>\n";
    } else if (m.role != "system") {
      return fail(bad_role(ChatFamily::kChatMl, m));
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (options.thinking == Thinking::kOff) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

Result<std::string> render_llama3(std::span<const ChatMessage> messages, const ChatOptions& options) {
  std::string out = "<|begin_of_text|>";
  for (const auto& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant") return fail(bad_role(ChatFamily::kLlama3, m));
    out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + python_strip(m.content) + "<|eot_id|>";
  }
  if (options.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

Result<std::string> render_harmony(std::span<const ChatMessage> messages, const ChatOptions& options) {
  const std::string date = options.current_date.empty() ? today_utc() : options.current_date;
  std::string out = fmt::format(
      "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
      "Knowledge cutoff: 2024-06\nCurrent date: {}\n\nReasoning: {}\n\n"
      "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>",
      date, options.reasoning_effort);
  size_t start = 0;
  if (messages.front().role == "system" || messages.front().role == "developer") {
    if (!messages.front().content.empty()) {
      out += "<|start|>developer<|message|># Instructions\n\n" + messages.front().content + "\n\n<|end|>";
    }
    start = 1;
  }
  for (size_t i = start; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      out += "<|start|>user<|message|>" + m.content + "<|end|>";
    } else if (m.role == "assistant") {
      const bool final_turn = i + 1 == messages.size() && !options.add_generation_prompt;
      out += "<|start|>assistant<|channel|>final<|message|>" + m.content + (final_turn ? "<|return|>" : "<|end|>");
    } else if (m.role == "system" || m.role == "developer") {
      // The gpt-oss template renders only the first system/developer message.
      continue;
    } else {
      return fail(bad_role(ChatFamily::kHarmony, m));
    }
  }
  if (options.add_generation_prompt) out += "<|start|>assistant";
  return out;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string_view chat_family_name(ChatFamily family) {
  switch (family) {
    case ChatFamily::kDeepSeekV3: return "deepseek_v3";
    case ChatFamily::kDeepSeekV4: return "deepseek_v4";
    case ChatFamily::kChatMl: return "chatml";
    case ChatFamily::kLlama3: return "llama3";
    case ChatFamily::kHarmony: return "harmony";
  }
  return "unknown";
}

Result<ChatFamily> parse_chat_family(std::string_view name) {
  const std::string n = lower(name);
  if (n == "deepseek_v3" || n == "deepseek-v3" || n == "deepseek_r1") return ChatFamily::kDeepSeekV3;
  if (n == "deepseek_v4" || n == "deepseek-v4") return ChatFamily::kDeepSeekV4;
  if (n == "chatml" || n == "qwen3") return ChatFamily::kChatMl;
  if (n == "llama3" || n == "llama3_1" || n == "llama-3") return ChatFamily::kLlama3;
  if (n == "harmony" || n == "gptoss" || n == "gpt-oss") return ChatFamily::kHarmony;
  return fail(
      ErrorCode::kInvalidArgument,
      fmt::format("unknown chat template '{}' (expected deepseek_v3, deepseek_v4, chatml, llama3, harmony)", name));
}

ChatTemplate::ChatTemplate(ChatFamily family) : family_(family) {}

Result<ChatTemplate> ChatTemplate::for_model(std::string_view model_or_path) {
  if (auto family = parse_chat_family(model_or_path)) return ChatTemplate(*family);
  const std::string m = lower(model_or_path);
  // V3.1 and later (V3.1, V3.2, V4) use the thinking-switch template.
  if (m.find("deepseek-v3.1") != std::string::npos || m.find("deepseek-v3.2") != std::string::npos ||
      m.find("deepseek-v4") != std::string::npos) {
    return ChatTemplate(ChatFamily::kDeepSeekV4);
  }
  if (m.find("deepseek") != std::string::npos) return ChatTemplate(ChatFamily::kDeepSeekV3);
  if (m.find("qwen") != std::string::npos) return ChatTemplate(ChatFamily::kChatMl);
  if (m.find("llama") != std::string::npos) return ChatTemplate(ChatFamily::kLlama3);
  if (m.find("gpt-oss") != std::string::npos || m.find("gptoss") != std::string::npos) {
    return ChatTemplate(ChatFamily::kHarmony);
  }
  return fail(ErrorCode::kNotFound,
              fmt::format("no chat template known for '{}'; pass one of deepseek_v3, deepseek_v4, chatml, llama3, "
                          "harmony",
                          model_or_path));
}

Result<std::string> ChatTemplate::render(std::span<const ChatMessage> messages, const ChatOptions& options) const {
  if (messages.empty()) return fail(ErrorCode::kInvalidArgument, "cannot render an empty conversation");
  switch (family_) {
    case ChatFamily::kDeepSeekV3: return render_deepseek(messages, options, false);
    case ChatFamily::kDeepSeekV4: return render_deepseek(messages, options, true);
    case ChatFamily::kChatMl: return render_chatml(messages, options);
    case ChatFamily::kLlama3: return render_llama3(messages, options);
    case ChatFamily::kHarmony: return render_harmony(messages, options);
  }
  return fail(ErrorCode::kInternal, "unknown chat family");
}

Result<size_t> ChatTemplate::overhead_tokens(const Tokenizer& tokenizer, const ChatOptions& options) const {
  const ChatMessage empty{"user", ""};
  auto rendered = render(std::span<const ChatMessage>(&empty, 1), options);
  if (!rendered) return fail(rendered.error());
  return tokenizer.count_tokens(*rendered);
}

}  // namespace ix::tok
