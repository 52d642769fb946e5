#include "sim/engine_core.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace ix::sim {
namespace {

using testing::EventLog;
using testing::llama_on_h200;
using testing::make_core;
using testing::request_with_tokens;
using testing::tokens_from;

TEST(EngineCore, GeneratesExactlyTheRequestedTokensInIncreasingTime) {
  auto core = make_core(llama_on_h200());
  ASSERT_TRUE(core);
  EventLog log;
  auto id = core->submit(request_with_tokens(tokens_from(0, 500), 40));
  ASSERT_TRUE(id);
  core->run_until(kNever, log.sink());
  const auto& events = log.by_request.at(*id);
  ASSERT_EQ(events.size(), 40u);
  EXPECT_EQ(events.front().previous_ns, 0);
  for (size_t i = 1; i < events.size(); ++i) {
    EXPECT_GT(events[i].time_ns, events[i - 1].time_ns);
    EXPECT_EQ(events[i].previous_ns, events[i - 1].time_ns);
  }
  EXPECT_EQ(events.back().total_output_tokens, 40);
  EXPECT_EQ(events.back().finish, FinishReason::kLength);
  EXPECT_EQ(events.front().prompt_tokens, 500);
  auto metrics = core->metrics();
  EXPECT_EQ(metrics.request_success_total, 1);
  EXPECT_EQ(metrics.generation_tokens_total, 40);
  EXPECT_EQ(metrics.num_requests_running, 0);
  EXPECT_DOUBLE_EQ(metrics.kv_cache_usage_perc, 0.0);
}

TEST(EngineCore, NaturalStopBeforeMaxTokensIsReportedAsStop) {
  auto core = make_core(llama_on_h200());
  ASSERT_TRUE(core);
  EventLog log;
  auto request = request_with_tokens(tokens_from(0, 100), 50);
  request.output_tokens = 10;
  auto id = core->submit(request);
  ASSERT_TRUE(id);
  core->run_until(kNever, log.sink());
  EXPECT_EQ(log.total_tokens(*id), 10);
  EXPECT_EQ(log.by_request.at(*id).back().finish, FinishReason::kStop);
}

TEST(EngineCore, TokenBudgetChunksLongPrefills) {
  auto config = llama_on_h200();
  config.max_num_batched_tokens = 8192;
  auto big_budget = make_core(config);
  config.max_num_batched_tokens = 512;
  auto small_budget = make_core(config);
  ASSERT_TRUE(big_budget && small_budget);
  EventLog a, b;
  auto ia = big_budget->submit(request_with_tokens(tokens_from(0, 4000), 2));
  auto ib = small_budget->submit(request_with_tokens(tokens_from(0, 4000), 2));
  big_budget->run_until(kNever, a.sink());
  small_budget->run_until(kNever, b.sink());
  // 8 chunks of 512 pay the per-step overheads 8 times.
  EXPECT_GT(b.first_token_ns(*ib), a.first_token_ns(*ia));
}

TEST(EngineCore, MaxNumSeqsLimitsTheRunningBatch) {
  auto config = llama_on_h200();
  config.max_num_seqs = 2;
  auto core = make_core(config);
  ASSERT_TRUE(core);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(*core->submit(request_with_tokens(tokens_from(i * 1000, 64), 20)));
  int64_t max_running = 0;
  EventLog log;
  while (core->next_event_ns() != kNever) {
    core->run_until(core->next_event_ns(), log.sink());
    max_running = std::max(max_running, core->metrics().num_requests_running);
  }
  EXPECT_EQ(max_running, 2);
  for (auto id : ids) EXPECT_EQ(log.total_tokens(id), 20);
  // The last request waits for two to finish first.
  EXPECT_GT(log.first_token_ns(ids[4]), log.last_ns(ids[0]));
}

TEST(EngineCore, PreemptsTheNewestRequestWhenKvRunsOutAndRecomputes) {
  auto config = llama_on_h200();
  config.num_gpu_blocks_override = 40;  // 640 tokens: room for ~2 of the 4 requests at full length
  config.enable_prefix_caching = false;
  auto core = make_core(config);
  ASSERT_TRUE(core);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(*core->submit(request_with_tokens(tokens_from(i * 1000, 100), 200)));
  EventLog log;
  core->run_until(kNever, log.sink());
  EXPECT_GT(core->metrics().num_preemptions, 0);
  for (auto id : ids) {
    EXPECT_EQ(log.total_tokens(id), 200);
    int32_t sum = 0;
    for (const auto& event : log.by_request.at(id)) sum += event.new_tokens;
    EXPECT_EQ(sum, 200);  // recompute never re-emits tokens
  }
  EXPECT_EQ(core->metrics().num_requests_running, 0);
}

TEST(EngineCore, RejectsRequestsThatCanNeverFit) {
  auto config = llama_on_h200();
  config.num_gpu_blocks_override = 10;
  config.max_model_len = 4096;
  auto core = make_core(config);
  ASSERT_TRUE(core);
  auto too_long = core->submit(request_with_tokens(tokens_from(0, 4000), 200));
  ASSERT_FALSE(too_long);
  EXPECT_NE(too_long.error().message().find("max_model_len=4096"), std::string::npos);
  auto too_big = core->submit(request_with_tokens(tokens_from(0, 150), 100));
  ASSERT_FALSE(too_big);
  EXPECT_NE(too_big.error().message().find("KV blocks"), std::string::npos);
}

TEST(EngineCore, PrefixCacheHitSkipsComputeAndIsReported) {
  auto core = make_core(llama_on_h200());
  ASSERT_TRUE(core);
  EventLog log;
  const auto prompt = tokens_from(7, 2000);
  auto first = core->submit(request_with_tokens(prompt, 4));
  core->run_until(kNever, log.sink());
  const int64_t start = core->now_ns();
  auto second = core->submit(request_with_tokens(prompt, 4, 16, start));
  core->run_until(kNever, log.sink());
  EXPECT_EQ(log.by_request.at(*first).front().cached_prompt_tokens, 0);
  // 2000 tokens = 125 full blocks, but the last prompt token is always recomputed: 124 blocks hit.
  EXPECT_EQ(log.by_request.at(*second).front().cached_prompt_tokens, 124 * 16);
  const int64_t ttft_first = log.first_token_ns(*first);
  const int64_t ttft_second = log.first_token_ns(*second) - start;
  EXPECT_LT(ttft_second, ttft_first);
  auto metrics = core->metrics();
  EXPECT_EQ(metrics.prefix_cache_queries, 4000);
  EXPECT_EQ(metrics.prefix_cache_hits, 124 * 16);
}

TEST(EngineCore, SpeculativeDecodingEmitsAcceptanceLengthTokensPerStep) {
  auto config = llama_on_h200();
  config.spec_decoding = SpecDecoding::kMtp;
  config.num_spec_tokens = 3;
  config.acceptance_length = 2.5;
  auto core = make_core(config);
  ASSERT_TRUE(core);
  EventLog log;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(*core->submit(request_with_tokens(tokens_from(i * 5000, 200), 2000)));
  core->run_until(kNever, log.sink());
  int64_t events = 0, tokens = 0;
  for (auto id : ids) {
    EXPECT_EQ(log.total_tokens(id), 2000);
    const auto& list = log.by_request.at(id);
    // Skip the first (prefill) event and the last (capped by the remaining budget).
    for (size_t i = 1; i + 1 < list.size(); ++i) {
      ++events;
      tokens += list[i].new_tokens;
      EXPECT_GE(list[i].new_tokens, 1);
      EXPECT_LE(list[i].new_tokens, 4);
    }
  }
  EXPECT_NEAR(double(tokens) / events, 2.5, 0.08);
  auto metrics = core->metrics();
  EXPECT_GT(metrics.spec_decode_num_drafts, 0);
  EXPECT_NEAR(double(metrics.spec_decode_num_accepted_tokens) / metrics.spec_decode_num_drafts, 1.5, 0.08);
}

TEST(EngineCore, DisaggregatedPrefillShipsKvBeforeDecode) {
  auto config = llama_on_h200();
  config.disagg = true;
  config.prefill = WorkerTopology{1, 2, 1, false};
  config.decode = WorkerTopology{2, 2, 1, false};
  auto resolved = resolve_engine(config);
  ASSERT_TRUE(resolved);
  auto core = make_core(config);
  ASSERT_TRUE(core);
  EventLog log;
  auto id = core->submit(request_with_tokens(tokens_from(0, 3000), 10));
  core->run_until(kNever, log.sink());
  EXPECT_EQ(log.total_tokens(*id), 10);
  // The decode side's events follow the prefill side's first token.
  const auto& events = log.by_request.at(*id);
  for (size_t i = 1; i < events.size(); ++i) EXPECT_EQ(events[i].previous_ns, events[i - 1].time_ns);
  // Same request on one aggregated engine: the first token comes earlier (no transfer).
  config.disagg = false;
  auto aggregated = make_core(config);
  EventLog agg_log;
  auto agg_id = aggregated->submit(request_with_tokens(tokens_from(0, 3000), 10));
  aggregated->run_until(kNever, agg_log.sink());
  CostModel model(resolved->model, resolved->hardware, resolved->efficiency, "fp8", 0, config.prefill);
  const int64_t transfer_ns = int64_t(model.kv_transfer_seconds(3000, false) * 1e9);
  EXPECT_GE(log.first_token_ns(*id) - agg_log.first_token_ns(*agg_id), transfer_ns / 2);
}

// One prefill and one decode engine of Llama-70B TP2 whose decode side takes `decode_cap`
// requests per rank (0 = max_num_seqs), with two requests of `output` tokens submitted at t=0.
struct TwoOnCappedDecode {
  std::unique_ptr<EngineCore> core;
  uint64_t a = 0, b = 0;
  TwoOnCappedDecode(int32_t decode_cap, int32_t output) {
    auto config = llama_on_h200();
    config.disagg = true;
    config.prefill = WorkerTopology{1, 2, 1, false};
    config.decode = WorkerTopology{1, 2, 1, false, decode_cap};
    core = make_core(config);
    if (!core) return;
    a = core->submit(request_with_tokens(tokens_from(0, 512), output)).value_or(0);
    b = core->submit(request_with_tokens(tokens_from(10000, 512), output)).value_or(0);
  }
};

TEST(EngineCore, FullDecodeSideHoldsTheFirstTokenUntilASlotFrees) {
  // TRT-LLM disaggregated recipes cap the decode batch (max_batch_size per rank) and InferenceX
  // runs them above it (e.g. 3 decode workers x batch 1 at conc 6): the measured TTFT is then a
  // whole generation, because the client sees the first token only once a decode slot frees.
  TwoOnCappedDecode capped(1, 50);
  ASSERT_TRUE(capped.core && capped.a && capped.b);
  EventLog log;
  capped.core->run_until(kNever, log.sink());
  EXPECT_EQ(log.total_tokens(capped.a), 50);
  EXPECT_EQ(log.total_tokens(capped.b), 50);
  const uint64_t first = log.first_token_ns(capped.a) <= log.first_token_ns(capped.b) ? capped.a : capped.b;
  const uint64_t second = first == capped.a ? capped.b : capped.a;
  // The second request's first token comes no earlier than the first request's last one.
  EXPECT_GE(log.first_token_ns(second), log.last_ns(first));
  EXPECT_EQ(log.by_request.at(second).front().total_output_tokens, 1);

  // Without the cap (the engine's max_num_seqs) both first tokens come right after prefill.
  TwoOnCappedDecode uncapped(0, 50);
  ASSERT_TRUE(uncapped.core);
  EventLog free_log;
  uncapped.core->run_until(kNever, free_log.sink());
  EXPECT_LT(std::max(free_log.first_token_ns(uncapped.a), free_log.first_token_ns(uncapped.b)),
            std::min(free_log.last_ns(uncapped.a), free_log.last_ns(uncapped.b)));
}

TEST(EngineCore, DecodeSideWithoutKvRoomHoldsTheFirstTokenUntilItFits) {
  // SGLang's decode side preallocates a transferred request's KV before taking it: with a pool of
  // 1,000 tokens per rank (max-total-tokens, 62 blocks of 16) one 512-token prompt grows to 812
  // tokens and the second prompt (33 blocks) does not fit beside it, so the second request (and
  // its first token) waits until the first finishes.
  auto run = [](int64_t kv_tokens, int32_t reserved) {
    auto config = llama_on_h200();
    config.disagg = true;
    config.prefill = WorkerTopology{1, 2, 1, false};
    config.decode = WorkerTopology{1, 2, 1, false};
    config.decode.max_kv_tokens = kv_tokens;
    config.decode.reserved_decode_tokens = reserved;
    auto core = make_core(config);
    EventLog log;
    uint64_t a = 0, b = 0;
    if (core) {
      a = core->submit(request_with_tokens(tokens_from(0, 512), 300)).value_or(0);
      b = core->submit(request_with_tokens(tokens_from(10000, 512), 300)).value_or(0);
      core->run_until(kNever, log.sink());
    }
    return std::tuple{log, a, b};
  };
  auto [tight, a, b] = run(1000, 0);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(tight.total_tokens(a), 300);
  EXPECT_EQ(tight.total_tokens(b), 300);
  const uint64_t first = tight.first_token_ns(a) <= tight.first_token_ns(b) ? a : b;
  const uint64_t second = first == a ? b : a;
  EXPECT_GE(tight.first_token_ns(second), tight.last_ns(first));

  // Room for both requests (2 x 812 tokens), but not with 400 tokens reserved for each.
  auto [roomy, a2, b2] = run(1700, 0);
  EXPECT_LT(std::max(roomy.first_token_ns(a2), roomy.first_token_ns(b2)),
            std::min(roomy.last_ns(a2), roomy.last_ns(b2)));
  auto [reserved, a3, b3] = run(1700, 400);
  const uint64_t first3 = reserved.first_token_ns(a3) <= reserved.first_token_ns(b3) ? a3 : b3;
  const uint64_t second3 = first3 == a3 ? b3 : a3;
  EXPECT_GE(reserved.first_token_ns(second3), reserved.last_ns(first3));
}

TEST(EngineCore, PrefillSideTokenBudgetBatchesPrompts) {
  // SGLang's chunked-prefill-size on the prefill side: with 16,384 tokens per step, two 8k prompts
  // share one prefill step; with 4,096 each takes two steps, one after the other.
  auto second_first_token = [](int32_t budget) {
    auto config = llama_on_h200();
    config.disagg = true;
    config.prefill = WorkerTopology{1, 2, 1, false};
    config.decode = WorkerTopology{1, 2, 1, false};
    config.prefill.max_num_batched_tokens = budget;
    auto core = make_core(config);
    if (!core) return int64_t(-1);
    const uint64_t a = core->submit(request_with_tokens(tokens_from(0, 8000), 4)).value_or(0);
    const uint64_t b = core->submit(request_with_tokens(tokens_from(50000, 8000), 4)).value_or(0);
    EventLog log;
    core->run_until(kNever, log.sink());
    return int64_t(std::max(log.first_token_ns(a), log.first_token_ns(b)));
  };
  const int64_t wide = second_first_token(16384);
  const int64_t narrow = second_first_token(4096);
  ASSERT_GT(wide, 0);
  ASSERT_GT(narrow, 0);
  EXPECT_LT(wide, narrow);
}

TEST(EngineCore, HeldFirstTokenRequestCanBeCancelled) {
  TwoOnCappedDecode capped(1, 200);
  ASSERT_TRUE(capped.core && capped.a && capped.b);
  EngineCore& core = *capped.core;
  EventLog log;
  // Run until one request streams; the other's KV arrives soon after and it is held (no event).
  while (core.next_event_ns() != kNever && log.by_request.empty()) core.run_until(core.next_event_ns(), log.sink());
  ASSERT_EQ(log.by_request.size(), 1u);
  const uint64_t streaming = log.by_request.begin()->first;
  const uint64_t held = streaming == capped.a ? capped.b : capped.a;
  core.run_until(log.first_token_ns(streaming) + 200'000'000, log.sink());
  EXPECT_FALSE(log.by_request.contains(held));
  EXPECT_EQ(core.metrics().num_requests_waiting, 1);
  core.cancel(held);
  core.run_until(kNever, log.sink());
  EXPECT_FALSE(log.by_request.contains(held));
  EXPECT_EQ(log.total_tokens(streaming), 200);
  EXPECT_EQ(core.metrics().num_requests_waiting, 0);
}

TEST(EngineCore, DataParallelRanksHaveTheirOwnKvAndSessionsStick) {
  auto config = llama_on_h200();
  config.tp = 4;
  config.dp_attn = true;
  auto core = make_core(config);
  ASSERT_TRUE(core);
  const auto prompt = tokens_from(3, 1000);
  EventLog log;
  auto submit = [&](uint64_t session) {
    auto request = request_with_tokens(prompt, 2, 16, core->now_ns());
    request.session_id = session;
    auto id = core->submit(request);
    core->run_until(kNever, log.sink());
    return *id;
  };
  const uint64_t a = submit(1);
  const uint64_t same_rank = submit(5);   // 5 % 4 ranks = rank 1, like session 1
  const uint64_t other_rank = submit(2);  // rank 2: its own, empty KV cache
  EXPECT_EQ(log.by_request.at(a).front().cached_prompt_tokens, 0);
  EXPECT_GT(log.by_request.at(same_rank).front().cached_prompt_tokens, 0);
  EXPECT_EQ(log.by_request.at(other_rank).front().cached_prompt_tokens, 0);
}

TEST(EngineCore, LeastLoadedRoutingSpreadsRequestsOverRanks) {
  auto config = llama_on_h200();
  config.tp = 4;
  config.dp_attn = true;
  config.max_num_seqs = 1;  // one running request per rank: a rank given two would queue one
  auto dp = make_core(config);
  ASSERT_TRUE(dp);
  EventLog log;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(dp->submit(request_with_tokens(tokens_from(i * 3000, 100), 50)));
  int64_t max_waiting = 0, max_running = 0;
  while (dp->next_event_ns() != kNever) {
    dp->run_until(dp->next_event_ns(), log.sink());
    max_waiting = std::max(max_waiting, dp->metrics().num_requests_waiting);
    max_running = std::max(max_running, dp->metrics().num_requests_running);
  }
  EXPECT_EQ(dp->metrics().request_success_total, 4);
  EXPECT_EQ(max_running, 4);
  EXPECT_EQ(max_waiting, 0);
}

TEST(EngineCore, CancelStopsEventsAndFreesKv) {
  auto core = make_core(llama_on_h200());
  ASSERT_TRUE(core);
  EventLog log;
  auto keep = core->submit(request_with_tokens(tokens_from(0, 100), 100));
  auto drop = core->submit(request_with_tokens(tokens_from(500, 100), 100));
  while (log.by_request[*drop].size() < 5) core->run_until(core->next_event_ns(), log.sink());
  core->cancel(*drop);
  const size_t seen = log.by_request[*drop].size();
  core->run_until(kNever, log.sink());
  EXPECT_EQ(log.by_request[*drop].size(), seen);
  EXPECT_EQ(log.total_tokens(*keep), 100);
  EXPECT_DOUBLE_EQ(core->metrics().kv_cache_usage_perc, 0.0);
  core->cancel(12345);  // unknown id: no effect
}

// SGLang's --scheduler-recv-interval N: a request sent while the engine decodes waits for the
// scheduler's next poll (every N decode steps, 0..N steps away); an idle engine takes it at once.
struct RecvRun {
  int64_t ttft_ns = 0;  // of the request sent k steps into another's decode
  int64_t step_ns = 0;  // decode step of the busy request
};
RecvRun run_with_recv_interval(int32_t interval, int32_t k) {
  auto config = llama_on_h200();
  config.scheduler_recv_interval = interval;
  auto core = make_core(config);
  EventLog log;
  auto busy = core->submit(request_with_tokens(tokens_from(0, 64), 400));
  while (log.by_request[*busy].size() < size_t(20 + k)) core->run_until(core->next_event_ns(), log.sink());
  const auto& events = log.by_request[*busy];
  RecvRun out;
  out.step_ns = events.back().time_ns - events[events.size() - 2].time_ns;
  const int64_t sent_ns = core->now_ns();
  auto late = core->submit(request_with_tokens(tokens_from(5000, 64), 4, 16, sent_ns));
  core->run_until(kNever, log.sink());
  out.ttft_ns = log.first_token_ns(*late) - sent_ns;
  return out;
}

TEST(EngineCore, SchedulerRecvIntervalHoldsArrivalsUntilTheNextPoll) {
  constexpr int32_t kInterval = 10;
  double sum_steps = 0, max_steps = 0, min_steps = 1e9;
  constexpr int kOffsets = 20;  // two whole poll cycles
  for (int k = 0; k < kOffsets; ++k) {
    const RecvRun every = run_with_recv_interval(1, k);
    const RecvRun polled = run_with_recv_interval(kInterval, k);
    ASSERT_GT(every.step_ns, 0);
    const double extra_steps = double(polled.ttft_ns - every.ttft_ns) / double(every.step_ns);
    EXPECT_GE(extra_steps, -0.01) << "k=" << k;
    EXPECT_LE(extra_steps, kInterval + 0.5) << "k=" << k;
    sum_steps += extra_steps;
    max_steps = std::max(max_steps, extra_steps);
    min_steps = std::min(min_steps, extra_steps);
  }
  // Uniform over the cycle: about N/2 steps on average, from ~0 to ~N-1.
  EXPECT_NEAR(sum_steps / kOffsets, (kInterval - 1) / 2.0, 1.5);
  EXPECT_LE(min_steps, 1.0);
  EXPECT_GE(max_steps, kInterval - 2.0);
}

TEST(EngineCore, SchedulerRecvIntervalDoesNotDelayAnIdleEngine) {
  auto ttft = [](int32_t interval) {
    auto config = llama_on_h200();
    config.scheduler_recv_interval = interval;
    auto core = make_core(config);
    EventLog log;
    auto id = core->submit(request_with_tokens(tokens_from(0, 300), 8));
    core->run_until(kNever, log.sink());
    return log.first_token_ns(*id);
  };
  EXPECT_EQ(ttft(30), ttft(1));
}

TEST(EngineCore, RequestAwaitingThePollCountsAsWaitingAndCanBeCancelled) {
  auto config = llama_on_h200();
  config.scheduler_recv_interval = 1000;  // never polled while the busy request decodes
  auto core = make_core(config);
  EventLog log;
  auto busy = core->submit(request_with_tokens(tokens_from(0, 64), 50));
  while (log.by_request[*busy].size() < 5) core->run_until(core->next_event_ns(), log.sink());
  auto late = core->submit(request_with_tokens(tokens_from(5000, 64), 4, 16, core->now_ns()));
  while (log.by_request[*busy].size() < 10) core->run_until(core->next_event_ns(), log.sink());
  EXPECT_EQ(core->metrics().num_requests_waiting, 1);
  EXPECT_EQ(core->metrics().num_requests_running, 1);
  EXPECT_FALSE(log.by_request.contains(*late));
  core->cancel(*late);
  EXPECT_EQ(core->metrics().num_requests_waiting, 0);
  core->run_until(kNever, log.sink());
  EXPECT_FALSE(log.by_request.contains(*late));
  EXPECT_EQ(log.total_tokens(*busy), 50);
}

// TRT-LLM's attention-DP balancing: four DP ranks each decode one long request; a new prompt
// starts when every rank has one (at once) or when the iteration counter reaches the timeout.
struct BalanceRun {
  int32_t steps_to_first_token = 0;  // of the last new prompt, in decode steps of a busy request
  bool all_started_together = true;  // the new prompts' first tokens came in one step
};
BalanceRun run_with_balance(AttentionDpBalance balance, int32_t new_prompts, int32_t after_steps) {
  auto config = llama_on_h200();
  config.framework = "trt";
  config.tp = 4;
  config.dp_attn = true;
  config.attention_dp_balance = balance;
  config.attention_dp_timeout_iters = 12;
  auto core = make_core(config);
  EventLog log;
  std::vector<uint64_t> busy;
  for (int i = 0; i < 4; ++i) busy.push_back(*core->submit(request_with_tokens(tokens_from(i * 1000, 64), 300)));
  while (log.by_request[busy[0]].size() < size_t(after_steps)) core->run_until(core->next_event_ns(), log.sink());
  const int64_t sent_ns = core->now_ns();
  std::vector<uint64_t> fresh;
  for (int i = 0; i < new_prompts; ++i)
    fresh.push_back(*core->submit(request_with_tokens(tokens_from(9000 + i * 1000, 64), 4, 16, sent_ns)));
  core->run_until(kNever, log.sink());
  BalanceRun out;
  int64_t first = kNever, last = 0;
  for (uint64_t id : fresh) {
    first = std::min(first, log.first_token_ns(id));
    last = std::max(last, log.first_token_ns(id));
  }
  out.all_started_together = first == last;
  for (const auto& event : log.by_request[busy[0]])
    if (event.time_ns > sent_ns && event.time_ns <= last) ++out.steps_to_first_token;
  return out;
}

TEST(EngineCore, AttentionDpBalanceHoldsALonePromptUntilTheTimeout) {
  // The counter started with the busy requests' prefill step; a prompt sent 3 steps later waits
  // for step 12, about 9 steps more than without balancing (which still has the API overhead).
  const BalanceRun balanced = run_with_balance(AttentionDpBalance::kOn, 1, 3);
  const BalanceRun plain = run_with_balance(AttentionDpBalance::kOff, 1, 3);
  EXPECT_LE(plain.steps_to_first_token, 3);
  EXPECT_GE(balanced.steps_to_first_token - plain.steps_to_first_token, 6);
  EXPECT_LE(balanced.steps_to_first_token, 10);
  // The cadence repeats: sent 15 steps in (3 after the first timeout), it waits as long again.
  const BalanceRun second_cycle = run_with_balance(AttentionDpBalance::kOn, 1, 15);
  EXPECT_EQ(second_cycle.steps_to_first_token, balanced.steps_to_first_token);
}

TEST(EngineCore, AttentionDpBalanceStartsPromptsAtOnceWhenEveryRankHasOne) {
  // Four prompts: the least-loaded router gives one to each rank, so they start as soon as the
  // scheduler sees them, as without balancing.
  const BalanceRun every_rank = run_with_balance(AttentionDpBalance::kOn, 4, 3);
  const BalanceRun plain = run_with_balance(AttentionDpBalance::kOff, 4, 3);
  EXPECT_EQ(every_rank.steps_to_first_token, plain.steps_to_first_token);
  EXPECT_TRUE(every_rank.all_started_together);
  // Three prompts leave one rank without: they wait for the timeout together.
  const BalanceRun three = run_with_balance(AttentionDpBalance::kOn, 3, 3);
  EXPECT_GE(three.steps_to_first_token - plain.steps_to_first_token, 6);
  EXPECT_TRUE(three.all_started_together);
}

TEST(EngineCore, AttentionDpBalanceIsTrtLlmsSingleNodeDefault) {
  EngineConfig config = llama_on_h200();
  config.tp = 4;
  config.dp_attn = true;
  EXPECT_TRUE(attention_dp_balancing(config, FrameworkFamily::kTrtllm));
  EXPECT_FALSE(attention_dp_balancing(config, FrameworkFamily::kVllm));
  config.attention_dp_balance = AttentionDpBalance::kOff;
  EXPECT_FALSE(attention_dp_balancing(config, FrameworkFamily::kTrtllm));
  config.attention_dp_balance = AttentionDpBalance::kOn;
  EXPECT_TRUE(attention_dp_balancing(config, FrameworkFamily::kVllm));
  config.dp_attn = false;  // one rank: nothing to balance
  EXPECT_FALSE(attention_dp_balancing(config, FrameworkFamily::kTrtllm));
  // Ranks with nothing running do not wait: prompts sent to an idle engine start at once.
  const BalanceRun idle = run_with_balance(AttentionDpBalance::kOn, 1, 0);
  const BalanceRun idle_plain = run_with_balance(AttentionDpBalance::kOff, 1, 0);
  EXPECT_EQ(idle.steps_to_first_token, idle_plain.steps_to_first_token);
}

TEST(EngineCore, TrtLlmMtpWithAttentionDpFollowsTheInferenceXRecipe) {
  EngineConfig config;
  config.model = "deepseek-r1";
  config.hardware = "h200";
  config.framework = "trt";
  config.tp = 8;
  config.ep = 8;
  config.dp_attn = true;
  config.spec_decoding = SpecDecoding::kMtp;
  // max_batch_size = conc / tp per rank, one MTP layer; max_num_tokens = roundup64(2 x 32 + isl + 64).
  EXPECT_EQ(recipe_max_num_seqs(config, FrameworkFamily::kTrtllm, 256), 32);
  EXPECT_EQ(recipe_max_num_batched_tokens(config, FrameworkFamily::kTrtllm, 1, 256, 1024), 1152);
  EXPECT_EQ(recipe_max_num_batched_tokens(config, FrameworkFamily::kSglang, 1, 256, 1024), kDefaultMaxNumBatchedTokens);
  {
    EngineConfig plain = config;
    plain.spec_decoding = SpecDecoding::kNone;  // max(8192, roundup64(conc + isl + 64))
    EXPECT_EQ(recipe_max_num_batched_tokens(plain, FrameworkFamily::kTrtllm, 0, 256, 1024), 8192);
    EXPECT_EQ(recipe_max_num_batched_tokens(plain, FrameworkFamily::kTrtllm, 0, 256, 8192), 8512);
    plain.max_num_batched_tokens = 4096;  // a set value wins
    EXPECT_EQ(recipe_max_num_batched_tokens(plain, FrameworkFamily::kTrtllm, 0, 256, 8192), 4096);
  }
  EXPECT_EQ(recipe_max_num_seqs(config, FrameworkFamily::kTrtllm, 4), 1);
  auto resolved = resolve_engine(config);
  ASSERT_TRUE(resolved) << resolved.error().message();
  EXPECT_EQ(resolved->num_spec_tokens, 1);
  // Set values win; other engines keep the defaults.
  config.max_num_seqs = 100;
  EXPECT_EQ(recipe_max_num_seqs(config, FrameworkFamily::kTrtllm, 256), 100);
  config.max_num_seqs = 0;
  EXPECT_EQ(recipe_max_num_seqs(config, FrameworkFamily::kSglang, 256), kDefaultMaxNumSeqs);
  config.num_spec_tokens = 3;
  EXPECT_EQ(resolve_engine(config)->num_spec_tokens, 3);
  config.num_spec_tokens = 0;
  config.dp_attn = false;
  EXPECT_EQ(recipe_max_num_seqs(config, FrameworkFamily::kTrtllm, 256), kDefaultMaxNumSeqs);
  EXPECT_EQ(resolve_engine(config)->num_spec_tokens, resolve_engine(config)->model.default_num_spec_tokens);
}

TEST(EngineCore, SameSeedGivesIdenticalTimingsInVirtualTime) {
  auto run = [](uint64_t seed) {
    auto config = llama_on_h200();
    config.seed = seed;
    config.spec_decoding = SpecDecoding::kMtp;
    config.acceptance_length = 2.2;
    config.jitter_sigma = 0.03;
    auto core = make_core(config);
    std::vector<std::tuple<uint64_t, int64_t, int32_t>> events;
    for (int i = 0; i < 6; ++i)
      EXPECT_TRUE(core->submit(request_with_tokens(tokens_from(i * 900, 300 + i), 64, 16, i * 1000000)));
    core->run_until(kNever, [&](const TokenEvent& e) { events.emplace_back(e.request_id, e.time_ns, e.new_tokens); });
    return events;
  };
  const auto a = run(7), b = run(7), c = run(8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_GT(a.size(), 6u);
}

// Prompts that share a prefix and then differ, on a pool small enough to preempt: marking the
// blocks past the prefix as the prompt's own (no per-block state in the pools) schedules exactly
// as treating every block as shareable, with the CPU offload tier too.
TEST(EngineCore, PrivatePromptBlocksScheduleAsSharedOnes) {
  auto run = [](bool mark_private, double offload_gib) {
    auto config = llama_on_h200();
    config.num_gpu_blocks_override = 150;
    config.kv_offloading_size_gib = offload_gib;
    auto core = make_core(config);
    std::vector<std::tuple<uint64_t, int64_t, int32_t, int32_t>> events;
    int64_t preemptions = 0;
    for (int i = 0; i < 40; ++i) {
      auto tokens = tokens_from(0, 400 + 37 * (i % 5));
      for (size_t t = 160; t < tokens.size(); ++t) tokens[t] = i * 10000 + int32_t(t);  // 10 shared blocks
      auto request = request_with_tokens(tokens, 250 + 13 * (i % 7), 16, i * 200000);
      if (mark_private) request.shared_blocks = 10;
      EXPECT_TRUE(core->submit(std::move(request)));
    }
    core->run_until(kNever, [&](const TokenEvent& e) {
      events.emplace_back(e.request_id, e.time_ns, e.new_tokens, e.cached_prompt_tokens);
    });
    preemptions = core->metrics().num_preemptions;
    EXPECT_GT(preemptions, 10);
    return events;
  };
  for (double offload_gib : {0.0, 0.05}) {
    const auto shared = run(false, offload_gib);
    EXPECT_EQ(run(true, offload_gib), shared) << "offload " << offload_gib;
    EXPECT_GT(shared.size(), 40u * 100);
  }
}

TEST(EngineCore, UnfittableModelIsAClearError) {
  EngineConfig config;
  config.model = "deepseek-r1";
  config.hardware = "h100";
  config.tp = 2;
  auto resolved = resolve_engine(config);
  ASSERT_TRUE(resolved);
  auto core = EngineCore::create(*resolved);
  ASSERT_FALSE(core);
  EXPECT_NE(core.error().message().find("does not fit"), std::string::npos);
  // 671B at FP8 over 2 x 80 GB: no utilization helps, so none is suggested.
  EXPECT_EQ(core.error().message().find("--gpu-memory-utilization above"), std::string::npos) << core.error().message();
}

TEST(EngineCore, CheckpointFp4ExpertsAreReadAtTheirWidthInAnFp8Deployment) {
  // DeepSeek-V4-Pro's checkpoint stores its experts in FP4: InferenceX runs it as an "fp8"
  // deployment on 8 x H200 (no FP4 tensor cores) at vLLM's default utilization, which 1.6T
  // parameters at one byte each (~200 GB per GPU) could not do.
  auto resolved = resolve_engine(testing::engine_config("deepseek-v4-pro", "h200", "fp8", "vllm", 8));
  ASSERT_TRUE(resolved) << resolved.error().message();
  ASSERT_TRUE(EngineCore::create(*resolved)) << "DeepSeek-V4-Pro FP8 fits on 8 x H200 at utilization 0.9";
  const CostModel fp8(resolved->model, resolved->hardware, resolved->efficiency, "fp8", 0,
                      WorkerTopology{1, 8, 1, false});
  const CostModel fp4(resolved->model, resolved->hardware, resolved->efficiency, "fp4", 0,
                      WorkerTopology{1, 8, 1, false});
  EXPECT_DOUBLE_EQ(fp8.weight_bytes_per_gpu(), fp4.weight_bytes_per_gpu());
  EXPECT_GT(fp8.weight_bytes_per_gpu(), 95e9);
  EXPECT_LT(fp8.weight_bytes_per_gpu(), 125e9);
  // Without the checkpoint's own width the same deployment's experts are one byte each.
  ModelSpec one_byte = resolved->model;
  one_byte.checkpoint_expert_precision.clear();
  const CostModel wide(one_byte, resolved->hardware, resolved->efficiency, "fp8", 0, WorkerTopology{1, 8, 1, false});
  EXPECT_GT(wide.weight_bytes_per_gpu(), 1.6 * fp8.weight_bytes_per_gpu());
}

TEST(EngineCore, WeightsThatFitAtAHigherUtilizationSayWhichUtilization) {
  // DeepSeek-R1 FP8 on 8 x H200 at a utilization below the weights' share of HBM: raising it is
  // the fix, and the message names the threshold.
  EngineConfig config = testing::engine_config("deepseek-r1", "h200", "fp8", "vllm", 8);
  config.gpu_memory_utilization = 0.5;
  auto resolved = resolve_engine(config);
  ASSERT_TRUE(resolved);
  auto core = EngineCore::create(*resolved);
  ASSERT_FALSE(core);
  const std::string message = core.error().message();
  const auto at = message.find("raise --gpu-memory-utilization above 0.");
  ASSERT_NE(at, std::string::npos) << message;
  const double threshold = std::stod(message.substr(at + std::string("raise --gpu-memory-utilization above ").size()));
  EXPECT_GT(threshold, 0.5) << message;
  EXPECT_LT(threshold, 0.9) << message;
  config.gpu_memory_utilization = threshold + 0.05;
  auto fits = resolve_engine(config);
  ASSERT_TRUE(fits);
  EXPECT_TRUE(EngineCore::create(*fits)) << "the suggested utilization (plus room for KV) fits";
}

}  // namespace
}  // namespace ix::sim
