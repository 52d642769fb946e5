// The threads that parse and tokenize big prompts off the event loops.
//
// Tokenizing is CPU work proportional to the prompt (about 1.4 us per byte for text without
// spaces with a real tokenizer): on a loop thread a 4 MB prompt froze every connection of that
// loop for seconds. The server hands such requests to these workers and answers when they are
// done (http::Responder). The queue is bounded by the bytes waiting: a job that would make it hold
// more than `max_queued_bytes` is refused (the caller answers 503), except when nothing is
// waiting, so one request of any admitted size always gets in.
//
// After a job of at least kTrimAfterBytes the worker returns freed heap to the OS (malloc_trim):
// glibc keeps what a big tokenization freed, which left ~600 MB resident after a few prompts.
//
// Thread-safety: try_submit(), queued_bytes() from any thread. stop() (and the destructor) drops
// the jobs not started and joins the threads: running jobs finish first.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ix::serve {

class PromptWorkers {
 public:
  static constexpr size_t kTrimAfterBytes = 1024 * 1024;

  PromptWorkers(int threads, size_t max_queued_bytes);
  ~PromptWorkers();  // stop()
  PromptWorkers(const PromptWorkers&) = delete;
  PromptWorkers& operator=(const PromptWorkers&) = delete;

  // Queues `job`, which weighs `bytes` (its request body). False, and `job` dropped, when the
  // queue is not empty and would then hold more than max_queued_bytes.
  bool try_submit(size_t bytes, std::function<void()> job);
  // Bytes of the jobs waiting for a worker (not those running).
  size_t queued_bytes() const;
  size_t max_queued_bytes() const { return max_queued_bytes_; }
  int threads() const { return static_cast<int>(threads_.size()); }
  // Refuses new jobs, drops the waiting ones, joins the threads. Idempotent; not from a worker.
  void stop();

 private:
  struct Job {
    size_t bytes = 0;
    std::function<void()> run;
  };
  void work();

  const size_t max_queued_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> queue_;
  size_t queued_bytes_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ix::serve
