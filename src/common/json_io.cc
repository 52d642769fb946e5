#include "common/json_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/utf8.h"

namespace ix::json {
namespace {

// How a document is written: ixbench's own form, or exactly as Python's json.dumps writes it.
struct Style {
  bool ascii = false;       // ensure_ascii: non-ASCII text as \uXXXX escapes
  bool python_nan = false;  // NaN / Infinity / -Infinity instead of null
};

// Doubles are printed like Python's repr (shortest round-trip, "1.0" for integral values,
// exponent form outside [1e-4, 1e16)), so ixbench files read like the Python tools' files and
// diff cleanly against them. Non-finite values have no JSON form: ixbench writes them as null,
// Python's json as NaN / Infinity.
void append_double(std::string& out, double value, const Style& style) {
  if (!std::isfinite(value)) {
    if (!style.python_nan) {
      out += "null";
    } else {
      out += std::isnan(value) ? "NaN" : (value > 0 ? "Infinity" : "-Infinity");
    }
    return;
  }
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  out += text;
}

// json.dumps's ensure_ascii escaping: control characters and non-ASCII as \uXXXX (surrogate
// pairs above the BMP); an invalid UTF-8 byte as its Latin-1 code point.
void append_ascii_string(std::string& out, std::string_view text) {
  out += '"';
  for (size_t index = 0; index < text.size(); ++index) {
    const auto c = static_cast<unsigned char>(text[index]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x80) {
      if (c < 0x20) {
        out += fmt::format("\\u{:04x}", c);
      } else {
        out += static_cast<char>(c);
      }
      continue;
    }
    size_t pos = index;
    if (utf8::valid_sequence_length(text, pos) == 0) {
      out += fmt::format("\\u{:04x}", c);
      continue;
    }
    char32_t code = utf8::next_code_point(text, pos);
    index = pos - 1;
    if (code >= 0x10000) {
      code -= 0x10000;
      out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF));
    } else {
      out += fmt::format("\\u{:04x}", static_cast<uint32_t>(code));
    }
  }
  out += '"';
}

void append_string(std::string& out, std::string_view text, const Style& style) {
  if (style.ascii) {
    append_ascii_string(out, text);
    return;
  }
  out += boost::json::serialize(boost::json::string_view(text.data(), text.size()));
}

void append(std::string& out, const boost::json::value& value, int indent, int depth, const Style& style) {
  const bool pretty = indent > 0;
  auto newline = [&](int level) {
    if (!pretty) return;
    out += '\n';
    out.append(static_cast<size_t>(level * indent), ' ');
  };
  switch (value.kind()) {
    case boost::json::kind::null: out += "null"; break;
    case boost::json::kind::bool_: out += value.get_bool() ? "true" : "false"; break;
    case boost::json::kind::int64: out += fmt::format("{}", value.get_int64()); break;
    case boost::json::kind::uint64: out += fmt::format("{}", value.get_uint64()); break;
    case boost::json::kind::double_: append_double(out, value.get_double(), style); break;
    case boost::json::kind::string: append_string(out, value.get_string(), style); break;
    case boost::json::kind::array: {
      const auto& array = value.get_array();
      if (array.empty()) {
        out += "[]";
        break;
      }
      out += '[';
      bool first = true;
      for (const auto& element : array) {
        if (!first) out += pretty ? "," : ", ";
        first = false;
        newline(depth + 1);
        append(out, element, indent, depth + 1, style);
      }
      newline(depth);
      out += ']';
      break;
    }
    case boost::json::kind::object: {
      const auto& object = value.get_object();
      if (object.empty()) {
        out += "{}";
        break;
      }
      out += '{';
      bool first = true;
      for (const auto& member : object) {
        if (!first) out += pretty ? "," : ", ";
        first = false;
        newline(depth + 1);
        append_string(out, member.key(), style);
        out += ": ";
        append(out, member.value(), indent, depth + 1, style);
      }
      newline(depth);
      out += '}';
      break;
    }
  }
}

// The value a document holds, with every double as the correctly rounded value of its text
// (strtod, as Python's json and float() read it): Boost.JSON 1.81's own conversion can be one
// unit in the last place off, which shows as a different last digit after arithmetic.
struct ExactNumberHandler {
  static constexpr std::size_t max_object_size = boost::json::object::max_size();
  static constexpr std::size_t max_array_size = boost::json::array::max_size();
  static constexpr std::size_t max_key_size = boost::json::string::max_size();
  static constexpr std::size_t max_string_size = boost::json::string::max_size();
  using string_view = boost::json::string_view;
  using error_code = boost::system::error_code;

  boost::json::value_stack st;
  std::string number;  // the text of a number split across writes

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return true; }
  bool on_object_end(std::size_t n, error_code&) {
    st.push_object(n);
    return true;
  }
  bool on_array_begin(error_code&) { return true; }
  bool on_array_end(std::size_t n, error_code&) {
    st.push_array(n);
    return true;
  }
  bool on_key_part(string_view s, std::size_t, error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code&) {
    st.push_key(s);
    return true;
  }
  bool on_string_part(string_view s, std::size_t, error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code&) {
    st.push_string(s);
    return true;
  }
  bool on_number_part(string_view s, error_code&) {
    number.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t i, string_view, error_code&) {
    number.clear();
    st.push_int64(i);
    return true;
  }
  bool on_uint64(std::uint64_t u, string_view, error_code&) {
    number.clear();
    st.push_uint64(u);
    return true;
  }
  bool on_double(double d, string_view s, error_code&) {
    number.append(s.data(), s.size());
    char* end = nullptr;
    const double exact = std::strtod(number.c_str(), &end);
    st.push_double(end == number.c_str() + number.size() && std::isfinite(exact) ? exact : d);
    number.clear();
    return true;
  }
  bool on_bool(bool b, error_code&) {
    st.push_bool(b);
    return true;
  }
  bool on_null(error_code&) {
    st.push_null();
    return true;
  }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }
};

// ExactNumberHandler that leaves out the values of members with some names (at any depth), so a
// large document can be read for the part that matters without holding the rest.
struct DroppingHandler : ExactNumberHandler {
  std::vector<std::string> dropped;
  std::string key;               // a key's text split across writes
  int skip_depth = 0;            // > 0: inside a dropped container, this deep
  bool pending = false;          // the value that comes next is dropped
  std::vector<size_t> left_out;  // per open object: its members dropped

  bool skipping() const { return skip_depth > 0 || pending; }
  // A scalar arrived: true when it is dropped (ending the drop when it was the value itself).
  bool drop_scalar() {
    if (skip_depth > 0) return true;
    if (!pending) return false;
    pending = false;
    return true;
  }
  bool begin_container() {
    if (skip_depth > 0) return ++skip_depth, true;
    if (!pending) return false;
    pending = false;
    skip_depth = 1;
    return true;
  }

  bool on_object_begin(error_code&) {
    if (!begin_container()) left_out.push_back(0);
    return true;
  }
  bool on_object_end(std::size_t n, error_code& ec) {
    if (skip_depth > 0) return --skip_depth, true;
    n -= left_out.back();
    left_out.pop_back();
    return ExactNumberHandler::on_object_end(n, ec);
  }
  bool on_array_begin(error_code&) {
    begin_container();
    return true;
  }
  bool on_array_end(std::size_t n, error_code& ec) {
    if (skip_depth > 0) return --skip_depth, true;
    return ExactNumberHandler::on_array_end(n, ec);
  }
  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (skip_depth == 0) key.append(s.data(), s.size());
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code&) {
    if (skip_depth > 0) return true;
    key.append(s.data(), s.size());
    if (std::find(dropped.begin(), dropped.end(), key) != dropped.end()) {
      pending = true;
      ++left_out.back();
    } else {
      st.push_key(key);
    }
    key.clear();
    return true;
  }
  bool on_string_part(string_view s, std::size_t n, error_code& ec) {
    return skipping() || ExactNumberHandler::on_string_part(s, n, ec);
  }
  bool on_string(string_view s, std::size_t n, error_code& ec) {
    return drop_scalar() || ExactNumberHandler::on_string(s, n, ec);
  }
  bool on_number_part(string_view s, error_code& ec) { return skipping() || ExactNumberHandler::on_number_part(s, ec); }
  bool on_int64(std::int64_t i, string_view s, error_code& ec) {
    return drop_scalar() || ExactNumberHandler::on_int64(i, s, ec);
  }
  bool on_uint64(std::uint64_t u, string_view s, error_code& ec) {
    return drop_scalar() || ExactNumberHandler::on_uint64(u, s, ec);
  }
  bool on_double(double d, string_view s, error_code& ec) {
    return drop_scalar() || ExactNumberHandler::on_double(d, s, ec);
  }
  bool on_bool(bool b, error_code& ec) { return drop_scalar() || ExactNumberHandler::on_bool(b, ec); }
  bool on_null(error_code& ec) { return drop_scalar() || ExactNumberHandler::on_null(ec); }
};

// Line and column (1-based) after `text`, continuing from `line`/`column`.
void advance(std::string_view text, size_t& line, size_t& column) {
  for (char c : text) {
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
}

}  // namespace

Result<boost::json::value> parse(std::string_view text, std::string_view source_name) {
  boost::json::basic_parser<ExactNumberHandler> parser(boost::json::parse_options{});
  parser.handler().st.reset();
  boost::system::error_code ec;
  const size_t consumed = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && consumed < text.size()) ec = boost::json::error::extra_data;
  if (ec) {
    // Locate the failure: count lines up to the byte the parser stopped at.
    size_t offset = std::min(consumed, text.size());
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i < offset; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return fail(ErrorCode::kParse, fmt::format("{}:{}:{}: invalid JSON: {}", source_name, line, column, ec.message()));
  }
  return parser.handler().st.release();
}

Result<boost::json::value> read_file(const std::filesystem::path& path, size_t max_bytes, std::string_view what) {
  auto text = files::read_text_file(path, max_bytes, what);
  if (!text) return std::unexpected(text.error());
  return parse(*text, path.string());
}

Result<boost::json::value> read_file_without(const std::filesystem::path& path,
                                             const std::vector<std::string>& dropped_keys, std::string_view what) {
  std::error_code fs_error;
  if (!std::filesystem::is_regular_file(path, fs_error)) {
    if (std::filesystem::exists(path, fs_error))
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{}: not a regular file ({} expected)", path.string(), what));
    return fail(ErrorCode::kNotFound, fmt::format("{}: no such file ({} expected)", path.string(), what));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::kIo, fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  boost::json::basic_parser<DroppingHandler> parser(boost::json::parse_options{});
  parser.handler().st.reset();
  parser.handler().dropped = dropped_keys;
  std::vector<char> buffer(size_t{1} << 20);
  size_t line = 1, column = 1;
  boost::system::error_code ec;
  auto syntax_error = [&](std::string_view text) {
    advance(text, line, column);
    return fail(ErrorCode::kParse,
                fmt::format("{}:{}:{}: invalid JSON: {}", path.string(), line, column, ec.message()));
  };
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<size_t>(in.gcount());
    if (got == 0) break;
    const size_t consumed = parser.write_some(true, buffer.data(), got, ec);
    if (ec) return syntax_error(std::string_view(buffer.data(), std::min(consumed, got)));
    advance(std::string_view(buffer.data(), got), line, column);
  }
  if (in.bad()) return fail(ErrorCode::kIo, fmt::format("{}: read failed: {}", path.string(), std::strerror(errno)));
  parser.write_some(false, nullptr, 0, ec);
  if (ec) return syntax_error({});
  return parser.handler().st.release();
}

std::string to_string(const boost::json::value& value) {
  std::string out;
  append(out, value, 0, 0, Style{});
  return out;
}

std::string to_pretty_string(const boost::json::value& value) {
  std::string out;
  append(out, value, 2, 0, Style{});
  out += '\n';
  return out;
}

std::string to_python_json(const boost::json::value& value, int indent) {
  std::string out;
  append(out, value, indent, 0, Style{.ascii = true, .python_nan = true});
  return out;
}

Result<const boost::json::value*> field(const boost::json::object& object, std::string_view key) {
  const auto* found = object.if_contains(boost::json::string_view(key.data(), key.size()));
  if (found == nullptr) return fail(ErrorCode::kInvalidArgument, fmt::format("missing field '{}'", key));
  return found;
}

Result<int64_t> get_int(const boost::json::object& object, std::string_view key) {
  auto value = field(object, key);
  if (!value) return fail(value.error());
  if ((*value)->is_int64()) return (*value)->get_int64();
  if ((*value)->is_uint64() && (*value)->get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>((*value)->get_uint64());
  }
  return fail(ErrorCode::kInvalidArgument, fmt::format("field '{}' must be an integer", key));
}

Result<double> get_number(const boost::json::object& object, std::string_view key) {
  auto value = field(object, key);
  if (!value) return fail(value.error());
  if ((*value)->is_number()) return (*value)->to_number<double>();
  return fail(ErrorCode::kInvalidArgument, fmt::format("field '{}' must be a number", key));
}

Result<std::string> get_string(const boost::json::object& object, std::string_view key) {
  auto value = field(object, key);
  if (!value) return fail(value.error());
  if ((*value)->is_string()) return std::string((*value)->get_string());
  return fail(ErrorCode::kInvalidArgument, fmt::format("field '{}' must be a string", key));
}

Result<bool> get_bool(const boost::json::object& object, std::string_view key) {
  auto value = field(object, key);
  if (!value) return fail(value.error());
  if ((*value)->is_bool()) return (*value)->get_bool();
  return fail(ErrorCode::kInvalidArgument, fmt::format("field '{}' must be true or false", key));
}

}  // namespace ix::json
