// Child processes the orchestrator owns: engine servers, benchmark steps, the GPU sampler.
//
// Each child runs in a process group of its own, so stopping it reaches everything it started
// (an engine's worker processes, a shell recipe's pipeline). Stopping is SIGTERM to the group,
// a grace period, then SIGKILL to the group. A child is also asked to exit when ixbench dies
// (PR_SET_PDEATHSIG: SIGTERM), so even a `kill -9` of ixbench leaves no server holding a port.
// The destructor stops a child that is still running.
//
// Thread-safety: a ChildProcess is used by one thread.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ix::run {

struct ProcessSpec {
  std::vector<std::string> argv;                         // argv[0]: a path, or a name looked up in $PATH
  std::vector<std::pair<std::string, std::string>> env;  // set over the inherited environment
  std::filesystem::path output;                          // stdout and stderr appended here ("" = /dev/null)
  std::filesystem::path stdout_file;                     // when set, stdout goes here instead (truncated)
  std::filesystem::path cwd;                             // "" = ixbench's
};

// The exit of a child as a shell reports it: the exit code, or 128 + the signal that ended it.
struct ExitStatus {
  int code = 0;
  int signal = 0;  // 0 when it exited by itself
  bool ok() const { return code == 0 && signal == 0; }
  std::string describe() const;  // "exit 3", "killed by SIGKILL"
};

class ChildProcess {
 public:
  // Fails (kUnavailable) when the program cannot be started, with the reason (not found,
  // not executable) — reported by the child before exec, not guessed from an exit code.
  static Result<ChildProcess> spawn(const ProcessSpec& spec);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // The exit, once the child has exited (does not block).
  std::optional<ExitStatus> poll();
  // Waits up to `timeout_s` (negative: forever); nullopt while it still runs.
  std::optional<ExitStatus> wait(double timeout_s = -1);
  // SIGTERM to the group, up to `grace_s` for it to exit, then SIGKILL to the group. Idempotent.
  ExitStatus stop(double grace_s = 10);

 private:
  ChildProcess() = default;
  void reap_group();
  pid_t pid_ = -1;
  std::optional<ExitStatus> exit_;
};

// Runs to completion (or `timeout_s`, after which it is stopped and reported kTimeout).
Result<ExitStatus> run_to_completion(const ProcessSpec& spec, double timeout_s = -1);

// The absolute path of this ixbench binary (/proc/self/exe).
std::filesystem::path self_executable();

// A TCP port on 127.0.0.1 free at the time of the call (bound to port 0, then released).
Result<int> free_local_port();

// argv as one shell command line, each word as shell_quote (run/recipe.h) writes it.
std::string shell_command(const std::vector<std::string>& argv);

// This process's own command line (/proc/self/cmdline), as shell_command writes it.
std::string own_command_line();

// The last `max_lines` lines of a text file (for errors quoting a server's log); "" when unreadable.
std::string tail_file(const std::filesystem::path& path, size_t max_lines = 20);

}  // namespace ix::run
