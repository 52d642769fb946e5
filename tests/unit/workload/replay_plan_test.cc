#include "workload/replay_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace ix::workload {
namespace {

using Role = HistoryMessage::Role;

Trace load_fanout() {
  auto trace = load_trace(ix::testing::source_path("tests/data/traces/fanout_session.json"));
  EXPECT_TRUE(trace.has_value()) << (trace ? "" : trace.error().message());
  return trace ? std::move(*trace) : Trace{};
}

Trace parse_session(std::string_view json) {
  auto trace = parse_trace_text(json, "t.json", {}, true);
  EXPECT_TRUE(trace.has_value()) << (trace ? "" : trace.error().message());
  return trace ? std::move(*trace) : Trace{};
}

// The turn of the plan whose recorded start is `t` in stream `stream` (unique in the fixtures).
int32_t turn_at(const TreePlan& plan, int32_t stream, double t) {
  for (size_t i = 0; i < plan.turns.size(); ++i)
    if (plan.turns[i].stream == stream && plan.turns[i].turn->t == t) return static_cast<int32_t>(i);
  ADD_FAILURE() << "no turn at t=" << t << " in stream " << stream;
  return -1;
}

std::vector<int32_t> sorted(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<char> done_set(const TreePlan& plan, std::initializer_list<int32_t> done) {
  std::vector<char> out(plan.turns.size(), 0);
  for (int32_t i : done) out[static_cast<size_t>(i)] = 1;
  return out;
}

// The fan-out fixture: root turns at t = 0, 5, 20, 920; after the turn at 5, subagent a1 (turns
// at 6 and 8) and subagent a2 (a turn at 6.5, then a nested subagent without an id whose only
// turn is at 7 and which has no a2 turn after it).
class FanoutPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    trace_ = load_fanout();
    ASSERT_EQ(trace_.trees.size(), 1u);
    plan_ = plan_tree(trace_.trees[0]);
    ASSERT_EQ(plan_.streams.size(), 4u);
    ASSERT_EQ(plan_.turns.size(), 8u);
    r0_ = turn_at(plan_, 0, 0);
    r5_ = turn_at(plan_, 0, 5);
    r20_ = turn_at(plan_, 0, 20);
    r920_ = turn_at(plan_, 0, 920);
    a1_6_ = turn_at(plan_, 1, 6);
    a1_8_ = turn_at(plan_, 1, 8);
    a2_ = turn_at(plan_, 2, 6.5);
    nested_ = turn_at(plan_, 3, 7);
  }
  Trace trace_;
  TreePlan plan_;
  int32_t r0_ = -1, r5_ = -1, r20_ = -1, r920_ = -1, a1_6_ = -1, a1_8_ = -1, a2_ = -1, nested_ = -1;
};

TEST_F(FanoutPlan, StreamsAreNamedByAgentIdNestedUnderTheirParent) {
  EXPECT_EQ(plan_.streams[0].suffix, "");
  EXPECT_EQ(plan_.streams[0].depth, 0);
  EXPECT_EQ(plan_.streams[1].suffix, "::sa:a1");
  EXPECT_EQ(plan_.streams[1].depth, 1);
  EXPECT_EQ(plan_.streams[2].suffix, "::sa:a2");
  EXPECT_EQ(plan_.streams[2].depth, 1);
  // A subagent without an agent_id is named by its stream number, under its parent's name.
  EXPECT_EQ(plan_.streams[3].suffix, "::sa:a2::sa:3");
  EXPECT_EQ(plan_.streams[3].depth, 2);
  EXPECT_EQ(plan_.streams[0].turns, (std::vector<int32_t>{r0_, r5_, r20_, r920_}));
  EXPECT_EQ(plan_.streams[1].turns, (std::vector<int32_t>{a1_6_, a1_8_}));
  EXPECT_EQ(plan_.streams[0].first, r0_);
  EXPECT_EQ(plan_.streams[0].last, r920_);
  EXPECT_EQ(plan_.streams[1].last, a1_8_);
  EXPECT_EQ(plan_.streams[2].first, a2_);
  EXPECT_EQ(plan_.streams[2].last, a2_);
  EXPECT_EQ(plan_.dropped_subagents, 0);
  EXPECT_EQ(plan_.t_min, 0.0);
  EXPECT_EQ(plan_.t_max, 920.0);
  for (size_t s = 0; s < plan_.streams.size(); ++s) {
    const auto& turns = plan_.streams[s].turns;
    for (size_t k = 0; k < turns.size(); ++k) {
      const PlannedTurn& t = plan_.turns[static_cast<size_t>(turns[k])];
      EXPECT_EQ(t.stream, static_cast<int32_t>(s));
      EXPECT_EQ(t.index_in_stream, static_cast<int32_t>(k));
      EXPECT_EQ(t.prev, k == 0 ? -1 : turns[k - 1]);
    }
  }
}

TEST_F(FanoutPlan, SpawnerJoinsAndFollowers) {
  // Both subagents are spawned by the root turn before them; the nested one by a2's turn.
  EXPECT_EQ(plan_.turns[static_cast<size_t>(a1_6_)].spawner, r5_);
  EXPECT_EQ(plan_.turns[static_cast<size_t>(a2_)].spawner, r5_);
  EXPECT_EQ(plan_.turns[static_cast<size_t>(nested_)].spawner, a2_);
  EXPECT_EQ(plan_.turns[static_cast<size_t>(a1_8_)].spawner, -1);  // not a stream's first turn
  EXPECT_EQ(sorted(plan_.turns[static_cast<size_t>(r5_)].spawns), sorted({a1_6_, a2_}));
  EXPECT_EQ(plan_.turns[static_cast<size_t>(a2_)].spawns, std::vector<int32_t>{nested_});
  // The root turn after the fan-out joins the last turn of each child; the nested subagent has
  // no a2 turn after it, so it runs in the background and nothing joins it.
  EXPECT_EQ(sorted(plan_.turns[static_cast<size_t>(r20_)].joins), sorted({a1_8_, a2_}));
  for (const PlannedTurn& t : plan_.turns) EXPECT_EQ(std::count(t.joins.begin(), t.joins.end(), nested_), 0);
  EXPECT_TRUE(plan_.turns[static_cast<size_t>(r920_)].joins.empty());
  EXPECT_EQ(plan_.turns[static_cast<size_t>(r20_)].predecessor_count(), 3);  // prev + 2 joins
  EXPECT_EQ(plan_.turns[static_cast<size_t>(a1_6_)].predecessor_count(), 1);
  EXPECT_EQ(plan_.turns[static_cast<size_t>(r0_)].predecessor_count(), 0);
  // Followers are the inverse of prev, spawner and joins.
  EXPECT_EQ(sorted(plan_.turns[static_cast<size_t>(r5_)].followers), sorted({a1_6_, a2_, r20_}));
  EXPECT_EQ(sorted(plan_.turns[static_cast<size_t>(a2_)].followers), sorted({nested_, r20_}));
  EXPECT_EQ(plan_.turns[static_cast<size_t>(a1_8_)].followers, std::vector<int32_t>{r20_});
  EXPECT_TRUE(plan_.turns[static_cast<size_t>(nested_)].followers.empty());
  EXPECT_TRUE(plan_.turns[static_cast<size_t>(r920_)].followers.empty());
  for (size_t i = 0; i < plan_.turns.size(); ++i) {
    int32_t inbound = 0;
    for (const PlannedTurn& t : plan_.turns)
      inbound += static_cast<int32_t>(std::count(t.followers.begin(), t.followers.end(), static_cast<int32_t>(i)));
    EXPECT_EQ(inbound, plan_.turns[i].predecessor_count()) << "turn " << i;
  }
}

TEST_F(FanoutPlan, DelaysAreEndToStartGapsWithTheRecordedApiTime) {
  const auto delay = [&](int32_t t) { return plan_.turns[static_cast<size_t>(t)].delay_s; };
  EXPECT_EQ(delay(r0_), 0.0);
  EXPECT_DOUBLE_EQ(delay(r5_), 5.0 - (0.0 + 1.25));  // the turn at 0 recorded api_time 1.25
  EXPECT_DOUBLE_EQ(delay(a1_6_), 6.0 - 5.0);         // from the spawning turn (no api_time)
  EXPECT_DOUBLE_EQ(delay(a1_8_), 8.0 - 6.0);
  EXPECT_DOUBLE_EQ(delay(a2_), 6.5 - 5.0);
  EXPECT_DOUBLE_EQ(delay(nested_), 7.0 - 6.5);
  EXPECT_DOUBLE_EQ(delay(r20_), 20.0 - 5.0);  // from its previous turn, not from the joins
  EXPECT_DOUBLE_EQ(delay(r920_), 900.0);
}

TEST_F(FanoutPlan, ReadyFollowsTheDoneSet) {
  EXPECT_EQ(plan_.ready(done_set(plan_, {})), std::vector<int32_t>{r0_});
  EXPECT_EQ(plan_.ready(done_set(plan_, {r0_})), std::vector<int32_t>{r5_});
  EXPECT_EQ(sorted(plan_.ready(done_set(plan_, {r0_, r5_}))), sorted({a1_6_, a2_}));
  // The join waits for both children's last turns.
  EXPECT_EQ(sorted(plan_.ready(done_set(plan_, {r0_, r5_, a1_6_, a2_}))), sorted({a1_8_, nested_}));
  // ... but not for the background child.
  EXPECT_EQ(sorted(plan_.ready(done_set(plan_, {r0_, r5_, a1_6_, a1_8_, a2_}))), sorted({nested_, r20_}));
  EXPECT_EQ(plan_.ready(done_set(plan_, {r0_, r5_, a1_6_, a1_8_, a2_, nested_, r20_})), std::vector<int32_t>{r920_});
  EXPECT_TRUE(plan_.ready(done_set(plan_, {r0_, r5_, a1_6_, a1_8_, a2_, nested_, r20_, r920_})).empty());
  // Done turns are never ready again, whatever their predecessors.
  EXPECT_EQ(plan_.ready(done_set(plan_, {r0_, r5_, a1_6_, a2_, a1_8_, nested_})), std::vector<int32_t>{r20_});
}

TEST(ReplayPlan, SubagentBeforeAnyTurnOfItsListIsDropped) {
  const Trace trace = parse_session(R"({"id": "d", "block_size": 16, "requests": [
    {"t": 0, "type": "subagent", "agent_id": "early", "requests": [{"t": 0, "type": "n", "in": 16, "out": 1, "hash_ids": [1]}]},
    {"t": 1, "type": "n", "in": 16, "out": 1, "hash_ids": [2]},
    {"t": 2, "type": "subagent", "agent_id": "kept", "requests": [
      {"t": 2, "type": "subagent", "requests": [{"t": 2, "type": "n", "in": 16, "out": 1, "hash_ids": [3]}]},
      {"t": 3, "type": "n", "in": 16, "out": 1, "hash_ids": [4]}]},
    {"t": 4, "type": "n", "in": 16, "out": 1, "hash_ids": [5]}]})");
  ASSERT_EQ(trace.trees.size(), 1u);
  const TreePlan plan = plan_tree(trace.trees[0]);
  // "early" has no parent turn before it; the first entry of "kept" is a subagent with no
  // turn of "kept" before it. Both go with their turns.
  EXPECT_EQ(plan.dropped_subagents, 2);
  ASSERT_EQ(plan.turns.size(), 3u);
  ASSERT_EQ(plan.streams.size(), 2u);
  EXPECT_EQ(plan.streams[1].suffix, "::sa:kept");
  EXPECT_EQ(plan.turns[0].turn->t, 1.0);
  EXPECT_EQ(plan.turns[1].spawner, 0);
  EXPECT_EQ(plan.turns[1].turn->t, 3.0);
  EXPECT_EQ(plan.turns[2].joins, std::vector<int32_t>{1});
  EXPECT_EQ(plan.t_min, 1.0);
  EXPECT_EQ(plan.t_max, 4.0);
}

TEST(ReplayPlan, EmptyTreeAndNegativeGapsClampToZero) {
  const Trace trace = parse_session(R"({"id": "g", "block_size": 16, "requests": [
    {"t": 0, "type": "n", "in": 16, "out": 1, "hash_ids": [1], "api_time": 5},
    {"t": 2, "type": "n", "in": 16, "out": 1, "hash_ids": [1]}]})");
  const TreePlan plan = plan_tree(trace.trees[0]);
  ASSERT_EQ(plan.turns.size(), 2u);
  EXPECT_EQ(plan.turns[1].delay_s, 0.0);  // started before the previous one's recorded end
  const TreePlan empty = plan_tree(SessionTree{.id = "e", .block_size = 16, .requests = {}});
  EXPECT_TRUE(empty.turns.empty());
  EXPECT_EQ(empty.t_min, 0.0);
  EXPECT_EQ(empty.t_max, 0.0);
  EXPECT_TRUE(empty.ready({}).empty());
}

// --- StreamHistory ---

constexpr int64_t kBs = 64;

TraceTurn turn(std::vector<int64_t> hash_ids, int64_t in, int64_t out) {
  return TraceTurn{.in = in, .out = out, .hash_ids = std::move(hash_ids)};
}

std::vector<HistoryPiece> hash_pieces(const std::vector<HistoryMessage>& messages) {
  std::vector<HistoryPiece> out;
  for (const auto& m : messages)
    for (const auto& p : m.pieces)
      if (p.hash_block) out.push_back(p);
  return out;
}

bool same_piece(const HistoryPiece& a, const HistoryPiece& b) {
  return a.key == b.key && a.tokens == b.tokens && a.hash_block == b.hash_block;
}

TEST(StreamHistory, FirstTurnIsOneUserMessageOfItsBlocksAndTail) {
  StreamHistory h(kBs, 0, 99);
  const auto& m = h.advance(turn({1, 2, 3}, 3 * kBs + 10, 5));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].role, Role::kUser);
  EXPECT_EQ(m[0].turn, 0);
  ASSERT_EQ(m[0].pieces.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(m[0].pieces[static_cast<size_t>(i)].hash_block);
    EXPECT_EQ(m[0].pieces[static_cast<size_t>(i)].tokens, kBs);
    EXPECT_EQ(m[0].pieces[static_cast<size_t>(i)].key, static_cast<uint64_t>(i + 1));  // global ids: the id itself
  }
  EXPECT_FALSE(m[0].pieces[3].hash_block);
  EXPECT_EQ(m[0].pieces[3].tokens, 10);
  EXPECT_EQ(h.tokens(), 3 * kBs + 10);

  StreamHistory exact(kBs, 0, 99);
  exact.advance(turn({1, 2}, 2 * kBs, 5));
  ASSERT_EQ(exact.messages().size(), 1u);
  EXPECT_EQ(exact.messages()[0].pieces.size(), 2u);  // no tail when the blocks cover the input
  EXPECT_EQ(exact.tokens(), 2 * kBs);
}

TEST(StreamHistory, LaterTurnKeepsTheCommonPrefixThenAssistantThenUser) {
  StreamHistory h(kBs, 0, 7);
  const std::vector<HistoryMessage> first = h.advance(turn({1, 2, 3}, 3 * kBs + 10, 70));
  // Prefix [1, 2, 3]; ceil(70 / 64) = 2 assistant blocks [4, 5]; then user [6] and a tail of 20.
  const auto& m = h.advance(turn({1, 2, 3, 4, 5, 6}, 6 * kBs + 20, 1));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].role, Role::kUser);
  EXPECT_EQ(m[0].pieces.size(), 3u);  // the previous tail is not part of the common prefix
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(same_piece(m[0].pieces[i], first[0].pieces[i]));
  EXPECT_EQ(m[1].role, Role::kAssistant);
  EXPECT_EQ(m[1].turn, 1);
  ASSERT_EQ(m[1].pieces.size(), 2u);
  EXPECT_EQ(m[1].pieces[0].key, 4u);
  EXPECT_EQ(m[1].pieces[1].key, 5u);
  EXPECT_EQ(m[2].role, Role::kUser);
  ASSERT_EQ(m[2].pieces.size(), 2u);
  EXPECT_EQ(m[2].pieces[0].key, 6u);
  EXPECT_FALSE(m[2].pieces[1].hash_block);
  EXPECT_EQ(m[2].pieces[1].tokens, 20);
  EXPECT_EQ(h.tokens(), 6 * kBs + 20);
  // The tails of two turns differ (they are keyed by the turn).
  EXPECT_NE(m[2].pieces[1].key, first[0].pieces[3].key);
}

TEST(StreamHistory, TruncatesInsideAMessageAtTheHashPrefix) {
  StreamHistory h(kBs, 0, 7);
  h.advance(turn({1, 2}, 2 * kBs, 64));
  h.advance(turn({1, 2, 3, 4}, 4 * kBs, 64));  // user [1, 2], assistant [3], user [4]
  ASSERT_EQ(h.messages().size(), 3u);
  // The next turn shares only [1]: the first user message is cut after its first block and
  // everything after it goes.
  const auto& m = h.advance(turn({1, 9, 10}, 3 * kBs + 1, 1));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].role, Role::kUser);
  ASSERT_EQ(m[0].pieces.size(), 1u);
  EXPECT_EQ(m[0].pieces[0].key, 1u);
  EXPECT_EQ(m[1].role, Role::kAssistant);  // ceil(64 / 64) = 1 block of the reply
  ASSERT_EQ(m[1].pieces.size(), 1u);
  EXPECT_EQ(m[1].pieces[0].key, 9u);
  EXPECT_EQ(m[2].role, Role::kUser);
  ASSERT_EQ(m[2].pieces.size(), 2u);
  EXPECT_EQ(m[2].pieces[0].key, 10u);
  EXPECT_EQ(m[2].pieces[1].tokens, 1);
  EXPECT_EQ(h.tokens(), 3 * kBs + 1);

  // No common prefix at all: the history starts over from the new blocks.
  const auto& fresh = h.advance(turn({50, 51}, 2 * kBs + 3, 1));
  EXPECT_EQ(hash_pieces(fresh).front().key, 50u);
  EXPECT_EQ(h.tokens(), 2 * kBs + 3);
}

TEST(StreamHistory, AssistantBlocksAreCappedByTheNewBlocks) {
  StreamHistory h(kBs, 0, 7);
  h.advance(turn({1}, kBs, 1000));  // ceil(1000 / 64) = 16 > 2 new blocks
  const auto& m = h.advance(turn({1, 2, 3}, 3 * kBs + 5, 1));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1].role, Role::kAssistant);
  EXPECT_EQ(m[1].pieces.size(), 2u);
  EXPECT_EQ(m[2].role, Role::kUser);  // only the tail is left for the user
  ASSERT_EQ(m[2].pieces.size(), 1u);
  EXPECT_FALSE(m[2].pieces[0].hash_block);
  EXPECT_EQ(h.tokens(), 3 * kBs + 5);

  // No output recorded: no assistant message; the new blocks join the user's message.
  StreamHistory silent(kBs, 0, 7);
  silent.advance(turn({1}, kBs, 0));
  const auto& s = silent.advance(turn({1, 2}, 2 * kBs + 1, 1));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].role, Role::kUser);
  EXPECT_EQ(s[0].pieces.size(), 3u);
}

TEST(StreamHistory, AlwaysEndsWithAUserMessage) {
  // Every new block goes to the assistant and no tail is left: a one-token user message closes
  // the request (the only case where the history holds one token more than `in`).
  StreamHistory h(kBs, 0, 7);
  h.advance(turn({1}, kBs, 200));
  const auto& m = h.advance(turn({1, 2, 3}, 3 * kBs, 1));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1].role, Role::kAssistant);
  EXPECT_EQ(m[2].role, Role::kUser);
  ASSERT_EQ(m[2].pieces.size(), 1u);
  EXPECT_FALSE(m[2].pieces[0].hash_block);
  EXPECT_EQ(m[2].pieces[0].tokens, 1);
  EXPECT_EQ(h.tokens(), 3 * kBs + 1);
}

TEST(StreamHistory, TokensEqualTheInputOverASequenceOfTurns) {
  // in >= blocks * block_size on every turn, with at least one user block or tail token after
  // the assistant's blocks: the history holds exactly `in` tokens.
  StreamHistory h(kBs, 0, 3);
  const TraceTurn turns[] = {turn({1, 2}, 2 * kBs + 30, 64), turn({1, 2, 3, 4}, 4 * kBs + 7, 100),
                             turn({1, 2, 3, 4, 5, 6, 7}, 7 * kBs + 63, 10), turn({1, 2, 8}, 3 * kBs + 1, 10),
                             turn({1, 2, 8, 9, 10, 11}, 6 * kBs + 2, 64)};
  for (const TraceTurn& t : turns) {
    const auto& m = h.advance(t);
    EXPECT_EQ(h.tokens(), t.in);
    EXPECT_EQ(m.back().role, Role::kUser);
    std::vector<HistoryPiece> blocks = hash_pieces(m);
    ASSERT_EQ(blocks.size(), t.hash_ids.size());
    for (size_t i = 0; i < blocks.size(); ++i) EXPECT_EQ(blocks[i].key, static_cast<uint64_t>(t.hash_ids[i]));
  }
}

TEST(StreamHistory, SharedPrefixPiecesAreIdenticalAcrossStreamsAndTurns) {
  // Two streams of one tree (same scope, different tails) share their leading blocks exactly.
  StreamHistory root(kBs, 1234, 1), child(kBs, 1234, 2);
  const std::vector<HistoryMessage> r = root.advance(turn({1, 2, 3}, 3 * kBs + 4, 1));
  const std::vector<HistoryMessage> c = child.advance(turn({1, 2, 9}, 3 * kBs + 4, 1));
  const auto rb = hash_pieces(r), cb = hash_pieces(c);
  EXPECT_TRUE(same_piece(rb[0], cb[0]));
  EXPECT_TRUE(same_piece(rb[1], cb[1]));
  EXPECT_FALSE(same_piece(rb[2], cb[2]));
  EXPECT_NE(r[0].pieces.back().key, c[0].pieces.back().key);  // tails are per stream
  // A scoped id is not the raw id, and another tree's scope gives other keys.
  EXPECT_NE(rb[0].key, 1u);
  StreamHistory other(kBs, 5678, 1);
  EXPECT_NE(hash_pieces(other.advance(turn({1}, kBs, 1)))[0].key, rb[0].key);
  // The next turn of the root sends the same pieces for the common prefix.
  const auto& next = root.advance(turn({1, 2, 3, 4}, 4 * kBs + 2, 1));
  const auto nb = hash_pieces(next);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(same_piece(nb[i], rb[i])) << i;
}

TEST(StreamHistory, MooncakeLastBlockIsCutToTheInput) {
  StreamHistory h(512, 0, 1);
  const auto& m = h.advance(turn({0, 1}, 1000, 10));
  ASSERT_EQ(m.size(), 1u);
  ASSERT_EQ(m[0].pieces.size(), 2u);
  EXPECT_EQ(m[0].pieces[0].tokens, 512);
  EXPECT_EQ(m[0].pieces[1].tokens, 1000 - 512);
  EXPECT_EQ(h.tokens(), 1000);
}

TEST(StreamHistory, ACutLastBlockIsWholeOnceALaterTurnGoesPastIt) {
  // Turn 0's hash ids cover more than its input: its last block is cut to 100 - 64 = 36 tokens.
  // Turn 1 goes on after that block, so the block is a whole one there, as every block before a
  // turn's last (the history holds `in` tokens again).
  StreamHistory h(kBs, 0, 1);
  h.advance(turn({1, 2}, 100, 0));
  EXPECT_EQ(h.messages()[0].pieces[1].tokens, 36);
  const auto& m = h.advance(turn({1, 2, 3}, 3 * kBs + 4, 0));
  const auto blocks = hash_pieces(m);
  ASSERT_EQ(blocks.size(), 3u);
  for (const auto& b : blocks) EXPECT_EQ(b.tokens, kBs);
  EXPECT_EQ(h.tokens(), 3 * kBs + 4);
  // A turn that ends inside a block the history holds whole cuts it again.
  h.advance(turn({1, 2}, 2 * kBs - 10, 0));
  EXPECT_EQ(hash_pieces(h.messages())[1].tokens, kBs - 10);
  EXPECT_EQ(h.tokens(), 2 * kBs - 10);
}

TEST(ReplayPlan, CommonPrefixLength) {
  EXPECT_EQ(common_prefix({}, {1}), 0u);
  EXPECT_EQ(common_prefix({1, 2, 3}, {1, 2, 4}), 2u);
  EXPECT_EQ(common_prefix({1, 2}, {1, 2, 3}), 2u);
  EXPECT_EQ(common_prefix({5}, {1}), 0u);
}

}  // namespace
}  // namespace ix::workload
