// The GSM8K task ixbench runs when no --task file is given: InferenceX's utils/evals/gsm8k.yaml
// (lm-eval's gsm8k task with InferenceX's prompt: "End your response with the answer on the last
// line, formatted as: #### [number]"), parsed by the same reader as a user's file.
#pragma once

#include <string_view>

#include "config/lm_eval_task.h"

namespace ix::eval {

std::string_view builtin_gsm8k_yaml();
// Parsed once; source "built-in gsm8k.yaml".
const config::LmEvalTask& builtin_gsm8k_task();

}  // namespace ix::eval
