#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "common/clock.h"
#include "sim/engine_config.h"

namespace ix::sim {
namespace {

EngineConfig small_engine() {
  EngineConfig config;
  config.model = "llama-3.3-70b";
  config.hardware = "b200";
  config.precision = "fp8";
  config.tp = 8;
  return config;
}

struct Collector {
  std::mutex mutex;
  std::condition_variable done;
  std::vector<TokenEvent> events;
  bool finished = false;
  LiveEngine::Sink sink() {
    return [this](const TokenEvent& event) {
      std::lock_guard<std::mutex> lock(mutex);
      events.push_back(event);
      if (event.finish != FinishReason::kNone) {
        finished = true;
        done.notify_all();
      }
    };
  }
  bool wait(std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> lock(mutex);
    return done.wait_for(lock, timeout, [&] { return finished; });
  }
};

TEST(LiveEngine, StreamsTokensOnTheWallClockAtModelledTimes) {
  const Clock& clock = steady_clock_instance();
  auto engine = make_live_engine(small_engine(), clock);
  ASSERT_TRUE(engine) << engine.error().message();
  Collector collector;
  GenerationRequest request;
  request.prompt_token_ids.assign(300, 11);
  request.max_tokens = 30;
  request.ignore_eos = true;
  const int64_t start_ns = clock.now_ns();
  auto id = (*engine)->submit(request, collector.sink());
  ASSERT_TRUE(id);
  ASSERT_TRUE(collector.wait(std::chrono::seconds(20)));
  const int64_t end_ns = clock.now_ns();
  std::lock_guard<std::mutex> lock(collector.mutex);
  ASSERT_EQ(collector.events.size(), 30u);
  EXPECT_EQ(collector.events.back().total_output_tokens, 30);
  EXPECT_EQ(collector.events.back().finish, FinishReason::kLength);
  for (size_t i = 1; i < collector.events.size(); ++i)
    EXPECT_GT(collector.events[i].time_ns, collector.events[i - 1].time_ns);
  // Event times are engine times on the caller's clock, and were not delivered early.
  EXPECT_GE(collector.events.front().time_ns, start_ns);
  EXPECT_LE(collector.events.back().time_ns, end_ns);
  EXPECT_EQ((*engine)->metrics().request_success_total, 1);
  EXPECT_EQ((*engine)->max_model_len(), 131072);
}

TEST(LiveEngine, NaturalEosEndsWithinMaxTokensAndCancelStopsStreams) {
  auto engine = make_live_engine(small_engine(), steady_clock_instance());
  ASSERT_TRUE(engine);
  Collector natural;
  GenerationRequest request;
  request.prompt_token_ids.assign(64, 5);
  request.max_tokens = 40;
  ASSERT_TRUE((*engine)->submit(request, natural.sink()));
  ASSERT_TRUE(natural.wait(std::chrono::seconds(20)));
  {
    std::lock_guard<std::mutex> lock(natural.mutex);
    EXPECT_GE(natural.events.back().total_output_tokens, 20);
    EXPECT_LE(natural.events.back().total_output_tokens, 40);
  }
  Collector cancelled;
  request.max_tokens = 5000;
  request.ignore_eos = true;
  auto id = (*engine)->submit(request, cancelled.sink());
  ASSERT_TRUE(id);
  (*engine)->cancel(*id);
  EXPECT_FALSE(cancelled.wait(std::chrono::seconds(1)));
}

int32_t final_length(Collector& collector) {
  std::lock_guard<std::mutex> lock(collector.mutex);
  return collector.events.empty() ? -1 : collector.events.back().total_output_tokens;
}

TEST(LiveEngine, MinTokensRaisesTheNaturalLength) {
  // min_tokens used to be ignored: the natural EOS was drawn in [max/2, max] regardless. With
  // min_tokens 38 of 40, five requests all end at 38..40 (before: each had 3/21 odds to).
  auto engine = make_live_engine(small_engine(), steady_clock_instance());
  ASSERT_TRUE(engine);
  Collector collectors[5];
  GenerationRequest request;
  request.prompt_token_ids.assign(32, 7);
  request.max_tokens = 40;
  request.min_tokens = 38;
  for (auto& collector : collectors) ASSERT_TRUE((*engine)->submit(request, collector.sink()));
  for (auto& collector : collectors) {
    ASSERT_TRUE(collector.wait(std::chrono::seconds(20)));
    EXPECT_GE(final_length(collector), 38);
    EXPECT_LE(final_length(collector), 40);
  }
  // min_tokens above max_tokens is the caller's error.
  request.min_tokens = 41;
  Collector refused;
  auto bad = (*engine)->submit(request, refused.sink());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("min_tokens"), std::string::npos);
}

TEST(LiveEngine, NaturalMaxTokensCapsTheNaturalLengthButNotIgnoreEos) {
  auto engine = make_live_engine(small_engine(), steady_clock_instance());
  ASSERT_TRUE(engine);
  GenerationRequest request;
  request.prompt_token_ids.assign(32, 9);
  request.max_tokens = 100000;  // a default budget (max_model_len - prompt)
  request.natural_max_tokens = 40;
  Collector capped[3];
  for (auto& collector : capped) ASSERT_TRUE((*engine)->submit(request, collector.sink()));
  for (auto& collector : capped) {
    ASSERT_TRUE(collector.wait(std::chrono::seconds(20)));
    EXPECT_GE(final_length(collector), 20);
    EXPECT_LE(final_length(collector), 40);
  }
  // min_tokens beyond the cap: the natural end comes right at min_tokens.
  request.min_tokens = 60;
  Collector at_min;
  ASSERT_TRUE((*engine)->submit(request, at_min.sink()));
  ASSERT_TRUE(at_min.wait(std::chrono::seconds(20)));
  EXPECT_EQ(final_length(at_min), 60);
  // ignore_eos still generates the whole budget.
  request.min_tokens = 0;
  request.max_tokens = 70;
  request.ignore_eos = true;
  Collector full;
  ASSERT_TRUE((*engine)->submit(request, full.sink()));
  ASSERT_TRUE(full.wait(std::chrono::seconds(20)));
  EXPECT_EQ(final_length(full), 70);
}

TEST(LiveEngine, RejectsBadConfigsAndOversizedPrompts) {
  auto config = small_engine();
  config.model = "no-such-model";
  auto bad = make_live_engine(config, steady_clock_instance());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("known:"), std::string::npos);
  config = small_engine();
  config.max_model_len = 1000;
  auto engine = make_live_engine(config, steady_clock_instance());
  ASSERT_TRUE(engine);
  GenerationRequest request;
  request.prompt_token_ids.assign(990, 1);
  request.max_tokens = 20;
  Collector collector;
  EXPECT_FALSE((*engine)->submit(request, collector.sink()));
}

}  // namespace
}  // namespace ix::sim
