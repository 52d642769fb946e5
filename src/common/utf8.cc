#include "common/utf8.h"

namespace ix::utf8 {

size_t valid_sequence_length(std::string_view text, size_t pos, size_t* invalid_len) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  const unsigned char b0 = s[pos];
  if (b0 < 0x80) return 1;
  size_t need = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    if (invalid_len != nullptr) *invalid_len = 1;
    return 0;
  }
  // The second byte has a lead-specific range; later bytes are plain continuation bytes. The
  // maximal subpart is the lead plus every byte that still fits, so a truncated sequence is one
  // replacement character, as in Rust.
  size_t i = 1;
  for (; i <= need; ++i) {
    if (pos + i >= n) break;
    const unsigned char b = s[pos + i];
    const unsigned char l = (i == 1) ? lo : 0x80;
    const unsigned char h = (i == 1) ? hi : 0xBF;
    if (b < l || b > h) break;
  }
  if (i == need + 1) return need + 1;
  if (invalid_len != nullptr) *invalid_len = i;
  return 0;
}

bool is_valid(std::string_view text) {
  size_t pos = 0;
  const size_t n = text.size();
  while (pos < n) {
    // Fast path over ASCII, 8 bytes at a time.
    while (pos + 8 <= n) {
      uint64_t word;
      __builtin_memcpy(&word, text.data() + pos, 8);
      if ((word & 0x8080808080808080ULL) != 0) break;
      pos += 8;
    }
    if (pos >= n) break;
    const size_t len = valid_sequence_length(text, pos);
    if (len == 0) return false;
    pos += len;
  }
  return true;
}

size_t first_invalid(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = valid_sequence_length(text, pos);
    if (len == 0) return pos;
    pos += len;
  }
  return std::string_view::npos;
}

void append_lossy(std::string_view text, std::string& out) {
  size_t pos = 0;
  size_t run_start = 0;
  while (pos < text.size()) {
    size_t bad = 0;
    const size_t len = valid_sequence_length(text, pos, &bad);
    if (len > 0) {
      pos += len;
      continue;
    }
    out.append(text.substr(run_start, pos - run_start));
    out.append(kReplacement);
    pos += bad;
    run_start = pos;
  }
  out.append(text.substr(run_start));
}

std::string to_valid(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  append_lossy(text, out);
  return out;
}

char32_t next_code_point(std::string_view text, size_t& pos) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char b0 = s[pos];
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  if (b0 < 0xE0) {
    const char32_t cp = ((b0 & 0x1Fu) << 6) | (s[pos + 1] & 0x3Fu);
    pos += 2;
    return cp;
  }
  if (b0 < 0xF0) {
    const char32_t cp = ((b0 & 0x0Fu) << 12) | ((s[pos + 1] & 0x3Fu) << 6) | (s[pos + 2] & 0x3Fu);
    pos += 3;
    return cp;
  }
  const char32_t cp =
      ((b0 & 0x07u) << 18) | ((s[pos + 1] & 0x3Fu) << 12) | ((s[pos + 2] & 0x3Fu) << 6) | (s[pos + 3] & 0x3Fu);
  pos += 4;
  return cp;
}

void append_code_point(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace ix::utf8
