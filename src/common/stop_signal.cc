#include "common/stop_signal.h"

#include <cassert>
#include <chrono>
#include <thread>

namespace ix {
namespace {

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_first_signal{0};
std::atomic<int> g_signal_count{0};
std::atomic<bool> g_scope_active{false};

void on_stop_signal(int sig) {
  int expected = 0;
  g_first_signal.compare_exchange_strong(expected, sig);
  g_stop_requested.store(true);
  if (g_signal_count.fetch_add(1) + 1 >= 3) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
}

}  // namespace

StopSignals::StopSignals() {
  [[maybe_unused]] const bool was_active = g_scope_active.exchange(true);
  assert(!was_active && "one StopSignals scope at a time");
  g_stop_requested.store(false);
  g_first_signal.store(0);
  g_signal_count.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &sa, &old_[i]);
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
  g_scope_active.store(false);
}

const std::atomic<bool>& StopSignals::flag() {
  return g_stop_requested;
}

int StopSignals::signal() {
  return g_first_signal.load();
}

int StopSignals::wait() {
  // The handler only sets flags (async-signal-safe); a short poll notices them within 20 ms.
  while (!stopped()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return signal();
}

}  // namespace ix
