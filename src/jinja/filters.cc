// Jinja2's builtin filters and tests (jinja2/filters.py, jinja2/tests.py) and globals, with
// transformers' additions (tojson with indent/separators/sort_keys, raise_exception,
// strftime_now). Each follows its Python source: argument names and defaults, how it treats
// Undefined, what it returns.
#include <fmt/format.h>
#include <unicode/uchar.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "common/strings.h"
#include "jinja/builtins.h"
#include "jinja/interp.h"

namespace ix::jinja {
namespace {

using Args = std::vector<std::optional<Value>>;

// A stable merge sort that stays in bounds whatever the comparator answers (an error from it
// stops the sort and is returned).
template <typename T, typename Less>
Result<void> merge_sort(std::vector<T>& items, Less less) {
  std::vector<T> buffer(items.size());
  for (size_t width = 1; width < items.size(); width *= 2) {
    for (size_t lo = 0; lo < items.size(); lo += 2 * width) {
      const size_t mid = std::min(lo + width, items.size());
      const size_t hi = std::min(lo + 2 * width, items.size());
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        auto right_first = less(items[j], items[i]);
        if (!right_first) return fail(right_first.error());
        buffer[k++] = *right_first ? std::move(items[j++]) : std::move(items[i++]);
      }
      while (i < mid) buffer[k++] = std::move(items[i++]);
      while (j < hi) buffer[k++] = std::move(items[j++]);
    }
    items.swap(buffer);
  }
  return {};
}

Value ignore_case(const Value& value, bool case_sensitive) {
  if (!case_sensitive && value.is_string()) return Value(py::lower(value.as_string()));
  return value;
}

bool is_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// Jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0, through getitem.
Result<Value> attribute_of(Interp& interp, const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return interp.getitem(item, attribute);
  Value current = item;
  const std::string& path = attribute.as_string();
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string_view part = std::string_view(path).substr(start, dot == std::string::npos ? dot : dot - start);
    const Value key = is_digits(part) ? Value(static_cast<int64_t>(std::stoll(std::string(part.substr(0, 18)))))
                                      : Value(std::string(part));
    auto next = interp.getitem(current, key);
    if (!next) return next;
    current = std::move(*next);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return current;
}

Result<Args> bind(std::string_view name, CallArgs& args, std::initializer_list<std::string_view> names,
                  size_t required = 0) {
  return bind_args(name, args, names, required);
}

Result<int64_t> int_arg(const std::optional<Value>& value, int64_t default_value, std::string_view what) {
  if (!value) return default_value;
  if (value->is_int() || value->is_bool()) return value->as_int();
  if (value->is_undefined()) return fail(undefined_error(*value));
  return fail(type_error(fmt::format("{} must be an integer, not {}", what, value->type_name())));
}

Result<size_t> length_of(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return size_t{0};
    case Value::Kind::kString: return py::length(value.as_string());
    case Value::Kind::kList:
    case Value::Kind::kTuple: return value.items().size();
    case Value::Kind::kDict: return value.entries().size();
    default: return fail(type_error(fmt::format("object of type '{}' has no len()", value.type_name())));
  }
}

// ---- string filters ----

Result<Value> f_upper(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("upper", args, {}); !b) return fail(b.error());
  return Value(py::upper(v.str()));
}
Result<Value> f_lower(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("lower", args, {}); !b) return fail(b.error());
  return Value(py::lower(v.str()));
}
Result<Value> f_capitalize(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("capitalize", args, {}); !b) return fail(b.error());
  return Value(py::capitalize(v.str()));
}

// Jinja2's do_title: split on runs of -, whitespace, ( { [ <; upper-case each piece's first
// character and lower-case the rest.
Result<Value> f_title(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("title", args, {}); !b) return fail(b.error());
  const std::u32string text = py::decode(v.str());
  std::string out;
  size_t pos = 0;
  const auto separator = [](char32_t c) {
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::is_space(c);
  };
  while (pos < text.size()) {
    size_t end = pos;
    const bool sep = separator(text[pos]);
    while (end < text.size() && separator(text[end]) == sep) ++end;
    const std::u32string_view piece = std::u32string_view(text).substr(pos, end - pos);
    if (sep) {
      out += py::encode(piece);
    } else {
      out += py::upper(py::encode(piece.substr(0, 1)));
      out += py::lower(py::encode(piece.substr(1)));
    }
    pos = end;
  }
  return Value(std::move(out));
}

Result<Value> f_trim(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("trim", args, {"chars"});
  if (!b) return fail(b.error());
  std::optional<std::string> chars;
  if ((*b)[0] && !(*b)[0]->is_none()) chars = (*b)[0]->str();
  return Value(py::strip(v.str(), chars, true, true));
}

Result<Value> f_replace(Interp& interp, const Value& v, CallArgs& args) {
  auto b = bind("replace", args, {"old", "new", "count"}, 2);
  if (!b) return fail(b.error());
  auto count = (*b)[2] && !(*b)[2]->is_none() ? int_arg((*b)[2], -1, "count") : Result<int64_t>(-1);
  if (!count) return fail(count.error());
  auto replaced = py::replace(v.str(), (*b)[0]->str(), (*b)[1]->str(), *count, interp.max_bytes());
  if (!replaced) return fail(type_error(fmt::format("replace() result would exceed {} bytes", interp.max_bytes())));
  return Value(std::move(*replaced));
}

Result<Value> f_center(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("center", args, {"width"});
  if (!b) return fail(b.error());
  auto width = int_arg((*b)[0], 80, "width");
  if (!width) return fail(width.error());
  const std::string text = v.str();
  const auto length = static_cast<int64_t>(py::length(text));
  if (*width <= length) return Value(text);
  if (*width > (int64_t{1} << 24)) return fail(type_error("center() width too large"));
  const int64_t margin = *width - length;
  const int64_t left = margin / 2 + (margin & *width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + text +
               std::string(static_cast<size_t>(margin - left), ' '));
}

Result<Value> f_indent(Interp& interp, const Value& v, CallArgs& args) {
  auto b = bind("indent", args, {"width", "first", "blank"});
  if (!b) return fail(b.error());
  std::string indention = "    ";
  if ((*b)[0]) {
    if ((*b)[0]->is_string()) {
      indention = (*b)[0]->as_string();
    } else {
      auto width = int_arg((*b)[0], 4, "width");
      if (!width) return fail(width.error());
      if (*width > (int64_t{1} << 20)) return fail(type_error("indent() width too large"));
      indention = std::string(static_cast<size_t>(std::max<int64_t>(0, *width)), ' ');
    }
  }
  const bool first = (*b)[1] && (*b)[1]->truthy();
  const bool blank = (*b)[2] && (*b)[2]->truthy();
  // Jinja2 appends a newline so splitlines() keeps a trailing empty line.
  const std::string text = v.str();
  const std::vector<std::string> lines = py::splitlines(text + "\n", false);
  if (auto r = interp.check_size(text.size() + (lines.size() + 1) * (indention.size() + 1)); !r) return fail(r.error());
  std::string out;
  if (blank) {
    for (size_t index = 0; index < lines.size(); ++index) {
      if (index) out += "\n" + indention;
      out += lines[index];
    }
  } else {
    out = lines.empty() ? std::string() : lines.front();
    for (size_t index = 1; index < lines.size(); ++index) {
      out += "\n";
      if (!lines[index].empty()) out += indention;
      out += lines[index];
    }
  }
  if (first) out = indention + out;
  return Value(std::move(out));
}

Result<Value> f_truncate(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("truncate", args, {"length", "killwords", "end", "leeway"});
  if (!b) return fail(b.error());
  auto length = int_arg((*b)[0], 255, "length");
  if (!length) return fail(length.error());
  const bool killwords = (*b)[1] && (*b)[1]->truthy();
  const std::string end = (*b)[2] ? (*b)[2]->str() : "...";
  auto leeway = (*b)[3] && !(*b)[3]->is_none() ? int_arg((*b)[3], 5, "leeway") : Result<int64_t>(5);
  if (!leeway) return fail(leeway.error());
  const std::u32string text = py::decode(v.str());
  const auto end_length = static_cast<int64_t>(py::length(end));
  if (*length < end_length) return fail(type_error(fmt::format("expected length >= {}, got {}", end_length, *length)));
  if (*leeway < 0) return fail(type_error(fmt::format("expected leeway >= 0, got {}", *leeway)));
  if (static_cast<int64_t>(text.size()) <= *length + *leeway) return v.is_string() ? v : Value(v.str());
  std::u32string head = text.substr(0, static_cast<size_t>(*length - end_length));
  if (!killwords) {
    const size_t space = head.rfind(U' ');
    if (space != std::u32string::npos) head = head.substr(0, space);
  }
  return Value(py::encode(head) + end);
}

Result<Value> f_wordcount(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("wordcount", args, {}); !b) return fail(b.error());
  int64_t words = 0;
  bool in_word = false;
  for (char32_t cp : py::decode(v.str())) {
    const bool word =
        cp == '_' || py::is_alnum_cp(cp) || u_charType(static_cast<UChar32>(cp)) == U_DECIMAL_DIGIT_NUMBER;
    if (word && !in_word) ++words;
    in_word = word;
  }
  return Value(words);
}

Result<Value> f_escape(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("escape", args, {}); !b) return fail(b.error());
  return Value(html_escape(v.str()));
}

Result<Value> f_safe(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("safe", args, {}); !b) return fail(b.error());
  return v.is_string() ? v : Value(v.str());
}

Result<Value> f_string(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("string", args, {}); !b) return fail(b.error());
  return v.is_string() ? v : Value(v.str());
}

Result<Value> f_format(Interp& interp, const Value& v, CallArgs& args) {
  if (!args.args.empty() && !args.kwargs.empty()) {
    return fail(type_error("format(): can't handle positional and keyword arguments at the same time"));
  }
  Value values;
  if (!args.kwargs.empty()) {
    std::vector<DictEntry> entries;
    for (auto& [key, value] : args.kwargs) entries.emplace_back(Value(key), std::move(value));
    values = Value::dict(std::move(entries));
  } else {
    values = Value::tuple(std::move(args.args));
  }
  auto out = percent_format(v.str(), values, interp.max_bytes());
  if (!out) return fail(out.error());
  return Value(std::move(*out));
}

// ---- numbers ----

Result<Value> f_abs(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("abs", args, {}); !b) return fail(b.error());
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) return fail(type_error("integer overflow (ixbench's Jinja ints are 64-bit)"));
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_undefined()) return fail(undefined_error(v));
  return fail(type_error(fmt::format("bad operand type for abs(): '{}'", v.type_name())));
}

// Python float(str): optional whitespace, sign, digits with '_', inf/nan.
std::optional<double> parse_float(std::string_view raw) {
  std::string text = py::strip(raw, std::nullopt, true, true);
  std::string cleaned;
  for (size_t index = 0; index < text.size(); ++index) {
    const char c = text[index];
    if (c == '_') {
      const bool digit_before = index > 0 && std::isdigit(static_cast<unsigned char>(text[index - 1]));
      const bool digit_after = index + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[index + 1]));
      if (!digit_before || !digit_after) return std::nullopt;
      continue;
    }
    if (c == 'x' || c == 'X' || c == 'p' || c == 'P') return std::nullopt;  // strtod's hex floats
    cleaned += c;
  }
  if (cleaned.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(cleaned.c_str(), &end);
  if (end != cleaned.c_str() + cleaned.size()) return std::nullopt;
  return value;
}

// Python int(str, base): whitespace, sign, '_' between digits, 0x/0o/0b prefixes with base 0/16/8/2.
std::optional<int64_t> parse_int(std::string_view raw, int base) {
  std::string text = py::strip(raw, std::nullopt, true, true);
  bool negative = false;
  size_t pos = 0;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) negative = text[pos++] == '-';
  if (pos + 1 < text.size() && text[pos] == '0') {
    const char p = static_cast<char>(text[pos + 1] | 32);
    const int prefixed = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefixed && (base == 0 || base == prefixed)) {
      base = prefixed;
      pos += 2;
      if (pos < text.size() && text[pos] == '_') ++pos;
    }
  }
  if (base == 0) base = 10;
  if (base < 2 || base > 36) return std::nullopt;
  if (pos >= text.size()) return std::nullopt;
  int64_t value = 0;
  bool last_underscore = false;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (c == '_') {
      if (last_underscore) return std::nullopt;
      last_underscore = true;
      continue;
    }
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'z') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'Z') digit = c - 'A' + 10;
    if (digit < 0 || digit >= base) return std::nullopt;
    last_underscore = false;
    if (__builtin_mul_overflow(value, base, &value) || __builtin_add_overflow(value, digit, &value)) {
      return std::nullopt;
    }
  }
  if (last_underscore) return std::nullopt;
  return negative ? -value : value;
}

Result<Value> f_int(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("int", args, {"default", "base"});
  if (!b) return fail(b.error());
  const Value fallback = (*b)[0] ? *(*b)[0] : Value(int64_t{0});
  auto base = int_arg((*b)[1], 10, "base");
  if (!base) return fail(base.error());
  if (v.is_undefined()) return fail(undefined_error(v));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    const double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    if (auto parsed = parse_int(v.as_string(), static_cast<int>(*base))) return Value(*parsed);
    if (auto parsed = parse_float(v.as_string()); parsed && std::isfinite(*parsed) && std::fabs(*parsed) < 9.2e18) {
      return Value(static_cast<int64_t>(*parsed));
    }
  }
  return fallback;
}

Result<Value> f_float(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("float", args, {"default"});
  if (!b) return fail(b.error());
  const Value fallback = (*b)[0] ? *(*b)[0] : Value(0.0);
  if (v.is_undefined()) return fail(undefined_error(v));
  if (v.is_number()) return Value(v.as_float());
  if (v.is_string()) {
    if (auto parsed = parse_float(v.as_string())) return Value(*parsed);
  }
  return fallback;
}

Result<Value> f_round(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("round", args, {"precision", "method"});
  if (!b) return fail(b.error());
  auto precision = int_arg((*b)[0], 0, "precision");
  if (!precision) return fail(precision.error());
  const std::string method = (*b)[1] ? (*b)[1]->str() : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    return fail(type_error("method must be 'common', 'ceil' or 'floor'"));
  }
  if (v.is_undefined()) return fail(undefined_error(v));
  if (!v.is_number()) return fail(type_error(fmt::format("type {} doesn't define __round__ method", v.type_name())));
  const int64_t p = std::clamp<int64_t>(*precision, -308, 308);
  if (method != "common") {
    const double scale = std::pow(10.0, static_cast<double>(p));
    const double scaled = v.as_float() * scale;
    return Value((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
  }
  if (!v.is_float()) {
    if (p >= 0) return Value(v.as_int());
    const double scale = std::pow(10.0, static_cast<double>(-p));
    return Value(static_cast<int64_t>(std::nearbyint(static_cast<double>(v.as_int()) / scale) * scale));
  }
  const double d = v.as_float();
  if (!std::isfinite(d)) return Value(d);
  if (p >= 0) {
    // printf rounds the exact binary value half-to-even, as CPython's round() does.
    char buffer[512];
    std::snprintf(buffer, sizeof(buffer), "%.*f", static_cast<int>(std::min<int64_t>(p, 300)), d);
    return Value(std::strtod(buffer, nullptr));
  }
  const double scale = std::pow(10.0, static_cast<double>(-p));
  return Value(std::nearbyint(d / scale) * scale);
}

// ---- sequences ----

Result<Value> f_length(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("length", args, {}); !b) return fail(b.error());
  auto n = length_of(v);
  if (!n) return fail(n.error());
  return Value(static_cast<int64_t>(*n));
}

Result<Value> f_list(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("list", args, {}); !b) return fail(b.error());
  if (v.is_list()) return v;
  auto items = iterate(v);
  if (!items) return fail(items.error());
  return Value::list(std::move(*items));
}

Result<Value> f_first(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("first", args, {}); !b) return fail(b.error());
  if (v.is_sequence()) {
    if (v.items().empty()) return Value::undefined("No first item, sequence was empty.");
    return v.items().front();
  }
  auto items = iterate(v);
  if (!items) return fail(items.error());
  if (items->empty()) return Value::undefined("No first item, sequence was empty.");
  return items->front();
}

Result<Value> f_last(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("last", args, {}); !b) return fail(b.error());
  if (v.is_sequence()) {
    if (v.items().empty()) return Value::undefined("No last item, sequence was empty.");
    return v.items().back();
  }
  if (!v.is_string() && !v.is_dict() && !v.is_undefined()) {
    return fail(type_error(fmt::format("'{}' object is not reversible", v.type_name())));
  }
  auto items = iterate(v);
  if (!items) return fail(items.error());
  if (items->empty()) return Value::undefined("No last item, sequence was empty.");
  return items->back();
}

Result<Value> f_reverse(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("reverse", args, {}); !b) return fail(b.error());
  if (v.is_string()) {
    std::u32string text = py::decode(v.as_string());
    std::reverse(text.begin(), text.end());
    return Value(py::encode(text));
  }
  auto items = iterate(v);
  if (!items) return fail(items.error());
  std::reverse(items->begin(), items->end());
  return Value::list(std::move(*items));
}

Result<Value> f_join(Interp& interp, const Value& v, CallArgs& args) {
  auto b = bind("join", args, {"d", "attribute"});
  if (!b) return fail(b.error());
  const std::string separator = (*b)[0] ? (*b)[0]->str() : "";
  auto items = iterate(v);
  if (!items) return fail(items.error());
  std::string out;
  for (size_t index = 0; index < items->size(); ++index) {
    if (index) out += separator;
    if ((*b)[1] && !(*b)[1]->is_none()) {
      auto item = attribute_of(interp, (*items)[index], *(*b)[1]);
      if (!item) return fail(item.error());
      item->append_str(out);
    } else {
      (*items)[index].append_str(out);
    }
    if (auto r = interp.check_size(out.size()); !r) return fail(r.error());
  }
  return Value(std::move(out));
}

Result<Value> f_default(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("default", args, {"default_value", "boolean"});
  if (!b) return fail(b.error());
  const Value fallback = (*b)[0] ? *(*b)[0] : Value(std::string());
  const bool boolean = (*b)[1] && (*b)[1]->truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return fallback;
  return v;
}

Result<Value> f_items(Interp&, const Value& v, CallArgs& args) {
  if (auto b = bind("items", args, {}); !b) return fail(b.error());
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) return fail(type_error("can only get item pairs from a mapping"));
  std::vector<Value> out;
  out.reserve(v.entries().size());
  for (const auto& [key, value] : v.entries()) out.push_back(Value::tuple({key, value}));
  return Value::list(std::move(out));
}

Result<Value> f_dictsort(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!b) return fail(b.error());
  const bool case_sensitive = (*b)[0] && (*b)[0]->truthy();
  const std::string by = (*b)[1] ? (*b)[1]->str() : "key";
  const bool reverse = (*b)[2] && (*b)[2]->truthy();
  if (by != "key" && by != "value") return fail(type_error("You can only sort by either \"key\" or \"value\""));
  if (v.is_undefined()) return fail(undefined_error(v));
  if (!v.is_dict()) return fail(type_error(fmt::format("'{}' object has no attribute 'items'", v.type_name())));
  const size_t pos = by == "key" ? 0 : 1;
  std::vector<std::pair<Value, Value>> keyed;  // (sort key, item tuple)
  for (const auto& [key, value] : v.entries()) {
    keyed.emplace_back(ignore_case(pos == 0 ? key : value, case_sensitive), Value::tuple({key, value}));
  }
  auto sorted = merge_sort(keyed, [&](const auto& x, const auto& y) {
    return reverse ? less_than(y.first, x.first) : less_than(x.first, y.first);
  });
  if (!sorted) return fail(sorted.error());
  std::vector<Value> out;
  for (auto& entry : keyed) out.push_back(std::move(entry.second));
  return Value::list(std::move(out));
}

Result<Value> f_sort(Interp& interp, const Value& v, CallArgs& args) {
  auto b = bind("sort", args, {"reverse", "case_sensitive", "attribute"});
  if (!b) return fail(b.error());
  const bool reverse = (*b)[0] && (*b)[0]->truthy();
  const bool case_sensitive = (*b)[1] && (*b)[1]->truthy();
  auto items = iterate(v);
  if (!items) return fail(items.error());
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& item : *items) {
    Value key = item;
    if ((*b)[2] && !(*b)[2]->is_none()) {
      auto attr = attribute_of(interp, item, *(*b)[2]);
      if (!attr) return fail(attr.error());
      key = std::move(*attr);
    }
    keyed.emplace_back(ignore_case(key, case_sensitive), std::move(item));
  }
  auto sorted = merge_sort(keyed, [&](const auto& x, const auto& y) {
    return reverse ? less_than(y.first, x.first) : less_than(x.first, y.first);
  });
  if (!sorted) return fail(sorted.error());
  std::vector<Value> out;
  for (auto& entry : keyed) out.push_back(std::move(entry.second));
  return Value::list(std::move(out));
}

Result<Value> f_unique(Interp& interp, const Value& v, CallArgs& args) {
  auto b = bind("unique", args, {"case_sensitive", "attribute"});
  if (!b) return fail(b.error());
  const bool case_sensitive = (*b)[0] && (*b)[0]->truthy();
  auto items = iterate(v);
  if (!items) return fail(items.error());
  // Strings and integers (the usual keys) are looked up by hash; other keys by comparison.
  std::unordered_set<std::string> seen_strings;
  std::unordered_set<int64_t> seen_ints;
  std::vector<Value> seen;
  std::vector<Value> out;
  for (auto& item : *items) {
    Value key = item;
    if ((*b)[1] && !(*b)[1]->is_none()) {
      auto attr = attribute_of(interp, item, *(*b)[1]);
      if (!attr) return fail(attr.error());
      key = std::move(*attr);
    }
    key = ignore_case(key, case_sensitive);
    if (key.is_list() || key.is_dict()) return fail(type_error(fmt::format("unhashable type: '{}'", key.type_name())));
    if (key.is_string()) {
      if (!seen_strings.insert(key.as_string()).second) continue;
    } else if (key.is_int() || key.is_bool() ||
               (key.is_float() && key.as_float() == std::floor(key.as_float()) && std::fabs(key.as_float()) < 9e18)) {
      // 1, 1.0 and True are one key, as in a Python set.
      if (!seen_ints.insert(key.is_float() ? static_cast<int64_t>(key.as_float()) : key.as_int()).second) continue;
    } else {
      if (auto r = interp.step(1 + seen.size() / 16); !r) return fail(r.error());
      if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(key); })) continue;
      seen.push_back(std::move(key));
    }
    out.push_back(std::move(item));
  }
  return Value::list(std::move(out));
}

Result<Value> min_max(Interp& interp, const Value& v, CallArgs& args, bool max) {
  auto b = bind(max ? "max" : "min", args, {"case_sensitive", "attribute"});
  if (!b) return fail(b.error());
  const bool case_sensitive = (*b)[0] && (*b)[0]->truthy();
  auto items = iterate(v);
  if (!items) return fail(items.error());
  if (items->empty()) return Value::undefined("No aggregated item, sequence was empty.");
  std::optional<Value> best;
  Value best_key;
  for (auto& item : *items) {
    Value key = item;
    if ((*b)[1] && !(*b)[1]->is_none()) {
      auto attr = attribute_of(interp, item, *(*b)[1]);
      if (!attr) return fail(attr.error());
      key = std::move(*attr);
    }
    key = ignore_case(key, case_sensitive);
    if (best) {
      auto better = max ? less_than(best_key, key) : less_than(key, best_key);
      if (!better) return fail(better.error());
      if (!*better) continue;
    }
    best = item;
    best_key = std::move(key);
  }
  return *best;
}

Result<Value> f_max(Interp& interp, const Value& v, CallArgs& args) {
  return min_max(interp, v, args, true);
}
Result<Value> f_min(Interp& interp, const Value& v, CallArgs& args) {
  return min_max(interp, v, args, false);
}

Result<Value> f_sum(Interp& interp, const Value& v, CallArgs& args) {
  auto b = bind("sum", args, {"attribute", "start"});
  if (!b) return fail(b.error());
  Value total = (*b)[1] ? *(*b)[1] : Value(int64_t{0});
  auto items = iterate(v);
  if (!items) return fail(items.error());
  for (auto& item : *items) {
    Value term = item;
    if ((*b)[0] && !(*b)[0]->is_none()) {
      auto attr = attribute_of(interp, item, *(*b)[0]);
      if (!attr) return fail(attr.error());
      term = std::move(*attr);
    }
    auto next = binary_op(BinaryOp::kAdd, total, term, interp.max_bytes());
    if (!next) return fail(next.error());
    total = std::move(*next);
  }
  return total;
}

Result<Value> f_batch(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("batch", args, {"linecount", "fill_with"}, 1);
  if (!b) return fail(b.error());
  auto count = int_arg((*b)[0], 1, "linecount");
  if (!count) return fail(count.error());
  if (*count <= 0) return fail(type_error("batch() linecount must be positive"));
  auto items = iterate(v);
  if (!items) return fail(items.error());
  std::vector<Value> out;
  std::vector<Value> current;
  for (auto& item : *items) {
    if (static_cast<int64_t>(current.size()) == *count) {
      out.push_back(Value::list(std::move(current)));
      current.clear();
    }
    current.push_back(std::move(item));
  }
  if (!current.empty()) {
    if ((*b)[1] && !(*b)[1]->is_none()) {
      while (static_cast<int64_t>(current.size()) < *count) current.push_back(*(*b)[1]);
    }
    out.push_back(Value::list(std::move(current)));
  }
  return Value::list(std::move(out));
}

Result<Value> f_slice(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("slice", args, {"slices", "fill_with"}, 1);
  if (!b) return fail(b.error());
  auto slices = int_arg((*b)[0], 1, "slices");
  if (!slices) return fail(slices.error());
  if (*slices <= 0 || *slices > 100000) return fail(type_error("slice() needs 1..100000 slices"));
  auto items = iterate(v);
  if (!items) return fail(items.error());
  const auto length = static_cast<int64_t>(items->size());
  const int64_t per_slice = length / *slices;
  const int64_t with_extra = length % *slices;
  int64_t offset = 0;
  std::vector<Value> out;
  for (int64_t number = 0; number < *slices; ++number) {
    const int64_t start = offset + number * per_slice;
    if (number < with_extra) ++offset;
    const int64_t end = offset + (number + 1) * per_slice;
    std::vector<Value> part(items->begin() + start, items->begin() + end);
    if ((*b)[1] && !(*b)[1]->is_none() && number >= with_extra) part.push_back(*(*b)[1]);
    out.push_back(Value::list(std::move(part)));
  }
  return Value::list(std::move(out));
}

Result<Value> f_map(Interp& interp, const Value& v, CallArgs& args) {
  auto items = iterate(v);
  if (!items) return fail(items.error());
  std::vector<Value> out;
  out.reserve(items->size());
  if (args.args.empty()) {
    std::optional<Value> attribute;
    std::optional<Value> fallback;
    for (auto& [key, value] : args.kwargs) {
      if (key == "attribute") {
        attribute = value;
      } else if (key == "default") {
        fallback = value;
      } else {
        return fail(type_error(fmt::format("map(): unexpected keyword argument '{}'", key)));
      }
    }
    if (!attribute) return fail(type_error("map requires a filter argument"));
    for (const auto& item : *items) {
      auto mapped = attribute_of(interp, item, *attribute);
      if (!mapped) return fail(mapped.error());
      if (mapped->is_undefined() && fallback && !fallback->is_none()) {
        out.push_back(*fallback);
      } else {
        out.push_back(std::move(*mapped));
      }
    }
    return Value::list(std::move(out));
  }
  if (!args.args.front().is_string()) return fail(type_error("map(): the filter name must be a string"));
  const std::string name = args.args.front().as_string();
  for (const auto& item : *items) {
    CallArgs call;
    call.args.assign(args.args.begin() + 1, args.args.end());
    call.kwargs = args.kwargs;
    auto mapped = interp.filter_by_name(name, item, call);
    if (!mapped) return fail(mapped.error());
    out.push_back(std::move(*mapped));
  }
  return Value::list(std::move(out));
}

// select / reject / selectattr / rejectattr.
Result<Value> select_like(Interp& interp, const Value& v, CallArgs& args, bool by_attribute, bool keep) {
  size_t next = 0;
  std::optional<Value> attribute;
  if (by_attribute) {
    if (args.args.empty()) return fail(type_error("selectattr()/rejectattr() need an attribute name"));
    attribute = args.args[next++];
  }
  std::string test;
  if (next < args.args.size()) {
    if (!args.args[next].is_string()) return fail(type_error("the test name must be a string"));
    test = args.args[next++].as_string();
  }
  auto items = iterate(v);
  if (!items) return fail(items.error());
  std::vector<Value> out;
  for (const auto& item : *items) {
    Value subject = item;
    if (attribute) {
      auto attr = attribute_of(interp, item, *attribute);
      if (!attr) return fail(attr.error());
      subject = std::move(*attr);
    }
    bool passed = false;
    if (test.empty()) {
      passed = subject.truthy();
    } else {
      CallArgs call;
      call.args.assign(args.args.begin() + static_cast<std::ptrdiff_t>(next), args.args.end());
      call.kwargs = args.kwargs;
      auto result = interp.test_by_name(test, subject, call);
      if (!result) return fail(result.error());
      passed = *result;
    }
    if (passed == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> f_select(Interp& interp, const Value& v, CallArgs& args) {
  return select_like(interp, v, args, false, true);
}
Result<Value> f_reject(Interp& interp, const Value& v, CallArgs& args) {
  return select_like(interp, v, args, false, false);
}
Result<Value> f_selectattr(Interp& interp, const Value& v, CallArgs& args) {
  return select_like(interp, v, args, true, true);
}
Result<Value> f_rejectattr(Interp& interp, const Value& v, CallArgs& args) {
  return select_like(interp, v, args, true, false);
}

Result<Value> f_attr(Interp& interp, const Value& v, CallArgs& args) {
  auto b = bind("attr", args, {"name"}, 1);
  if (!b) return fail(b.error());
  const std::string name = (*b)[0]->str();
  // getattr only: a dict's keys are not attributes.
  if (v.is_dict() && method_kind(v, name) == MethodKind::kNone) {
    return Value::undefined(fmt::format("'dict object' has no attribute '{}'", name));
  }
  return interp.getattr(v, name);
}

Result<Value> f_tojson(Interp& interp, const Value& v, CallArgs& args) {
  auto b = bind("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  if (!b) return fail(b.error());
  JsonOptions options;
  options.ensure_ascii = (*b)[0] && (*b)[0]->truthy();
  if ((*b)[1] && !(*b)[1]->is_none()) {
    if ((*b)[1]->is_string()) {
      options.indent = (*b)[1]->as_string();
    } else {
      auto width = int_arg((*b)[1], 0, "indent");
      if (!width) return fail(width.error());
      if (*width > 1024) return fail(type_error("tojson: indent too large"));
      options.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, *width)), ' ');
    }
  }
  if ((*b)[2] && !(*b)[2]->is_none()) {
    const Value& separators = *(*b)[2];
    if (!separators.is_sequence() || separators.items().size() != 2 || !separators.items()[0].is_string() ||
        !separators.items()[1].is_string()) {
      return fail(type_error("tojson: separators must be a pair of strings"));
    }
    options.separators = std::pair{separators.items()[0].as_string(), separators.items()[1].as_string()};
  }
  options.sort_keys = (*b)[3] && (*b)[3]->truthy();
  auto text = to_json(v, options);
  if (!text) return fail(text.error());
  if (auto r = interp.check_size(text->size()); !r) return fail(r.error());
  return Value(std::move(*text));
}

// ---- tests ----

Result<void> no_test_args(std::string_view name, const CallArgs& args) {
  if (!args.args.empty() || !args.kwargs.empty()) {
    return fail(type_error(fmt::format("test '{}' takes no arguments", name)));
  }
  return {};
}

#define IX_SIMPLE_TEST(fn, name, expr)                                 \
  Result<bool> fn(Interp&, const Value& v, CallArgs& args) {           \
    if (auto r = no_test_args(name, args); !r) return fail(r.error()); \
    return (expr);                                                     \
  }

IX_SIMPLE_TEST(t_defined, "defined", !v.is_undefined())
IX_SIMPLE_TEST(t_undefined, "undefined", v.is_undefined())
IX_SIMPLE_TEST(t_none, "none", v.is_none())
IX_SIMPLE_TEST(t_boolean, "boolean", v.is_bool())
IX_SIMPLE_TEST(t_true, "true", v.is_bool() && v.as_bool())
IX_SIMPLE_TEST(t_false, "false", v.is_bool() && !v.as_bool())
IX_SIMPLE_TEST(t_integer, "integer", v.is_int())
IX_SIMPLE_TEST(t_float, "float", v.is_float())
IX_SIMPLE_TEST(t_number, "number", v.is_number())
IX_SIMPLE_TEST(t_string, "string", v.is_string())
IX_SIMPLE_TEST(t_mapping, "mapping", v.is_dict())
IX_SIMPLE_TEST(t_iterable, "iterable", v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined())
IX_SIMPLE_TEST(t_sequence, "sequence", v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined())
IX_SIMPLE_TEST(t_callable, "callable", v.is_function() || v.is_undefined())
IX_SIMPLE_TEST(t_escaped, "escaped", (static_cast<void>(v), false))
IX_SIMPLE_TEST(t_lower, "lower", py::is_lower(v.str()))
IX_SIMPLE_TEST(t_upper, "upper", py::is_upper(v.str()))

#undef IX_SIMPLE_TEST

Result<int64_t> mod_int(const Value& v, int64_t divisor) {
  auto r = binary_op(BinaryOp::kMod, v, Value(divisor), 0);
  if (!r) return fail(r.error());
  if (r->is_float()) return r->as_float() == 0.0 ? int64_t{0} : int64_t{1};
  return r->as_int();
}

Result<bool> t_odd(Interp&, const Value& v, CallArgs& args) {
  if (auto r = no_test_args("odd", args); !r) return fail(r.error());
  if (v.is_string()) return fail(type_error("not all arguments converted during string formatting"));
  auto m = mod_int(v, 2);
  if (!m) return fail(m.error());
  return *m == 1;
}

Result<bool> t_even(Interp&, const Value& v, CallArgs& args) {
  if (auto r = no_test_args("even", args); !r) return fail(r.error());
  if (v.is_string()) return fail(type_error("not all arguments converted during string formatting"));
  auto m = mod_int(v, 2);
  if (!m) return fail(m.error());
  return *m == 0;
}

Result<bool> t_divisibleby(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("divisibleby", args, {"num"}, 1);
  if (!b) return fail(b.error());
  if (v.is_string()) return fail(type_error("not all arguments converted during string formatting"));
  auto r = binary_op(BinaryOp::kMod, v, *(*b)[0], 0);
  if (!r) return fail(r.error());
  return r->is_float() ? r->as_float() == 0.0 : r->as_int() == 0;
}

template <CompareOp Op>
Result<bool> t_compare(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("compare", args, {"other"}, 1);
  if (!b) return fail(b.error());
  return compare_op(Op, v, *(*b)[0]);
}

Result<bool> t_in(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("in", args, {"seq"}, 1);
  if (!b) return fail(b.error());
  return compare_op(CompareOp::kIn, v, *(*b)[0]);
}

Result<bool> t_sameas(Interp&, const Value& v, CallArgs& args) {
  auto b = bind("sameas", args, {"other"}, 1);
  if (!b) return fail(b.error());
  const Value& other = *(*b)[0];
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::kNone:
    case Value::Kind::kUndefined: return true;
    case Value::Kind::kBool: return v.as_bool() == other.as_bool();
    case Value::Kind::kInt: return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    default: return v.handle() == other.handle();
  }
}

Result<bool> t_filter(Interp&, const Value& v, CallArgs& args) {
  if (auto r = no_test_args("filter", args); !r) return fail(r.error());
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}

Result<bool> t_test(Interp&, const Value& v, CallArgs& args) {
  if (auto r = no_test_args("test", args); !r) return fail(r.error());
  return v.is_string() && find_test(v.as_string()) != nullptr;
}

// ---- globals ----

class BuiltinFunction final : public Function {
 public:
  using Fn = Result<Value> (*)(Interp&, CallArgs&);
  BuiltinFunction(std::string_view name, Fn fn) : name_(name), fn_(fn) {}
  std::string_view name() const override { return name_; }
  Result<Value> call(Interp& interp, CallArgs& args) const override { return fn_(interp, args); }

 private:
  std::string_view name_;
  Fn fn_;
};

// Jinja2's Namespace: the one value templates can change (`{% set ns.attr = ... %}`).
class NamespaceObject final : public Object {
 public:
  std::string_view type_name() const override { return "Namespace"; }
  Value get_attr(std::string_view name) const override {
    for (const auto& [key, value] : attrs_) {
      if (key == name) return value;
    }
    return Value::undefined(fmt::format("'Namespace object' has no attribute '{}'", name));
  }
  bool set_attr(std::string_view name, Value value) const override {
    for (auto& [key, existing] : attrs_) {
      if (key == name) {
        existing = std::move(value);
        return true;
      }
    }
    attrs_.emplace_back(std::string(name), std::move(value));
    return true;
  }
  std::string repr() const override {
    thread_local int depth = 0;
    if (depth > 16) return "<Namespace ...>";
    ++depth;
    std::string out = "<Namespace {";
    for (size_t index = 0; index < attrs_.size(); ++index) {
      if (index) out += ", ";
      out += py::repr_string(attrs_[index].first) + ": " + attrs_[index].second.repr();
    }
    --depth;
    return out + "}>";
  }
  const std::vector<std::pair<std::string, Value>>* namespace_entries() const override { return &attrs_; }
  void release() const override { attrs_.clear(); }

 private:
  mutable std::vector<std::pair<std::string, Value>> attrs_;
};

Result<std::vector<DictEntry>> dict_entries(std::string_view function, CallArgs& args) {
  if (args.args.size() > 1) {
    return fail(type_error(fmt::format("{} expected at most 1 argument, got {}", function, args.args.size())));
  }
  std::vector<DictEntry> entries;
  if (!args.args.empty()) {
    const Value& source = args.args.front();
    if (source.is_dict()) {
      entries = source.entries();
    } else if (source.is_object() && source.as_object().namespace_entries()) {
      for (const auto& [key, value] : *source.as_object().namespace_entries()) entries.emplace_back(Value(key), value);
    } else {
      auto items = iterate(source);
      if (!items) return fail(items.error());
      for (const auto& pair : *items) {
        auto parts = iterate(pair);
        if (!parts || parts->size() != 2) {
          return fail(type_error(fmt::format("{}: each element must be a (key, value) pair", function)));
        }
        entries.emplace_back((*parts)[0], (*parts)[1]);
      }
    }
  }
  for (auto& [key, value] : args.kwargs) entries.emplace_back(Value(key), std::move(value));
  return entries;
}

Result<Value> g_namespace(Interp& interp, CallArgs& args) {
  auto entries = dict_entries("namespace", args);
  if (!entries) return fail(entries.error());
  auto ns = std::make_shared<NamespaceObject>();
  for (auto& [key, value] : *entries) {
    if (!key.is_string()) return fail(type_error("namespace() keys must be strings"));
    ns->set_attr(key.as_string(), std::move(value));
  }
  interp.adopt(ns);
  return Value::object(std::move(ns));
}

Result<Value> g_dict(Interp&, CallArgs& args) {
  auto entries = dict_entries("dict", args);
  if (!entries) return fail(entries.error());
  for (const auto& [key, value] : *entries) {
    if (key.is_list() || key.is_dict()) return fail(type_error(fmt::format("unhashable type: '{}'", key.type_name())));
  }
  return Value::dict(std::move(*entries));
}

Result<Value> g_range(Interp&, CallArgs& args) {
  if (!args.kwargs.empty()) return fail(type_error("range() takes no keyword arguments"));
  if (args.args.empty() || args.args.size() > 3) {
    return fail(type_error(fmt::format("range expected 1 to 3 arguments, got {}", args.args.size())));
  }
  int64_t bounds[3] = {0, 0, 1};
  for (size_t index = 0; index < args.args.size(); ++index) {
    const Value& v = args.args[index];
    if (v.is_undefined()) return fail(undefined_error(v));
    if (!v.is_int() && !v.is_bool()) {
      return fail(type_error(fmt::format("'{}' object cannot be interpreted as an integer", v.type_name())));
    }
  }
  if (args.args.size() == 1) {
    bounds[1] = args.args[0].as_int();
  } else {
    bounds[0] = args.args[0].as_int();
    bounds[1] = args.args[1].as_int();
    if (args.args.size() == 3) bounds[2] = args.args[2].as_int();
  }
  const int64_t start = bounds[0], stop = bounds[1], step = bounds[2];
  if (step == 0) return fail(type_error("range() arg 3 must not be zero"));
  // The sandbox's MAX_RANGE.
  constexpr int64_t kMaxRange = 100000;
  const long double span =
      step > 0 ? (static_cast<long double>(stop) - start) : (static_cast<long double>(start) - stop);
  const long double count = span <= 0 ? 0 : std::ceil(span / std::fabs(static_cast<long double>(step)));
  if (count > kMaxRange) {
    return fail(type_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."));
  }
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) out.emplace_back(start + i * step);
  return Value::list(std::move(out));
}

Result<Value> g_raise_exception(Interp&, CallArgs& args) {
  const std::string message = args.args.empty() ? std::string() : args.args.front().str();
  return fail(type_error(fmt::format("the template raised an error: {}", message)));
}

Result<Value> g_strftime_now(Interp& interp, CallArgs& args) {
  auto b = bind("strftime_now", args, {"format"}, 1);
  if (!b) return fail(b.error());
  const std::string format = (*b)[0]->str();
  if (format.empty()) return Value(std::string());
  std::string buffer(format.size() * 4 + 64, '\0');
  for (int attempt = 0; attempt < 8; ++attempt) {
    const size_t n = std::strftime(buffer.data(), buffer.size(), format.c_str(), &interp.now());
    if (n > 0) {
      buffer.resize(n);
      return Value(std::move(buffer));
    }
    if (buffer.size() > (size_t{1} << 20)) break;
    buffer.resize(buffer.size() * 4);
  }
  return Value(std::string());
}

class CyclerObject;

class CyclerMethod final : public Function {
 public:
  CyclerMethod(std::shared_ptr<const CyclerObject> cycler, bool next) : cycler_(std::move(cycler)), next_(next) {}
  std::string_view name() const override { return next_ ? "next" : "reset"; }
  Result<Value> call(Interp& interp, CallArgs& args) const override;

 private:
  std::shared_ptr<const CyclerObject> cycler_;
  bool next_;
};

class CyclerObject final : public Object, public std::enable_shared_from_this<CyclerObject> {
 public:
  explicit CyclerObject(std::vector<Value> items) : items_(std::move(items)) {}
  std::string_view type_name() const override { return "Cycler"; }
  Value get_attr(std::string_view name) const override {
    if (name == "current") return items_[position_];
    if (name == "next" || name == "reset") {
      return Value::function(std::make_shared<CyclerMethod>(shared_from_this(), name == "next"));
    }
    return Value::undefined(fmt::format("'Cycler object' has no attribute '{}'", name));
  }
  std::string repr() const override { return "<Cycler>"; }
  Value next() const {
    Value current = items_[position_];
    position_ = (position_ + 1) % items_.size();
    return current;
  }
  void reset() const { position_ = 0; }

 private:
  std::vector<Value> items_;
  mutable size_t position_ = 0;
};

Result<Value> CyclerMethod::call(Interp&, CallArgs& args) const {
  if (!args.args.empty() || !args.kwargs.empty()) return fail(type_error("cycler methods take no arguments"));
  if (next_) return cycler_->next();
  cycler_->reset();
  return Value::none();
}

Result<Value> g_cycler(Interp&, CallArgs& args) {
  if (!args.kwargs.empty()) return fail(type_error("cycler() takes no keyword arguments"));
  if (args.args.empty()) return fail(type_error("at least one item has to be provided"));
  return Value::object(std::make_shared<CyclerObject>(std::move(args.args)));
}

class JoinerFunction final : public Function {
 public:
  explicit JoinerFunction(std::string separator) : separator_(std::move(separator)) {}
  std::string_view name() const override { return "joiner"; }
  Result<Value> call(Interp&, CallArgs&) const override {
    if (!used_) {
      used_ = true;
      return Value(std::string());
    }
    return Value(separator_);
  }

 private:
  std::string separator_;
  mutable bool used_ = false;
};

Result<Value> g_joiner(Interp&, CallArgs& args) {
  auto b = bind("joiner", args, {"sep"});
  if (!b) return fail(b.error());
  return Value::function(std::make_shared<JoinerFunction>((*b)[0] ? (*b)[0]->str() : ", "));
}

const std::unordered_map<std::string_view, FilterFn>& filters() {
  static const std::unordered_map<std::string_view, FilterFn> table = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"batch", f_batch},
      {"capitalize", f_capitalize},
      {"center", f_center},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"format", f_format},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"slice", f_slice},
      {"sort", f_sort},
      {"string", f_string},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"truncate", f_truncate},
      {"unique", f_unique},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return table;
}

const std::unordered_map<std::string_view, TestFn>& tests() {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"!=", t_compare<CompareOp::kNe>},
      {"<", t_compare<CompareOp::kLt>},
      {"<=", t_compare<CompareOp::kLe>},
      {"==", t_compare<CompareOp::kEq>},
      {">", t_compare<CompareOp::kGt>},
      {">=", t_compare<CompareOp::kGe>},
      {"boolean", t_boolean},
      {"callable", t_callable},
      {"defined", t_defined},
      {"divisibleby", t_divisibleby},
      {"eq", t_compare<CompareOp::kEq>},
      {"equalto", t_compare<CompareOp::kEq>},
      {"escaped", t_escaped},
      {"even", t_even},
      {"false", t_false},
      {"filter", t_filter},
      {"float", t_float},
      {"ge", t_compare<CompareOp::kGe>},
      {"greaterthan", t_compare<CompareOp::kGt>},
      {"gt", t_compare<CompareOp::kGt>},
      {"in", t_in},
      {"integer", t_integer},
      {"iterable", t_iterable},
      {"le", t_compare<CompareOp::kLe>},
      {"lessthan", t_compare<CompareOp::kLt>},
      {"lower", t_lower},
      {"lt", t_compare<CompareOp::kLt>},
      {"mapping", t_mapping},
      {"ne", t_compare<CompareOp::kNe>},
      {"none", t_none},
      {"number", t_number},
      {"odd", t_odd},
      {"sameas", t_sameas},
      {"sequence", t_sequence},
      {"string", t_string},
      {"test", t_test},
      {"true", t_true},
      {"undefined", t_undefined},
      {"upper", t_upper},
  };
  return table;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  const auto& table = filters();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

TestFn find_test(std::string_view name) {
  const auto& table = tests();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

Value find_global(std::string_view name) {
  static const std::unordered_map<std::string_view, Value> table = [] {
    std::unordered_map<std::string_view, Value> t;
    const auto add = [&t](std::string_view n, BuiltinFunction::Fn fn) {
      t.emplace(n, Value::function(std::make_shared<BuiltinFunction>(n, fn)));
    };
    add("range", g_range);
    add("dict", g_dict);
    add("namespace", g_namespace);
    add("cycler", g_cycler);
    add("joiner", g_joiner);
    add("raise_exception", g_raise_exception);
    add("strftime_now", g_strftime_now);
    return t;
  }();
  const auto it = table.find(name);
  return it == table.end() ? Value() : it->second;
}

}  // namespace ix::jinja
