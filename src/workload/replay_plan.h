// What an agentic replay sends and in which order it may go (SPEC §6): a session tree flattened
// into streams (the root conversation and one per subagent) and turns with their dependencies,
// and the chat history of each turn rebuilt from its hash ids.
//
// Dependencies, as aiperf's agentic replay orders a tree:
//   - a turn follows the previous turn of its stream, `delay_s` after that turn completed (the
//     recorded end-to-start gap: t_k - t_{k-1} - api_time_{k-1}, at least 0);
//   - a subagent entry spawns a child stream when the parent turn before it completes (its first
//     turn `delay_s` after that turn's recorded end); a subagent with no parent turn before it is
//     dropped (counted in TreePlan::dropped_subagents);
//   - the parent turn after one or more subagent entries (a fan-out) waits for every child
//     stream to finish (join); children with no parent turn after them run in the background.
//
// History (recorded-assistant replay): turn 0 of a stream is one user message of its hash blocks
// plus a tail of `in - blocks * block_size` tokens. Turn k keeps the messages of turn k-1 up to
// the longest common prefix of the two turns' hash ids (cut inside a message when the prefix ends
// there), adds an assistant message of min(ceil(out_{k-1} / block_size), new blocks) of turn k's
// blocks after the prefix, and a user message of the rest plus the tail. Each hash block holds
// block_size tokens, except a turn's last when its ids cover more than `in` tokens (Mooncake's
// final block): that one is cut to `in`, and is whole again in a later turn that goes past it.
// Every piece of text is a pure function of a key (tok::PromptSynth::block), so the same history
// is byte-identical each time it is sent and equal prefixes hit the server's prefix cache.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "workload/trace.h"

namespace ix::workload {

struct PlannedTurn {
  const TraceTurn* turn = nullptr;  // into the SessionTree the plan was made from
  int32_t stream = 0;
  int32_t index_in_stream = 0;
  double delay_s = 0.0;         // after the predecessor (previous turn, or the spawning turn) completed
  int32_t prev = -1;            // previous turn of the same stream
  int32_t spawner = -1;         // first turn of a child stream: the parent turn that spawns it
  std::vector<int32_t> joins;   // last turns of the child streams this turn waits for
  std::vector<int32_t> spawns;  // first turns of the child streams released when this completes
  // Every turn with this one among its predecessors: the next turn of the stream, the spawned
  // first turns (both `delay_s` after this completes) and the turns joining this stream.
  std::vector<int32_t> followers;
  // How many predecessors the turn has (previous turn or spawner, and joins).
  int32_t predecessor_count() const {
    return (prev >= 0 ? 1 : 0) + (spawner >= 0 ? 1 : 0) + static_cast<int32_t>(joins.size());
  }
};

struct PlannedStream {
  std::string suffix;  // "" for the root, "::sa:<agent id>" (nested: "::sa:a::sa:b") for subagents
  int depth = 0;
  int32_t first = -1;          // first turn
  int32_t last = -1;           // last turn
  std::vector<int32_t> turns;  // in order
};

struct TreePlan {
  const SessionTree* tree = nullptr;
  std::vector<PlannedStream> streams;  // [0] is the root
  std::vector<PlannedTurn> turns;      // in recorded order within each stream
  int64_t dropped_subagents = 0;
  double t_min = 0.0;  // earliest and latest recorded turn start
  double t_max = 0.0;
  // Turns whose predecessors are all done, given which turns are done (`done` by turn index).
  std::vector<int32_t> ready(const std::vector<char>& done) const;
};

TreePlan plan_tree(const SessionTree& tree);

// One message of a turn's history: a role and the pieces of its text, each a block of
// `tokens` tokens made from `key`.
struct HistoryPiece {
  uint64_t key = 0;
  int64_t tokens = 0;
  bool hash_block = true;  // a hash id's block (false: a turn's synthetic tail)
};
struct HistoryMessage {
  enum class Role { kSystem, kUser, kAssistant };
  Role role = Role::kUser;
  int64_t turn = 0;  // the stream's turn that added it (an assistant message: the reply to turn - 1)
  std::vector<HistoryPiece> pieces;
};

// The chat history of one stream, advanced turn by turn.
class StreamHistory {
 public:
  // `scope` makes hash ids local to a tree (mixed into every block key); 0 for global ids
  // (Mooncake). `tail_key` names this stream's tails (unique per stream and tree play).
  StreamHistory(int64_t block_size, uint64_t scope, uint64_t tail_key)
      : block_size_(block_size), scope_(scope), tail_key_(tail_key) {}
  // The messages for `turn` (after the turns already advanced); then it becomes the previous one.
  const std::vector<HistoryMessage>& advance(const TraceTurn& turn);
  const std::vector<HistoryMessage>& messages() const { return messages_; }
  int64_t tokens() const;

 private:
  void truncate_to_blocks(size_t blocks);
  HistoryPiece hash_piece(int64_t hash_id) const;

  int64_t block_size_;
  uint64_t scope_;
  uint64_t tail_key_;
  std::vector<HistoryMessage> messages_;
  std::vector<int64_t> prev_hash_ids_;
  int64_t prev_out_ = 0;
  int64_t turns_ = 0;
};

// Length of the longest common prefix of two hash-id lists.
size_t common_prefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// "[rid:<12 hex>]\n\n": the marker that keeps one tree play's prefixes apart from another's.
std::string cache_bust_marker(uint64_t seed, uint64_t run_nonce, int64_t session_num, int64_t lane);

// Blocks already seen (in one tree play, or across a Mooncake file): the theoretical prefix hit
// of a request is its leading hash ids already seen. One thread.
class PrefixSeen {
 public:
  // Counts the leading ids of `hash_ids` already seen, then marks them all seen.
  int64_t hit_and_add(const std::vector<int64_t>& hash_ids);

 private:
  std::unordered_set<int64_t> seen_;
};

}  // namespace ix::workload
