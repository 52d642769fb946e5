// The schedule engines: exact absolute schedules, cancellation, context checks, inline no-delay.
#include "serve/schedule_engines.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace ix::serve {
namespace {

struct Collector {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<sim::TokenEvent> events;
  std::vector<int64_t> delivered_ns;

  sim::LiveEngine::Sink sink() {
    return [this](const sim::TokenEvent& event) {
      std::lock_guard lock(mutex);
      events.push_back(event);
      delivered_ns.push_back(steady_clock_instance().now_ns());
      changed.notify_all();
    };
  }
  bool wait_for(size_t count, double timeout_s) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return events.size() >= count; });
  }
};

sim::GenerationRequest request(int32_t prompt_tokens, int32_t max_tokens) {
  sim::GenerationRequest generation;
  generation.prompt_token_ids.assign(static_cast<size_t>(prompt_tokens), 1);
  generation.max_tokens = max_tokens;
  return generation;
}

TEST(FixedScheduleEngine, EventsFollowTheAbsoluteSchedule) {
  const Clock& clock = steady_clock_instance();
  FixedScheduleEngine engine(50.0, 10.0, 4096, clock);
  Collector collector;
  int64_t before = clock.now_ns();
  auto id = engine.submit(request(8, 6), collector.sink());
  int64_t after = clock.now_ns();
  ASSERT_TRUE(id);
  ASSERT_TRUE(collector.wait_for(6, 5.0));
  std::lock_guard lock(collector.mutex);
  ASSERT_EQ(collector.events.size(), 6u);
  int64_t first = collector.events[0].time_ns;
  EXPECT_GE(first, before + 50'000'000);
  EXPECT_LE(first, after + 50'000'000);
  for (size_t index = 0; index < collector.events.size(); ++index) {
    const auto& event = collector.events[index];
    // Scheduled times are exact multiples of the ITL after the first token: no drift.
    EXPECT_EQ(event.time_ns, first + static_cast<int64_t>(index) * 10'000'000) << index;
    // Delivered no earlier than scheduled.
    EXPECT_GE(collector.delivered_ns[index], event.time_ns) << index;
    EXPECT_EQ(event.total_output_tokens, static_cast<int32_t>(index + 1));
    EXPECT_EQ(event.new_tokens, 1);
    EXPECT_EQ(event.prompt_tokens, 8);
    EXPECT_EQ(event.finish, index == 5 ? sim::FinishReason::kLength : sim::FinishReason::kNone);
  }
  auto metrics = engine.metrics();
  EXPECT_EQ(metrics.generation_tokens_total, 6);
  EXPECT_EQ(metrics.prompt_tokens_total, 8);
  EXPECT_EQ(metrics.num_requests_running, 0);
  EXPECT_EQ(metrics.request_success_total, 1);
}

TEST(FixedScheduleEngine, InterleavesManyRequestsInDueOrder) {
  const Clock& clock = steady_clock_instance();
  FixedScheduleEngine engine(5.0, 3.0, 4096, clock);
  Collector collector;
  for (int index = 0; index < 50; ++index) {
    ASSERT_TRUE(engine.submit(request(1, 10), collector.sink()));
  }
  ASSERT_TRUE(collector.wait_for(500, 10.0));
  std::lock_guard lock(collector.mutex);
  for (size_t index = 1; index < collector.events.size(); ++index) {
    EXPECT_LE(collector.events[index - 1].time_ns, collector.events[index].time_ns);
  }
}

TEST(FixedScheduleEngine, CancelStopsEvents) {
  const Clock& clock = steady_clock_instance();
  FixedScheduleEngine engine(1.0, 20.0, 4096, clock);
  Collector collector;
  auto id = engine.submit(request(1, 1000), collector.sink());
  ASSERT_TRUE(id);
  ASSERT_TRUE(collector.wait_for(2, 5.0));
  engine.cancel(*id);
  size_t count = 0;
  {
    std::lock_guard lock(collector.mutex);
    count = collector.events.size();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::lock_guard lock(collector.mutex);
  EXPECT_EQ(collector.events.size(), count);
  EXPECT_EQ(engine.metrics().num_requests_running, 0);
}

TEST(FixedScheduleEngine, RejectsPromptsBeyondTheContext) {
  const Clock& clock = steady_clock_instance();
  FixedScheduleEngine engine(1.0, 1.0, 100, clock);
  Collector collector;
  auto result = engine.submit(request(90, 20), collector.sink());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(result.error().message().find("maximum context length is 100"), std::string::npos);
  EXPECT_TRUE(engine.submit(request(80, 20), collector.sink()));
}

TEST(FixedScheduleEngine, AdmitHandsOutTheScheduleAndKeepsTheCounters) {
  const Clock& clock = steady_clock_instance();
  FixedScheduleEngine engine(50.0, 10.0, 100, clock);
  // The schedule starts when the request arrived, not when it is admitted.
  const int64_t arrived = clock.now_ns() - 3'000'000;
  auto schedule = engine.admit(request(7, 20), arrived);
  ASSERT_TRUE(schedule);
  EXPECT_EQ(schedule->first_due_ns, arrived + 50'000'000);
  EXPECT_EQ(schedule->itl_ns, 10'000'000);
  EXPECT_EQ(schedule->max_tokens, 20);
  EXPECT_EQ(schedule->prompt_tokens, 7);
  // An arrival time in the future (a clock mix-up) counts as now: nothing is scheduled later.
  int64_t before = clock.now_ns();
  auto second = engine.admit(request(1, 5), before + 1'000'000'000);
  int64_t after = clock.now_ns();
  ASSERT_TRUE(second);
  EXPECT_GE(second->first_due_ns, before + 50'000'000);
  EXPECT_LE(second->first_due_ns, after + 50'000'000);
  EXPECT_NE(second->id, schedule->id);
  EXPECT_FALSE(engine.admit(request(90, 20), clock.now_ns()));  // beyond the context
  EXPECT_EQ(engine.metrics().num_requests_running, 2);
  // Tokens reported from several threads are all counted.
  std::vector<std::thread> threads;
  for (int index = 0; index < 4; ++index) threads.emplace_back([&] { engine.count_generated(5); });
  for (auto& thread : threads) thread.join();
  engine.release(true);
  engine.release(false);
  sim::EngineMetrics metrics = engine.metrics();
  EXPECT_EQ(metrics.prompt_tokens_total, 8);
  EXPECT_EQ(metrics.generation_tokens_total, 20);
  EXPECT_EQ(metrics.num_requests_running, 0);
  EXPECT_EQ(metrics.request_success_total, 1);
  // Admitting needs no engine thread.
  EXPECT_FALSE(engine.delivery_thread_started());
}

TEST(NoDelayEngine, DeliversEveryEventInsideSubmit) {
  const Clock& clock = steady_clock_instance();
  NoDelayEngine engine(4096, clock);
  Collector collector;
  auto id = engine.submit(request(3, 100), collector.sink());
  ASSERT_TRUE(id);
  std::lock_guard lock(collector.mutex);
  ASSERT_EQ(collector.events.size(), 100u);
  EXPECT_EQ(collector.events.back().finish, sim::FinishReason::kLength);
  EXPECT_EQ(collector.events.back().total_output_tokens, 100);
  EXPECT_EQ(engine.metrics().generation_tokens_total, 100);
  EXPECT_FALSE(engine.submit(request(4000, 100), collector.sink()));
}

}  // namespace
}  // namespace ix::serve
