#include "workload/trace.h"

#include <gtest/gtest.h>

#include <string>

#include "support/subprocess.h"

namespace ix::workload {
namespace {

std::string fixture(const std::string& name) {
  return ix::testing::source_path("tests/data/traces/" + name);
}

Trace load(const std::string& name, TraceLoadOptions options = {}) {
  auto trace = load_trace(fixture(name), options);
  EXPECT_TRUE(trace.has_value()) << (trace ? "" : trace.error().message());
  return trace ? std::move(*trace) : Trace{};
}

std::string load_error(const std::string& name, TraceLoadOptions options = {}) {
  auto trace = load_trace(fixture(name), options);
  EXPECT_FALSE(trace.has_value()) << name << " loaded";
  return trace ? "" : trace.error().message();
}

Result<Trace> parse_jsonl(std::string_view text) {
  return parse_trace_text(text, "t.jsonl", {}, false);
}

TEST(TraceLoad, SessionTreeHoldsTurnsAndNestedSubagentsInOrder) {
  const Trace trace = load("fanout_session.json");
  EXPECT_EQ(trace.format, TraceFormat::kSession);
  ASSERT_EQ(trace.trees.size(), 1u);
  const SessionTree& tree = trace.trees[0];
  EXPECT_EQ(tree.id, "fanout-session");
  EXPECT_EQ(tree.block_size, 64);
  ASSERT_EQ(tree.requests.size(), 6u);
  const auto& first = std::get<TraceTurn>(tree.requests[0].value);
  EXPECT_EQ(first.type, TurnType::kN);
  EXPECT_EQ(first.in, 128);
  EXPECT_EQ(first.out, 32);
  EXPECT_EQ(first.hash_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(first.api_time, 1.25);
  EXPECT_FALSE(first.think_time);
  const auto& second = std::get<TraceTurn>(tree.requests[1].value);
  EXPECT_EQ(second.type, TurnType::kS);
  EXPECT_EQ(second.think_time, 4.5);
  const auto& a2 = std::get<TraceSubagent>(tree.requests[3].value);
  EXPECT_EQ(a2.agent_id, "a2");
  EXPECT_EQ(a2.t, 6.0);
  ASSERT_EQ(a2.requests.size(), 2u);
  const auto& nested = std::get<TraceSubagent>(a2.requests[1].value);
  EXPECT_EQ(nested.agent_id, "");  // optional
  ASSERT_EQ(nested.requests.size(), 1u);
  EXPECT_EQ(std::get<TraceTurn>(nested.requests[0].value).hash_ids, (std::vector<int64_t>{30}));
}

TEST(TraceLoad, MooncakeRowIsOneTurnTreeAtItsTimestamp) {
  const Trace trace = load("mooncake_small.jsonl");
  EXPECT_EQ(trace.format, TraceFormat::kMooncake);
  ASSERT_EQ(trace.trees.size(), 4u);
  const SessionTree& third = trace.trees[2];
  EXPECT_EQ(third.id, "3");
  EXPECT_EQ(third.block_size, kMooncakeBlockSize);
  ASSERT_EQ(third.requests.size(), 1u);
  const auto& turn = std::get<TraceTurn>(third.requests[0].value);
  EXPECT_EQ(turn.t, 1.5);
  EXPECT_EQ(turn.in, 600);
  EXPECT_EQ(turn.out, 30);
  EXPECT_EQ(turn.hash_ids, (std::vector<int64_t>{0, 3}));
}

TEST(TraceLoad, DirectoryReadsItsJsonFilesInNameOrderLikeTheJsonl) {
  const Trace dir = load("session_dir");
  const Trace lines = load("two_sessions.jsonl");
  ASSERT_EQ(dir.trees.size(), 2u);
  ASSERT_EQ(lines.trees.size(), 2u);
  EXPECT_EQ(dir.trees[0].id, "a");
  EXPECT_EQ(dir.trees[1].id, "2");  // an integer id is kept as its digits
  EXPECT_EQ(lines.trees[1].id, "2");
  EXPECT_EQ(dir.trees[1].block_size, 32);
}

TEST(TraceLoad, FormatCanBeForcedAndBlockSizeOverridden) {
  // Read as session trees, Mooncake rows lack `id`.
  EXPECT_NE(load_error("mooncake_small.jsonl", {.format = TraceFormat::kSession, .block_size = std::nullopt})
                .find(":1: id: missing"),
            std::string::npos);
  const Trace trace = load("mooncake_small.jsonl", {.format = TraceFormat::kMooncake, .block_size = 64});
  EXPECT_EQ(trace.trees[0].block_size, 64);
  auto no_block_size = parse_jsonl(R"({"id": "x", "requests": []})");
  ASSERT_FALSE(no_block_size);
  EXPECT_NE(no_block_size.error().message().find("t.jsonl:1: block_size: missing"), std::string::npos);
  auto given = parse_trace_text(R"({"id": "x", "requests": []})", "t.jsonl", {.block_size = 16}, false);
  ASSERT_TRUE(given) << given.error().message();
  EXPECT_EQ(given->trees[0].block_size, 16);
}

TEST(TraceLoad, MalformedFixturesNameFileLineAndField) {
  EXPECT_NE(load_error("bad_json_line3.jsonl").find("bad_json_line3.jsonl:3:102: invalid JSON"), std::string::npos);
  EXPECT_NE(load_error("missing_field.json").find("missing_field.json: requests[1].out: missing"), std::string::npos);
  EXPECT_NE(load_error("negative_length.jsonl")
                .find("negative_length.jsonl:2: input_length: must be an integer >= 0, not -5"),
            std::string::npos);
}

TEST(TraceLoad, EveryRequiredFieldIsChecked) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"id": "x", "block_size": 64, "requests": [{"t": 0, "type": "q", "in": 1, "out": 1, "hash_ids": []}]})",
       R"(t.jsonl:1: requests[0].type: must be "n", "s" or "subagent", not "q")"},
      {R"({"id": "x", "block_size": 64, "requests": [{"t": -1, "type": "n", "in": 1, "out": 1, "hash_ids": []}]})",
       "t.jsonl:1: requests[0].t: must be a number >= 0, not -1"},
      {R"({"id": "x", "block_size": 64, "requests": [{"t": 0, "type": "n", "in": 1.5, "out": 1, "hash_ids": []}]})",
       "t.jsonl:1: requests[0].in: must be an integer >= 0, not 1.5"},
      {R"({"id": "x", "block_size": 64, "requests": [{"t": 0, "type": "n", "in": 1, "out": 1, "hash_ids": [1, -2]}]})",
       "t.jsonl:1: requests[0].hash_ids[1]: must be an integer >= 0, not -2"},
      {R"({"id": "x", "block_size": 64, "requests": [{"t": 0, "type": "subagent", "requests": [{"t": 0, "type": "n"}]}]})",
       "t.jsonl:1: requests[0].requests[0].in: missing"},
      {R"({"id": "x", "block_size": 0, "requests": []})", "t.jsonl:1: block_size: must be an integer > 0"},
      {R"({"id": "x", "block_size": 64, "requests": [{"t": 0, "type": "n", "in": 1, "out": 1, "hash_ids": [], "think_time": "2"}]})",
       R"(t.jsonl:1: requests[0].think_time: must be a number >= 0, not "2")"},
      {"\n{\"id\": \"x\", \"block_size\": 64, \"requests\": []}\n[1]", "t.jsonl:3: trace: must be a JSON object"},
      {"", "t.jsonl: the trace holds no sessions"},
  };
  for (const auto& [text, expected] : cases) {
    auto trace = parse_jsonl(text);
    ASSERT_FALSE(trace) << text;
    EXPECT_NE(trace.error().message().find(expected), std::string::npos) << trace.error().message();
  }
}

TEST(TraceStats, FanOutSessionExactNumbers) {
  const TraceStats stats = trace_stats(load("fanout_session.json"));
  EXPECT_EQ(stats.sessions, 1);
  EXPECT_EQ(stats.turns, 8);
  EXPECT_EQ(stats.subagents, 3);
  EXPECT_EQ(stats.max_subagent_depth, 2);
  EXPECT_EQ(stats.max_fan_out, 2);  // a1 and a2 between the same two parent turns
  EXPECT_EQ(stats.block_sizes, (std::vector<int64_t>{64}));
  // Leading blocks seen in the tree's one seen-set: 0+2 (parent), 1+1 (a1), 1+0 (a2, nested), 3+4.
  EXPECT_EQ(stats.hit_blocks, 12);
  EXPECT_EQ(stats.total_blocks, 20);
  EXPECT_DOUBLE_EQ(stats.prefix_hit(), 0.6);
  EXPECT_EQ(stats.isl.count, 8);
  EXPECT_DOUBLE_EQ(stats.isl.mean, 160.0);
  EXPECT_DOUBLE_EQ(stats.isl.p50, 128.0);
  EXPECT_NEAR(stats.isl.p90, 275.2, 1e-9);
  EXPECT_NEAR(stats.isl.p99, 315.52, 1e-9);
  EXPECT_DOUBLE_EQ(stats.isl.max, 320.0);
  EXPECT_DOUBLE_EQ(stats.osl.mean, 21.5);
  EXPECT_DOUBLE_EQ(stats.osl.p50, 12.0);
  EXPECT_DOUBLE_EQ(stats.osl.max, 64.0);
  // Gaps: top level 5, 1, 0, 14, 900 (the long idle gap); a1 2; a2 0.5.
  EXPECT_EQ(stats.gap_s.count, 7);
  EXPECT_DOUBLE_EQ(stats.gap_s.p50, 2.0);
  EXPECT_NEAR(stats.gap_s.p90, 368.4, 1e-9);
  EXPECT_DOUBLE_EQ(stats.gap_s.max, 900.0);
  EXPECT_EQ(stats.think_time_s.count, 4);
  EXPECT_DOUBLE_EQ(stats.think_time_s.mean, 227.0);
  EXPECT_DOUBLE_EQ(stats.think_time_s.p50, 3.25);
  EXPECT_DOUBLE_EQ(stats.think_time_s.max, 900.0);
}

TEST(TraceStats, SessionSeenSetIsPerTreeMooncakeSeenSetIsPerFile) {
  // Tree b repeats tree a's blocks 7, 8: no hit, as each tree starts with an empty seen-set.
  const TraceStats sessions = trace_stats(load("two_sessions.jsonl"));
  EXPECT_EQ(sessions.hit_blocks, 1);
  EXPECT_EQ(sessions.total_blocks, 5);
  EXPECT_EQ(sessions.block_sizes, (std::vector<int64_t>{32, 64}));
  // Mooncake rows share one seen-set: 0 + 2 + 1 + 0 of 8 blocks.
  const TraceStats rows = trace_stats(load("mooncake_small.jsonl"));
  EXPECT_EQ(rows.sessions, 4);
  EXPECT_EQ(rows.turns, 4);
  EXPECT_EQ(rows.hit_blocks, 3);
  EXPECT_EQ(rows.total_blocks, 8);
  EXPECT_DOUBLE_EQ(rows.isl.mean, 803.0);
  EXPECT_EQ(rows.gap_s.count, 3);  // timestamps 0, 0, 1.5, 4 s
  EXPECT_DOUBLE_EQ(rows.gap_s.p50, 1.5);
  EXPECT_DOUBLE_EQ(rows.gap_s.max, 2.5);
  EXPECT_EQ(rows.think_time_s.count, 0);
}

TEST(TraceStats, RealMooncakeFilesReproduceTheGreedySeenSetHit) {
  // 36.6 % and 64.0 %: the greedy seen-set hit of the public Mooncake traces.
  struct Expected {
    const char* relative;
    int64_t hit_blocks, total_blocks;
    double percent;
  };
  const Expected files[] = {
      {"data/mooncake/conversation_trace.jsonl", 105710, 288500, 36.6},
      {"data/mooncake/synthetic_trace.jsonl", 77953, 121877, 64.0},
  };
  for (const auto& [relative, hit_blocks, total_blocks, percent] : files) {
    const std::string path = ix::testing::shared_path(relative);
    if (path.empty()) GTEST_SKIP() << ix::testing::shared_missing_message(relative);
    auto trace = load_trace(path);
    ASSERT_TRUE(trace) << trace.error().message();
    const TraceStats stats = trace_stats(*trace);
    EXPECT_EQ(stats.hit_blocks, hit_blocks) << relative;
    EXPECT_EQ(stats.total_blocks, total_blocks) << relative;
    EXPECT_NEAR(100.0 * stats.prefix_hit(), percent, 0.05) << relative;
  }
}

// Older traces write a subagent's times relative to its start: a time before the subagent's own
// is moved onto the trace's clock, nested subagents against their (absolute) start.
TEST(TraceLoad, RelativeSubagentTimesBecomeAbsolute) {
  auto trace = parse_jsonl(
      R"({"id": "r", "block_size": 4, "requests": [{"t": 0, "type": "n", "in": 4, "out": 1, "hash_ids": [1]},)"
      R"({"t": 10, "type": "subagent", "requests": [{"t": 1, "type": "n", "in": 4, "out": 1, "hash_ids": [2]},)"
      R"({"t": 2, "type": "subagent", "requests": [{"t": 0.5, "type": "n", "in": 4, "out": 1, "hash_ids": [3]}]},)"
      R"({"t": 15, "type": "n", "in": 4, "out": 1, "hash_ids": [4]}]}]})");
  ASSERT_TRUE(trace) << trace.error().message();
  const auto& sub = std::get<TraceSubagent>(trace->trees[0].requests[1].value);
  EXPECT_DOUBLE_EQ(std::get<TraceTurn>(sub.requests[0].value).t, 11.0);  // relative: 10 + 1
  const auto& nested = std::get<TraceSubagent>(sub.requests[1].value);
  EXPECT_DOUBLE_EQ(nested.t, 12.0);                                         // 10 + 2
  EXPECT_DOUBLE_EQ(std::get<TraceTurn>(nested.requests[0].value).t, 12.5);  // 12 + 0.5
  EXPECT_DOUBLE_EQ(std::get<TraceTurn>(sub.requests[2].value).t, 15.0);     // absolute already
}

}  // namespace
}  // namespace ix::workload
