#include "serve/prompt_workers.h"

#include <malloc.h>

#include <algorithm>

namespace ix::serve {

PromptWorkers::PromptWorkers(int threads, size_t max_queued_bytes) : max_queued_bytes_(max_queued_bytes) {
  const int count = std::max(threads, 1);
  threads_.reserve(static_cast<size_t>(count));
  for (int index = 0; index < count; ++index) threads_.emplace_back([this] { work(); });
}

PromptWorkers::~PromptWorkers() {
  stop();
}

void PromptWorkers::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
    queued_bytes_ = 0;
  }
  ready_.notify_all();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

bool PromptWorkers::try_submit(size_t bytes, std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    if (!queue_.empty() && queued_bytes_ + bytes > max_queued_bytes_) return false;
    queue_.push_back({bytes, std::move(job)});
    queued_bytes_ += bytes;
  }
  ready_.notify_one();
  return true;
}

size_t PromptWorkers::queued_bytes() const {
  std::lock_guard lock(mutex_);
  return queued_bytes_;
}

void PromptWorkers::work() {
  while (true) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= job.bytes;
    }
    job.run();
    job.run = nullptr;  // what the job held (its body, its prompt) goes before the trim
    if (job.bytes >= kTrimAfterBytes) malloc_trim(0);
  }
}

}  // namespace ix::serve
