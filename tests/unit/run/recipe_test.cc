#include "run/recipe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>

#include "config/golden_al.h"
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
using testing::spec_disagg_row;
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

TEST(RecipeSim, FixedSpecRowUsesTheThinkingOnCurveAndEvalRunsForceNothing) {
  const auto row = spec_row("sim");
  auto in = inputs_for(row);
  auto throughput = render_server(project_book(), in);
  ASSERT_TRUE(throughput.has_value()) << throughput.error().message();
  EXPECT_THAT(throughput->command_line(), HasSubstr("--acceptance-length 2.49"));  // thinking_on.3
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

constexpr const char* kSpecRecipe = R"(frameworks: [eng]
bench-backend: vllm
command: "eng --al {{ golden_al }} --n {{ num_spec_tokens }}"
models:
  dsv4:
    num-spec-tokens: 3
    thinking: off
    golden-al: {file: dsv4_mtp.yaml, model: deepseek-v4-pro}
  dsv4-disagg:
    num-spec-tokens: 5
    golden-al: {file: dsv4_mtp.yaml, model: no-such-model}
  dsv4-agentic:
    num-spec-tokens: 3
)";

Result<ServerLaunch> render_spec(const std::string& name, sweep::SweepRow row,
                                 const std::function<void(RecipeInputs&)>& change = {}) {
  auto book = load_recipe_book(folder(name, {{"eng.yaml", kSpecRecipe}}));
  EXPECT_TRUE(book.has_value()) << book.error().message();
  if (!book) return std::unexpected(book.error());
  RecipeInputs in = inputs_for(row);
  if (change) change(in);
  return render_server(*book, in);
}

TEST(RecipeGoldenAl, ThinkingOffEntryUsesTheThinkingOffCurve) {
  auto launch = render_spec("spec_off", spec_row("eng"));
  ASSERT_TRUE(launch.has_value()) << launch.error().message();
  EXPECT_EQ(launch->command_line(), "eng --al 2.97 --n 3");
}

TEST(RecipeGoldenAl, MissingGoldenValuesSayWhatWasLookedUpWhere) {
  auto no_dir = render_spec("spec_nodir", spec_row("eng"), [](RecipeInputs& in) { in.golden_al_dir.clear(); });
  ASSERT_FALSE(no_dir.has_value());
  EXPECT_THAT(no_dir.error().message(), HasSubstr("no golden_al_distribution folder given"));
  EXPECT_THAT(no_dir.error().message(), HasSubstr("deepseek-ai/DeepSeek-V4-Pro (thinking off, draft length 3)"));

  auto no_file =
      render_spec("spec_nofile", spec_row("eng"), [](RecipeInputs& in) { in.golden_al_dir = "/nonexistent"; });
  ASSERT_FALSE(no_file.has_value());
  EXPECT_THAT(no_file.error().message(), HasSubstr("/nonexistent/dsv4_mtp.yaml"));

  auto row = spec_disagg_row("eng");
  row.decode.additional_settings = {"DECODE_MTP_SIZE=5"};
  auto no_model = render_spec("spec_nomodel", row);
  ASSERT_FALSE(no_model.has_value());
  EXPECT_THAT(no_model.error().message(),
              HasSubstr("dsv4_mtp.yaml has no model 'no-such-model' (it holds: deepseek-v4-pro)"));

  auto no_curve = render_spec("spec_nocurve", agentic_row("eng"));
  ASSERT_FALSE(no_curve.has_value());
  EXPECT_THAT(no_curve.error().message(), HasSubstr("model entry 'dsv4-agentic' names no golden-al"));
}

TEST(RecipeGoldenAl, MissingDraftLengthAndMismatchedRowAlAreRefused) {
  auto row = spec_row("eng");
  auto launch = render_spec("spec_ok", row);
  ASSERT_TRUE(launch.has_value());
  row.decode.additional_settings = {"DECODE_MTP_SIZE=9"};
  auto no_draft = render_spec("spec_nodraft", row);
  ASSERT_FALSE(no_draft.has_value());
  EXPECT_THAT(no_draft.error().message(),
              HasSubstr("thinking_off has no draft length 9 (draft lengths there: 1, 2, 3, 4, 5, 6, 7, 8)"));
  row.decode.additional_settings = {"SYNTHETIC_ACCEPTANCE_LENGTH=2.5"};
  auto mismatch = render_spec("spec_mismatch", row);
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_THAT(mismatch.error().message(),
              HasSubstr("SYNTHETIC_ACCEPTANCE_LENGTH=2.5 differs from the golden acceptance length 2.97"));
}

TEST(RecipeGoldenAl, RecipeThatDropsTheForcedAlIsRefused) {
  const std::string text = R"(frameworks: [eng]
bench-backend: vllm
command: "eng --n {{ num_spec_tokens }}"
models:
  dsv4: {num-spec-tokens: 3, golden-al: {file: dsv4_mtp.yaml, model: deepseek-v4-pro}}
)";
  auto book = load_recipe_book(folder("spec_dropped", {{"eng.yaml", text}}));
  ASSERT_TRUE(book.has_value()) << book.error().message();
  const auto row = spec_row("eng");
  auto launch = render_server(*book, inputs_for(row));
  ASSERT_FALSE(launch.has_value());
  EXPECT_THAT(launch.error().message(), HasSubstr("the golden acceptance length 2.49 is forced for this row but the "
                                                  "rendered command and environment never carry it"));
}

TEST(RecipeGoldenAlFile, RefusesValuesOutsideTheDraftRangeWithFileLine) {
  auto file = config::parse_golden_al("m:\n  thinking_on:\n    2: 3.5\n", "curve.yaml");
  ASSERT_FALSE(file.has_value());
  EXPECT_THAT(file.error().message(),
              HasSubstr("curve.yaml:3:8: m.thinking_on.2: the golden AL must be a number in [1, 3]"));
  auto mode = config::parse_golden_al("m:\n  thinking_maybe: {1: 1.5}\n", "curve.yaml");
  ASSERT_FALSE(mode.has_value());
  EXPECT_THAT(mode.error().message(), HasSubstr("curve.yaml:2:3: 'm': unknown key 'thinking_maybe'"));
}

TEST(RecipeShellScript, RunsTheScriptWithInferenceXsEnvironmentContract) {
  auto book = load_recipe_book(folder("script", {{"dsr1_fp8_h200.sh", "#!/usr/bin/env bash\n"}}));
  ASSERT_TRUE(book.has_value()) << book.error().message();
  auto row = fixed_row("sglang");
  auto in = inputs_for(row);
  in.recipe = "dsr1_fp8_h200";
  auto launch = render_server(*book, in);
  ASSERT_TRUE(launch.has_value()) << launch.error().message();
  ASSERT_EQ(launch->argv.size(), 2u);
  EXPECT_EQ(launch->argv[0], "bash");
  EXPECT_THAT(launch->argv[1], ::testing::EndsWith("dsr1_fp8_h200.sh"));
  auto env = [&](const std::string& name) {
    for (const auto& [key, value] : launch->env)
      if (key == name) return value;
    return std::string("<unset>");
  };
  EXPECT_EQ(env("MODEL"), "deepseek-ai/DeepSeek-R1-0528");
  EXPECT_EQ(env("TP"), "8");
  EXPECT_EQ(env("EP_SIZE"), "1");
  EXPECT_EQ(env("DP_ATTENTION"), "false");
  EXPECT_EQ(env("CONC"), "64");
  EXPECT_EQ(env("ISL"), "1024");
  EXPECT_EQ(env("OSL"), "1024");
  EXPECT_EQ(env("MAX_MODEL_LEN"), "2304");
  EXPECT_EQ(env("PORT"), "8123");
  EXPECT_EQ(env("SPEC_DECODING"), "none");
  EXPECT_EQ(env("FRAMEWORK"), "sglang");
  EXPECT_EQ(env("PRECISION"), "fp8");
  EXPECT_EQ(env("RANDOM_RANGE_RATIO"), "0.8");
  EXPECT_EQ(env("RESULT_DIR"), "/tmp/jobs/job-0001");
  EXPECT_EQ(env("RESULT_FILENAME"),
            "dsr1_1k1k_fp8_sglang_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc64_h200-cw_00");
  EXPECT_EQ(launch->health_url, "http://127.0.0.1:8123/health");
}

TEST(RecipeBookErrors, BadRecipeFilesNameFileLineAndTheFix) {
  auto unknown =
      load_recipe_book(folder("bad_key", {{"eng.yaml", "frameworks: [eng]\nbench-backend: vllm\ncomand: x\n"}}));
  ASSERT_FALSE(unknown.has_value());
  EXPECT_THAT(unknown.error().message(), HasSubstr("eng.yaml:3:1: a recipe: unknown key 'comand'"));
  auto no_command = load_recipe_book(folder("no_command", {{"eng.yaml", "frameworks: [eng]\nbench-backend: vllm\n"}}));
  ASSERT_FALSE(no_command.has_value());
  EXPECT_THAT(no_command.error().message(), HasSubstr("a recipe needs 'command'"));
  auto syntax = load_recipe_book(
      folder("bad_template", {{"eng.yaml", "frameworks: [eng]\nbench-backend: vllm\ncommand: \"eng {% if %}\"\n"}}));
  ASSERT_FALSE(syntax.has_value());
  EXPECT_THAT(syntax.error().message(), HasSubstr("eng.yaml (command at"));
  auto twice =
      load_recipe_book(folder("twice", {{"a.yaml", "frameworks: [eng]\nbench-backend: vllm\ncommand: a\n"},
                                        {"b.yaml", "frameworks: [x, eng]\nbench-backend: vllm\ncommand: b\n"}}));
  ASSERT_FALSE(twice.has_value());
  EXPECT_THAT(twice.error().message(), HasSubstr("framework 'eng' is claimed by"));
  auto missing = load_recipe_book("/nonexistent/recipes");
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error().message(), HasSubstr("/nonexistent/recipes does not exist"));
}

TEST(RecipeRenderErrors, UnknownFrameworkUndefinedVariableAndShellSyntax) {
  const auto row = fixed_row("tensorflow-serving");
  auto unknown = render_server(project_book(), inputs_for(row));
  ASSERT_FALSE(unknown.has_value());
  EXPECT_THAT(unknown.error().message(), HasSubstr("framework tensorflow-serving: no recipe in"));
  EXPECT_THAT(unknown.error().message(), HasSubstr("known: atom, atom-disagg, dynamo-sglang"));
  auto book = load_recipe_book(folder("render_errors", {{"eng.yaml",
                                                         "frameworks: [eng]\nbench-backend: vllm\n"
                                                         "command: \"eng {{ modle.x }} $PORT\"\n"}}));
  ASSERT_TRUE(book.has_value()) << book.error().message();
  const auto eng = fixed_row("eng");
  auto undefined = render_server(*book, inputs_for(eng));
  ASSERT_FALSE(undefined.has_value());
  EXPECT_THAT(undefined.error().message(), HasSubstr("modle"));
  EXPECT_THAT(undefined.error().message(), HasSubstr("starting at line 3"));
  auto in = inputs_for(eng);
  in.port = 0;
  EXPECT_THAT(render_server(project_book(), in).error().message(), HasSubstr("port 0 is not in [1, 65535]"));
}

TEST(RecipeRenderErrors, DisaggregatedRowWithoutConfigFileIsRefused) {
  auto row = disagg_row("dynamo-trt");
  row.prefill.additional_settings.clear();
  row.decode.additional_settings.clear();
  auto launch = render_server(project_book(), inputs_for(row));
  ASSERT_FALSE(launch.has_value());
  EXPECT_THAT(launch.error().message(), HasSubstr("needs CONFIG_FILE=<srt-slurm recipe> in its additional-settings"));
}

TEST(RecipeDir, FindsTheSourceTreeFromABuildTreeAndAnInstallPrefix) {
  const auto root = ix::testing::scratch_dir("recipe_dir");
  std::filesystem::create_directories(root / "src" / "recipes");
  std::filesystem::create_directories(root / "src" / "build" / "release" / "src" / "cli");
  std::ofstream(root / "src" / "recipes" / "sim.yaml") << "x";
  auto built = find_recipe_dir({}, root / "src" / "build" / "release" / "src" / "cli" / "ixbench");
  ASSERT_TRUE(built.has_value()) << built.error().message();
  EXPECT_EQ(*built, root / "src" / "recipes");
  std::filesystem::create_directories(root / "prefix" / "share" / "ixbench" / "recipes");
  std::filesystem::create_directories(root / "prefix" / "bin");
  std::ofstream(root / "prefix" / "share" / "ixbench" / "recipes" / "sim.yaml") << "x";
  auto installed = find_recipe_dir({}, root / "prefix" / "bin" / "ixbench");
  ASSERT_TRUE(installed.has_value()) << installed.error().message();
  EXPECT_EQ(*installed, root / "prefix" / "share" / "ixbench" / "recipes");
  EXPECT_EQ(find_recipe_dir("/given", root / "prefix" / "bin" / "ixbench").value(), "/given");
}

}  // namespace
}  // namespace ix::run
