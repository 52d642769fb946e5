#include "workload/replay_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

namespace ix::workload {
namespace {

// splitmix64's finalizer: keys of blocks and tails from two numbers.
uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The recorded end of a turn: its start plus its duration when the trace records one.
double recorded_end(const TraceTurn& turn) {
  return turn.t + turn.api_time.value_or(0.0);
}

// Sizes every hash block of a turn's history by the turn's input: whole blocks, the last one cut
// to the turn's length when the hash ids cover more tokens than it has (Mooncake's final block).
// A block kept from an earlier turn, where it was the cut last one, is whole again once a later
// turn goes past it.
void size_hash_blocks(std::vector<HistoryMessage>& messages, int64_t in, int64_t block_size) {
  int64_t before = 0;  // tokens of the hash blocks before this one
  for (auto& message : messages) {
    for (auto& piece : message.pieces) {
      if (!piece.hash_block) continue;
      piece.tokens = std::clamp<int64_t>(in - before, 1, block_size);
      before += block_size;
    }
  }
}

class Planner {
 public:
  explicit Planner(TreePlan& plan) : plan_(plan) {}

  // Plans one list of entries as stream `stream`; `spawner` is the parent turn that releases
  // the stream's first turn (-1 for the root).
  void plan_list(const std::vector<TraceEntry>& entries, int32_t stream, int32_t spawner) {
    int32_t last = -1;
    std::vector<int32_t> unjoined;  // child streams spawned since the last turn
    for (const TraceEntry& entry : entries) {
      if (const auto* turn = std::get_if<TraceTurn>(&entry.value)) {
        last = add_turn(*turn, stream, last, spawner, unjoined);
        unjoined.clear();
      } else {
        const auto& sub = std::get<TraceSubagent>(entry.value);
        if (last < 0) {
          ++plan_.dropped_subagents;
          continue;
        }
        if (auto child = add_child(sub, stream, last)) unjoined.push_back(*child);
      }
    }
  }

 private:
  int32_t add_turn(const TraceTurn& turn, int32_t stream, int32_t last, int32_t spawner,
                   const std::vector<int32_t>& unjoined) {
    PlannedTurn planned{.turn = &turn, .stream = stream};
    const auto id = static_cast<int32_t>(plan_.turns.size());
    PlannedStream& s = plan_.streams[static_cast<size_t>(stream)];
    if (last >= 0) {
      const TraceTurn& before = *plan_.turns[static_cast<size_t>(last)].turn;
      planned.prev = last;
      planned.index_in_stream = plan_.turns[static_cast<size_t>(last)].index_in_stream + 1;
      planned.delay_s = std::max(0.0, turn.t - recorded_end(before));
    } else {
      s.first = id;
      if (spawner >= 0) {
        PlannedTurn& parent = plan_.turns[static_cast<size_t>(spawner)];
        parent.spawns.push_back(id);
        planned.spawner = spawner;
        planned.delay_s = std::max(0.0, turn.t - recorded_end(*parent.turn));
      }
    }
    for (int32_t child : unjoined) {
      const int32_t child_last = plan_.streams[static_cast<size_t>(child)].last;
      if (child_last >= 0) planned.joins.push_back(child_last);
    }
    s.last = id;
    s.turns.push_back(id);
    plan_.t_min = std::min(plan_.t_min, turn.t);
    plan_.t_max = std::max(plan_.t_max, turn.t);
    plan_.turns.push_back(std::move(planned));
    return id;
  }

  std::optional<int32_t> add_child(const TraceSubagent& sub, int32_t parent_stream, int32_t spawner) {
    const PlannedStream& parent = plan_.streams[static_cast<size_t>(parent_stream)];
    const auto child = static_cast<int32_t>(plan_.streams.size());
    const std::string name = sub.agent_id.empty() ? std::to_string(child) : sub.agent_id;
    plan_.streams.push_back({.suffix = parent.suffix + "::sa:" + name, .depth = parent.depth + 1});
    plan_list(sub.requests, child, spawner);
    if (plan_.streams[static_cast<size_t>(child)].first < 0) return std::nullopt;  // no turns
    return child;
  }

  TreePlan& plan_;
};

}  // namespace

TreePlan plan_tree(const SessionTree& tree) {
  TreePlan plan;
  plan.tree = &tree;
  plan.t_min = std::numeric_limits<double>::infinity();
  plan.t_max = -std::numeric_limits<double>::infinity();
  plan.streams.push_back({});
  Planner(plan).plan_list(tree.requests, 0, -1);
  if (plan.turns.empty()) plan.t_min = plan.t_max = 0.0;
  for (size_t i = 0; i < plan.turns.size(); ++i) {
    const PlannedTurn& turn = plan.turns[i];
    const auto id = static_cast<int32_t>(i);
    if (turn.prev >= 0) plan.turns[static_cast<size_t>(turn.prev)].followers.push_back(id);
    if (turn.spawner >= 0) plan.turns[static_cast<size_t>(turn.spawner)].followers.push_back(id);
    for (int32_t j : turn.joins) plan.turns[static_cast<size_t>(j)].followers.push_back(id);
  }
  return plan;
}

std::vector<int32_t> TreePlan::ready(const std::vector<char>& done) const {
  std::vector<int32_t> out;
  for (size_t i = 0; i < turns.size(); ++i) {
    if (done[i]) continue;
    const PlannedTurn& turn = turns[i];
    bool ok = true;
    if (turn.prev >= 0) ok = done[static_cast<size_t>(turn.prev)] != 0;
    if (ok && turn.spawner >= 0) ok = done[static_cast<size_t>(turn.spawner)] != 0;
    for (int32_t j : turn.joins) ok = ok && done[static_cast<size_t>(j)] != 0;
    if (ok) out.push_back(static_cast<int32_t>(i));
  }
  return out;
}

size_t common_prefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

HistoryPiece StreamHistory::hash_piece(int64_t hash_id) const {
  const auto id = static_cast<uint64_t>(hash_id);
  return {.key = scope_ ? mix(scope_, id) : id, .tokens = block_size_, .hash_block = true};
}

void StreamHistory::truncate_to_blocks(size_t blocks) {
  size_t kept = 0;
  for (size_t m = 0; m < messages_.size(); ++m) {
    auto& pieces = messages_[m].pieces;
    for (size_t p = 0; p < pieces.size(); ++p) {
      if (kept == blocks) {
        pieces.resize(p);
        messages_.resize(pieces.empty() ? m : m + 1);
        return;
      }
      if (pieces[p].hash_block) ++kept;
    }
  }
}

const std::vector<HistoryMessage>& StreamHistory::advance(const TraceTurn& turn) {
  const size_t n = turn.hash_ids.size();
  size_t next = 0;  // first block of this turn not yet in the history
  if (turns_ > 0) {
    next = common_prefix(prev_hash_ids_, turn.hash_ids);
    truncate_to_blocks(next);
  } else {
    messages_.clear();
  }
  const auto append = [&](HistoryMessage::Role role, HistoryPiece piece) {
    // An assistant message is one turn's reply (live mode sends that reply in its place): replies
    // of two turns stay two messages.
    const bool merge = !messages_.empty() && messages_.back().role == role &&
                       (role != HistoryMessage::Role::kAssistant || messages_.back().turn == turns_);
    if (!merge) messages_.push_back({.role = role, .turn = turns_});
    messages_.back().pieces.push_back(piece);
  };
  if (turns_ > 0) {
    const size_t replies = static_cast<size_t>((prev_out_ + block_size_ - 1) / block_size_);
    for (const size_t end = std::min(n, next + replies); next < end; ++next)
      append(HistoryMessage::Role::kAssistant, hash_piece(turn.hash_ids[next]));
  }
  // The user's part: the remaining blocks, then the tail.
  for (; next < n; ++next) append(HistoryMessage::Role::kUser, hash_piece(turn.hash_ids[next]));
  size_hash_blocks(messages_, turn.in, block_size_);
  const int64_t tail = turn.in - static_cast<int64_t>(n) * block_size_;
  const bool ends_with_user = !messages_.empty() && messages_.back().role == HistoryMessage::Role::kUser;
  if (tail > 0 || !ends_with_user) {
    append(HistoryMessage::Role::kUser, {.key = mix(tail_key_, static_cast<uint64_t>(turns_)),
                                         .tokens = std::max<int64_t>(tail, 1),
                                         .hash_block = false});
  }
  prev_hash_ids_ = turn.hash_ids;
  prev_out_ = turn.out;
  ++turns_;
  return messages_;
}

int64_t StreamHistory::tokens() const {
  int64_t total = 0;
  for (const auto& m : messages_)
    for (const auto& p : m.pieces) total += p.tokens;
  return total;
}

std::string cache_bust_marker(uint64_t seed, uint64_t run_nonce, int64_t session_num, int64_t lane) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL ^ run_nonce;
  for (uint64_t v : {static_cast<uint64_t>(session_num), static_cast<uint64_t>(lane)}) {
    z = (z ^ v) * 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 31;
  }
  return fmt::format("[rid:{:012x}]\n\n", z & 0xFFFFFFFFFFFFULL);
}

int64_t PrefixSeen::hit_and_add(const std::vector<int64_t>& hash_ids) {
  int64_t hit = 0;
  while (static_cast<size_t>(hit) < hash_ids.size() && seen_.contains(hash_ids[static_cast<size_t>(hit)])) ++hit;
  for (int64_t id : hash_ids) seen_.insert(id);
  return hit;
}

}  // namespace ix::workload
