// GSM8K answer mode of sim serve: questions found in both prompt formats, reference solutions,
// verdicts (deterministic per problem, at the asked rates), wrong answers that differ, runaway
// scripts (marker first, then junk whose numbers defeat both answer filters), lengths, loading.
#include "serve/gsm8k_answers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "eval/gsm8k_dataset.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::serve {
namespace {

constexpr std::string_view kInstruction =
    "\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer:";

// Two problems in test.jsonl's shape.
constexpr std::string_view kSmallSplit =
    R"({"question": "Tom has 3 apples and buys 4 more. How many apples does he have?", "answer": "He has 3+4=<<3+4=7>>7 apples.\n#### 7"})"
    "\n"
    R"({"question": "A box holds 1,200 pens. How many pens are in 2 boxes?", "answer": "2*1,200=<<2*1200=2400>>2,400\n#### 2,400"})"
    "\n";

std::filesystem::path write_split(const std::string& name, std::string_view text) {
  const auto dir = testing::scratch_dir(name);
  std::ofstream(dir / "test.jsonl") << text;
  return dir;
}

std::string normalized(std::string text) {
  std::erase_if(text, [](char c) { return c == ',' || c == '$'; });
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

// The last match of InferenceX's strict-match and flexible-extract filters (group_select -1).
std::string last_strict(const std::string& text) {
  static const std::regex strict(R"(#### (\-?[0-9\.\,]+))");
  std::string last;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), strict); it != std::sregex_iterator(); ++it)
    last = (*it)[1];
  return normalized(last);
}
std::string last_flexible(const std::string& text) {
  static const std::regex flexible(R"((-?[$0-9.,]{2,})|(-?[0-9]+))");
  std::string last;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), flexible); it != std::sregex_iterator(); ++it)
    last = (*it)[0];
  return normalized(last);
}

TEST(Gsm8kAnswers, FindsTheLastQuestionOfAnInferenceXPrompt) {
  const std::string prompt = "Question: First shot?" + std::string(kInstruction) + " It is 1.\n#### 1\n\n" +
                             "Question: How many cats?" + std::string(kInstruction);
  EXPECT_EQ(gsm8k_question(prompt), "How many cats?");
}

TEST(Gsm8kAnswers, FindsTheLastQuestionOfAnLmEvalPrompt) {
  EXPECT_EQ(gsm8k_question("Question: Shot one?\nAnswer: 2\n#### 2\n\nQuestion: Target one?\nAnswer:"), "Target one?");
  // Multi-line questions stay whole; a prompt that ends with the question is read to its end.
  EXPECT_EQ(gsm8k_question("Question: Line one.\nLine two?\nAnswer:"), "Line one.\nLine two?");
  EXPECT_EQ(gsm8k_question("Question: No cue"), "No cue");
  EXPECT_EQ(gsm8k_question("Just some text"), std::nullopt);
}

TEST(Gsm8kAnswers, ReferenceSolutionDropsCalculatorAnnotations) {
  EXPECT_EQ(gsm8k_reference_solution("Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs.\n#### 9"),
            "Janet sells 16 - 3 - 4 = 9 duck eggs.\n#### 9");
  EXPECT_EQ(gsm8k_reference_solution("a <<1+1=2>>2 and <<2*2=4>>4\n#### 4"), "a 2 and 4\n#### 4");
  EXPECT_EQ(gsm8k_reference_solution("an open << stays\n#### 1"), "an open << stays\n#### 1");
}

TEST(Gsm8kAnswers, WrongNumbersDifferAfterNormalization) {
  EXPECT_EQ(gsm8k_wrong_number("18", 3), "21");
  EXPECT_EQ(gsm8k_wrong_number("1,000", -2), "998");
  EXPECT_EQ(gsm8k_wrong_number("-3", 3), "0");
  EXPECT_EQ(gsm8k_wrong_number("0.5", 1), "0.51");
  EXPECT_EQ(gsm8k_wrong_number("9223372036854775807", 2), "9223372036854775805");
  EXPECT_EQ(gsm8k_wrong_number("5", 0), "6");
  EXPECT_EQ(with_final_answer("x = 18\n#### 18", "21"), "x = 18\n#### 21");
  EXPECT_EQ(with_final_answer("no final line", "5"), "no final line\n#### 5");
  for (int64_t offset : {-9, -1, 1, 9})
    for (std::string_view number : {"0", "7", "2,125", "$5", "1,450,000"})
      EXPECT_NE(normalized(gsm8k_wrong_number(number, offset)), normalized(std::string(number))) << number;
}

TEST(Gsm8kAnswers, VerdictsDependOnlyOnSeedAndProblem) {
  for (size_t problem : {0, 1, 500, 1318}) {
    const Gsm8kVerdict a = draw_gsm8k_verdict(7, problem, 0.5, 0.5);
    const Gsm8kVerdict b = draw_gsm8k_verdict(7, problem, 0.5, 0.5);
    EXPECT_EQ(a.correct, b.correct);
    EXPECT_EQ(a.runaway, b.runaway);
    EXPECT_EQ(a.wrong_offset, b.wrong_offset);
    EXPECT_NE(a.wrong_offset, 0);
    EXPECT_LE(std::abs(a.wrong_offset), 9);
  }
  // The runaway draw does not move the accuracy draw.
  for (size_t problem = 0; problem < 100; ++problem)
    EXPECT_EQ(draw_gsm8k_verdict(7, problem, 0.5, 0.0).correct, draw_gsm8k_verdict(7, problem, 0.5, 1.0).correct);
  EXPECT_TRUE(draw_gsm8k_verdict(7, 3, 1.0, 0.0).correct);
  EXPECT_FALSE(draw_gsm8k_verdict(7, 3, 0.0, 0.0).correct);
  EXPECT_TRUE(draw_gsm8k_verdict(7, 3, 1.0, 1.0).runaway);
}

TEST(Gsm8kAnswers, VerdictRatesMatchTheFlagsOverTheTestSplit) {
  constexpr int kProblems = 1319;
  for (double rate : {0.95, 0.5, 0.1}) {
    for (uint64_t seed : {0ull, 1ull, 42ull}) {
      int correct = 0;
      int runaway = 0;
      for (size_t problem = 0; problem < kProblems; ++problem) {
        const Gsm8kVerdict verdict = draw_gsm8k_verdict(seed, problem, rate, rate);
        correct += verdict.correct;
        runaway += verdict.runaway;
      }
      const double stderr_count = std::sqrt(kProblems * rate * (1 - rate));
      EXPECT_NEAR(correct, kProblems * rate, 4 * stderr_count) << "rate " << rate << " seed " << seed;
      EXPECT_NEAR(runaway, kProblems * rate, 4 * stderr_count) << "rate " << rate << " seed " << seed;
    }
  }
}

TEST(Gsm8kAnswers, RunawayJunkHoldsOnlyNumbersOtherThanTheAnswer) {
  const std::string junk = runaway_junk(eval::ModelFamily::kDeepseek, "7");
  EXPECT_NE(junk.find("<\uff5cUser\uff5c>Question: "), std::string::npos) << junk;
  EXPECT_NE(junk.find("#### 8"), std::string::npos) << junk;
  EXPECT_NE(runaway_junk(eval::ModelFamily::kQwen, "18").find("#### 7"), std::string::npos);
  EXPECT_EQ(end_of_turn_marker(eval::ModelFamily::kNone), "</s>");
  EXPECT_EQ(end_of_turn_marker(eval::ModelFamily::kDeepseekV4), "<\uff5cend\u2581of\u2581sentence\uff5c>");
  EXPECT_NE(runaway_junk(eval::ModelFamily::kNone, "3").find("</s>Question: "), std::string::npos);
}

Gsm8kAnswerOptions small_options(const std::string& name, double accuracy, double runaway_rate) {
  Gsm8kAnswerOptions options;
  options.dir = write_split(name, kSmallSplit);
  options.accuracy = accuracy;
  options.runaway_rate = runaway_rate;
  return options;
}

TEST(Gsm8kAnswers, CorrectScriptIsTheReferenceSolution) {
  const auto codec = make_fallback_codec();
  auto key = Gsm8kAnswerKey::load(small_options("gsm8k_correct", 1.0, 0.0), *codec, "deepseek-ai/DeepSeek-R1", 1);
  ASSERT_TRUE(key) << key.error().message();
  ASSERT_EQ((*key)->size(), 2u);
  EXPECT_EQ((*key)->family(), eval::ModelFamily::kDeepseek);
  const AnswerScript& script = (*key)->script(1);
  EXPECT_TRUE(script.correct);
  EXPECT_EQ(script.text(script.answer.size()), "2*1,200=2,400\n#### 2,400");
  const std::string question = "A box holds 1,200 pens. How many pens are in 2 boxes?";
  EXPECT_EQ((*key)->find_question(question), &script);
  EXPECT_EQ((*key)->find_question(question + " "), nullptr);  // exact lookup
}

TEST(Gsm8kAnswers, FindsTheScriptOfChatAndCompletionRequests) {
  const auto codec = make_fallback_codec();
  auto key = Gsm8kAnswerKey::load(small_options("gsm8k_find", 1.0, 0.0), *codec, "m", 1);
  ASSERT_TRUE(key) << key.error().message();
  const std::string prompt =
      "Question: Tom has 3 apples and buys 4 more. How many apples does he have?" + std::string(kInstruction);
  OpenAiRequest chat;
  chat.kind = ApiKind::kChat;
  chat.messages = {{"system", "Question: A box holds 1,200 pens. How many pens are in 2 boxes?"},
                   {"user", prompt},
                   {"assistant", "thinking"}};
  EXPECT_EQ((*key)->find(chat), &(*key)->script(0));
  OpenAiRequest completion;
  completion.prompt_text = "Question: A box holds 1,200 pens. How many pens are in 2 boxes?\nAnswer:";
  EXPECT_EQ((*key)->find(completion), &(*key)->script(1));
  completion.prompt_text = "Question: Something else?\nAnswer:";
  EXPECT_EQ((*key)->find(completion), nullptr);
  completion.prompt_text.reset();
  completion.prompt_ids = std::vector<int32_t>{1, 2};
  EXPECT_EQ((*key)->find(completion), nullptr);
}

TEST(Gsm8kAnswers, WrongScriptEndsWithAnotherNumber) {
  const auto codec = make_fallback_codec();
  auto key = Gsm8kAnswerKey::load(small_options("gsm8k_wrong", 0.0, 0.0), *codec, "m", 1);
  ASSERT_TRUE(key) << key.error().message();
  for (size_t problem = 0; problem < 2; ++problem) {
    const AnswerScript& script = (*key)->script(problem);
    EXPECT_FALSE(script.correct);
    const std::string text = script.text(script.answer.size());
    EXPECT_NE(last_strict(text), problem == 0 ? "7" : "2400") << text;
    EXPECT_EQ(last_strict(text), last_flexible(text)) << text;
    EXPECT_TRUE(text.starts_with(problem == 0 ? "He has 3+4=7 apples.\n#### " : "2*1,200=2,400\n#### ")) << text;
  }
}

// The run-on text: the family's end-of-turn marker right after the answer, then junk; cut
// anywhere after the first junk fragment, both filters read a wrong number, and a cut at the
// first marker gives the answer back.
TEST(Gsm8kAnswers, RunawayScriptRunsOnIntoJunkThatDefeatsBothFilters) {
  const auto codec = make_fallback_codec();
  for (auto family : {eval::ModelFamily::kDeepseekV4, eval::ModelFamily::kQwen, eval::ModelFamily::kNone}) {
    Gsm8kAnswerOptions options = small_options("gsm8k_runaway", 1.0, 1.0);
    options.family = family;
    auto key = Gsm8kAnswerKey::load(options, *codec, "m", 1);
    ASSERT_TRUE(key) << key.error().message();
    for (size_t problem = 0; problem < 2; ++problem) {
      const AnswerScript& script = (*key)->script(problem);
      ASSERT_TRUE(script.runaway);
      const std::string answer = script.text(script.answer.size());
      const std::string marker(end_of_turn_marker(family));
      const size_t fragment_end = script.answer.size() + script.marker.size() + script.junk.size();
      EXPECT_EQ(script.text(script.answer.size() + script.marker.size()), answer + marker);
      const std::string reference = problem == 0 ? "7" : "2400";
      for (size_t tokens = fragment_end; tokens < fragment_end + 3 * script.junk.size(); ++tokens) {
        const std::string text = script.text(tokens);
        EXPECT_NE(last_strict(text), reference) << text;
        EXPECT_NE(last_flexible(text), reference) << text;
        EXPECT_NE(text.find("#### ", answer.size()), std::string::npos);
        const auto cut = eval::first_marker(text, eval::stop_strings({"</s>", "<|im_end|>"}, family));
        ASSERT_TRUE(cut.has_value());
        EXPECT_EQ(text.substr(0, *cut), answer);
      }
    }
  }
}

TEST(Gsm8kAnswers, ScriptedLengthEndsNaturallyUnlessCut) {
  AnswerScript script;
  script.answer.resize(40);
  script.junk.resize(3);
  EXPECT_EQ(scripted_length(script, 100, 0).tokens, 40);
  EXPECT_TRUE(scripted_length(script, 100, 0).natural_end);
  EXPECT_TRUE(scripted_length(script, 40, 0).natural_end);
  EXPECT_EQ(scripted_length(script, 39, 0).tokens, 39);
  EXPECT_FALSE(scripted_length(script, 39, 0).natural_end);
  EXPECT_EQ(scripted_length(script, 100, 60).tokens, 60);  // min_tokens: no end before 60
  EXPECT_TRUE(scripted_length(script, 100, 60).natural_end);
  EXPECT_EQ(scripted_length(script, 100, 0, true).tokens, 100);  // ignore_eos
  EXPECT_FALSE(scripted_length(script, 100, 0, true).natural_end);
  script.runaway = true;
  EXPECT_EQ(scripted_length(script, 100, 0).tokens, 100);
  EXPECT_FALSE(scripted_length(script, 100, 0).natural_end);
}

TEST(Gsm8kAnswers, LoadErrorsNameTheFileLineOrFlag) {
  const auto codec = make_fallback_codec();
  Gsm8kAnswerOptions options;
  options.dir = testing::scratch_dir("gsm8k_missing") / "absent";
  auto missing = Gsm8kAnswerKey::load(options, *codec, "m", 0);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("absent/test.jsonl"), std::string::npos) << missing.error().message();
  options.dir = write_split("gsm8k_malformed", std::string(kSmallSplit) + "{\"question\": 3}\n");
  auto malformed = Gsm8kAnswerKey::load(options, *codec, "m", 0);
  ASSERT_FALSE(malformed);
  EXPECT_NE(malformed.error().message().find("test.jsonl:3:"), std::string::npos) << malformed.error().message();
  options.dir = write_split("gsm8k_rates", kSmallSplit);
  options.accuracy = 1.5;
  auto accuracy = Gsm8kAnswerKey::load(options, *codec, "m", 0);
  ASSERT_FALSE(accuracy);
  EXPECT_NE(accuracy.error().message().find("--gsm8k-accuracy"), std::string::npos);
  options.accuracy = 0.5;
  options.runaway_rate = std::nan("");
  auto runaway = Gsm8kAnswerKey::load(options, *codec, "m", 0);
  ASSERT_FALSE(runaway);
  EXPECT_NE(runaway.error().message().find("--gsm8k-runaway-rate"), std::string::npos);
}

// The real test split: every problem's reference script spells the solution and ends with its
// number; every wrong one ends with another.
TEST(Gsm8kAnswers, EveryProblemOfTheTestSplitGetsItsAnswer) {
  const std::string dir = testing::shared_path("data/gsm8k/test.jsonl");
  if (dir.empty()) GTEST_SKIP() << testing::shared_missing_message("data/gsm8k/test.jsonl");
  const auto codec = make_fallback_codec();
  for (double accuracy : {1.0, 0.0}) {
    Gsm8kAnswerOptions options;
    options.dir = std::filesystem::path(dir).parent_path();
    options.accuracy = accuracy;
    auto key = Gsm8kAnswerKey::load(options, *codec, "m", 3);
    ASSERT_TRUE(key) << key.error().message();
    ASSERT_EQ((*key)->size(), 1319u);
    auto split = eval::load_gsm8k_split(options.dir / "test.jsonl");
    ASSERT_TRUE(split);
    for (size_t problem = 0; problem < split->problems.size(); ++problem) {
      const eval::Gsm8kProblem& entry = split->problems[problem];
      const AnswerScript* script = (*key)->find_question(entry.question);
      ASSERT_EQ(script, &(*key)->script(problem));
      const std::string text = script->text(script->answer.size());
      const std::string reference = normalized(std::string(eval::gsm8k_final_answer(entry.answer)));
      EXPECT_EQ(text.find("<<"), std::string::npos) << text;
      if (accuracy == 1.0) {
        EXPECT_EQ(text, gsm8k_reference_solution(entry.answer));
        EXPECT_EQ(last_strict(text), reference);
      } else {
        EXPECT_NE(last_strict(text), reference) << text;
      }
    }
  }
}

}  // namespace
}  // namespace ix::serve
