// read_text_file() of file_io.h: kind and size first, then a capped read.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/file_io.h"
#include "common/sanitize.h"

namespace ix::files {
namespace {

namespace fs = std::filesystem;

std::string mib(size_t bytes) {
  return bytes % kMiB == 0 ? fmt::format("{} MiB", bytes / kMiB) : fmt::format("{} bytes", bytes);
}

struct Input {
  std::string name;  // as shown in errors
  int fd = -1;
  bool owned = false;
  bool pipe = false;  // a FIFO opened by name: reads wait at most kPipeIdleTimeoutMs
  size_t size = 0;    // a regular file's size, to read it in one allocation
};

Error input_error(ErrorCode code, const Input& in, std::string_view problem) {
  return Error(code, fmt::format("{}: {}", in.name, problem));
}

// stat() first: a missing path, a directory or an oversized regular file is refused before
// anything is opened. A FIFO is opened non-blocking (open(2) would wait for a writer forever).
Result<Input> open_input(const fs::path& path, size_t max_bytes, std::string_view what) {
  Input in{.name = printable(path.string())};
  if (path == kStdioName) return Input{.name = "standard input", .fd = 0};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return fail(input_error(ErrorCode::kNotFound, in,
                              "file does not exist (check the path; a relative one is resolved from the current "
                              "directory)"));
    }
    return fail(input_error(ErrorCode::kIo, in, fmt::format("cannot open: {}", std::strerror(errno))));
  }
  if (S_ISDIR(st.st_mode))
    return fail(input_error(ErrorCode::kInvalidArgument, in, fmt::format("is a directory; expected {}", what)));
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) {
    return fail(
        input_error(ErrorCode::kInvalidArgument, in,
                    fmt::format("{} bytes is larger than {}, the limit for {}", st.st_size, mib(max_bytes), what)));
  }
  in.pipe = S_ISFIFO(st.st_mode);
  if (S_ISREG(st.st_mode)) in.size = static_cast<size_t>(st.st_size);
  in.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (in.pipe ? O_NONBLOCK : 0));
  if (in.fd < 0) return fail(input_error(ErrorCode::kIo, in, fmt::format("cannot open: {}", std::strerror(errno))));
  in.owned = true;
  return in;
}

// For a FIFO: waits until it has data or end of file; false when nothing came in time.
bool wait_readable(const Input& in) {
  if (!in.pipe) return true;
  pollfd poll_fd{.fd = in.fd, .events = POLLIN, .revents = 0};
  int ready = 0;
  do {
    ready = ::poll(&poll_fd, 1, kPipeIdleTimeoutMs);
  } while (ready < 0 && errno == EINTR);
  return ready != 0;
}

Result<std::string> read_capped(const Input& in, size_t max_bytes, std::string_view what) {
  std::string text;
  text.reserve(in.size + 1);
  char chunk[1 << 16];
  while (true) {
    if (!wait_readable(in)) {
      return fail(input_error(ErrorCode::kIo, in,
                              fmt::format("a FIFO that gave no data for {} s (start its writer first, or give a "
                                          "regular file)",
                                          kPipeIdleTimeoutMs / 1000)));
    }
    const ssize_t n = ::read(in.fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(input_error(ErrorCode::kIo, in, fmt::format("read failed: {}", std::strerror(errno))));
    }
    if (n == 0) return text;
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > max_bytes) {
      return fail(
          input_error(ErrorCode::kInvalidArgument, in,
                      fmt::format("larger than {}, the limit for {} (stopped reading there)", mib(max_bytes), what)));
    }
  }
}

}  // namespace

Result<std::string> read_text_file(const fs::path& path, size_t max_bytes, std::string_view what) {
  auto in = open_input(path, max_bytes, what);
  if (!in) return std::unexpected(in.error());
  auto text = read_capped(*in, max_bytes, what);
  if (in->owned) ::close(in->fd);
  return text;
}

Result<std::vector<std::filesystem::path>> files_under(const std::filesystem::path& dir, std::string_view suffix,
                                                       std::string_view prefix) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return fail(ErrorCode::kNotFound, fmt::format("{}: not a directory", dir.string()));
  std::vector<std::filesystem::path> out;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::end(it);
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(suffix) && name.starts_with(prefix) && it->is_regular_file(ec)) out.push_back(it->path());
  }
  if (ec) return fail(ErrorCode::kIo, fmt::format("{}: {}", dir.string(), ec.message()));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ix::files
