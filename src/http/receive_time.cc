#include "http/receive_time.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/clock.h"

namespace ix::http {

bool enable_receive_timestamps(int fd) {
  const int one = 1;
  return ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) == 0;
}

TimedRead receive_timed(int fd, char* data, size_t size) {
  iovec iov{data, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  TimedRead read;
  read.bytes = ::recvmsg(fd, &msg, MSG_DONTWAIT);
  read.error = read.bytes < 0 ? errno : 0;
  read.read_ns = steady_clock_instance().now_ns();
  if (read.bytes <= 0) return read;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec kernel{};
    std::memcpy(&kernel, CMSG_DATA(cm), sizeof(kernel));
    // The clocks' offset from one reading of each, taken back to back (read_ns was just taken).
    timespec real_now{};
    clock_gettime(CLOCK_REALTIME, &real_now);
    const int64_t real_now_ns = static_cast<int64_t>(real_now.tv_sec) * 1'000'000'000 + real_now.tv_nsec;
    const int64_t kernel_ns = static_cast<int64_t>(kernel.tv_sec) * 1'000'000'000 + kernel.tv_nsec;
    read.arrived_ns = std::min(read.read_ns, kernel_ns - (real_now_ns - read.read_ns));
    break;
  }
  return read;
}

}  // namespace ix::http
