#include "support/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace ix::testing {
namespace {

// The child's stdout and stderr go to temporary files, not pipes: a pipe nobody drains fills up
// (64 KiB) and would block a chatty server in the middle of a test.
int make_temp_file(std::string& path) {
  std::string pattern = (std::filesystem::temp_directory_path() / "ixbench-serve-XXXXXX").string();
  int fd = mkstemp(pattern.data());
  path = pattern;
  return fd;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

constexpr std::string_view kListening = "listening on http://127.0.0.1:";

}  // namespace

Result<std::unique_ptr<ServerProcess>> ServerProcess::start(const std::vector<std::string>& args,
                                                            double startup_timeout_s) {
  std::unique_ptr<ServerProcess> server(new ServerProcess());
  std::string out_path, err_path;
  int out_fd = make_temp_file(out_path);
  int err_fd = make_temp_file(err_path);
  if (out_fd < 0 || err_fd < 0) return fail(ErrorCode::kIo, "cannot create temporary files for the server's output");
  // The files are unlinked at once; the open descriptors keep them readable via /proc/self/fd.
  std::vector<std::string> argv = {IXBENCH_BINARY, "sim", "serve"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--port");
  argv.push_back("0");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  std::vector<char*> raw;
  for (auto& arg : argv) raw.push_back(arg.data());
  raw.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  server->stdout_fd_ = out_fd;
  server->stderr_fd_ = err_fd;
  if (rc != 0) return fail(ErrorCode::kIo, "posix_spawn failed for " + argv[0]);
  server->pid_ = pid;

  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(startup_timeout_s);
  const std::string out_file = "/proc/self/fd/" + std::to_string(out_fd);
  while (true) {
    std::string out = read_all(out_file);
    if (auto newline = out.find('\n'); newline != std::string::npos) {
      std::string line = out.substr(0, newline);
      if (line.rfind(kListening, 0) == 0) {
        int port = std::atoi(line.c_str() + kListening.size());
        if (port > 0 && port < 65536) {
          server->port_ = static_cast<uint16_t>(port);
          server->base_url_ = "http://127.0.0.1:" + std::to_string(port);
          return server;
        }
      }
      return fail(ErrorCode::kInternal, "unexpected first stdout line from ixbench sim serve: '" + line +
                                            "'; stderr: " + server->stderr_text());
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      server->reaped_ = true;
      server->exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return fail(ErrorCode::kUnavailable, "ixbench sim serve exited with status " +
                                               std::to_string(server->exit_status_) +
                                               " before listening: " + server->stderr_text());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return fail(ErrorCode::kTimeout,
                  "ixbench sim serve printed no 'listening on' line in time; stderr: " + server->stderr_text());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string ServerProcess::stderr_text() {
  if (stderr_fd_ < 0) return stderr_;
  return read_all("/proc/self/fd/" + std::to_string(stderr_fd_));
}

int ServerProcess::stop(double timeout_s) {
  if (pid_ <= 0 || reaped_) return exit_status_;
  kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return exit_status_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  reaped_ = true;
  exit_status_ = -1;
  return exit_status_;
}

ServerProcess::~ServerProcess() {
  stop();
  if (stderr_fd_ >= 0) {
    stderr_ = stderr_text();
    close(stderr_fd_);
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

}  // namespace ix::testing
