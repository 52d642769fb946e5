#include "sim/sweep_row.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "sim/engine_core.h"

namespace ix::sim {
namespace {

TEST(SweepRow, SingleNodeRow) {
  auto row = parse_sweep_row_text(
      R"({"image": "lmsysorg/sglang:v0.5.9", "model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1",
          "precision": "fp4", "framework": "sglang", "runner": "b200", "isl": 1024, "osl": 1024, "tp": 4, "pp": 1,
          "dcp-size": 1, "pcp-size": 1, "conc": 16, "max-model-len": 2304, "ep": 4, "dp-attn": false,
          "spec-decoding": "mtp", "exp-name": "dsr1_1k1k", "disagg": false, "run-eval": false})",
      EngineConfig{});
  ASSERT_TRUE(row) << row.error().message();
  EXPECT_EQ(row->engine.hardware, "b200");
  EXPECT_EQ(row->engine.tp, 4);
  EXPECT_EQ(row->engine.ep, 4);
  EXPECT_EQ(row->engine.spec_decoding, SpecDecoding::kMtp);
  EXPECT_FALSE(row->engine.disagg);
  EXPECT_EQ(row->concurrencies, std::vector<int32_t>{16});
  EXPECT_EQ(row->isl, 1024);
  EXPECT_EQ(row->model_id, "deepseek-ai/DeepSeek-R1-0528");
}

TEST(SweepRow, MultiNodeDisaggregatedRow) {
  auto row = parse_sweep_row_text(
      R"({"image": "x", "model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
          "framework": "dynamo-sglang", "runner": "h200-multinode", "isl": 8192, "osl": 1024, "spec-decoding": "mtp",
          "prefill": {"num-worker": 1, "tp": 8, "ep": 1, "dp-attn": false, "additional-settings": [], "pp": 1},
          "decode": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": true,
                     "additional-settings": ["DECODE_NODES=2", "DECODE_MTP_SIZE=2"], "pp": 1},
          "conc": [4, 8], "max-model-len": 9472, "exp-name": "dsr1_8k1k", "disagg": true, "run-eval": false})",
      EngineConfig{});
  ASSERT_TRUE(row) << row.error().message();
  EXPECT_TRUE(row->engine.disagg);
  EXPECT_EQ(row->engine.prefill.num_workers, 1);
  EXPECT_EQ(row->engine.decode.num_workers, 2);
  EXPECT_TRUE(row->engine.decode.dp_attn);
  EXPECT_EQ(row->engine.num_spec_tokens, 2);
  EXPECT_EQ(row->concurrencies, (std::vector<int32_t>{4, 8}));
  EXPECT_EQ(total_gpus(row->engine), 24);
}

TEST(SweepRow, MalformedRowsAreErrors) {
  EXPECT_FALSE(parse_sweep_row_text("{", EngineConfig{}));
  EXPECT_FALSE(parse_sweep_row_text("[1, 2]", EngineConfig{}));
  auto no_runner =
      parse_sweep_row_text(R"({"model": "dsr1", "precision": "fp8", "framework": "sglang"})", EngineConfig{});
  ASSERT_FALSE(no_runner);
  EXPECT_NE(no_runner.error().message().find("runner"), std::string::npos);
  auto bad_hw = parse_sweep_row_text(
      R"({"model": "dsr1", "precision": "fp8", "framework": "sglang", "runner": "tpu", "tp": 8, "conc": 4})",
      EngineConfig{});
  ASSERT_FALSE(bad_hw);
  EXPECT_NE(bad_hw.error().message().find("unknown hardware"), std::string::npos);
}

TEST(SweepRow, ErrorsNameTheRowFile) {
  auto syntax = parse_sweep_row_text("{\"model\":\n", EngineConfig{}, "rows/r1.json");
  ASSERT_FALSE(syntax);
  EXPECT_EQ(syntax.error().message().rfind("rows/r1.json:2:", 0), 0u) << syntax.error().message();
  auto no_runner = parse_sweep_row_text(R"({"model": "dsr1"})", EngineConfig{}, "rows/r1.json");
  ASSERT_FALSE(no_runner);
  EXPECT_NE(no_runner.error().message().find("rows/r1.json"), std::string::npos) << no_runner.error().message();
  auto not_object = parse_sweep_row_text("[1, 2]", EngineConfig{}, "rows/r1.json");
  ASSERT_FALSE(not_object);
  EXPECT_EQ(not_object.error().message().rfind("rows/r1.json: expected one JSON object", 0), 0u);
}

TEST(SweepRow, DecodeMtpSizeOneWithoutAnAcceptanceLengthUsesTheModelsAcceptanceAtOneDraft) {
  // amd-master's mi355x sglang-disagg MTP rows: DECODE_MTP_SIZE=1 and no acceptance length. The
  // model default (DeepSeek-R1: AL 2.4 at 3 drafts) exceeds 1 + 1 and used to fail validation.
  auto row = parse_sweep_row_text(
      R"({"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
          "framework": "sglang-disagg", "runner": "mi355x-disagg", "isl": 8192, "osl": 1024, "spec-decoding": "mtp",
          "prefill": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": true, "additional-settings": ["PREFILL_NODES=2"]},
          "decode": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": true,
                     "additional-settings": ["DECODE_NODES=1", "DECODE_MTP_SIZE=1"]},
          "conc": [1024, 2048]})",
      EngineConfig{});
  ASSERT_TRUE(row) << row.error().message();
  EXPECT_EQ(row->engine.num_spec_tokens, 1);
  auto engine = resolve_engine(row->engine);
  ASSERT_TRUE(engine) << engine.error().message();
  EXPECT_EQ(engine->num_spec_tokens, 1);
  EXPECT_GT(engine->acceptance_length, 1.5);
  EXPECT_LE(engine->acceptance_length, 2.0);
}

TEST(EngineConfig, DefaultAcceptanceLengthFollowsTheDraftLength) {
  // Same draft length as the model default: the model's golden AL unchanged.
  EXPECT_DOUBLE_EQ(default_acceptance_length(2.4, 3, 3), 2.4);
  // p with 1 + p + p^2 + p^3 = 2.4 is about 0.665: one draft gives about 1.665.
  EXPECT_NEAR(default_acceptance_length(2.4, 3, 1), 1.665, 0.01);
  EXPECT_GT(default_acceptance_length(2.4, 3, 5), 2.4);
  EXPECT_LT(default_acceptance_length(2.4, 3, 5), 3.0);
  for (int32_t k = 1; k <= 16; ++k) EXPECT_LE(default_acceptance_length(2.4, 3, k), 1.0 + k);
  EXPECT_DOUBLE_EQ(default_acceptance_length(2.4, 3, 0), 1.0);
}

TEST(SweepRow, OutOfRangeOrMistypedFieldsAreErrors) {
  auto with = [](const std::string& extra) {
    return parse_sweep_row_text(R"({"model": "dsr1", "precision": "fp8", "framework": "sglang", "runner": "h200",
                                   "tp": 8, "isl": 1024, "osl": 1024, )" +
                                    extra + "}",
                                EngineConfig{});
  };
  ASSERT_TRUE(with(R"("conc": 4, "dp-attn": "false")"));
  auto dp_attn = with(R"("conc": 4, "dp-attn": "yes")");
  ASSERT_FALSE(dp_attn);
  EXPECT_NE(dp_attn.error().message().find("dp-attn"), std::string::npos) << dp_attn.error().message();
  auto huge = with(R"("conc": 99999999999)");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message().find("conc"), std::string::npos);
  auto negative = with(R"("conc": [4, -1])");
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.error().message().find("-1"), std::string::npos);
  EXPECT_FALSE(with(R"("conc": [])"));
  auto big_isl = parse_sweep_row_text(
      R"({"model": "dsr1", "precision": "fp8", "framework": "sglang", "runner": "h200", "tp": 8,
          "isl": 99999999999, "osl": 1024, "conc": 4})",
      EngineConfig{});
  ASSERT_FALSE(big_isl);
  EXPECT_NE(big_isl.error().message().find("isl"), std::string::npos);
  auto agentic = parse_sweep_row_text(
      R"({"model": "dsr1", "precision": "fp8", "framework": "sglang", "runner": "h200", "tp": 8, "conc": 4,
          "scenario-type": "agentic-coding"})",
      EngineConfig{});
  ASSERT_TRUE(agentic) << agentic.error().message();
  EXPECT_EQ(agentic->scenario_type, "agentic-coding");
}

TEST(EngineConfig, ValidationNamesTheFlag) {
  EngineConfig config;
  config.tp = 6;
  config.ep = 4;
  auto bad = validate(config);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("--tp"), std::string::npos);
  config = EngineConfig{};
  config.precision = "int3";
  EXPECT_FALSE(validate(config));
  config = EngineConfig{};
  config.spec_decoding = SpecDecoding::kMtp;
  config.num_spec_tokens = 1;
  config.acceptance_length = 3.0;
  auto al = validate(config);
  ASSERT_FALSE(al);
  EXPECT_NE(al.error().message().find("--acceptance-length"), std::string::npos);
  config = EngineConfig{};
  config.spec_decoding = SpecDecoding::kMtp;
  config.acceptance_length = std::nan("");
  auto nan_al = validate(config);
  ASSERT_FALSE(nan_al);
  EXPECT_NE(nan_al.error().message().find("--acceptance-length"), std::string::npos);
  config = EngineConfig{};
  config.scheduler_recv_interval = -1;
  auto recv = validate(config);
  ASSERT_FALSE(recv);
  EXPECT_NE(recv.error().message().find("--scheduler-recv-interval"), std::string::npos);
  EXPECT_FALSE(framework_family("tgi"));
  EXPECT_EQ(*framework_family("dynamo-trt"), FrameworkFamily::kTrtllm);
  EXPECT_EQ(*framework_family("mori-sglang"), FrameworkFamily::kSglang);
}

TEST(SweepRow, RecipeNamesGiveTheDecodeBatchAndTheDraftLength) {
  // srt-slurm's TRT-LLM recipe names: ctx{P}_gen{D}_{tp|tep|dep}{N}_batch{B}_eplb{E}_mtp{M}[_{conc}].
  // Names without those tokens (SGLang recipes), and look-alikes, say nothing (0).
  const std::vector<std::tuple<std::string, int32_t, int32_t>> cases = {
      {"recipes/trtllm/h100-fp8/8k1k/stp/ctx1_gen3_tep16_batch1_eplb0_mtp0.yaml", 1, 0},
      {"recipes/trtllm/gb300-fp8/1k1k/mtp/ctx3_gen2_dep8_batch512_eplb0_mtp1_8192.yaml", 512, 1},
      {"recipes/trtllm/dsv4/ctx1dep4_gen4tep8_batch16_eplb0_mtp3.yaml", 16, 3},
      {"recipes/gb200-fp8/8k1k/mid-curve.yaml", 0, 0},
      {"recipes/batch8/x_batchsize4_mtpx_batch.yaml", 0, 0},
  };
  for (const auto& [name, batch, mtp] : cases) {
    const auto hints = recipe_name_hints(name);
    EXPECT_EQ(hints.decode_batch, batch) << name;
    EXPECT_EQ(hints.mtp, mtp) << name;
  }
}

std::string trt_row(const std::string& decode_settings) {
  return R"({"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
      "framework": "dynamo-trt", "runner": "gb300-multinode", "isl": 1024, "osl": 1024, "spec-decoding": "mtp",
      "prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": true, "additional-settings":
                  ["CONFIG_FILE=recipes/trtllm/gb300-fp8/1k1k/mtp/ctx1_gen4_tep8_batch4_eplb0_mtp3_24.yaml"]},
      "decode": {"num-worker": 4, "tp": 8, "ep": 8, "dp-attn": false, "additional-settings": [)" +
         decode_settings + R"(]}, "conc": [24]})";
}

TEST(SweepRow, ConfigFileSetsTheDecodeBatchAndDraftLengthUnlessGiven) {
  auto row = parse_sweep_row_text(trt_row(""), EngineConfig{});
  ASSERT_TRUE(row) << row.error().message();
  EXPECT_EQ(row->engine.decode.max_num_seqs, 4);
  EXPECT_EQ(row->engine.prefill.max_num_seqs, 0);
  EXPECT_EQ(row->engine.num_spec_tokens, 3);
  // DECODE_MTP_SIZE is explicit and wins over the name.
  row = parse_sweep_row_text(trt_row(R"("DECODE_MTP_SIZE=2")"), EngineConfig{});
  ASSERT_TRUE(row) << row.error().message();
  EXPECT_EQ(row->engine.num_spec_tokens, 2);
  EXPECT_EQ(row->engine.decode.max_num_seqs, 4);
  // An explicit decode batch in the base configuration (--decode-max-num-seqs) wins too.
  EngineConfig base;
  base.decode.max_num_seqs = 64;
  row = parse_sweep_row_text(trt_row(""), base);
  ASSERT_TRUE(row) << row.error().message();
  EXPECT_EQ(row->engine.decode.max_num_seqs, 64);
}

TEST(SweepRow, BatchSettingsOfOlderMasterEntriesWinOverTheRecipeName) {
  // Older master entries (no recipe file) name the limits as settings: DECODE_MAX_BATCH_SIZE on
  // the decode side, PREFILL_MAX_BATCH_SIZE on the prefill side.
  auto row =
      parse_sweep_row_text(trt_row(R"("DECODE_MAX_NUM_TOKENS=512", "DECODE_MAX_BATCH_SIZE=512")"), EngineConfig{});
  ASSERT_TRUE(row) << row.error().message();
  EXPECT_EQ(row->engine.decode.max_num_seqs, 512);
  EXPECT_EQ(row->engine.prefill.max_num_seqs, 0);
  std::string text = trt_row("");
  const std::string config_file =
      R"("CONFIG_FILE=recipes/trtllm/gb300-fp8/1k1k/mtp/ctx1_gen4_tep8_batch4_eplb0_mtp3_24.yaml")";
  text.replace(text.find(config_file), config_file.size(),
               R"("PREFILL_MAX_NUM_TOKENS=8448", "PREFILL_MAX_BATCH_SIZE=1")");
  row = parse_sweep_row_text(text, EngineConfig{});
  ASSERT_TRUE(row) << row.error().message();
  EXPECT_EQ(row->engine.prefill.max_num_seqs, 1);
  EXPECT_EQ(row->engine.decode.max_num_seqs, 0);
  // The caller's limit still wins; a value that is not a positive integer is an error naming it.
  EngineConfig base;
  base.prefill.max_num_seqs = 2;
  row = parse_sweep_row_text(text, base);
  ASSERT_TRUE(row) << row.error().message();
  EXPECT_EQ(row->engine.prefill.max_num_seqs, 2);
  for (const std::string bad : {"0", "-4", "12x", ""}) {
    auto refused = parse_sweep_row_text(trt_row("\"DECODE_MAX_BATCH_SIZE=" + bad + "\""), EngineConfig{});
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message().find("DECODE_MAX_BATCH_SIZE '" + bad + "' is not a positive integer"),
              std::string::npos)
        << refused.error().message();
  }
}

TEST(SweepRow, RecipeFlagsGiveSglangRunningRequestsPerDataParallelRank) {
  // A Dynamo-SGLang row carrying its recipe's server flags (data/calibration/): the decode server's
  // max-running-requests is split over its 32 DP-attention ranks; the prefill side's over none.
  const std::string row = R"({"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
      "framework": "dynamo-sglang", "runner": "gb200", "isl": 1024, "osl": 1024, "spec-decoding": "none",
      "prefill": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": false},
      "decode": {"num-worker": 1, "tp": 32, "ep": 32, "dp-attn": true}, "conc": [4096],
      "recipe": {"prefill": {"max-running-requests": 30000, "tp-size": 8},
                 "decode": {"max-running-requests": RUNNING, "tp-size": 32, "dp-size": 32,
                            "enable-dp-attention": true}}})";
  auto with = [&](const std::string& running) {
    std::string text = row;
    text.replace(text.find("RUNNING"), 7, running);
    return parse_sweep_row_text(text, EngineConfig{});
  };
  auto parsed = with("4096");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->engine.decode.max_num_seqs, 128);
  EXPECT_EQ(parsed->engine.prefill.max_num_seqs, 30000);
  EXPECT_EQ(parsed->engine.decode.reserved_decode_tokens, 0);  // no stated pool: nothing reserved
  EXPECT_EQ(parsed->engine.decode.max_kv_tokens, 0);
  parsed = with(R"("2048")");  // YAML values copied as strings are read too
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->engine.decode.max_num_seqs, 64);
  for (const std::string bad : {"0", R"("lots")", "-1", "[1]"}) {
    auto refused = with(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message().find("recipe.decode.max-running-requests"), std::string::npos)
        << refused.error().message();
  }
  std::string not_object = row;
  not_object.replace(not_object.find("RUNNING"), 7, "1");
  not_object.replace(not_object.find(R"("recipe": {)"), 11, R"("recipe": 7, "x": {)");
  auto refused = parse_sweep_row_text(not_object, EngineConfig{});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("row: recipe: must be an object"), std::string::npos)
      << refused.error().message();
}

TEST(SweepRow, RecipeTokenLimitsFollowSglangsPerRankRules) {
  // chunked-prefill-size is for the whole server and split over the DP-attention ranks, then capped
  // by max-prefill-tokens (per rank, 16384 when absent); max-total-tokens is each rank's own pool;
  // num-reserved-decode-tokens as stated, else SGLang's 512 where the pool is stated.
  const std::string row = R"({"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp4",
      "framework": "dynamo-sglang", "runner": "gb300", "isl": 1024, "osl": 1024, "spec-decoding": "none",
      "prefill": {"num-worker": 4, "tp": 4, "ep": 4, "dp-attn": true},
      "decode": {"num-worker": 1, "tp": 48, "ep": 48, "dp-attn": true}, "conc": [4096],
      "recipe": {"prefill": {"chunked-prefill-size": 65536, PREFILL_EXTRA "max-total-tokens": 131072,
                             "tp-size": 4, "dp-size": 4, "enable-dp-attention": true},
                 "decode": {"max-running-requests": 67584, "max-total-tokens": 3122380, DECODE_EXTRA
                            "chunked-prefill-size": 786432, "tp-size": 48, "dp-size": 48,
                            "enable-dp-attention": true}}})";
  auto with = [&](const std::string& prefill_extra, const std::string& decode_extra,
                  const EngineConfig& base = EngineConfig{}) {
    std::string text = row;
    text.replace(text.find("PREFILL_EXTRA"), 13, prefill_extra);
    text.replace(text.find("DECODE_EXTRA"), 12, decode_extra);
    return parse_sweep_row_text(text, base);
  };
  auto parsed = with(R"("max-prefill-tokens": 32768,)", R"("num-reserved-decode-tokens": 112,)");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->engine.prefill.max_num_batched_tokens, 16384);  // 65536 / 4 ranks
  EXPECT_EQ(parsed->engine.prefill.max_kv_tokens, 131072);
  EXPECT_EQ(parsed->engine.decode.max_kv_tokens, 3122380);
  EXPECT_EQ(parsed->engine.decode.reserved_decode_tokens, 112);
  EXPECT_EQ(parsed->engine.decode.max_num_batched_tokens, 0);  // decode steps are not prefill chunks
  EXPECT_EQ(parsed->engine.decode.max_num_seqs, 1408);

  parsed = with(R"("max-prefill-tokens": 8192,)", "");
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->engine.prefill.max_num_batched_tokens, 8192);
  // chunked-prefill-size -1 turns chunking off: whole prompts, max-prefill-tokens per batch.
  std::string unchunked = row;
  unchunked.replace(unchunked.find(R"("chunked-prefill-size": 65536)"), 29, R"("chunked-prefill-size": -1)");
  unchunked.replace(unchunked.find("PREFILL_EXTRA"), 13, "");
  unchunked.replace(unchunked.find("DECODE_EXTRA"), 12, "");
  parsed = parse_sweep_row_text(unchunked, EngineConfig{});
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->engine.prefill.max_num_batched_tokens, 16384);
  EXPECT_EQ(parsed->engine.decode.reserved_decode_tokens, 512);  // the pool is stated: SGLang's default

  EngineConfig base;  // the caller's flags win over the recipe
  base.prefill.max_num_batched_tokens = 4096;
  base.decode.max_kv_tokens = 100000;
  parsed = with("", "", base);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->engine.prefill.max_num_batched_tokens, 4096);
  EXPECT_EQ(parsed->engine.decode.max_kv_tokens, 100000);

  for (const auto& [extra, field] : std::vector<std::pair<std::string, std::string>>{
           {R"("max-prefill-tokens": 0,)", "recipe.prefill.max-prefill-tokens"},
           {R"("max-prefill-tokens": "many",)", "recipe.prefill.max-prefill-tokens"},
           {R"("num-reserved-decode-tokens": -3,)", "recipe.prefill.num-reserved-decode-tokens"}}) {
    auto refused = with(extra, "");
    ASSERT_FALSE(refused) << extra;
    EXPECT_NE(refused.error().message().find(field), std::string::npos) << refused.error().message();
  }
  auto refused = with("", R"("max-prefill-tokens": -1,)");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("recipe.decode.max-prefill-tokens"), std::string::npos)
      << refused.error().message();
}

TEST(SweepRow, TheShippedRecipeCatalogHoldsTheCurrentMasterSglangRecipes) {
  // nvidia-master's dsr1-fp4-b200-dynamo-sglang 7p2d row names an override inside a recipe file;
  // its decode side (DP attention over 8 ranks, max-running-requests 2048) allows 256 per rank.
  const std::string row = R"({"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp4",
      "framework": "dynamo-sglang", "runner": "b200", "isl": 8192, "osl": 1024, "spec-decoding": "none",
      "prefill": {"num-worker": 7, "tp": 4, "ep": 4, "dp-attn": true,
                  "additional-settings": ["CONFIG_FILE=recipes/b200-fp4/8k1k.yaml:override_stp_maxtpt_7p2d"]},
      "decode": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": true}, "conc": [2048]})";
  auto parsed = parse_sweep_row_text(row, EngineConfig{});
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->engine.decode.max_num_seqs, 256);
  EXPECT_GT(parsed->engine.prefill.max_num_seqs, 0);
}

TEST(SweepRow, ARowWithoutRecipeFlagsTakesThemFromTheRecipeCatalog) {
  // --catalog-dir DIR with a recipes.json: the row's CONFIG_FILE value, looked up as written.
  const std::string dir = ::testing::TempDir() + "/ix_recipe_catalog";
  std::filesystem::create_directories(dir);
  for (const char* file : {"hardware.json", "models.json"})
    std::filesystem::copy_file(std::string(IXBENCH_SOURCE_DIR) + "/data/catalog/" + file, dir + "/" + file,
                               std::filesystem::copy_options::overwrite_existing);
  auto write_catalog = [&](const std::string& text) { std::ofstream(dir + "/recipes.json") << text; };
  const std::string row = R"({"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
      "framework": "dynamo-sglang", "runner": "h200", "isl": 8192, "osl": 1024, "spec-decoding": "none",
      "prefill": {"num-worker": 2, "tp": 8, "ep": 1, "dp-attn": false,
                  "additional-settings": ["CONFIG_FILE=recipes/h200/8k1k/bs64-2p3d.yaml"]},
      "decode": {"num-worker": 3, "tp": 8, "ep": 1, "dp-attn": false}, "conc": [64]})";
  EngineConfig base;
  base.catalog_dir = dir;
  write_catalog(R"({"recipes": [{"config_file": "recipes/h200/8k1k/other.yaml", "decode": {"max-running-requests": 1}},
      {"config_file": "recipes/h200/8k1k/bs64-2p3d.yaml", "source": "test",
       "prefill": {"max-running-requests": 16}, "decode": {"max-running-requests": 128, "tp-size": 8}}]})");
  auto parsed = parse_sweep_row_text(row, base);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->engine.decode.max_num_seqs, 128);
  EXPECT_EQ(parsed->engine.prefill.max_num_seqs, 16);
  // A recipe the catalog does not hold leaves the limits open.
  write_catalog(R"({"recipes": []})");
  parsed = parse_sweep_row_text(row, base);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->engine.decode.max_num_seqs, 0);
  // A broken catalog entry or file is an error naming it.
  write_catalog(
      R"({"recipes": [{"config_file": "recipes/h200/8k1k/bs64-2p3d.yaml", "decode": {"max-running-requests": 0}}]})");
  auto refused = parse_sweep_row_text(row, base);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find(
                "recipes.json: recipe 'recipes/h200/8k1k/bs64-2p3d.yaml'.decode.max-running-requests"),
            std::string::npos)
      << refused.error().message();
  write_catalog(R"({"recipes": {}})");
  refused = parse_sweep_row_text(row, base);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("recipes.json"), std::string::npos) << refused.error().message();
  write_catalog("{");
  refused = parse_sweep_row_text(row, base);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("recipes.json"), std::string::npos) << refused.error().message();
}

}  // namespace
}  // namespace ix::sim
