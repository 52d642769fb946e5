// Run a program to completion (or a timeout) and capture its exit status, stdout and stderr.
// Used by integration tests to drive the real `ixbench` binary.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ix::testing {

struct ProcessResult {
  int exit_code = -1;  // exit status, or -1 if killed by a signal / timed out
  int signal = 0;      // terminating signal, 0 if none
  bool timed_out = false;
  bool ready = false;  // run_process_until: the ready text appeared on stdout
  std::string out;
  std::string err;
};

// argv[0] is the program path. `input` is written to stdin, then stdin is closed.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input = "", double timeout_s = 60.0);

// As run_process, and once stdout holds `ready_text` the child is sent `signal` (once), as an
// operator stops a server: for commands that run until signalled. The result is the child's exit
// after the signal (a clean stop exits 0); `ready` says whether the text appeared at all.
ProcessResult run_process_until(const std::vector<std::string>& argv, const std::string& ready_text, int signal,
                                double timeout_s = 60.0);

// The ixbench binary the integration tests drive: $IXBENCH_BINARY_UNDER_TEST when set (e.g. the
// asan preset's build, driven by release-built tests: scripts/test.sh), else the one built
// alongside the tests.
const std::string& ixbench_binary();

// Runs ixbench_binary() with the given arguments.
ProcessResult run_ixbench(const std::vector<std::string>& args, const std::string& input = "", double timeout_s = 60.0);

// Starts argv (argv[0] a path) in the background with stdout and stderr on /dev/null and returns
// its pid, for tests that signal a running command; the caller waits for it (waitpid).
pid_t spawn_quiet(std::vector<std::string> argv);

// The first `program` found in $PATH's directories, or "" (tests that need it then skip).
std::string find_on_path(const std::string& program);

// Path under the project's source tree.
std::string source_path(const std::string& relative);

// ../shared/<relative> beside the project, or under $IXBENCH_SHARED_DIR when set. Returns an
// empty string when it does not exist; tests then GTEST_SKIP with shared_missing_message().
std::string shared_path(const std::string& relative);
std::string shared_missing_message(const std::string& relative);

}  // namespace ix::testing
