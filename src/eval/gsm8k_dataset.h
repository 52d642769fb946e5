// The GSM8K dataset (openai/gsm8k "main"): JSON Lines files of {"question", "answer"} objects,
// test.jsonl (1319 problems) and train.jsonl (7473, the few-shot pool), in the dataset's order.
//
// A line that is not such an object is an error naming file:line and what is wrong; blank lines
// are skipped (a trailing newline is not a problem). Nothing is read from the network: the files
// come from a directory the user gives (--dataset-dir, $IXBENCH_GSM8K_DIR).
//
// Thread-safety: plain values and functions.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::eval {

// A split file larger than this is refused (the real test split is 0.7 MB, train 4 MB).
inline constexpr size_t kMaxGsm8kFileBytes = 64 * 1024 * 1024;

struct Gsm8kProblem {
  std::string question;
  std::string answer;  // the worked solution, ending "#### <number>"
  int line = 0;        // 1-based line in its file
};

struct Gsm8kSplit {
  std::filesystem::path path;
  std::vector<Gsm8kProblem> problems;
};

struct Gsm8kDataset {
  Gsm8kSplit test;
  Gsm8kSplit train;
};

// One split file. Errors: kNotFound / kIo from reading; kParse "<file>:<line>: ..." for a line
// that is not a JSON object with string fields "question" and "answer"; kInvalidArgument for a
// file with no problem at all.
Result<Gsm8kSplit> load_gsm8k_split(const std::filesystem::path& file);

// test.jsonl and train.jsonl of `dir`.
Result<Gsm8kDataset> load_gsm8k(const std::filesystem::path& dir);

// The directory a command uses: `given` when not empty, else $IXBENCH_GSM8K_DIR; an error that
// says how to give one when neither is set.
Result<std::filesystem::path> gsm8k_dir(const std::filesystem::path& given);

// The number after the last "#### " of a reference answer, as written ("1,000", "-3"); empty when
// the answer has none.
std::string_view gsm8k_final_answer(std::string_view answer);

}  // namespace ix::eval
