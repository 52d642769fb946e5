#include "sim/cost_model.h"

#include <gtest/gtest.h>

#include "sim/engine_core.h"
#include "test_util.h"

namespace ix::sim {
namespace {

struct Fixture {
  ResolvedEngine engine;
  std::unique_ptr<CostModel> model;
};

Fixture make(const std::string& hardware, const std::string& precision, int32_t tp, bool dp_attn = false,
             int32_t ep = 1) {
  EngineConfig config = testing::engine_config("deepseek-r1", hardware, precision, "vllm", tp);
  config.ep = ep;
  config.dp_attn = dp_attn;
  Fixture f;
  auto resolved = resolve_engine(config);
  EXPECT_TRUE(resolved) << (resolved ? "" : resolved.error().message());
  f.engine = *resolved;
  f.engine.efficiency = Efficiency{};  // nominal, independent of the shipped calibration
  f.model = std::make_unique<CostModel>(f.engine.model, f.engine.hardware, f.engine.efficiency, precision, 0,
                                        WorkerTopology{1, tp, ep, dp_attn});
  return f;
}

RankLoad decode_batch(int32_t requests, int32_t context) {
  RankLoad load;
  for (int32_t i = 0; i < requests; ++i) load.add(1, context, true, false);
  load.sampled = requests;
  return load;
}

TEST(CostModel, BucketsSumToStepTime) {
  auto f = make("h200", "fp8", 8);
  RankLoad load = decode_batch(32, 2000);
  auto cost = f.model->step({&load, 1});
  double sum = 0;
  for (double b : cost.buckets) sum += b;
  EXPECT_NEAR(sum, cost.seconds, 1e-12);
  EXPECT_GT(cost.buckets[kFixed], 0);
  EXPECT_GT(cost.buckets[kOther], 0);  // TP all-reduce
}

TEST(CostModel, FixedCostsDominateAtBatchOne) {
  auto f = make("h200", "fp8", 8);
  RankLoad load = decode_batch(1, 1000);
  auto cost = f.model->step({&load, 1});
  // t_step + L t_layer = 130 us + 61 x 30 us; B t_req = 4 us in its own bucket.
  EXPECT_NEAR(cost.buckets[kFixed], 130e-6 + 61 * 30e-6, 1e-9);
  EXPECT_NEAR(cost.buckets[kRequest], 4e-6, 1e-12);
  EXPECT_GT(cost.buckets[kFixed], cost.buckets[kMemory]);
}

TEST(CostModel, DecodeStepGrowsWithBatchAndContext) {
  auto f = make("h200", "fp8", 8);
  double previous = 0;
  for (int32_t batch : {1, 4, 16, 64, 256}) {
    RankLoad load = decode_batch(batch, 1000);
    const double t = f.model->step({&load, 1}).seconds;
    EXPECT_GT(t, previous) << batch;
    previous = t;
  }
  RankLoad short_ctx = decode_batch(64, 500);
  RankLoad long_ctx = decode_batch(64, 8000);
  EXPECT_GT(f.model->step({&long_ctx, 1}).seconds, f.model->step({&short_ctx, 1}).seconds);
}

TEST(CostModel, Fp4IsFasterThanFp8) {
  auto fp8 = make("b200", "fp8", 8);
  auto fp4 = make("b200", "fp4", 8);
  for (int32_t batch : {4, 64, 256}) {
    RankLoad load = decode_batch(batch, 1000);
    EXPECT_LT(fp4.model->step({&load, 1}).seconds, fp8.model->step({&load, 1}).seconds) << batch;
  }
  RankLoad prefill;
  prefill.add(8192, 0, false, false);
  prefill.sampled = 1;
  EXPECT_LT(fp4.model->step({&prefill, 1}).seconds, fp8.model->step({&prefill, 1}).seconds);
}

TEST(CostModel, PrefillIsComputeBoundAndQuadraticInContext) {
  auto f = make("h200", "fp8", 8);
  RankLoad first_chunk, late_chunk;
  first_chunk.add(4096, 0, false, false);
  late_chunk.add(4096, 28000, false, false);
  auto early = f.model->step({&first_chunk, 1});
  auto late = f.model->step({&late_chunk, 1});
  // Prefill FLOPs go to their own bucket (refitted by prefill_scale).
  EXPECT_GT(early.buckets[kPrefill], early.buckets[kMemory]);
  EXPECT_GT(late.seconds, early.seconds * 1.2);
}

TEST(CostModel, MlaKvIsReplicatedAndWeightsAreSharded) {
  auto tp4 = make("h200", "fp8", 4);
  auto tp8 = make("h200", "fp8", 8);
  EXPECT_DOUBLE_EQ(tp4.model->kv_bytes_per_token_per_rank(), 61.0 * 576);
  EXPECT_DOUBLE_EQ(tp8.model->kv_bytes_per_token_per_rank(), 61.0 * 576);
  EXPECT_NEAR(tp4.model->weight_bytes_per_gpu(), 2 * tp8.model->weight_bytes_per_gpu(), 1e9);
  EXPECT_GT(tp8.model->kv_capacity_tokens(0.9), tp4.model->kv_capacity_tokens(0.9));
  // 671B in fp8 does not fit on 4 x 80 GB.
  auto h100 = make("h100", "fp8", 4);
  EXPECT_LT(h100.model->kv_capacity_tokens(0.9), 0);
}

TEST(CostModel, DataParallelAttentionStepWaitsForTheSlowestRank) {
  auto f = make("b200", "fp4", 8, true, 8);
  EXPECT_EQ(f.model->shape().dp_ranks, 8);
  std::vector<RankLoad> even(8, decode_batch(8, 1000));
  std::vector<RankLoad> skewed(8, decode_batch(4, 1000));
  skewed[0] = decode_batch(36, 1000);  // same total tokens, one hot rank
  EXPECT_GT(f.model->step(skewed).seconds, f.model->step(even).seconds);
}

TEST(CostModel, ExpertBytesFollowDistinctExpertsTouched) {
  // Decode cost keeps rising with batch until every expert is read (E_eff(n) = E(1 - (1 - k/E)^n)).
  auto f = make("b200", "fp8", 8);
  RankLoad b4 = decode_batch(4, 100), b64 = decode_batch(64, 100), b512 = decode_batch(512, 100);
  const double t4 = f.model->step({&b4, 1}).buckets[kMemory];
  const double t64 = f.model->step({&b64, 1}).buckets[kMemory];
  EXPECT_GT(t64, 3 * t4);
  const double t512 = f.model->step({&b512, 1}).seconds;
  EXPECT_GT(t512, f.model->step({&b64, 1}).seconds);
}

TEST(CostModel, FittedFactorsScaleTheirBuckets) {
  // Each bucket moves with its own factor only (calibration rescales the buckets in closed form).
  auto base = make("h200", "fp8", 8);
  RankLoad mixed = decode_batch(32, 4000);
  mixed.add(2048, 0, false, false);
  const auto nominal = base.model->step({&mixed, 1});
  Efficiency scaled{};
  scaled.request_scale = 3;
  scaled.attention_scale = 2;
  scaled.prefill_scale = 1.5;
  CostModel model(base.engine.model, base.engine.hardware, scaled, "fp8", 0, WorkerTopology{1, 8, 1, false});
  const auto cost = model.step({&mixed, 1});
  EXPECT_GT(nominal.buckets[kAttention], 0);
  EXPECT_GT(nominal.buckets[kPrefill], 0);
  EXPECT_NEAR(cost.buckets[kRequest], 3 * nominal.buckets[kRequest], 1e-12);
  EXPECT_NEAR(cost.buckets[kAttention], 2 * nominal.buckets[kAttention], 1e-12);
  EXPECT_NEAR(cost.buckets[kPrefill], 1.5 * nominal.buckets[kPrefill], 1e-12);
  EXPECT_NEAR(cost.buckets[kFixed], nominal.buckets[kFixed], 1e-12);
}

// An engine spanning two 8-GPU H100 nodes (TP16) all-reduces as NCCL does: inside each node over
// NVLink, and across the nodes only each GPU's 1/8 shard, every GPU on its own NIC. The bandwidth part of the
// communication bucket (two all-reduces per layer; the latency cancels in the difference of two chunk sizes) must
// follow those formulas, not the whole message through one NIC (~6x slower for TP16).
TEST(CostModel, CrossNodeCollectivesMoveMostBytesInsideTheNodes) {
  const auto comm = [](const Fixture& f, int32_t tokens) {
    RankLoad load;
    load.add(tokens, 0, false, false);
    return f.model->step({&load, 1}).buckets[kOther];
  };
  const auto tp16 = make("h100", "fp8", 16);
  const HardwareSpec& hw = tp16.engine.hardware;
  ASSERT_EQ(hw.gpus_per_node, 8);
  ASSERT_LT(hw.scaleup_domain_gpus, 16);
  const double eff = tp16.engine.efficiency.link_efficiency;
  const double up = hw.scaleup_bandwidth_bytes_per_s * eff, out = hw.scaleout_bandwidth_bytes_per_s * eff;
  const double message_bytes = 4096.0 * tp16.engine.model.hidden_size * 2.0;  // bf16 activations
  const double per_layer = 2.0 * (2.0 * 7 / 8 / up + 2.0 * 1 / 2 / 8 / out) * message_bytes;
  EXPECT_NEAR(comm(tp16, 8192) - comm(tp16, 4096), tp16.engine.model.num_layers * per_layer, 1e-9);
  const double flat_nic = tp16.engine.model.num_layers * 2.0 * (2.0 * 15 / 16 / out) * message_bytes;
  EXPECT_LT(comm(tp16, 8192) - comm(tp16, 4096), flat_nic / 5);
  // Inside one node nothing changes: TP8 all-reduces over NVLink only.
  const auto tp8 = make("h100", "fp8", 8);
  EXPECT_NEAR(comm(tp8, 8192) - comm(tp8, 4096), tp8.engine.model.num_layers * 2.0 * (2.0 * 7 / 8 / up) * message_bytes,
              1e-9);
}

TEST(CostModel, KvTransferGrowsWithPrompt) {
  auto f = make("h200", "fp8", 8);
  const double small = f.model->kv_transfer_seconds(1000, false);
  const double large = f.model->kv_transfer_seconds(8000, false);
  EXPECT_GT(small, f.engine.efficiency.kv_transfer_setup_s);
  EXPECT_NEAR(large - small, 7 * (small - f.engine.efficiency.kv_transfer_setup_s), 1e-9);
}

TEST(CostModel, CudaGraphPadding) {
  EXPECT_EQ(CostModel::cuda_graph_padded(1), 1);
  EXPECT_EQ(CostModel::cuda_graph_padded(3), 4);
  EXPECT_EQ(CostModel::cuda_graph_padded(9), 16);
  EXPECT_EQ(CostModel::cuda_graph_padded(17), 24);
  EXPECT_EQ(CostModel::cuda_graph_padded(1000), 1000);
}

}  // namespace
}  // namespace ix::sim
