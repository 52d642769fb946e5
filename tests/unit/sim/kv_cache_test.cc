#include "sim/kv_cache.h"

#include <gtest/gtest.h>

#include <list>
#include <optional>
#include <random>
#include <span>
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
  BlockTable blocks;
  ASSERT_TRUE(pool.allocate(blocks, 20, {}, 0));
  EXPECT_EQ(blocks.num_blocks, 2);
  ASSERT_TRUE(pool.allocate(blocks, 33, {}, 0));
  EXPECT_EQ(blocks.num_blocks, 3);
  EXPECT_EQ(pool.num_free(), 7);
  BlockTable big;
  EXPECT_FALSE(pool.allocate(big, 8 * 16, {}, 0));
  EXPECT_EQ(big.num_blocks, 0);  // nothing taken on failure
  EXPECT_EQ(pool.num_free(), 7);
  pool.release(blocks, {}, false);
  EXPECT_EQ(pool.num_free(), 10);
  EXPECT_EQ(blocks.num_blocks, 0);
}

TEST(BlockPool, FreedPrefixBlocksAreReusedUntilEvicted) {
  BlockPool pool(4, 16, true);
  auto hashes = prompt_block_hashes(tokens(0, 48), 16);
  BlockTable first;
  ASSERT_TRUE(pool.allocate(first, 48, hashes, 0));
  pool.register_blocks(first, hashes, 0, 3);
  pool.release(first, hashes, false);
  EXPECT_EQ(pool.count_cached(hashes), 3);
  // A second request with the same prompt reuses all three blocks.
  BlockTable second;
  ASSERT_TRUE(pool.allocate(second, 49, hashes, 3));
  EXPECT_EQ(second.num_blocks, 4);
  pool.release(second, hashes, false);
  // Filling the pool with other content evicts the cached blocks (LRU).
  BlockTable other;
  ASSERT_TRUE(pool.allocate(other, 64, {}, 0));
  EXPECT_EQ(pool.count_cached(hashes), 0);
  EXPECT_GT(pool.evictions(), 0);
}

TEST(BlockPool, LookupStopsAtFirstMiss) {
  BlockPool pool(8, 16, true);
  auto hashes = prompt_block_hashes(tokens(0, 48), 16);
  BlockTable blocks;
  ASSERT_TRUE(pool.allocate(blocks, 48, hashes, 0));
  pool.register_blocks(blocks, hashes, 0, 1);  // only the first block is full and registered
  auto other = tokens(0, 48);
  other[20] = -5;  // second block differs
  auto other_hashes = prompt_block_hashes(other, 16);
  EXPECT_EQ(pool.count_cached(other_hashes), 1);
  EXPECT_EQ(pool.count_cached(hashes), 1);
}

// The pool as a list of blocks, each with its own reference count and hash (what BlockPool
// behaves as, with a node per block).
class ReferencePool {
 public:
  ReferencePool(int32_t num_blocks, int32_t block_size) : block_size_(block_size), ref_(num_blocks, 0) {
    hash_.resize(num_blocks);
    for (int32_t block = 0; block < num_blocks; ++block) where_[block] = free_.insert(free_.end(), block);
  }
  int32_t num_free() const { return int32_t(free_.size()); }
  int64_t evictions() const { return evictions_; }
  int32_t count_cached(std::span<const uint64_t> hashes) const {
    int32_t count = 0;
    while (count < int32_t(hashes.size()) && index_.contains(hashes[count])) ++count;
    return count;
  }
  bool allocate(std::vector<int32_t>& blocks, int32_t num_tokens, std::span<const uint64_t> hashes, int32_t cached) {
    const int32_t reuse = blocks.empty() ? cached : 0;
    const int32_t fresh =
        std::max<int32_t>(0, (num_tokens + block_size_ - 1) / block_size_ - int32_t(blocks.size()) - reuse);
    int32_t evictable = 0;
    for (int32_t i = 0; i < reuse; ++i) evictable += ref_[index_.at(hashes[i])] == 0 ? 1 : 0;
    if (fresh + evictable > num_free()) return false;
    for (int32_t i = 0; i < reuse; ++i) {
      const int32_t block = index_.at(hashes[i]);
      if (ref_[block]++ == 0) free_.erase(where_.at(block));
      blocks.push_back(block);
    }
    for (int32_t i = 0; i < fresh; ++i) {
      const int32_t block = free_.front();
      free_.pop_front();
      if (hash_[block]) {
        index_.erase(*hash_[block]);
        hash_[block].reset();
        ++evictions_;
      }
      ref_[block] = 1;
      blocks.push_back(block);
    }
    return true;
  }
  void release(std::vector<int32_t>& blocks) {
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
      if (--ref_[*it] == 0) where_[*it] = free_.insert(free_.end(), *it);
    blocks.clear();
  }
  void register_blocks(const std::vector<int32_t>& blocks, std::span<const uint64_t> hashes, int32_t from, int32_t to) {
    for (int32_t i = from; i < to; ++i) {
      if (hash_[blocks[i]] || index_.contains(hashes[i])) continue;
      hash_[blocks[i]] = hashes[i];
      index_[hashes[i]] = blocks[i];
    }
  }

 private:
  int32_t block_size_;
  std::vector<int32_t> ref_;
  std::vector<std::optional<uint64_t>> hash_;
  std::list<int32_t> free_;
  std::unordered_map<int32_t, std::list<int32_t>::iterator> where_;
  std::unordered_map<uint64_t, int32_t> index_;
  int64_t evictions_ = 0;
};

// Requests of a random schedule: admitted (prefix lookup), grown a chunk at a time with their
// prompt blocks registered, preempted (and looked up again) or finished. Prompts share one of a
// few prefixes; the rest of each is its own.
struct PoolUser {
  std::vector<uint64_t> hashes;
  int32_t shared = 0;
  int32_t prompt = 0;
  int32_t computed = 0;
  int32_t registered = 0;
  bool running = false;
  BlockTable table;
  std::vector<int32_t> reference;
};

PoolUser new_user(std::mt19937_64& rng, int32_t block_size) {
  PoolUser user;
  user.prompt = int32_t(rng() % 12 * block_size + (rng() % 2 ? 0 : rng() % block_size) + 1);
  const uint64_t family = rng() % 3;
  user.shared = std::min<int32_t>(user.prompt / block_size, int32_t(rng() % 5));
  for (int32_t b = 0; b < user.prompt / block_size; ++b)
    user.hashes.push_back(b < user.shared ? (family + 1) * 1000 + b : rng());
  user.table.shareable = user.shared;
  return user;
}

// One step of `user` on both pools; false when an allocation failed (on both).
bool step_user(PoolUser& user, BlockPool& pool, ReferencePool& reference, std::mt19937_64& rng) {
  const int32_t block_size = pool.block_size();
  int32_t cached = 0;
  if (!user.running) {
    const auto prefix = std::span<const uint64_t>(user.hashes)
                            .first(std::min<size_t>(user.hashes.size(), (user.prompt - 1) / block_size));
    cached = pool.count_cached(prefix);
    EXPECT_EQ(cached, reference.count_cached(prefix));
    user.computed = cached * block_size;
  }
  const int32_t tokens = user.computed + 1 + int32_t(rng() % (2 * block_size));
  const bool ok = pool.allocate(user.table, tokens, user.hashes, cached);
  EXPECT_EQ(ok, reference.allocate(user.reference, tokens, user.hashes, cached));
  if (!ok) return false;
  if (!user.running) user.registered = std::max(user.registered, cached);
  user.running = true;
  user.computed = tokens;
  const int32_t full =
      std::min<int32_t>(std::min(user.computed, user.prompt) / block_size, int32_t(user.hashes.size()));
  if (full > user.registered) {
    pool.register_blocks(user.table, user.hashes, user.registered, full);
    reference.register_blocks(user.reference, user.hashes, user.registered, full);
    user.registered = full;
  }
  return true;
}

void stop_user(PoolUser& user, BlockPool& pool, ReferencePool& reference, bool preempted) {
  pool.release(user.table, user.hashes, preempted);
  reference.release(user.reference);
  user.running = false;
  user.computed = 0;
  user.registered = 0;
}

TEST(BlockPool, BehavesAsAPoolOfBlocksWithPrivateAndSharedPrompts) {
  constexpr int32_t kBlockSize = 4;
  BlockPool pool(48, kBlockSize, true);
  ReferencePool reference(48, kBlockSize);
  std::mt19937_64 rng(11);
  std::vector<PoolUser> users;
  for (int i = 0; i < 6; ++i) users.push_back(new_user(rng, kBlockSize));
  int64_t preemptions = 0;
  for (int step = 0; step < 100000; ++step) {
    PoolUser& user = users[rng() % users.size()];
    const uint64_t action = rng() % 10;
    if (user.running && action < 2) {
      stop_user(user, pool, reference, true);
      ++preemptions;
    } else if (user.running && (action < 3 || user.computed > user.prompt + 8)) {
      stop_user(user, pool, reference, false);
      user = new_user(rng, kBlockSize);
    } else if (!step_user(user, pool, reference, rng) && user.running) {
      stop_user(user, pool, reference, true);
      ++preemptions;
    }
    ASSERT_EQ(pool.num_free(), reference.num_free()) << "step " << step;
    ASSERT_EQ(pool.evictions(), reference.evictions()) << "step " << step;
    for (const PoolUser& other : users)
      if (!other.running) ASSERT_EQ(pool.count_cached(other.hashes), reference.count_cached(other.hashes));
  }
  EXPECT_GT(preemptions, 1000);
  EXPECT_GT(pool.evictions(), 1000);
  EXPECT_LE(pool.explicit_blocks(), 48);
}

TEST(BlockPool, NoCachingWhenDisabled) {
  BlockPool pool(4, 16, false);
  auto hashes = prompt_block_hashes(tokens(0, 32), 16);
  BlockTable blocks;
  ASSERT_TRUE(pool.allocate(blocks, 32, hashes, 0));
  pool.register_blocks(blocks, hashes, 0, 2);
  pool.release(blocks, {}, false);
  EXPECT_EQ(pool.count_cached(hashes), 0);
}

}  // namespace
}  // namespace ix::sim
