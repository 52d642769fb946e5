#include "changelog/lines.h"

#include <fmt/format.h>

#include <algorithm>

namespace ix::changelog {

Lines::Lines(std::string_view text) : text_(text) {
  if (text.empty()) return;
  starts_.push_back(0);
  for (size_t at = text.find('\n'); at != std::string_view::npos; at = text.find('\n', at + 1)) {
    if (at + 1 < text.size()) starts_.push_back(at + 1);
  }
}

std::string_view Lines::raw_line(int line) const {
  if (line < 1 || line > count()) return {};
  const size_t begin = offset(line);
  const size_t end = line < count() ? offset(line + 1) : text_.size();
  return text_.substr(begin, end - begin);
}

std::string_view Lines::line(int line) const {
  auto raw = raw_line(line);
  if (!raw.empty() && raw.back() == '\n') raw.remove_suffix(1);
  return raw;
}

Position Lines::position(size_t offset) const {
  if (starts_.empty()) return {};
  auto after = std::upper_bound(starts_.begin(), starts_.end(), offset);
  const auto index = static_cast<size_t>(after - starts_.begin()) - 1;
  return {static_cast<int>(index) + 1, static_cast<int>(offset - starts_[index]) + 1};
}

std::string quote_line(std::string_view line) {
  constexpr size_t kMaxShown = 80;
  std::string shown;
  size_t used = 0;
  for (; used < line.size() && used < kMaxShown; ++used) {
    const auto byte = static_cast<unsigned char>(line[used]);
    if (byte == '"' || byte == '\\') {
      shown += '\\';
      shown += static_cast<char>(byte);
    } else if (byte == '\t') {
      shown += "\\t";
    } else if (byte == '\r') {
      shown += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      shown += fmt::format("\\x{:02x}", byte);
    } else {
      shown += static_cast<char>(byte);
    }
  }
  // Do not cut a UTF-8 sequence in two.
  while (used < line.size() && (static_cast<unsigned char>(line[used]) & 0xC0) == 0x80) shown += line[used++];
  return "\"" + shown + (used < line.size() ? "...\"" : "\"");
}

}  // namespace ix::changelog
