#include "serve/prompt_workers.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>

namespace ix::serve {
namespace {

// The queue is bounded by the bytes waiting: with the one worker held busy, jobs are queued up to
// the limit and refused beyond it; a job bigger than the limit still gets in when nothing waits.
TEST(PromptWorkers, QueueIsBoundedByTheBytesWaiting) {
  PromptWorkers workers(1, 100);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::promise<void> started;
  ASSERT_TRUE(workers.try_submit(1000, [&started, gate] {
    started.set_value();
    gate.wait();
  }));
  started.get_future().wait();  // running: no longer counted as waiting
  EXPECT_EQ(workers.queued_bytes(), 0u);
  auto ran = std::make_shared<std::atomic<int>>(0);
  auto job = [ran] { ran->fetch_add(1); };
  EXPECT_TRUE(workers.try_submit(150, job));  // alone in the queue: admitted though over the limit
  EXPECT_FALSE(workers.try_submit(1, job));
  EXPECT_EQ(workers.queued_bytes(), 150u);
  release.set_value();
  // Queued jobs run in order once the worker is free.
  std::promise<void> last;
  while (!workers.try_submit(10, [&last] { last.set_value(); })) std::this_thread::yield();
  last.get_future().wait();
  EXPECT_EQ(ran->load(), 1);
  EXPECT_EQ(workers.queued_bytes(), 0u);
}

TEST(PromptWorkers, JobsNotStartedAreDroppedAtDestruction) {
  auto ran = std::make_shared<std::atomic<int>>(0);
  std::atomic<bool> queued{false};
  std::promise<void> started;
  {
    PromptWorkers workers(1, 1 << 20);
    // The running job ends only once the destructor has emptied the queue behind it.
    ASSERT_TRUE(workers.try_submit(1, [&] {
      started.set_value();
      while (!queued.load() || workers.queued_bytes() != 0) std::this_thread::yield();
    }));
    started.get_future().wait();
    ASSERT_TRUE(workers.try_submit(1, [ran] { ran->fetch_add(1); }));
    queued = true;
  }
  EXPECT_EQ(ran->load(), 0);
}

}  // namespace
}  // namespace ix::serve
