#include "common/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "common/sanitize.h"

namespace ix::files {
namespace {

namespace fs = std::filesystem;

std::string reason(int error) {
  return std::strerror(error);
}

std::string shown(const fs::path& path) {
  return "'" + printable(path.string()) + "'";
}

Error io_error(std::string_view action, const fs::path& path, int error) {
  return Error(ErrorCode::kIo, fmt::format("cannot {} {}: {}", action, shown(path), reason(error)));
}

// Closes on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  // close(2)'s own result: a delayed write error (NFS, quota) shows up here.
  int release_and_close() {
    const int f = fd;
    fd = -1;
    return ::close(f);
  }
};

// The descriptor a path names without opening anything: "-", /dev/stdout, /dev/stderr,
// /dev/fd/N, /proc/self/fd/N.
std::optional<int> named_descriptor(const fs::path& path) {
  const std::string text = path.string();
  if (text == kStdioName || text == "/dev/stdout") return 1;
  if (text == "/dev/stderr") return 2;
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!text.starts_with(prefix)) continue;
    int fd = -1;
    const char* first = text.data() + prefix.size();
    const char* last = text.data() + text.size();
    auto [end, ec] = std::from_chars(first, last, fd);
    if (ec == std::errc() && end == last && first != last && fd >= 0) return fd;
  }
  return std::nullopt;
}

// Writes all of `content` to `fd`, retrying short writes and EINTR; returns errno or 0.
int write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

Result<void> write_descriptor(int fd, const fs::path& path, std::string_view content) {
  // What stdio holds goes first, so the two never interleave.
  std::fflush(stdout);
  std::fflush(stderr);
  if (const int error = write_all(fd, content); error != 0) return std::unexpected(io_error("write", path, error));
  return {};
}

// What a path ends at once symlinks are followed.
enum class Kind { kMissing, kRegular, kDirectory, kStream, kProcLink };
struct Target {
  fs::path real;  // the final target (beside which a .tmp goes)
  Kind kind = Kind::kMissing;
  mode_t mode = 0;
};

// Follows symlinks hop by hop (a dangling link's target is where a new file goes). Links into
// /proc (/proc/<pid>/fd/N) are opened as they are: their "targets" are not paths.
Result<Target> resolve(const fs::path& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      if (errno == ENOENT) return Target{p, Kind::kMissing};
      return std::unexpected(io_error("look up", p, errno));
    }
    if (!S_ISLNK(st.st_mode)) {
      const Kind kind = S_ISREG(st.st_mode) ? Kind::kRegular : S_ISDIR(st.st_mode) ? Kind::kDirectory : Kind::kStream;
      return Target{p, kind, st.st_mode};
    }
    std::error_code ec;
    const fs::path link = fs::read_symlink(p, ec);
    if (ec) return fail(ErrorCode::kIo, fmt::format("cannot read the link {}: {}", shown(p), ec.message()));
    p = link.is_absolute() ? link : p.parent_path() / link;
    if (p.string().starts_with("/proc/")) return Target{p, Kind::kProcLink};
  }
  return std::unexpected(io_error("resolve", path, ELOOP));
}

Error directory_error(const fs::path& path) {
  return Error(ErrorCode::kInvalidArgument, fmt::format("{} is a directory; name a file", shown(path)));
}

// Opens a FIFO for writing once it has a reader (O_NONBLOCK fails with ENXIO until then), for at
// most kFifoReaderWaitMs; any other stream opens at once.
Result<int> open_stream(const fs::path& path, bool fifo) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kFifoReaderWaitMs);
  while (true) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
    if (fd >= 0) {
      if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    if (!(fifo && errno == ENXIO) || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (fifo && errno == ENXIO) {
    return fail(ErrorCode::kIo, fmt::format("cannot write the FIFO {}: no reader opened it within {} s", shown(path),
                                            kFifoReaderWaitMs / 1000));
  }
  return std::unexpected(io_error("open for writing", path, errno));
}

Result<void> write_stream(const Target& target, std::string_view content) {
  auto fd = open_stream(target.real, S_ISFIFO(target.mode));
  if (!fd) return std::unexpected(fd.error());
  Fd owned(*fd);
  if (const int error = write_all(owned.fd, content); error != 0)
    return std::unexpected(io_error("write", target.real, error));
  if (owned.release_and_close() != 0 && errno != EINTR) return std::unexpected(io_error("write", target.real, errno));
  return {};
}

// Writes and syncs `content` into a new file `tmp`; removes it on failure. The error names
// `shown_as` (the file the user asked for).
Result<void> write_new_file(const fs::path& tmp, const fs::path& shown_as, std::string_view content, mode_t mode) {
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.fd < 0) return std::unexpected(io_error("create", tmp, errno));
  int error = write_all(fd.fd, content);
  if (error == 0 && mode != 0 && ::fchmod(fd.fd, mode & 07777) != 0) error = errno;
  if (error == 0 && ::fsync(fd.fd) != 0) error = errno;
  if (fd.release_and_close() != 0 && error == 0) error = errno;
  if (error == 0) return {};
  ::unlink(tmp.c_str());
  return std::unexpected(io_error("write", shown_as, error));
}

Result<void> write_atomically(const Target& target, std::string_view content) {
  fs::path tmp = target.real;
  tmp += ".tmp";
  const mode_t mode = target.kind == Kind::kRegular ? target.mode : 0;
  if (auto ok = write_new_file(tmp, target.real, content, mode); !ok) return ok;
  if (::rename(tmp.c_str(), target.real.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return fail(ErrorCode::kIo,
                fmt::format("cannot rename {} to {}: {}", shown(tmp), shown(target.real), reason(error)));
  }
  return {};
}

Result<void> write_target(const Target& target, std::string_view content) {
  switch (target.kind) {
    case Kind::kDirectory: return std::unexpected(directory_error(target.real));
    case Kind::kStream:
    case Kind::kProcLink: return write_stream(target, content);
    case Kind::kMissing:
    case Kind::kRegular: break;
  }
  return write_atomically(target, content);
}

}  // namespace

bool is_stdout(const fs::path& path) {
  return named_descriptor(path) == 1;
}

Result<void> write_file(const fs::path& path, std::string_view content) {
  if (auto fd = named_descriptor(path)) return write_descriptor(*fd, path, content);
  auto target = resolve(path);
  if (!target) return std::unexpected(target.error());
  return write_target(*target, content);
}

Result<void> append_line(const fs::path& path, std::string_view content) {
  const std::string line = std::string(content) + "\n";
  if (auto fd = named_descriptor(path)) return write_descriptor(*fd, path, line);
  auto target = resolve(path);
  if (!target) return std::unexpected(target.error());
  if (target->kind != Kind::kRegular) return write_target(*target, target->kind == Kind::kMissing ? content : line);
  auto text = read_text_file(target->real, kMaxResultFileBytes, "a result file to append to");
  if (!text) return std::unexpected(text.error());
  if (!text->empty()) *text += '\n';
  *text += content;
  return write_atomically(*target, *text);
}

Result<void> check_directory_writable(const fs::path& dir) {
  const fs::path probe = (dir.empty() ? fs::path(".") : dir) / fmt::format(".ixbench-write-probe-{}", ::getpid());
  Fd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (fd.fd < 0) {
    return fail(ErrorCode::kIo,
                fmt::format("cannot create files in {}: {}", shown(dir.empty() ? "." : dir), reason(errno)));
  }
  const std::string bytes(kWriteProbeBytes, '\0');
  int error = write_all(fd.fd, bytes);
  if (error == 0 && ::fsync(fd.fd) != 0) error = errno;
  if (fd.release_and_close() != 0 && error == 0) error = errno;
  ::unlink(probe.c_str());
  if (error == 0) return {};
  return fail(ErrorCode::kIo, fmt::format("cannot write {} KiB to a test file in {}: {}", kWriteProbeBytes / 1024,
                                          shown(dir.empty() ? "." : dir), reason(error)));
}

Result<void> check_writable(const fs::path& path) {
  if (auto fd = named_descriptor(path)) {
    if (::fcntl(*fd, F_GETFL) < 0) return std::unexpected(io_error("write", path, errno));
    return {};
  }
  auto target = resolve(path);
  if (!target) return std::unexpected(target.error());
  switch (target->kind) {
    case Kind::kDirectory: return std::unexpected(directory_error(path));
    case Kind::kStream:
    case Kind::kProcLink:
      if (::access(target->real.c_str(), W_OK) != 0) return std::unexpected(io_error("write", target->real, errno));
      return {};
    case Kind::kMissing:
    case Kind::kRegular: break;
  }
  return check_directory_writable(target->real.parent_path());
}

Result<AppendFile> AppendFile::create(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return std::unexpected(directory_error(path));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return std::unexpected(io_error("create", path, errno));
  return AppendFile(path, fd);
}

AppendFile::AppendFile(AppendFile&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

AppendFile& AppendFile::operator=(AppendFile&& other) noexcept {
  if (this != &other) {
    (void)close();
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

AppendFile::~AppendFile() {
  (void)close();
}

Result<void> AppendFile::append(std::string_view content) {
  if (fd_ < 0) return fail(ErrorCode::kInternal, fmt::format("append to {} after it was closed", shown(path_)));
  if (const int error = write_all(fd_, content); error != 0) return std::unexpected(io_error("write", path_, error));
  return {};
}

Result<void> AppendFile::close() {
  if (fd_ < 0) return {};
  Fd fd(fd_);
  fd_ = -1;
  if (::fsync(fd.fd) != 0 && errno != EINVAL) return std::unexpected(io_error("flush", path_, errno));
  if (fd.release_and_close() != 0) return std::unexpected(io_error("close", path_, errno));
  return {};
}

fs::path temp_fallback_path(const fs::path& intended) {
  std::error_code ec;
  const auto dir = fs::temp_directory_path(ec);
  if (ec) return {};
  std::string name = intended.filename().string();
  if (name.empty() || named_descriptor(intended)) name = "result.json";
  return dir / fmt::format("ixbench-{}-{}", ::getpid(), name);
}

}  // namespace ix::files
