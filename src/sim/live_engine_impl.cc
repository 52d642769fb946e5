// The wall-clock driver: the engine core on its own thread, stepping when steps are due.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/rng.h"
#include "sim/engine_config.h"
#include "sim/engine_core.h"
#include "sim/kv_cache.h"

namespace ix::sim {

namespace {

// Longest sleep between looks at the clock: bounds the delay when the clock is not the steady
// clock the condition variable waits on (tests pass a FakeClock).
constexpr int64_t kMaxWaitNs = 5'000'000;

class LiveEngineImpl final : public LiveEngine {
 public:
  LiveEngineImpl(std::unique_ptr<EngineCore> core, const Clock& clock)
      : core_(std::move(core)),
        clock_(clock),
        block_size_(core_->engine().config.block_size),
        eos_rng_(Rng::stream(core_->engine().config.seed, "sim.natural_eos")) {
    core_->run_until(clock_.now_ns(), {});
    // The engine thread takes no process signals: `sim serve` is built before the server blocks
    // SIGINT/SIGTERM for its sigwait, and a SIGTERM the kernel handed to this thread ended the
    // process (exit 143) instead of stopping it. A thread starts with its creator's mask.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    thread_ = std::thread([this] { loop(); });
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }

  ~LiveEngineImpl() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  Result<uint64_t> submit(GenerationRequest request, Sink sink) override {
    CoreRequest core_request;
    core_request.prompt_tokens = int32_t(request.prompt_token_ids.size());
    core_request.block_hashes = prompt_block_hashes(request.prompt_token_ids, block_size_);
    core_request.max_tokens = request.max_tokens;
    core_request.session_id = request.session_id;
    if (request.min_tokens < 0 || request.min_tokens > request.max_tokens || request.natural_max_tokens < 0) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("min_tokens must be in [0, max_tokens={}] and natural_max_tokens >= 0, got {} and {}",
                              request.max_tokens, request.min_tokens, request.natural_max_tokens));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (request.ignore_eos || request.max_tokens <= 1) {
      core_request.output_tokens = request.max_tokens;
    } else {
      // A natural end of sequence somewhere in the second half of the cap (seeded), never before
      // min_tokens (vLLM masks EOS until then).
      const int32_t cap = request.natural_max_tokens > 0 ? std::min(request.natural_max_tokens, request.max_tokens)
                                                         : request.max_tokens;
      const int32_t low = std::max({1, cap / 2, request.min_tokens});
      const int32_t high = std::max(cap, low);
      core_request.output_tokens = int32_t(eos_rng_.uniform_int(low, high));
    }
    core_request.arrival_ns = std::max(clock_.now_ns(), core_->now_ns());
    auto id = core_->submit(std::move(core_request));
    if (!id) return id;
    sinks_.emplace(*id, std::move(sink));
    wake_.notify_all();
    return id;
  }

  void cancel(uint64_t request_id) override {
    std::lock_guard<std::mutex> lock(mutex_);
    core_->cancel(request_id);
    sinks_.erase(request_id);
  }

  EngineMetrics metrics() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return core_->metrics();
  }

  int32_t max_model_len() const override { return core_->engine().max_model_len; }

 private:
  void loop() {
    std::vector<std::pair<Sink, TokenEvent>> ready;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      ready.clear();
      core_->run_until(clock_.now_ns(), [&](const TokenEvent& event) {
        auto it = sinks_.find(event.request_id);
        if (it == sinks_.end()) return;
        ready.emplace_back(it->second, event);
        if (event.finish != FinishReason::kNone) sinks_.erase(it);
      });
      if (!ready.empty()) {
        // Sinks run without the lock so they may call submit/cancel.
        lock.unlock();
        for (const auto& [sink, event] : ready) sink(event);
        lock.lock();
        continue;
      }
      const int64_t next = core_->next_event_ns();
      const int64_t wait_ns = next == kNever ? kMaxWaitNs : std::clamp<int64_t>(next - clock_.now_ns(), 0, kMaxWaitNs);
      if (wait_ns > 0) wake_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
    }
  }

  std::unique_ptr<EngineCore> core_;
  const Clock& clock_;
  int32_t block_size_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::unordered_map<uint64_t, Sink> sinks_;
  Rng eos_rng_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<LiveEngine>> make_live_engine(const EngineConfig& config, const Clock& clock) {
  if (auto ok = validate(config); !ok) return fail(ok.error());
  auto resolved = resolve_engine(config);
  if (!resolved) return fail(resolved.error());
  auto core = EngineCore::create(*resolved);
  if (!core) return fail(core.error());
  return std::unique_ptr<LiveEngine>(std::make_unique<LiveEngineImpl>(std::move(*core), clock));
}

}  // namespace ix::sim
