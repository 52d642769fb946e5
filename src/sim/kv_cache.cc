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

namespace {

bool is_registered(const BlockTable& table, int32_t position) {
  const size_t word = size_t(position) / 64;
  return word < table.registered.size() && (table.registered[word] >> (position % 64) & 1) != 0;
}

void set_registered(BlockTable& table, int32_t position) {
  const size_t word = size_t(position) / 64;
  if (word >= table.registered.size()) table.registered.resize(word + 1, 0);
  table.registered[word] |= uint64_t{1} << (position % 64);
}

// The first position of the run of positions in [floor, end) that are registered exactly when
// end - 1 is (positions past the bit words are not).
int32_t run_begin(const BlockTable& table, int32_t end, int32_t floor) {
  const bool value = is_registered(table, end - 1);
  const auto& words = table.registered;
  int64_t p = end;  // the run is [p, end)
  if (!value) p = std::min<int64_t>(p, int64_t(words.size()) * 64);
  while (p > floor) {
    const size_t word = size_t(p - 1) / 64;
    const int64_t offset = p - int64_t(word) * 64;  // positions of the word below p: [0, offset)
    uint64_t other = value ? ~words[word] : words[word];
    if (offset < 64) other &= (uint64_t{1} << offset) - 1;
    if (other != 0) return int32_t(std::max<int64_t>(floor, int64_t(word) * 64 + 64 - std::countl_zero(other)));
    p = int64_t(word) * 64;
  }
  return floor;
}

}  // namespace

BlockPool::BlockPool(int32_t num_blocks, int32_t block_size, bool prefix_caching)
    : num_blocks_(num_blocks), block_size_(block_size), prefix_caching_(prefix_caching) {
  push_run(num_blocks, false);
}

void BlockPool::push_segment(const Segment& segment) {
  int32_t id = 0;
  if (!free_segments_.empty()) {
    id = free_segments_.back();
    free_segments_.pop_back();
    segments_[id] = segment;
  } else {
    id = int32_t(segments_.size());
    segments_.push_back(segment);
    queue_.grow(id + 1);
  }
  queue_.push_tail(id);
  if (segment.block >= 0) segment_[segment.block] = id;
  num_free_ += segment.count;
}

void BlockPool::remove_segment(int32_t segment) {
  queue_.unlink(segment);
  free_segments_.push_back(segment);
}

// Interchangeable blocks join the run at the tail when it is of their kind.
void BlockPool::push_run(int32_t count, bool registered) {
  if (count <= 0) return;
  const int32_t tail = queue_.tail();
  if (tail != IndexList::kNil && segments_[tail].block < 0 && segments_[tail].registered == registered) {
    segments_[tail].count += count;
    num_free_ += count;
    return;
  }
  push_segment(Segment{-1, count, registered});
}

void BlockPool::push_cached(int32_t block) {
  push_segment(Segment{block, 1, false});
}

int32_t BlockPool::new_id() {
  if (!free_ids_.empty()) {
    const int32_t block = free_ids_.back();
    free_ids_.pop_back();
    return block;
  }
  ref_count_.push_back(0);
  hash_.push_back(0);
  has_hash_.push_back(0);
  segment_.push_back(IndexList::kNil);
  return int32_t(ref_count_.size()) - 1;
}

void BlockPool::free_id(int32_t block) {
  ref_count_[block] = 0;
  has_hash_[block] = 0;
  segment_[block] = IndexList::kNil;
  free_ids_.push_back(block);
}

// Takes `count` blocks from the head of the free queue; the cached content they held is evicted.
void BlockPool::take_free(int32_t count) {
  num_free_ -= count;
  while (count > 0) {
    const int32_t head = queue_.head();
    assert(head != IndexList::kNil);
    Segment& segment = segments_[head];
    const int32_t taken = std::min(count, segment.count);
    if (segment.block >= 0) {
      cached_.erase(hash_[segment.block], segment.block);
      free_id(segment.block);
      ++evictions_;
    } else if (segment.registered) {
      evictions_ += taken;
    }
    segment.count -= taken;
    count -= taken;
    if (segment.count == 0) remove_segment(head);
  }
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

bool BlockPool::allocate_more(BlockTable& table, int32_t num_tokens, std::span<const uint64_t> hashes,
                              int32_t cached_blocks) {
  const int32_t needed = (num_tokens + block_size_ - 1) / block_size_;
  const bool take_cached = table.num_blocks == 0 && cached_blocks > 0;
  const int32_t reuse = take_cached ? cached_blocks : 0;
  const int32_t fresh = std::max(0, needed - table.num_blocks - reuse);
  // Cached blocks nobody holds sit in the free queue: touching them uses free capacity too.
  int32_t evictable_hits = 0;
  for (int32_t i = 0; i < reuse; ++i)
    if (ref_count_[cached_.find(hashes[i])] == 0) ++evictable_hits;
  if (fresh + evictable_hits > num_free_) return false;
  for (int32_t i = 0; i < reuse; ++i) {
    const int32_t block = cached_.find(hashes[i]);
    assert(block != BlockHashIndex::kAbsent);
    if (ref_count_[block]++ == 0) {
      remove_segment(segment_[block]);
      segment_[block] = IndexList::kNil;
      --num_free_;
    }
    table.ids.push_back(block);
  }
  table.num_blocks += reuse;
  take_free(fresh);
  // Fresh blocks are explicit while the table has only explicit ones and other prompts may share them.
  int32_t explicit_fresh = 0;
  if (prefix_caching_ && int32_t(table.ids.size()) == table.num_blocks)
    explicit_fresh = std::clamp(table.shareable - table.num_blocks, 0, fresh);
  for (int32_t i = 0; i < explicit_fresh; ++i) {
    const int32_t block = new_id();
    ref_count_[block] = 1;
    table.ids.push_back(block);
  }
  table.num_blocks += fresh;
  return true;
}

void BlockPool::release(BlockTable& table, std::span<const uint64_t> hashes, bool may_return) {
  const int32_t first_private = int32_t(table.ids.size());
  for (int32_t end = table.num_blocks; end > first_private;) {
    const int32_t begin = run_begin(table, end, first_private);
    const bool registered = is_registered(table, end - 1);
    if (registered && may_return) {
      for (int32_t position = end; position-- > begin;) {
        const int32_t block = new_id();
        hash_[block] = hashes[position];
        has_hash_[block] = 1;
        cached_.insert(hashes[position], block);
        push_cached(block);
      }
    } else {
      push_run(end - begin, registered);
    }
    end = begin;
  }
  for (auto it = table.ids.rbegin(); it != table.ids.rend(); ++it) {
    const int32_t block = *it;
    assert(ref_count_[block] > 0);
    if (--ref_count_[block] > 0) continue;
    if (has_hash_[block]) {
      push_cached(block);
    } else {
      free_id(block);
      push_run(1, false);
    }
  }
  table.ids.clear();
  table.registered.clear();
  table.num_blocks = 0;
}

void BlockPool::register_blocks(BlockTable& table, std::span<const uint64_t> hashes, int32_t from, int32_t to) {
  if (!prefix_caching_) return;
  for (int32_t i = from; i < to; ++i) {
    if (cached_.find(hashes[i]) != BlockHashIndex::kAbsent) continue;  // same content already cached elsewhere
    if (i >= int32_t(table.ids.size())) {
      set_registered(table, i);
      continue;
    }
    const int32_t block = table.ids[i];
    if (has_hash_[block]) continue;
    hash_[block] = hashes[i];
    has_hash_[block] = 1;
    cached_.insert(hashes[i], block);
  }
}

HostBlockPool::HostBlockPool(int32_t num_blocks) : num_blocks_(std::max(0, num_blocks)) {}

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
    if (free_slots_.empty() && int32_t(hash_.size()) < num_blocks_) {
      free_slots_.push_back(int32_t(hash_.size()));
      hash_.push_back(0);
      lru_.grow(int32_t(hash_.size()));
    }
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
