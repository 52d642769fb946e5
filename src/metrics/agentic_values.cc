// JSON values read as Python reads them, the statistics objects, round_floats() and the error
// categories of dropped rows.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "common/utf8.h"
#include "metrics/agentic_internal.h"
#include "metrics/power.h"
#include "metrics/replay_result.h"
#include "metrics/statistics.h"

namespace ix::metrics::agentic {
namespace bj = boost::json;

namespace detail {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// str.isspace() for one code point.
bool py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// A line boundary of str.splitlines().
bool py_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) || c == 0x85 || c == 0x2028 ||
         c == 0x2029;
}

// The code points of valid UTF-8 text (invalid bytes as themselves).
std::vector<std::pair<size_t, char32_t>> code_points(std::string_view text) {
  std::vector<std::pair<size_t, char32_t>> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    if (utf8::valid_sequence_length(text, pos) == 0) {
      out.emplace_back(start, static_cast<unsigned char>(text[pos++]));
      continue;
    }
    out.emplace_back(start, utf8::next_code_point(text, pos));
  }
  return out;
}

// Digits with single underscores between them, from `pos`; the digits without underscores.
std::optional<std::string> digit_run(std::string_view text, size_t& pos) {
  std::string digits;
  while (pos < text.size()) {
    if (is_digit(text[pos])) {
      digits += text[pos++];
    } else if (text[pos] == '_' && !digits.empty() && pos + 1 < text.size() && is_digit(text[pos + 1])) {
      ++pos;
    } else {
      break;
    }
  }
  if (digits.empty()) return std::nullopt;
  return digits;
}

std::string py_repr_string(std::string_view text) {
  const bool double_quotes = text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  return out + quote;
}

std::string py_repr(const bj::value& value) {
  return value.is_string() ? py_repr_string(value.get_string()) : py_str(value);
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string text = fmt::format("{}", v);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

std::optional<int64_t> int_of_text(std::string_view text) {
  text = py_strip(text);
  size_t pos = 0;
  bool negative = false;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) negative = text[pos++] == '-';
  auto digits = digit_run(text, pos);
  if (!digits || pos != text.size()) return std::nullopt;
  errno = 0;
  const long long value = std::strtoll(digits->c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return negative ? -value : value;
}

std::optional<double> float_of_text(std::string_view text) {
  text = py_strip(text);
  size_t pos = 0;
  std::string clean;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) clean += text[pos++];
  std::string word;
  for (size_t i = pos; i < text.size(); ++i)
    word += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  if (word == "inf" || word == "infinity") return clean == "-" ? -HUGE_VAL : HUGE_VAL;
  if (word == "nan") return std::nan("");
  auto whole = digit_run(text, pos);
  if (whole) clean += *whole;
  bool fraction = false;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    clean += '.';
    if (pos < text.size() && is_digit(text[pos])) {
      auto part = digit_run(text, pos);
      clean += *part;
      fraction = true;
    }
  }
  if (!whole && !fraction) return std::nullopt;
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    clean += text[pos++];
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) clean += text[pos++];
    auto exponent = digit_run(text, pos);
    if (!exponent) return std::nullopt;
    clean += *exponent;
  }
  if (pos != text.size()) return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);
}

std::optional<double> to_float(const bj::value& value) {
  switch (value.kind()) {
    case bj::kind::bool_: return value.get_bool() ? 1.0 : 0.0;
    case bj::kind::int64: return static_cast<double>(value.get_int64());
    case bj::kind::uint64: return static_cast<double>(value.get_uint64());
    case bj::kind::double_: return value.get_double();
    case bj::kind::string: return float_of_text(value.get_string());
    default: return std::nullopt;
  }
}

std::optional<int64_t> to_int(const bj::value& value) {
  switch (value.kind()) {
    case bj::kind::bool_: return value.get_bool() ? 1 : 0;
    case bj::kind::int64: return value.get_int64();
    case bj::kind::uint64:
      if (value.get_uint64() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
      return static_cast<int64_t>(value.get_uint64());
    case bj::kind::double_: {
      const double v = std::trunc(value.get_double());
      if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) return std::nullopt;
      return static_cast<int64_t>(v);
    }
    case bj::kind::string: return int_of_text(value.get_string());
    default: return std::nullopt;
  }
}

bool truthy(const bj::value& value) {
  switch (value.kind()) {
    case bj::kind::null: return false;
    case bj::kind::bool_: return value.get_bool();
    case bj::kind::int64: return value.get_int64() != 0;
    case bj::kind::uint64: return value.get_uint64() != 0;
    case bj::kind::double_: return value.get_double() != 0.0;
    case bj::kind::string: return !value.get_string().empty();
    case bj::kind::array: return !value.get_array().empty();
    case bj::kind::object: return !value.get_object().empty();
  }
  return false;
}

std::string py_str(const bj::value& value) {
  switch (value.kind()) {
    case bj::kind::null: return "None";
    case bj::kind::bool_: return value.get_bool() ? "True" : "False";
    case bj::kind::int64: return std::to_string(value.get_int64());
    case bj::kind::uint64: return std::to_string(value.get_uint64());
    case bj::kind::double_: return float_repr(value.get_double());
    case bj::kind::string: return std::string(value.get_string());
    case bj::kind::array: {
      std::string out = "[";
      for (const auto& element : value.get_array()) out += (out.size() > 1 ? ", " : "") + py_repr(element);
      return out + "]";
    }
    case bj::kind::object: {
      std::string out = "{";
      for (const auto& [key, element] : value.get_object())
        out += (out.size() > 1 ? ", " : "") + py_repr_string(key) + ": " + py_repr(element);
      return out + "}";
    }
  }
  return "";
}

std::string_view py_strip(std::string_view text) {
  const auto points = code_points(text);
  size_t first = 0, last = points.size();
  while (first < last && py_space(points[first].second)) ++first;
  while (last > first && py_space(points[last - 1].second)) --last;
  if (first == last) return {};
  const size_t begin = points[first].first;
  const size_t end = last < points.size() ? points[last].first : text.size();
  return text.substr(begin, end - begin);
}

bj::object float_stats(std::vector<double> values) {
  bj::object out;
  if (values.empty()) return out;
  out["mean"] = python_mean(values);
  const double deviation = values.size() > 1 ? python_pstdev(values) : 0.0;
  std::sort(values.begin(), values.end());
  for (const auto& [key, p] : {std::pair{"p50", 50.0}, {"p75", 75.0}, {"p90", 90.0}, {"p95", 95.0}})
    out[key] = agentic_percentile(values, p);
  out["std"] = deviation;
  return out;
}

bj::object int_stats(const std::vector<int64_t>& values) {
  bj::object out;
  if (values.empty()) return out;
  const PythonNumber mean = python_mean(std::span<const int64_t>(values));
  out["mean"] = mean.is_int ? bj::value(mean.int_value) : bj::value(mean.float_value);
  std::vector<double> floats(values.begin(), values.end());
  std::sort(floats.begin(), floats.end());
  for (const auto& [key, p] : {std::pair{"p50", 50.0}, {"p75", 75.0}, {"p90", 90.0}, {"p95", 95.0}})
    out[key] = agentic_percentile(floats, p);
  out["std"] = values.size() > 1 ? python_pstdev(std::span<const int64_t>(values)) : 0.0;
  return out;
}

}  // namespace detail

Result<std::string> error_category(const bj::value& error) {
  const bj::value* message = &error;
  bj::value none;
  if (const bj::object* o = error.if_object()) {
    for (const char* key : {"type", "error_type", "code", "class", "status"}) {
      const bj::value* v = o->if_contains(key);
      if (v && !v->is_null() && !(v->is_string() && v->get_string().empty())) return detail::py_str(*v);
    }
    message = o->if_contains("message");
    if (!message || !detail::truthy(*message)) message = o->if_contains("error");
    if (!message) message = &none;
  }
  if (!detail::truthy(*message)) return std::string("unknown");
  const std::string text = detail::py_str(*message);
  const std::string_view stripped = detail::py_strip(text);
  if (stripped.empty())
    return fail(ErrorCode::kInvalidArgument,
                "the error message is only white space (the script fails on it: IndexError in _error_category)");
  std::string_view first_line = stripped;
  for (const auto& [offset, c] : detail::code_points(stripped)) {
    if (detail::py_line_break(c)) {
      first_line = stripped.substr(0, offset);
      break;
    }
  }
  std::string_view head = first_line.substr(0, first_line.find(':'));
  if (head.empty()) head = "unknown";
  const auto points = detail::code_points(head);
  if (points.size() > 120) head = head.substr(0, points[120].first);
  return std::string(head);
}

void round_floats(bj::value& value) {
  if (value.is_double()) {
    const double v = value.get_double();
    if (!std::isfinite(v)) return;
    const double rounded = power::python_round(v, 5);
    if (std::fabs(rounded) >= 1 && std::trunc(rounded) == rounded) {
      if (std::fabs(rounded) < 9223372036854775808.0) {
        value = static_cast<int64_t>(rounded);
      } else if (rounded > 0 && rounded < 18446744073709551616.0) {
        value = static_cast<uint64_t>(rounded);
      } else {
        value = rounded;
      }
      return;
    }
    value = rounded;
    return;
  }
  if (auto* o = value.if_object()) {
    for (auto& member : *o) round_floats(member.value());
  } else if (auto* a = value.if_array()) {
    for (auto& element : *a) round_floats(element);
  }
}

}  // namespace ix::metrics::agentic
