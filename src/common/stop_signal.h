// The one handler for the signals that stop a command: SIGINT (Ctrl-C), SIGTERM (`kill`, GNU
// `timeout`, Slurm) and SIGHUP (a lost terminal or ssh session).
//
// While a StopSignals scope lives, the first of these signals only sets a flag: the command stops
// its work, writes what it measured and exits with 128 + the signal. GNU `timeout` sends SIGTERM
// to the child and again to its process group, and people press Ctrl-C twice, so the second
// signal does not kill either; the third restores the default action and re-raises (the way out
// of a command that stopped responding). One scope at a time per process.
#pragma once

#include <array>
#include <atomic>
#include <csignal>

namespace ix {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Set by the first signal; for loops that poll (the request engine's `interrupt`).
  static const std::atomic<bool>& flag();
  // The first signal received, or 0.
  static int signal();
  static bool stopped() { return signal() != 0; }
  // Blocks until the first stop signal and returns it (a server's main thread: `sim serve`).
  static int wait();

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

}  // namespace ix
