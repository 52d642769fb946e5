// The review case corpus (tests/data/review/, its README.md gives the format): each case's base
// and head trees are built in a scratch directory (_shared/, then the case's common/, then its
// base/ or head/), `ixbench review --format json` runs on them with the case's args, and every
// expected.txt line is compared — the verdict, and for a line with a location, a finding at
// exactly that file:line whose message holds the substring (without one: a message or the summary
// holding it). The trees are reviewed twice: as directories (from the case directory, so
// `--results results` and `--pr-body pr-body.md` resolve), and as two commits of a scratch git
// repository (`--base HEAD~1 --head HEAD` from the repository, the evidence beside it, untracked).
// KNOWN_GAPS lists the (case, check) pairs where the review and the corpus still disagree; a
// listed pair that starts to agree fails the test too, so the list only shrinks.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/git_repo.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::testing {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;

struct Expectation {
  std::string check;
  std::string verdict;
  std::string location;  // "file:line", or empty
  std::string substring;
};

std::vector<Expectation> read_expected(const fs::path& file) {
  std::vector<Expectation> out;
  std::istringstream lines(read_whole_file(file));
  static const std::regex kLocation(R"(^[^ ]+:[0-9]+$)");
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    Expectation e;
    if (!(words >> e.check >> e.verdict)) continue;
    std::string third;
    if (words >> third) {
      if (std::regex_match(third, kLocation)) {
        e.location = third;
        std::getline(words >> std::ws, e.substring);
      } else {
        std::string rest;
        std::getline(words, rest);
        e.substring = third + rest;
      }
    }
    out.push_back(e);
  }
  return out;
}

std::set<std::string> known_gaps() {
  std::set<std::string> gaps;
  std::istringstream lines(read_whole_file(source_path("tests/data/review/KNOWN_GAPS")));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string c, check;
    if (words >> c >> check) gaps.insert(c + " " + check);
  }
  return gaps;
}

void copy_tree(const fs::path& from, const fs::path& to) {
  if (fs::is_directory(from)) fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

// Whether the review's result for `e.check` satisfies the line. Without a location, the
// substring must be in one of the check's messages or its summary.
bool satisfied(const bj::object& check, const Expectation& e) {
  if (check.at("verdict").as_string() != e.verdict) return false;
  if (e.location.empty()) {
    if (std::string(check.at("summary").as_string()).find(e.substring) != std::string::npos) return true;
    for (const auto& item : check.at("evidence").as_array()) {
      if (std::string(item.at("message").as_string()).find(e.substring) != std::string::npos) return true;
    }
    return false;
  }
  for (const auto& item : check.at("evidence").as_array()) {
    const auto& evidence = item.as_object();
    const std::string at =
        std::string(evidence.at("file").as_string()) + ":" + std::to_string(evidence.at("line").as_int64());
    if (at == e.location && std::string(evidence.at("message").as_string()).find(e.substring) != std::string::npos)
      return true;
  }
  return false;
}

// One case's trees, built under `scratch`: base/ and head/ directories.
struct CaseTrees {
  fs::path base;
  fs::path head;
};

CaseTrees build_trees(const fs::path& corpus, const fs::path& dir, const fs::path& scratch) {
  CaseTrees trees{scratch / "base", scratch / "head"};
  for (const auto& side : {trees.base, trees.head}) {
    fs::create_directories(side);
    copy_tree(corpus / "_shared", side);
    copy_tree(dir / "common", side);
  }
  copy_tree(dir / "base", trees.base);
  copy_tree(dir / "head", trees.head);
  return trees;
}

std::vector<std::string> case_args(const fs::path& dir, const std::string& base, const std::string& head) {
  std::vector<std::string> args = {"review", "--base", base, "--head", head, "--format", "json", "--config-files"};
  for (const char* file : {"configs/amd-master.yaml", "configs/nvidia-master.yaml"}) args.emplace_back(file);
  if (fs::exists(dir / "args")) {
    std::istringstream words(read_whole_file(dir / "args"));
    args.insert(args.end(), std::istream_iterator<std::string>(words), {});
  }
  return args;
}

// `ixbench review` with `args`, run from `cwd`; the parsed JSON review.
bj::object review_from(const fs::path& cwd, const std::vector<std::string>& args, const std::string& name) {
  const fs::path previous = fs::current_path();
  fs::current_path(cwd);
  auto result = run_ixbench(args);
  fs::current_path(previous);
  EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 1) << name << ": " << result.err;
  auto parsed = bj::parse(result.out.empty() ? std::string("{}") : result.out);
  return parsed.is_object() ? parsed.as_object() : bj::object{};
}

// The two trees as two commits of a git repository at `repo`, with the case's evidence
// (results/, pr-body.md) copied in untracked.
void commit_trees(const CaseTrees& trees, const fs::path& case_dir, const fs::path& repo) {
  fs::create_directories(repo);
  copy_tree(trees.base, repo);
  ASSERT_EQ(git_commit_all(repo, "base"), "");
  for (const auto& entry : fs::directory_iterator(repo)) {
    if (entry.path().filename() != ".git") fs::remove_all(entry.path());
  }
  copy_tree(trees.head, repo);
  ASSERT_EQ(git_commit_all(repo, "head"), "");
  copy_tree(case_dir / "results", repo / "results");
  if (fs::exists(case_dir / "pr-body.md")) fs::copy_file(case_dir / "pr-body.md", repo / "pr-body.md");
}

struct Tally {
  size_t compared = 0;
  std::set<std::string> still_open;
};

// Compares one case's review with its expected.txt, against the known gaps.
void compare_case(const std::string& name, const bj::object& review, const std::vector<Expectation>& expected,
                  const std::set<std::string>& gaps, Tally& tally) {
  std::set<std::string> failing, asserted;
  const bj::array* checks = review.contains("checks") ? &review.at("checks").as_array() : nullptr;
  ASSERT_NE(checks, nullptr) << name << ": no review";
  for (const auto& e : expected) {
    const bj::object* check = nullptr;
    for (const auto& c : *checks) {
      if (c.at("id").as_string() == e.check) check = &c.as_object();
    }
    ASSERT_NE(check, nullptr) << name << ": no check " << e.check;
    ++tally.compared;
    asserted.insert(e.check);
    if (satisfied(*check, e)) continue;
    failing.insert(e.check);
    if (!gaps.contains(name + " " + e.check))
      ADD_FAILURE() << name << ": " << e.check << " expected " << e.verdict << " " << e.location << " '" << e.substring
                    << "', got " << bj::serialize(*check);
  }
  for (const auto& check : asserted) {
    if (!gaps.contains(name + " " + check)) continue;
    if (failing.contains(check)) {
      tally.still_open.insert(name + " " + check);
    } else {
      ADD_FAILURE() << name << " " << check << " now agrees with the corpus: remove it from KNOWN_GAPS";
    }
  }
}

std::vector<fs::path> case_dirs(const fs::path& corpus) {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    if (entry.is_directory() && !entry.path().filename().string().starts_with("_")) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// Every case reviewed by `review_one(case directory, its trees, scratch folder)`, compared.
Tally review_corpus(const std::string& scratch_name,
                    const std::function<bj::object(const fs::path&, const CaseTrees&, const fs::path&)>& review_one) {
  const fs::path corpus = source_path("tests/data/review");
  const auto gaps = known_gaps();
  const fs::path scratch = scratch_dir(scratch_name);
  Tally tally;
  for (const auto& dir : case_dirs(corpus)) {
    const std::string name = dir.filename().string();
    const CaseTrees trees = build_trees(corpus, dir, scratch / name);
    compare_case(name, review_one(dir, trees, scratch / name), read_expected(dir / "expected.txt"), gaps, tally);
  }
  fs::remove_all(scratch);
  return tally;
}

TEST(ReviewCorpus, EveryCheckAgreesWithTheCorpusOnDirectories) {
  const Tally tally = review_corpus("review_corpus", [](const fs::path& dir, const CaseTrees& trees, const fs::path&) {
    return review_from(dir, case_args(dir, trees.base.string(), trees.head.string()), dir.filename().string());
  });
  EXPECT_GT(tally.compared, 100u);
  std::cout << "review corpus: " << tally.compared << " assertions compared, " << tally.still_open.size()
            << " known gaps\n";
}

TEST(ReviewCorpus, EveryCheckAgreesWithTheCorpusOnGitRefs) {
  if (!git_available()) GTEST_SKIP() << "git is not on PATH";
  const Tally tally =
      review_corpus("review_corpus_git", [](const fs::path& dir, const CaseTrees& trees, const fs::path& scratch) {
        commit_trees(trees, dir, scratch / "repo");
        return review_from(scratch / "repo", case_args(dir, "HEAD~1", "HEAD"), dir.filename().string());
      });
  EXPECT_GT(tally.compared, 100u);
}

}  // namespace
}  // namespace ix::testing
