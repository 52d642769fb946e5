// The one module through which ixbench reads and writes files.
//
// Writing (results, calibrations, CSVs):
//   - "-" means standard output; /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N write
//     to that open descriptor directly (at its current offset, like a shell redirection).
//   - A symlink is followed to its final target: the target is updated, the link is kept.
//   - A regular file (or a new one) is written atomically: `<target>.tmp` beside the real target,
//     flushed to disk, then renamed over it, so a crash or a full disk never leaves half a file;
//     the .tmp is removed on every failure.
//   - A FIFO, a device or a socket is written in place (streamed, never replaced). A FIFO must get
//     a reader within kFifoReaderWaitMs, else the write fails (and the caller keeps the data).
// Reading (configs, rows, tokenizers, catalogs, results): read_text_file() checks the kind and
// the size before reading and caps what it reads, so /dev/zero or a huge file is refused
// quickly, and a FIFO without a writer is refused after kPipeIdleTimeoutMs instead of hanging.
// Every error names the path and the OS's reason (strerror).
//
// Thread-safety: plain functions; concurrent writes to one path race like any two writers.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::files {

inline constexpr size_t kMiB = size_t{1} << 20;
// Caps on what one read takes, by kind of input (stated in the errors).
inline constexpr size_t kMaxConfigFileBytes = 64 * kMiB;      // YAML configs, sweep rows, catalogs, CSVs, templates
inline constexpr size_t kMaxTokenizerFileBytes = 512 * kMiB;  // tokenizer.json (real ones are 10-30 MB)
inline constexpr size_t kMaxResultFileBytes = 512 * kMiB;     // result JSON / JSONL files (report, --append-result)
inline constexpr size_t kMaxTextInputBytes = 512 * kMiB;      // text to tokenize (`tokenize` reads stdin)
// A FIFO given as an input is refused when no data arrives for this long (no writer attached).
inline constexpr int kPipeIdleTimeoutMs = 5000;
// A FIFO given as an output must have a reader within this long.
inline constexpr int kFifoReaderWaitMs = 10000;
// check_writable() writes this much (and syncs it) to notice a full disk before a long run.
inline constexpr size_t kWriteProbeBytes = 8192;

// The name that means standard output (and, for read_text_file, standard input).
inline constexpr std::string_view kStdioName = "-";

// Whether `path` names standard output: "-", /dev/stdout, /dev/fd/1 or /proc/self/fd/1.
bool is_stdout(const std::filesystem::path& path);

// Writes `content` to `path` as described above. Errors: kIo (with the reason), kInvalidArgument
// (a directory).
Result<void> write_file(const std::filesystem::path& path, std::string_view content);

// Appends `content` as one line: to a regular file (created when missing) after a newline when
// the file is not empty (vLLM's --append-result layout), rewriting the whole file atomically so a
// failed write never damages the lines already there; to a stream, `content` and a newline.
Result<void> append_line(const std::filesystem::path& path, std::string_view content);

// A file written as it grows (a log of records that arrive over a long run): created (or
// truncated) on open, each append written through to the OS at once, never replaced, so what was
// appended before a failure stays in the file. Errors name the path and the OS's reason. Not for
// standard output or streams: a regular file only. Move-only; the destructor closes.
class AppendFile {
 public:
  static Result<AppendFile> create(const std::filesystem::path& path);
  AppendFile(AppendFile&& other) noexcept;
  AppendFile& operator=(AppendFile&& other) noexcept;
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  ~AppendFile();

  Result<void> append(std::string_view content);
  // Flushes to disk (fsync) and closes; a delayed write error shows up here. Idempotent.
  Result<void> close();
  const std::filesystem::path& path() const { return path_; }

 private:
  AppendFile(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::filesystem::path path_;
  int fd_ = -1;
};

// Whether write_file(path, ...) can succeed, for commands that write only after a long
// computation: not a directory; for a file, its directory takes a kWriteProbeBytes file (written,
// synced and removed); for a stream, it is writable.
Result<void> check_writable(const std::filesystem::path& path);
// The probe of check_writable() for a directory the file name of which is not known yet.
Result<void> check_directory_writable(const std::filesystem::path& dir);

// Where a file meant for `intended` goes when that cannot be written, so measured or fitted data
// is kept: <temporary directory>/ixbench-<pid>-<file name>; empty when there is no temporary
// directory.
std::filesystem::path temp_fallback_path(const std::filesystem::path& intended);

// The whole of `path`, at most `max_bytes`: refuses a directory, a regular file larger than the
// cap (by its size, before reading), and a stream that gives more (stopping at the cap). "-" reads
// standard input. `what` names the input in errors ("a master config YAML file").
// Errors: kNotFound (missing), kInvalidArgument (directory, too large), kIo (open/read, timeout).
Result<std::string> read_text_file(const std::filesystem::path& path, size_t max_bytes, std::string_view what);

// The regular files under `dir` (recursively) whose name ends in `suffix` and starts with
// `prefix`, in path order. Errors: kNotFound (not a directory), kIo (a directory that cannot be read).
Result<std::vector<std::filesystem::path>> files_under(const std::filesystem::path& dir, std::string_view suffix,
                                                       std::string_view prefix = {});

}  // namespace ix::files
