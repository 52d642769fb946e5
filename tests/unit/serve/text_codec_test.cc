// The output text of sim serve re-encodes to the token count it reports (docs/sim-serve.md), for
// every start offset a request can get and every length, across the passage's wrap-around.
#include "serve/text_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ix::serve {
namespace {

TEST(TextCodec, OutputTextReencodesToTheCountedTokensFromEveryStart) {
  auto codec = make_tokenizer_codec("deepseek_v3", "deepseek-r1");
  if (!codec) GTEST_SKIP() << "DeepSeek tokenizer not installed: " << codec.error().to_string();
  const auto& cycle = (*codec)->output_tokens();
  const auto& starts = (*codec)->word_starts();
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
      (*codec)->encode(text, false, ids);
      ASSERT_EQ(ids.size(), len) << "start " << start << ": '" << text << "'";
    }
  }
}

TEST(TextCodec, FallbackWordStartsAreEveryWord) {
  auto codec = make_fallback_codec();
  const auto& cycle = codec->output_tokens();
  EXPECT_EQ(codec->word_starts().size(), cycle.size());
  for (const auto& token : cycle) EXPECT_EQ(token.text.front(), ' ') << token.text;
}

}  // namespace
}  // namespace ix::serve
