// Python str semantics over UTF-8. Case mapping and character classes beyond ASCII come from ICU
// (full case mappings, as CPython's); everything else is plain code-point arithmetic.
#include <fmt/format.h>
#include <unicode/uchar.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "jinja/internal.h"

namespace ix::jinja::py {
namespace {

// Decodes one code point; an invalid byte decodes to U+FFFD and consumes one byte (templates
// only see valid UTF-8 from JSON, but a C++ caller may pass anything).
char32_t next_cp(std::string_view text, size_t& pos) {
  const auto byte = [&](size_t at) { return static_cast<unsigned char>(text[at]); };
  const unsigned char c = byte(pos);
  if (c < 0x80) {
    ++pos;
    return c;
  }
  size_t length = 0;
  char32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    length = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    length = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    length = 4;
    cp = c & 0x07;
  } else {
    ++pos;
    return 0xFFFD;
  }
  if (pos + length > text.size()) {
    ++pos;
    return 0xFFFD;
  }
  for (size_t index = 1; index < length; ++index) {
    if ((byte(pos + index) & 0xC0) != 0x80) {
      ++pos;
      return 0xFFFD;
    }
    cp = (cp << 6) | (byte(pos + index) & 0x3F);
  }
  pos += length;
  return cp;
}

void append_cp(char32_t cp, std::string& out) {
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // lone surrogates cannot be UTF-8
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

enum class CaseOp { kUpper, kLower, kTitle };

// Full case mapping of `text` through ICU (root locale, as CPython's locale-independent str
// methods).
std::string icu_case(std::string_view text, CaseOp op) {
  UErrorCode status = U_ZERO_ERROR;
  std::u16string source(text.size() + 1, u'\0');
  int32_t source_length = 0;
  u_strFromUTF8WithSub(source.data(), static_cast<int32_t>(source.size()), &source_length, text.data(),
                       static_cast<int32_t>(text.size()), 0xFFFD, nullptr, &status);
  if (U_FAILURE(status)) return std::string(text);
  std::u16string mapped(static_cast<size_t>(source_length) * 3 + 8, u'\0');
  status = U_ZERO_ERROR;
  int32_t mapped_length = 0;
  switch (op) {
    case CaseOp::kUpper:
      mapped_length =
          u_strToUpper(mapped.data(), static_cast<int32_t>(mapped.size()), source.data(), source_length, "", &status);
      break;
    case CaseOp::kLower:
      mapped_length =
          u_strToLower(mapped.data(), static_cast<int32_t>(mapped.size()), source.data(), source_length, "", &status);
      break;
    case CaseOp::kTitle:
      mapped_length = u_strToTitle(mapped.data(), static_cast<int32_t>(mapped.size()), source.data(), source_length,
                                   nullptr, "", &status);
      break;
  }
  if (U_FAILURE(status)) return std::string(text);
  std::string out(static_cast<size_t>(mapped_length) * 3 + 4, '\0');
  int32_t out_length = 0;
  status = U_ZERO_ERROR;
  u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &out_length, mapped.data(), mapped_length, &status);
  if (U_FAILURE(status)) return std::string(text);
  out.resize(static_cast<size_t>(out_length));
  return out;
}

std::string case_of_cp(char32_t cp, CaseOp op) {
  if (cp < 0x80) {
    char c = static_cast<char>(cp);
    if (op == CaseOp::kLower && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    if (op != CaseOp::kLower && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    return std::string(1, c);
  }
  std::string one;
  append_cp(cp, one);
  return icu_case(one, op);
}

bool is_cased(char32_t cp) {
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_LOWERCASE) ||
         u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_UPPERCASE) ||
         u_charType(static_cast<UChar32>(cp)) == U_TITLECASE_LETTER;
}

bool cp_is_lower(char32_t cp) {
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_LOWERCASE);
}

bool cp_is_upper_or_title(char32_t cp) {
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_UPPERCASE) ||
         u_charType(static_cast<UChar32>(cp)) == U_TITLECASE_LETTER;
}

bool printable(char32_t cp) {
  if (cp == ' ') return true;
  if (cp < 0x20 || cp == 0x7F) return false;
  if (cp < 0x7F) return true;
  switch (u_charType(static_cast<UChar32>(cp))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR:
    case U_SPACE_SEPARATOR: return false;
    default: return true;
  }
}

// Byte offsets of each code point boundary (size = code points + 1).
std::vector<size_t> boundaries(std::string_view text) {
  std::vector<size_t> out;
  out.reserve(text.size() + 1);
  size_t pos = 0;
  while (pos < text.size()) {
    out.push_back(pos);
    next_cp(text, pos);
  }
  out.push_back(text.size());
  return out;
}

bool in_chars(char32_t cp, const std::u32string& chars) {
  return chars.find(cp) != std::u32string::npos;
}

}  // namespace

bool is_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::u32string decode(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) out.push_back(next_cp(text, pos));
  return out;
}

std::string encode(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) append_cp(cp, out);
  return out;
}

bool is_ascii(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

size_t length(std::string_view text) {
  if (is_ascii(text)) return text.size();
  size_t count = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    next_cp(text, pos);
    ++count;
  }
  return count;
}

std::optional<std::string> char_at(std::string_view text, int64_t index) {
  if (is_ascii(text)) {
    const auto size = static_cast<int64_t>(text.size());
    if (index < 0) index += size;
    if (index < 0 || index >= size) return std::nullopt;
    return std::string(1, text[static_cast<size_t>(index)]);
  }
  const auto bounds = boundaries(text);
  const auto size = static_cast<int64_t>(bounds.size()) - 1;
  if (index < 0) index += size;
  if (index < 0 || index >= size) return std::nullopt;
  const size_t begin = bounds[static_cast<size_t>(index)];
  return std::string(text.substr(begin, bounds[static_cast<size_t>(index) + 1] - begin));
}

std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string set = chars ? decode(*chars) : std::u32string();
  const auto strippable = [&](char32_t cp) { return chars ? in_chars(cp, set) : is_space(cp); };
  size_t begin = 0;
  if (left) {
    while (begin < text.size()) {
      size_t pos = begin;
      if (!strippable(next_cp(text, pos))) break;
      begin = pos;
    }
  }
  size_t end = text.size();
  if (right) {
    // Scan forward, remembering the end of the last character that is kept.
    end = begin;
    size_t pos = begin;
    while (pos < text.size()) {
      const char32_t cp = next_cp(text, pos);
      if (!strippable(cp)) end = pos;
    }
  }
  return std::string(text.substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t found = text.find(*sep, start);
      if (found == std::string_view::npos) break;
      out.emplace_back(text.substr(start, found - start));
      start = found + sep->size();
    }
    out.emplace_back(text.substr(start));
    return out;
  }
  size_t pos = 0;
  while (pos < text.size()) {
    // Skip whitespace.
    size_t word = pos;
    while (word < text.size()) {
      size_t next = word;
      if (!is_space(next_cp(text, next))) break;
      word = next;
    }
    if (word >= text.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      // The remainder, with trailing whitespace kept (Python keeps it after the last split).
      out.emplace_back(text.substr(word));
      return out;
    }
    size_t end = word;
    while (end < text.size()) {
      size_t next = end;
      if (is_space(next_cp(text, next))) break;
      end = next;
    }
    out.emplace_back(text.substr(word, end - word));
    pos = end;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t end = text.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t found = text.rfind(*sep, end - sep->size());
      if (found == std::string_view::npos) break;
      out.emplace_back(text.substr(found + sep->size(), end - found - sep->size()));
      end = found;
    }
    out.emplace_back(text.substr(0, end));
    return {out.rbegin(), out.rend()};
  }
  const std::u32string cps = decode(text);
  size_t end = cps.size();
  while (end > 0) {
    while (end > 0 && is_space(cps[end - 1])) --end;
    if (end == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      out.push_back(encode(std::u32string_view(cps).substr(0, end)));
      end = 0;
      break;
    }
    size_t begin = end;
    while (begin > 0 && !is_space(cps[begin - 1])) --begin;
    out.push_back(encode(std::u32string_view(cps).substr(begin, end - begin)));
    end = begin;
  }
  return {out.rbegin(), out.rend()};
}

std::vector<std::string> splitlines(std::string_view text, bool keepends) {
  std::vector<std::string> out;
  size_t line_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t at = pos;
    const char32_t cp = next_cp(text, pos);
    const bool boundary = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
                          cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!boundary) continue;
    if (cp == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
    out.emplace_back(text.substr(line_start, (keepends ? pos : at) - line_start));
    line_start = pos;
  }
  if (line_start < text.size()) out.emplace_back(text.substr(line_start));
  return out;
}

std::optional<std::string> replace(std::string_view text, std::string_view old, std::string_view replacement,
                                   int64_t count, size_t max_bytes) {
  // The result's size first: replacing in a long text can multiply it.
  uint64_t occurrences = old.empty() ? length(text) + 1 : static_cast<uint64_t>(py::count(text, old));
  if (count >= 0) occurrences = std::min<uint64_t>(occurrences, static_cast<uint64_t>(count));
  const long double size = static_cast<long double>(text.size()) +
                           static_cast<long double>(occurrences) *
                               (static_cast<long double>(replacement.size()) - static_cast<long double>(old.size()));
  if (size > static_cast<long double>(max_bytes)) return std::nullopt;
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement before every code point and at the end.
    int64_t done = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
      if (count >= 0 && done >= count) {
        out += text.substr(pos);
        return out;
      }
      out += replacement;
      ++done;
      if (pos == text.size()) break;
      const size_t start = pos;
      next_cp(text, pos);
      out += text.substr(start, pos - start);
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t found = text.find(old, start);
    if (found == std::string_view::npos) break;
    out += text.substr(start, found - start);
    out += replacement;
    start = found + old.size();
    ++done;
  }
  out += text.substr(start);
  return out;
}

int64_t find(std::string_view text, std::string_view sub, bool reverse) {
  const size_t found = reverse ? text.rfind(sub) : text.find(sub);
  if (found == std::string_view::npos) return -1;
  return static_cast<int64_t>(length(text.substr(0, found)));
}

int64_t count(std::string_view text, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(length(text)) + 1;
  int64_t n = 0;
  size_t start = 0;
  while ((start = text.find(sub, start)) != std::string_view::npos) {
    ++n;
    start += sub.size();
  }
  return n;
}

std::string upper(std::string_view text) {
  if (is_ascii(text)) {
    std::string out(text);
    for (char& c : out) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
    return out;
  }
  return icu_case(text, CaseOp::kUpper);
}

std::string lower(std::string_view text) {
  if (is_ascii(text)) {
    std::string out(text);
    for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    return out;
  }
  return icu_case(text, CaseOp::kLower);
}

std::string title(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool previous_cased = false;
  size_t pos = 0;
  while (pos < text.size()) {
    const char32_t cp = next_cp(text, pos);
    const bool cased = cp < 0x80 ? ((cp | 32) >= 'a' && (cp | 32) <= 'z') : is_cased(cp);
    if (cased) {
      out += case_of_cp(cp, previous_cased ? CaseOp::kLower : CaseOp::kTitle);
    } else {
      append_cp(cp, out);
    }
    previous_cased = cased;
  }
  return out;
}

std::string capitalize(std::string_view text) {
  if (text.empty()) return {};
  size_t pos = 0;
  const char32_t first = next_cp(text, pos);
  return case_of_cp(first, CaseOp::kTitle) + lower(text.substr(pos));
}

std::string swapcase(std::string_view text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    const char32_t cp = next_cp(text, pos);
    if (cp_is_lower(cp)) {
      out += case_of_cp(cp, CaseOp::kUpper);
    } else if (cp_is_upper_or_title(cp)) {
      out += case_of_cp(cp, CaseOp::kLower);
    } else {
      append_cp(cp, out);
    }
  }
  return out;
}

bool is_lower(std::string_view text) {
  bool any = false;
  size_t pos = 0;
  while (pos < text.size()) {
    const char32_t cp = next_cp(text, pos);
    if (cp_is_upper_or_title(cp)) return false;
    if (cp_is_lower(cp)) any = true;
  }
  return any;
}

bool is_upper(std::string_view text) {
  bool any = false;
  size_t pos = 0;
  while (pos < text.size()) {
    const char32_t cp = next_cp(text, pos);
    if (cp_is_lower(cp) || u_charType(static_cast<UChar32>(cp)) == U_TITLECASE_LETTER) return false;
    if (u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_UPPERCASE)) any = true;
  }
  return any;
}

bool is_all(std::string_view text, bool (*predicate)(char32_t)) {
  if (text.empty()) return false;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!predicate(next_cp(text, pos))) return false;
  }
  return true;
}

bool is_decimal_cp(char32_t cp) {
  return u_charType(static_cast<UChar32>(cp)) == U_DECIMAL_DIGIT_NUMBER;
}

bool is_digit_cp(char32_t cp) {
  const auto type = u_getIntPropertyValue(static_cast<UChar32>(cp), UCHAR_NUMERIC_TYPE);
  return type == U_NT_DECIMAL || type == U_NT_DIGIT;
}

bool is_numeric_cp(char32_t cp) {
  return u_getIntPropertyValue(static_cast<UChar32>(cp), UCHAR_NUMERIC_TYPE) != U_NT_NONE;
}

bool is_alpha_cp(char32_t cp) {
  switch (u_charType(static_cast<UChar32>(cp))) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER: return true;
    default: return false;
  }
}

bool is_alnum_cp(char32_t cp) {
  return is_alpha_cp(cp) || is_numeric_cp(cp);
}

std::string repr_string(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < text.size()) {
    const char32_t cp = next_cp(text, pos);
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (printable(cp)) {
      append_cp(cp, out);
    } else if (cp < 0x100) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", static_cast<uint32_t>(cp));
    } else if (cp < 0x10000) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<uint32_t>(cp));
    } else {
      fmt::format_to(std::back_inserter(out), "\\U{:08x}", static_cast<uint32_t>(cp));
    }
  }
  out += quote;
  return out;
}

std::string float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form ("d.ddde±x"), then Python's layout: fixed
  // notation for exponents -4..15, else scientific with at least two exponent digits.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string_view sci(buffer, static_cast<size_t>(result.ptr - buffer));
  const bool negative = sci.front() == '-';
  if (negative) sci.remove_prefix(1);
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  int exponent = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exponent);
  std::string out = negative ? "-" : "";
  if (exponent >= -5 + 1 && exponent < 16) {
    if (exponent < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out += digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(exponent) + 1 - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exponent) + 1);
      out += '.';
      out += digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  fmt::format_to(std::back_inserter(out), "e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out;
}

}  // namespace ix::jinja::py
