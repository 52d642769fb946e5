#include "review/text.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

namespace ix::review {

int line_holding(std::string_view text, std::string_view needle, int from) {
  int found = 0;
  for_each_line(text, [&](int number, std::string_view line) {
    if (found == 0 && number >= from && line.find(needle) != std::string_view::npos) found = number;
  });
  return found;
}

int key_line(std::string_view text, std::string_view key) {
  int found = 0;
  for_each_line(text, [&](int number, std::string_view line) {
    if (found == 0 && line.starts_with(key) && line.substr(key.size()).starts_with(':')) found = number;
  });
  return found;
}

int first_changed_line(std::string_view before, std::string_view after) {
  if (before == after) return 0;
  int line = 1;
  for (size_t i = 0; i < before.size() && i < after.size() && before[i] == after[i]; ++i) {
    if (after[i] == '\n') ++line;
  }
  return line;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::string trim_text(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return std::string(text.substr(0, 160));
}

std::string code_line(std::string_view line) {
  const size_t hash = line.find('#');
  if (hash != std::string_view::npos && (hash == 0 || line[hash - 1] == ' ' || line[hash - 1] == '\t'))
    line = line.substr(0, hash);
  return std::string(line);
}

std::optional<double> parse_number(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string format_number(double value) {
  return fmt::format("{}", std::round(value * 1e6) / 1e6);
}

}  // namespace ix::review
