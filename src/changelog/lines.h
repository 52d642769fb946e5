// Line arithmetic over a file's bytes, shared by the file rules and the change rules.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ix::changelog {

struct Position {
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in bytes
};

class Lines {
 public:
  explicit Lines(std::string_view text);
  // Number of lines (a final line without '\n' counts; the empty text after a final '\n' does not).
  int count() const { return static_cast<int>(starts_.size()); }
  // Line `line` (1-based) without its '\n'; empty past the end.
  std::string_view line(int line) const;
  // Line `line` with its '\n' when it has one.
  std::string_view raw_line(int line) const;
  size_t offset(int line) const { return starts_[static_cast<size_t>(line - 1)]; }
  Position position(size_t offset) const;

 private:
  std::string_view text_;
  std::vector<size_t> starts_;
};

// A line quoted for a message: in double quotes, control bytes escaped, cut after 80 bytes.
std::string quote_line(std::string_view line);

}  // namespace ix::changelog
