// How the front turns prompts into token ids and output tokens into text.
//
// Two implementations:
//  - the model's real tokenizer (`--tokenizer`, or resolved from `--model`): exact prompt token
//    counts, the model's chat template, output text that re-encodes to the counted tokens;
//  - a fallback when no tokenizer is available: an APPROXIMATE byte-level split (each
//    whitespace-led word cut into pieces of at most 4 bytes, about what BPE gives on English
//    text), chat messages joined in a plain "<|role|>\ncontent\n" format. Token ids are hashes of
//    the pieces, so identical prompt prefixes still share ids (prefix caching works). Counts are
//    not those of any real model; description() says so and the server logs it at start.
//
// Output text: a request's completion tokens cycle through a fixed English passage (its tokens
// under the codec), starting at a per-request offset at the start of a word, so streamed text is readable and each
// token's text is known (and pre-escaped for JSON) in advance: rendering a token is a memcpy.
//
// Thread-safety: immutable after construction; all members are const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::serve {

struct ChatTurn {
  std::string role;
  std::string content;
};

struct OutputToken {
  int32_t id = 0;
  std::string text;       // raw UTF-8
  std::string json_text;  // `text` escaped for a JSON string (without quotes)
};

class TextCodec {
 public:
  virtual ~TextCodec() = default;
  // Appends the ids of `text` to `out`. add_special_tokens: the tokenizer's post-processor
  // template (e.g. BOS), as vLLM applies it to completion prompts (chat prompts: false, the chat
  // template already holds them).
  virtual void encode(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const = 0;
  // The prompt text of a conversation, ending with the assistant generation prompt unless
  // add_generation_prompt is false (vLLM's /tokenize option). Fails (kInvalidArgument) on a role
  // the model's chat template does not know.
  virtual Result<std::string> render_chat(const std::vector<ChatTurn>& messages,
                                          bool add_generation_prompt = true) const = 0;
  // The text of token ids as the server's tokenizer decodes them (HF decode with special tokens
  // kept, as vLLM's /detokenize). Ids must be below vocab_size() (the caller checks). Fails
  // (kUnsupported) for the approximate codec, whose ids are hashes of text pieces.
  virtual Result<std::string> decode(std::span<const int32_t> ids) const = 0;
  // The vocabulary string of one id (HF convert_ids_to_tokens, byte-level form: "Ġthe"), for
  // /tokenize's return_token_strs; nullopt when the codec has no vocabulary or the id is not in it.
  virtual std::optional<std::string> token_string(int32_t id) const = 0;
  // Whether prompt counts are the served model's exact counts.
  virtual bool exact() const = 0;
  // One more than the largest token id the model knows (a token-id prompt must stay below it);
  // nullopt when there is no real vocabulary (the approximate codec accepts any id).
  virtual std::optional<int32_t> vocab_size() const = 0;
  // One line for logs and /v1/models ("tokenizer deepseek_v3 (exact)" / "approximate ...").
  virtual std::string description() const = 0;
  // `text` as output tokens, for scripted output (sim serve's GSM8K answers): the tokens encode()
  // gives it (without special tokens), each with its piece of the text, so the pieces concatenate
  // to `text` exactly and re-encode to the counted tokens. Every piece is valid UTF-8: a token that
  // ends inside a character (byte-level BPE splits multi-byte characters) gets an empty piece and
  // the character goes with the token that completes it, as a streaming server holds back
  // incomplete characters; the token count stays the encoder's.
  virtual std::vector<OutputToken> output_pieces(std::string_view text) const = 0;
  // The output token cycle (never empty).
  const std::vector<OutputToken>& output_tokens() const { return output_tokens_; }
  // Indices into output_tokens() of the tokens that begin a word (their text starts with a
  // space); never empty. A request's text starts at one of these: one starting inside a word
  // ("currency" of " con|currency") would re-encode to other tokens than were counted.
  const std::vector<size_t>& word_starts() const { return word_starts_; }

 protected:
  // Fills word_starts_ from output_tokens_; implementations call it at the end of construction.
  void index_word_starts();

  std::vector<OutputToken> output_tokens_;

 private:
  std::vector<size_t> word_starts_;
};

// The approximate codec described above.
std::unique_ptr<TextCodec> make_fallback_codec();

// The exact codec: `tokenizer_spec` is a tokenizer.json path, a directory holding one, or a model
// name tok::resolve_tokenizer knows. Chat messages are rendered with the model's own chat
// template (tok::ChatTemplate::for_tokenizer); a tokenizer without one gets the fallback format
// (said in description()). Errors: the tokenizer cannot be loaded, its template does not parse.
Result<std::unique_ptr<TextCodec>> make_tokenizer_codec(const std::string& tokenizer_spec);

// The passage output tokens are drawn from.
std::string_view output_passage();

// `text` escaped for the inside of a JSON string (quotes, backslash, control characters).
std::string json_escape(std::string_view text);

}  // namespace ix::serve
