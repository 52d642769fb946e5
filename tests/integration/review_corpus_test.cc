// The review case corpus (tests/data/review/, its README.md gives the format): each case's base
// and head trees are built in a scratch directory, `ixbench review --format json` runs on them
// from the case directory with the case's args, and every expected.txt line for a check review
// runs today is compared — the verdict, and for a line with a location, a finding at exactly that
// file:line whose message holds the substring (without one: a message or the summary holding it).
// Lines for checks not built yet are counted and printed, never compared. KNOWN_GAPS lists the
// (case, check) pairs where today's review and the corpus still disagree; a listed pair that
// starts to agree fails the test too, so the list only shrinks.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::testing {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;

const std::set<std::string> kBuiltChecks = {
    "changelog-gate", "changelog-coverage", "changelog-prose", "dead-knob", "golden-al",
    "engine-patch",   "precision-override", "evals",           "pareto",    "deprecated",
    "upstream-image", "variant-lookup",     "pr-template"};

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

TEST(ReviewCorpus, EveryBuiltCheckAgreesWithTheCorpus) {
  const fs::path corpus = source_path("tests/data/review");
  const auto gaps = known_gaps();
  const fs::path scratch = scratch_dir("review_corpus");
  size_t compared = 0, not_built = 0;
  std::set<std::string> still_open;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    const fs::path base = scratch / name / "base", head = scratch / name / "head";
    fs::create_directories(base);
    fs::create_directories(head);
    for (const auto& side : {base, head}) copy_tree(entry.path() / "common", side);
    copy_tree(entry.path() / "base", base);
    copy_tree(entry.path() / "head", head);
    std::vector<std::string> args = {"review",      "--base",   base.string(), "--head",
                                     head.string(), "--format", "json",        "--config-files"};
    for (const char* file : {"configs/amd-master.yaml", "configs/nvidia-master.yaml"}) args.emplace_back(file);
    if (fs::exists(entry.path() / "args")) {
      std::istringstream words(read_whole_file(entry.path() / "args"));
      args.insert(args.end(), std::istream_iterator<std::string>(words), {});
    }
    // From the case directory, so `--results results` and `--pr-body pr-body.md` resolve.
    const fs::path previous = fs::current_path();
    fs::current_path(entry.path());
    auto result = run_ixbench(args);
    fs::current_path(previous);
    ASSERT_TRUE(result.exit_code == 0 || result.exit_code == 1) << name << ": " << result.err;
    const auto review = bj::parse(result.out).as_object();
    std::set<std::string> failing;
    std::set<std::string> asserted;
    for (const auto& e : read_expected(entry.path() / "expected.txt")) {
      if (!kBuiltChecks.contains(e.check)) {
        ++not_built;
        continue;
      }
      const bj::object* check = nullptr;
      for (const auto& c : review.at("checks").as_array()) {
        if (c.at("id").as_string() == e.check) check = &c.as_object();
      }
      ASSERT_NE(check, nullptr) << name << ": no check " << e.check;
      ++compared;
      asserted.insert(e.check);
      if (!satisfied(*check, e)) failing.insert(e.check);
      if (!satisfied(*check, e) && !gaps.contains(name + " " + e.check))
        ADD_FAILURE() << name << ": " << e.check << " expected " << e.verdict << " " << e.location << " '"
                      << e.substring << "', got " << bj::serialize(*check);
    }
    for (const auto& check : asserted) {
      if (gaps.contains(name + " " + check)) {
        if (failing.contains(check)) {
          still_open.insert(name + " " + check);
        } else {
          ADD_FAILURE() << name << " " << check << " now agrees with the corpus: remove it from KNOWN_GAPS";
        }
      }
    }
  }
  fs::remove_all(scratch);
  EXPECT_GT(compared, 40u);
  std::cout << "review corpus: " << compared << " assertions compared, " << still_open.size() << " known gaps, "
            << not_built << " for checks not built yet\n";
}

}  // namespace
}  // namespace ix::testing
