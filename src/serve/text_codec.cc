#include "serve/text_codec.h"

#include <fmt/format.h>

#include <optional>
#include <span>

#include "common/rng.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ix::serve {
namespace {

// Starts with a space so that the cycle's wrap-around ("accelerator." then " The") re-encodes to
// the same tokens: without it the wrap read "accelerator.The", one token fewer.
constexpr std::string_view kPassage =
    " The benchmark measures how quickly a serving engine turns prompts into tokens under load. Each "
    "request arrives with a prompt of known length and asks for a fixed number of output tokens. The "
    "client records the time to the first token, the gaps between later tokens, and the time until the "
    "last one. Throughput per GPU and interactivity trade against each other as concurrency grows, and "
    "the frontier of that trade is what the dashboard shows for every model, engine and accelerator.";

constexpr int32_t kFallbackVocabBase = 256;
constexpr int32_t kFallbackVocabSize = 100000;
constexpr size_t kMaxPieceBytes = 4;

std::string plain_chat(const std::vector<ChatTurn>& messages, bool add_generation_prompt) {
  std::string text;
  for (const auto& message : messages) text += fmt::format("<|{}|>\n{}\n", message.role, message.content);
  if (add_generation_prompt) text += "<|assistant|>\n";
  return text;
}

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

// The approximate codec's pieces: a leading whitespace run + up to 4 bytes of non-space (a long
// whitespace run is cut), never inside a UTF-8 sequence. Returns where the piece at `pos` ends.
size_t piece_end(std::string_view text, size_t pos) {
  const size_t start = pos;
  while (pos < text.size() && is_space(text[pos]) && pos - start < kMaxPieceBytes) ++pos;
  const size_t word_start = pos;
  while (pos < text.size() && !is_space(text[pos]) && pos - word_start < kMaxPieceBytes) ++pos;
  while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
  return pos == start ? pos + 1 : pos;
}

int32_t piece_id(std::string_view piece) {
  return kFallbackVocabBase + static_cast<int32_t>(fnv1a64(piece) % (kFallbackVocabSize - kFallbackVocabBase));
}

class FallbackCodec final : public TextCodec {
 public:
  FallbackCodec() {
    // Output tokens: the passage's own pieces, so streamed text re-encodes (/tokenize, a client's
    // count) to exactly the tokens streamed.
    for (size_t pos = 0; pos < kPassage.size();) {
      const size_t end = piece_end(kPassage, pos);
      std::string piece(kPassage.substr(pos, end - pos));
      output_tokens_.push_back({piece_id(piece), piece, json_escape(piece)});
      pos = end;
    }
    index_word_starts();
  }

  void encode(std::string_view text, bool, std::vector<int32_t>& out) const override {
    for (size_t pos = 0; pos < text.size();) {
      const size_t end = piece_end(text, pos);
      out.push_back(piece_id(text.substr(pos, end - pos)));
      pos = end;
    }
  }

  std::vector<OutputToken> output_pieces(std::string_view text) const override {
    std::vector<OutputToken> out;
    for (size_t pos = 0; pos < text.size();) {
      const size_t end = piece_end(text, pos);
      std::string piece(text.substr(pos, end - pos));
      out.push_back({piece_id(piece), piece, json_escape(piece)});
      pos = end;
    }
    return out;
  }

  Result<std::string> render_chat(const std::vector<ChatTurn>& messages, bool add_generation_prompt) const override {
    return plain_chat(messages, add_generation_prompt);
  }
  Result<std::string> decode(std::span<const int32_t>) const override {
    return fail(ErrorCode::kUnsupported,
                "the approximate codec cannot decode token ids (its ids are hashes of text pieces); start sim serve "
                "with --tokenizer for /detokenize");
  }
  std::optional<std::string> token_string(int32_t) const override { return std::nullopt; }

  bool exact() const override { return false; }
  std::optional<int32_t> vocab_size() const override { return std::nullopt; }
  std::string description() const override {
    return "approximate token counts (no tokenizer: whitespace-led pieces of at most 4 bytes; pass --tokenizer "
           "for exact counts)";
  }
};

class TokenizerCodec final : public TextCodec {
 public:
  TokenizerCodec(std::unique_ptr<tok::Tokenizer> tokenizer, std::optional<tok::ChatTemplate> chat)
      : tokenizer_(std::move(tokenizer)), chat_(std::move(chat)) {
    for (int32_t id : tokenizer_->encode(kPassage, false)) {
      std::string text = tokenizer_->decode(std::span<const int32_t>(&id, 1), false);
      output_tokens_.push_back({id, text, json_escape(text)});
    }
    index_word_starts();
  }

  void encode(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const override {
    tokenizer_->encode_as_server(text, add_special_tokens, out);  // vLLM tokenizes through transformers
  }

  Result<std::string> render_chat(const std::vector<ChatTurn>& messages, bool add_generation_prompt) const override {
    if (!chat_) return plain_chat(messages, add_generation_prompt);
    std::vector<tok::ChatMessage> converted;
    converted.reserve(messages.size());
    for (const auto& message : messages) converted.push_back({message.role, message.content});
    tok::ChatOptions options;
    options.add_generation_prompt = add_generation_prompt;
    options.current_date = "2026-01-01";  // pinned so prompts (and their counts) are reproducible
    return chat_->render(converted, options);
  }
  Result<std::string> decode(std::span<const int32_t> ids) const override {
    return tokenizer_->decode(ids, false);  // vLLM's /detokenize: tokenizer.decode(ids), specials kept
  }

  // Tokens are grouped until the group decodes to the next bytes of `text`: a token that ends
  // inside a character decodes to U+FFFD alone, and only with the tokens completing the character
  // to the text. The group's text goes to its last token, the others get "". Whatever no group
  // matched (a normalizer that changed the text) goes to the last token, so the pieces always
  // concatenate to `text`.
  std::vector<OutputToken> output_pieces(std::string_view text) const override {
    const std::vector<int32_t> ids = tokenizer_->encode(text, false);
    std::vector<OutputToken> out;
    out.reserve(ids.size());
    size_t pos = 0;
    size_t group = 0;  // first token of the group being built
    for (size_t i = 0; i < ids.size(); ++i) {
      out.push_back({ids[i], "", ""});
      const std::string decoded =
          tokenizer_->decode(std::span<const int32_t>(ids).subspan(group, i + 1 - group), false);
      if (i + 1 < ids.size() && text.substr(pos, decoded.size()) != decoded) continue;
      const size_t take = i + 1 < ids.size() ? decoded.size() : text.size() - pos;
      out.back().text = std::string(text.substr(pos, take));
      out.back().json_text = json_escape(out.back().text);
      pos += take;
      group = i + 1;
    }
    return out;
  }
  std::optional<std::string> token_string(int32_t id) const override {
    auto token = tokenizer_->id_to_token(id);
    if (!token) return std::nullopt;
    return std::string(*token);
  }

  bool exact() const override { return true; }
  std::optional<int32_t> vocab_size() const override { return tokenizer_->vocab_size(); }
  std::string description() const override {
    return fmt::format("exact token counts (tokenizer {}; chat template {})", tokenizer_->source(),
                       chat_ ? chat_->name() : "none: plain role format");
  }

 private:
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  std::optional<tok::ChatTemplate> chat_;
};

}  // namespace

Result<std::unique_ptr<TextCodec>> make_tokenizer_codec(const std::string& tokenizer_spec) {
  auto tokenizer = tok::load_tokenizer(tokenizer_spec);
  if (!tokenizer) return std::unexpected(tokenizer.error());
  // The model's own chat template; a tokenizer without one gets the plain role format (said in
  // description()), but a template that does not parse is an error.
  std::optional<tok::ChatTemplate> chat;
  if (auto found = tok::ChatTemplate::for_tokenizer(**tokenizer)) {
    chat = std::move(*found);
  } else if (found.error().code() != ErrorCode::kNotFound) {
    return std::unexpected(found.error());
  }
  auto codec = std::make_unique<TokenizerCodec>(std::move(*tokenizer), chat);
  if (codec->output_tokens().empty()) {
    return fail(ErrorCode::kInvalidArgument, "tokenizer " + tokenizer_spec + " gives no tokens for plain English text");
  }
  return std::unique_ptr<TextCodec>(std::move(codec));
}

void TextCodec::index_word_starts() {
  word_starts_.clear();
  for (size_t i = 0; i < output_tokens_.size(); ++i) {
    if (!output_tokens_[i].text.empty() && output_tokens_[i].text.front() == ' ') word_starts_.push_back(i);
  }
  if (word_starts_.empty() && !output_tokens_.empty()) word_starts_.push_back(0);
}

std::unique_ptr<TextCodec> make_fallback_codec() {
  return std::make_unique<FallbackCodec>();
}

std::string_view output_passage() {
  return kPassage;
}

std::string json_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace ix::serve
