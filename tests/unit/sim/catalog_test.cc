#include "sim/catalog.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "sim/calibration.h"
#include "sim/engine_core.h"
#include "test_util.h"

namespace ix::sim {
namespace {

TEST(Catalog, BuiltinHasEveryHardwareAndModelFamily) {
  auto catalog = Catalog::builtin();
  ASSERT_TRUE(catalog) << catalog.error().message();
  for (const char* name : {"h100", "h200", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x"}) {
    auto hw = catalog->hardware(name);
    ASSERT_TRUE(hw) << name;
    EXPECT_FALSE((*hw)->source.empty()) << name;
    EXPECT_GT((*hw)->hbm_bandwidth_bytes_per_s, 1e12) << name;
  }
  for (const char* name : {"deepseek-r1", "deepseek-v3", "deepseek-v4-pro", "deepseek-v4-flash", "llama-3.3-70b",
                           "qwen3.5-397b-a17b", "gpt-oss-120b", "kimi-k2", "glm-5", "minimax-m2"}) {
    auto model = catalog->model(name);
    ASSERT_TRUE(model) << name;
    EXPECT_FALSE((*model)->source.empty()) << name;
  }
}

TEST(Catalog, LooksUpAliasesHfIdsAndRunnerLabels) {
  auto catalog = Catalog::builtin();
  ASSERT_TRUE(catalog);
  EXPECT_EQ((*catalog->model("deepseek-ai/DeepSeek-R1-0528"))->name, "deepseek-r1");
  EXPECT_EQ((*catalog->model("dsr1"))->name, "deepseek-r1");
  EXPECT_EQ((*catalog->model("nvidia/DeepSeek-R1-0528-NVFP4-v2"))->name, "deepseek-r1");
  // A bare model name matches an alias's HF id without its organisation.
  EXPECT_EQ((*catalog->model("Kimi-K2.5"))->name, "kimi-k2");
  EXPECT_EQ((*catalog->model("DeepSeek-R1-0528-NVFP4-v2"))->name, "deepseek-r1");
  EXPECT_FALSE(catalog->model("K2.5"));
  EXPECT_EQ((*catalog->hardware("cluster:b200-dgxc"))->name, "b200");
  EXPECT_EQ((*catalog->hardware("H200"))->name, "h200");
  EXPECT_EQ((*catalog->hardware("mi355x-disagg"))->name, "mi355x");
  // The master files' RTX PRO 6000 runner (Qwen3.5 FP4 rows).
  EXPECT_EQ((*catalog->hardware("rtx6000pro-lat"))->name, "rtx6000pro");
}

TEST(Catalog, DevicesWithoutMeasuredPointsUseTheAllHardwareLevelAndSaySo) {
  // RTX PRO 6000: no row of measured_dsr1.csv, no calibration_sibling; its prediction says which
  // factors it took and that its catalog entry is an estimate.
  auto engine = resolve_engine(testing::engine_config("qwen3.5-397b-a17b", "rtx6000pro-lat", "fp4", "sglang", 4));
  ASSERT_TRUE(engine) << engine.error().message();
  EXPECT_EQ(engine->hardware.name, "rtx6000pro");
  EXPECT_NE(engine->calibration_group.find("no calibration group for this hardware"), std::string::npos)
      << engine->calibration_group;
  EXPECT_EQ(engine->hardware.source.rfind("estimate:", 0), 0u) << engine->hardware.source;
}

TEST(Catalog, UnknownNamesListKnownOnesAndHowToAdd) {
  auto catalog = Catalog::builtin();
  ASSERT_TRUE(catalog);
  auto model = catalog->model("gpt-7");
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(model.error().message().find("deepseek-r1"), std::string::npos);
  EXPECT_NE(model.error().message().find("models.json"), std::string::npos);
  auto hardware = catalog->hardware("tpu-v9");
  ASSERT_FALSE(hardware);
  EXPECT_NE(hardware.error().message().find("mi355x"), std::string::npos);
  EXPECT_NE(hardware.error().message().find("hardware.json"), std::string::npos);
}

TEST(Catalog, KvBytesPerTokenMatchTheSpec) {
  auto catalog = Catalog::builtin();
  ASSERT_TRUE(catalog);
  // MLA: 61 layers x (512 + 64) elements = 35,136 (35 KB in fp8).
  EXPECT_DOUBLE_EQ((*catalog->model("deepseek-r1"))->kv_elements_per_token(), 61.0 * 576);
  // GQA: 2 x 80 x 8 x 128 elements, x 2 bytes = 320 KiB for Llama-3-70B in bf16.
  EXPECT_DOUBLE_EQ((*catalog->model("llama-3.3-70b"))->kv_elements_per_token() * 2, 320.0 * 1024);
}

TEST(Catalog, ParameterCountsAreThoseOfTheModels) {
  auto catalog = Catalog::builtin();
  ASSERT_TRUE(catalog);
  const auto* r1 = *catalog->model("deepseek-r1");
  EXPECT_NEAR(r1->total_params() / 1e9, 671, 15);           // 671B total
  EXPECT_NEAR(r1->active_params_per_token() / 1e9, 37, 3);  // 37B active
  const auto* llama = *catalog->model("llama-3.3-70b");
  EXPECT_NEAR(llama->total_params() / 1e9, 70.6, 1.5);
  // DeepSeek-V4 (compressed attention, grouped low-rank output): the published totals.
  const auto* flash = *catalog->model("deepseek-v4-flash");
  EXPECT_NEAR(flash->total_params() / 1e9, 284, 6);
  EXPECT_NEAR(flash->active_params_per_token() / 1e9, 13, 1);
  const auto* pro = *catalog->model("deepseek-v4-pro");
  EXPECT_NEAR(pro->total_params() / 1e12, 1.6, 0.05);
  EXPECT_NEAR(pro->active_params_per_token() / 1e9, 49, 2.5);
}

TEST(Catalog, CompressedAttentionKeepsOneSharedEntryPerKeptToken) {
  auto catalog = Catalog::builtin();
  ASSERT_TRUE(catalog);
  const auto* flash = *catalog->model("deepseek-v4-flash");
  EXPECT_EQ(flash->attention, Attention::kCsa);
  EXPECT_TRUE(flash->shared_kv());
  // 512 elements (key = value) per layer, for the 15.6 % of tokens the compressed layers keep:
  // about a ninth of DeepSeek-R1's 61 x 576 per token.
  EXPECT_DOUBLE_EQ(flash->kv_elements_per_token(), 43.0 * 512 * 0.156);
  EXPECT_LT((*catalog->model("deepseek-v4-pro"))->kv_elements_per_token(),
            0.15 * (*catalog->model("deepseek-r1"))->kv_elements_per_token());
  EXPECT_EQ(flash->checkpoint_expert_precision, "fp4");
  EXPECT_FALSE((*catalog->model("llama-3.3-70b"))->shared_kv());
}

TEST(Catalog, CompressedAttentionAndOptionalFieldsAreChecked) {
  auto models = boost::json::parse(embedded_models_json()).as_object();
  const auto& list = models.at("models").as_array();
  size_t flash = 0;
  while (list[flash].at("name").as_string() != "deepseek-v4-flash") ++flash;
  auto with = [&](const char* key, boost::json::value value) {
    boost::json::object copy = models;
    copy["models"].as_array()[flash].as_object()[key] = std::move(value);
    return Catalog::parse(embedded_hardware_json(), boost::json::serialize(copy));
  };
  auto expect_error = [](const Result<Catalog>& result, const std::string& text) {
    ASSERT_FALSE(result) << text;
    EXPECT_NE(result.error().message().find(text), std::string::npos) << result.error().message();
    EXPECT_NE(result.error().message().find("deepseek-v4-flash"), std::string::npos) << result.error().message();
  };
  expect_error(with("num_kv_heads", 4), "CSA needs head_dim");
  expect_error(with("o_groups", 7), "o_groups must divide num_heads (64)");
  expect_error(with("o_groups", 0), "o_lora_rank and o_groups go together");
  expect_error(with("checkpoint_expert_precision", "int4"), "checkpoint_expert_precision must be fp4, fp8 or bf16");
  expect_error(with("checkpoint_expert_precision", 4), "checkpoint_expert_precision");
  expect_error(with("attention", "linear"), "attention must be 'gqa', 'mla' or 'csa'");
  // The optional fields may be left out.
  boost::json::object plain = models;
  auto& entry = plain["models"].as_array()[flash].as_object();
  entry.erase("o_lora_rank");
  entry.erase("o_groups");
  entry.erase("checkpoint_expert_precision");
  auto loaded = Catalog::parse(embedded_hardware_json(), boost::json::serialize(plain));
  ASSERT_TRUE(loaded) << loaded.error().message();
  const auto* without = *loaded->model("deepseek-v4-flash");
  EXPECT_TRUE(without->checkpoint_expert_precision.empty());
  // A plain output projection (heads x head_dim -> hidden) is larger than the grouped low-rank one.
  EXPECT_GT(without->attention_params_per_layer(),
            (*Catalog::builtin()->model("deepseek-v4-flash"))->attention_params_per_layer());
}

TEST(Catalog, MalformedEntriesAreRejectedWithTheirName) {
  auto bad = Catalog::parse(R"({"hardware": [{"name": "x1", "hbm_gb": "lots"}]})", R"({"models": []})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("'x1'"), std::string::npos);
  auto syntax = Catalog::parse("{", R"({"models": []})");
  ASSERT_FALSE(syntax);
  EXPECT_EQ(syntax.error().code(), ErrorCode::kParse);
}

TEST(Catalog, DuplicateNamesOrAliasesAreRejected) {
  // A second entry (or an alias) with a name already taken used to load; the first entry won.
  auto hardware = boost::json::parse(embedded_hardware_json()).as_object();
  auto& entries = hardware.at("hardware").as_array();
  auto with = [&](const boost::json::array& list) {
    boost::json::object copy = hardware;
    copy["hardware"] = list;
    return Catalog::parse(boost::json::serialize(copy), embedded_models_json());
  };
  ASSERT_TRUE(with(entries));
  boost::json::array duplicated = entries;
  duplicated.push_back(entries[1]);
  auto dup = with(duplicated);
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message().find("hardware.json"), std::string::npos) << dup.error().message();
  EXPECT_NE(dup.error().message().find(std::string(entries[1].at("name").as_string())), std::string::npos);
  boost::json::array aliased = entries;
  aliased[1].as_object()["aliases"].as_array().push_back(entries[2].at("name"));
  auto alias = with(aliased);
  ASSERT_FALSE(alias);
  EXPECT_NE(alias.error().message().find("unique"), std::string::npos) << alias.error().message();
}

TEST(CalibrationTable, LooksUpMostSpecificGroupThenFallsBack) {
  auto table = CalibrationTable::parse(R"({"defaults": {"fixed_scale": 2},
    "groups": [{"hardware": "h200", "framework": "*", "precision": "*", "fixed_scale": 3, "fit_rows": 9},
               {"hardware": "h200", "framework": "sglang", "precision": "fp8", "fixed_scale": 4, "fit_rows": 5}]})");
  ASSERT_TRUE(table) << table.error().message();
  std::string used;
  EXPECT_DOUBLE_EQ(table->lookup("h200", "sglang", "fp8", "none", &used).fixed_scale, 4);
  EXPECT_NE(used.find("h200/sglang/fp8"), std::string::npos);
  EXPECT_DOUBLE_EQ(table->lookup("h200", "trt", "fp8").fixed_scale, 3);
  EXPECT_DOUBLE_EQ(table->lookup("b200", "trt", "fp8").fixed_scale, 2);
  auto with_spec = CalibrationTable::parse(R"({"groups": [
    {"hardware": "b200", "framework": "*", "precision": "*", "fixed_scale": 3},
    {"hardware": "b200", "framework": "*", "precision": "*", "spec": "mtp", "fixed_scale": 5}]})");
  ASSERT_TRUE(with_spec);
  EXPECT_DOUBLE_EQ(with_spec->lookup("b200", "trt", "fp4", "mtp").fixed_scale, 5);
  EXPECT_DOUBLE_EQ(with_spec->lookup("b200", "trt", "fp4", "none").fixed_scale, 3);
  auto round_trip = CalibrationTable::parse(table->to_json());
  ASSERT_TRUE(round_trip);
  EXPECT_DOUBLE_EQ(round_trip->lookup("h200", "sglang", "fp8").fixed_scale, 4);
  EXPECT_FALSE(CalibrationTable::parse(R"({"groups": [{"hardware": "h200"}]})"));
  EXPECT_FALSE(CalibrationTable::parse(R"({"defaults": {"fixed_scale": "x"}})"));
}

TEST(CalibrationTable, SingleNodeEnginesBorrowTheSiblingWhenTheDeviceHasNoSingleNodeRows) {
  // h100's factors fitted only on multi-node deployments (single_node_rows 0); h200 (same die,
  // the catalog's calibration_sibling of h100) on single-node rows.
  auto table = CalibrationTable::parse(R"({"groups": [
    {"hardware": "h100", "framework": "*", "precision": "*", "fixed_scale": 4, "fit_rows": 10, "single_node_rows": 0},
    {"hardware": "h200", "framework": "*", "precision": "*", "fixed_scale": 2, "fit_rows": 76, "single_node_rows": 76}]})");
  ASSERT_TRUE(table) << table.error().message();
  EngineConfig config;
  config.hardware = "h100";
  config.framework = "sglang";
  config.tp = 8;
  auto single = resolve_engine(config, &*table);
  ASSERT_TRUE(single) << single.error().message();
  EXPECT_DOUBLE_EQ(single->efficiency.fixed_scale, 2);
  EXPECT_NE(single->calibration_group.find("h200/*/*/*"), std::string::npos) << single->calibration_group;
  EXPECT_NE(single->calibration_group.find("h100's calibration has no single-node rows"), std::string::npos);
  // A disaggregated deployment on h100 keeps h100's own factors.
  config.disagg = true;
  config.prefill = WorkerTopology{1, 8, 1, false};
  config.decode = WorkerTopology{1, 8, 1, false};
  auto disagg = resolve_engine(config, &*table);
  ASSERT_TRUE(disagg) << disagg.error().message();
  EXPECT_DOUBLE_EQ(disagg->efficiency.fixed_scale, 4);
  // Unrecorded (-1, older files) or non-zero single-node rows: the device's own group.
  config.disagg = false;
  auto unrecorded = CalibrationTable::parse(R"({"groups": [
    {"hardware": "h100", "framework": "*", "precision": "*", "fixed_scale": 4, "fit_rows": 10},
    {"hardware": "h200", "framework": "*", "precision": "*", "fixed_scale": 2, "fit_rows": 76}]})");
  ASSERT_TRUE(unrecorded);
  EXPECT_DOUBLE_EQ(resolve_engine(config, &*unrecorded)->efficiency.fixed_scale, 4);
  // The count is checked.
  EXPECT_FALSE(CalibrationTable::parse(R"({"groups": [
    {"hardware": "h100", "framework": "*", "precision": "*", "fit_rows": 10, "single_node_rows": 11}]})"));
  auto round_trip = CalibrationTable::parse(table->to_json());
  ASSERT_TRUE(round_trip);
  EXPECT_EQ(round_trip->groups()[0].single_node_rows, 0);
}

TEST(Catalog, MisspeltFieldsAreRejected) {
  // "hbm_bandwdith_tb_s" beside the real field loaded silently: the typo's value was never used.
  auto hardware = boost::json::parse(embedded_hardware_json()).as_object();
  hardware.at("hardware").as_array()[0].as_object()["hbm_bandwdith_tb_s"] = 3.0;
  auto bad_hw = Catalog::parse(boost::json::serialize(hardware), embedded_models_json());
  ASSERT_FALSE(bad_hw);
  EXPECT_NE(bad_hw.error().message().find("unknown field 'hbm_bandwdith_tb_s'"), std::string::npos)
      << bad_hw.error().message();
  EXPECT_NE(bad_hw.error().message().find("hardware.json: entry '"), std::string::npos);
  auto models = boost::json::parse(embedded_models_json()).as_object();
  models.at("models").as_array()[0].as_object()["num_mtp_layer"] = 1;
  auto bad_model = Catalog::parse(embedded_hardware_json(), boost::json::serialize(models));
  ASSERT_FALSE(bad_model);
  EXPECT_NE(bad_model.error().message().find("unknown field 'num_mtp_layer'"), std::string::npos)
      << bad_model.error().message();
  EXPECT_NE(bad_model.error().message().find("num_mtp_layers"), std::string::npos);  // the list of real ones
}

TEST(Catalog, CalibrationSiblingMustNameAnotherEntry) {
  auto hardware = boost::json::parse(embedded_hardware_json()).as_object();
  auto& entries = hardware.at("hardware").as_array();
  for (const char* sibling : {"h999", "h100"}) {
    boost::json::object copy = hardware;
    boost::json::array list = entries;
    for (auto& entry : list)
      if (entry.at("name").as_string() == "h100") entry.as_object()["calibration_sibling"] = sibling;
    copy["hardware"] = list;
    auto parsed = Catalog::parse(boost::json::serialize(copy), embedded_models_json());
    ASSERT_FALSE(parsed) << sibling;
    EXPECT_NE(parsed.error().message().find("calibration_sibling"), std::string::npos) << parsed.error().message();
  }
  auto builtin = Catalog::builtin();
  ASSERT_TRUE(builtin);
  EXPECT_EQ((*builtin->hardware("gb300"))->calibration_sibling, "b300");
}

// --catalog-dir DIR: hardware.json and models.json must be there; calibration.json is optional
// (the built-in one otherwise) and, when present, is what the engine uses, errors naming the file.
TEST(CatalogDir, CalibrationJsonIsOptionalAndWinsWhenPresent) {
  const std::string dir = ::testing::TempDir() + "/ix_catalog_dir_calibration";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/calibration.json");
  std::ofstream(dir + "/hardware.json") << embedded_hardware_json();
  std::ofstream(dir + "/models.json") << embedded_models_json();
  EngineConfig config;
  config.hardware = "h200";
  config.framework = "sglang";
  config.tp = 8;
  config.catalog_dir = dir;
  auto builtin = resolve_engine(config);
  ASSERT_TRUE(builtin) << builtin.error().message();
  auto table = CalibrationTable::builtin();
  ASSERT_TRUE(table);
  EXPECT_EQ(builtin->calibration_source, table->source());

  std::ofstream(dir + "/calibration.json") << R"({"source": "test", "defaults": {"fixed_scale": 7}})";
  auto own = resolve_engine(config);
  ASSERT_TRUE(own) << own.error().message();
  EXPECT_EQ(own->calibration_source, "test");
  EXPECT_DOUBLE_EQ(own->efficiency.fixed_scale, 7);

  std::ofstream(dir + "/calibration.json") << R"({"defualts": {}})";
  auto broken = resolve_engine(config);
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message().find(dir + "/calibration.json"), std::string::npos) << broken.error().message();
}

TEST(CalibrationTable, UnknownKeysAreErrorsNamingTheFile) {
  auto typo = CalibrationTable::parse(R"({"groups": [
    {"hardware": "h200", "framework": "*", "precision": "*", "memroy_scale": 2}]})",
                                      "/tmp/cat/calibration.json");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message().find("/tmp/cat/calibration.json: groups[0]: unknown key 'memroy_scale'"),
            std::string::npos)
      << typo.error().message();
  EXPECT_NE(typo.error().message().find("memory_scale"), std::string::npos);
  auto top = CalibrationTable::parse(R"({"defualts": {}})");
  ASSERT_FALSE(top);
  EXPECT_NE(top.error().message().find("unknown top-level key 'defualts'"), std::string::npos);
  EXPECT_FALSE(CalibrationTable::parse(R"({"defaults": {"hardware": "h200"}})"));
  // The shipped file uses only known keys.
  EXPECT_TRUE(CalibrationTable::builtin());
}

}  // namespace
}  // namespace ix::sim
