#include <fmt/format.h>

#include "run/recipe.h"

namespace ix::run {
namespace {

constexpr std::string_view kRefused = "$`;|&<>()";

// One word's characters after an opening quote at text[pos - 1]; advances `pos` past the closing
// quote.
Result<void> quoted(std::string_view text, size_t& pos, char quote, std::string& word, int line) {
  while (pos < text.size() && text[pos] != quote) {
    if (quote == '"' && text[pos] == '\\' && pos + 1 < text.size() &&
        std::string_view("\"\\$`\n").find(text[pos + 1]) != std::string_view::npos) {
      if (text[pos + 1] != '\n') word += text[pos + 1];
      pos += 2;
      continue;
    }
    word += text[pos++];
  }
  if (pos >= text.size())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("rendered command line {}: the {} quote opened there is never closed", line, quote));
  ++pos;
  return {};
}

}  // namespace

Result<std::vector<std::string>> split_shell_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  int line = 1;
  size_t pos = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      line += c == '\n';
      ++pos;
      continue;
    }
    if (c == '\\') {
      if (pos + 1 < text.size() && text[pos + 1] != '\n') {
        word += text[pos + 1];
        in_word = true;
      }
      line += pos + 1 < text.size() && text[pos + 1] == '\n';
      pos += 2;
      continue;
    }
    if (c == '\'' || c == '"') {
      const int opened = line;
      ++pos;
      const size_t start = pos;
      if (auto ok = quoted(text, pos, c, word, opened); !ok) return std::unexpected(ok.error());
      for (size_t k = start; k < pos; ++k) line += text[k] == '\n';
      in_word = true;
      continue;
    }
    if (kRefused.find(c) != std::string_view::npos)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("rendered command line {}: unquoted '{}': a recipe command is read as plain words (no "
                              "variables, pipes, redirections or command lists); quote it, or put the value in the "
                              "template ({{{{ ... }}}})",
                              line, c));
    word += c;
    in_word = true;
    ++pos;
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string shell_quote(std::string_view word) {
  constexpr std::string_view kSafe = "_@%+=:,./-";
  bool bare = !word.empty();
  for (char c : word) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && kSafe.find(c) == std::string_view::npos) bare = false;
  }
  if (bare) return std::string(word);
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace ix::run
