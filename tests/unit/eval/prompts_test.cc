// GSM8K prompts as lm-eval builds them: few-shot shots drawn by random.Random(seed).sample over the
// train split, each "doc_to_text target_delimiter doc_to_target fewshot_delimiter", then the
// question. The real dataset is read from ../shared/data/gsm8k (skipped when absent).
#include "eval/prompts.h"

#include <gtest/gtest.h>

#include "eval/builtin_task.h"
#include "support/subprocess.h"

namespace ix::eval {
namespace {

Gsm8kProblem problem(std::string q, std::string a) {
  return {std::move(q), std::move(a), 0};
}

TEST(EvalPrompts, ShotsThenQuestionInInferenceXsFormat) {
  auto builder = PromptBuilder::create(builtin_gsm8k_task());
  ASSERT_TRUE(builder) << builder.error().message();
  std::vector<Gsm8kProblem> pool;
  for (int i = 0; i < 30; ++i)
    pool.push_back(problem("q" + std::to_string(i), "a" + std::to_string(i) + "\n#### " + std::to_string(i)));
  auto prompts = builder->build({problem("How many?", "#### 3")}, pool, 2, 1234);
  ASSERT_TRUE(prompts) << prompts.error().message();
  ASSERT_EQ(prompts->size(), 1U);
  const auto& shots = (*prompts)[0].shots;
  ASSERT_EQ(shots.size(), 2U);
  const std::string tail = "\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer:";
  std::string expected;
  for (size_t s : shots) expected += "Question: " + pool[s].question + tail + " " + pool[s].answer + "\n\n";
  expected += "Question: How many?" + tail;
  EXPECT_EQ((*prompts)[0].text, expected);
}

TEST(EvalPrompts, ZeroShotIsTheQuestionAloneAndTooFewShotsIsAnError) {
  auto builder = PromptBuilder::create(builtin_gsm8k_task());
  auto zero = builder->build({problem("Q?", "#### 1")}, {problem("x", "y")}, 0, 1);
  ASSERT_TRUE(zero);
  EXPECT_EQ((*zero)[0].text.rfind("Question: Q?", 0), 0U);
  EXPECT_TRUE((*zero)[0].shots.empty());
  auto too_many = builder->build({problem("Q?", "#### 1")}, {problem("x", "y")}, 5, 1);
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().message().find("--num-fewshot 5"), std::string::npos);
}

TEST(EvalPrompts, RealDatasetDrawsLmEvalsShotsAndLimitIsAPrefix) {
  const std::string dir = ix::testing::shared_path("data/gsm8k");
  if (dir.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/gsm8k");
  auto data = load_gsm8k(dir);
  ASSERT_TRUE(data) << data.error().message();
  auto builder = PromptBuilder::create(builtin_gsm8k_task());
  auto all = builder->build(data->test.problems, data->train.problems, 5, 1234);
  ASSERT_TRUE(all);
  // random.Random(1234).sample(range(7473), 5) for the first two test problems (CPython).
  EXPECT_EQ((*all)[0].shots, (std::vector<size_t>{6374, 3610, 957, 61, 742}));
  EXPECT_EQ((*all)[1].shots, (std::vector<size_t>{7462, 6610, 4769, 286, 5501}));
  std::vector<Gsm8kProblem> first(data->test.problems.begin(), data->test.problems.begin() + 10);
  auto limited = builder->build(first, data->train.problems, 5, 1234);
  ASSERT_TRUE(limited);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ((*limited)[i].text, (*all)[i].text);
  EXPECT_NE((*all)[0].text.find("Question: " + data->train.problems[6374].question), std::string::npos);
  EXPECT_TRUE((*all)[0].text.ends_with("Question: " + data->test.problems[0].question +
                                       "\nEnd your response with the answer on the last line, formatted as: #### "
                                       "[number]\nAnswer:"));
}

}  // namespace
}  // namespace ix::eval
