// `ixbench changelog check` through the real binary: files, git refs (a repository made in a
// temporary directory with two commits), --path, --format json, and the exit codes 0 / 1 / 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/git_repo.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::testing {
namespace {

namespace fs = std::filesystem;

std::string corpus(const std::string& name) {
  return source_path("tests/data/changelog/" + name);
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

TEST(ChangelogCheck, FilesThatPassPrintOk) {
  auto result = run_ixbench(
      {"changelog", "check", "--base", corpus("small-append/base.yaml"), "--head", corpus("small-append/head.yaml")});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "ok: 2 entries (1 appended)\n");
  EXPECT_EQ(result.err, "");
}

TEST(ChangelogCheck, FindingsGoToStdoutAndExit1) {
  const std::string head = corpus("entry-count/head.yaml");
  auto result = run_ixbench({"changelog", "check", "--base", corpus("entry-count/base.yaml"), "--head", head});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.out.find(head + ":7:1: entry-count: "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("\n  fix: start every entry with"), std::string::npos) << result.out;
  EXPECT_EQ(result.err, "ixbench: error: perf-changelog check failed: 1 problem(s) in " +
                            corpus("entry-count/base.yaml") + " -> " + head + "\n");
}

TEST(ChangelogCheck, JsonFormat) {
  auto result = run_ixbench({"changelog", "check", "--base", corpus("small-append/base.yaml"), "--head",
                             corpus("small-append/head.yaml"), "--format", "json"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, R"({"ok":true,"base_entries":1,"head_entries":2,"appended":1,"corrections":0,"findings":[]})"
                        "\n");
}

TEST(ChangelogCheck, UsageErrorsExit2) {
  const std::vector<std::string> files = {"--base", corpus("small-append/base.yaml"), "--head",
                                          corpus("small-append/head.yaml")};
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"--pr", "12a"},
                                                {"--pr", "0"},
                                                {"--repo-url", "https://gitlab.com/o/r"},
                                                {"--format", "xml"}}) {
    std::vector<std::string> args = {"changelog", "check"};
    args.insert(args.end(), files.begin(), files.end());
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run_ixbench(args);
    EXPECT_EQ(result.exit_code, 2) << extra[0] << " " << extra[1] << ": " << result.err;
  }
  EXPECT_EQ(run_ixbench({"changelog", "check", "--base", corpus("small-append/base.yaml")}).exit_code, 2);
}

// A repository with two commits of perf-changelog.yaml (and of data/changelog.yaml for --path).
class ChangelogRepo : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!git_available()) GTEST_SKIP() << "git is not on PATH";
    previous_ = fs::current_path();
    dir_ = scratch_dir("changelog_repo");
    fs::current_path(dir_);
    git({"init", "-q"});
    commit(read_whole_file(corpus("small-append/base.yaml")));
    commit(read_whole_file(corpus("small-append/head.yaml")));
  }
  void TearDown() override {
    if (previous_.empty()) return;
    fs::current_path(previous_);
    fs::remove_all(dir_);
  }
  void git(const std::vector<std::string>& args) {
    auto result = run_git(dir_, args);
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
  void commit(const std::string& text) {
    write(dir_ / "perf-changelog.yaml", text);
    write(dir_ / "data/changelog.yaml", text);
    git({"add", "perf-changelog.yaml", "data/changelog.yaml"});
    git({"commit", "-q", "-m", "changelog"});
  }

  fs::path previous_;
  fs::path dir_;
};

TEST_F(ChangelogRepo, RefsAreReadWithGitShow) {
  auto result = run_ixbench({"changelog", "check", "--base", "HEAD~1", "--head", "HEAD"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "ok: 2 entries (1 appended)\n");
  auto path =
      run_ixbench({"changelog", "check", "--base", "HEAD~1", "--head", "HEAD", "--path", "data/changelog.yaml"});
  EXPECT_EQ(path.exit_code, 0) << path.err;
}

TEST_F(ChangelogRepo, FindingsNameTheRefAndPath) {
  write(dir_ / "perf-changelog.yaml", read_whole_file(corpus("small-append/head.yaml")) + "\n");
  git({"commit", "-q", "-am", "blank line at the end"});
  auto result = run_ixbench({"changelog", "check", "--base", "HEAD~2", "--head", "HEAD"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out.substr(0, result.out.find('\n')),
            "HEAD:perf-changelog.yaml:12:1: final-newline: the file ends in 2 newlines (1 blank line(s) after the "
            "last entry); it must end in exactly one \"\\n\"");
}

TEST_F(ChangelogRepo, AnExistingFileWinsOverARef) {
  write(dir_ / "HEAD", read_whole_file(corpus("small-append/base.yaml")));
  auto result = run_ixbench({"changelog", "check", "--base", "HEAD", "--head", "HEAD~0"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "ok: 2 entries (1 appended)\n");
}

TEST_F(ChangelogRepo, NeitherFileNorRefNamesBothTries) {
  auto result = run_ixbench({"changelog", "check", "--base", "no-such-ref", "--head", "HEAD"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("ixbench: error: --base: 'no-such-ref' is neither a file"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("git show no-such-ref:perf-changelog.yaml exit status 128"), std::string::npos)
      << result.err;
}

}  // namespace
}  // namespace ix::testing
