// Socket reads with the kernel's receive timestamp of the bytes (SO_TIMESTAMPNS) on the steady
// clock: the client stamps SSE events with it and the server anchors `sim serve --fixed-*`
// schedules on it, so a busy event loop delays neither.
//
// Thread-safety: free functions without state.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace ix::http {

// Asks the kernel to record when each segment arrived on `fd`; false when it refuses.
bool enable_receive_timestamps(int fd);

struct TimedRead {
  ssize_t bytes = 0;    // recvmsg()'s result: > 0 bytes read, 0 end of stream, -1 failed (`error`)
  int error = 0;        // errno when bytes < 0 (EAGAIN: nothing to read; EINTR: retry)
  int64_t read_ns = 0;  // steady-clock time right after the call
  // When the bytes reached the socket: the kernel's timestamp (CLOCK_REALTIME) mapped onto the
  // steady clock (CLOCK_MONOTONIC, std::chrono::steady_clock) with the clocks' offset read now,
  // never later than read_ns. nullopt when the kernel recorded none (timestamps off, or bytes
  // queued before they were turned on). With several segments in one read: the last one's.
  std::optional<int64_t> arrived_ns;
};

// One non-blocking recvmsg() of at most `size` bytes into `data`.
TimedRead receive_timed(int fd, char* data, size_t size);

}  // namespace ix::http
