// KV offloading's CPU tier: the LRU pool on its own (HostBlockPool) and inside the engine core
// (--kv-offloading-size): blocks the GPU pool lost are found in the tier and loaded back.
#include <gtest/gtest.h>

#include "sim/catalog.h"
#include "sim/kv_cache.h"
#include "test_util.h"

namespace ix::sim {
namespace {

using testing::EventLog;
using testing::llama_on_h200;
using testing::make_core;
using testing::request_with_tokens;
using testing::tokens_from;

TEST(HostBlockPool, FindsTheStoredPrefixOfAChain) {
  HostBlockPool pool(8);
  EXPECT_EQ(pool.store(std::vector<uint64_t>{1, 2, 3}), 3);
  EXPECT_EQ(pool.count_cached(std::vector<uint64_t>{1, 2, 3, 4}), 3);
  EXPECT_EQ(pool.count_cached(std::vector<uint64_t>{9, 1, 2}), 0);  // a lookup stops at the first miss
  // Storing present blocks again stores nothing.
  EXPECT_EQ(pool.store(std::vector<uint64_t>{1, 2}), 0);
  EXPECT_EQ(pool.num_stored(), 3);
  EXPECT_DOUBLE_EQ(pool.usage(), 3.0 / 8.0);
}

TEST(HostBlockPool, EvictsTheLeastRecentlyUsedTailsFirst) {
  HostBlockPool pool(4);
  const std::vector<uint64_t> a{10, 11};
  const std::vector<uint64_t> b{20, 21};
  pool.store(a);
  pool.store(b);
  pool.touch(a);  // a is now the most recently used chain
  EXPECT_EQ(pool.store(std::vector<uint64_t>{30}), 1);
  // The full tier made room from b, the least recently used chain, at its tail: b's first block
  // (the shared prefix its extensions need) outlives the second.
  EXPECT_EQ(pool.evictions(), 1);
  EXPECT_EQ(pool.count_cached(b), 1);
  EXPECT_EQ(pool.count_cached(a), 2);
  EXPECT_EQ(pool.num_stored(), 4);
}

TEST(HostBlockPool, SkipsAStoreLargerThanTheTier) {
  HostBlockPool pool(2);
  EXPECT_EQ(pool.store(std::vector<uint64_t>{1, 2, 3}), 0);
  EXPECT_EQ(pool.num_stored(), 0);
  HostBlockPool none(0);
  EXPECT_EQ(none.store(std::vector<uint64_t>{1}), 0);
  EXPECT_EQ(none.count_cached(std::vector<uint64_t>{1}), 0);
}

// A GPU pool of 300 blocks serves prompts of 250 blocks: after A and B, the third request (A
// again) finds only part of A in the GPU prefix cache; with offloading it finds the rest in the
// CPU tier.
constexpr int32_t kGpuBlocks = 300;
constexpr int32_t kPromptTokens = 4000;

struct Replay {
  EngineMetrics metrics;
  int32_t third_cached = 0;
  int64_t third_ttft_ns = 0;
};

Replay replay_a_b_a(double offloading_gib) {
  auto config = llama_on_h200();
  config.num_gpu_blocks_override = kGpuBlocks;
  config.kv_offloading_size_gib = offloading_gib;
  auto core = make_core(config);
  EXPECT_TRUE(core);
  if (!core) return {};
  EventLog log;
  uint64_t third = 0;
  int64_t sent_ns = 0;
  for (int32_t first : {0, 100000, 0}) {
    sent_ns = core->now_ns();
    auto id = core->submit(request_with_tokens(tokens_from(first, kPromptTokens), 4, 16, sent_ns));
    EXPECT_TRUE(id);
    if (!id) return {};
    core->run_until(kNever, log.sink());
    third = *id;
  }
  Replay out;
  out.metrics = core->metrics();
  const auto& events = log.by_request.at(third);
  out.third_cached = events.front().cached_prompt_tokens;
  out.third_ttft_ns = events.front().time_ns - sent_ns;
  return out;
}

TEST(KvOffload, ABlockLostOnTheGpuIsLoadedBackFromTheCpuTier) {
  const Replay off = replay_a_b_a(0);
  const Replay on = replay_a_b_a(8);
  const int32_t cacheable = (kPromptTokens - 1) / 16 * 16;  // the last token is always recomputed
  // Without offloading the third request recomputes what the GPU lost; with it, the CPU tier
  // holds every block A computed, so its whole cacheable prefix is a hit.
  EXPECT_LT(off.third_cached, cacheable);
  EXPECT_GT(off.third_cached, 0);
  EXPECT_EQ(on.third_cached, cacheable);
  EXPECT_EQ(on.metrics.prefix_cache_hits, off.metrics.prefix_cache_hits);  // same GPU hits
  EXPECT_EQ(on.metrics.external_prefix_cache_hits, cacheable - off.third_cached);
  EXPECT_EQ(on.metrics.external_prefix_cache_queries, 3 * kPromptTokens);
  EXPECT_EQ(off.metrics.external_prefix_cache_queries, 0);
  EXPECT_EQ(off.metrics.kv_offload_bytes_gpu_to_cpu, 0);
  EXPECT_FALSE(off.metrics.cache_config->kv_offloading_size_gib > 0);
  // Loading beats recomputing: the third request's first token comes sooner.
  EXPECT_LT(on.third_ttft_ns, off.third_ttft_ns);
}

TEST(KvOffload, CountsTransfersAtTheHostLinkBandwidth) {
  const Replay on = replay_a_b_a(8);
  const EngineMetrics& m = on.metrics;
  // Stores: every full prompt block of A and B once (the third request's are all present).
  const int64_t stored_blocks = 2 * (kPromptTokens / 16);
  const int64_t loaded_blocks = m.external_prefix_cache_hits / 16;
  ASSERT_GT(loaded_blocks, 0);
  EXPECT_EQ(m.kv_offload_bytes_gpu_to_cpu % stored_blocks, 0);
  const int64_t block_bytes = m.kv_offload_bytes_gpu_to_cpu / stored_blocks;
  EXPECT_EQ(m.kv_offload_bytes_cpu_to_gpu, loaded_blocks * block_bytes);
  // Each GPU moves its share over its own link; the seconds are summed over the GPUs, so bytes
  // over seconds is one link's bandwidth (h200: PCIe Gen5 x16).
  EXPECT_NEAR(double(m.kv_offload_bytes_gpu_to_cpu) / m.kv_offload_seconds_gpu_to_cpu, kDefaultHostLinkBandwidth,
              1e-6 * kDefaultHostLinkBandwidth);
  EXPECT_NEAR(double(m.kv_offload_bytes_cpu_to_gpu) / m.kv_offload_seconds_cpu_to_gpu, kDefaultHostLinkBandwidth,
              1e-6 * kDefaultHostLinkBandwidth);
  // The tier holds the stored blocks: its size over the bytes of a block.
  ASSERT_TRUE(m.cache_config);
  EXPECT_EQ(m.cache_config->num_cpu_blocks, int64_t(8.0 * 1073741824.0 / double(block_bytes)));
  EXPECT_DOUBLE_EQ(m.cpu_kv_cache_usage_perc, double(stored_blocks) / double(m.cache_config->num_cpu_blocks));
  EXPECT_EQ(m.cache_config->num_gpu_blocks, kGpuBlocks);
}

TEST(KvOffload, AFullTierLosesItsLeastRecentlyUsedBlocks) {
  // A tier of about 1.5 prompts: storing B then C evicts A's tail, so A comes back in part only.
  auto config = llama_on_h200();
  config.num_gpu_blocks_override = kGpuBlocks;
  config.kv_offloading_size_gib = 1.0;
  auto core = make_core(config);
  ASSERT_TRUE(core);
  const int32_t prompt = 2400;  // 150 blocks; the tier holds about 400
  EventLog log;
  uint64_t last = 0;
  for (int32_t first : {0, 100000, 200000, 0}) {
    auto id = core->submit(request_with_tokens(tokens_from(first, prompt), 4, 16, core->now_ns()));
    ASSERT_TRUE(id);
    core->run_until(kNever, log.sink());
    last = *id;
  }
  const EngineMetrics m = core->metrics();
  ASSERT_TRUE(m.cache_config);
  ASSERT_LT(m.cache_config->num_cpu_blocks, 3 * prompt / 16);
  EXPECT_DOUBLE_EQ(m.cpu_kv_cache_usage_perc, 1.0);
  const int32_t cached = log.by_request.at(last).front().cached_prompt_tokens;
  EXPECT_GT(m.external_prefix_cache_hits, 0);
  EXPECT_LT(cached, (prompt - 1) / 16 * 16);
}

TEST(KvOffload, ARequestCancelledWhileLoadingFreesItsBlocks) {
  auto config = llama_on_h200();
  config.num_gpu_blocks_override = kGpuBlocks;
  config.kv_offloading_size_gib = 8;
  auto core = make_core(config);
  ASSERT_TRUE(core);
  EventLog log;
  for (int32_t first : {0, 100000}) {
    ASSERT_TRUE(core->submit(request_with_tokens(tokens_from(first, kPromptTokens), 4, 16, core->now_ns())));
    core->run_until(kNever, log.sink());
  }
  auto id = core->submit(request_with_tokens(tokens_from(0, kPromptTokens), 4, 16, core->now_ns()));
  ASSERT_TRUE(id);
  bool seen_loading = false;
  while (core->next_event_ns() != kNever && !seen_loading) {
    core->run_until(core->next_event_ns(), log.sink());
    const EngineMetrics m = core->metrics();
    // Loading: waiting (as vLLM's WAITING_FOR_REMOTE_KVS), holding GPU blocks, not running.
    seen_loading = m.num_requests_running == 0 && m.num_requests_waiting == 1 && m.kv_cache_usage_perc > 0;
  }
  ASSERT_TRUE(seen_loading);
  core->cancel(*id);
  core->run_until(kNever, log.sink());
  EXPECT_EQ(log.by_request.count(*id), 0u);
  const EngineMetrics m = core->metrics();
  EXPECT_DOUBLE_EQ(m.kv_cache_usage_perc, 0.0);
  EXPECT_EQ(m.num_requests_waiting, 0);
}

TEST(KvOffload, RejectsWhatIsNotSimulated) {
  auto config = llama_on_h200();
  config.kv_offloading_size_gib = -1;
  EXPECT_FALSE(validate(config));
  config.kv_offloading_size_gib = 4;
  config.kv_offloading_backend = "lmcache";
  auto result = validate(config);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message().find("native"), std::string::npos) << result.error().message();
}

}  // namespace
}  // namespace ix::sim
