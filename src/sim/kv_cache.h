// Paged KV cache of one rank with hash-chained prefix caching (vLLM v1 semantics).
//
// Blocks of `block_size` tokens. A full prompt block is keyed by hash(parent hash, its tokens)
// (see prompt_block_hashes); a lookup walks a prompt's chain to the first miss. Freed blocks keep
// their hash and stay reusable in an LRU free queue until a new allocation evicts them: blocks
// are taken from the head of the queue, freed ones are appended to the tail.
//
// Thread-safety: none (owned by one scheduler).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace ix::sim {

// Chained hashes of the full blocks of `tokens`: hash[i] covers tokens [0, (i+1)·block_size).
std::vector<uint64_t> prompt_block_hashes(std::span<const int32_t> tokens, int32_t block_size);

// Open-addressing map from a block's content hash to the block holding it (linear probing,
// backward-shift deletion, no tombstones). The prefix cache looks hashes up on every allocation,
// eviction and registration; std::unordered_map's node per entry made each lookup a cache miss
// (15 % of `sim predict`'s CPU). Keys are any 64-bit value; values are block ids >= 0.
class BlockHashIndex {
 public:
  static constexpr int32_t kAbsent = -1;
  int32_t find(uint64_t key) const;
  // `key` must be absent.
  void insert(uint64_t key, int32_t value);
  // Removes `key` if it maps to `value`.
  void erase(uint64_t key, int32_t value);
  size_t size() const { return size_; }

 private:
  size_t home(uint64_t key) const { return static_cast<size_t>((key * 0x9e3779b97f4a7c15ULL) >> shift_); }
  void grow();

  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;  // kAbsent marks an empty slot
  size_t size_ = 0;
  int shift_ = 64;
};

// A doubly linked list over the indices [0, n): a pool's LRU order (head: least recently used).
// O(1) unlink and push; no allocation after construction.
class IndexList {
 public:
  static constexpr int32_t kNil = -1;
  explicit IndexList(int32_t n) : prev_(static_cast<size_t>(std::max(0, n)), kNil), next_(prev_) {}
  void unlink(int32_t i);
  void push_tail(int32_t i);
  int32_t head() const { return head_; }

 private:
  std::vector<int32_t> prev_;
  std::vector<int32_t> next_;
  int32_t head_ = kNil;
  int32_t tail_ = kNil;
};

class BlockPool {
 public:
  BlockPool(int32_t num_blocks, int32_t block_size, bool prefix_caching);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  // Blocks that can be handed out now (free, including evictable cached blocks).
  int32_t num_free() const { return num_free_; }
  double usage() const { return num_blocks_ == 0 ? 0.0 : 1.0 - double(num_free_) / num_blocks_; }

  // Number of leading blocks of `hashes` present in the cache (no state change).
  int32_t count_cached(std::span<const uint64_t> hashes) const;

  // Grows `blocks` (a request's block table) to hold `num_tokens` tokens. When `blocks` is empty
  // and `cached_blocks` > 0, the first `cached_blocks` come from the prefix cache (they must have
  // been counted by count_cached just before). Returns false, changing nothing, when there is not
  // enough free space.
  bool allocate(std::vector<int32_t>& blocks, int32_t num_tokens, std::span<const uint64_t> hashes,
                int32_t cached_blocks) {
    // Most calls (a decode step's next token) find room in the blocks the request holds.
    const bool take_cached = blocks.empty() && cached_blocks > 0;
    if (!take_cached && int64_t{num_tokens} <= int64_t(blocks.size()) * block_size_) return true;
    return allocate_more(blocks, num_tokens, hashes, cached_blocks);
  }
  // Releases a request's blocks (last block first, so its tail is evicted first).
  void release(std::vector<int32_t>& blocks);
  // Registers `blocks[i]` under `hashes[i]` for i in [from, to) so later prompts can reuse them.
  void register_blocks(std::span<const int32_t> blocks, std::span<const uint64_t> hashes, int32_t from, int32_t to);

  int64_t evictions() const { return evictions_; }

 private:
  bool allocate_more(std::vector<int32_t>& blocks, int32_t num_tokens, std::span<const uint64_t> hashes,
                     int32_t cached_blocks);
  void unlink(int32_t block);
  void push_tail(int32_t block);
  int32_t pop_head();

  int32_t num_blocks_;
  int32_t block_size_;
  bool prefix_caching_;
  int32_t num_free_ = 0;
  std::vector<int32_t> ref_count_;
  std::vector<uint64_t> hash_;
  std::vector<uint8_t> has_hash_;
  IndexList free_list_;  // blocks with no reference, least recently freed first
  BlockHashIndex cached_;
  int64_t evictions_ = 0;
};

// The CPU tier of vLLM's native KV offloading (--kv-offloading-backend native: the
// OffloadingConnector's CPU backend, LRU policy). It holds the hashes of up to `num_blocks` KV
// blocks stored from the GPU. vLLM stores every full block a request computes (not only blocks
// the GPU pool later evicts), so the tier keeps copies of blocks the GPU still holds too; a
// lookup starts where the GPU prefix ends and walks the chain to the first miss.
//
// LRU as vLLM's LRUOffloadingManager: new blocks go to the most recently used end; touching a
// chain moves its blocks there last one first, so a shared prefix outlives the tails that
// extend it; a store that needs room evicts from the least recently used end, and a store larger
// than the whole tier is skipped.
//
// Thread-safety: none (owned by one scheduler rank).
class HostBlockPool {
 public:
  explicit HostBlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t num_stored() const { return int32_t(index_.size()); }
  double usage() const { return num_blocks_ == 0 ? 0.0 : double(index_.size()) / num_blocks_; }
  // Number of leading blocks of `hashes` in the tier (no state change).
  int32_t count_cached(std::span<const uint64_t> hashes) const;
  // Makes the stored blocks of `hashes` the most recently used, the first one most.
  void touch(std::span<const uint64_t> hashes);
  // Stores the blocks of `hashes` the tier lacks (evicting least recently used ones) and touches
  // all of them. Returns how many were stored: 0 when they are all present, or when more are
  // missing than the tier holds.
  int32_t store(std::span<const uint64_t> hashes);
  int64_t evictions() const { return evictions_; }

 private:
  int32_t num_blocks_;
  std::vector<uint64_t> hash_;
  IndexList lru_;  // stored slots, least recently used first
  std::vector<int32_t> free_slots_;
  BlockHashIndex index_;
  int64_t evictions_ = 0;
};

}  // namespace ix::sim
