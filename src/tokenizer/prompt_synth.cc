#include "tokenizer/prompt_synth.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/rng.h"

namespace ix::tok {
namespace {

constexpr size_t kMinPool = 256;

bool lowercase_word(std::string_view w) {
  if (w.size() < 2 || w.size() > 12) return false;
  return std::all_of(w.begin(), w.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

bool single(const Tokenizer& tokenizer, std::string_view text, int32_t* id = nullptr) {
  const auto ids = tokenizer.encode(text, false);
  if (ids.size() != 1) return false;
  if (id != nullptr) *id = ids[0];
  return true;
}

}  // namespace

PromptSynth::PromptSynth(const Tokenizer& tokenizer, std::vector<std::string> words, std::vector<std::string> punct)
    : tokenizer_(&tokenizer), words_(std::move(words)), punct_(std::move(punct)) {}

Result<PromptSynth> PromptSynth::create(const Tokenizer& tokenizer) {
  std::vector<std::string> words;
  const int32_t vocab = tokenizer.vocab_size();
  for (int32_t id = 0; id < vocab; ++id) {
    if (tokenizer.is_special(id)) continue;
    const int32_t one[] = {id};
    const std::string text = tokenizer.decode(one, false);
    if (text.size() < 3 || text[0] != ' ' || !lowercase_word(std::string_view(text).substr(1))) continue;
    int32_t encoded = -1;
    if (!single(tokenizer, text, &encoded) || encoded != id) continue;
    if (!single(tokenizer, std::string_view(text).substr(1))) continue;
    words.push_back(text);
  }
  if (words.size() < kMinPool) {
    return fail(ErrorCode::kUnsupported,
                fmt::format("{}: only {} single-token lowercase words (need {}) to synthesize prompts from",
                            tokenizer.source(), words.size(), kMinPool));
  }
  // Punctuation only if it keeps token boundaries in context for this tokenizer.
  std::vector<std::string> punct;
  for (const char* p : {",", "."}) {
    const std::string probe = words[0] + p + words[1] + p + words[2];
    if (single(tokenizer, p) && tokenizer.count_tokens(probe) == 5) punct.emplace_back(p);
  }
  return PromptSynth(tokenizer, std::move(words), std::move(punct));
}

void PromptSynth::append_tokens(size_t count, uint64_t seed, std::string_view name, std::string& out) const {
  Rng rng = Rng::stream(seed, name);
  const auto last_word = static_cast<int64_t>(words_.size()) - 1;
  bool previous_punct = true;  // never start with punctuation
  for (size_t i = 0; i < count; ++i) {
    // Punctuation sits only between two words: not first, not last, never twice in a row.
    const bool can_punct = !punct_.empty() && !previous_punct && i + 1 < count;
    if (can_punct && rng.uniform_int(0, 9) == 0) {
      out += punct_[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(punct_.size()) - 1))];
      previous_punct = true;
    } else {
      out += words_[static_cast<size_t>(rng.uniform_int(0, last_word))];
      previous_punct = false;
    }
  }
}

SynthPrompt PromptSynth::random_prompt(size_t num_tokens, uint64_t seed, uint64_t index) const {
  SynthPrompt prompt;
  append_tokens(num_tokens, seed, fmt::format("ix.tok.random_prompt.{}", index), prompt.text);
  prompt.ids = tokenizer_->encode(prompt.text, false);
  // By construction the counts match; the repair loop below only guards against a tokenizer whose
  // regex joins pool tokens after all (decode -> re-encode until stable, as the spec asks).
  for (int round = 0; round < 16 && prompt.ids.size() != num_tokens; ++round) {
    if (prompt.ids.size() > num_tokens) {
      prompt.ids.resize(num_tokens);
    } else {
      std::string more;
      append_tokens(num_tokens - prompt.ids.size(), seed, fmt::format("ix.tok.random_prompt.{}.{}", index, round),
                    more);
      auto extra = tokenizer_->encode(more, false);
      prompt.ids.insert(prompt.ids.end(), extra.begin(), extra.end());
    }
    prompt.text = tokenizer_->decode(prompt.ids, false);
    prompt.ids = tokenizer_->encode(prompt.text, false);
  }
  return prompt;
}

std::string PromptSynth::block(uint64_t hash_id, size_t block_tokens) const {
  std::string text;
  append_tokens(block_tokens, hash_id, "ix.tok.block", text);
  return text;
}

std::string PromptSynth::blocks(std::span<const uint64_t> hash_ids, size_t block_tokens) const {
  std::string text;
  for (uint64_t h : hash_ids) append_tokens(block_tokens, h, "ix.tok.block", text);
  return text;
}

Result<std::string> PromptSynth::chat_user_content(const ChatTemplate& chat, const ChatOptions& options,
                                                   size_t total_tokens, uint64_t seed, uint64_t index) const {
  auto overhead = chat.overhead_tokens(*tokenizer_, options);
  if (!overhead) return fail(overhead.error());
  if (total_tokens < *overhead + 1) {
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("a {}-token chat prompt is shorter than the chat template's own {} tokens + 1 (template {})",
                    total_tokens, *overhead, chat.name()));
  }
  size_t content_tokens = total_tokens - *overhead;
  for (int round = 0; round < 8; ++round) {
    std::string content = random_prompt(content_tokens, seed, index).text;
    const ChatMessage message{"user", content};
    auto rendered = chat.render(std::span<const ChatMessage>(&message, 1), options);
    if (!rendered) return fail(rendered.error());
    const size_t total = tokenizer_->count_tokens(*rendered);
    if (total == total_tokens) return content;
    const auto delta = static_cast<int64_t>(total_tokens) - static_cast<int64_t>(total);
    if (static_cast<int64_t>(content_tokens) + delta < 1) break;
    content_tokens = static_cast<size_t>(static_cast<int64_t>(content_tokens) + delta);
  }
  return fail(ErrorCode::kInternal,
              fmt::format("could not reach exactly {} tokens with the chat template {}", total_tokens, chat.name()));
}

StreamingTokenCounter::StreamingTokenCounter(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {
  reset();
}

void StreamingTokenCounter::append(std::string_view delta) {
  if (delta.empty()) return;
  cached_count_.reset();
  pending_.append(delta);
  bytes_ += delta.size();
  if (pending_.size() < next_attempt_) return;
  scratch_.clear();
  const size_t cut = tokenizer_->encode_stable_prefix(pending_, scratch_);
  committed_tokens_ += scratch_.size();
  pending_.erase(0, cut);
  // After a failed attempt wait for the buffer to double, so the cost stays linear overall.
  next_attempt_ = cut > 0 ? pending_.size() + kAttemptBytes : std::max(pending_.size() * 2, kAttemptBytes);
}

size_t StreamingTokenCounter::count() const {
  if (!cached_count_) cached_count_ = committed_tokens_ + tokenizer_->count_tokens(pending_);
  return *cached_count_;
}

void StreamingTokenCounter::reset() {
  pending_.clear();
  cached_count_.reset();
  committed_tokens_ = 0;
  bytes_ = 0;
  next_attempt_ = kAttemptBytes;
}

}  // namespace ix::tok
