// When a client resends a request that failed with 429, 5xx, a refused connection or a reset:
// exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter":
// the n-th retry waits uniform(0, min(cap, base * 2^n))), or the server's Retry-After when it sent
// one (delay-seconds or an HTTP-date, RFC 9110 §10.2.3), capped.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ix::http {

inline constexpr int64_t kRetryBaseDelayNs = 100'000'000;    // the first retry waits up to 100 ms
inline constexpr int64_t kRetryMaxDelayNs = 10'000'000'000;  // no backoff longer than 10 s
inline constexpr int64_t kRetryAfterCapNs = 60'000'000'000;  // a Retry-After is honoured up to 60 s

// The Retry-After value as a delay from now (`now_unix_s`: the wall clock), capped at
// kRetryAfterCapNs; a date in the past is 0. nullopt when `value` is empty or neither form.
std::optional<int64_t> parse_retry_after_ns(std::string_view value, double now_unix_s);

// The wait before retry number `attempt` (0 = the first): uniform(0, min(cap, base * 2^attempt))
// with `u01` a uniform draw in [0, 1).
int64_t full_jitter_backoff_ns(int attempt, double u01);

// Retry-After when present and valid, else the jittered backoff.
int64_t retry_delay_ns(int attempt, std::string_view retry_after, double now_unix_s, double u01);

}  // namespace ix::http
