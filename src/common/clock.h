// Monotonic time source behind a small interface so tests (and the simulator's virtual mode) can
// drive time by hand. Times are nanoseconds on an arbitrary monotonic epoch; never wall time.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace ix {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic, non-decreasing nanoseconds. Thread-safe.
  virtual int64_t now_ns() const = 0;
};

// std::chrono::steady_clock. Stateless; use steady_clock_instance() to share one.
class SteadyClock final : public Clock {
 public:
  int64_t now_ns() const override;
};
const Clock& steady_clock_instance();

// A clock that only moves when told to. Thread-safe (atomic), starts at `start_ns`.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ns = 0) : now_ns_(start_ns) {}
  int64_t now_ns() const override { return now_ns_.load(std::memory_order_acquire); }
  void advance_ns(int64_t delta_ns) { now_ns_.fetch_add(delta_ns, std::memory_order_acq_rel); }
  // Moves to `t_ns`; moving backwards is a programmer error and is ignored (time stays monotonic).
  void set_ns(int64_t t_ns);

 private:
  std::atomic<int64_t> now_ns_;
};

// The wall-clock time now in UTC, formatted with strftime's `format` ("%Y-%m-%dT%H:%M:%SZ" for
// ISO 8601, "%Y%m%d-%H%M%S" for names). The one wall-clock reading outside of result timestamps.
std::string utc_now_text(const char* format);

}  // namespace ix
