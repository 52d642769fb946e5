#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

extern char** environ;

namespace ix::testing {

namespace {

struct ReadyStop {
  std::string text;  // empty: never
  int signal = 0;
};

ProcessResult run(const std::vector<std::string>& argv, const std::string& input, double timeout_s,
                  const ReadyStop& stop) {
  ProcessResult result;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = "pipe() failed";
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.err = "posix_spawn failed for " + argv[0];
    return result;
  }
  signal(SIGPIPE, SIG_IGN);
  size_t input_offset = 0;
  int in_fd = in_pipe[1];
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  } else {
    fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int open_outputs = 2;
  char buffer[65536];
  while (open_outputs > 0) {
    auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (remaining <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd fds[3] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {in_fd, POLLOUT, 0}};
    int nfds = in_fd >= 0 ? 3 : 2;
    if (poll(fds, nfds, static_cast<int>(remaining)) < 0) continue;
    for (int index = 0; index < 2; ++index) {
      if (fds[index].fd < 0 || !(fds[index].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[index].fd, buffer, sizeof buffer);
      if (n > 0) {
        (index == 0 ? result.out : result.err).append(buffer, static_cast<size_t>(n));
        if (index == 0 && !result.ready && !stop.text.empty() && result.out.find(stop.text) != std::string::npos) {
          result.ready = true;
          kill(pid, stop.signal);
        }
      } else {
        close(fds[index].fd);
        (index == 0 ? out_pipe[0] : err_pipe[0]) = -1;
        --open_outputs;
      }
    }
    if (in_fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = write(in_fd, input.data() + input_offset, input.size() - input_offset);
      if (n > 0) input_offset += static_cast<size_t>(n);
      if (n < 0 || input_offset == input.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  if (out_pipe[0] >= 0) close(out_pipe[0]);
  if (err_pipe[0] >= 0) close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input, double timeout_s) {
  return run(argv, input, timeout_s, {});
}

ProcessResult run_process_until(const std::vector<std::string>& argv, const std::string& ready_text, int signal,
                                double timeout_s) {
  return run(argv, "", timeout_s, {ready_text, signal});
}

const std::string& ixbench_binary() {
  static const std::string path = [] {
    const char* override_path = std::getenv("IXBENCH_BINARY_UNDER_TEST");
    return std::string(override_path != nullptr && *override_path != '\0' ? override_path : IXBENCH_BINARY);
  }();
  return path;
}

ProcessResult run_ixbench(const std::vector<std::string>& args, const std::string& input, double timeout_s) {
  std::vector<std::string> argv{ixbench_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, input, timeout_s);
}

pid_t spawn_quiet(std::vector<std::string> argv) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    std::vector<char*> pointers;
    for (auto& a : argv) pointers.push_back(a.data());
    pointers.push_back(nullptr);
    execv(pointers[0], pointers.data());
    _exit(127);
  }
  return pid;
}

std::string find_on_path(const std::string& program) {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      const auto candidate = std::filesystem::path(dir) / program;
      std::error_code ec;
      if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    }
  }
  return "";
}

std::string source_path(const std::string& relative) {
  return std::string(IXBENCH_SOURCE_DIR) + "/" + relative;
}

std::string shared_path(const std::string& relative) {
  const char* override_dir = std::getenv("IXBENCH_SHARED_DIR");
  std::string base = override_dir ? override_dir : std::string(IXBENCH_SOURCE_DIR) + "/../shared";
  std::string path = base + "/" + relative;
  return std::filesystem::exists(path) ? path : std::string();
}

std::string shared_missing_message(const std::string& relative) {
  return "needs ../shared/" + relative +
         " beside the project (absent here); set IXBENCH_SHARED_DIR to a folder that holds it";
}

}  // namespace ix::testing
