// Every case under tests/data/changelog/: base.yaml and head.yaml (or a file `real` naming a
// mutation of InferenceX's real perf-changelog.yaml, see real_changelog.h), optional `args`
// (--pr N, --repo-url U) and expected.txt, the exact text `changelog check` prints for it.
// IXBENCH_REGENERATE_CHANGELOG_CASES=1 rewrites expected.txt from the output (review the diff);
// IXBENCH_CHANGELOG_CASES_DUMP=DIR writes each case's base.yaml and head.yaml under DIR/<case>/
// (for tests/oracle/changelog_gate_oracle.py).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "changelog/check.h"
#include "real_changelog.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::changelog {
namespace {

namespace fs = std::filesystem;
using ix::testing::read_whole_file;

const char kRealChangelog[] = "data/inferencex/perf-changelog.yaml";

std::vector<fs::path> case_dirs() {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(ix::testing::source_path("tests/data/changelog"))) {
    if (entry.is_directory()) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// `args`: "--pr N" and "--repo-url U", whitespace-separated.
CheckOptions read_args(const fs::path& dir) {
  CheckOptions options;
  std::istringstream words(read_whole_file(dir / "args"));
  for (std::string word; words >> word;) {
    std::string value;
    words >> value;
    if (word == "--pr")
      options.pr_number = std::stoll(value);
    else if (word == "--repo-url")
      options.repo_url = value;
    else
      ADD_FAILURE() << dir << "/args: unknown option " << word;
  }
  return options;
}

class ChangelogCase : public ::testing::TestWithParam<fs::path> {};

TEST_P(ChangelogCase, PrintsExpectedText) {
  const fs::path dir = GetParam();
  Source base{"base.yaml", ""};
  Source head{"head.yaml", ""};
  if (fs::exists(dir / "real")) {
    const std::string real_path = ix::testing::shared_path(kRealChangelog);
    if (real_path.empty()) GTEST_SKIP() << ix::testing::shared_missing_message(kRealChangelog);
    std::string name = read_whole_file(dir / "real");
    while (!name.empty() && name.back() == '\n') name.pop_back();
    auto files = testing::build_real_case(name, read_whole_file(real_path));
    ASSERT_TRUE(files.has_value()) << dir << "/real names no mutation: " << name;
    base.bytes = files->base;
    head.bytes = files->head;
  } else {
    base.bytes = read_whole_file(dir / "base.yaml");
    head.bytes = read_whole_file(dir / "head.yaml");
  }
  if (const char* dump = std::getenv("IXBENCH_CHANGELOG_CASES_DUMP")) {
    const fs::path out = fs::path(dump) / dir.filename();
    fs::create_directories(out);
    std::ofstream(out / "base.yaml", std::ios::binary) << base.bytes;
    std::ofstream(out / "head.yaml", std::ios::binary) << head.bytes;
  }
  const std::string actual = format_text(check_change(base, head, read_args(dir)));
  if (std::getenv("IXBENCH_REGENERATE_CHANGELOG_CASES") != nullptr) {
    std::ofstream(dir / "expected.txt", std::ios::binary) << actual;
  }
  EXPECT_EQ(actual, read_whole_file(dir / "expected.txt")) << "case " << dir.filename();
}

INSTANTIATE_TEST_SUITE_P(Corpus, ChangelogCase, ::testing::ValuesIn(case_dirs()),
                         [](const ::testing::TestParamInfo<fs::path>& info) {
                           std::string name = info.param.filename().string();
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// The JSON form carries the same findings.
TEST(ChangelogJson, CarriesEveryField) {
  const Source base{"base.yaml",
                    "- config-keys:\n    - a\n  description:\n    - \"x\"\n  pr-link: "
                    "https://github.com/o/r/pull/1\n"};
  Source head = base;
  head.label = "head.yaml";
  head.bytes += "\n- config-keys:\n    - b\n  description:\n    - \"y\"\n  pr-link: TBD\n";
  const char* expected =
      R"j({"ok":false,"base_entries":1,"head_entries":2,"appended":1,"corrections":0,"findings":[{"rule":"pr-link",)j"
      R"j("severity":"error","file":"head.yaml","line":11,"column":12,"message":"the new entry at line 7 has )j"
      R"j(pr-link \"TBD\": on main a new entry's pr-link must be https://github.com/<org>/<repo>/pull/<number>",)j"
      R"j("fix":"set pr-link to the URL of the pull request that adds the entry )j"
      R"j((https://github.com/<org>/<repo>/pull/<number>)"}]})j"
      "\n";
  EXPECT_EQ(format_json(check_change(base, head, {})), expected);
}

}  // namespace
}  // namespace ix::changelog
