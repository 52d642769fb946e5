// Scratch git repositories for tests of commands that read git refs (changelog check, plan,
// review): git run with a fixed identity, and "stage everything and commit".
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace ix::testing {

// Whether git is on PATH (tests that need it skip otherwise).
bool git_available();

// `git -C repo <args>` with a fixed author and committer.
ProcessResult run_git(const std::filesystem::path& repo, const std::vector<std::string>& args);

// `git init` (when `repo` is not one yet), then stage every file and commit with `message`;
// returns the failing git's stderr, or "" on success.
std::string git_commit_all(const std::filesystem::path& repo, const std::string& message);

}  // namespace ix::testing
