// Running another program to completion: its exit status and what it wrote, with a time limit.
//
// For short command-line tools a library drives (Slurm's sbatch, squeue, scancel): the program
// gets /dev/null as stdin and its own pipes for stdout and stderr, which are read as they fill (so
// a chatty program never blocks on a full pipe). No shell is involved: arguments reach the
// program as given. Thread-safe: descriptors are close-on-exec and no process-wide state (signal
// dispositions, the working directory, the environment) is changed.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ix {

struct SubprocessOptions {
  // Killed (SIGKILL) when it runs longer; the result then says timed_out.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // Set in the child's environment on top of this process's own (a name given twice: the last).
  std::vector<std::pair<std::string, std::string>> environment{};
  // Each of stdout and stderr is kept up to this many bytes; the rest is read and dropped.
  size_t max_output_bytes = size_t{16} << 20;
};

struct SubprocessResult {
  int exit_code = -1;  // the exit status; -1 when a signal ended it
  int signal = 0;      // the signal that ended it, 0 if none
  bool timed_out = false;
  std::string out;
  std::string err;

  bool succeeded() const { return exit_code == 0 && !timed_out; }
  // "exit status 3", "killed by signal 9 (Killed)", "timed out and was killed": for error messages.
  std::string describe_end() const;
};

// Runs argv (argv[0] a path, or a name looked up in $PATH) and waits for it. Fails only when the
// program cannot be started (kNotFound: not on PATH or not executable; kIo: pipes or spawn); a
// program that runs and fails is a result with its exit status.
Result<SubprocessResult> run_subprocess(const std::vector<std::string>& argv, const SubprocessOptions& options = {});

// `git ARGS...` in the current directory: its stdout when it exits 0; otherwise kNotFound
// "git ARGS... exit status N: <git's first stderr line>" (or why it could not start). Output over
// `max_output_bytes` is cut there (callers that must not cut check the size).
Result<std::string> run_git(const std::vector<std::string>& args, size_t max_output_bytes = size_t{64} << 20);

// The first executable `program` in $PATH's directories (or `program` itself when it holds a
// '/' and is executable), or "".
std::string find_program(const std::string& program);

}  // namespace ix
