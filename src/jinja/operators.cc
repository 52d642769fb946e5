// Python operators, iteration, slicing, printf/format formatting and json.dumps for the engine.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "jinja/builtins.h"

namespace ix::jinja {
namespace {

Error unsupported(std::string_view op, const Value& a, const Value& b) {
  return type_error(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(), b.type_name()));
}

bool int_like(const Value& v) {
  return v.is_int() || v.is_bool();
}

Result<Value> checked_int(bool overflow, int64_t value) {
  if (overflow) return fail(type_error("integer overflow (ixbench's Jinja ints are 64-bit)"));
  return Value(value);
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t py_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double py_fmod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0.0 && ((r < 0) != (b < 0))) r += b;
  if (r == 0.0) r = std::copysign(0.0, b);
  return r;
}

Result<Value> repeat(const Value& sequence, int64_t times, size_t max_bytes) {
  if (times <= 0) {
    if (sequence.is_string()) return Value(std::string());
    return sequence.is_tuple() ? Value::tuple({}) : Value::list({});
  }
  if (sequence.is_string()) {
    const std::string& s = sequence.as_string();
    if (!s.empty() && static_cast<uint64_t>(times) > max_bytes / s.size()) {
      return fail(type_error(fmt::format("string repetition would exceed {} bytes", max_bytes)));
    }
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(times));
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value(std::move(out));
  }
  const auto items = sequence.items();
  if (!items.empty() && static_cast<uint64_t>(times) > (max_bytes / sizeof(Value)) / items.size()) {
    return fail(type_error(fmt::format("list repetition would exceed {} bytes", max_bytes)));
  }
  std::vector<Value> out;
  out.reserve(items.size() * static_cast<size_t>(times));
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return sequence.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

// Python's int ** int.
Result<Value> int_pow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 0) return fail(type_error("0.0 cannot be raised to a negative power"));
    return Value(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }
  int64_t result = 1;
  int64_t b = base;
  int64_t e = exponent;
  while (e > 0) {
    if (e & 1) {
      if (__builtin_mul_overflow(result, b, &result)) return checked_int(true, 0);
    }
    e >>= 1;
    if (e > 0 && __builtin_mul_overflow(b, b, &b)) return checked_int(true, 0);
  }
  return Value(result);
}

int type_class(const Value& v) {
  if (v.is_number()) return 1;
  if (v.is_string()) return 2;
  if (v.is_list()) return 3;
  if (v.is_tuple()) return 4;
  return 0;
}

}  // namespace

Error undefined_error(const Value& undefined) {
  const std::string_view hint = undefined.undefined_hint();
  return type_error(hint.empty() ? std::string("a value is undefined") : std::string(hint));
}

Result<std::vector<Value>> iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return std::vector<Value>();
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      const auto items = value.items();
      return std::vector<Value>(items.begin(), items.end());
    }
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(value.entries().size());
      for (const auto& entry : value.entries()) keys.push_back(entry.first);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      const std::string& s = value.as_string();
      if (py::is_ascii(s)) {
        chars.reserve(s.size());
        for (char c : s) chars.emplace_back(std::string(1, c));
        return chars;
      }
      for (char32_t cp : py::decode(s)) chars.emplace_back(py::encode(std::u32string(1, cp)));
      return chars;
    }
    default: return fail(type_error(fmt::format("'{}' object is not iterable", value.type_name())));
  }
}

Result<Value> unary_op(UnaryOp op, const Value& operand) {
  if (operand.is_undefined()) return fail(undefined_error(operand));
  if (op == UnaryOp::kNot) return Value(!operand.truthy());
  if (operand.is_float()) return Value(op == UnaryOp::kNeg ? -operand.as_float() : operand.as_float());
  if (int_like(operand)) {
    const int64_t v = operand.as_int();
    if (op == UnaryOp::kPos) return Value(v);
    if (v == std::numeric_limits<int64_t>::min()) return checked_int(true, 0);
    return Value(-v);
  }
  return fail(type_error(
      fmt::format("bad operand type for unary {}: '{}'", op == UnaryOp::kNeg ? "-" : "+", operand.type_name())));
}

Result<Value> binary_op(BinaryOp op, const Value& a, const Value& b, size_t max_bytes) {
  if (op == BinaryOp::kConcat) {
    std::string out;
    a.append_str(out);
    b.append_str(out);
    if (out.size() > max_bytes) return fail(type_error(fmt::format("string would exceed {} bytes", max_bytes)));
    return Value(std::move(out));
  }
  if (a.is_undefined()) return fail(undefined_error(a));
  if (b.is_undefined()) return fail(undefined_error(b));
  const bool numbers = a.is_number() && b.is_number();
  const bool floats = numbers && (a.is_float() || b.is_float());
  switch (op) {
    case BinaryOp::kAdd: {
      if (numbers) {
        if (floats) return Value(a.as_float() + b.as_float());
        int64_t r;
        const bool overflow = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
        return checked_int(overflow, r);
      }
      if (a.is_string() && b.is_string()) {
        if (a.as_string().size() + b.as_string().size() > max_bytes) {
          return fail(type_error(fmt::format("string would exceed {} bytes", max_bytes)));
        }
        return Value(a.as_string() + b.as_string());
      }
      if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
        // Values are 32 bytes: the output limit bounds lists too (doubling a list in a loop
        // would otherwise exhaust memory long before the step limit).
        if ((a.items().size() + b.items().size()) * sizeof(Value) > max_bytes) {
          return fail(type_error(fmt::format("list would exceed {} bytes", max_bytes)));
        }
        std::vector<Value> items(a.items().begin(), a.items().end());
        items.insert(items.end(), b.items().begin(), b.items().end());
        return a.is_list() ? Value::list(std::move(items)) : Value::tuple(std::move(items));
      }
      if (a.is_string()) {
        return fail(type_error(fmt::format("can only concatenate str (not \"{}\") to str", b.type_name())));
      }
      if (a.is_list()) {
        return fail(type_error(fmt::format("can only concatenate list (not \"{}\") to list", b.type_name())));
      }
      return fail(unsupported("+", a, b));
    }
    case BinaryOp::kSub: {
      if (!numbers) return fail(unsupported("-", a, b));
      if (floats) return Value(a.as_float() - b.as_float());
      int64_t r;
      const bool overflow = __builtin_sub_overflow(a.as_int(), b.as_int(), &r);
      return checked_int(overflow, r);
    }
    case BinaryOp::kMul: {
      if (numbers) {
        if (floats) return Value(a.as_float() * b.as_float());
        int64_t r;
        const bool overflow = __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
        return checked_int(overflow, r);
      }
      if ((a.is_string() || a.is_sequence()) && int_like(b)) return repeat(a, b.as_int(), max_bytes);
      if ((b.is_string() || b.is_sequence()) && int_like(a)) return repeat(b, a.as_int(), max_bytes);
      return fail(unsupported("*", a, b));
    }
    case BinaryOp::kDiv: {
      if (!numbers) return fail(unsupported("/", a, b));
      if (b.as_float() == 0.0) return fail(type_error("division by zero"));
      return Value(a.as_float() / b.as_float());
    }
    case BinaryOp::kFloorDiv: {
      if (!numbers) return fail(unsupported("//", a, b));
      if (floats) {
        if (b.as_float() == 0.0) return fail(type_error("float floor division by zero"));
        return Value(std::floor(a.as_float() / b.as_float()));
      }
      if (b.as_int() == 0) return fail(type_error("integer division or modulo by zero"));
      if (a.as_int() == std::numeric_limits<int64_t>::min() && b.as_int() == -1) return checked_int(true, 0);
      return Value(floor_div(a.as_int(), b.as_int()));
    }
    case BinaryOp::kMod: {
      if (a.is_string()) {
        auto formatted = percent_format(a.as_string(), b, max_bytes);
        if (!formatted) return fail(formatted.error());
        return Value(std::move(*formatted));
      }
      if (!numbers) return fail(unsupported("%", a, b));
      if (floats) {
        if (b.as_float() == 0.0) return fail(type_error("float modulo"));
        return Value(py_fmod(a.as_float(), b.as_float()));
      }
      if (b.as_int() == 0) return fail(type_error("integer division or modulo by zero"));
      if (b.as_int() == -1) return Value(int64_t{0});
      return Value(py_mod(a.as_int(), b.as_int()));
    }
    case BinaryOp::kPow: {
      if (!numbers) return fail(unsupported("** or pow()", a, b));
      if (floats) {
        if (a.as_float() == 0.0 && b.as_float() < 0) {
          return fail(type_error("0.0 cannot be raised to a negative power"));
        }
        return Value(std::pow(a.as_float(), b.as_float()));
      }
      return int_pow(a.as_int(), b.as_int());
    }
    default: break;
  }
  return fail(ErrorCode::kInternal, "unknown operator");
}

Result<bool> less_than(const Value& a, const Value& b) {
  if (a.is_undefined()) return fail(undefined_error(a));
  if (b.is_undefined()) return fail(undefined_error(b));
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) return a.as_int() < b.as_int();
    return a.as_float() < b.as_float();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 order = code point order
  if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
    const auto x = a.items();
    const auto y = b.items();
    for (size_t index = 0; index < x.size() && index < y.size(); ++index) {
      if (x[index].equals(y[index])) continue;
      return less_than(x[index], y[index]);
    }
    return x.size() < y.size();
  }
  return fail(
      type_error(fmt::format("'<' not supported between instances of '{}' and '{}'", a.type_name(), b.type_name())));
}

Result<bool> compare_op(CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::kEq: return a.equals(b);
    case CompareOp::kNe: return !a.equals(b);
    case CompareOp::kLt: return less_than(a, b);
    case CompareOp::kGt: return less_than(b, a);
    case CompareOp::kLe: {
      if (a.equals(b) && type_class(a) != 0 && type_class(a) == type_class(b)) return true;
      auto lt = less_than(a, b);
      if (!lt) return lt;
      return *lt || a.equals(b);
    }
    case CompareOp::kGe: {
      if (a.equals(b) && type_class(a) != 0 && type_class(a) == type_class(b)) return true;
      auto gt = less_than(b, a);
      if (!gt) return gt;
      return *gt || a.equals(b);
    }
    case CompareOp::kIn:
    case CompareOp::kNotIn: {
      bool found = false;
      if (b.is_string()) {
        if (!a.is_string()) {
          if (a.is_undefined()) return fail(undefined_error(a));
          return fail(type_error(fmt::format("'in <string>' requires string as left operand, not {}", a.type_name())));
        }
        found = b.as_string().find(a.as_string()) != std::string::npos;
      } else if (b.is_sequence()) {
        for (const auto& item : b.items()) {
          if (item.equals(a)) {
            found = true;
            break;
          }
        }
      } else if (b.is_dict()) {
        if (a.is_list() || a.is_dict()) return fail(type_error(fmt::format("unhashable type: '{}'", a.type_name())));
        found = static_cast<const DictData*>(b.handle().get())->find(a) != nullptr;
      } else if (b.is_undefined()) {
        found = false;  // iterating an Undefined yields nothing
      } else {
        return fail(type_error(fmt::format("argument of type '{}' is not iterable", b.type_name())));
      }
      return op == CompareOp::kIn ? found : !found;
    }
  }
  return false;
}

Result<Value> slice_value(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v) {
  const auto as_index = [](const Value& v, const char* what) -> Result<std::optional<int64_t>> {
    if (v.is_none()) return std::optional<int64_t>();
    if (v.is_int() || v.is_bool()) return std::optional<int64_t>(v.as_int());
    if (v.is_undefined()) return fail(undefined_error(v));
    return fail(type_error(fmt::format("slice {} must be an integer or None, not {}", what, v.type_name())));
  };
  auto start = as_index(start_v, "indices");
  if (!start) return fail(start.error());
  auto stop = as_index(stop_v, "indices");
  if (!stop) return fail(stop.error());
  auto step_index = as_index(step_v, "step");
  if (!step_index) return fail(step_index.error());
  const int64_t step = step_index->value_or(1);
  if (step == 0) return fail(type_error("slice step cannot be zero"));
  const bool is_str = object.is_string();
  if (!is_str && !object.is_sequence()) {
    return fail(type_error(fmt::format("'{}' object is not subscriptable with a slice", object.type_name())));
  }
  std::u32string cps;
  bool ascii = false;
  int64_t length = 0;
  if (is_str) {
    ascii = py::is_ascii(object.as_string());
    if (ascii) {
      length = static_cast<int64_t>(object.as_string().size());
    } else {
      cps = py::decode(object.as_string());
      length = static_cast<int64_t>(cps.size());
    }
  } else {
    length = static_cast<int64_t>(object.items().size());
  }
  // CPython's PySlice_AdjustIndices.
  const auto adjust = [&](std::optional<int64_t> v, int64_t default_value) {
    if (!v) return default_value;
    int64_t x = *v;
    if (x < 0) {
      x += length;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= length) {
      x = step < 0 ? length - 1 : length;
    }
    return x;
  };
  const int64_t first = adjust(*start, step < 0 ? length - 1 : 0);
  const int64_t last = adjust(*stop, step < 0 ? -1 : length);
  std::vector<int64_t> indexes;
  if (step > 0) {
    for (int64_t i = first; i < last; i += step) indexes.push_back(i);
  } else {
    for (int64_t i = first; i > last; i += step) indexes.push_back(i);
  }
  if (is_str) {
    std::string out;
    if (ascii) {
      const std::string& s = object.as_string();
      if (step == 1)
        return Value(s.substr(static_cast<size_t>(first), static_cast<size_t>(std::max<int64_t>(0, last - first))));
      for (int64_t i : indexes) out += s[static_cast<size_t>(i)];
    } else {
      std::u32string picked;
      for (int64_t i : indexes) picked += cps[static_cast<size_t>(i)];
      out = py::encode(picked);
    }
    return Value(std::move(out));
  }
  const auto items = object.items();
  std::vector<Value> out;
  out.reserve(indexes.size());
  for (int64_t i : indexes) out.push_back(items[static_cast<size_t>(i)]);
  return object.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

// ---- formatting ----

namespace {

struct Spec {
  char fill = ' ';
  char align = 0;  // '<', '>', '^', '='
  char sign = 0;
  bool alternate = false;
  bool zero = false;
  int64_t width = -1;
  int64_t precision = -1;
  char type = 0;
};

std::string pad(std::string body, const Spec& spec, char default_align) {
  const int64_t length = static_cast<int64_t>(py::length(body));
  if (spec.width <= length) return body;
  const auto missing = static_cast<size_t>(spec.width - length);
  const char align = spec.align ? spec.align : default_align;
  const std::string fill(1, spec.fill);
  std::string left, right;
  if (align == '<') {
    for (size_t i = 0; i < missing; ++i) right += fill;
  } else if (align == '^') {
    for (size_t i = 0; i < missing / 2; ++i) left += fill;
    for (size_t i = 0; i < missing - missing / 2; ++i) right += fill;
  } else if (align == '=' && !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) {
    std::string out(1, body[0]);
    for (size_t i = 0; i < missing; ++i) out += fill;
    return out + body.substr(1);
  } else {
    for (size_t i = 0; i < missing; ++i) left += fill;
  }
  return left + body + right;
}

Result<std::string> format_number(const Value& v, const Spec& spec) {
  char type = spec.type;
  std::string body;
  const bool negative = v.is_float() ? std::signbit(v.as_float()) && !std::isnan(v.as_float()) : v.as_int() < 0;
  if (type == 'd' || type == 'i' || type == 'u' || type == 'x' || type == 'X' || type == 'o' || type == 'b' ||
      type == 'c') {
    if (v.is_float()) {
      if (type != 'd' && type != 'i' && type != 'u') {
        return fail(type_error(fmt::format("unknown format code '{}' for object of type 'float'", type)));
      }
      if (!std::isfinite(v.as_float())) return fail(type_error("cannot convert float infinity or NaN to integer"));
    }
    const int64_t i = v.is_float() ? static_cast<int64_t>(v.as_float()) : v.as_int();
    const uint64_t magnitude = i < 0 ? static_cast<uint64_t>(0) - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
    if (type == 'c') {
      if (i < 0 || i > 0x10FFFF) return fail(type_error("%c arg not in range(0x110000)"));
      return pad(py::encode(std::u32string(1, static_cast<char32_t>(i))), spec, '<');
    }
    switch (type) {
      case 'x': body = fmt::format("{:x}", magnitude); break;
      case 'X': body = fmt::format("{:X}", magnitude); break;
      case 'o': body = fmt::format("{:o}", magnitude); break;
      case 'b': body = fmt::format("{:b}", magnitude); break;
      default: body = fmt::format("{}", magnitude); break;
    }
    if (spec.alternate && type != 'd' && type != 'i' && type != 'u') {
      body = (type == 'x' ? "0x" : type == 'X' ? "0X" : type == 'o' ? "0o" : "0b") + body;
    }
    if (spec.precision > 0 && static_cast<int64_t>(body.size()) < spec.precision) {
      body = std::string(static_cast<size_t>(spec.precision) - body.size(), '0') + body;
    }
  } else {
    const double d = v.as_float();
    const double magnitude = std::fabs(d);
    const int precision = static_cast<int>(spec.precision < 0 ? 6 : std::min<int64_t>(spec.precision, 100));
    if (type == 0) {
      body = spec.precision < 0 ? (v.is_float() ? py::float_repr(magnitude) : fmt::format("{}", std::llabs(v.as_int())))
                                : fmt::format("{:.{}g}", magnitude, precision);
    } else if (std::isnan(d)) {
      body = (type == 'F' || type == 'E' || type == 'G') ? "NAN" : "nan";
    } else if (std::isinf(d)) {
      body = (type == 'F' || type == 'E' || type == 'G') ? "INF" : "inf";
    } else {
      switch (type) {
        case 'f':
        case 'F': body = fmt::format("{:.{}f}", magnitude, precision); break;
        case 'e': body = fmt::format("{:.{}e}", magnitude, precision); break;
        case 'E': body = fmt::format("{:.{}E}", magnitude, precision); break;
        case 'g': body = fmt::format("{:.{}g}", magnitude, std::max(precision, 1)); break;
        case 'G': body = fmt::format("{:.{}G}", magnitude, std::max(precision, 1)); break;
        case '%': body = fmt::format("{:.{}f}%", magnitude * 100, precision); break;
        default: return fail(type_error(fmt::format("unsupported format character '{}'", type)));
      }
    }
  }
  std::string sign = negative ? "-" : (spec.sign == '+' ? "+" : spec.sign == ' ' ? " " : "");
  if (spec.zero && spec.align == 0) {
    const int64_t total = static_cast<int64_t>(sign.size() + body.size());
    if (spec.width > total) body = std::string(static_cast<size_t>(spec.width - total), '0') + body;
  }
  return pad(sign + body, spec, '>');
}

Result<std::string> format_value(const Value& v, const Spec& spec) {
  if (spec.type == 's' || spec.type == 'r' || spec.type == 'a' || (spec.type == 0 && !v.is_number())) {
    std::string text = spec.type == 'r' || spec.type == 'a' ? v.repr() : v.str();
    if (spec.precision >= 0 && static_cast<int64_t>(py::length(text)) > spec.precision) {
      text = py::encode(py::decode(text).substr(0, static_cast<size_t>(spec.precision)));
    }
    return pad(std::move(text), spec, '<');
  }
  if (v.is_undefined()) return fail(undefined_error(v));
  if (!v.is_number()) {
    return fail(type_error(fmt::format("format code '{}' needs a number, not {}", spec.type, v.type_name())));
  }
  return format_number(v, spec);
}

int64_t read_number(std::string_view text, size_t& pos) {
  int64_t n = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    n = std::min<int64_t>(n * 10 + (text[pos] - '0'), 1 << 20);
    ++pos;
  }
  return n;
}

}  // namespace

Result<std::string> percent_format(std::string_view format, const Value& args, size_t max_bytes) {
  std::vector<Value> positional;
  const Value* mapping = nullptr;
  if (args.is_tuple()) {
    positional.assign(args.items().begin(), args.items().end());
  } else if (args.is_dict()) {
    mapping = &args;
    positional.push_back(args);
  } else {
    positional.push_back(args);
  }
  size_t next_arg = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t pos = 0; pos < format.size(); ++pos) {
    if (format[pos] != '%') {
      out += format[pos];
      continue;
    }
    ++pos;
    if (pos >= format.size()) return fail(type_error("incomplete format"));
    if (format[pos] == '%') {
      out += '%';
      continue;
    }
    const Value* arg = nullptr;
    Value keyed;
    if (format[pos] == '(') {
      const size_t close = format.find(')', pos);
      if (close == std::string_view::npos) return fail(type_error("incomplete format key"));
      if (!mapping) return fail(type_error("format requires a mapping"));
      const Value* found = mapping->find(format.substr(pos + 1, close - pos - 1));
      if (!found) return fail(type_error(fmt::format("'{}'", format.substr(pos + 1, close - pos - 1))));
      keyed = *found;
      arg = &keyed;
      used_mapping = true;
      pos = close + 1;
    }
    Spec spec;
    for (; pos < format.size(); ++pos) {
      const char c = format[pos];
      if (c == '-') {
        spec.align = '<';
      } else if (c == '+') {
        spec.sign = '+';
      } else if (c == ' ') {
        if (spec.sign != '+') spec.sign = ' ';
      } else if (c == '#') {
        spec.alternate = true;
      } else if (c == '0') {
        spec.zero = true;
      } else {
        break;
      }
    }
    const auto take_star = [&]() -> Result<int64_t> {
      if (next_arg >= positional.size()) return fail(type_error("not enough arguments for format string"));
      const Value& v = positional[next_arg++];
      if (!v.is_int()) return fail(type_error("* wants int"));
      return v.as_int();
    };
    if (pos < format.size() && format[pos] == '*') {
      auto w = take_star();
      if (!w) return fail(w.error());
      spec.width = *w;
      ++pos;
    } else {
      const size_t before = pos;
      const int64_t width = read_number(format, pos);
      if (pos > before) spec.width = width;
    }
    if (pos < format.size() && format[pos] == '.') {
      ++pos;
      if (pos < format.size() && format[pos] == '*') {
        auto p = take_star();
        if (!p) return fail(p.error());
        spec.precision = *p;
        ++pos;
      } else {
        spec.precision = read_number(format, pos);
      }
    }
    while (pos < format.size() && (format[pos] == 'l' || format[pos] == 'h' || format[pos] == 'L')) ++pos;
    if (pos >= format.size()) return fail(type_error("incomplete format"));
    spec.type = format[pos];
    if (std::string_view("diouxXeEfFgGcrsa").find(spec.type) == std::string_view::npos) {
      return fail(type_error(fmt::format("unsupported format character '{}'", spec.type)));
    }
    if (spec.zero && spec.align == '<') spec.zero = false;
    if (!arg) {
      if (next_arg >= positional.size()) return fail(type_error("not enough arguments for format string"));
      arg = &positional[next_arg++];
    }
    if ((spec.type == 'd' || spec.type == 'i' || spec.type == 'u') && arg->is_string()) {
      return fail(type_error(fmt::format("%{} format: a real number is required, not str", spec.type)));
    }
    if (spec.type == 'c' && arg->is_string()) {
      if (py::length(arg->as_string()) != 1) return fail(type_error("%c requires int or char"));
      out += pad(arg->as_string(), spec, '>');
      continue;
    }
    // printf right-aligns everything unless '-' is given.
    if (!spec.align && (spec.type == 's' || spec.type == 'r' || spec.type == 'a')) spec.align = '>';
    auto text = format_value(*arg, spec);
    if (!text) return fail(text.error());
    out += *text;
    if (out.size() > max_bytes) return fail(type_error(fmt::format("formatted text would exceed {} bytes", max_bytes)));
  }
  if (!used_mapping && !mapping && next_arg < positional.size()) {
    return fail(type_error("not all arguments converted during string formatting"));
  }
  return out;
}

Result<std::string> str_format(std::string_view format, const CallArgs& args, size_t max_bytes) {
  std::string out;
  size_t auto_index = 0;
  for (size_t pos = 0; pos < format.size(); ++pos) {
    const char c = format[pos];
    if (c == '}') {
      if (pos + 1 < format.size() && format[pos + 1] == '}') {
        out += '}';
        ++pos;
        continue;
      }
      return fail(type_error("Single '}' encountered in format string"));
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (pos + 1 < format.size() && format[pos + 1] == '{') {
      out += '{';
      ++pos;
      continue;
    }
    const size_t close = format.find('}', pos);
    if (close == std::string_view::npos) return fail(type_error("Single '{' encountered in format string"));
    std::string_view field = format.substr(pos + 1, close - pos - 1);
    pos = close;
    std::string_view spec_text;
    if (const size_t colon = field.find(':'); colon != std::string_view::npos) {
      spec_text = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    char conversion = 0;
    if (const size_t bang = field.find('!'); bang != std::string_view::npos) {
      if (bang + 1 < field.size()) conversion = field[bang + 1];
      field = field.substr(0, bang);
    }
    const Value* value = nullptr;
    if (field.empty()) {
      if (auto_index >= args.args.size()) return fail(type_error("Replacement index out of range for positional args"));
      value = &args.args[auto_index++];
    } else if (field.find_first_not_of("0123456789") == std::string_view::npos) {
      const size_t index = static_cast<size_t>(std::stoull(std::string(field.substr(0, 9))));
      if (index >= args.args.size()) return fail(type_error("Replacement index out of range for positional args"));
      value = &args.args[index];
    } else {
      for (const auto& [key, v] : args.kwargs) {
        if (key == field) value = &v;
      }
      if (!value) return fail(type_error(fmt::format("'{}'", field)));
    }
    Spec spec;
    size_t p = 0;
    const auto is_align = [](char ch) { return ch == '<' || ch == '>' || ch == '^' || ch == '='; };
    if (spec_text.size() >= 2 && is_align(spec_text[1])) {
      spec.fill = spec_text[0];
      spec.align = spec_text[1];
      p = 2;
    } else if (!spec_text.empty() && is_align(spec_text[0])) {
      spec.align = spec_text[0];
      p = 1;
    }
    if (p < spec_text.size() && (spec_text[p] == '+' || spec_text[p] == '-' || spec_text[p] == ' ')) {
      spec.sign = spec_text[p] == '-' ? 0 : spec_text[p];
      ++p;
    }
    if (p < spec_text.size() && spec_text[p] == '#') {
      spec.alternate = true;
      ++p;
    }
    if (p < spec_text.size() && spec_text[p] == '0') {
      spec.zero = true;
      ++p;
    }
    {
      const size_t before = p;
      const int64_t width = read_number(spec_text, p);
      if (p > before) spec.width = width;
    }
    if (p < spec_text.size() && spec_text[p] == '.') {
      ++p;
      spec.precision = read_number(spec_text, p);
    }
    if (p < spec_text.size()) spec.type = spec_text[p++];
    if (p != spec_text.size()) return fail(type_error(fmt::format("Invalid format specifier '{}'", spec_text)));
    if (spec.zero && !spec.align) {
      spec.fill = '0';
      spec.align = '=';
      spec.zero = false;
    }
    Value converted = *value;
    if (conversion == 'r' || conversion == 'a') converted = Value(value->repr());
    if (conversion == 's') converted = Value(value->str());
    auto text = format_value(converted, spec);
    if (!text) return fail(text.error());
    out += *text;
    if (out.size() > max_bytes) return fail(type_error(fmt::format("formatted text would exceed {} bytes", max_bytes)));
  }
  return out;
}

// ---- json.dumps ----

namespace {

void json_string(std::string_view text, bool ensure_ascii, std::string& out) {
  out += '"';
  const std::u32string cps = py::decode(text);
  for (char32_t cp : cps) {
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
          if (cp >= 0x10000) {
            const char32_t v = cp - 0x10000;
            fmt::format_to(std::back_inserter(out), "\\u{:04x}\\u{:04x}", static_cast<uint32_t>(0xD800 + (v >> 10)),
                           static_cast<uint32_t>(0xDC00 + (v & 0x3FF)));
          } else {
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<uint32_t>(cp));
          }
        } else {
          out += py::encode(std::u32string(1, cp));
        }
    }
  }
  out += '"';
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return py::float_repr(d);
}

Result<void> json_encode(const Value& value, const JsonOptions& options, const std::string& item_sep,
                         const std::string& key_sep, int level, std::string& out) {
  if (level > 512) return fail(type_error("tojson: value nested too deeply"));
  switch (value.kind()) {
    case Value::Kind::kNone: out += "null"; return {};
    case Value::Kind::kBool: out += value.as_bool() ? "true" : "false"; return {};
    case Value::Kind::kInt: fmt::format_to(std::back_inserter(out), "{}", value.as_int()); return {};
    case Value::Kind::kFloat: out += json_float(value.as_float()); return {};
    case Value::Kind::kString: json_string(value.as_string(), options.ensure_ascii, out); return {};
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      const auto items = value.items();
      if (items.empty()) {
        out += "[]";
        return {};
      }
      out += '[';
      std::string newline_indent;
      if (options.indent) {
        newline_indent = "\n";
        for (int i = 0; i <= level; ++i) newline_indent += *options.indent;
        out += newline_indent;
      }
      for (size_t index = 0; index < items.size(); ++index) {
        if (index) {
          out += item_sep;
          out += newline_indent;
        }
        if (auto r = json_encode(items[index], options, item_sep, key_sep, level + 1, out); !r) return r;
      }
      if (options.indent) {
        out += '\n';
        for (int i = 0; i < level; ++i) out += *options.indent;
      }
      out += ']';
      return {};
    }
    case Value::Kind::kDict: {
      if (value.entries().empty()) {
        out += "{}";
        return {};
      }
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& [key, item] : value.entries()) {
        std::string key_text;
        switch (key.kind()) {
          case Value::Kind::kString: key_text = key.as_string(); break;
          case Value::Kind::kInt: key_text = fmt::format("{}", key.as_int()); break;
          case Value::Kind::kFloat: key_text = json_float(key.as_float()); break;
          case Value::Kind::kBool: key_text = key.as_bool() ? "true" : "false"; break;
          case Value::Kind::kNone: key_text = "null"; break;
          default:
            return fail(
                type_error(fmt::format("tojson: keys must be str, int, float, bool or None, not {}", key.type_name())));
        }
        entries.emplace_back(std::move(key_text), &item);
      }
      if (options.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out += '{';
      std::string newline_indent;
      if (options.indent) {
        newline_indent = "\n";
        for (int i = 0; i <= level; ++i) newline_indent += *options.indent;
        out += newline_indent;
      }
      for (size_t index = 0; index < entries.size(); ++index) {
        if (index) {
          out += item_sep;
          out += newline_indent;
        }
        json_string(entries[index].first, options.ensure_ascii, out);
        out += key_sep;
        if (auto r = json_encode(*entries[index].second, options, item_sep, key_sep, level + 1, out); !r) return r;
      }
      if (options.indent) {
        out += '\n';
        for (int i = 0; i < level; ++i) out += *options.indent;
      }
      out += '}';
      return {};
    }
    default: return fail(type_error(fmt::format("Object of type {} is not JSON serializable", value.type_name())));
  }
}

}  // namespace

Result<std::string> to_json(const Value& value, const JsonOptions& options) {
  std::string item_sep = options.indent ? "," : ", ";
  std::string key_sep = ": ";
  if (options.separators) {
    item_sep = options.separators->first;
    key_sep = options.separators->second;
  }
  std::string out;
  if (auto r = json_encode(value, options, item_sep, key_sep, 0, out); !r) return fail(r.error());
  return out;
}

}  // namespace ix::jinja
