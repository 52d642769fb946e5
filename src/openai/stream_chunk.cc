// StreamChunkDecoder: one pass over a streamed completion chunk that validates the whole JSON text
// (RFC 8259, as strictly as boost::json's defaults: UTF-8, surrogate pairs, depth 32, no trailing
// commas or comments) and keeps only the fields `bench serve` reads. No DOM is built: at one
// chunk per token this decoder runs a million times a second, and building a boost::json value
// per chunk was half of the client's CPU per event. The DOM decoder it replaced is the oracle of
// its differential tests (tests/unit/openai/stream_chunk_test.cc).
#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/utf8.h"
#include "openai/backend.h"

namespace ix::openai {
namespace {

constexpr int kMaxDepth = 32;  // boost::json's default max_depth

// The fields of choices[0] whose text is reported, in the order they are concatenated.
enum TextField { kText, kReasoningContent, kReasoning, kContent, kTextFields };

class Scanner {
 public:
  Scanner(std::string_view data, std::string& scratch)
      : p_(data.data()), end_(data.data() + data.size()), scratch_(scratch) {}

  const char* error() const { return error_; }
  size_t offset(std::string_view data) const { return static_cast<size_t>(p_ - data.data()); }

  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool at_end() const { return p_ == end_; }
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  const char* pos() const { return p_; }

  bool expect(char c) {
    skip_ws();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return fail(p_ < end_ ? "unexpected character" : "incomplete JSON");
  }

  // A string at p_ (after whitespace). Its decoded value is `out`: a view into the input when it
  // has no escapes, else into scratch storage appended to `decoded` (which must outlive `out`).
  bool string(std::string_view& out, std::string& decoded) {
    skip_ws();
    if (p_ >= end_ || *p_ != '"') return fail(p_ < end_ ? "expected a string" : "incomplete JSON");
    const char* start = ++p_;
    // Fast path: plain ASCII without escapes, 16 bytes at a time where SSE2 is available.
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end_ - p_ >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
      // Signed compare: bytes >= 0x80 are negative, so "< 0x20" also flags non-ASCII.
      const __m128i special =
          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), _mm_cmplt_epi8(v, space));
      if (const int mask = _mm_movemask_epi8(special); mask != 0) {
        p_ += __builtin_ctz(static_cast<unsigned>(mask));
        break;
      }
      p_ += 16;
    }
#endif
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) break;
      ++p_;
    }
    if (p_ >= end_) return fail("incomplete JSON");
    const size_t base = decoded.size();
    decoded.append(start, static_cast<size_t>(p_ - start));
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        out = std::string_view(decoded).substr(base);
        return true;
      }
      if (c < 0x20) return fail("control character in a string");
      if (c >= 0x80) {
        const std::string_view rest(p_, static_cast<size_t>(end_ - p_));
        const size_t len = utf8::valid_sequence_length(rest, 0);
        if (len == 0) return fail("invalid UTF-8 in a string");
        decoded.append(p_, len);
        p_ += len;
        continue;
      }
      if (c != '\\') {
        decoded.push_back(static_cast<char>(c));
        ++p_;
        continue;
      }
      if (++p_ >= end_) return fail("incomplete JSON");
      switch (*p_++) {
        case '"': decoded.push_back('"'); break;
        case '\\': decoded.push_back('\\'); break;
        case '/': decoded.push_back('/'); break;
        case 'b': decoded.push_back('\b'); break;
        case 'f': decoded.push_back('\f'); break;
        case 'n': decoded.push_back('\n'); break;
        case 'r': decoded.push_back('\r'); break;
        case 't': decoded.push_back('\t'); break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return fail("unpaired UTF-16 surrogate");
            p_ += 2;
            if (!hex4(low)) return false;
            if (low < 0xDC00 || low > 0xDFFF) return fail("unpaired UTF-16 surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail("unpaired UTF-16 surrogate");
          }
          utf8::append_code_point(cp, decoded);
          break;
        }
        default: return fail("invalid escape in a string");
      }
    }
    return fail("incomplete JSON");
  }

  // Skips any value, validating it.
  bool skip_value(int depth) {
    skip_ws();
    if (p_ >= end_) return fail("incomplete JSON");
    switch (*p_) {
      case '{': {
        if (depth >= kMaxDepth) return fail("too deeply nested");
        return object([&](std::string_view) { return skip_value(depth + 1); });
      }
      case '[': {
        if (depth >= kMaxDepth) return fail("too deeply nested");
        return array([&](size_t) { return skip_value(depth + 1); });
      }
      case '"': {
        std::string_view ignored;
        scratch_.clear();
        return string(ignored, scratch_);
      }
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: {
        bool is_integer = false;
        int64_t ignored = 0;
        return number(is_integer, ignored);
      }
    }
  }

  // An object at p_; on_member(key) is called with p_ before each member's value and must consume
  // the value. Nesting depth is checked by the caller (skip_value).
  template <typename F>
  bool object(F&& on_member) {
    if (!expect('{')) return false;
    skip_ws();
    if (peek() == '}') {
      ++p_;
      return true;
    }
    while (true) {
      std::string_view key;
      key_buffer_.clear();
      if (!string(key, key_buffer_)) return false;
      if (!expect(':')) return false;
      if (!on_member(key)) return false;
      skip_ws();
      if (p_ >= end_) return fail("incomplete JSON");
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  template <typename F>
  bool array(F&& on_element) {
    if (!expect('[')) return false;
    skip_ws();
    if (peek() == ']') {
      ++p_;
      return true;
    }
    for (size_t i = 0;; ++i) {
      if (!on_element(i)) return false;
      skip_ws();
      if (p_ >= end_) return fail("incomplete JSON");
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  // A number; is_integer when it has no fraction or exponent and fits int64 (boost::json's int64
  // kind), value then holds it.
  bool number(bool& is_integer, int64_t& value) {
    skip_ws();
    const char* start = p_;
    bool negative = false;
    if (p_ < end_ && *p_ == '-') {
      negative = true;
      ++p_;
    }
    if (p_ >= end_) return fail("incomplete JSON");
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    } else {
      return fail("unexpected character");
    }
    const char* int_end = p_;
    bool integral = true;
    if (p_ < end_ && *p_ == '.') {
      integral = false;
      ++p_;
      if (p_ >= end_ || *p_ < '0' || *p_ > '9') return fail(p_ >= end_ ? "incomplete JSON" : "bad number");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      integral = false;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= end_ || *p_ < '0' || *p_ > '9') return fail(p_ >= end_ ? "incomplete JSON" : "bad number");
      int64_t exponent = 0;  // boost::json rejects exponents beyond int32
      for (; p_ < end_ && *p_ >= '0' && *p_ <= '9'; ++p_) {
        exponent = exponent * 10 + (*p_ - '0');
        if (exponent > 2147483647) return fail("exponent overflow");
      }
    }
    is_integer = false;
    if (!integral) return true;
    // Accumulate negatively so INT64_MIN fits.
    int64_t acc = 0;
    for (const char* d = start + (negative ? 1 : 0); d < int_end; ++d) {
      const int digit = *d - '0';
      if (acc < (INT64_MIN + digit) / 10) return true;  // out of int64 range: not an int64
      acc = acc * 10 - digit;
    }
    if (!negative && acc == INT64_MIN) return true;
    value = negative ? acc : -acc;
    is_integer = true;
    return true;
  }

  bool literal(std::string_view word) {
    const auto left = static_cast<size_t>(end_ - p_);
    if (left >= word.size() && std::memcmp(p_, word.data(), word.size()) == 0) {
      p_ += word.size();
      return true;
    }
    if (left < word.size() && std::memcmp(p_, word.data(), left) == 0) return fail("incomplete JSON");
    return fail("unexpected character");
  }

  bool fail(const char* why) {
    if (!error_) error_ = why;
    return false;
  }

 private:
  bool hex4(uint32_t& out) {
    if (end_ - p_ < 4) return fail("incomplete JSON");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *p_++;
      out <<= 4;
      if (c >= '0' && c <= '9') {
        out |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        out |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        out |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return fail("invalid \\u escape");
      }
    }
    return true;
  }

  const char* p_;
  const char* end_;
  std::string& scratch_;
  std::string key_buffer_;
  const char* error_ = nullptr;
};

// The server's message of an "error" member: error.message when it is a string, the string itself,
// else the error value serialized (boost::json's compact form).
std::string error_message(std::string_view raw) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(raw, ec);
  if (ec) return std::string(raw);
  if (const auto* s = v.if_string()) return std::string(*s);
  if (const auto* o = v.if_object()) {
    if (const auto* m = o->if_contains("message"); m && m->is_string()) return std::string(m->as_string());
  }
  return boost::json::serialize(v);
}

}  // namespace

StreamChunkDecoder::StreamChunkDecoder() = default;

std::string StreamChunk::usage_problem() const {
  if (bad_usage_key.empty()) return {};
  return bad_usage_integer ? fmt::format("usage.{} is {}", bad_usage_key, bad_usage_value)
                           : fmt::format("usage.{} is not a whole number", bad_usage_key);
}

Result<StreamChunk> StreamChunkDecoder::decode(std::string_view data) {
  StreamChunk chunk;
  if (data == "[DONE]") {
    chunk.kind = StreamChunk::Kind::kDone;
    return chunk;
  }
  // Decoded strings with escapes live in decoded_ (reserved so views into it stay valid).
  decoded_.clear();
  decoded_.reserve(data.size() + 16);
  Scanner s(data, scratch_);
  std::string_view parts[kTextFields];
  bool has_error = false;
  std::string_view error_raw;
  auto as_text_field = [](std::string_view key) -> int {
    if (key == "text") return kText;
    return -1;
  };
  auto delta_field = [](std::string_view key) -> int {
    if (key == "content") return kContent;
    if (key == "reasoning_content") return kReasoningContent;
    if (key == "reasoning") return kReasoning;
    return -1;
  };
  // Reads a string member into parts[field] (the last one wins, as in a DOM); other kinds are
  // validated and ignored.
  auto text_member = [&](int field, int depth) {
    s.skip_ws();
    if (s.peek() != '"') {
      parts[field] = {};
      return s.skip_value(depth);
    }
    return s.string(parts[field], decoded_);
  };
  auto choice0 = [&](int depth) {
    s.skip_ws();
    if (s.peek() != '{') return s.skip_value(depth);
    return s.object([&](std::string_view key) {
      if (const int f = as_text_field(key); f >= 0) return text_member(f, depth + 1);
      if (key == "finish_reason") {
        s.skip_ws();
        chunk.finished = s.peek() != 'n';  // anything but null
        if (s.peek() == '"') return s.string(chunk.finish_reason, decoded_);
        return s.skip_value(depth + 1);
      }
      if (key == "delta") {
        s.skip_ws();
        if (s.peek() != '{') {
          for (int f : {kReasoningContent, kReasoning, kContent}) parts[f] = {};
          return s.skip_value(depth + 1);
        }
        return s.object([&](std::string_view dkey) {
          if (const int f = delta_field(dkey); f >= 0) return text_member(f, depth + 2);
          return s.skip_value(depth + 2);
        });
      }
      return s.skip_value(depth + 1);
    });
  };
  s.skip_ws();
  if (s.peek() != '{') {
    // Valid JSON that is not an object is reported as such; anything else as not JSON.
    if (s.skip_value(0)) {
      s.skip_ws();
      if (s.at_end()) return fail(ErrorCode::kParse, "stream chunk is not a JSON object");
      s.fail("extra data after the JSON value");
    }
  } else {
    s.object([&](std::string_view key) {
      if (key == "choices") {
        s.skip_ws();
        if (s.peek() != '[') {
          chunk.has_choices = false;
          return s.skip_value(1);
        }
        bool any = false;
        const bool ok = s.array([&](size_t i) {
          any = true;
          if (i == 0) {
            for (auto& part : parts) part = {};
            chunk.finished = false;
            chunk.finish_reason = {};
            return choice0(2);
          }
          return s.skip_value(2);
        });
        chunk.has_choices = any;
        return ok;
      }
      if (key == "usage") {
        s.skip_ws();
        if (s.peek() != '{') return s.skip_value(1);
        return s.object([&](std::string_view ukey) {
          const bool completion = ukey == "completion_tokens";
          if (!completion && ukey != "prompt_tokens") return s.skip_value(2);
          s.skip_ws();
          const char c = s.peek();
          if (c != '-' && (c < '0' || c > '9')) return s.skip_value(2);
          bool is_integer = false;
          int64_t value = 0;
          if (!s.number(is_integer, value)) return false;
          const bool valid = is_integer && value >= 0;
          (completion ? chunk.completion_tokens : chunk.prompt_tokens) = valid ? value : -1;
          if (!valid && chunk.bad_usage_key.empty()) {
            chunk.bad_usage_key = completion ? "completion_tokens" : "prompt_tokens";
            chunk.bad_usage_integer = is_integer;
            chunk.bad_usage_value = value;
          }
          return true;
        });
      }
      if (key == "error") {
        s.skip_ws();
        const char* start = s.pos();
        if (!s.skip_value(1)) return false;
        error_raw = std::string_view(start, static_cast<size_t>(s.pos() - start));
        has_error = error_raw != "null";
        return true;
      }
      return s.skip_value(1);
    });
    if (!s.error()) {
      s.skip_ws();
      if (!s.at_end()) s.fail("extra data after the JSON value");
    }
  }
  if (s.error()) {
    return fail(ErrorCode::kParse, fmt::format("stream chunk is not JSON ({} at byte {}): '{}'", s.error(),
                                               s.offset(data), data.substr(0, 80)));
  }
  if (has_error) {
    chunk = StreamChunk{};
    chunk.kind = StreamChunk::Kind::kError;
    chunk.error = error_message(error_raw);
    return chunk;
  }
  text_.clear();
  if (chunk.has_choices) {
    for (const auto& part : parts) text_.append(part);
    chunk.reasoning_bytes = parts[kReasoningContent].size() + parts[kReasoning].size();
  }
  chunk.text = text_;
  return chunk;
}

}  // namespace ix::openai
