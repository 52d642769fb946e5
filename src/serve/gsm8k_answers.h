// GSM8K answer mode of `ixbench sim serve` (--gsm8k-answers DIR): the output text of a request
// whose prompt ends with a GSM8K test question is a worked answer to that question, so `ixbench
// eval gsm8k` (and lm-eval) can be tested end to end against the simulator.
//
// The question is the text after the prompt's last "Question: " up to the next
// "\nEnd your response" (InferenceX's gsm8k.yaml) or "\nAnswer:" (lm-eval's gsm8k task), or the
// end; the prompt is a chat request's last user message, or a completion request's prompt text.
// It is looked up exactly among test.jsonl's questions.
//
// Each problem gets one verdict, drawn from the seed and the problem's index alone (not from the
// request), so the same problem is answered the same way at any concurrency and in any order:
//   - correct (probability `accuracy`): the dataset's solution with its <<...>> calculator
//     annotations removed, ending in its "#### N" line;
//   - wrong: the same solution ending "#### M", M a different number;
//   - runaway (probability `runaway_rate`, drawn independently): the server ignores the request's
//     stop strings and stop token ids and runs on past the answer to max_tokens: the family's
//     end-of-turn marker, then a junk suffix of repeated "<role marker>Question: ... #### 7"
//     fragments whose numbers all differ from N. A client that cuts the completion at the first
//     marker recovers the answer; one that does not scores it wrong with strict-match (the last
//     "#### N") and flexible-extract (the last number) alike: the failure InferenceX hit with
//     DeepSeek-V4, whose end-of-turn marker was not among the eval's stop strings.
//
// The answer ends with a natural stop (finish "stop") after its own tokens, unless max_tokens cuts
// it first ("length"); runaway output always ends at max_tokens ("length").
//
// Thread-safety: a loaded Gsm8kAnswerKey is immutable; every const member may be called from any
// number of threads. The free functions are pure.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "eval/model_family.h"
#include "serve/openai_request.h"
#include "serve/text_codec.h"

namespace ix::serve {

inline constexpr double kDefaultGsm8kAccuracy = 0.95;
// The end-of-turn marker of ModelFamily::kNone (family_markers has none): the Llama-2 style EOS
// that lm-eval's gsm8k task stops at.
inline constexpr std::string_view kPlainEndOfTurn = "</s>";

struct Gsm8kAnswerOptions {
  std::filesystem::path dir;  // holds test.jsonl
  double accuracy = kDefaultGsm8kAccuracy;
  double runaway_rate = 0.0;
  // Whose end-of-turn and role markers a runaway emits; nullopt: guessed from the served model name
  // (ModelFamily::kNone when the name names no family).
  std::optional<eval::ModelFamily> family;
};

// The question of the last GSM8K prompt in `prompt`; nullopt when it holds no "Question: ".
std::optional<std::string_view> gsm8k_question(std::string_view prompt);

// The dataset's answer without its <<...>> calculator annotations ("2+1=<<2+1=3>>3" -> "2+1=3").
std::string gsm8k_reference_solution(std::string_view answer);

// A number that differs from `final_answer` (as the dataset writes it: "18", "1,000", "-3") once
// "," and "$" are removed: N + offset for an integer (offset != 0), else the number with a digit
// appended.
std::string gsm8k_wrong_number(std::string_view final_answer, int64_t offset);

// `solution` with the number of its last "#### " line replaced by `number` (a line "#### number"
// appended when it has none).
std::string with_final_answer(std::string_view solution, std::string_view number);

struct Gsm8kVerdict {
  bool correct = true;
  bool runaway = false;
  int64_t wrong_offset = 1;  // nonzero, in [-9, 9]: M = N + wrong_offset
};

// The verdict of problem `problem` (0-based index in test.jsonl), from seeded streams named after
// the problem, independent of every other draw.
Gsm8kVerdict draw_gsm8k_verdict(uint64_t seed, size_t problem, double accuracy, double runaway_rate);

// The marker a runaway emits right after the answer: family_markers(family)[0], or
// kPlainEndOfTurn for kNone.
std::string_view end_of_turn_marker(eval::ModelFamily family);

// One fragment of the junk a runaway repeats after the marker, built from the family's role
// markers (the marker itself when the family has none); its only number, in a "#### " line and
// in the text, differs from `final_answer` in its first character, so no cut of it reads as the
// answer either.
std::string runaway_junk(eval::ModelFamily family, std::string_view final_answer);

// One problem's output as tokens: the answer, then (past its natural end: a runaway, a request's
// ignore_eos, or min_tokens beyond the answer) the marker once and the junk repeated without end.
struct AnswerScript {
  size_t problem = 0;
  bool correct = true;
  bool runaway = false;
  std::vector<OutputToken> answer;
  std::vector<OutputToken> marker;
  std::vector<OutputToken> junk;  // never empty

  // Output token `index` (any index: the junk repeats).
  const OutputToken& token(size_t index) const;
  int32_t answer_tokens() const { return static_cast<int32_t>(answer.size()); }
  // The text of the first `tokens` tokens.
  std::string text(size_t tokens) const;
};

// How many tokens a request generates from `script`, and whether that is its natural end (finish
// "stop"): the answer's tokens (at least 1, raised to min_tokens: no end before them) when they fit
// in max_tokens; else, and always for a runaway or a request with ignore_eos, max_tokens (finish
// "length").
struct ScriptedLength {
  int32_t tokens = 0;
  bool natural_end = false;
};
ScriptedLength scripted_length(const AnswerScript& script, int64_t max_tokens, int64_t min_tokens,
                               bool ignore_eos = false);

class Gsm8kAnswerKey {
 public:
  // Loads DIR/test.jsonl and renders every problem's script with `codec`. `model_name` (the served
  // name) picks the family when options.family is not given. Errors: load_gsm8k_split's (file:line
  // for a malformed line), kInvalidArgument for a rate outside [0, 1] (naming its flag).
  static Result<std::unique_ptr<Gsm8kAnswerKey>> load(const Gsm8kAnswerOptions& options, const TextCodec& codec,
                                                      std::string_view model_name, uint64_t seed);

  // The script of the last GSM8K question of the request's prompt (chat: the last user message;
  // completions: the prompt text); nullptr when the prompt holds no question of the test split.
  const AnswerScript* find(const OpenAiRequest& request) const;
  // The script of the question `question` exactly; nullptr when it is not one.
  const AnswerScript* find_question(std::string_view question) const;

  size_t size() const { return scripts_.size(); }
  const AnswerScript& script(size_t problem) const { return scripts_[problem]; }
  eval::ModelFamily family() const { return family_; }
  // One line for the start log: problems, file, rates, verdict counts, family and marker.
  std::string description() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };

  Gsm8kAnswerKey() = default;

  Gsm8kAnswerOptions options_;
  std::filesystem::path file_;
  eval::ModelFamily family_ = eval::ModelFamily::kNone;
  std::vector<AnswerScript> scripts_;
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> by_question_;
};

}  // namespace ix::serve
