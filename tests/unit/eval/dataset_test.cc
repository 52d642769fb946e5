// GSM8K files: problems in order with their line numbers; each malformed line is an error naming
// file:line and what is wrong.
#include <gtest/gtest.h>

#include "common/file_io.h"
#include "eval/gsm8k_dataset.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::eval {
namespace {

std::filesystem::path write(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  const auto path = dir / name;
  EXPECT_TRUE(files::write_file(path, text).has_value());
  return path;
}

TEST(Gsm8kDataset, LoadsProblemsWithLineNumbersAndSkipsBlankLines) {
  const auto dir = ix::testing::scratch_dir("gsm8k_dataset");
  auto path =
      write(dir, "test.jsonl",
            "{\"question\": \"Q1\", \"answer\": \"A\\n#### 1\"}\n\n{\"question\": \"Q2\", \"answer\": \"#### 2\"}\r\n");
  auto split = load_gsm8k_split(path);
  ASSERT_TRUE(split) << split.error().message();
  ASSERT_EQ(split->problems.size(), 2U);
  EXPECT_EQ(split->problems[1].question, "Q2");
  EXPECT_EQ(split->problems[1].line, 3);
  EXPECT_EQ(gsm8k_final_answer(split->problems[0].answer), "1");
  EXPECT_EQ(gsm8k_final_answer("no mark"), "");
}

TEST(Gsm8kDataset, MalformedLinesAreReportedWithFileAndLine) {
  const auto dir = ix::testing::scratch_dir("gsm8k_dataset");
  const std::string good = "{\"question\": \"Q\", \"answer\": \"#### 1\"}\n";
  struct Case {
    std::string line;
    std::string says;
  };
  for (const Case& c : {Case{"{\"question\": \"Q\", \"answer\": ", "JSON"}, Case{"[1, 2]", "expected a JSON object"},
                        Case{"{\"question\": \"Q\"}", "missing field 'answer'"},
                        Case{"{\"question\": 3, \"answer\": \"x\"}", "'question' must be a string"},
                        Case{"{\"question\": \"\", \"answer\": \"x\"}", "'question' is empty"}}) {
    auto path = write(dir, "bad.jsonl", good + good + c.line + "\n");
    auto split = load_gsm8k_split(path);
    ASSERT_FALSE(split) << c.line;
    EXPECT_NE(split.error().message().find(path.string() + ":3"), std::string::npos) << split.error().message();
    EXPECT_NE(split.error().message().find(c.says), std::string::npos) << split.error().message();
  }
}

TEST(Gsm8kDataset, EmptyMissingAndDirectoryInputsAreErrors) {
  const auto dir = ix::testing::scratch_dir("gsm8k_dataset");
  auto empty = load_gsm8k_split(write(dir, "empty.jsonl", "\n\n"));
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message().find("no GSM8K problem"), std::string::npos);
  auto missing = load_gsm8k(dir / "nowhere");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("test.jsonl"), std::string::npos) << missing.error().message();
  EXPECT_FALSE(load_gsm8k_split(dir).has_value());
}

TEST(Gsm8kDataset, TheRealSplitsHaveTheirKnownSizes) {
  const std::string dir = ix::testing::shared_path("data/gsm8k");
  if (dir.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/gsm8k");
  auto data = load_gsm8k(dir);
  ASSERT_TRUE(data) << data.error().message();
  EXPECT_EQ(data->test.problems.size(), 1319U);
  EXPECT_EQ(data->train.problems.size(), 7473U);
  EXPECT_EQ(gsm8k_final_answer(data->test.problems[0].answer), "18");
}

TEST(Gsm8kDataset, DirectoryComesFromTheFlagOrTheEnvironment) {
  EXPECT_EQ(gsm8k_dir("/x").value(), "/x");
  ::unsetenv("IXBENCH_GSM8K_DIR");
  auto none = gsm8k_dir("");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("--dataset-dir"), std::string::npos);
  ::setenv("IXBENCH_GSM8K_DIR", "/from/env", 1);
  EXPECT_EQ(gsm8k_dir("").value(), "/from/env");
  ::unsetenv("IXBENCH_GSM8K_DIR");
}

}  // namespace
}  // namespace ix::eval
