// lm-eval task YAMLs and eval thresholds: the built-in task is InferenceX's file, unknown knobs
// and bad values are refused naming file:line, thresholds resolve most-specific first.
#include "config/lm_eval_task.h"

#include <gtest/gtest.h>

#include "config/eval_thresholds.h"
#include "eval/builtin_task.h"
#include "support/subprocess.h"

namespace ix::config {
namespace {

TEST(LmEvalTask, TheBuiltInTaskIsInferenceXsGsm8kYaml) {
  const LmEvalTask& t = eval::builtin_gsm8k_task();
  EXPECT_EQ(t.task, "gsm8k");
  EXPECT_EQ(t.num_fewshot, 5);
  EXPECT_EQ(t.until, (std::vector<std::string>{"</s>", "<|im_end|>"}));
  ASSERT_EQ(t.filters.size(), 2U);
  EXPECT_EQ(t.filters[0].name, "strict-match");
  EXPECT_EQ(t.filters[0].regex_pattern, "#### (\\-?[0-9\\.\\,]+)");
  EXPECT_EQ(t.filters[0].group_select, -1);
  EXPECT_EQ(t.metrics[0].regexes_to_ignore, (std::vector<std::string>{",", "\\$", "(?s).*#### ", "\\.$"}));
  const std::string file = ix::testing::shared_path("data/inferencex/evals/gsm8k.yaml");
  if (file.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/evals/gsm8k.yaml");
  auto real = load_lm_eval_task(file);
  ASSERT_TRUE(real) << real.error().message();
  EXPECT_EQ(real->doc_to_text, t.doc_to_text);
  EXPECT_EQ(real->doc_to_target, t.doc_to_target);
  EXPECT_EQ(real->until, t.until);
  EXPECT_EQ(real->num_fewshot, t.num_fewshot);
  ASSERT_EQ(real->filters.size(), t.filters.size());
  for (size_t i = 0; i < t.filters.size(); ++i) {
    EXPECT_EQ(real->filters[i].name, t.filters[i].name);
    EXPECT_EQ(real->filters[i].regex_pattern, t.filters[i].regex_pattern);
    EXPECT_EQ(real->filters[i].group_select, t.filters[i].group_select);
  }
  EXPECT_EQ(real->metrics[0].regexes_to_ignore, t.metrics[0].regexes_to_ignore);
  EXPECT_EQ(real->metrics[0].ignore_case, t.metrics[0].ignore_case);
}

std::string with(std::string_view extra) {
  return std::string(eval::builtin_gsm8k_yaml()) + std::string(extra);
}

TEST(LmEvalTask, UnknownKeysAndUnsupportedFeaturesAreRefusedWithTheirLine) {
  auto unknown = parse_lm_eval_task(with("description: be brief\n"), "t.yaml");
  ASSERT_FALSE(unknown);
  const auto builtin = eval::builtin_gsm8k_yaml();
  const auto line = std::count(builtin.begin(), builtin.end(), '\n') + 1;  // the appended line
  EXPECT_NE(unknown.error().message().find("t.yaml:" + std::to_string(line) + ":1"), std::string::npos)
      << unknown.error().message();
  EXPECT_NE(unknown.error().message().find("'description'"), std::string::npos);
  auto sampling = parse_lm_eval_task(
      std::string(eval::builtin_gsm8k_yaml())
          .replace(std::string(eval::builtin_gsm8k_yaml()).find("do_sample: false"), 16, "do_sample: true"),
      "t.yaml");
  ASSERT_FALSE(sampling);
  EXPECT_NE(sampling.error().message().find("sampling"), std::string::npos);
  const std::string lower_filter = R"(task: x
output_type: generate_until
doc_to_text: "{{question}}"
doc_to_target: "{{answer}}"
metric_list:
  - metric: exact_match
filter_list:
  - name: f
    filter:
      - function: lowercase
)";
  auto filter = parse_lm_eval_task(lower_filter, "f.yaml");
  ASSERT_FALSE(filter);
  EXPECT_NE(filter.error().message().find("f.yaml:10:9"), std::string::npos) << filter.error().message();
  EXPECT_NE(filter.error().message().find("'lowercase'"), std::string::npos);
  auto shots =
      parse_lm_eval_task(lower_filter.substr(0, lower_filter.find("filter_list")) + "num_fewshot: many\n", "n.yaml");
  ASSERT_FALSE(shots);
  EXPECT_NE(shots.error().message().find("n.yaml:7:14"), std::string::npos) << shots.error().message();
}

TEST(EvalThresholds, InferenceXsFileResolvesModelThenDefaultThenMinScore) {
  const std::string file = ix::testing::shared_path("data/inferencex/evals/thresholds.yaml");
  if (file.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/evals/thresholds.yaml");
  auto t = load_eval_thresholds(file);
  ASSERT_TRUE(t) << t.error().message();
  auto dsr1 = resolve_threshold(*t, "dsr1", "gsm8k", 0.85);
  EXPECT_DOUBLE_EQ(dsr1.min_score, 0.91);
  EXPECT_EQ(dsr1.source, "models.dsr1");
  auto other = resolve_threshold(*t, "llama70b", "gsm8k", 0.85);
  EXPECT_DOUBLE_EQ(other.min_score, 0.90);
  EXPECT_EQ(other.source, "default");
  auto unknown_task = resolve_threshold(*t, "dsr1", "mmlu", 0.85);
  EXPECT_DOUBLE_EQ(unknown_task.min_score, 0.85);
  EXPECT_EQ(unknown_task.source, "min-score");
}

TEST(EvalThresholds, LegacyFlatFilesAndBadScores) {
  auto flat = parse_eval_thresholds("gsm8k: 0.8\n", "flat.yaml");
  ASSERT_TRUE(flat);
  EXPECT_DOUBLE_EQ(resolve_threshold(*flat, "dsr1", "gsm8k", 0.5).min_score, 0.8);
  auto json = parse_eval_thresholds(R"({"default": {"gsm8k": 0.7}, "models": {"x": {"gsm8k": 0.95}}})", "t.json");
  ASSERT_TRUE(json) << json.error().message();
  EXPECT_DOUBLE_EQ(resolve_threshold(*json, "x", "gsm8k", 0.5).min_score, 0.95);
  auto bad = parse_eval_thresholds("default:\n  gsm8k: high\n", "bad.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("bad.yaml:2:10"), std::string::npos) << bad.error().message();
  EXPECT_FALSE(parse_eval_thresholds("- 1\n", "list.yaml").has_value());
}

}  // namespace
}  // namespace ix::config
