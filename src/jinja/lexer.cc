#include "jinja/lexer.h"

#include <fmt/format.h>
#include <unicode/uchar.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace ix::jinja {
namespace {

bool ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Python's \s and str.isspace() at text[pos]: the length of the whitespace character there, or 0.
size_t space_at(std::string_view text, size_t pos) {
  const auto c = static_cast<unsigned char>(text[pos]);
  if (c < 0x80) return (ascii_space(static_cast<char>(c)) || (c >= 0x1C && c <= 0x1F)) ? 1 : 0;
  const auto next = [&](size_t at) { return at < text.size() ? static_cast<unsigned char>(text[at]) : 0u; };
  if (c == 0xC2) return (next(pos + 1) == 0x85 || next(pos + 1) == 0xA0) ? 2 : 0;
  if (c == 0xE1) return (next(pos + 1) == 0x9A && next(pos + 2) == 0x80) ? 3 : 0;  // U+1680
  if (c == 0xE2 && next(pos + 1) == 0x80) {
    const unsigned third = next(pos + 2);
    return ((third >= 0x80 && third <= 0x8A) || third == 0xA8 || third == 0xA9 || third == 0xAF) ? 3 : 0;
  }
  if (c == 0xE2 && next(pos + 1) == 0x81 && next(pos + 2) == 0x9F) return 3;  // U+205F
  if (c == 0xE3 && next(pos + 1) == 0x80 && next(pos + 2) == 0x80) return 3;  // U+3000
  return 0;
}

size_t skip_spaces(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    const size_t n = space_at(text, pos);
    if (n == 0) break;
    pos += n;
  }
  return pos;
}

// Python's str.rstrip().
std::string_view rstrip(std::string_view text) {
  size_t end = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t n = space_at(text, pos);
    if (n) {
      pos += n;
    } else {
      // Advance one UTF-8 character.
      ++pos;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      end = pos;
    }
  }
  return text.substr(0, end);
}

bool all_space(std::string_view text) {
  if (text.empty()) return false;
  return skip_spaces(text, 0) == text.size();
}

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

class Lexer {
 public:
  Lexer(std::string_view source, std::string_view name) : name_(name) {
    // Jinja2: every \r\n, \r and \n is a newline; one trailing newline is dropped.
    src_.reserve(source.size());
    for (size_t index = 0; index < source.size(); ++index) {
      if (source[index] == '\r') {
        src_ += '\n';
        if (index + 1 < source.size() && source[index + 1] == '\n') ++index;
      } else {
        src_ += source[index];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  Result<std::vector<Token>> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      const size_t tag = find_tag(pos);
      if (tag == std::string::npos) {
        emit_data(pos, std::string_view(src_).substr(pos));
        break;
      }
      const char kind = src_[tag + 1];
      const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
      const size_t after_begin = tag + 2 + (sign ? 1 : 0);
      std::string_view text = std::string_view(src_).substr(pos, tag - pos);
      const std::optional<size_t> raw_end = kind == '%' ? match_raw_begin(after_begin) : std::nullopt;
      if (sign == '-') {
        text = rstrip(text);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: a block or comment tag preceded on its line only by whitespace.
        const size_t newline = text.rfind('\n');
        const size_t line_pos = newline == std::string_view::npos ? 0 : newline + 1;
        if ((line_pos > 0 || line_starting) && all_space(text.substr(line_pos))) text = text.substr(0, line_pos);
      }
      emit_data(pos, text);
      if (raw_end) {
        auto next = lex_raw(*raw_end, tag);
        if (!next) return fail(next.error());
        pos = next->first;
        line_starting = next->second;
        continue;
      }
      if (kind == '#') {
        auto end = lex_comment(after_begin, tag);
        if (!end) return fail(end.error());
        pos = *end;
      } else {
        push(kind == '%' ? Tok::kBlockBegin : Tok::kVariableBegin, tag);
        auto end = lex_tag(after_begin, kind == '%', tag);
        if (!end) return fail(end.error());
        pos = *end;
      }
      line_starting = pos > 0 && src_[pos - 1] == '\n';
    }
    Token eof;
    eof.type = Tok::kEof;
    eof.pos = position(src_.size());
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    size_t at = from;
    while ((at = src_.find('{', at)) != std::string::npos) {
      if (at + 1 < src_.size() && (src_[at + 1] == '{' || src_[at + 1] == '%' || src_[at + 1] == '#')) return at;
      ++at;
    }
    return std::string::npos;
  }

  Pos position(size_t offset) {
    // Offsets only grow while lexing (errors may look back at a tag start, recomputed then).
    if (offset < cursor_offset_) {
      cursor_offset_ = 0;
      cursor_ = Pos{1, 1};
    }
    while (cursor_offset_ < offset && cursor_offset_ < src_.size()) {
      const char c = src_[cursor_offset_++];
      if (c == '\n') {
        ++cursor_.line;
        cursor_.column = 1;
      } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
        ++cursor_.column;
      }
    }
    return cursor_;
  }

  Error error_at(size_t offset, std::string_view message) {
    const Pos p = position(offset);
    return Error(ErrorCode::kParse, fmt::format("{}:{}:{}: {}", name_, p.line, p.column, message));
  }

  void push(Tok type, size_t offset, std::string text = {}) {
    Token token;
    token.type = type;
    token.pos = position(offset);
    token.text = std::move(text);
    tokens_.push_back(std::move(token));
  }

  void emit_data(size_t offset, std::string_view text) {
    if (!text.empty()) push(Tok::kData, offset, std::string(text));
  }

  // `{%` sign? \s* raw \s* (-%}\s* | %}) starting after the sign: the offset after it, or nullopt.
  std::optional<size_t> match_raw_begin(size_t at) const {
    at = skip_spaces(src_, at);
    if (src_.compare(at, 3, "raw") != 0 || (at + 3 < src_.size() && is_name_char(src_[at + 3]))) return std::nullopt;
    at = skip_spaces(src_, at + 3);
    if (src_.compare(at, 3, "-%}") == 0) return skip_spaces(src_, at + 3);
    if (src_.compare(at, 2, "%}") == 0) return at + 2;
    return std::nullopt;
  }

  // The body of {% raw %}: data up to {% endraw %}. Returns (offset after, line_starting).
  Result<std::pair<size_t, bool>> lex_raw(size_t body, size_t tag) {
    size_t search = body;
    while (true) {
      const size_t open = src_.find("{%", search);
      if (open == std::string::npos) return fail(error_at(tag, "missing end of raw directive ({% endraw %})"));
      size_t at = open + 2;
      const char sign = at < src_.size() && (src_[at] == '-' || src_[at] == '+') ? src_[at] : 0;
      if (sign) ++at;
      at = skip_spaces(src_, at);
      if (src_.compare(at, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      at = skip_spaces(src_, at + 6);
      size_t end = 0;
      if (src_.compare(at, 3, "+%}") == 0) {
        end = at + 3;
      } else if (src_.compare(at, 3, "-%}") == 0) {
        end = skip_spaces(src_, at + 3);
      } else if (src_.compare(at, 2, "%}") == 0) {
        end = at + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        search = open + 2;
        continue;
      }
      std::string_view text = std::string_view(src_).substr(body, open - body);
      const bool starting = body > 0 && src_[body - 1] == '\n';
      if (sign == '-') {
        text = rstrip(text);
      } else if (sign != '+') {
        const size_t newline = text.rfind('\n');
        const size_t line_pos = newline == std::string_view::npos ? 0 : newline + 1;
        if ((line_pos > 0 || starting) && all_space(text.substr(line_pos))) text = text.substr(0, line_pos);
      }
      emit_data(body, text);
      return std::pair{end, src_[end - 1] == '\n'};
    }
  }

  Result<size_t> lex_comment(size_t at, size_t tag) {
    for (size_t p = at; p < src_.size(); ++p) {
      if (src_.compare(p, 3, "+#}") == 0) return p + 3;
      if (src_.compare(p, 3, "-#}") == 0) return skip_spaces(src_, p + 3);
      if (src_.compare(p, 2, "#}") == 0) {
        size_t end = p + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
        return end;
      }
    }
    return fail(error_at(tag, "missing end of comment tag ('#}')"));
  }

  // Tokens inside {{ }} or {% %} up to the closing tag; returns the offset after it.
  Result<size_t> lex_tag(size_t at, bool block, size_t tag) {
    std::vector<char> balance;
    while (true) {
      if (at >= src_.size()) {
        // The parser reports the unclosed tag.
        return at;
      }
      if (balance.empty()) {
        if (block) {
          if (src_.compare(at, 3, "+%}") == 0) {
            push(Tok::kBlockEnd, at);
            return at + 3;
          }
          if (src_.compare(at, 3, "-%}") == 0) {
            push(Tok::kBlockEnd, at);
            return skip_spaces(src_, at + 3);
          }
          if (src_.compare(at, 2, "%}") == 0) {
            push(Tok::kBlockEnd, at);
            size_t end = at + 2;
            if (end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
            return end;
          }
        } else {
          if (src_.compare(at, 3, "-}}") == 0) {
            push(Tok::kVariableEnd, at);
            return skip_spaces(src_, at + 3);
          }
          if (src_.compare(at, 2, "}}") == 0) {
            push(Tok::kVariableEnd, at);
            return at + 2;
          }
        }
      }
      if (const size_t n = space_at(src_, at)) {
        at += n;
        continue;
      }
      const char c = src_[at];
      if (is_digit(c)) {
        auto end = lex_number(at);
        if (!end) return fail(end.error());
        at = *end;
        continue;
      }
      if (is_name_start(c)) {
        size_t end = at + 1;
        while (end < src_.size() && is_name_char(src_[end])) ++end;
        push(Tok::kName, at, src_.substr(at, end - at));
        at = end;
        continue;
      }
      if (c == '\'' || c == '"') {
        auto end = lex_string(at);
        if (!end) return fail(end.error());
        at = *end;
        continue;
      }
      auto op = lex_operator(at, balance, tag, block);
      if (!op) return fail(op.error());
      at = *op;
    }
  }

  Result<size_t> lex_operator(size_t at, std::vector<char>& balance, size_t tag, bool block) {
    static constexpr std::pair<std::string_view, Tok> kTwo[] = {
        {"//", Tok::kFloorDiv}, {"**", Tok::kPow}, {"==", Tok::kEq},
        {"!=", Tok::kNe},       {">=", Tok::kGe},  {"<=", Tok::kLe},
    };
    for (const auto& [text, type] : kTwo) {
      if (src_.compare(at, 2, text) == 0) {
        push(type, at);
        return at + 2;
      }
    }
    Tok type = Tok::kEof;
    const char c = src_[at];
    switch (c) {
      case '+': type = Tok::kAdd; break;
      case '-': type = Tok::kSub; break;
      case '/': type = Tok::kDiv; break;
      case '*': type = Tok::kMul; break;
      case '%': type = Tok::kMod; break;
      case '~': type = Tok::kTilde; break;
      case '[': type = Tok::kLBracket; break;
      case ']': type = Tok::kRBracket; break;
      case '(': type = Tok::kLParen; break;
      case ')': type = Tok::kRParen; break;
      case '{': type = Tok::kLBrace; break;
      case '}': type = Tok::kRBrace; break;
      case '>': type = Tok::kGt; break;
      case '<': type = Tok::kLt; break;
      case '=': type = Tok::kAssign; break;
      case '.': type = Tok::kDot; break;
      case ':': type = Tok::kColon; break;
      case '|': type = Tok::kPipe; break;
      case ',': type = Tok::kComma; break;
      case ';': type = Tok::kSemicolon; break;
      default: {
        size_t end = at + 1;
        while (end < src_.size() && (static_cast<unsigned char>(src_[end]) & 0xC0) == 0x80) ++end;
        return fail(error_at(at, fmt::format("unexpected character '{}' inside '{}'", src_.substr(at, end - at),
                                             block ? "{% %}" : "{{ }}")));
      }
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) return fail(error_at(at, fmt::format("unexpected '{}'", c)));
      if (balance.back() != c)
        return fail(error_at(at, fmt::format("unexpected '{}', expected '{}'", c, balance.back())));
      balance.pop_back();
    }
    (void)tag;
    push(type, at);
    return at + 1;
  }

  // Jinja2's float_re, then integer_re (0b / 0o / 0x / decimal, `_` separators).
  Result<size_t> lex_number(size_t at) {
    const bool after_dot = at > 0 && src_[at - 1] == '.';
    const auto digits = [&](size_t from) {
      // (\d+_)*\d+ : digits with single underscores between them.
      size_t end = from;
      if (end >= src_.size() || !is_digit(src_[end])) return from;
      while (end < src_.size()) {
        if (is_digit(src_[end])) {
          ++end;
        } else if (src_[end] == '_' && end + 1 < src_.size() && is_digit(src_[end + 1])) {
          ++end;
        } else {
          break;
        }
      }
      return end;
    };
    const auto strip_underscores = [](std::string_view text) {
      std::string out;
      for (char ch : text) {
        if (ch != '_') out += ch;
      }
      return out;
    };
    if (!after_dot) {
      const size_t int_end = digits(at);
      size_t end = int_end;
      bool is_float = false;
      if (end < src_.size() && src_[end] == '.' && end + 1 < src_.size() && is_digit(src_[end + 1])) {
        end = digits(end + 1);
        is_float = true;
      }
      if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
        size_t exp = end + 1;
        if (exp < src_.size() && (src_[exp] == '+' || src_[exp] == '-')) ++exp;
        const size_t exp_end = digits(exp);
        if (exp_end > exp) {
          end = exp_end;
          is_float = true;
        }
      }
      if (is_float) {
        const std::string text = strip_underscores(std::string_view(src_).substr(at, end - at));
        Token token;
        token.type = Tok::kFloat;
        token.pos = position(at);
        token.number = std::strtod(text.c_str(), nullptr);
        token.text = text;
        tokens_.push_back(std::move(token));
        return end;
      }
    }
    int base = 10;
    size_t start = at;
    size_t end = at;
    if (src_[at] == '0' && at + 1 < src_.size() &&
        (src_[at + 1] == 'x' || src_[at + 1] == 'X' || src_[at + 1] == 'o' || src_[at + 1] == 'O' ||
         src_[at + 1] == 'b' || src_[at + 1] == 'B')) {
      const char prefix = static_cast<char>(src_[at + 1] | 32);
      base = prefix == 'x' ? 16 : prefix == 'o' ? 8 : 2;
      const auto valid = [&](char ch) {
        if (base == 16) return std::isxdigit(static_cast<unsigned char>(ch)) != 0;
        if (base == 8) return ch >= '0' && ch <= '7';
        return ch == '0' || ch == '1';
      };
      end = at + 2;
      while (end < src_.size()) {
        if (valid(src_[end])) {
          ++end;
        } else if (src_[end] == '_' && end + 1 < src_.size() && valid(src_[end + 1])) {
          ++end;
        } else {
          break;
        }
      }
      if (end == at + 2) {
        // "0x" without digits: the integer 0, then a name.
        end = at + 1;
        base = 10;
      } else {
        start = at + 2;
      }
    } else if (src_[at] == '0') {
      end = at + 1;
      while (end < src_.size() &&
             (src_[end] == '0' || (src_[end] == '_' && end + 1 < src_.size() && src_[end + 1] == '0'))) {
        ++end;
      }
    } else {
      end = digits(at);
    }
    const std::string text = strip_underscores(std::string_view(src_).substr(start, end - start));
    int64_t value = 0;
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (parsed.ec != std::errc())
      return fail(error_at(at, "integer literal too large (ixbench's Jinja ints are 64-bit)"));
    Token token;
    token.type = Tok::kInteger;
    token.pos = position(at);
    token.integer = value;
    tokens_.push_back(std::move(token));
    return end;
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // A quoted string literal, decoded as Python's "unicode-escape" codec does after Jinja2's
  // backslashreplace step.
  Result<size_t> lex_string(size_t at) {
    const char quote = src_[at];
    size_t end = at + 1;
    while (end < src_.size() && src_[end] != quote) end += src_[end] == '\\' ? 2 : 1;
    if (end >= src_.size()) return fail(error_at(at, "unterminated string literal"));
    const std::string_view body = std::string_view(src_).substr(at + 1, end - at - 1);
    std::string out;
    out.reserve(body.size());
    for (size_t index = 0; index < body.size(); ++index) {
      const char c = body[index];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (index + 1 >= body.size()) {
        out += '\\';
        break;
      }
      const char e = body[++index];
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t width = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t k = 0; k < width; ++k) {
            const int h = index + 1 + k < body.size() ? hex_value(body[index + 1 + k]) : -1;
            if (h < 0) {
              return fail(error_at(at, fmt::format("truncated \\{}{} escape in string literal", e,
                                                   std::string(width, e == 'x' ? 'X' : 'x'))));
            }
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF) return fail(error_at(at, "illegal Unicode character in string literal"));
          index += width;
          append_utf8(cp, out);
          break;
        }
        case 'N': {
          const size_t close = body.find('}', index);
          if (index + 1 >= body.size() || body[index + 1] != '{' || close == std::string_view::npos) {
            return fail(error_at(at, "malformed \\N character escape in string literal"));
          }
          const std::string char_name(body.substr(index + 2, close - index - 2));
          UErrorCode status = U_ZERO_ERROR;
          const UChar32 cp = u_charFromName(U_UNICODE_CHAR_NAME, char_name.c_str(), &status);
          if (U_FAILURE(status) || cp < 0) {
            return fail(error_at(at, fmt::format("unknown Unicode character name '{}' in string literal", char_name)));
          }
          append_utf8(static_cast<uint32_t>(cp), out);
          index = close;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && index + 1 < body.size() && body[index + 1] >= '0' && body[index + 1] <= '7'; ++k) {
              cp = cp * 8 + static_cast<uint32_t>(body[++index] - '0');
            }
            append_utf8(cp, out);
          } else if (static_cast<unsigned char>(e) >= 0x80) {
            // Jinja2 first turns non-ASCII characters into \x / \u / \U escapes, so a backslash
            // before one escapes the backslash of that escape: the text of the escape remains.
            size_t cp_end = index + 1;
            while (cp_end < body.size() && (static_cast<unsigned char>(body[cp_end]) & 0xC0) == 0x80) ++cp_end;
            const std::u32string cps = py::decode(body.substr(index, cp_end - index));
            const uint32_t cp = cps.empty() ? 0xFFFD : static_cast<uint32_t>(cps[0]);
            out += '\\';
            if (cp < 0x100) {
              out += fmt::format("x{:02x}", cp);
            } else if (cp < 0x10000) {
              out += fmt::format("u{:04x}", cp);
            } else {
              out += fmt::format("U{:08x}", cp);
            }
            index = cp_end - 1;
          } else {
            // Unknown escapes keep their backslash (Python's behaviour, with a warning).
            out += '\\';
            out += e;
          }
      }
    }
    push(Tok::kString, at, std::move(out));
    return end + 1;
  }

  static void append_utf8(uint32_t cp, std::string& out) {
    out += py::encode(std::u32string(1, static_cast<char32_t>(cp)));
  }

  std::string src_;
  std::string_view name_;
  std::vector<Token> tokens_;
  size_t cursor_offset_ = 0;
  Pos cursor_{1, 1};
};

}  // namespace

std::string describe(const Token& token) {
  switch (token.type) {
    case Tok::kData: return "template text";
    case Tok::kVariableBegin: return "'{{'";
    case Tok::kVariableEnd: return "'}}'";
    case Tok::kBlockBegin: return "'{%'";
    case Tok::kBlockEnd: return "'%}'";
    case Tok::kName: return "'" + token.text + "'";
    case Tok::kString: return "string literal";
    case Tok::kInteger:
    case Tok::kFloat: return "number";
    case Tok::kEof: return "end of template";
    case Tok::kAdd: return "'+'";
    case Tok::kSub: return "'-'";
    case Tok::kDiv: return "'/'";
    case Tok::kFloorDiv: return "'//'";
    case Tok::kMul: return "'*'";
    case Tok::kMod: return "'%'";
    case Tok::kPow: return "'**'";
    case Tok::kTilde: return "'~'";
    case Tok::kLBracket: return "'['";
    case Tok::kRBracket: return "']'";
    case Tok::kLParen: return "'('";
    case Tok::kRParen: return "')'";
    case Tok::kLBrace: return "'{'";
    case Tok::kRBrace: return "'}'";
    case Tok::kEq: return "'=='";
    case Tok::kNe: return "'!='";
    case Tok::kGt: return "'>'";
    case Tok::kGe: return "'>='";
    case Tok::kLt: return "'<'";
    case Tok::kLe: return "'<='";
    case Tok::kAssign: return "'='";
    case Tok::kDot: return "'.'";
    case Tok::kColon: return "':'";
    case Tok::kPipe: return "'|'";
    case Tok::kComma: return "','";
    case Tok::kSemicolon: return "';'";
  }
  return "token";
}

Result<std::vector<Token>> tokenize(std::string_view source, std::string_view name) {
  return Lexer(source, name).run();
}

}  // namespace ix::jinja
