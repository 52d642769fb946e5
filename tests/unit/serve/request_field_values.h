// The request fields sim serve reads and the JSON values (every type, the integer and float
// boundaries, malformed nested shapes) that the parser and server sweeps give each of them.
#pragma once

namespace ix::serve::request_sweep {

inline constexpr const char* kRequestFields[] = {
    "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "min_tokens", "stream", "stream_options",
    "stop", "stop_token_ids", "ignore_eos", "include_stop_str_in_output", "add_special_tokens",
    "truncate_prompt_tokens", "temperature", "top_p", "top_k", "min_p", "n", "seed", "logprobs", "top_logprobs",
    "prompt_logprobs", "echo", "frequency_penalty", "presence_penalty", "repetition_penalty", "user",
    // /tokenize and /detokenize
    "tokens", "add_generation_prompt", "continue_final_message", "return_token_strs"};

inline constexpr const char* kBoundaryJsonValues[] = {
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1",
    "3",
    "2147483647",
    "2147483648",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "1e308",
    "-1e308",
    "0.5",
    "1e-320",
    "\"\"",
    "\"x\"",
    "\"\\u0000\\ud800\"",
    "[]",
    "[0]",
    "[1]",
    "[-1]",
    "[2147483647]",
    "[\"\"]",
    "[\"a\"]",
    "[null]",
    "[[1]]",
    "{}",
    R"({"include_usage":true})",
    R"({"include_usage":true,"continuous_usage_stats":"x"})",
    R"([{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url"}]}])",
    R"([{"role":"tool","content":null}])",
    R"([{"content":"no role"}])"};

}  // namespace ix::serve::request_sweep
