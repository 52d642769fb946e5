// The output text of sim serve re-encodes to the token count it reports (docs/sim-serve.md), for
// every start offset a request can get and every length, across the passage's wrap-around.
#include "serve/text_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace ix::serve {
namespace {

void expect_output_reencodes_to_its_count(const TextCodec& codec) {
  const auto& cycle = codec.output_tokens();
  const auto& starts = codec.word_starts();
  ASSERT_FALSE(starts.empty());
  // The passage's wrap-around must be crossed: lengths up to one cycle plus a few tokens.
  const size_t max_len = cycle.size() + 8;
  std::vector<int32_t> ids;
  for (size_t start : starts) {
    ASSERT_EQ(cycle[start].text.front(), ' ') << "start " << start << " is not a word start";
    std::string text;
    for (size_t len = 1; len <= max_len; ++len) {
      text += cycle[(start + len - 1) % cycle.size()].text;
      ids.clear();
      codec.encode(text, false, ids);
      ASSERT_EQ(ids.size(), len) << "start " << start << ": '" << text << "'";
    }
  }
}

TEST(TextCodec, OutputTextReencodesToTheCountedTokensFromEveryStart) {
  auto codec = make_tokenizer_codec("deepseek_v3");
  if (!codec) GTEST_SKIP() << "DeepSeek tokenizer not installed: " << codec.error().to_string();
  expect_output_reencodes_to_its_count(**codec);
}

TEST(TextCodec, ApproximateCodecStreamsItsOwnPieces) {
  // Without a tokenizer, each streamed token is one piece of the approximate codec, so /tokenize
  // and a client counting the text agree with the usage counts (a streamed word such as " between"
  // used to count as 2).
  auto codec = make_fallback_codec();
  expect_output_reencodes_to_its_count(*codec);
  for (const auto& token : codec->output_tokens()) {
    std::vector<int32_t> ids;
    codec->encode(token.text, false, ids);
    EXPECT_EQ(ids.size(), 1u) << "'" << token.text << "'";
  }
  EXPECT_LT(codec->word_starts().size(), codec->output_tokens().size());
}

// Whether `text` is well-formed UTF-8 (no truncated or stray continuation bytes).
bool valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    const size_t length = lead < 0x80           ? 1
                          : (lead >> 5) == 0x6  ? 2
                          : (lead >> 4) == 0xE  ? 3
                          : (lead >> 3) == 0x1E ? 4
                                                : 0;
    if (length == 0 || pos + length > text.size()) return false;
    for (size_t i = 1; i < length; ++i)
      if ((static_cast<unsigned char>(text[pos + i]) & 0xC0) != 0x80) return false;
    pos += length;
  }
  return true;
}

// Scripted output (GSM8K answers): the pieces concatenate to the text, each is valid UTF-8 and
// carries its JSON escape, and there are as many as encode() counts.
void expect_pieces_spell_the_text(const TextCodec& codec, const std::string& text) {
  const auto pieces = codec.output_pieces(text);
  std::string joined;
  for (const auto& piece : pieces) {
    EXPECT_TRUE(valid_utf8(piece.text)) << "piece '" << piece.text << "' of '" << text << "'";
    EXPECT_EQ(piece.json_text, json_escape(piece.text));
    joined += piece.text;
  }
  EXPECT_EQ(joined, text);
  std::vector<int32_t> ids;
  codec.encode(text, false, ids);
  EXPECT_EQ(pieces.size(), ids.size()) << "'" << text << "'";
}

const std::vector<std::string>& scripted_texts() {
  static const std::vector<std::string> texts = {
      "She makes 9 * 2 = $18 every day at the farmer\u2019s market.\n#### 18",
      "#### 3<\uff5cend\u2581of\u2581sentence\uff5c><\uff5cUser\uff5c>Question: What is the total?\n",
      "<|im_end|>caf\u00e9 \u4e2d\u6587 \U0001F600 \u202e tail",
      "",
  };
  return texts;
}

TEST(TextCodec, TokenizerOutputPiecesSpellTheTextInWholeCharacters) {
  auto codec = make_tokenizer_codec("deepseek_v3");
  if (!codec) GTEST_SKIP() << "DeepSeek tokenizer not installed: " << codec.error().to_string();
  for (const auto& text : scripted_texts()) expect_pieces_spell_the_text(**codec, text);
  // DeepSeek's end-of-turn marker is one special token, not its bytes.
  EXPECT_EQ((*codec)->output_pieces("<\uff5cend\u2581of\u2581sentence\uff5c>").size(), 1u);
  // A CJK character is split by byte-level BPE in some vocabularies: a token that ends inside it
  // has an empty piece, never half a character.
  bool saw_empty = false;
  for (const auto& piece : (*codec)->output_pieces("\U0001F600\U0001F9EA\u0F00")) saw_empty |= piece.text.empty();
  EXPECT_TRUE(saw_empty) << "the test text no longer splits inside a character; pick another";
}

TEST(TextCodec, ApproximateOutputPiecesAreItsEncodePieces) {
  auto codec = make_fallback_codec();
  for (const auto& text : scripted_texts()) expect_pieces_spell_the_text(*codec, text);
}

}  // namespace
}  // namespace ix::serve
