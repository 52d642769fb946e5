#include "eval/scoring.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

namespace ix::eval {

Result<TaskScorer> TaskScorer::create(const config::LmEvalTask& task) {
  TaskScorer s;
  for (const auto& f : task.filters) {
    auto regex = PyRegex::compile(f.regex_pattern);
    if (!regex) return std::unexpected(regex.error().with_context(fmt::format("{}: filter '{}'", task.source, f.name)));
    s.names_.push_back(f.name);
    s.filters_.push_back(Filter{std::move(*regex), f.group_select, f.fallback});
  }
  if (s.filters_.empty())
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}: the task has no filter_list", task.source));
  const config::LmEvalMetric& m = task.metrics.front();
  for (const auto& pattern : m.regexes_to_ignore) {
    auto regex = PyRegex::compile(pattern);
    if (!regex) return std::unexpected(regex.error().with_context(fmt::format("{}: regexes_to_ignore", task.source)));
    s.ignore_.push_back(std::move(*regex));
  }
  s.ignore_case_ = m.ignore_case;
  s.ignore_punctuation_ = m.ignore_punctuation;
  s.metric_ = m.metric;
  return s;
}

std::string TaskScorer::extract(size_t filter, std::string_view response) const {
  const Filter& f = filters_[filter];
  auto matches = f.regex.findall(response);
  const auto count = static_cast<int64_t>(matches.size());
  const int64_t index = f.group_select < 0 ? count + f.group_select : f.group_select;
  if (matches.empty() || index < 0 || index >= count) return f.fallback;
  const auto& groups = matches[static_cast<size_t>(index)];
  // One group (or none): that string; several (a tuple): the first non-empty one.
  std::string_view picked;
  bool found = groups.size() == 1;
  if (found) {
    picked = groups.front();
  } else {
    for (const auto& g : groups) {
      if (!g.empty()) {
        picked = g;
        found = true;
        break;
      }
    }
  }
  if (!found) return f.fallback;
  // Python's str.strip(): leading and trailing white space.
  size_t a = 0;
  size_t b = picked.size();
  while (a < b && std::isspace(static_cast<unsigned char>(picked[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(picked[b - 1]))) --b;
  return std::string(picked.substr(a, b - a));
}

std::string TaskScorer::normalize(std::string_view text) const {
  std::string out(text);
  for (const auto& regex : ignore_) out = regex.sub(out);
  if (ignore_case_) {
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (ignore_punctuation_) {
    std::string kept;
    for (char c : out)
      if (!std::ispunct(static_cast<unsigned char>(c))) kept += c;
    out = std::move(kept);
  }
  return out;
}

bool TaskScorer::exact_match(std::string_view prediction, std::string_view reference) const {
  return normalize(prediction) == normalize(reference);
}

std::vector<FilterVerdict> TaskScorer::score(std::string_view response, std::string_view target) const {
  std::vector<FilterVerdict> out;
  out.reserve(filters_.size());
  for (size_t i = 0; i < filters_.size(); ++i) {
    FilterVerdict v;
    v.extracted = extract(i, response);
    v.correct = exact_match(v.extracted, target);
    out.push_back(std::move(v));
  }
  return out;
}

MeanWithStderr mean_with_stderr(const std::vector<double>& values) {
  MeanWithStderr out;
  out.n = values.size();
  if (values.empty()) return out;
  double sum = 0.0;
  for (double v : values) sum += v;
  out.mean = sum / static_cast<double>(values.size());
  if (values.size() < 2) return out;
  double squares = 0.0;
  for (double v : values) squares += (v - out.mean) * (v - out.mean);
  const double stddev = std::sqrt(squares / static_cast<double>(values.size() - 1));
  out.stderr_ = stddev / std::sqrt(static_cast<double>(values.size()));
  return out;
}

}  // namespace ix::eval
