// Kernel receive timestamps of socket bytes (SO_TIMESTAMPNS), on the steady clock: the client
// stamps SSE events with them and the server anchors `sim serve --fixed-*` schedules on them, so
// a busy event loop delays neither.
//
// Thread-safety: free functions without state.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>

namespace ix::http {

// Asks the kernel to record when each segment arrived on `fd`; false when it refuses.
bool enable_receive_timestamps(int fd);

// The receive time the kernel recorded for the bytes of `msg` (an SCM_TIMESTAMPNS control message,
// CLOCK_REALTIME) mapped onto the steady clock (CLOCK_MONOTONIC, std::chrono::steady_clock) with
// the offset between the two clocks read now; never later than `read_ns`, the steady time the
// bytes were read. nullopt when `msg` carries no timestamp (timestamps off, or bytes queued
// before they were turned on).
std::optional<int64_t> kernel_receive_ns(msghdr& msg, int64_t read_ns);

}  // namespace ix::http
