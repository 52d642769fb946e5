// Prompt synthesis with exact token counts, and streamed-text token counting.
//
// Text is built from a per-tokenizer pool of "safe" tokens: lowercase ASCII words that encode
// to exactly one token both with a leading space (" word") and without ("word"), plus "," and
// "." used only between words. Every pre-tokenizer regex of the supported families cuts before
// each " word" and around each punctuation mark, so concatenated pool tokens re-encode to exactly
// the same ids: prompts are stable under decode -> re-encode and blocks keep their boundaries.
// The results are still verified by re-encoding (an internal check, never skipped).
//
// Thread-safety: PromptSynth is immutable after create(); all const members are thread-safe.
// StreamingTokenCounter is a single-stream object: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ix::tok {

struct SynthPrompt {
  std::string text;
  std::vector<int32_t> ids;  // encode(text, false); ids.size() is the requested count
};

class PromptSynth {
 public:
  // Builds the safe-token pool (a few ms). kUnsupported when the tokenizer has too few safe
  // tokens (fewer than 256) to make varied text. `tokenizer` must outlive the PromptSynth.
  static Result<PromptSynth> create(const Tokenizer& tokenizer);

  // (1) A random prompt of exactly `num_tokens` tokens, a pure function of (seed, index): the
  // same seed and index give byte-identical text. encode(text) has num_tokens ids and
  // encode(decode(ids)) == ids. The text starts with a leading space (unless num_tokens == 0).
  SynthPrompt random_prompt(size_t num_tokens, uint64_t seed, uint64_t index = 0) const;

  // (2) A block of exactly `block_tokens` tokens determined by `hash_id` alone (and the
  // tokenizer). For any sequence of hash ids, encode(block(h1)+block(h2)+...) ==
  // encode(block(h1)) ++ encode(block(h2)) ++ ..., so equal hash prefixes give byte-equal and
  // token-equal prompt prefixes.
  std::string block(uint64_t hash_id, size_t block_tokens) const;
  // block(h1) + block(h2) + ... for the given hash ids.
  std::string blocks(std::span<const uint64_t> hash_ids, size_t block_tokens) const;

  // A user message content such that the rendered chat prompt (one user message, options as
  // given, encoded without add_special_tokens) has exactly `total_tokens` tokens. kInvalidArgument
  // when total_tokens is smaller than the template overhead + 1.
  Result<std::string> chat_user_content(const ChatTemplate& chat, const ChatOptions& options, size_t total_tokens,
                                        uint64_t seed, uint64_t index = 0) const;

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  size_t pool_size() const { return words_.size(); }

 private:
  PromptSynth(const Tokenizer& tokenizer, std::vector<std::string> words, std::vector<std::string> punct);
  // Appends `count` pool tokens drawn from a stream of `seed` and `name` to `out`.
  void append_tokens(size_t count, uint64_t seed, std::string_view name, std::string& out) const;

  const Tokenizer* tokenizer_;
  std::vector<std::string> words_;  // " word" forms
  std::vector<std::string> punct_;  // "," "."
};

// (3) Counts the tokens of text that arrives in pieces (SSE deltas), equal at every point to
// tokenizer.count_tokens(all text so far) once finish() is called, at O(total length) cost:
// pieces far enough from the end are encoded once and dropped from the buffer.
class StreamingTokenCounter {
 public:
  explicit StreamingTokenCounter(const Tokenizer& tokenizer);
  void append(std::string_view delta);
  // Tokens of the text seen so far, as if it were complete. Encodes only the pending tail (kept to
  // a few dozen bytes after the last word boundary); cached until the next append(). Measured
  // cost with a count() after every 4-byte delta: ~10-15 us per delta (bench_tokenizer_encode).
  size_t count() const;
  // Bytes appended so far.
  size_t bytes() const { return bytes_; }
  void reset();

 private:
  const Tokenizer* tokenizer_;
  std::string pending_;
  size_t committed_tokens_ = 0;
  size_t bytes_ = 0;
  static constexpr size_t kAttemptBytes = 64;
  mutable std::optional<size_t> cached_count_;
  size_t next_attempt_ = 0;  // pending_ size at which to try committing a stable prefix again
  std::vector<int32_t> scratch_;
};

}  // namespace ix::tok
