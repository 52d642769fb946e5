// join_sweep_rows: which sweep row's limits a measured disaggregated point takes.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "sim/fit.h"

namespace ix::sim {
namespace {

// A GB300 Dynamo-TRT 1k/1k point: 1 prefill worker TP4/EP4 DP-attention, 4 decode workers TP8/EP8.
CsvLoad one_point() {
  MeasuredPoint p;
  p.line = 2;
  p.hardware = "gb300";
  p.framework = "dynamo-trt";
  p.precision = "fp8";
  p.isl = 1024;
  p.osl = 1024;
  p.conc = 24;
  EngineConfig& c = p.engine;
  c.hardware = "gb300";
  c.framework = "dynamo-trt";
  c.precision = "fp8";
  c.spec_decoding = SpecDecoding::kMtp;
  c.disagg = true;
  c.prefill = WorkerTopology{.num_workers = 1, .tp = 4, .ep = 4, .dp_attn = true};
  c.decode = WorkerTopology{.num_workers = 4, .tp = 8, .ep = 8, .dp_attn = false};
  CsvLoad load;
  load.points.push_back(p);
  return load;
}

std::string row(const std::string& prefill_settings, const std::string& conc = "[24]") {
  return R"({"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
      "framework": "dynamo-trt", "runner": "gb300-nv", "isl": 1024, "osl": 1024, "spec-decoding": "mtp",
      "prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": true, "additional-settings": [)" +
         prefill_settings + R"(]}, "decode": {"num-worker": 4, "tp": 8, "ep": 8, "dp-attn": false}, "conc": )" + conc +
         "}";
}

boost::json::array rows(std::initializer_list<std::string> texts) {
  boost::json::array out;
  for (const auto& text : texts) out.push_back(boost::json::parse(text));
  return out;
}

const std::string kBatch4 =
    R"("CONFIG_FILE=recipes/trtllm/gb300-fp8/1k1k/mtp/ctx1_gen4_tep8_batch4_eplb0_mtp3_24.yaml")";
const std::string kBatch8 =
    R"("CONFIG_FILE=recipes/trtllm/gb300-fp8/1k1k/mtp/ctx1_gen4_tep8_batch8_eplb0_mtp3_24.yaml")";

TEST(RowJoin, APointTakesTheLimitsOfItsRowAndARowWithoutLimitsDoesNotVote) {
  CsvLoad load = one_point();
  const RowJoin join = join_sweep_rows(load, rows({row(""), row(kBatch4)}));
  EXPECT_EQ(join.rows_used, 2);
  EXPECT_EQ(join.points_matched, 1);
  EXPECT_EQ(join.points_changed, 1);
  EXPECT_EQ(join.points_ambiguous, 0);
  EXPECT_EQ(load.points[0].engine.decode.max_num_seqs, 4);
  EXPECT_EQ(load.points[0].engine.num_spec_tokens, 3);
}

TEST(RowJoin, DisagreeingRowsLeaveThePointAsMeasured) {
  CsvLoad load = one_point();
  const RowJoin join = join_sweep_rows(load, rows({row(kBatch4), row(kBatch8)}));
  EXPECT_EQ(join.points_matched, 1);
  EXPECT_EQ(join.points_ambiguous, 1);
  EXPECT_EQ(join.points_changed, 0);
  EXPECT_EQ(load.points[0].engine.decode.max_num_seqs, 0);
}

TEST(RowJoin, OtherConcurrenciesOrOnlyUnnamedLimitsChangeNothing) {
  CsvLoad load = one_point();
  RowJoin join = join_sweep_rows(load, rows({row(kBatch4, "[4, 8]")}));
  EXPECT_EQ(join.points_matched, 0);
  EXPECT_EQ(load.points[0].engine.decode.max_num_seqs, 0);
  join = join_sweep_rows(load, rows({row("")}));
  EXPECT_EQ(join.points_matched, 1);
  EXPECT_EQ(join.points_changed, 0);
  // An old-style entry's prefill batch setting reaches the prefill side.
  join = join_sweep_rows(load, rows({row(R"("PREFILL_MAX_BATCH_SIZE=2")")}));
  EXPECT_EQ(join.points_changed, 1);
  EXPECT_EQ(load.points[0].engine.prefill.max_num_seqs, 2);
  EXPECT_EQ(load.points[0].engine.decode.max_num_seqs, 0);
}

}  // namespace
}  // namespace ix::sim
