// parse_changelog_yaml() builds exactly parse_yaml()'s tree: on InferenceX's real changelog,
// on every file of the changelog case corpus, and on entries outside its fast shape.
#include "config/perf_changelog_yaml.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::config {
namespace {

// "" when equal, else where the trees first differ.
std::string difference(const YamlNode& a, const YamlNode& b, const std::string& path) {
  const std::string at = path + " (" + std::to_string(a.mark.line) + ":" + std::to_string(a.mark.column) + " vs " +
                         std::to_string(b.mark.line) + ":" + std::to_string(b.mark.column) + ")";
  if (a.kind != b.kind || a.mark.line != b.mark.line || a.mark.column != b.mark.column || a.scalar != b.scalar ||
      a.plain != b.plain || a.items.size() != b.items.size() || a.entries.size() != b.entries.size()) {
    return at + ": '" + a.scalar + "' vs '" + b.scalar + "'";
  }
  for (size_t index = 0; index < a.items.size(); ++index) {
    auto found = difference(a.items[index], b.items[index], path + "[" + std::to_string(index) + "]");
    if (!found.empty()) return found;
  }
  for (size_t index = 0; index < a.entries.size(); ++index) {
    auto found = difference(a.entries[index].first, b.entries[index].first, path + ".key" + std::to_string(index));
    if (found.empty()) {
      found = difference(a.entries[index].second, b.entries[index].second, path + "." + a.entries[index].first.scalar);
    }
    if (!found.empty()) return found;
  }
  return "";
}

void expect_same_tree(const std::string& text, const std::string& name) {
  auto fast = parse_changelog_yaml(text, name);
  auto reference = parse_yaml(text, name);
  ASSERT_EQ(fast.has_value(), reference.has_value()) << name;
  if (!fast) {
    EXPECT_EQ(fast.error().message(), reference.error().message()) << name;
    return;
  }
  EXPECT_EQ(difference(*fast, *reference, "root"), "") << name;
}

TEST(PerfChangelogYaml, RealFileTreeEqualsParseYaml) {
  const char kRelative[] = "data/inferencex/perf-changelog.yaml";
  const std::string path = ix::testing::shared_path(kRelative);
  if (path.empty()) GTEST_SKIP() << ix::testing::shared_missing_message(kRelative);
  expect_same_tree(ix::testing::read_whole_file(path), "perf-changelog.yaml");
}

TEST(PerfChangelogYaml, CorpusFilesTreeEqualsParseYaml) {
  namespace fs = std::filesystem;
  for (const auto& entry : fs::recursive_directory_iterator(ix::testing::source_path("tests/data/changelog"))) {
    if (entry.path().extension() == ".yaml") {
      expect_same_tree(ix::testing::read_whole_file(entry.path()), entry.path().string());
    }
  }
}

TEST(PerfChangelogYaml, ShapesOutsideTheFastPath) {
  const std::string entry = "- config-keys:\n    - a\n  description:\n    - \"x\"\n  pr-link: https://x/pull/1\n";
  for (const std::string& odd : {
           std::string("- config-keys:\n  - indentless\n  description: [a, b]\n"),
           std::string("- config-keys:\n    - a # comment\n  pr-link:\n    https://x/pull/2\n"),
           std::string("- config-keys:\n    - \"esc\\\"aped\"\n    - 'it''s'\n    - multi\n      line\n"),
           std::string("- config-keys:\n    - &anchor a\n    - *anchor\n"),
           std::string("- config-keys:\n    - a\n  evals-only: true\n  eval-min-prefill-ep: 4\n  x: 0.80\n"),
           std::string("- config-keys:\n    - \"unclosed\n"),
           std::string("- config-keys:\n    - 'unclosed\n"),
           std::string("- config-keys: [a,\n"),
           std::string("- config-keys:\n    - a\n  description: |\n    text\n"),
           std::string("- config-keys:\n    - a\n---\n- config-keys:\n    - b\n"),
           std::string("- config-keys:\n    - a\n  description:\n  description:\n    - b\n"),
       }) {
    expect_same_tree(entry + "\n" + odd, odd);
    expect_same_tree(odd + "\n" + entry, odd);
  }
}

}  // namespace
}  // namespace ix::config
