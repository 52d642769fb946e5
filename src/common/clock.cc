#include "common/clock.h"

#include <chrono>
#include <ctime>

namespace ix {

int64_t SteadyClock::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const Clock& steady_clock_instance() {
  static const SteadyClock clock;
  return clock;
}

void FakeClock::set_ns(int64_t t_ns) {
  int64_t current = now_ns_.load(std::memory_order_acquire);
  while (t_ns > current && !now_ns_.compare_exchange_weak(current, t_ns, std::memory_order_acq_rel)) {
  }
}

std::string utc_now_text(const char* format) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[64];
  size_t size = std::strftime(buffer, sizeof buffer, format, &tm);
  return std::string(buffer, size);
}

}  // namespace ix
