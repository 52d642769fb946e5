#include "workload/random_dataset.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tokenizer/chat_template.h"
#include "tokenizer/prompt_synth.h"
#include "tokenizer/tokenizer.h"

namespace ix::workload {
namespace {

TEST(RandomShapes, LengthsAreUniformInTheInferencexRange) {
  RandomDatasetOptions o{
      .input_len = 1000, .output_len = 100, .range_ratio = 0.8, .num_prompts = 5000, .num_warmups = 10, .seed = 1};
  auto shapes = random_shapes(o);
  ASSERT_TRUE(shapes.has_value());
  ASSERT_EQ(shapes->measured.size(), 5000u);
  ASSERT_EQ(shapes->warmups.size(), 10u);
  int64_t min_in = 1 << 30, max_in = 0, min_out = 1 << 30, max_out = 0;
  double sum_in = 0;
  for (const auto& s : shapes->measured) {
    min_in = std::min(min_in, s.prompt_len);
    max_in = std::max(max_in, s.prompt_len);
    min_out = std::min(min_out, s.output_len);
    max_out = std::max(max_out, s.output_len);
    sum_in += static_cast<double>(s.prompt_len);
  }
  EXPECT_EQ(min_in, 800);  // [floor(0.8 * 1000), 1000], both ends reachable
  EXPECT_EQ(max_in, 1000);
  EXPECT_EQ(min_out, 80);
  EXPECT_EQ(max_out, 100);
  EXPECT_NEAR(sum_in / 5000, 900, 3);
  // Same seed, same lengths; warmups do not shift the measured draws.
  RandomDatasetOptions more = o;
  more.num_warmups = 99;
  EXPECT_EQ(random_shapes(more)->measured[4999].prompt_len, shapes->measured[4999].prompt_len);
}

TEST(RandomShapes, RatioOneIsFixedAndBadInputIsRejected) {
  auto fixed = random_shapes(
      {.input_len = 7, .output_len = 3, .range_ratio = 1.0, .num_prompts = 20, .num_warmups = 0, .seed = 0});
  ASSERT_TRUE(fixed.has_value());
  for (const auto& s : fixed->measured) {
    EXPECT_EQ(s.prompt_len, 7);
    EXPECT_EQ(s.output_len, 3);
  }
  auto zero_ratio = random_shapes(
      {.input_len = 4, .output_len = 4, .range_ratio = 0.0, .num_prompts = 200, .num_warmups = 0, .seed = 0});
  for (const auto& s : zero_ratio->measured) EXPECT_GE(s.prompt_len, 1);  // never an empty prompt
  EXPECT_FALSE(random_shapes(
                   {.input_len = 0, .output_len = 4, .range_ratio = 0.5, .num_prompts = 1, .num_warmups = 0, .seed = 0})
                   .has_value());
  EXPECT_FALSE(random_shapes(
                   {.input_len = 4, .output_len = 4, .range_ratio = 1.5, .num_prompts = 1, .num_warmups = 0, .seed = 0})
                   .has_value());
}

class RandomDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = tok::load_tokenizer("deepseek_v3");
    if (!t) GTEST_SKIP() << "DeepSeek tokenizer not installed (scripts/bootstrap.sh): " << t.error().message();
    tokenizer_ = std::move(*t);
    auto s = tok::PromptSynth::create(*tokenizer_);
    ASSERT_TRUE(s.has_value()) << s.error().to_string();
    synth_.emplace(std::move(*s));
  }
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  std::optional<tok::PromptSynth> synth_;
};

TEST_F(RandomDatasetTest, PlainPromptsHaveExactTokenCountsAndAreSeeded) {
  RandomDataset dataset(*synth_, PromptFormat::kPlain, std::nullopt, 42);
  // The server encodes a completion prompt with the special tokens (DeepSeek's BOS), as vLLM's
  // RandomDataset counts them: the text has one token less and the server sees exactly n.
  const size_t special = tokenizer_->num_special_tokens_to_add();
  ASSERT_EQ(special, 1u);
  std::vector<int32_t> bos;
  tokenizer_->encode_as_server("", true, bos);
  ASSERT_EQ(bos.size(), 1u);  // DeepSeek's BOS, from tokenizer_config.json
  for (int64_t n : {2, 17, 1024, 3000}) {
    auto text = dataset.prompt(static_cast<size_t>(n), n);
    ASSERT_TRUE(text.has_value());
    EXPECT_EQ(tokenizer_->count_tokens(*text) + special, static_cast<size_t>(n)) << n;
  }
  EXPECT_EQ(tokenizer_->count_tokens(*dataset.prompt(1, 1)), 1u);  // never an empty prompt
  EXPECT_EQ(*dataset.prompt(3, 50), *dataset.prompt(3, 50));
  EXPECT_NE(*dataset.prompt(3, 50), *dataset.prompt(4, 50));
  RandomDataset other_seed(*synth_, PromptFormat::kPlain, std::nullopt, 43);
  EXPECT_NE(*dataset.prompt(3, 50), *other_seed.prompt(3, 50));
}

TEST_F(RandomDatasetTest, ChatTemplateOverheadIsSubtracted) {
  RandomDataset rendered(*synth_, PromptFormat::kChatRendered, *tok::ChatTemplate::for_tokenizer(*tokenizer_), 1);
  auto text = rendered.prompt(0, 100);
  ASSERT_TRUE(text.has_value()) << text.error().to_string();
  EXPECT_EQ(tokenizer_->count_tokens(*text), 100u);
  EXPECT_NE(text->find("<｜User｜>"), std::string::npos);
  RandomDataset content(*synth_, PromptFormat::kChatContent, *tok::ChatTemplate::for_tokenizer(*tokenizer_), 1);
  auto user = content.prompt(0, 100);
  ASSERT_TRUE(user.has_value());
  EXPECT_LT(tokenizer_->count_tokens(*user), 100u);
}

TEST_F(RandomDatasetTest, MinPromptTokensIsTheShortestPromptItCanMake) {
  RandomDataset plain(*synth_, PromptFormat::kPlain, std::nullopt, 1);
  EXPECT_EQ(*plain.min_prompt_tokens(), 1);
  for (const auto format : {PromptFormat::kChatRendered, PromptFormat::kChatContent}) {
    RandomDataset chat(*synth_, format, *tok::ChatTemplate::for_tokenizer(*tokenizer_), 1);
    auto shortest = chat.min_prompt_tokens();
    ASSERT_TRUE(shortest.has_value()) << shortest.error().to_string();
    EXPECT_GT(*shortest, 1);
    EXPECT_TRUE(chat.prompt(0, *shortest).has_value());
    EXPECT_FALSE(chat.prompt(0, *shortest - 1).has_value());
  }
}

TEST_F(RandomDatasetTest, PrefetcherServesPromptsInSendOrder) {
  RandomDataset dataset(*synth_, PromptFormat::kPlain, std::nullopt, 7);
  std::vector<std::pair<size_t, int64_t>> order;
  for (size_t i = 0; i < 200; ++i) order.emplace_back(i, 32 + static_cast<int64_t>(i % 5));
  PromptPrefetcher prefetcher(dataset, order, 2);
  ASSERT_TRUE(prefetcher.wait_for_first(10).has_value());
  EXPECT_GE(prefetcher.ready_count(), 10u);
  for (size_t k = 0; k < order.size(); ++k) {
    auto p = prefetcher.get(k);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(**p, *dataset.prompt(order[k].first, order[k].second));
  }
}

TEST_F(RandomDatasetTest, PrefetcherLookaheadIsBoundedAndTakeMovesPromptsOut) {
  RandomDataset dataset(*synth_, PromptFormat::kPlain, std::nullopt, 9);
  std::vector<std::pair<size_t, int64_t>> order;
  for (size_t i = 0; i < 100; ++i) order.emplace_back(i, 8);
  PromptPrefetcher prefetcher(dataset, order, 2, /*lookahead=*/8);
  ASSERT_TRUE(prefetcher.wait_for_first(1).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LE(prefetcher.ready_count(), 1u + 8u);
  for (size_t k = 0; k < order.size(); ++k) {
    auto p = prefetcher.take(k);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(*p, *dataset.prompt(k, 8));
  }
}

}  // namespace
}  // namespace ix::workload
