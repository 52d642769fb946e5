// Watching a runner from the thread that started it: the runner's client loop runs on a thread of
// its own; the starting thread polls until the runner says it is finished, asks it to stop (once)
// when a stop signal arrives or the watched server process exits, and reports progress at an
// interval. Shared by the replay and eval runners.
//
// Thread-safety: watch_run() runs on the calling thread; `stop` is posted to `loop` and runs on
// the loop's thread; `finished` and `on_progress` must be safe to call from the calling thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <string>

#include "http/client.h"

namespace ix::bench {

struct RunWatch {
  const std::atomic<bool>* interrupt = nullptr;  // the stop-signal flag; null = none
  pid_t server_pid = 0;                          // 0 = do not watch
  int progress_interval_ms = 1000;
  std::function<void()> on_progress;  // null = no progress reports
};

// Returns when finished() is true. `stop(reason)` gets "interrupted by a signal (...) before the
// run completed" or "server process <pid> exited during the run".
void watch_run(http::ClientLoop& loop, const std::function<bool()>& finished, std::function<void(std::string)> stop,
               const RunWatch& watch);

// watch_run() for a runner engine (loop(), finished(), stop(reason), progress()) and its options
// (interrupt, server_pid, progress_interval_ms, on_progress(progress)).
template <typename Engine, typename Options>
void watch_engine(Engine& engine, const Options& o) {
  RunWatch watch{.interrupt = o.interrupt, .server_pid = o.server_pid, .progress_interval_ms = o.progress_interval_ms};
  if (o.on_progress) watch.on_progress = [&engine, &o] { o.on_progress(engine.progress()); };
  watch_run(
      engine.loop(), [&engine] { return engine.finished(); },
      [&engine](std::string reason) { engine.stop(std::move(reason)); }, watch);
}

}  // namespace ix::bench
