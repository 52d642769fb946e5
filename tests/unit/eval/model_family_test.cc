// Model families: names, guesses from served model names, stop lists and the first-marker cut.
#include "eval/model_family.h"

#include <gtest/gtest.h>

namespace ix::eval {
namespace {

TEST(ModelFamily, NamesRoundTripAndUnknownNamesAreErrors) {
  for (auto f :
       {ModelFamily::kNone, ModelFamily::kDeepseek, ModelFamily::kDeepseekV4, ModelFamily::kQwen, ModelFamily::kLlama,
        ModelFamily::kGptOss, ModelFamily::kKimi, ModelFamily::kGlm, ModelFamily::kMinimax})
    EXPECT_EQ(parse_model_family(model_family_name(f)).value(), f);
  auto bad = parse_model_family("mistral");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("deepseek_v4"), std::string::npos);
}

TEST(ModelFamily, GuessedFromServedModelNames) {
  EXPECT_EQ(guess_model_family("deepseek-ai/DeepSeek-R1-0528"), ModelFamily::kDeepseek);
  EXPECT_EQ(guess_model_family("deepseek-ai/DeepSeek-V4-Pro"), ModelFamily::kDeepseekV4);
  EXPECT_EQ(guess_model_family("Qwen/Qwen3.5-397B-A17B-FP8"), ModelFamily::kQwen);
  EXPECT_EQ(guess_model_family("meta-llama/Llama-3.3-70B-Instruct"), ModelFamily::kLlama);
  EXPECT_EQ(guess_model_family("openai/gpt-oss-120b"), ModelFamily::kGptOss);
  EXPECT_EQ(guess_model_family("moonshotai/Kimi-K2.5"), ModelFamily::kKimi);
  EXPECT_EQ(guess_model_family("zai-org/GLM-5"), ModelFamily::kGlm);
  EXPECT_EQ(guess_model_family("MiniMaxAI/MiniMax-M2.5"), ModelFamily::kMinimax);
  EXPECT_FALSE(guess_model_family("ixbench-sim").has_value());
}

TEST(ModelFamily, StopStringsAreTheTasksThenTheFamilysWithoutRepeats) {
  const std::vector<std::string> task{"</s>", "<|im_end|>"};
  EXPECT_EQ(stop_strings(task, ModelFamily::kDeepseek),
            (std::vector<std::string>{"</s>", "<|im_end|>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"}));
  EXPECT_EQ(stop_strings(task, ModelFamily::kQwen),
            (std::vector<std::string>{"</s>", "<|im_end|>", "<|endoftext|>", "<|im_start|>"}));
  EXPECT_EQ(stop_strings(task, ModelFamily::kNone), task);
  const auto v4 = stop_strings(task, ModelFamily::kDeepseekV4);
  EXPECT_NE(std::find(v4.begin(), v4.end(), "\u202e"), v4.end());
  EXPECT_EQ(family_default_max_tokens(ModelFamily::kDeepseekV4), 1024);
  EXPECT_FALSE(family_default_max_tokens(ModelFamily::kDeepseek).has_value());
}

TEST(ModelFamily, FirstMarkerIsTheEarliestOfAny) {
  const std::vector<std::string> stops{"</s>", "<｜User｜>", "<|im_end|>"};
  EXPECT_EQ(first_marker("#### 18<｜User｜>Question #### 7</s>", stops), 7U);
  EXPECT_FALSE(first_marker("#### 18", stops).has_value());
  EXPECT_EQ(first_marker("</s>", stops), 0U);
}

}  // namespace
}  // namespace ix::eval
