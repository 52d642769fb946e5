// The GSM8K filters and exact_match of the built-in task (InferenceX's gsm8k.yaml), case by case as
// lm-eval's RegexFilter and HF evaluate's exact_match compute them.
#include "eval/scoring.h"

#include <gtest/gtest.h>

#include "eval/builtin_task.h"
#include "eval/py_regex.h"

namespace ix::eval {
namespace {

const TaskScorer& scorer() {
  static const TaskScorer s = *TaskScorer::create(builtin_gsm8k_task());
  return s;
}
constexpr size_t kStrict = 0;
constexpr size_t kFlexible = 1;
const std::string kTarget = "She makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 18";

TEST(PyRegex, FindallShapesFollowPython) {
  auto none = *PyRegex::compile("a.");
  EXPECT_EQ(none.findall("ab ac"), (std::vector<std::vector<std::string>>{{"ab"}, {"ac"}}));
  auto two = *PyRegex::compile("(x)|(y)");
  EXPECT_EQ(two.findall("yx"), (std::vector<std::vector<std::string>>{{"", "y"}, {"x", ""}}));
  auto empty = *PyRegex::compile("z*");
  EXPECT_EQ(empty.findall("az").size(), 3U);  // "", "z", "" as re.findall('z*', 'az')
  EXPECT_FALSE(PyRegex::compile("(unclosed").has_value());
}

TEST(PyRegex, SubAndDollarFollowPython) {
  auto dot_end = *PyRegex::compile("\\.$");
  EXPECT_EQ(dot_end.sub("1.5."), "1.5");
  EXPECT_EQ(dot_end.sub("18.\n"), "18\n");  // $ also matches before a final newline
  auto upto = *PyRegex::compile("(?s).*#### ");
  EXPECT_EQ(upto.sub("a\n#### 3\nb #### 4"), "4");
  auto comma = *PyRegex::compile(",");
  EXPECT_EQ(comma.sub("1,000,000"), "1000000");
  EXPECT_EQ(comma.sub(std::string("\xff,\xfe")), std::string("\xff\xfe"));  // not UTF-8: matched as bytes
}

TEST(Gsm8kScoring, StrictMatchTakesTheLastHashLine) {
  EXPECT_EQ(scorer().extract(kStrict, "work... #### 7\nmore\n#### 18"), "18");
  EXPECT_EQ(scorer().extract(kStrict, "The answer is 18."), "[invalid]");
  EXPECT_EQ(scorer().extract(kStrict, "#### -3.5,"), "-3.5,");
}

TEST(Gsm8kScoring, FlexibleExtractTakesTheLastNumberAndTheFirstNonEmptyGroup) {
  EXPECT_EQ(scorer().extract(kFlexible, "costs $1,000 in 2 days so 18"), "18");
  EXPECT_EQ(scorer().extract(kFlexible, "total $1,000."), "$1,000.");
  EXPECT_EQ(scorer().extract(kFlexible, "seven"), "[invalid]");
  EXPECT_EQ(scorer().extract(kFlexible, "x 5"), "5");  // the second alternative (one digit)
}

TEST(Gsm8kScoring, ExactMatchIgnoresCommasDollarsPrefixAndFinalDot) {
  EXPECT_TRUE(scorer().exact_match("18", kTarget));
  EXPECT_TRUE(scorer().exact_match("$18.", kTarget));
  EXPECT_TRUE(scorer().exact_match("1,000", "#### 1000"));
  EXPECT_FALSE(scorer().exact_match("18.0", kTarget));
  EXPECT_FALSE(scorer().exact_match("[invalid]", kTarget));
  EXPECT_TRUE(scorer().exact_match("ABC", "#### abc"));  // ignore_case
}

TEST(Gsm8kScoring, ScoreGivesOneVerdictPerFilter) {
  auto verdicts = scorer().score("9 * 2 = 18 dollars\n#### 18", kTarget);
  ASSERT_EQ(verdicts.size(), 2U);
  EXPECT_EQ(scorer().filter_names(), (std::vector<std::string>{"strict-match", "flexible-extract"}));
  EXPECT_TRUE(verdicts[kStrict].correct);
  EXPECT_TRUE(verdicts[kFlexible].correct);
  auto wrong_tail = scorer().score("#### 18\n<|User|> Question: 3 apples #### 7", kTarget);
  EXPECT_FALSE(wrong_tail[kStrict].correct);
  EXPECT_FALSE(wrong_tail[kFlexible].correct);
}

TEST(Gsm8kScoring, MeanStderrIsSampleStdOverSqrtN) {
  // statistics.stdev([1, 1, 1, 0]) / sqrt(4) = 0.5 / 2
  auto m = mean_with_stderr({1, 1, 1, 0});
  EXPECT_DOUBLE_EQ(m.mean, 0.75);
  EXPECT_DOUBLE_EQ(m.stderr_, 0.25);
  EXPECT_EQ(mean_with_stderr({}).n, 0U);
  EXPECT_DOUBLE_EQ(mean_with_stderr({1}).stderr_, 0.0);
}

TEST(Gsm8kScoring, ABadRegexInATaskIsAnError) {
  config::LmEvalTask task = builtin_gsm8k_task();
  task.filters[0].regex_pattern = "([0-9";
  auto s = TaskScorer::create(task);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("strict-match"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace ix::eval
