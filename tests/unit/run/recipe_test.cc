#include "run/recipe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/subprocess.h"
#include "support/temp_files.h"
#include "unit/run/recipe_rows.h"

namespace ix::run {
namespace {

using testing::agentic_row;
using testing::disagg_row;
using testing::fixed_row;
using ::testing::HasSubstr;
using testing::inputs_for;
using testing::spec_row;

RecipeBook project_book() {
  auto book = load_recipe_book(ix::testing::source_path("recipes"));
  EXPECT_TRUE(book.has_value()) << book.error().message();
  return book.value_or(RecipeBook());
}

// A recipes folder holding `files` (name -> text).
std::filesystem::path folder(const std::string& name, const std::vector<std::pair<std::string, std::string>>& files) {
  const auto dir = ix::testing::scratch_dir("recipes_" + name);
  for (const auto& [file, text] : files) std::ofstream(dir / file, std::ios::binary) << text;
  return dir;
}

TEST(RecipeSim, RendersSingleNodeFixedRow) {
  const auto row = fixed_row("sim");
  auto launch = render_server(project_book(), inputs_for(row));
  ASSERT_TRUE(launch.has_value()) << launch.error().message();
  EXPECT_EQ(launch->argv, (std::vector<std::string>{"/opt/ixbench/bin/ixbench",
                                                    "sim",
                                                    "serve",
                                                    "--model",
                                                    "deepseek-ai/DeepSeek-R1-0528",
                                                    "--served-model-name",
                                                    "deepseek-ai/DeepSeek-R1-0528",
                                                    "--hardware",
                                                    "h200",
                                                    "--precision",
                                                    "fp8",
                                                    "--framework",
                                                    "vllm",
                                                    "--tp",
                                                    "8",
                                                    "--ep",
                                                    "1",
                                                    "--max-model-len",
                                                    "2304",
                                                    "--port",
                                                    "8123"}));
  EXPECT_TRUE(launch->env.empty());
  EXPECT_EQ(launch->health_url, "http://127.0.0.1:8123/health");
  EXPECT_EQ(launch->base_url, "http://127.0.0.1:8123");
  EXPECT_EQ(launch->bench_backend, "vllm");
  EXPECT_EQ(launch->served_model, "deepseek-ai/DeepSeek-R1-0528");
  EXPECT_FALSE(launch->forced_acceptance_length.has_value());
}

TEST(RecipeSim, AgenticRowOffloadsToDramAndForcesTheThinkingOnGoldenAl) {
  const auto row = agentic_row("sim");
  auto launch = render_server(project_book(), inputs_for(row));
  ASSERT_TRUE(launch.has_value()) << launch.error().message();
  const std::string line = launch->command_line();
  // 1600 GB = 1490.12 GiB; dsv4_mtp.yaml deepseek-v4-pro.thinking_on.3 = 2.49.
  EXPECT_THAT(line, HasSubstr("--kv-offloading-size 1490.12"));
  EXPECT_THAT(line, HasSubstr("--spec-decoding mtp --num-spec-tokens 3 --acceptance-length 2.49"));
  EXPECT_THAT(line, ::testing::Not(HasSubstr("--max-model-len")));
  ASSERT_TRUE(launch->forced_acceptance_length.has_value());
  EXPECT_DOUBLE_EQ(*launch->forced_acceptance_length, 2.49);
}

TEST(RecipeSim, FixedSpecRowUsesTheThinkingOffCurveAndEvalRunsForceNothing) {
  const auto row = spec_row("sim");
  auto in = inputs_for(row);
  auto throughput = render_server(project_book(), in);
  ASSERT_TRUE(throughput.has_value()) << throughput.error().message();
  EXPECT_THAT(throughput->command_line(), HasSubstr("--acceptance-length 2.97"));  // thinking_off.3
  in.eval_run = true;
  auto eval = render_server(project_book(), in);
  ASSERT_TRUE(eval.has_value()) << eval.error().message();
  EXPECT_THAT(eval->command_line(), HasSubstr("--spec-decoding mtp --num-spec-tokens 3"));
  EXPECT_THAT(eval->command_line(), ::testing::Not(HasSubstr("--acceptance-length")));
  EXPECT_FALSE(eval->forced_acceptance_length.has_value());
}

TEST(RecipeSim, DisaggregatedRowGivesBothWorkerPools) {
  const auto row = disagg_row("sim");
  auto launch = render_server(project_book(), inputs_for(row));
  ASSERT_TRUE(launch.has_value()) << launch.error().message();
  EXPECT_THAT(launch->command_line(),
              HasSubstr("--prefill-workers 1 --prefill-tp 8 --prefill-ep 8 --prefill-dp-attn --decode-workers 2 "
                        "--decode-tp 8 --decode-ep 1 --max-model-len 9472"));
  EXPECT_THAT(launch->command_line(), ::testing::Not(HasSubstr("--tp ")));
}

TEST(RecipeSim, RendersAnotherFrameworksRowAsThatEngine) {
  const auto row = disagg_row("dynamo-sglang");
  auto in = inputs_for(row);
  in.recipe = "sim";
  auto launch = render_server(project_book(), in);
  ASSERT_TRUE(launch.has_value()) << launch.error().message();
  EXPECT_THAT(launch->command_line(), HasSubstr("--framework dynamo-sglang"));
}

TEST(RecipeShellWords, SplitsQuotesAndContinuations) {
  auto words = split_shell_words("a 'b c' \"d \\\"e\\\"\" f\\ g \\\n h{\"k\": 1}\n");
  ASSERT_TRUE(words.has_value()) << words.error().message();
  EXPECT_EQ(*words, (std::vector<std::string>{"a", "b c", "d \"e\"", "f g", "h{k:", "1}"}));
  auto json = split_shell_words("--speculative-config '{\"method\": \"mtp\"}' ''");
  ASSERT_TRUE(json.has_value());
  EXPECT_EQ(*json, (std::vector<std::string>{"--speculative-config", "{\"method\": \"mtp\"}", ""}));
}

TEST(RecipeShellWords, RefusesShellSyntaxAndOpenQuotes) {
  auto var = split_shell_words("vllm serve\n--port $PORT");
  ASSERT_FALSE(var.has_value());
  EXPECT_THAT(var.error().message(), HasSubstr("line 2: unquoted '$'"));
  EXPECT_FALSE(split_shell_words("a > log").has_value());
  EXPECT_FALSE(split_shell_words("a; b").has_value());
  auto open = split_shell_words("a\n'b");
  ASSERT_FALSE(open.has_value());
  EXPECT_THAT(open.error().message(), HasSubstr("line 2: the ' quote opened there is never closed"));
}

TEST(RecipeShellWords, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(shell_quote("--tp=8"), "--tp=8");
  EXPECT_EQ(shell_quote("{\"a\": 1}"), "'{\"a\": 1}'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(RecipeVariant, KeysNarrowWithinTheRowKindOnly) {
  EXPECT_EQ(model_entry_keys(fixed_row("vllm"), "H200"),
            (std::vector<std::string>{"dsr1-fp8-h200", "dsr1-fp8", "dsr1"}));
  EXPECT_EQ(model_entry_keys(agentic_row("vllm"), "b200"),
            (std::vector<std::string>{"dsv4-fp4-b200-agentic", "dsv4-fp4-agentic", "dsv4-agentic"}));
  EXPECT_EQ(model_entry_keys(disagg_row("vllm"), "h200"),
            (std::vector<std::string>{"dsr1-fp8-h200-disagg", "dsr1-fp8-disagg", "dsr1-disagg"}));
}

constexpr const char* kVariantRecipe = R"(frameworks: [eng]
bench-backend: vllm
command: "eng serve {{ model_key }} {{ model_args }}"
models:
  dsv4:
    args: "--fixed-flags"
  dsv4-fp4-agentic:
    args: "--agentic-flags {{ model_vars.level }}"
    vars: {level: 3}
)";

TEST(RecipeVariant, ResolvesTheAgenticVariant) {
  auto book = load_recipe_book(folder("variant", {{"eng.yaml", kVariantRecipe}}));
  ASSERT_TRUE(book.has_value()) << book.error().message();
  auto row = agentic_row("eng");
  row.spec_decoding = config::SpecDecoding::kNone;
  auto launch = render_server(*book, inputs_for(row));
  ASSERT_TRUE(launch.has_value()) << launch.error().message();
  EXPECT_EQ(launch->argv, (std::vector<std::string>{"eng", "serve", "dsv4-fp4-agentic", "--agentic-flags", "3"}));
  row = spec_row("eng");
  row.spec_decoding = config::SpecDecoding::kNone;
  auto fixed = render_server(*book, inputs_for(row));
  ASSERT_TRUE(fixed.has_value()) << fixed.error().message();
  EXPECT_EQ(fixed->argv, (std::vector<std::string>{"eng", "serve", "dsv4", "--fixed-flags"}));
}

TEST(RecipeVariant, MissingVariantFailsNamingEveryKeyTriedAndNeverFallsBack) {
  auto book = load_recipe_book(folder("variant_missing", {{"eng.yaml", kVariantRecipe}}));
  ASSERT_TRUE(book.has_value()) << book.error().message();
  auto row = disagg_row("eng");
  row.model_prefix = "dsv4";
  auto launch = render_server(*book, inputs_for(row));
  ASSERT_FALSE(launch.has_value());
  const std::string& message = launch.error().message();
  EXPECT_THAT(message, HasSubstr("eng.yaml: no model entry for this row (model-prefix dsv4, precision fp8, hardware "
                                 "h200, multi-node fixed-seq-len)"));
  EXPECT_THAT(message, HasSubstr("Tried, in order: 'dsv4-fp8-h200-disagg', 'dsv4-fp8-disagg', 'dsv4-disagg'."));
  EXPECT_THAT(message, HasSubstr("'dsv4' (eng.yaml:5), 'dsv4-fp4-agentic' (eng.yaml:7)"));
}

TEST(RecipeVariant, RequiredEntryMissingForAnUnknownModel) {
  const std::string text = std::string(kVariantRecipe).replace(0, 0, "model-entry: required\n");
  auto book = load_recipe_book(folder("variant_required", {{"eng.yaml", text}}));
  ASSERT_TRUE(book.has_value()) << book.error().message();
  const auto row = fixed_row("eng");
  auto launch = render_server(*book, inputs_for(row));
  ASSERT_FALSE(launch.has_value());
  EXPECT_THAT(launch.error().message(), HasSubstr("this recipe needs a model entry for every row"));
  EXPECT_THAT(launch.error().message(), HasSubstr("'dsr1-fp8-h200', 'dsr1-fp8', 'dsr1'"));
}

}  // namespace
}  // namespace ix::run
