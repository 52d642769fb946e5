// PCRE2 regex wrapper for pre-tokenizer Split patterns (internal to src/tokenizer/).
//
// HF tokenizers compiles Split patterns with Oniguruma. PCRE2 (UTF + UCP, JIT) agrees on the
// constructs these patterns use (\p{..} classes, possessive-free backtracking, lookahead, (?i:))
// except for two things compile() rewrites: `\s`/`\S` (PCRE2's UCP \s also matches U+180E,
// Oniguruma's is exactly the Unicode White_Space property), and general-category classes
// (`\p{L}`, `\p{S}`, ...): HF's Oniguruma has Unicode 16 tables, PCRE2 10.42 Unicode 14, so each
// class gets the code points assigned since (unicode_delta.inc, generated from the oracle).
//
// Thread-safety: a compiled Regex is immutable and may be used from many threads at once; match
// state (match data, JIT stack) is thread-local.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"

namespace ix::tok {

class Regex {
 public:
  static Result<Regex> compile(std::string_view pattern);

  // Calls on_match(start, end) for each successive non-overlapping match in `subject`, which
  // must be valid UTF-8. An empty match advances by one character (as Oniguruma's find_iter).
  template <typename F>
  void for_each_match(std::string_view subject, F&& on_match) const {
    size_t start = 0;
    size_t match_start = 0;
    size_t match_end = 0;
    while (start <= subject.size() && find(subject, start, match_start, match_end)) {
      on_match(match_start, match_end);
      if (match_end > match_start) {
        start = match_end;
      } else {
        if (match_end >= subject.size()) break;
        start = match_end + 1;
        while (start < subject.size() && (static_cast<unsigned char>(subject[start]) & 0xC0) == 0x80) ++start;
      }
    }
  }

  // First match at or after `start`; false when none.
  bool find(std::string_view subject, size_t start, size_t& match_start, size_t& match_end) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  Regex(std::shared_ptr<const Code> code, std::string pattern);
  std::shared_ptr<const Code> code_;
  std::string pattern_;
};

// Oniguruma-compatible rewrite of \s and \S (exposed for tests).
std::string rewrite_whitespace_classes(std::string_view pattern);

}  // namespace ix::tok
