#include "run/engine_server.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "http/client.h"

namespace ix::run {
namespace {

using Clock = std::chrono::steady_clock;

// `url` names the health endpoint itself: its path is the request target.
bool answers_health(http::Url url) {
  std::string target = url.path.empty() ? "/" : url.path;
  url.path.clear();
  auto response = http::fetch(url, "GET", target, {}, {}, 2'000'000'000);
  return response && response->status == 200;
}

std::string log_tail(const std::filesystem::path& log) {
  std::string tail = tail_file(log, 20);
  if (tail.empty()) return fmt::format(" ({} is empty)", log.string());
  return fmt::format("; the last lines of {}:\n{}", log.string(), tail);
}

}  // namespace

Result<EngineServer> EngineServer::start(const ServerLaunch& launch, const std::filesystem::path& log, double timeout_s,
                                         const std::atomic<bool>& stop) {
  auto url = http::Url::parse(launch.health_url);
  if (!url)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("the recipe's health URL '{}': {}", launch.health_url, url.error().message()));
  auto child = ChildProcess::spawn({launch.argv, launch.env, log, {}, {}});
  if (!child) return fail(child.error());
  EngineServer server(std::move(*child), log);
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    if (auto status = server.child_.poll()) {
      return fail(ErrorCode::kUnavailable, fmt::format("the server exited ({}) before {} answered{}",
                                                       status->describe(), launch.health_url, log_tail(log)));
    }
    if (answers_health(*url)) return server;
    if (stop.load()) {
      server.stop(10);
      return fail(ErrorCode::kUnavailable, "interrupted while the server was starting");
    }
    if (Clock::now() >= deadline) {
      server.stop(10);
      return fail(ErrorCode::kTimeout, fmt::format("the server did not answer {} within {:g} s (it was stopped){}",
                                                   launch.health_url, timeout_s, log_tail(log)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

std::string EngineServer::death_report() {
  auto status = child_.poll();
  return fmt::format("the server died ({}){}", status ? status->describe() : "still running", log_tail(log_));
}

}  // namespace ix::run
