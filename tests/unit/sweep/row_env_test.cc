// Matrix rows -> the variables InferenceX's workflows export for their job, and the result file's
// name, for each kind of row `ixbench sweep` prints.
#include "sweep/row_env.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>

#include "common/json_io.h"

namespace ix::sweep {
namespace {

namespace bj = boost::json;

bj::object parse(std::string_view text) {
  auto value = json::parse(text);
  EXPECT_TRUE(value) << value.error().message();
  return value->as_object();
}

std::map<std::string, std::string> vars(const RowEnvironment& env) {
  return {env.variables.begin(), env.variables.end()};
}

std::function<std::optional<std::string>(const char*)> lookup(const std::map<std::string, std::string>& m) {
  return [m](const char* name) -> std::optional<std::string> {
    auto it = m.find(name);
    return it == m.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

constexpr std::string_view kAgentic =
    R"({"image": "lmsysorg/sglang:dev", "model": "deepseek-ai/DeepSeek-V4-Pro", "model-prefix": "dsv4",)"
    R"( "precision": "fp4", "framework": "sglang", "runner": "b200-dgxc_00", "tp": 8, "pp": 1, "dcp-size": 1,)"
    R"( "pcp-size": 1, "ep": 1, "dp-attn": false, "spec-decoding": "mtp", "conc": 8, "kv-offloading": "dram",)"
    R"( "total-cpu-dram-gb": 2399, "duration": 3600, "exp-name": "dsv4_tp8_conc8", "scenario-type": "agentic-coding",)"
    R"( "kv-offload-backend": {"name": "hicache"}, "recipe-fingerprint": "0123456789abcdef0123"})";

TEST(RowEnv, SingleNodeAgenticRow) {
  auto env = row_environment(parse(kAgentic));
  ASSERT_TRUE(env) << env.error().message();
  EXPECT_EQ(env->kind, RowJobKind::kSingleNodeAgentic);
  const auto v = vars(*env);
  EXPECT_EQ(v.at("TP"), "8");
  EXPECT_EQ(v.at("EP_SIZE"), "1");
  EXPECT_EQ(v.at("DP_ATTENTION"), "false");
  EXPECT_EQ(v.at("CONC"), "8");
  EXPECT_EQ(v.at("RUNNER_TYPE"), "b200-dgxc_00");
  EXPECT_EQ(v.at("MODEL_PREFIX"), "dsv4");
  EXPECT_EQ(v.at("KV_OFFLOADING"), "dram");
  EXPECT_EQ(v.at("KV_OFFLOAD_BACKEND"), "hicache");
  EXPECT_EQ(v.at("KV_OFFLOAD_BACKEND_METADATA"), R"({"name":"hicache"})");
  EXPECT_EQ(v.at("TOTAL_CPU_DRAM_GB"), "2399");
  EXPECT_EQ(v.at("ROUTER_METADATA"), "");
  EXPECT_EQ(v.at("DISAGG"), "false");
  EXPECT_EQ(v.at("ISL"), "0");
  EXPECT_EQ(v.at("SCENARIO_TYPE"), "agentic-coding");
  EXPECT_EQ(v.at("IS_AGENTIC"), "1");
  EXPECT_FALSE(v.contains("IS_MULTINODE"));
  EXPECT_EQ(row_result_filename(env->kind, lookup(v)),
            "dsv4_tp8_conc8_fp4_sglang_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-mtp_conc8_b200-dgxc_00_recipe-"
            "0123456789abcdef");
  auto named = v;
  named["RUNNER_NAME"] = "b200-dgxc_07";
  EXPECT_TRUE(row_result_filename(env->kind, lookup(named))->ends_with("_conc8_b200-dgxc_07_recipe-0123456789abcdef"));
}

TEST(RowEnv, SingleNodeFixedRow) {
  auto env = row_environment(
      parse(R"({"image": "i", "model": "m", "model-prefix": "dsr1", "precision": "fp8", "framework": "vllm",)"
            R"( "runner": "h200", "isl": 1024, "osl": 128, "tp": 8, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 64,)"
            R"( "max-model-len": 1408, "ep": 1, "dp-attn": true, "spec-decoding": "none", "exp-name": "dsr1_1k1k",)"
            R"( "disagg": false, "run-eval": false, "router": {"name": "r", "version": "1"}})"));
  ASSERT_TRUE(env) << env.error().message();
  EXPECT_EQ(env->kind, RowJobKind::kSingleNodeFixed);
  const auto v = vars(*env);
  EXPECT_EQ(v.at("ISL"), "1024");
  EXPECT_EQ(v.at("OSL"), "128");
  EXPECT_EQ(v.at("DP_ATTENTION"), "true");
  EXPECT_EQ(v.at("ROUTER_METADATA"), R"({"name":"r","version":"1"})");
  EXPECT_EQ(v.at("SCENARIO_TYPE"), "fixed-seq-len");
  EXPECT_EQ(v.at("IS_AGENTIC"), "0");
  EXPECT_FALSE(v.contains("KV_OFFLOADING"));
  EXPECT_EQ(row_result_filename(env->kind, lookup(v)),
            "dsr1_1k1k_fp8_vllm_tp8-pp1-dcp1-pcp1-ep1-dpatrue_disagg-false_spec-none_conc64_h200");
}

TEST(RowEnv, MultiNodeAgenticRow) {
  auto env = row_environment(
      parse(R"({"image": "i", "model": "m", "model-prefix": "kimik3", "precision": "fp4", "framework": "vllm",)"
            R"( "runner": "h200-dgxc", "spec-decoding": "mtp", "prefill": {"num-worker": 2, "tp": 16, "ep": 32,)"
            R"( "dp-attn": true, "additional-settings": ["X=1"], "pp": 1, "dcp-size": 1, "pcp-size": 1}, "decode":)"
            R"( {"num-worker": 0, "tp": 16, "ep": 32, "dp-attn": true, "pp": 1, "dcp-size": 1, "pcp-size": 1},)"
            R"( "conc": [4, 8], "kv-offloading": "none", "total-cpu-dram-gb": 0, "duration": 3600, "exp-name": "k",)"
            R"( "disagg": false, "scenario-type": "agentic-coding"})"));
  ASSERT_TRUE(env) << env.error().message();
  EXPECT_EQ(env->kind, RowJobKind::kMultiNodeAgentic);
  const auto v = vars(*env);
  EXPECT_EQ(v.at("IS_MULTINODE"), "true");
  EXPECT_EQ(v.at("PREFILL_NUM_WORKERS"), "2");
  EXPECT_EQ(v.at("PREFILL_EP"), "32");
  EXPECT_EQ(v.at("DECODE_DP_ATTN"), "true");
  EXPECT_EQ(v.at("PREFILL_HARDWARE"), "");
  EXPECT_EQ(v.at("CONC_LIST"), "4 8");
  EXPECT_EQ(v.at("CONC"), "4");
  EXPECT_EQ(
      row_result_filename(env->kind, lookup(v)),
      "k_fp4_vllm_prefill-tp16-pp1-dcp1-pcp1-ep32-dptrue-nw2_decode-tp16-pp1-dcp1-pcp1-ep32-dptrue-nw0_disagg-false_"
      "spec-mtp_conc4x8_h200-dgxc_conc4");
}

TEST(RowEnv, MultiNodeFixedRowHasNoResultName) {
  auto env = row_environment(parse(
      R"({"image": "i", "model": "m", "model-prefix": "p", "precision": "fp4", "framework": "dynamo-trt",)"
      R"( "runner": "gb200", "isl": 1024, "osl": 1024, "spec-decoding": "none", "prefill": {"num-worker": 1, "tp": 4,)"
      R"( "ep": 4, "dp-attn": false, "pp": 1, "dcp-size": 1, "pcp-size": 1}, "decode": {"num-worker": 1, "tp": 8,)"
      R"( "ep": 8, "dp-attn": true, "pp": 1, "dcp-size": 1, "pcp-size": 1}, "conc": [8], "max-model-len": 2304,)"
      R"( "exp-name": "e", "disagg": true, "run-eval": false})"));
  ASSERT_TRUE(env) << env.error().message();
  EXPECT_EQ(env->kind, RowJobKind::kMultiNodeFixed);
  EXPECT_EQ(vars(*env).at("DISAGG"), "true");
  EXPECT_FALSE(vars(*env).contains("CONC"));
  EXPECT_EQ(row_result_filename(env->kind, lookup(vars(*env))), std::nullopt);
}

TEST(RowEnv, MissingOrMisshapenFieldsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("tp": 8, )", R"(the row has no "tp" (the aggregation reads it as TP)"},
      {R"("kv-offloading": "dram", )", R"(the row has no "kv-offloading" (the aggregation reads it as KV_OFFLOADING)"},
      {R"("conc": 8, )", R"(the row has no "conc")"},
      {R"("scenario-type": "agentic-coding")", R"("scenario-type")"},
  };
  for (const auto& [remove, expected] : cases) {
    std::string text(kAgentic);
    const size_t at = text.find(remove);
    ASSERT_NE(at, std::string::npos) << remove;
    text.erase(at, remove.size());
    if (remove.starts_with("\"scenario-type\"")) text.insert(at, R"("scenario-type": "agentic")");
    auto env = row_environment(parse(text));
    ASSERT_FALSE(env) << remove;
    EXPECT_NE(env.error().message().find(expected), std::string::npos) << env.error().message();
  }
  std::string listed(kAgentic);
  listed.replace(listed.find(R"("tp": 8)"), 7, R"("tp": [8])");
  auto env = row_environment(parse(listed));
  ASSERT_FALSE(env);
  EXPECT_NE(env.error().message().find(R"(the row's "tp" is [8], not a single value)"), std::string::npos)
      << env.error().message();
  auto multi = row_environment(parse(R"({"image": "i", "model": "m", "model-prefix": "p", "precision": "f",)"
                                     R"( "framework": "f", "runner": "r", "spec-decoding": "none", "exp-name": "e",)"
                                     R"( "prefill": {"num-worker": 1, "tp": 4}, "decode": {}})"));
  ASSERT_FALSE(multi);
  EXPECT_NE(multi.error().message().find(R"(the row has no "prefill.pp")"), std::string::npos)
      << multi.error().message();
}

}  // namespace
}  // namespace ix::sweep
