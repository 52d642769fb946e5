// UTF-8 helpers: validation (RFC 3629, as Rust and boost::json check it), lossy repair and
// code-point encoding; used by the tokenizer and the stream-chunk scanner.
//
// Validation and repair follow Rust's String::from_utf8_lossy (the Unicode "maximal subpart"
// practice): each maximal invalid subsequence becomes one U+FFFD. That is what HF tokenizers
// produce when decoding bytes that do not form characters. All functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ix::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence at text[pos], or 0 when text[pos..] starts an invalid one
// (in which case *invalid_len, if given, receives the maximal-subpart length to replace).
size_t valid_sequence_length(std::string_view text, size_t pos, size_t* invalid_len = nullptr);

bool is_valid(std::string_view text);
// Offset of the first byte that does not start a valid sequence, or npos when all of it is valid.
size_t first_invalid(std::string_view text);
// Appends `text` to `out` with invalid sequences replaced by U+FFFD.
void append_lossy(std::string_view text, std::string& out);
std::string to_valid(std::string_view text);

// Decodes the (valid) code point at text[pos], advancing pos.
char32_t next_code_point(std::string_view text, size_t& pos);
void append_code_point(char32_t cp, std::string& out);

}  // namespace ix::utf8
