#include "http/client_retry.h"

#include <gtest/gtest.h>

namespace ix::http {
namespace {

TEST(ClientRetry, RetryAfterSecondsAreHonouredUpToTheCap) {
  EXPECT_EQ(parse_retry_after_ns("2", 0.0), 2'000'000'000);
  EXPECT_EQ(parse_retry_after_ns("0", 0.0), 0);
  EXPECT_EQ(parse_retry_after_ns("86400", 0.0), kRetryAfterCapNs);
  EXPECT_EQ(parse_retry_after_ns("99999999999999999999999", 0.0), kRetryAfterCapNs);
}

TEST(ClientRetry, RetryAfterHttpDatesCountFromNow) {
  // Sun, 06 Nov 1994 08:49:37 GMT is 784111777 Unix seconds.
  constexpr double kThen = 784111777.0;
  EXPECT_EQ(parse_retry_after_ns("Sun, 06 Nov 1994 08:49:37 GMT", kThen - 5), 5'000'000'000);
  EXPECT_EQ(parse_retry_after_ns("Sunday, 06-Nov-94 08:49:37 GMT", kThen - 3), 3'000'000'000);
  EXPECT_EQ(parse_retry_after_ns("Sun Nov  6 08:49:37 1994", kThen - 1), 1'000'000'000);
  EXPECT_EQ(parse_retry_after_ns("Sun, 06 Nov 1994 08:49:37 GMT", kThen + 100), 0);  // past: now
  EXPECT_EQ(parse_retry_after_ns("Sun, 06 Nov 1994 08:49:37 GMT", kThen - 1e6), kRetryAfterCapNs);
}

TEST(ClientRetry, MalformedRetryAfterIsIgnored) {
  EXPECT_EQ(parse_retry_after_ns("", 0.0), std::nullopt);
  EXPECT_EQ(parse_retry_after_ns("soon", 0.0), std::nullopt);
  EXPECT_EQ(parse_retry_after_ns("5s", 0.0), std::nullopt);
  EXPECT_EQ(parse_retry_after_ns("-1", 0.0), std::nullopt);
  // Then the backoff decides.
  EXPECT_EQ(retry_delay_ns(0, "soon", 0.0, 0.5), kRetryBaseDelayNs / 2);
}

TEST(ClientRetry, BackoffDoublesWithFullJitterUpToTheCap) {
  EXPECT_EQ(full_jitter_backoff_ns(0, 0.0), 0);
  EXPECT_EQ(full_jitter_backoff_ns(0, 0.999999), static_cast<int64_t>(0.999999 * kRetryBaseDelayNs));
  EXPECT_EQ(full_jitter_backoff_ns(3, 0.5), 4 * kRetryBaseDelayNs);
  EXPECT_EQ(full_jitter_backoff_ns(10, 0.5), kRetryMaxDelayNs / 2);
  EXPECT_EQ(full_jitter_backoff_ns(1000, 0.5), kRetryMaxDelayNs / 2);
  EXPECT_EQ(retry_delay_ns(5, "3", 0.0, 0.5), 3'000'000'000);
}

}  // namespace
}  // namespace ix::http
