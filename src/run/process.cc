#include "run/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <thread>

#include "run/recipe.h"

namespace ix::run {
namespace {

using Clock = std::chrono::steady_clock;

ExitStatus decode_status(int status) {
  if (WIFSIGNALED(status)) return {128 + WTERMSIG(status), WTERMSIG(status)};
  return {WEXITSTATUS(status), 0};
}

// Everything exec needs, prepared before fork (the child may only call async-signal-safe code).
struct ExecPlan {
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ExecPlan make_plan(const ProcessSpec& spec) {
  ExecPlan plan;
  std::vector<std::string> names;
  for (const auto& [name, value] : spec.env) names.push_back(name + "=");
  for (char** entry = environ; *entry; ++entry) {
    std::string_view text(*entry);
    bool overridden = false;
    for (const auto& prefix : names) overridden |= text.starts_with(prefix);
    if (!overridden) plan.env_storage.emplace_back(text);
  }
  for (const auto& [name, value] : spec.env) plan.env_storage.push_back(name + "=" + value);
  for (auto& entry : plan.env_storage) plan.envp.push_back(entry.data());
  plan.envp.push_back(nullptr);
  for (const auto& arg : spec.argv) plan.argv.push_back(const_cast<char*>(arg.c_str()));
  plan.argv.push_back(nullptr);
  return plan;
}

int open_output(const std::filesystem::path& path, bool truncate) {
  if (path.empty()) return ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : O_APPEND);
  return ::open(path.c_str(), flags, 0644);
}

// In the child: own process group, die with the parent, redirect, exec; on failure write errno
// to the status pipe.
[[noreturn]] void exec_child(const ProcessSpec& spec, ExecPlan& plan, int out_fd, int stdout_fd, int status_fd) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  int null_in = ::open("/dev/null", O_RDONLY);
  dup2(null_in, STDIN_FILENO);
  dup2(stdout_fd >= 0 ? stdout_fd : out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
    int error = errno;
    (void)!write(status_fd, &error, sizeof error);
    _exit(127);
  }
  execvpe(plan.argv[0], plan.argv.data(), plan.envp.data());
  int error = errno;
  (void)!write(status_fd, &error, sizeof error);
  _exit(127);
}

}  // namespace

std::string ExitStatus::describe() const {
  if (signal != 0)
    return fmt::format("killed by {}",
                       sigabbrev_np(signal) ? fmt::format("SIG{}", sigabbrev_np(signal)) : std::to_string(signal));
  return fmt::format("exit {}", code);
}

Result<ChildProcess> ChildProcess::spawn(const ProcessSpec& spec) {
  if (spec.argv.empty()) return fail(ErrorCode::kInternal, "spawn: no program given");
  ExecPlan plan = make_plan(spec);
  int out_fd = open_output(spec.output, false);
  if (out_fd < 0)
    return fail(ErrorCode::kIo, fmt::format("cannot open {}: {}", spec.output.string(), std::strerror(errno)));
  int stdout_fd = spec.stdout_file.empty() ? -1 : open_output(spec.stdout_file, true);
  if (!spec.stdout_file.empty() && stdout_fd < 0) {
    ::close(out_fd);
    return fail(ErrorCode::kIo, fmt::format("cannot open {}: {}", spec.stdout_file.string(), std::strerror(errno)));
  }
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) return fail(ErrorCode::kIo, "pipe2 failed");
  pid_t pid = fork();
  if (pid == 0) exec_child(spec, plan, out_fd, stdout_fd, status_pipe[1]);
  ::close(status_pipe[1]);
  ::close(out_fd);
  if (stdout_fd >= 0) ::close(stdout_fd);
  if (pid < 0) {
    ::close(status_pipe[0]);
    return fail(ErrorCode::kIo, fmt::format("fork failed: {}", std::strerror(errno)));
  }
  setpgid(pid, pid);  // also here, so a stop right after spawn reaches the group
  int child_errno = 0;
  ssize_t got = ::read(status_pipe[0], &child_errno, sizeof child_errno);
  ::close(status_pipe[0]);
  ChildProcess child;
  child.pid_ = pid;
  if (got == sizeof child_errno) {
    child.wait();
    return fail(ErrorCode::kUnavailable,
                fmt::format("cannot start '{}': {}", spec.argv[0], std::strerror(child_errno)));
  }
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_), exit_(other.exit_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !exit_) stop(2);
    pid_ = other.pid_;
    exit_ = other.exit_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_) stop(5);
}

std::optional<ExitStatus> ChildProcess::poll() {
  if (exit_ || pid_ <= 0) return exit_;
  int status = 0;
  pid_t got = waitpid(pid_, &status, WNOHANG);
  if (got == pid_) exit_ = decode_status(status);
  if (got < 0 && errno == ECHILD) exit_ = ExitStatus{-1, 0};
  return exit_;
}

std::optional<ExitStatus> ChildProcess::wait(double timeout_s) {
  if (timeout_s < 0) {
    int status = 0;
    while (!exit_ && pid_ > 0) {
      pid_t got = waitpid(pid_, &status, 0);
      if (got == pid_) exit_ = decode_status(status);
      if (got < 0 && errno != EINTR) exit_ = ExitStatus{-1, 0};
    }
    return exit_;
  }
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (!poll()) {
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_;
}

void ChildProcess::reap_group() {
  // The leader is gone; members it left behind (a shell recipe's background server) still hold
  // the group id.
  if (pid_ > 0) ::kill(-pid_, SIGKILL);
}

ExitStatus ChildProcess::stop(double grace_s) {
  if (pid_ <= 0) return exit_.value_or(ExitStatus{-1, 0});
  if (!poll()) {
    ::kill(-pid_, SIGTERM);
    if (!wait(grace_s)) {
      ::kill(-pid_, SIGKILL);
      wait();
    }
  }
  reap_group();
  return *exit_;
}

Result<ExitStatus> run_to_completion(const ProcessSpec& spec, double timeout_s) {
  auto child = ChildProcess::spawn(spec);
  if (!child) return fail(child.error());
  if (auto status = child->wait(timeout_s)) return *status;
  child->stop(5);
  return fail(ErrorCode::kTimeout,
              fmt::format("'{}' did not finish within {:g} s and was stopped", spec.argv[0], timeout_s));
}

std::filesystem::path self_executable() {
  std::error_code error;
  auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "ixbench";
  // A rebuild replaced the binary while it ran: the new one is at the same path.
  std::string text = path.string();
  constexpr std::string_view kDeleted = " (deleted)";
  if (text.ends_with(kDeleted)) text.resize(text.size() - kDeleted.size());
  return text;
}

Result<int> free_local_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(ErrorCode::kIo, fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    return fail(ErrorCode::kIo, fmt::format("cannot find a free port: {}", std::strerror(errno)));
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string shell_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) out += (out.empty() ? "" : " ") + shell_quote(arg);
  return out;
}

std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> argv;
  for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
  return shell_command(argv);
}

std::string tail_file(const std::filesystem::path& path, size_t max_lines) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(std::move(line));
    if (lines.size() > max_lines) lines.pop_front();
  }
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

}  // namespace ix::run
