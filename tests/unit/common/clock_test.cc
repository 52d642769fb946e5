#include "common/clock.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(SteadyClock, IsMonotonic) {
  const Clock& clock = steady_clock_instance();
  int64_t previous = clock.now_ns();
  for (int iteration = 0; iteration < 1000; ++iteration) {
    int64_t now = clock.now_ns();
    ASSERT_GE(now, previous);
    previous = now;
  }
}

TEST(FakeClock, MovesOnlyWhenTold) {
  FakeClock clock(100);
  EXPECT_EQ(clock.now_ns(), 100);
  EXPECT_EQ(clock.now_ns(), 100);
  clock.advance_ns(50);
  EXPECT_EQ(clock.now_ns(), 150);
  clock.set_ns(1000);
  EXPECT_EQ(clock.now_ns(), 1000);
  clock.set_ns(10);  // never backwards
  EXPECT_EQ(clock.now_ns(), 1000);
}

}  // namespace
}  // namespace ix
