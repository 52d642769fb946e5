#include "serve/schedule_engines.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>

namespace ix::serve {

Result<void> check_context_length(int32_t prompt_tokens, int32_t max_tokens, int32_t max_model_len) {
  if (static_cast<int64_t>(prompt_tokens) + max_tokens > max_model_len) {
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens ({} "
                    "in the messages, {} in the completion). Please reduce the length of the messages or "
                    "completion.",
                    max_model_len, static_cast<int64_t>(prompt_tokens) + max_tokens, prompt_tokens, max_tokens));
  }
  return {};
}

FixedScheduleEngine::FixedScheduleEngine(double ttft_ms, double itl_ms, int32_t max_model_len, const Clock& clock,
                                         int64_t tick_ns)
    : ttft_ns_(static_cast<int64_t>(ttft_ms * 1e6)),
      itl_ns_(static_cast<int64_t>(itl_ms * 1e6)),
      tick_ns_(tick_ns),
      max_model_len_(max_model_len),
      clock_(clock) {}

FixedScheduleEngine::~FixedScheduleEngine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<uint64_t> FixedScheduleEngine::submit(sim::GenerationRequest request, Sink sink) {
  auto prompt_tokens = static_cast<int32_t>(request.prompt_token_ids.size());
  if (request.max_tokens < 1) return fail(ErrorCode::kInvalidArgument, "max_tokens must be at least 1");
  if (auto fits = check_context_length(prompt_tokens, request.max_tokens, max_model_len_); !fits) {
    return std::unexpected(fits.error());
  }
  int64_t now = clock_.now_ns();
  std::lock_guard lock(mutex_);
  // A server that only admits never pays for the thread.
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  uint64_t id = next_id_++;
  active_.emplace(id, Active{std::move(sink), now, request.max_tokens, 0, prompt_tokens});
  bool was_empty = first_queue_.empty();
  first_queue_.push_back({now + ttft_ns_, id});
  counters_.prompt_tokens_total += prompt_tokens;
  ++counters_.num_requests_running;
  if (was_empty) wake_.notify_one();
  return id;
}

void FixedScheduleEngine::cancel(uint64_t request_id) {
  std::lock_guard lock(mutex_);
  // Queue entries of a cancelled request are dropped lazily when they come up.
  if (active_.erase(request_id) > 0) --counters_.num_requests_running;
}

Result<FixedScheduleEngine::Schedule> FixedScheduleEngine::admit(const sim::GenerationRequest& request,
                                                                 int64_t arrived_ns) {
  auto prompt_tokens = static_cast<int32_t>(request.prompt_token_ids.size());
  if (request.max_tokens < 1) return fail(ErrorCode::kInvalidArgument, "max_tokens must be at least 1");
  if (auto fits = check_context_length(prompt_tokens, request.max_tokens, max_model_len_); !fits) {
    return std::unexpected(fits.error());
  }
  Schedule schedule;
  // Ids from the upper half never collide with submit()'s.
  schedule.id = admitted_next_id_.fetch_add(1, std::memory_order_relaxed);
  schedule.start_ns = std::min(arrived_ns, clock_.now_ns());
  schedule.first_due_ns = schedule.start_ns + ttft_ns_;
  schedule.itl_ns = itl_ns_;
  schedule.max_tokens = request.max_tokens;
  schedule.prompt_tokens = prompt_tokens;
  admitted_prompt_tokens_.fetch_add(prompt_tokens, std::memory_order_relaxed);
  admitted_running_.fetch_add(1, std::memory_order_relaxed);
  return schedule;
}

void FixedScheduleEngine::count_generated(int32_t tokens) {
  static thread_local const size_t slot = std::hash<std::thread::id>{}(std::this_thread::get_id()) % kSlots;
  admitted_generated_[slot].value.fetch_add(tokens, std::memory_order_relaxed);
}

void FixedScheduleEngine::release(bool completed) {
  admitted_running_.fetch_sub(1, std::memory_order_relaxed);
  if (completed) admitted_success_.fetch_add(1, std::memory_order_relaxed);
}

bool FixedScheduleEngine::delivery_thread_started() const {
  std::lock_guard lock(mutex_);
  return thread_.joinable();
}

sim::EngineMetrics FixedScheduleEngine::metrics() const {
  sim::EngineMetrics metrics;
  {
    std::lock_guard lock(mutex_);
    metrics = counters_;
  }
  metrics.prompt_tokens_total += admitted_prompt_tokens_.load(std::memory_order_relaxed);
  metrics.num_requests_running += admitted_running_.load(std::memory_order_relaxed);
  metrics.request_success_total += admitted_success_.load(std::memory_order_relaxed);
  for (const Slot& slot : admitted_generated_) {
    metrics.generation_tokens_total += slot.value.load(std::memory_order_relaxed);
  }
  return metrics;
}

void FixedScheduleEngine::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const Due* next = nullptr;
    bool from_first = false;
    if (!first_queue_.empty()) {
      next = &first_queue_.front();
      from_first = true;
    }
    if (!decode_queue_.empty() && (next == nullptr || decode_queue_.front().due_ns < next->due_ns)) {
      next = &decode_queue_.front();
      from_first = false;
    }
    if (next == nullptr) {
      wake_.wait(lock);
      continue;
    }
    int64_t now = clock_.now_ns();
    if (next->due_ns > now) {
      // Wake at most once per tick and deliver everything due by then: thousands of streams
      // with their own phases would otherwise cost two thread wake-ups per token.
      int64_t wake_ns = std::max(next->due_ns, last_wake_ns_ + tick_ns_);
      auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(wake_ns));
      wake_.wait_until(lock, deadline);
      if (clock_.now_ns() >= wake_ns) last_wake_ns_ = clock_.now_ns();
      continue;
    }
    Due due = *next;
    if (from_first) {
      first_queue_.pop_front();
    } else {
      decode_queue_.pop_front();
    }
    auto it = active_.find(due.id);
    if (it == active_.end()) continue;  // cancelled
    Active& request = it->second;
    ++request.emitted;
    sim::TokenEvent event;
    event.request_id = due.id;
    event.time_ns = due.due_ns;
    event.new_tokens = 1;
    event.total_output_tokens = request.emitted;
    event.prompt_tokens = request.prompt_tokens;
    event.scheduled_ns = request.submit_ns;  // its schedule starts when it is submitted
    event.previous_ns = request.last_event_ns;
    request.last_event_ns = due.due_ns;
    bool last = request.emitted >= request.max_tokens;
    event.finish = last ? sim::FinishReason::kLength : sim::FinishReason::kNone;
    ++counters_.generation_tokens_total;
    request.sink(event);
    if (last) {
      active_.erase(it);
      --counters_.num_requests_running;
      ++counters_.request_success_total;
    } else {
      // Sorted insertion for free: due + itl is monotone in due, and dues leave in order.
      decode_queue_.push_back({due.due_ns + itl_ns_, due.id});
    }
  }
}

NoDelayEngine::NoDelayEngine(int32_t max_model_len, const Clock& clock)
    : max_model_len_(max_model_len), clock_(clock) {}

Result<uint64_t> NoDelayEngine::submit(sim::GenerationRequest request, Sink sink) {
  auto prompt_tokens = static_cast<int32_t>(request.prompt_token_ids.size());
  if (request.max_tokens < 1) return fail(ErrorCode::kInvalidArgument, "max_tokens must be at least 1");
  if (auto fits = check_context_length(prompt_tokens, request.max_tokens, max_model_len_); !fits) {
    return std::unexpected(fits.error());
  }
  uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  sim::TokenEvent event;
  event.request_id = id;
  event.time_ns = clock_.now_ns();
  event.scheduled_ns = event.time_ns;  // scheduled and finished as it is submitted
  event.new_tokens = 1;
  event.prompt_tokens = prompt_tokens;
  for (int32_t index = 1; index <= request.max_tokens; ++index) {
    event.total_output_tokens = index;
    event.previous_ns = index == 1 ? 0 : event.time_ns;
    event.finish = index == request.max_tokens ? sim::FinishReason::kLength : sim::FinishReason::kNone;
    sink(event);
  }
  prompt_tokens_.fetch_add(prompt_tokens, std::memory_order_relaxed);
  generation_tokens_.fetch_add(request.max_tokens, std::memory_order_relaxed);
  requests_.fetch_add(1, std::memory_order_relaxed);
  return id;
}

void NoDelayEngine::cancel(uint64_t) {}

sim::EngineMetrics NoDelayEngine::metrics() const {
  sim::EngineMetrics metrics;
  metrics.prompt_tokens_total = prompt_tokens_.load(std::memory_order_relaxed);
  metrics.generation_tokens_total = generation_tokens_.load(std::memory_order_relaxed);
  metrics.request_success_total = requests_.load(std::memory_order_relaxed);
  return metrics;
}

}  // namespace ix::serve
