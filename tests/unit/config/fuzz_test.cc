// Fuzz-style robustness: truncated, mutated and garbage YAML must give diagnostics, never a crash
// or an exception.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/rng.h"
#include "config/master_config.h"
#include "support/subprocess.h"

namespace ix::config {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string seed_text() {
  return read_all(ix::testing::source_path("tests/data/config/valid-master.yaml"));
}

// Parses both as a master config and as a runner config; returns whether anything was reported.
bool exercise(const std::string& text) {
  std::vector<Diagnostic> diagnostics;
  auto configs = parse_master_configs(text, "fuzz.yaml", diagnostics);
  RunnerConfig runners = parse_runner_config(text, "fuzz.yaml", diagnostics);
  check_config_set(configs, &runners, diagnostics);
  for (const auto& diagnostic : diagnostics) {
    EXPECT_FALSE(diagnostic.to_string().empty());
    EXPECT_EQ(diagnostic.where.file, "fuzz.yaml");
  }
  return !diagnostics.empty();
}

TEST(ConfigFuzz, EveryTruncationOfAValidFileIsHandled) {
  std::string text = seed_text();
  ASSERT_FALSE(text.empty());
  size_t reported = 0;
  for (size_t length = 0; length < text.size(); ++length) reported += exercise(text.substr(0, length));
  // Most prefixes are invalid (missing fields, unterminated flow collections).
  EXPECT_GT(reported, text.size() / 2);
}

TEST(ConfigFuzz, RandomByteMutationsAreHandled) {
  std::string text = seed_text();
  Rng rng = Rng::stream(7, "config-fuzz");
  static constexpr char kAlphabet[] = ":-[]{},#&*!|>'\"%@` \n\t0123456789abcxyz\x01\xff";
  for (int iteration = 0; iteration < 600; ++iteration) {
    std::string mutated = text;
    int edits = 1 + static_cast<int>(rng.next() % 8);
    for (int edit = 0; edit < edits; ++edit) {
      size_t at = rng.next() % mutated.size();
      char c = kAlphabet[rng.next() % (sizeof(kAlphabet) - 1)];
      switch (rng.next() % 3) {
        case 0: mutated[at] = c; break;
        case 1: mutated.insert(mutated.begin() + static_cast<long>(at), c); break;
        default: mutated.erase(at, 1 + rng.next() % 16); break;
      }
      if (mutated.empty()) mutated = "x";
    }
    exercise(mutated);
  }
}

TEST(ConfigFuzz, GarbageInputIsReported) {
  Rng rng = Rng::stream(11, "config-garbage");
  for (int iteration = 0; iteration < 300; ++iteration) {
    std::string garbage(static_cast<size_t>(rng.next() % 400), '\0');
    for (auto& c : garbage) c = static_cast<char>(rng.next() & 0xff);
    exercise(garbage);
  }
  EXPECT_TRUE(exercise("{{{{"));
  EXPECT_TRUE(exercise("key: [unterminated"));
  EXPECT_TRUE(exercise("\t- tab indented"));
  EXPECT_TRUE(exercise(std::string(5000, '[')));
  EXPECT_TRUE(exercise("a: *undefined_alias\n"));
}

TEST(ConfigFuzz, TruncatedRealMasterConfigIsHandled) {
  std::string path = ix::testing::shared_path("data/inferencex/amd-master.yaml");
  if (path.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/amd-master.yaml");
  std::string text = read_all(path);
  for (size_t length = 0; length < text.size(); length += 997) exercise(text.substr(0, length));
}

}  // namespace
}  // namespace ix::config
