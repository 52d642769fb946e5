#include "eval/gsm8k_dataset.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdlib>

#include "common/file_io.h"
#include "common/json_io.h"
#include "common/strings.h"

namespace ix::eval {

namespace bj = boost::json;

namespace {

Result<Gsm8kProblem> parse_problem(std::string_view text, const std::filesystem::path& file, int line) {
  const std::string where = fmt::format("{}:{}", file.string(), line);
  auto value = json::parse(text, where);
  if (!value)
    return fail(ErrorCode::kParse, fmt::format("{}; each line must be one JSON object", value.error().message()));
  if (!value->is_object())
    return fail(ErrorCode::kParse,
                fmt::format("{}: expected a JSON object {{\"question\": ..., \"answer\": ...}}, got {}", where,
                            json::to_string(*value).substr(0, 80)));
  Gsm8kProblem problem;
  problem.line = line;
  for (const char* key : {"question", "answer"}) {
    const bj::value* field = value->as_object().if_contains(key);
    if (field == nullptr)
      return fail(ErrorCode::kParse,
                  fmt::format("{}: missing field '{}' (GSM8K lines hold \"question\" and \"answer\")", where, key));
    if (!field->is_string()) return fail(ErrorCode::kParse, fmt::format("{}: field '{}' must be a string", where, key));
    (std::string_view(key) == "question" ? problem.question : problem.answer) = field->get_string();
  }
  if (problem.question.empty()) return fail(ErrorCode::kParse, fmt::format("{}: field 'question' is empty", where));
  return problem;
}

}  // namespace

Result<Gsm8kSplit> load_gsm8k_split(const std::filesystem::path& file) {
  auto text = files::read_text_file(file, kMaxGsm8kFileBytes, "a GSM8K JSON Lines file");
  if (!text) return std::unexpected(text.error());
  Gsm8kSplit split{.path = file, .problems = {}};
  std::string_view rest = *text;
  int line = 0;
  while (!rest.empty()) {
    ++line;
    const size_t end = rest.find('\n');
    std::string_view row = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    if (strip(row).empty()) continue;
    auto problem = parse_problem(row, file, line);
    if (!problem) return std::unexpected(problem.error());
    split.problems.push_back(std::move(*problem));
  }
  if (split.problems.empty())
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}: no GSM8K problem in the file", file.string()));
  return split;
}

Result<Gsm8kDataset> load_gsm8k(const std::filesystem::path& dir) {
  auto test = load_gsm8k_split(dir / "test.jsonl");
  if (!test) return std::unexpected(test.error());
  auto train = load_gsm8k_split(dir / "train.jsonl");
  if (!train) return std::unexpected(train.error());
  return Gsm8kDataset{.test = std::move(*test), .train = std::move(*train)};
}

Result<std::filesystem::path> gsm8k_dir(const std::filesystem::path& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("IXBENCH_GSM8K_DIR"); env != nullptr && *env != '\0')
    return std::filesystem::path(env);
  return fail(ErrorCode::kInvalidArgument,
              "no GSM8K dataset: give --dataset-dir DIR (a directory with test.jsonl and train.jsonl, e.g. "
              "../shared/data/gsm8k) or set IXBENCH_GSM8K_DIR");
}

std::string_view gsm8k_final_answer(std::string_view answer) {
  const size_t mark = answer.rfind("#### ");
  if (mark == std::string_view::npos) return {};
  return strip(answer.substr(mark + 5));
}

}  // namespace ix::eval
