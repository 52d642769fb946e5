// The output text of sim serve re-encodes to the token count it reports (docs/sim-serve.md), for
// every start offset a request can get and every length, across the passage's wrap-around.
#include "serve/text_codec.h"

#include <gtest/gtest.h>

#include <string>
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

}  // namespace
}  // namespace ix::serve
