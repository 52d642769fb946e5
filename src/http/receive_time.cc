#include "http/receive_time.h"

#include <time.h>

#include <algorithm>
#include <cstring>

#include "common/clock.h"

namespace ix::http {

bool enable_receive_timestamps(int fd) {
  const int one = 1;
  return ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) == 0;
}

std::optional<int64_t> kernel_receive_ns(msghdr& msg, int64_t read_ns) {
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec kernel{};
    std::memcpy(&kernel, CMSG_DATA(cm), sizeof(kernel));
    timespec real_now{};
    clock_gettime(CLOCK_REALTIME, &real_now);
    const int64_t mono_now = steady_clock_instance().now_ns();
    const int64_t real_now_ns = static_cast<int64_t>(real_now.tv_sec) * 1'000'000'000 + real_now.tv_nsec;
    const int64_t kernel_ns = static_cast<int64_t>(kernel.tv_sec) * 1'000'000'000 + kernel.tv_nsec;
    return std::min(read_ns, kernel_ns - (real_now_ns - mono_now));
  }
  return std::nullopt;
}

}  // namespace ix::http
