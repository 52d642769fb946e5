// Model families and the text markers that end a turn in each (EOS and chat-role markers).
//
// An eval sends these as stop strings next to the task's own (`</s>`, `<|im_end|>`), and cuts a
// completion at the first of them if the server returned text past one anyway: a server that
// ignores stops, or a template whose end-of-turn token is not among the stops, otherwise runs on
// into a junk suffix until the token cap, and the junk holds numbers the answer filters pick up.
//
// Markers (the families' tokenizer_config.json / generation_config.json eos tokens and the role
// tokens of their chat templates; DeepSeek-V4's list is InferenceX's, U+202E included):
//   deepseek     <｜end▁of▁sentence｜> <｜User｜> <｜Assistant｜>
//   deepseek_v4  <｜end▁of▁sentence｜> <｜begin▁of▁sentence｜> <｜User｜> <｜Assistant｜> U+202E
//   qwen         <|im_end|> <|endoftext|> <|im_start|>
//   llama        <|eot_id|> <|end_of_text|> <|eom_id|> <|start_header_id|>
//   gptoss       <|return|> <|call|> <|endoftext|>
//   kimi         <|im_end|> [EOS] <|im_user|> <|im_assistant|>
//   glm          <|endoftext|> <|user|> <|observation|>
//   minimax      [e~[ ]~b] ]~!b[
//
// Thread-safety: constant tables.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::eval {

enum class ModelFamily { kNone, kDeepseek, kDeepseekV4, kQwen, kLlama, kGptOss, kKimi, kGlm, kMinimax };

// "deepseek", "deepseek_v4", ... (the --model-family names); "none" for kNone.
std::string_view model_family_name(ModelFamily family);
// The family of a --model-family value. Errors: kInvalidArgument naming the choices.
Result<ModelFamily> parse_model_family(std::string_view name);
// The family a served model's name points to ("deepseek-ai/DeepSeek-R1-0528" -> deepseek,
// "DeepSeek-V4-Pro" -> deepseek_v4, "Qwen/Qwen3.5-397B" -> qwen, "openai/gpt-oss-120b" -> gptoss);
// nullopt when the name names none of them.
std::optional<ModelFamily> guess_model_family(std::string_view model);

// The family's end-of-turn markers, its EOS first (empty for kNone).
std::span<const std::string_view> family_markers(ModelFamily family);

// The stop strings of a request: `task_stops` (in order), then the family's markers not already
// among them.
std::vector<std::string> stop_strings(const std::vector<std::string>& task_stops, ModelFamily family);

// Where `text` should end: the earliest of `markers` in it and its position; nullopt when none
// occurs.
struct MarkerCut {
  size_t at = 0;
  const std::string* marker = nullptr;
};
std::optional<MarkerCut> find_cut(std::string_view text, const std::vector<std::string>& markers);
// find_cut's position alone.
std::optional<size_t> first_marker(std::string_view text, const std::vector<std::string>& markers);

// The generation cap a family gets when the user gives none: DeepSeek-V4 1024 (its runaway
// generations fill any larger cap), others nullopt (the task's budget).
std::optional<int64_t> family_default_max_tokens(ModelFamily family);

}  // namespace ix::eval
