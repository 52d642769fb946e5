#include "common/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>

extern char** environ;

namespace ix {

namespace {

using Clock = std::chrono::steady_clock;

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// This process's environment with `overrides` set on top, as "NAME=value" strings.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::set<std::string, std::less<>> replaced;
  for (const auto& [name, value] : overrides) replaced.insert(name);
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (!replaced.contains(text.substr(0, text.find('=')))) entries.emplace_back(text);
  }
  for (const auto& [name, value] : overrides) entries.push_back(name + "=" + value);
  return entries;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& text : strings) out.push_back(text.data());
  out.push_back(nullptr);
  return out;
}

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() = default;
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    if (read_end >= 0) ::close(read_end);
    if (write_end >= 0) ::close(write_end);
  }
};

// Reads stdout and stderr until both close or the deadline passes; true when it passed.
bool drain(Pipe& out_pipe, Pipe& err_pipe, SubprocessResult& result, Clock::time_point deadline, size_t max_bytes) {
  char buffer[65536];
  while (out_pipe.read_end >= 0 || err_pipe.read_end >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return true;
    pollfd fds[2] = {{out_pipe.read_end, POLLIN, 0}, {err_pipe.read_end, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left)) < 0) continue;  // EINTR: the loop checks the deadline
    for (int index = 0; index < 2; ++index) {
      if (fds[index].fd < 0 || (fds[index].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fds[index].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      Pipe& pipe = index == 0 ? out_pipe : err_pipe;
      if (n <= 0) {
        ::close(pipe.read_end);
        pipe.read_end = -1;
        continue;
      }
      std::string& text = index == 0 ? result.out : result.err;
      text.append(buffer, std::min(static_cast<size_t>(n), max_bytes - std::min(max_bytes, text.size())));
    }
  }
  return false;
}

}  // namespace

std::string SubprocessResult::describe_end() const {
  if (timed_out) return "timed out and was killed";
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, ::strsignal(signal));
  return fmt::format("exit status {}", exit_code);
}

std::string find_program(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) return is_executable_file(program) ? program : "";
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    if (is_executable_file(candidate)) return candidate;
    if (colon == std::string_view::npos) return "";
    dirs.remove_prefix(colon + 1);
  }
}

Result<SubprocessResult> run_subprocess(const std::vector<std::string>& argv, const SubprocessOptions& options) {
  if (argv.empty()) return fail(ErrorCode::kInternal, "run_subprocess: empty argv");
  const std::string program = find_program(argv[0]);
  if (program.empty()) {
    return fail(ErrorCode::kNotFound, fmt::format("'{}' is not an executable program on PATH ({})", argv[0],
                                                  std::getenv("PATH") != nullptr ? std::getenv("PATH") : "PATH unset"));
  }
  Pipe out_pipe, err_pipe;
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return fail(ErrorCode::kIo, fmt::format("pipe: {}", std::strerror(errno)));
  out_pipe.read_end = ends[0];
  out_pipe.write_end = ends[1];
  if (::pipe2(ends, O_CLOEXEC) != 0) return fail(ErrorCode::kIo, fmt::format("pipe: {}", std::strerror(errno)));
  err_pipe.read_end = ends[0];
  err_pipe.write_end = ends[1];

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe.write_end, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe.write_end, STDERR_FILENO);
  std::vector<std::string> args = argv;
  std::vector<std::string> env = child_environment(options.environment);
  auto arg_pointers = pointers(args);
  auto env_pointers = pointers(env);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, arg_pointers.data(), env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe.write_end);
  ::close(err_pipe.write_end);
  out_pipe.write_end = err_pipe.write_end = -1;
  if (spawned != 0) return fail(ErrorCode::kIo, fmt::format("cannot start {}: {}", program, std::strerror(spawned)));

  SubprocessResult result;
  result.timed_out = drain(out_pipe, err_pipe, result, Clock::now() + options.timeout, options.max_output_bytes);
  if (result.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

Result<std::string> run_git(const std::vector<std::string>& args, size_t max_output_bytes) {
  std::vector<std::string> argv = {"git"};
  argv.insert(argv.end(), args.begin(), args.end());
  SubprocessOptions options;
  options.max_output_bytes = max_output_bytes;
  auto result = run_subprocess(argv, options);
  if (!result) return std::unexpected(result.error());
  if (!result->succeeded()) {
    const std::string why = result->err.substr(0, result->err.find('\n'));
    return fail(ErrorCode::kNotFound, fmt::format("git {} {}{}", fmt::join(args, " "), result->describe_end(),
                                                  why.empty() ? "" : ": " + why));
  }
  return std::move(result->out);
}

}  // namespace ix
