#include "sim/kv_cache.h"

#include <bit>
#include <cassert>

namespace ix::sim {

namespace {
// SplitMix64 finaliser: a cheap, well-mixed 64-bit combine.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

std::vector<uint64_t> prompt_block_hashes(std::span<const int32_t> tokens, int32_t block_size) {
  std::vector<uint64_t> hashes;
  if (block_size <= 0) return hashes;
  const size_t full = tokens.size() / size_t(block_size);
  hashes.reserve(full);
  uint64_t parent = 0x6a09e667f3bcc908ULL;
  for (size_t b = 0; b < full; ++b) {
    uint64_t h = mix(parent);
    for (int32_t i = 0; i < block_size; ++i) h = mix(h ^ uint32_t(tokens[b * block_size + i]));
    hashes.push_back(h);
    parent = h;
  }
  return hashes;
}

int32_t BlockHashIndex::find(uint64_t key) const {
  if (size_ == 0) return kAbsent;
  const size_t mask = keys_.size() - 1;
  for (size_t slot = home(key);; slot = (slot + 1) & mask) {
    if (values_[slot] == kAbsent) return kAbsent;
    if (keys_[slot] == key) return values_[slot];
  }
}

void BlockHashIndex::insert(uint64_t key, int32_t value) {
  assert(value != kAbsent && find(key) == kAbsent);
  if (2 * (size_ + 1) > keys_.size()) grow();
  const size_t mask = keys_.size() - 1;
  size_t slot = home(key);
  while (values_[slot] != kAbsent) slot = (slot + 1) & mask;
  keys_[slot] = key;
  values_[slot] = value;
  ++size_;
}

void BlockHashIndex::erase(uint64_t key, int32_t value) {
  if (size_ == 0) return;
  const size_t mask = keys_.size() - 1;
  size_t hole = home(key);
  while (true) {
    if (values_[hole] == kAbsent) return;
    if (keys_[hole] == key) break;
    hole = (hole + 1) & mask;
  }
  if (values_[hole] != value) return;
  // Backward shift: move later entries of the probe run into the hole while their home slot
  // does not lie cyclically in (hole, slot], so every entry stays reachable from its home.
  for (size_t slot = (hole + 1) & mask; values_[slot] != kAbsent; slot = (slot + 1) & mask) {
    const size_t h = home(keys_[slot]);
    const bool reachable_without_move = hole < slot ? (hole < h && h <= slot) : (hole < h || h <= slot);
    if (reachable_without_move) continue;
    keys_[hole] = keys_[slot];
    values_[hole] = values_[slot];
    hole = slot;
  }
  values_[hole] = kAbsent;
  --size_;
}

void BlockHashIndex::grow() {
  std::vector<uint64_t> old_keys = std::move(keys_);
  std::vector<int32_t> old_values = std::move(values_);
  const size_t capacity = old_keys.empty() ? 64 : 2 * old_keys.size();
  keys_.assign(capacity, 0);
  values_.assign(capacity, kAbsent);
  shift_ = 64 - std::countr_zero(capacity);
  size_ = 0;
  for (size_t i = 0; i < old_keys.size(); ++i)
    if (old_values[i] != kAbsent) insert(old_keys[i], old_values[i]);
}

BlockPool::BlockPool(int32_t num_blocks, int32_t block_size, bool prefix_caching)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      prefix_caching_(prefix_caching),
      ref_count_(num_blocks, 0),
      hash_(num_blocks, 0),
      has_hash_(num_blocks, 0),
      free_list_(num_blocks) {
  for (int32_t block = 0; block < num_blocks; ++block) push_tail(block);
}

void IndexList::unlink(int32_t i) {
  const int32_t p = prev_[i];
  const int32_t n = next_[i];
  if (p != kNil)
    next_[p] = n;
  else
    head_ = n;
  if (n != kNil)
    prev_[n] = p;
  else
    tail_ = p;
  prev_[i] = next_[i] = kNil;
}

void IndexList::push_tail(int32_t i) {
  prev_[i] = tail_;
  next_[i] = kNil;
  if (tail_ != kNil)
    next_[tail_] = i;
  else
    head_ = i;
  tail_ = i;
}

void BlockPool::unlink(int32_t block) {
  free_list_.unlink(block);
  --num_free_;
}

void BlockPool::push_tail(int32_t block) {
  free_list_.push_tail(block);
  ++num_free_;
}

int32_t BlockPool::pop_head() {
  const int32_t block = free_list_.head();
  assert(block != IndexList::kNil);
  unlink(block);
  if (has_hash_[block]) {
    // Eviction: the cached content is overwritten.
    cached_.erase(hash_[block], block);
    has_hash_[block] = 0;
    ++evictions_;
  }
  return block;
}

int32_t BlockPool::count_cached(std::span<const uint64_t> hashes) const {
  if (!prefix_caching_) return 0;
  int32_t count = 0;
  for (uint64_t h : hashes) {
    if (cached_.find(h) == BlockHashIndex::kAbsent) break;
    ++count;
  }
  return count;
}

bool BlockPool::allocate_more(std::vector<int32_t>& blocks, int32_t num_tokens, std::span<const uint64_t> hashes,
                              int32_t cached_blocks) {
  const int32_t needed = (num_tokens + block_size_ - 1) / block_size_;
  const bool take_cached = blocks.empty() && cached_blocks > 0;
  const int32_t reuse = take_cached ? cached_blocks : 0;
  const int32_t have = int32_t(blocks.size()) + reuse;
  const int32_t fresh = std::max(0, needed - have);
  // Cached blocks nobody holds sit in the free queue: touching them uses free capacity too.
  int32_t evictable_hits = 0;
  if (take_cached)
    for (int32_t i = 0; i < reuse; ++i)
      if (ref_count_[cached_.find(hashes[i])] == 0) ++evictable_hits;
  if (fresh + evictable_hits > num_free_) return false;
  if (take_cached) {
    for (int32_t i = 0; i < reuse; ++i) {
      const int32_t block = cached_.find(hashes[i]);
      assert(block != BlockHashIndex::kAbsent);
      if (ref_count_[block]++ == 0) unlink(block);
      blocks.push_back(block);
    }
  }
  for (int32_t i = 0; i < fresh; ++i) {
    const int32_t block = pop_head();
    ref_count_[block] = 1;
    blocks.push_back(block);
  }
  return true;
}

void BlockPool::release(std::vector<int32_t>& blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    const int32_t block = *it;
    assert(ref_count_[block] > 0);
    if (--ref_count_[block] == 0) push_tail(block);
  }
  blocks.clear();
}

void BlockPool::register_blocks(std::span<const int32_t> blocks, std::span<const uint64_t> hashes, int32_t from,
                                int32_t to) {
  if (!prefix_caching_) return;
  for (int32_t i = from; i < to; ++i) {
    const int32_t block = blocks[i];
    if (has_hash_[block]) continue;
    if (cached_.find(hashes[i]) != BlockHashIndex::kAbsent) continue;  // same content already cached elsewhere
    hash_[block] = hashes[i];
    has_hash_[block] = 1;
    cached_.insert(hashes[i], block);
  }
}

HostBlockPool::HostBlockPool(int32_t num_blocks)
    : num_blocks_(std::max(0, num_blocks)), hash_(num_blocks_, 0), lru_(num_blocks_) {
  free_slots_.reserve(num_blocks_);
  for (int32_t slot = num_blocks_ - 1; slot >= 0; --slot) free_slots_.push_back(slot);
}

int32_t HostBlockPool::count_cached(std::span<const uint64_t> hashes) const {
  int32_t count = 0;
  for (uint64_t h : hashes) {
    if (index_.find(h) == BlockHashIndex::kAbsent) break;
    ++count;
  }
  return count;
}

void HostBlockPool::touch(std::span<const uint64_t> hashes) {
  for (auto it = hashes.rbegin(); it != hashes.rend(); ++it) {
    const int32_t slot = index_.find(*it);
    if (slot == BlockHashIndex::kAbsent) continue;
    lru_.unlink(slot);
    lru_.push_tail(slot);
  }
}

int32_t HostBlockPool::store(std::span<const uint64_t> hashes) {
  int64_t missing = 0;
  for (uint64_t h : hashes) missing += index_.find(h) == BlockHashIndex::kAbsent ? 1 : 0;
  if (missing > num_blocks_) return 0;
  int32_t stored = 0;
  for (uint64_t h : hashes) {
    if (index_.find(h) != BlockHashIndex::kAbsent) continue;
    if (free_slots_.empty()) {
      const int32_t victim = lru_.head();
      lru_.unlink(victim);
      index_.erase(hash_[victim], victim);
      free_slots_.push_back(victim);
      ++evictions_;
    }
    const int32_t slot = free_slots_.back();
    free_slots_.pop_back();
    hash_[slot] = h;
    index_.insert(h, slot);
    lru_.push_tail(slot);
    ++stored;
  }
  touch(hashes);
  return stored;
}

}  // namespace ix::sim
