#include "sweep/sweep_row.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "common/json_io.h"
#include "sweep/planner.h"

namespace ix::sweep {
namespace {

SweepRow single_row() {
  SweepRow row;
  row.kind = RowKind::kSingleNodeFixed;
  row.image = "img:1";
  row.model = "org/model";
  row.model_prefix = "dsr1";
  row.precision = "fp8";
  row.framework = "sglang";
  row.runner = "h200";
  row.isl = 1024;
  row.osl = 1024;
  row.tp = 8;
  row.ep = 1;
  row.conc = {64};
  row.exp_name = "dsr1_1k1k";
  row.run_eval = false;
  return row;
}

config::Worker worker(int64_t num, int64_t tp, std::vector<config::WorkerKey> order) {
  config::Worker w;
  w.num_worker = num;
  w.tp = tp;
  w.ep = tp;
  w.dp_attn = false;
  w.key_order = std::move(order);
  return w;
}

TEST(ExpandConcurrency, GeometricWithClampedLastStep) {
  EXPECT_EQ(expand_concurrency(4, 100, 2), (std::vector<int64_t>{4, 8, 16, 32, 64, 100}));
  EXPECT_EQ(expand_concurrency(1, 64, 2), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(expand_concurrency(4, 4, 2), (std::vector<int64_t>{4}));
  EXPECT_EQ(expand_concurrency(3, 100, 4), (std::vector<int64_t>{3, 12, 48, 100}));
  EXPECT_TRUE(expand_concurrency(8, 4, 2).empty());
  EXPECT_TRUE(expand_concurrency(1, 4, 1).empty());
}

TEST(SeqLenName, NamedShapesElseIslOsl) {
  EXPECT_EQ(seq_len_name(1024, 1024), "1k1k");
  EXPECT_EQ(seq_len_name(8192, 1024), "8k1k");
  EXPECT_EQ(seq_len_name(1024, 8192), "1024_8192");
}

TEST(SweepRowJson, SingleNodeFixedKeysAndOrderMatchTheReference) {
  SweepRow row = single_row();
  std::string text;
  append_row_json(text, row);
  EXPECT_EQ(text,
            "{\"image\": \"img:1\", \"model\": \"org/model\", \"model-prefix\": \"dsr1\", \"precision\": \"fp8\", "
            "\"framework\": \"sglang\", \"runner\": \"h200\", \"isl\": 1024, \"osl\": 1024, \"tp\": 8, \"pp\": 1, "
            "\"dcp-size\": 1, \"pcp-size\": 1, \"conc\": 64, \"max-model-len\": 2304, \"ep\": 1, \"dp-attn\": false, "
            "\"spec-decoding\": \"none\", \"exp-name\": \"dsr1_1k1k\", \"disagg\": false, \"run-eval\": false}");
  row.router = config::Component{"sglang-router", "0.3.2"};
  row.eval_only = true;
  row.run_eval = true;
  text.clear();
  append_row_json(text, row);
  EXPECT_TRUE(text.ends_with(
      "\"run-eval\": true, \"router\": {\"name\": \"sglang-router\", \"version\": \"0.3.2\"}, \"eval-only\": true}"))
      << text;
}

TEST(SweepRowJson, MultiNodeWorkersKeepKeyOrderAndGetDefaults) {
  using K = config::WorkerKey;
  SweepRow row = single_row();
  row.kind = RowKind::kMultiNodeFixed;
  row.prefill = worker(1, 4, {K::kNumWorker, K::kTp, K::kEp, K::kDpAttn, K::kAdditionalSettings});
  row.prefill.additional_settings = {"PREFILL_NODES=1"};
  row.decode = worker(2, 8, {K::kTp, K::kNumWorker, K::kPp, K::kEp, K::kDpAttn});
  row.decode.pp = 2;
  row.conc = {8, 16};
  row.disagg = true;
  row.kv_p2p_transfer = "nixl";
  row.eval_conc = 16;
  std::string text;
  append_row_json(text, row);
  EXPECT_NE(text.find("\"prefill\": {\"num-worker\": 1, \"tp\": 4, \"ep\": 4, \"dp-attn\": false, "
                      "\"additional-settings\": [\"PREFILL_NODES=1\"], \"pp\": 1, \"dcp-size\": 1, \"pcp-size\": 1}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"decode\": {\"tp\": 8, \"num-worker\": 2, \"pp\": 2, \"ep\": 8, \"dp-attn\": false, "
                      "\"dcp-size\": 1, \"pcp-size\": 1}, \"conc\": [8, 16], \"max-model-len\": 2304"),
            std::string::npos)
      << text;
  EXPECT_TRUE(text.ends_with("\"run-eval\": false, \"kv-p2p-transfer\": \"nixl\", \"eval-conc\": 16}")) << text;
  EXPECT_EQ(text.find("\"tp\": 8, \"pp\""), std::string::npos);  // no top-level topology on multi-node rows
}

TEST(SweepRowJson, AgenticRowsHaveTheirOwnShape) {
  SweepRow row = single_row();
  row.kind = RowKind::kSingleNodeAgentic;
  row.conc = {4};
  row.kv_offloading = config::KvOffloading::kDram;
  row.kv_offload_backend = config::Component{"hicache", std::nullopt};
  row.total_cpu_dram_gb = 2399;
  row.exp_name = "dsr1_tp8_conc4_kvdram-hicache";
  row.run_eval.reset();
  std::string text;
  append_row_json(text, row);
  EXPECT_EQ(text,
            "{\"image\": \"img:1\", \"model\": \"org/model\", \"model-prefix\": \"dsr1\", \"precision\": \"fp8\", "
            "\"framework\": \"sglang\", \"runner\": \"h200\", \"tp\": 8, \"pp\": 1, \"dcp-size\": 1, \"pcp-size\": 1, "
            "\"ep\": 1, \"dp-attn\": false, \"spec-decoding\": \"none\", \"conc\": 4, \"kv-offloading\": \"dram\", "
            "\"total-cpu-dram-gb\": 2399, \"duration\": 3600, \"exp-name\": \"dsr1_tp8_conc4_kvdram-hicache\", "
            "\"scenario-type\": \"agentic-coding\", \"kv-offload-backend\": {\"name\": \"hicache\"}}");
}

TEST(SweepRowJson, ComponentKeepsWrittenKeyOrder) {
  SweepRow row = single_row();
  row.router = config::Component{"r", "1.0", true};
  std::string text;
  append_row_json(text, row);
  EXPECT_NE(text.find("\"router\": {\"version\": \"1.0\", \"name\": \"r\"}"), std::string::npos) << text;
}

TEST(SweepRowJson, EscapesLikePythonJsonDumps) {
  SweepRow row = single_row();
  row.image = "a\"b\\c\n\t\x01 caf\xc3\xa9 \xf0\x9f\x98\x80";
  std::string text;
  append_row_json(text, row);
  EXPECT_NE(text.find(R"("image": "a\"b\\c\n\t\u0001 caf\u00e9 \ud83d\ude00")"), std::string::npos) << text;
}

TEST(SweepRowJson, ToJsonMatchesTheRenderedText) {
  SweepRow row = single_row();
  row.kind = RowKind::kMultiNodeAgentic;
  row.prefill = worker(1, 8, {config::WorkerKey::kNumWorker, config::WorkerKey::kTp});
  row.decode = worker(0, 8, {config::WorkerKey::kNumWorker, config::WorkerKey::kTp});
  row.router = config::Component{"dynamo-router", "1.3.1"};
  row.run_eval = true;
  row.eval_conc = 32;
  row.conc = {32};
  std::string text;
  append_row_json(text, row);
  auto parsed = json::parse(text);
  ASSERT_TRUE(parsed.has_value());
  boost::json::object object = to_json(row);
  EXPECT_EQ(*parsed, boost::json::value(object));
  std::vector<std::string> keys;
  for (const auto& entry : object) keys.emplace_back(entry.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"image", "model", "model-prefix", "precision", "framework", "runner",
                                            "spec-decoding", "prefill", "decode", "conc", "kv-offloading",
                                            "total-cpu-dram-gb", "duration", "exp-name", "disagg", "scenario-type",
                                            "router", "run-eval", "eval-conc"}));
}

TEST(RenderMatrix, ArrayWithReferenceSeparators) {
  std::vector<SweepRow> rows{single_row(), single_row()};
  std::string text = render_matrix(rows);
  EXPECT_TRUE(text.starts_with("[{\"image\""));
  EXPECT_NE(text.find("}, {\"image\""), std::string::npos);
  EXPECT_TRUE(text.ends_with("}]"));
  EXPECT_EQ(render_matrix({}), "[]");
}

TEST(RecipeFingerprint, IgnoresConcAndExpNameOnly) {
  SweepRow a = single_row();
  SweepRow b = single_row();
  b.conc = {128};
  b.exp_name = "other";
  std::string fingerprint = recipe_fingerprint(a);
  EXPECT_EQ(fingerprint.size(), 64u);
  EXPECT_EQ(fingerprint.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(fingerprint, recipe_fingerprint(b));
  b.image = "img:2";
  EXPECT_NE(fingerprint, recipe_fingerprint(b));
  SweepRow c = single_row();
  c.ep = 8;
  EXPECT_NE(fingerprint, recipe_fingerprint(c));
}

TEST(RecipeFingerprint, IsSha256OfSortedCompactJson) {
  static constexpr std::string_view kExcluded[] = {"conc", "exp-name"};
  std::string canonical = canonical_json(single_row(), kExcluded);
  EXPECT_EQ(canonical,
            "{\"dcp-size\":1,\"disagg\":false,\"dp-attn\":false,\"ep\":1,\"framework\":\"sglang\",\"image\":\"img:1\","
            "\"isl\":1024,\"max-model-len\":2304,\"model\":\"org/model\",\"model-prefix\":\"dsr1\",\"osl\":1024,"
            "\"pcp-size\":1,\"pp\":1,\"precision\":\"fp8\",\"run-eval\":false,\"runner\":\"h200\","
            "\"spec-decoding\":\"none\",\"tp\":8}");
  // sha256 of the string above, computed independently (python3 hashlib).
  EXPECT_EQ(recipe_fingerprint(single_row()), "4a73a1f672bc2ec99b4f288693441881710cfcbfd9fbe99a720f8adb558e385e");
}

TEST(ResultFileStem, SingleNodeMatchesTheInferenceXName) {
  SweepRow row = single_row();
  EXPECT_EQ(result_file_stem(row, 64, "h200-cw_00"),
            "dsr1_1k1k_fp8_sglang_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc64_h200-cw_00");
  EXPECT_EQ(result_file_stem(row, 64, "h200-cw_00", "0123456789abcdef0123"),
            "dsr1_1k1k_fp8_sglang_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc64_h200-cw_00"
            "_recipe-0123456789abcdef");
}

TEST(ResultFileStem, MultiNodeDescribesBothWorkers) {
  SweepRow row = single_row();
  row.kind = RowKind::kMultiNodeFixed;
  row.prefill = worker(1, 4, {});
  row.decode = worker(2, 8, {});
  row.decode.dp_attn = true;
  row.disagg = true;
  row.spec_decoding = config::SpecDecoding::kMtp;
  EXPECT_EQ(result_file_stem(row, 32, "b200-dgxc_1"),
            "dsr1_1k1k_fp8_sglang_prefill-nw1-tp4-pp1-dcp1-pcp1-ep4-dpafalse_decode-nw2-tp8-pp1-dcp1-pcp1-ep8-dpatrue"
            "_disagg-true_spec-mtp_conc32_b200-dgxc_1");
}

TEST(DramBudget, FormulaWithCapAndExactDecimalUtilization) {
  // cluster:mi355x-amds / b200-dgxc: 3_095_781 MiB capped to 2_861_022, TP8 of 8 at 0.80.
  EXPECT_EQ(dram_budget_gb(3'095'781, 0.80, 8, 8), 2399);
  // cluster:h200-dgxc: 1_471_356 MiB (under the cap).
  EXPECT_EQ(dram_budget_gb(1'471'356, 0.80, 8, 8), 1234);
  EXPECT_EQ(dram_budget_gb(3'095'781, 0.60, 8, 8), 1799);
  EXPECT_EQ(dram_budget_gb(3'095'781, 0.80, 4, 8), 1199);
  EXPECT_EQ(dram_budget_gb(1'000, 1.0, 1, 1), 1);  // 1.048576 GB
  EXPECT_EQ(dram_budget_gb(100, 0.1, 1, 3), 0);
}

}  // namespace
}  // namespace ix::sweep
