#include "sim/kv_cache.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace ix::sim {
namespace {

std::vector<int32_t> tokens(int32_t first, int32_t count) {
  std::vector<int32_t> out(count);
  for (int32_t i = 0; i < count; ++i) out[i] = first + i;
  return out;
}

TEST(PromptBlockHashes, ChainsFullBlocksOnly) {
  auto a = prompt_block_hashes(tokens(0, 40), 16);
  ASSERT_EQ(a.size(), 2u);
  auto b = prompt_block_hashes(tokens(0, 32), 16);
  EXPECT_EQ(a, b);
  // Same second block after a different first block: different hash (chained on the parent).
  auto c = tokens(0, 32);
  c[0] = 999;
  auto hashes_c = prompt_block_hashes(c, 16);
  EXPECT_NE(hashes_c[0], a[0]);
  EXPECT_NE(hashes_c[1], a[1]);
}

// The open-addressing index against std::unordered_map under random inserts and erases. Keys are
// drawn from a small range so probe runs collide, wrap around the table's end and get holes
// punched into them (backward-shift deletion must keep every later entry reachable).
TEST(BlockHashIndex, MatchesUnorderedMapUnderChurn) {
  BlockHashIndex index;
  std::unordered_map<uint64_t, int32_t> reference;
  std::mt19937_64 rng(7);
  for (int step = 0; step < 200000; ++step) {
    const uint64_t key = rng() % 3000 * 0x100000001ULL;  // multiples share low bits
    const auto it = reference.find(key);
    if (it == reference.end()) {
      ASSERT_EQ(index.find(key), BlockHashIndex::kAbsent) << "step " << step;
      const int32_t value = static_cast<int32_t>(rng() % 100000);
      index.insert(key, value);
      reference.emplace(key, value);
    } else {
      ASSERT_EQ(index.find(key), it->second) << "step " << step;
      if (rng() % 2) {
        index.erase(key, it->second + 1);  // wrong block: the entry stays
        ASSERT_EQ(index.find(key), it->second);
        index.erase(key, it->second);
        reference.erase(it);
        ASSERT_EQ(index.find(key), BlockHashIndex::kAbsent);
      }
    }
    ASSERT_EQ(index.size(), reference.size());
  }
  for (const auto& [key, value] : reference) EXPECT_EQ(index.find(key), value);
  EXPECT_GT(reference.size(), 500u);
}

TEST(BlockPool, AllocatesGrowsAndReleases) {
  BlockPool pool(10, 16, true);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(pool.allocate(blocks, 20, {}, 0));
  EXPECT_EQ(blocks.size(), 2u);
  ASSERT_TRUE(pool.allocate(blocks, 33, {}, 0));
  EXPECT_EQ(blocks.size(), 3u);
  EXPECT_EQ(pool.num_free(), 7);
  std::vector<int32_t> big;
  EXPECT_FALSE(pool.allocate(big, 8 * 16, {}, 0));
  EXPECT_TRUE(big.empty());  // nothing taken on failure
  EXPECT_EQ(pool.num_free(), 7);
  pool.release(blocks);
  EXPECT_EQ(pool.num_free(), 10);
  EXPECT_TRUE(blocks.empty());
}

TEST(BlockPool, FreedPrefixBlocksAreReusedUntilEvicted) {
  BlockPool pool(4, 16, true);
  auto hashes = prompt_block_hashes(tokens(0, 48), 16);
  std::vector<int32_t> first;
  ASSERT_TRUE(pool.allocate(first, 48, hashes, 0));
  pool.register_blocks(first, hashes, 0, 3);
  pool.release(first);
  EXPECT_EQ(pool.count_cached(hashes), 3);
  // A second request with the same prompt reuses all three blocks.
  std::vector<int32_t> second;
  ASSERT_TRUE(pool.allocate(second, 49, hashes, 3));
  EXPECT_EQ(second.size(), 4u);
  pool.release(second);
  // Filling the pool with other content evicts the cached blocks (LRU).
  std::vector<int32_t> other;
  ASSERT_TRUE(pool.allocate(other, 64, {}, 0));
  EXPECT_EQ(pool.count_cached(hashes), 0);
  EXPECT_GT(pool.evictions(), 0);
}

TEST(BlockPool, LookupStopsAtFirstMiss) {
  BlockPool pool(8, 16, true);
  auto hashes = prompt_block_hashes(tokens(0, 48), 16);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(pool.allocate(blocks, 48, hashes, 0));
  pool.register_blocks(blocks, hashes, 0, 1);  // only the first block is full and registered
  auto other = tokens(0, 48);
  other[20] = -5;  // second block differs
  auto other_hashes = prompt_block_hashes(other, 16);
  EXPECT_EQ(pool.count_cached(other_hashes), 1);
  EXPECT_EQ(pool.count_cached(hashes), 1);
}

TEST(BlockPool, NoCachingWhenDisabled) {
  BlockPool pool(4, 16, false);
  auto hashes = prompt_block_hashes(tokens(0, 32), 16);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(pool.allocate(blocks, 32, hashes, 0));
  pool.register_blocks(blocks, hashes, 0, 2);
  pool.release(blocks);
  EXPECT_EQ(pool.count_cached(hashes), 0);
}

}  // namespace
}  // namespace ix::sim
