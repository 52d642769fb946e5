// Chat templates: the model's own Jinja `chat_template`, rendered by src/jinja exactly as
// transformers' apply_chat_template renders it, plus two native encodings whose upstream
// definition is Python code rather than Jinja.
//
//   ChatTemplate::for_tokenizer(t)  the template the tokenizer's files carry: tokenizer_config.json
//                                   `chat_template` (a string, or a list of {name, template} whose
//                                   "default" entry is used), or chat_template.jinja beside
//                                   tokenizer.json (which wins when both exist). Variables:
//                                   messages, add_generation_prompt, bos/eos/pad_token (from
//                                   tokenizer_config.json, when set), tools (None when absent),
//                                   documents (None), enable_thinking and thinking
//                                   (both set from ChatOptions::thinking unless it is kDefault),
//                                   reasoning_effort when set, and ChatOptions::extra.
//                                   strftime_now() sees ChatOptions::current_date.
//   ChatTemplate::deepseek_v4()     DeepSeek-V3.1/V3.2/V4's encoding (V4's is Python upstream):
//                                   bos + system prompts joined by "\n\n" + "<｜User｜>"+u +
//                                   "<｜Assistant｜>" then "<think>" (Thinking::kOn) or "</think>"
//                                   (kOff, kDefault); past assistant turns "</think>"+a+eos after a
//                                   user turn, their reasoning dropped. One user message in thinking
//                                   mode renders exactly "<｜begin▁of▁sentence｜><｜User｜>{u}<｜Assistant｜><think>".
//   ChatTemplate::harmony()         gpt-oss's harmony encoding (vLLM renders gpt-oss prompts with the
//                                   openai-harmony library; the npm gpt-oss tokenizer ships no
//                                   template): system message with identity, knowledge cutoff,
//                                   current date and reasoning effort; a leading system/developer
//                                   message as the developer "# Instructions"; user
//                                   "<|start|>user<|message|>u<|end|>"; past assistant turns on the
//                                   final channel; generation prompt "<|start|>assistant".
//
// for_tokenizer() falls back to harmony() for a tokenizer that has no template but has harmony's
// special tokens (<|start|>, <|channel|>, <|message|>, <|return|>), as the gpt-oss package does.
// Goldens in tests/unit/tokenizer/chat_goldens.json come from the real templates rendered with
// Jinja2 (tests/oracle/render_chat_templates.py); the Jinja engine itself is checked against
// @huggingface/jinja (tests/unit/jinja/oracle_test.cc).
//
// Thread-safety: ChatTemplate is an immutable value (copies share the parsed template); all
// members are const and may be called from any number of threads at once.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "jinja/template.h"
#include "jinja/value.h"

namespace ix::tok {

class Tokenizer;

enum class Thinking { kDefault, kOn, kOff };

struct ChatMessage {
  std::string role;  // "system", "developer" (harmony), "user", "assistant", "tool"
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  Thinking thinking = Thinking::kDefault;
  // harmony's "Reasoning:" line ("low" | "medium" | "high"; unset: medium); passed to Jinja
  // templates as `reasoning_effort` only when set.
  std::optional<std::string> reasoning_effort;
  // The current date (YYYY-MM-DD) harmony's system message and Jinja's strftime_now() see. Empty:
  // today (UTC for harmony, local time for strftime_now, as the real renderers). Benchmarks pin it
  // so prompts are reproducible.
  std::string current_date;
  // Jinja templates only: the OpenAI `tools` list (Undefined: none) and extra template variables
  // (a server's chat_template_kwargs).
  jinja::Value tools;
  std::vector<std::pair<std::string, jinja::Value>> extra;
};

class ChatTemplate {
 public:
  // The tokenizer's own template (see above). Errors: kNotFound naming the files looked for when
  // the tokenizer has none (and no harmony vocabulary), kParse when the template does not parse
  // (line:column in the template).
  static Result<ChatTemplate> for_tokenizer(const Tokenizer& tokenizer);
  // A Jinja chat template given as text; `name` prefixes error positions. The special tokens are
  // template variables only when given (transformers passes the ones the tokenizer has).
  struct SpecialTokens {
    std::optional<std::string> bos_token;
    std::optional<std::string> eos_token;
    std::optional<std::string> pad_token;
  };
  static Result<ChatTemplate> from_jinja(std::string_view source, std::string_view name,
                                         SpecialTokens special_tokens = {});
  // A .jinja file, with the tokenizer's bos/eos tokens. Errors: kNotFound, kIo, kParse.
  static Result<ChatTemplate> from_file(const std::filesystem::path& path, const Tokenizer& tokenizer);
  // What --chat-template accepts: "auto" (for_tokenizer), "deepseek_v4", "harmony", or a path to
  // a Jinja file. Errors as above; kInvalidArgument for anything else.
  static Result<ChatTemplate> from_spec(std::string_view spec, const Tokenizer& tokenizer);
  static ChatTemplate deepseek_v4();
  static ChatTemplate harmony();

  // "deepseek_v4", "harmony", or the Jinja template's origin (".../tokenizer_config.json").
  const std::string& name() const { return name_; }
  bool is_jinja() const { return kind_ == Kind::kJinja; }

  // Renders a conversation of plain-text messages. Errors (kInvalidArgument): an empty
  // conversation, a role the native encodings do not know, anything the Jinja template raises.
  Result<std::string> render(std::span<const ChatMessage> messages, const ChatOptions& options = {}) const;
  // Renders full OpenAI-style messages (a list of dicts: content strings or parts, tool_calls,
  // reasoning_content, ...). The native encodings use role and string content only.
  Result<std::string> render(const jinja::Value& messages, const ChatOptions& options = {}) const;

  // Tokens the template adds around one user message: encode(render({user: content})) minus
  // encode(content), measured with an empty content. For content made of the prompt_synth
  // helpers, count(render({user: c})) == overhead + count(c) exactly (tests check it).
  Result<size_t> overhead_tokens(const Tokenizer& tokenizer, const ChatOptions& options = {}) const;

 private:
  enum class Kind { kJinja, kDeepSeekV4, kHarmony };
  ChatTemplate(Kind kind, std::string name) : kind_(kind), name_(std::move(name)) {}

  Kind kind_;
  std::string name_;
  std::shared_ptr<const jinja::Template> template_;
  SpecialTokens special_tokens_;
};

}  // namespace ix::tok
