// Seeded fault injection for reliability tests of clients (`ixbench sim serve --fault-*`).
//
// Per request, independent draws decide (in this order, from one seeded stream, so a given seed and
// request order always give the same faults):
//   error      answer with an HTTP error (one of error_codes, uniformly) and OpenAI error JSON,
//              before any token;
//   stall      pause the stream for stall_ms after a uniformly drawn token (mid-stream);
//   drop       close the connection after a drawn token (no [DONE], no terminating chunk);
//   malformed  insert one malformed SSE event (`data: ` + truncated JSON) after a drawn token;
//   short      finish early: a drawn number of tokens in [1, max_tokens-1], finish_reason "stop".
// An error excludes the others (the request gets no stream); the other draws are independent, so
// one request may get several faults and the rates need not sum to at most 1. Positions count
// tokens: the fault fires after the first event that brings the tokens sent to k, k uniform in
// [1, max(1, max_tokens-1)], so a fault is always mid-stream (at least one token was sent). The
// front fires it before the last event when the request ends sooner (natural EOS, stop string,
// short fault), and after the last event when there is only one. /health answers 503 for the
// first health_delay_ms after start.
//
// Thread-safety: plan() and health_ready() may be called from any thread (a mutex guards the
// stream).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/rng.h"

namespace ix::serve {

struct FaultOptions {
  uint64_t seed = 0;
  double error_rate = 0.0;
  std::vector<int> error_codes = {500};
  double stall_rate = 0.0;
  int64_t stall_ms = 1000;
  double drop_rate = 0.0;
  double malformed_rate = 0.0;
  double short_rate = 0.0;
  int64_t health_delay_ms = 0;

  bool any_request_fault() const {
    return error_rate > 0 || stall_rate > 0 || drop_rate > 0 || malformed_rate > 0 || short_rate > 0;
  }
};

// Ranges: rates in [0, 1] (NaN refused), codes in 400..599, durations in [0, kMaxFaultDelayMs].
// Errors name the flag.
inline constexpr int64_t kMaxFaultDelayMs = 86'400'000;  // one day: larger is a typo (and ns overflow)
Result<void> validate(const FaultOptions& options);
// "429,500,503" -> {429, 500, 503}.
Result<std::vector<int>> parse_error_codes(const std::string& text);

struct FaultPlan {
  int error_status = 0;     // 0 = none
  int32_t stall_after = 0;  // 0 = none; else stall after this many events
  int64_t stall_ms = 0;
  int32_t drop_after = 0;       // 0 = none
  int32_t malformed_after = 0;  // 0 = none
  int32_t short_tokens = 0;     // 0 = none; else generate only this many tokens

  bool any() const {
    return error_status != 0 || stall_after != 0 || drop_after != 0 || malformed_after != 0 || short_tokens != 0;
  }
};

class FaultInjector {
 public:
  FaultInjector(FaultOptions options, int64_t start_ns);
  FaultPlan plan(int32_t max_tokens);
  bool health_ready(int64_t now_ns) const;
  const FaultOptions& options() const { return options_; }

 private:
  FaultOptions options_;
  int64_t start_ns_;
  std::mutex mutex_;
  Rng rng_;
};

}  // namespace ix::serve
