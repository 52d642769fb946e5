#include "serve/gsm8k_answers.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "common/rng.h"
#include "common/sanitize.h"
#include "eval/gsm8k_dataset.h"

namespace ix::serve {

namespace {

constexpr std::string_view kQuestionPrefix = "Question: ";
constexpr std::string_view kFinalPrefix = "#### ";
// What follows the question in each prompt format: InferenceX's instruction line, lm-eval's
// answer cue.
constexpr std::string_view kQuestionEnds[] = {"\nEnd your response", "\nAnswer:"};

std::string without_commas_and_dollars(std::string_view number) {
  std::string out;
  for (char c : number)
    if (c != ',' && c != '$') out += c;
  return out;
}

std::optional<int64_t> parse_integer(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

Result<void> check_rate(double value, std::string_view flag) {
  if (value >= 0.0 && value <= 1.0) return {};  // also refuses nan
  return fail(ErrorCode::kInvalidArgument, fmt::format("{} must be a probability in [0, 1], got {}", flag, value));
}

// The text's tokens, through the codec (the answer, marker and junk are split separately, so the
// answer's tokens are the same with and without a run-on).
AnswerScript render_script(size_t problem, const eval::Gsm8kProblem& entry, const Gsm8kVerdict& verdict,
                           eval::ModelFamily family, const TextCodec& codec) {
  const std::string solution = gsm8k_reference_solution(entry.answer);
  const std::string_view final_answer = eval::gsm8k_final_answer(solution);
  AnswerScript script;
  script.problem = problem;
  script.correct = verdict.correct;
  script.runaway = verdict.runaway;
  script.answer = codec.output_pieces(
      verdict.correct ? solution : with_final_answer(solution, gsm8k_wrong_number(final_answer, verdict.wrong_offset)));
  script.marker = codec.output_pieces(end_of_turn_marker(family));
  script.junk = codec.output_pieces(runaway_junk(family, final_answer));
  return script;
}

}  // namespace

std::optional<std::string_view> gsm8k_question(std::string_view prompt) {
  const size_t start = prompt.rfind(kQuestionPrefix);
  if (start == std::string_view::npos) return std::nullopt;
  std::string_view question = prompt.substr(start + kQuestionPrefix.size());
  size_t end = question.size();
  for (std::string_view marker : kQuestionEnds) end = std::min(end, question.find(marker));
  return question.substr(0, end);
}

std::string gsm8k_reference_solution(std::string_view answer) {
  std::string out;
  out.reserve(answer.size());
  size_t pos = 0;
  while (pos < answer.size()) {
    const size_t open = answer.find("<<", pos);
    const size_t close = open == std::string_view::npos ? open : answer.find(">>", open + 2);
    if (close == std::string_view::npos) break;  // no (closed) annotation left
    out.append(answer, pos, open - pos);
    pos = close + 2;
  }
  out.append(answer.substr(std::min(pos, answer.size())));
  return out;
}

std::string gsm8k_wrong_number(std::string_view final_answer, int64_t offset) {
  const std::string plain = without_commas_and_dollars(final_answer);
  if (offset == 0) offset = 1;
  if (auto value = parse_integer(plain)) {
    // At the ends of int64 the offset goes the other way.
    const bool fits = offset > 0 ? *value <= std::numeric_limits<int64_t>::max() - offset
                                 : *value >= std::numeric_limits<int64_t>::min() - offset;
    return std::to_string(fits ? *value + offset : *value - offset);
  }
  return plain + "1";
}

std::string with_final_answer(std::string_view solution, std::string_view number) {
  const size_t at = solution.rfind(kFinalPrefix);
  if (at == std::string_view::npos) return fmt::format("{}\n{}{}", solution, kFinalPrefix, number);
  const size_t value_start = at + kFinalPrefix.size();
  const size_t line_end = std::min(solution.size(), solution.find('\n', value_start));
  return fmt::format("{}{}{}", solution.substr(0, value_start), number, solution.substr(line_end));
}

Gsm8kVerdict draw_gsm8k_verdict(uint64_t seed, size_t problem, double accuracy, double runaway_rate) {
  Rng answer = Rng::stream(seed, fmt::format("sim-serve-gsm8k-answer/{}", problem));
  Rng runaway = Rng::stream(seed, fmt::format("sim-serve-gsm8k-runaway/{}", problem));
  Gsm8kVerdict verdict;
  verdict.correct = answer.uniform01() < accuracy;
  const int64_t magnitude = answer.uniform_int(1, 9);
  verdict.wrong_offset = answer.uniform_int(0, 1) == 0 ? magnitude : -magnitude;
  verdict.runaway = runaway.uniform01() < runaway_rate;
  return verdict;
}

std::string_view end_of_turn_marker(eval::ModelFamily family) {
  const auto markers = eval::family_markers(family);
  return markers.empty() ? kPlainEndOfTurn : markers.front();
}

std::string runaway_junk(eval::ModelFamily family, std::string_view final_answer) {
  const auto markers = eval::family_markers(family);
  const std::string_view user = markers.size() > 1 ? markers[1] : end_of_turn_marker(family);
  const std::string_view assistant = markers.size() > 2 ? markers[2] : user;
  const std::string plain = without_commas_and_dollars(final_answer);
  const std::string_view junk_number = !plain.empty() && plain.front() == '7' ? "8" : "7";
  return fmt::format("{}Question: What is the total?\n{}Answer: The total is {}\n{}{}\n", user, assistant, junk_number,
                     kFinalPrefix, junk_number);
}

const OutputToken& AnswerScript::token(size_t index) const {
  if (index < answer.size()) return answer[index];
  index -= answer.size();
  if (index < marker.size()) return marker[index];
  return junk[(index - marker.size()) % junk.size()];
}

std::string AnswerScript::text(size_t tokens) const {
  std::string out;
  for (size_t index = 0; index < tokens; ++index) out += token(index).text;
  return out;
}

ScriptedLength scripted_length(const AnswerScript& script, int64_t max_tokens, int64_t min_tokens, bool ignore_eos) {
  const auto cap = static_cast<int32_t>(std::clamp<int64_t>(max_tokens, 1, std::numeric_limits<int32_t>::max()));
  if (script.runaway || ignore_eos) return {cap, false};
  const int64_t natural = std::max<int64_t>({1, script.answer_tokens(), min_tokens});
  if (natural > cap) return {cap, false};
  return {static_cast<int32_t>(natural), true};
}

Result<std::unique_ptr<Gsm8kAnswerKey>> Gsm8kAnswerKey::load(const Gsm8kAnswerOptions& options, const TextCodec& codec,
                                                             std::string_view model_name, uint64_t seed) {
  if (auto valid = check_rate(options.accuracy, "--gsm8k-accuracy"); !valid) return std::unexpected(valid.error());
  if (auto valid = check_rate(options.runaway_rate, "--gsm8k-runaway-rate"); !valid)
    return std::unexpected(valid.error());
  const std::filesystem::path file = options.dir / "test.jsonl";
  auto split = eval::load_gsm8k_split(file);
  if (!split) return std::unexpected(split.error().with_context("--gsm8k-answers"));
  std::unique_ptr<Gsm8kAnswerKey> key(new Gsm8kAnswerKey());
  key->options_ = options;
  key->file_ = file;
  key->family_ = options.family.value_or(eval::guess_model_family(model_name).value_or(eval::ModelFamily::kNone));
  key->scripts_.reserve(split->problems.size());
  for (size_t index = 0; index < split->problems.size(); ++index) {
    const eval::Gsm8kProblem& problem = split->problems[index];
    const Gsm8kVerdict verdict = draw_gsm8k_verdict(seed, index, options.accuracy, options.runaway_rate);
    key->scripts_.push_back(render_script(index, problem, verdict, key->family_, codec));
    key->by_question_.try_emplace(problem.question, index);  // a repeated question keeps its first answer
  }
  return key;
}

const AnswerScript* Gsm8kAnswerKey::find_question(std::string_view question) const {
  const auto it = by_question_.find(question);
  return it == by_question_.end() ? nullptr : &scripts_[it->second];
}

const AnswerScript* Gsm8kAnswerKey::find(const OpenAiRequest& request) const {
  std::optional<std::string_view> prompt;
  if (request.kind == ApiKind::kChat) {
    const auto last_user = std::find_if(request.messages.rbegin(), request.messages.rend(),
                                        [](const ChatTurn& turn) { return turn.role == "user"; });
    if (last_user != request.messages.rend()) prompt = last_user->content;
  } else if (request.prompt_text) {
    prompt = *request.prompt_text;
  }
  if (!prompt) return nullptr;
  const auto question = gsm8k_question(*prompt);
  return question ? find_question(*question) : nullptr;
}

std::string Gsm8kAnswerKey::description() const {
  const auto correct = std::count_if(scripts_.begin(), scripts_.end(), [](const auto& s) { return s.correct; });
  const auto runaway = std::count_if(scripts_.begin(), scripts_.end(), [](const auto& s) { return s.runaway; });
  return fmt::format(
      "GSM8K answers for {} problems of {}: accuracy {} ({} answered correctly), runaway rate {} ({} run on), "
      "model family {} (end-of-turn marker {})",
      scripts_.size(), printable(file_.string()), options_.accuracy, correct, options_.runaway_rate, runaway,
      eval::model_family_name(family_), printable(end_of_turn_marker(family_)));
}

}  // namespace ix::serve
