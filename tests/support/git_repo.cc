#include "support/git_repo.h"

namespace ix::testing {

bool git_available() {
  return !find_on_path("git").empty();
}

ProcessResult run_git(const std::filesystem::path& repo, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {find_on_path("git"),        "-C", repo.string(), "-c", "user.name=ixbench", "-c",
                                   "user.email=ix@example.com"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

std::string git_commit_all(const std::filesystem::path& repo, const std::string& message) {
  if (!std::filesystem::exists(repo / ".git")) {
    if (auto init = run_git(repo, {"init", "-q"}); init.exit_code != 0) return init.err;
  }
  if (auto add = run_git(repo, {"add", "-A"}); add.exit_code != 0) return add.err;
  auto commit = run_git(repo, {"commit", "-q", "--allow-empty", "-m", message});
  return commit.exit_code == 0 ? "" : commit.err;
}

}  // namespace ix::testing
