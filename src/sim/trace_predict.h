// `ixbench sim predict --trace`: an agentic trace replayed through the engine core in virtual
// time, on the schedule `bench replay` uses (workload/replay_schedule.h: lanes of session trees,
// think times, subagent fan-out and joins, warmup, idle caps, duration and grace, or the fixed
// schedule), so each request sees the prefix cache, the KV offloading tier and the scheduler as it
// would on `sim serve`, without a socket or a wall clock.
//
// What the engine is sent: each turn's chat history as token ids made from its pieces (every hash
// block and tail a pure function of its key, as the text bench replay renders is), plus the
// cache-bust marker before the first message and a chat template's framing of each message
// (kTemplateTokensPerMessage, kTemplateTokensPerPrompt). Equal histories give equal ids, so the
// prefix cache hits where it would on the served text; counts differ from a real template's by a
// few tokens per message (docs/simulator.md, "Agentic traces"). Requests ask for exactly
// max_tokens (aiperf sends ignore_eos); a request the engine cannot take (longer than its context
// window) fails as the HTTP front would answer it (400).
//
// Records are handed to `on_record` as each request completes, with virtual-time stamps (ns from
// the start of the run). Thread-safety: predict_trace() is a pure function of its inputs (and the
// interrupt flag), one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "common/error.h"
#include "metrics/replay_result.h"
#include "sim/engine_core.h"
#include "workload/replay_schedule.h"
#include "workload/trace.h"

namespace ix::sim {

// The framing a chat template adds: role markers around each message, and the assistant header
// the generation prompt ends with (ChatML-like templates: 4-5 and 3).
inline constexpr int32_t kTemplateTokensPerMessage = 5;
inline constexpr int32_t kTemplateTokensPerPrompt = 3;
// Tokens of the "[rid:<12 hex>]\n\n" cache-bust marker.
inline constexpr int32_t kCacheBustTokens = 8;

struct TracePredictOptions {
  workload::ReplayScheduleOptions schedule;
  const workload::Trace* trace = nullptr;
  std::function<void(metrics::ReplayRecord&&)> on_record;
  // Checked between events: once set, the run stops as `bench replay` stops on a signal (requests
  // in flight cancelled, what was measured kept, the result marked invalid).
  const std::atomic<bool>* interrupt = nullptr;
};

struct TracePrediction {
  workload::ReplayScheduleOutput schedule;
  int64_t end_ns = 0;  // virtual time the run ended
  int32_t num_gpus = 0;
  EngineMetrics at_profile_start;  // the engine's counters when profiling started, and at the end
  EngineMetrics at_end;
  // The GPU prefix cache's hits and queries over the profiling window (tokens), as bench replay
  // reads them from the server's vllm:prefix_cache_* counters.
  metrics::ServerPrefixCacheDelta prefix_cache;
};

// Errors: kInvalidArgument for options that cannot run (no trace, no lanes, live-assistant
// replies, which need generated text); kInternal if the schedule stalls with nothing pending.
Result<TracePrediction> predict_trace(const ResolvedEngine& engine, const TracePredictOptions& options);

}  // namespace ix::sim
