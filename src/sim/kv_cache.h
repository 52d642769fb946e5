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
// O(1) unlink and push; grow() adds indices.
class IndexList {
 public:
  static constexpr int32_t kNil = -1;
  explicit IndexList(int32_t n = 0) : prev_(static_cast<size_t>(std::max(0, n)), kNil), next_(prev_) {}
  void unlink(int32_t i);
  void push_tail(int32_t i);
  int32_t head() const { return head_; }
  int32_t tail() const { return tail_; }
  int32_t size() const { return int32_t(prev_.size()); }
  void grow(int32_t n) {
    prev_.resize(static_cast<size_t>(n), kNil);
    next_.resize(static_cast<size_t>(n), kNil);
  }

 private:
  std::vector<int32_t> prev_;
  std::vector<int32_t> next_;
  int32_t head_ = kNil;
  int32_t tail_ = kNil;
};

// A request's blocks in one pool, by position in its sequence. A block another prompt may share is
// explicit: an id with a reference count and, once registered, a hash in the prefix-cache index.
// The others are private (prompt blocks no other prompt has, the partial last prompt block,
// generated tokens): of those only their number is kept, and which of them hold a registered
// prompt block. Positions [0, ids.size()) are explicit, [ids.size(), num_blocks) private; in a
// pool with prefix caching a position is explicit when it is below `shareable` or its block came
// from the prefix cache.
struct BlockTable {
  int32_t num_blocks = 0;
  // Leading prompt blocks other prompts may have too (set once per request; the prompt blocks
  // after them are the request's own: only the request itself can find them again, after a
  // preemption).
  int32_t shareable = INT32_MAX;
  std::vector<int32_t> ids;
  std::vector<uint64_t> registered;  // bit p: private position p holds its registered prompt block
};

// The KV blocks of one rank. The free queue (LRU: allocations take its head, releases append to its
// tail) is a list of segments: one explicit block that holds a cached prompt block, or a run of
// interchangeable blocks (never used, private or unregistered), counted, and marked when they hold
// registered private blocks (taking one of those counts an eviction). With prompts that share
// nothing, or without prefix caching, the queue is a few runs and the index stays empty however
// many blocks the pool has.
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

  // Grows `table` to hold `num_tokens` tokens. When `table` is empty and `cached_blocks` > 0, the
  // first `cached_blocks` come from the prefix cache (they must have been counted by count_cached
  // just before). Returns false, changing nothing, when there is not enough free space.
  bool allocate(BlockTable& table, int32_t num_tokens, std::span<const uint64_t> hashes, int32_t cached_blocks) {
    // Most calls (a decode step's next token) find room in the blocks the request holds.
    const bool take_cached = table.num_blocks == 0 && cached_blocks > 0;
    if (!take_cached && int64_t{num_tokens} <= int64_t{table.num_blocks} * block_size_) return true;
    return allocate_more(table, num_tokens, hashes, cached_blocks);
  }
  // Releases a request's blocks (last block first, so its tail is evicted first); `hashes` are its
  // prompt's. `may_return`: the request may look its prompt up again (a preemption), so its
  // registered private blocks stay findable: they become explicit cached blocks. Otherwise they
  // are only counted as cached, for the evictions.
  void release(BlockTable& table, std::span<const uint64_t> hashes, bool may_return);
  // Registers position i of `table` under `hashes[i]` for i in [from, to) so later prompts can
  // reuse it (unless that content is cached already).
  void register_blocks(BlockTable& table, std::span<const uint64_t> hashes, int32_t from, int32_t to);

  int64_t evictions() const { return evictions_; }
  // Explicit blocks with an id now, free or not (what the pool's memory grows with).
  int32_t explicit_blocks() const { return int32_t(ref_count_.size() - free_ids_.size()); }

 private:
  struct Segment {
    int32_t block = -1;  // >= 0: one explicit cached block; -1: a run of `count` blocks
    int32_t count = 0;
    bool registered = false;  // a run of registered private blocks
  };

  bool allocate_more(BlockTable& table, int32_t num_tokens, std::span<const uint64_t> hashes, int32_t cached_blocks);
  void take_free(int32_t count);
  void push_run(int32_t count, bool registered);
  void push_cached(int32_t block);
  void push_segment(const Segment& segment);
  void remove_segment(int32_t segment);
  int32_t new_id();
  void free_id(int32_t block);

  int32_t num_blocks_;
  int32_t block_size_;
  bool prefix_caching_;
  int32_t num_free_ = 0;
  std::vector<Segment> segments_;
  std::vector<int32_t> free_segments_;
  IndexList queue_;  // segments of free blocks, least recently freed first
  // Per explicit block id.
  std::vector<int32_t> ref_count_;
  std::vector<uint64_t> hash_;
  std::vector<uint8_t> has_hash_;
  std::vector<int32_t> segment_;  // its queue segment while free and cached, else kNil
  std::vector<int32_t> free_ids_;
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
// Slots are taken as stores need them (the tier's memory follows what it holds, not its size).
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
  std::vector<uint64_t> hash_;       // per slot taken so far
  IndexList lru_;                    // stored slots, least recently used first
  std::vector<int32_t> free_slots_;  // taken slots freed by an eviction
  BlockHashIndex index_;
  int64_t evictions_ = 0;
};

}  // namespace ix::sim
