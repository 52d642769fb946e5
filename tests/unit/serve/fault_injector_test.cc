// Fault plans: seeded and reproducible, rates respected, positions mid-stream, validation.
#include "serve/fault_injector.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>

namespace ix::serve {
namespace {

TEST(FaultInjector, NoRatesNoFaults) {
  FaultInjector injector(FaultOptions{}, 0);
  for (int index = 0; index < 100; ++index) EXPECT_FALSE(injector.plan(100).any());
}

TEST(FaultInjector, SameSeedSamePlans) {
  FaultOptions options;
  options.seed = 7;
  options.error_rate = 0.2;
  options.error_codes = {429, 503};
  options.stall_rate = 0.3;
  options.drop_rate = 0.1;
  options.malformed_rate = 0.1;
  options.short_rate = 0.2;
  FaultInjector first(options, 0);
  FaultInjector second(options, 0);
  for (int index = 0; index < 200; ++index) {
    FaultPlan a = first.plan(50);
    FaultPlan b = second.plan(50);
    EXPECT_EQ(a.error_status, b.error_status);
    EXPECT_EQ(a.stall_after, b.stall_after);
    EXPECT_EQ(a.drop_after, b.drop_after);
    EXPECT_EQ(a.malformed_after, b.malformed_after);
    EXPECT_EQ(a.short_tokens, b.short_tokens);
  }
}

TEST(FaultInjector, RatesAndPositionsAreRespected) {
  FaultOptions options;
  options.seed = 1;
  options.error_rate = 0.25;
  options.error_codes = {429, 500, 503};
  options.drop_rate = 0.5;
  options.short_rate = 1.0;
  FaultInjector injector(options, 0);
  int errors = 0;
  int drops = 0;
  std::set<int> codes;
  const int kRequests = 4000;
  for (int index = 0; index < kRequests; ++index) {
    FaultPlan plan = injector.plan(20);
    if (plan.error_status != 0) {
      ++errors;
      codes.insert(plan.error_status);
      EXPECT_EQ(plan.drop_after, 0);  // an error answers before any stream
      continue;
    }
    if (plan.drop_after != 0) {
      ++drops;
      EXPECT_GE(plan.drop_after, 1);
      EXPECT_LE(plan.drop_after, 19);
    }
    EXPECT_GE(plan.short_tokens, 1);
    EXPECT_LE(plan.short_tokens, 19);
  }
  EXPECT_NEAR(errors / static_cast<double>(kRequests), 0.25, 0.03);
  EXPECT_NEAR(drops / static_cast<double>(kRequests - errors), 0.5, 0.04);
  EXPECT_EQ(codes, (std::set<int>{429, 500, 503}));
}

TEST(FaultInjector, ShortNeedsAtLeastTwoTokens) {
  FaultOptions options;
  options.short_rate = 1.0;
  FaultInjector injector(options, 0);
  EXPECT_EQ(injector.plan(1).short_tokens, 0);
}

TEST(FaultInjector, HealthDelay) {
  FaultOptions options;
  options.health_delay_ms = 100;
  FaultInjector injector(options, 1'000'000'000);
  EXPECT_FALSE(injector.health_ready(1'000'000'000));
  EXPECT_FALSE(injector.health_ready(1'099'000'000));
  EXPECT_TRUE(injector.health_ready(1'100'000'000));
}

TEST(FaultInjector, ValidationNamesTheFlag) {
  FaultOptions options;
  options.drop_rate = 1.5;
  auto result = validate(options);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message().find("--fault-drop-rate"), std::string::npos);
  options.drop_rate = 0;
  options.error_codes = {200};
  EXPECT_FALSE(validate(options));
  options.error_codes = {429};
  EXPECT_TRUE(validate(options));
}

TEST(FaultInjector, ValidationRefusesNanNegativeAndOverlongDelays) {
  FaultOptions options;
  options.stall_rate = std::numeric_limits<double>::quiet_NaN();
  auto nan_rate = validate(options);
  ASSERT_FALSE(nan_rate);
  EXPECT_NE(nan_rate.error().message().find("--fault-stall-rate"), std::string::npos);
  options.stall_rate = -0.1;
  EXPECT_FALSE(validate(options));
  options.stall_rate = 0.5;
  // Above a day the nanosecond deadline overflowed: the health delay was silently skipped.
  options.health_delay_ms = 9'300'000'000'000;
  auto health = validate(options);
  ASSERT_FALSE(health);
  EXPECT_NE(health.error().message().find("--fault-health-delay-ms"), std::string::npos);
  options.health_delay_ms = kMaxFaultDelayMs;
  EXPECT_TRUE(validate(options));
  options.stall_ms = kMaxFaultDelayMs + 1;
  auto stall = validate(options);
  ASSERT_FALSE(stall);
  EXPECT_NE(stall.error().message().find("--fault-stall-ms"), std::string::npos);
  options.stall_ms = -1;
  EXPECT_FALSE(validate(options));
}

TEST(FaultInjector, ParsesErrorCodes) {
  EXPECT_EQ(*parse_error_codes("429,500, 503"), (std::vector<int>{429, 500, 503}));
  EXPECT_FALSE(parse_error_codes("429,abc"));
  EXPECT_FALSE(parse_error_codes("429,,500"));
}

}  // namespace
}  // namespace ix::serve
