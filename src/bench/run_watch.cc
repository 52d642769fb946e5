#include "bench/run_watch.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <thread>

#include "bench/serve_runner.h"

namespace ix::bench {

void watch_run(http::ClientLoop& loop, const std::function<bool()>& finished, std::function<void(std::string)> stop,
               const RunWatch& watch) {
  auto last_progress = std::chrono::steady_clock::now();
  bool stop_sent = false;
  while (!finished()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::optional<std::string> reason;
    if (watch.interrupt && watch.interrupt->load())
      reason = "interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP) before the run completed";
    if (!process_alive(watch.server_pid))
      reason = fmt::format("server process {} exited during the run", watch.server_pid);
    if (reason && !stop_sent) {
      stop_sent = true;
      loop.post([stop, r = *reason] { stop(r); });
    }
    const auto now = std::chrono::steady_clock::now();
    if (watch.on_progress && now - last_progress >= std::chrono::milliseconds(watch.progress_interval_ms)) {
      last_progress = now;
      watch.on_progress();
    }
  }
}

}  // namespace ix::bench
