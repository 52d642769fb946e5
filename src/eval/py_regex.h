// The part of Python's `re` that lm-eval's filters and metrics use, on PCRE2: re.findall (with
// its result shapes) and re.sub with a literal replacement. The patterns of lm-eval task files
// (`#### (\-?[0-9\.\,]+)`, `(?s).*#### `, `\.$`) mean the same in both engines: `$` matches at the
// end or before a final newline, `(?s)` makes `.` match newlines. Subjects need not be valid
// UTF-8 (a server's bytes are matched as they are).
//
// Thread-safety: a compiled PyRegex is immutable and may be used from many threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::eval {

class PyRegex {
 public:
  // Errors: kInvalidArgument with PCRE2's message and the offset in the pattern.
  static Result<PyRegex> compile(std::string_view pattern);

  // re.findall: one entry per non-overlapping match, in order. Each entry holds the whole match
  // when the pattern has no group, else every group ("" for a group that did not take part).
  std::vector<std::vector<std::string>> findall(std::string_view subject) const;
  // re.sub(pattern, replacement, subject) with `replacement` taken literally.
  std::string sub(std::string_view subject, std::string_view replacement = {}) const;

  int group_count() const { return groups_; }
  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  PyRegex(std::shared_ptr<const Code> code, std::string pattern, int groups);
  // Successive matches as ovector pairs (start, end) for group 0..groups_.
  template <typename F>
  void for_each_match(std::string_view subject, F&& on_match) const;

  std::shared_ptr<const Code> code_;
  std::string pattern_;
  int groups_ = 0;
};

}  // namespace ix::eval
