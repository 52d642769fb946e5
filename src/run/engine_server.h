// A job's engine server: started from its rendered recipe, ready once /health answers 200, watched
// while the benchmark runs, stopped at the end (run/process.h: SIGTERM, then SIGKILL, whole group).
#pragma once

#include <atomic>
#include <filesystem>
#include <optional>

#include "common/error.h"
#include "run/process.h"
#include "run/recipe.h"

namespace ix::run {

class EngineServer {
 public:
  // Starts the server (stdout and stderr to `log`) and waits until GET health_url answers 200.
  // Fails — with the last lines of the log — when the server exits first, when `timeout_s` passes
  // (the server is then stopped), or when `stop` is set (an interrupted run).
  static Result<EngineServer> start(const ServerLaunch& launch, const std::filesystem::path& log, double timeout_s,
                                    const std::atomic<bool>& stop);

  pid_t pid() const { return child_.pid(); }
  // The server's exit once it has died (a dead server fails the job it serves).
  std::optional<ExitStatus> exited() { return child_.poll(); }
  // What the failure message of a dead server says: its exit and the end of its log.
  std::string death_report();
  ExitStatus stop(double grace_s = 30) { return child_.stop(grace_s); }

 private:
  EngineServer(ChildProcess child, std::filesystem::path log) : child_(std::move(child)), log_(std::move(log)) {}
  ChildProcess child_;
  std::filesystem::path log_;
};

}  // namespace ix::run
