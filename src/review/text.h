// Line-level helpers the review checks share: iterate a file's lines with their numbers, find
// the line holding some text, quote a line as evidence, read and show numbers.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ix::review {

// Calls on_line(number, line) for each line of `text` (1-based, without the newline).
template <typename OnLine>
void for_each_line(std::string_view text, OnLine on_line) {
  int number = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    on_line(++number, text.substr(begin, end - begin));
    begin = end + 1;
  }
}

// The first line at or after `from` (1-based) that holds `needle`, or 0.
int line_holding(std::string_view text, std::string_view needle, int from = 1);

// The 1-based line where `key:` starts a line (a top-level YAML key), or 0.
int key_line(std::string_view text, std::string_view key);

// The first line (1-based) where `after` differs from `before` (a line added at the end counts), or
// 0 when they are equal.
int first_changed_line(std::string_view before, std::string_view after);

// `text` without leading and trailing white space.
std::string_view trim(std::string_view text);

// A line as evidence: leading/trailing blanks removed, at most 160 characters.
std::string trim_text(std::string_view line);

// A shell line without its trailing comment (`#` at the start or after a blank).
std::string code_line(std::string_view line);

// A number written out in full (`2.49`, `8192`), else nothing.
std::optional<double> parse_number(std::string_view text);

// A number as evidence shows it: shortest form, rounded to 6 decimals (2.78 - 1 is 1.78).
std::string format_number(double value);

}  // namespace ix::review
