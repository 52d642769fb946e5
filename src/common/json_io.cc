#include "common/json_io.h"

#include <fmt/format.h>

#include <boost/json.hpp>
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

}  // namespace

Result<boost::json::value> parse(std::string_view text, std::string_view source_name) {
  boost::json::stream_parser parser;
  boost::system::error_code ec;
  size_t consumed = parser.write(text.data(), text.size(), ec);
  if (!ec) parser.finish(ec);
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
  return parser.release();
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
