// Prompt synthesis invariants on the four real tokenizers: exact counts, decode -> re-encode
// stability, block boundaries, chat prompts hitting their target, streamed counting.
#include "tokenizer/prompt_synth.h"

#include <gtest/gtest.h>

#include "common/rng.h"
#include "oracle_support.h"

namespace ix::tok {
namespace {

class PromptSynthTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string path = testing::tokenizer_json(GetParam());
    if (path.empty()) GTEST_SKIP() << "tokenizer package for " << GetParam() << " missing; run scripts/bootstrap.sh";
    auto loaded = Tokenizer::load(path);
    ASSERT_TRUE(loaded) << loaded.error().to_string();
    tokenizer_ = std::move(*loaded);
    auto synth = PromptSynth::create(*tokenizer_);
    ASSERT_TRUE(synth) << synth.error().to_string();
    synth_.emplace(std::move(*synth));
  }
  std::unique_ptr<Tokenizer> tokenizer_;
  std::optional<PromptSynth> synth_;
};

TEST_P(PromptSynthTest, RandomPromptHasExactCountAndIsStable) {
  EXPECT_GE(synth_->pool_size(), 1000u);
  for (size_t n : {0u, 1u, 2u, 7u, 128u, 1000u, 8192u}) {
    for (uint64_t index = 0; index < 3; ++index) {
      const SynthPrompt p = synth_->random_prompt(n, 42, index);
      ASSERT_EQ(p.ids.size(), n);
      EXPECT_EQ(tokenizer_->encode(p.text, false), p.ids);
      EXPECT_EQ(tokenizer_->encode(tokenizer_->decode(p.ids, false), false), p.ids);
      EXPECT_EQ(synth_->random_prompt(n, 42, index).text, p.text);  // deterministic
    }
  }
  EXPECT_NE(synth_->random_prompt(64, 42, 0).text, synth_->random_prompt(64, 42, 1).text);
  EXPECT_NE(synth_->random_prompt(64, 42, 0).text, synth_->random_prompt(64, 43, 0).text);
}

TEST_P(PromptSynthTest, BlocksKeepBoundariesWhenConcatenated) {
  constexpr size_t kBlock = 512;
  Rng rng = Rng::stream(7, "blocks");
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<uint64_t> hashes;
    for (int i = 0; i < 6; ++i) hashes.push_back(static_cast<uint64_t>(rng.uniform_int(0, 1000)));
    std::vector<int32_t> expected;
    for (uint64_t h : hashes) {
      const std::string block = synth_->block(h, kBlock);
      EXPECT_EQ(block, synth_->block(h, kBlock));
      const auto ids = tokenizer_->encode(block, false);
      ASSERT_EQ(ids.size(), kBlock);
      expected.insert(expected.end(), ids.begin(), ids.end());
    }
    EXPECT_EQ(tokenizer_->encode(synth_->blocks(hashes, kBlock), false), expected);
  }
  EXPECT_NE(synth_->block(1, 16), synth_->block(2, 16));
}

// Every packaged model's own template (and the native encodings) rendered with this tokenizer:
// chat_user_content hits its target exactly; with the model's own template (its markers are added
// tokens) the overhead is additive.
TEST_P(PromptSynthTest, ChatPromptsHitTheirTarget) {
  std::vector<std::pair<ChatTemplate, bool>> templates;  // (template, is this tokenizer's own)
  for (const char* family : testing::kFamilies) {
    const std::string path = testing::tokenizer_json(family);
    if (path.empty()) continue;
    auto other = Tokenizer::load(path);
    ASSERT_TRUE(other) << other.error().to_string();
    auto chat = ChatTemplate::for_tokenizer(**other);
    ASSERT_TRUE(chat) << family << ": " << chat.error().to_string();
    templates.emplace_back(std::move(*chat), family == GetParam());
  }
  templates.emplace_back(ChatTemplate::deepseek_v4(), GetParam() == "deepseek_v3");
  templates.emplace_back(ChatTemplate::harmony(), false);
  size_t own_checked = 0;
  for (const auto& [chat, own] : templates) {
    ChatOptions options;
    options.current_date = "2025-06-28";
    for (const Thinking thinking : {Thinking::kDefault, Thinking::kOff}) {
      options.thinking = thinking;
      for (size_t target : {200u, 1024u}) {
        auto content = synth_->chat_user_content(chat, options, target, 1, target);
        ASSERT_TRUE(content) << content.error().to_string();
        const ChatMessage m{"user", *content};
        EXPECT_EQ(tokenizer_->count_tokens(*chat.render(std::span(&m, 1), options)), target) << chat.name();
        if (own) {
          auto overhead = chat.overhead_tokens(*tokenizer_, options);
          ASSERT_TRUE(overhead);
          EXPECT_EQ(tokenizer_->count_tokens(*content), target - *overhead) << chat.name();
          ++own_checked;
        }
      }
    }
    EXPECT_FALSE(synth_->chat_user_content(chat, options, 1, 1));
  }
  EXPECT_GE(own_checked, 4u);
}

TEST_P(PromptSynthTest, StreamingCounterMatchesWholeTextCount) {
  std::string text;
  for (const auto& t : testing::corpus_texts()) text += t;
  text += synth_->random_prompt(3000, 5).text;
  text += "\n\nThe end. 東京タワー 👍🏽 naïve cafe\u0301 " + std::string(300, ' ') + "done";
  for (int i = 0; i < 200; ++i) text += "人工智能是计算机科学的一个分支\n東京タワー ";
  text = text + text;
  const size_t expected = tokenizer_->count_tokens(text);
  Rng rng = Rng::stream(11, GetParam());
  for (int trial = 0; trial < 4; ++trial) {
    StreamingTokenCounter counter(*tokenizer_);
    size_t pos = 0;
    while (pos < text.size()) {
      // Deltas cut at character boundaries, as SSE text deltas are.
      size_t len = static_cast<size_t>(rng.uniform_int(1, trial == 0 ? 4 : 64));
      size_t end = std::min(text.size(), pos + len);
      while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
      counter.append(std::string_view(text).substr(pos, end - pos));
      pos = end;
    }
    EXPECT_EQ(counter.count(), expected);
    EXPECT_EQ(counter.bytes(), text.size());
  }
  StreamingTokenCounter counter(*tokenizer_);
  EXPECT_EQ(counter.count(), 0u);
  counter.append("Hello world");
  EXPECT_EQ(counter.count(), tokenizer_->count_tokens("Hello world"));
  counter.reset();
  EXPECT_EQ(counter.count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, PromptSynthTest,
                         ::testing::ValuesIn(std::vector<std::string>(std::begin(testing::kFamilies),
                                                                      std::end(testing::kFamilies))),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ix::tok
