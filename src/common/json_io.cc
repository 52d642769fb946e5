#include "common/json_io.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <cmath>

namespace ix::json {
namespace {

// Doubles are printed like Python's repr (shortest round-trip, "1.0" for integral values,
// exponent form outside [1e-4, 1e16)), so ixbench files read like the Python tools' files and
// diff cleanly against them. Non-finite values have no JSON form: they are written as null.
void append_double(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  out += text;
}

void append_string(std::string& out, std::string_view text) {
  out += boost::json::serialize(boost::json::string_view(text.data(), text.size()));
}

void append(std::string& out, const boost::json::value& value, int indent, int depth) {
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
    case boost::json::kind::double_: append_double(out, value.get_double()); break;
    case boost::json::kind::string: append_string(out, value.get_string()); break;
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
        append(out, element, indent, depth + 1);
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
        append_string(out, member.key());
        out += ": ";
        append(out, member.value(), indent, depth + 1);
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

std::string to_string(const boost::json::value& value) {
  std::string out;
  append(out, value, 0, 0);
  return out;
}

std::string to_pretty_string(const boost::json::value& value) {
  std::string out;
  append(out, value, 2, 0);
  out += '\n';
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
