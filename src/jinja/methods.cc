// Python methods of str, list, tuple and dict that templates call (message.content.startswith(...),
// tool.get('name'), ...). The mutating list/dict methods are refused, as transformers'
// ImmutableSandboxedEnvironment refuses them.
#include <fmt/format.h>

#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/interp.h"

namespace ix::jinja {
namespace {

constexpr std::string_view kStrMethods[] = {
    "capitalize", "casefold",   "center",    "count",    "endswith",   "find",      "format",       "index",
    "isalnum",    "isalpha",    "isdecimal", "isdigit",  "islower",    "isnumeric", "isspace",      "istitle",
    "isupper",    "join",       "ljust",     "lower",    "lstrip",     "partition", "removeprefix", "removesuffix",
    "replace",    "rfind",      "rindex",    "rjust",    "rpartition", "rsplit",    "rstrip",       "split",
    "splitlines", "startswith", "strip",     "swapcase", "title",      "upper",     "zfill",
};
constexpr std::string_view kDictMethods[] = {"copy", "get", "items", "keys", "values"};
constexpr std::string_view kDictUnsafe[] = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr std::string_view kSequenceMethods[] = {"count", "index"};
constexpr std::string_view kListUnsafe[] = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};

template <size_t N>
bool contains(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

class BoundMethod final : public Function {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  Result<Value> call(Interp& interp, CallArgs& args) const override { return call_method(interp, self_, name_, args); }
  std::string repr() const override {
    return fmt::format("<built-in method {} of {} object>", name_, self_.type_name());
  }

 private:
  Value self_;
  std::string name_;
};

Result<std::string> string_arg(const std::optional<Value>& value, std::string_view method, std::string_view what) {
  if (!value || !value->is_string()) {
    return fail(type_error(
        fmt::format("{}() argument '{}' must be str, not {}", method, what, value ? value->type_name() : "nothing")));
  }
  return value->as_string();
}

Result<std::optional<std::string>> optional_string(const std::optional<Value>& value, std::string_view method) {
  if (!value || value->is_none()) return std::optional<std::string>();
  if (!value->is_string()) {
    return fail(type_error(fmt::format("{}() argument must be str or None, not {}", method, value->type_name())));
  }
  return std::optional<std::string>(value->as_string());
}

Result<int64_t> int_arg(const std::optional<Value>& value, int64_t default_value, std::string_view method) {
  if (!value || value->is_none()) return default_value;
  if (!value->is_int() && !value->is_bool()) {
    return fail(type_error(fmt::format("{}() argument must be an integer, not {}", method, value->type_name())));
  }
  return value->as_int();
}

// text[start:end] in code points (Python slice rules), and the code-point offset of its start.
std::pair<std::string, int64_t> sub_range(const std::string& text, const std::optional<Value>& start,
                                          const std::optional<Value>& end) {
  const bool has_start = start && (start->is_int() || start->is_bool());
  const bool has_end = end && (end->is_int() || end->is_bool());
  if (!has_start && !has_end) return {text, 0};
  const std::u32string cps = py::decode(text);
  const auto length = static_cast<int64_t>(cps.size());
  const auto clamp = [&](int64_t v) {
    if (v < 0) v += length;
    return std::clamp<int64_t>(v, 0, length);
  };
  const int64_t begin = has_start ? clamp(start->as_int()) : 0;
  const int64_t stop = has_end ? clamp(end->as_int()) : length;
  if (stop <= begin) return {std::string(), begin};
  return {py::encode(std::u32string_view(cps).substr(static_cast<size_t>(begin), static_cast<size_t>(stop - begin))),
          begin};
}

Result<Value> affix_test(const std::string& text, CallArgs& args, std::string_view method, bool prefix) {
  auto bound = bind_args(method, args, {"prefix", "start", "end"}, 1);
  if (!bound) return fail(bound.error());
  const auto [part, offset] = sub_range(text, (*bound)[1], (*bound)[2]);
  const Value& affixes = *(*bound)[0];
  const auto matches = [&, &part = part](const Value& affix) -> Result<bool> {
    if (!affix.is_string()) {
      return fail(
          type_error(fmt::format("{} first arg must be str or a tuple of str, not {}", method, affix.type_name())));
    }
    const std::string& a = affix.as_string();
    return prefix ? std::string_view(part).starts_with(a) : std::string_view(part).ends_with(a);
  };
  if (affixes.is_tuple()) {
    for (const auto& affix : affixes.items()) {
      auto m = matches(affix);
      if (!m) return fail(m.error());
      if (*m) return Value(true);
    }
    return Value(false);
  }
  auto m = matches(affixes);
  if (!m) return fail(m.error());
  return Value(*m);
}

Result<Value> find_like(const std::string& text, CallArgs& args, std::string_view method) {
  auto bound = bind_args(method, args, {"sub", "start", "end"}, 1);
  if (!bound) return fail(bound.error());
  auto sub = string_arg((*bound)[0], method, "sub");
  if (!sub) return fail(sub.error());
  const auto [part, offset] = sub_range(text, (*bound)[1], (*bound)[2]);
  if (method == "count") return Value(py::count(part, *sub));
  const bool reverse = method == "rfind" || method == "rindex";
  const int64_t found = py::find(part, *sub, reverse);
  if (found < 0) {
    if (method == "index" || method == "rindex") return fail(type_error("substring not found"));
    return Value(int64_t{-1});
  }
  return Value(found + offset);
}

Result<Value> justify(const std::string& text, CallArgs& args, std::string_view method) {
  auto bound = bind_args(method, args, {"width", "fillchar"}, 1);
  if (!bound) return fail(bound.error());
  auto width = int_arg((*bound)[0], 0, method);
  if (!width) return fail(width.error());
  std::string fill = " ";
  if ((*bound)[1]) {
    if (!(*bound)[1]->is_string() || py::length((*bound)[1]->as_string()) != 1) {
      return fail(type_error(fmt::format("{}() fill character must be exactly one character long", method)));
    }
    fill = (*bound)[1]->as_string();
  }
  const auto length = static_cast<int64_t>(py::length(text));
  if (*width <= length) return Value(text);
  if (*width > (int64_t{1} << 24)) return fail(type_error(fmt::format("{}() width too large", method)));
  const int64_t margin = *width - length;
  int64_t left = 0;
  if (method == "rjust") {
    left = margin;
  } else if (method == "center") {
    left = margin / 2 + (margin & *width & 1);  // CPython's rounding
  }
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += text;
  for (int64_t i = left; i < margin; ++i) out += fill;
  return Value(std::move(out));
}

Result<Value> str_method(const Value& self, std::string_view name, CallArgs& args, size_t max_bytes) {
  const std::string& text = self.as_string();
  const auto no_args = [&]() -> Result<void> {
    if (!args.args.empty() || !args.kwargs.empty()) {
      return fail(type_error(fmt::format("str.{}() takes no arguments", name)));
    }
    return {};
  };
  if (name == "startswith" || name == "endswith") return affix_test(text, args, name, name == "startswith");
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    auto bound = bind_args(name, args, {"chars"});
    if (!bound) return fail(bound.error());
    auto chars = optional_string((*bound)[0], name);
    if (!chars) return fail(chars.error());
    return Value(py::strip(text, *chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    auto bound = bind_args(name, args, {"sep", "maxsplit"});
    if (!bound) return fail(bound.error());
    auto sep = optional_string((*bound)[0], name);
    if (!sep) return fail(sep.error());
    if (*sep && (*sep)->empty()) return fail(type_error("empty separator"));
    auto maxsplit = int_arg((*bound)[1], -1, name);
    if (!maxsplit) return fail(maxsplit.error());
    const auto parts = name == "split" ? py::split(text, *sep, *maxsplit) : py::rsplit(text, *sep, *maxsplit);
    std::vector<Value> items(parts.begin(), parts.end());
    return Value::list(std::move(items));
  }
  if (name == "splitlines") {
    auto bound = bind_args(name, args, {"keepends"});
    if (!bound) return fail(bound.error());
    const bool keepends = (*bound)[0] && (*bound)[0]->truthy();
    const auto parts = py::splitlines(text, keepends);
    return Value::list(std::vector<Value>(parts.begin(), parts.end()));
  }
  if (name == "replace") {
    auto bound = bind_args(name, args, {"old", "new", "count"}, 2);
    if (!bound) return fail(bound.error());
    auto old = string_arg((*bound)[0], name, "old");
    if (!old) return fail(old.error());
    auto replacement = string_arg((*bound)[1], name, "new");
    if (!replacement) return fail(replacement.error());
    auto count = int_arg((*bound)[2], -1, name);
    if (!count) return fail(count.error());
    auto replaced = py::replace(text, *old, *replacement, *count, max_bytes);
    if (!replaced) return fail(type_error(fmt::format("replace() result would exceed {} bytes", max_bytes)));
    return Value(std::move(*replaced));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    return find_like(text, args, name);
  }
  if (name == "center" || name == "ljust" || name == "rjust") return justify(text, args, name);
  if (name == "zfill") {
    auto bound = bind_args(name, args, {"width"}, 1);
    if (!bound) return fail(bound.error());
    auto width = int_arg((*bound)[0], 0, name);
    if (!width) return fail(width.error());
    const auto length = static_cast<int64_t>(py::length(text));
    if (*width <= length) return Value(text);
    if (*width > (int64_t{1} << 24)) return fail(type_error("zfill() width too large"));
    const std::string zeros(static_cast<size_t>(*width - length), '0');
    if (!text.empty() && (text[0] == '+' || text[0] == '-')) return Value(text.substr(0, 1) + zeros + text.substr(1));
    return Value(zeros + text);
  }
  if (name == "join") {
    auto bound = bind_args(name, args, {"iterable"}, 1);
    if (!bound) return fail(bound.error());
    auto items = iterate(*(*bound)[0]);
    if (!items) return fail(items.error());
    std::string out;
    for (size_t index = 0; index < items->size(); ++index) {
      const Value& item = (*items)[index];
      if (!item.is_string()) {
        return fail(
            type_error(fmt::format("sequence item {}: expected str instance, {} found", index, item.type_name())));
      }
      if (index) out += text;
      out += item.as_string();
      if (out.size() > max_bytes)
        return fail(type_error(fmt::format("join() result would exceed {} bytes", max_bytes)));
    }
    return Value(std::move(out));
  }
  if (name == "partition" || name == "rpartition") {
    auto bound = bind_args(name, args, {"sep"}, 1);
    if (!bound) return fail(bound.error());
    auto sep = string_arg((*bound)[0], name, "sep");
    if (!sep) return fail(sep.error());
    if (sep->empty()) return fail(type_error("empty separator"));
    const size_t at = name == "partition" ? text.find(*sep) : text.rfind(*sep);
    if (at == std::string::npos) {
      if (name == "partition") return Value::tuple({Value(text), Value(""), Value("")});
      return Value::tuple({Value(""), Value(""), Value(text)});
    }
    return Value::tuple({Value(text.substr(0, at)), Value(*sep), Value(text.substr(at + sep->size()))});
  }
  if (name == "removeprefix" || name == "removesuffix") {
    auto bound = bind_args(name, args, {"affix"}, 1);
    if (!bound) return fail(bound.error());
    auto affix = string_arg((*bound)[0], name, "affix");
    if (!affix) return fail(affix.error());
    if (name == "removeprefix" && std::string_view(text).starts_with(*affix)) return Value(text.substr(affix->size()));
    if (name == "removesuffix" && !affix->empty() && std::string_view(text).ends_with(*affix)) {
      return Value(text.substr(0, text.size() - affix->size()));
    }
    return Value(text);
  }
  if (name == "format") {
    auto formatted = str_format(text, args, max_bytes);
    if (!formatted) return fail(formatted.error());
    return Value(std::move(*formatted));
  }
  if (auto r = no_args(); !r) return fail(r.error());
  if (name == "upper") return Value(py::upper(text));
  if (name == "lower" || name == "casefold") return Value(py::lower(text));
  if (name == "title") return Value(py::title(text));
  if (name == "capitalize") return Value(py::capitalize(text));
  if (name == "swapcase") return Value(py::swapcase(text));
  if (name == "isspace") return Value(py::is_all(text, py::is_space));
  if (name == "isdigit") return Value(py::is_all(text, py::is_digit_cp));
  if (name == "isdecimal") return Value(py::is_all(text, py::is_decimal_cp));
  if (name == "isnumeric") return Value(py::is_all(text, py::is_numeric_cp));
  if (name == "isalpha") return Value(py::is_all(text, py::is_alpha_cp));
  if (name == "isalnum") return Value(py::is_all(text, py::is_alnum_cp));
  if (name == "islower") return Value(py::is_lower(text));
  if (name == "isupper") return Value(py::is_upper(text));
  if (name == "istitle") return Value(!text.empty() && py::title(text) == text && py::lower(text) != text);
  return fail(type_error(fmt::format("'str' object has no attribute '{}'", name)));
}

Result<Value> dict_method(const Value& self, std::string_view name, CallArgs& args) {
  if (name == "get") {
    auto bound = bind_args(name, args, {"key", "default"}, 1);
    if (!bound) return fail(bound.error());
    const Value& key = *(*bound)[0];
    if (key.is_list() || key.is_dict()) return fail(type_error(fmt::format("unhashable type: '{}'", key.type_name())));
    const auto* data = static_cast<const DictData*>(self.handle().get());
    if (const Value* found = data->find(key)) return *found;
    return (*bound)[1] ? *(*bound)[1] : Value::none();
  }
  if (!args.args.empty() || !args.kwargs.empty()) {
    return fail(type_error(fmt::format("dict.{}() takes no arguments", name)));
  }
  std::vector<Value> out;
  out.reserve(self.entries().size());
  if (name == "copy") return self;
  for (const auto& [key, value] : self.entries()) {
    if (name == "items") {
      out.push_back(Value::tuple({key, value}));
    } else if (name == "keys") {
      out.push_back(key);
    } else {
      out.push_back(value);
    }
  }
  return Value::list(std::move(out));
}

Result<Value> sequence_method(const Value& self, std::string_view name, CallArgs& args) {
  const auto items = self.items();
  if (name == "count") {
    auto bound = bind_args(name, args, {"value"}, 1);
    if (!bound) return fail(bound.error());
    int64_t n = 0;
    for (const auto& item : items) n += item.equals(*(*bound)[0]) ? 1 : 0;
    return Value(n);
  }
  auto bound = bind_args(name, args, {"value", "start", "stop"}, 1);
  if (!bound) return fail(bound.error());
  const auto size = static_cast<int64_t>(items.size());
  const auto clamp = [&](int64_t v) {
    if (v < 0) v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  auto start = int_arg((*bound)[1], 0, name);
  if (!start) return fail(start.error());
  auto stop = int_arg((*bound)[2], size, name);
  if (!stop) return fail(stop.error());
  for (int64_t index = clamp(*start); index < clamp(*stop); ++index) {
    if (items[static_cast<size_t>(index)].equals(*(*bound)[0])) return Value(index);
  }
  return fail(type_error(fmt::format("{} is not in {}", (*bound)[0]->repr(), self.type_name())));
}

}  // namespace

MethodKind method_kind(const Value& self, std::string_view name) {
  switch (self.kind()) {
    case Value::Kind::kString: return contains(kStrMethods, name) ? MethodKind::kMethod : MethodKind::kNone;
    case Value::Kind::kDict:
      if (contains(kDictMethods, name)) return MethodKind::kMethod;
      return contains(kDictUnsafe, name) ? MethodKind::kUnsafe : MethodKind::kNone;
    case Value::Kind::kList:
      if (contains(kSequenceMethods, name) || name == "copy") return MethodKind::kMethod;
      return contains(kListUnsafe, name) ? MethodKind::kUnsafe : MethodKind::kNone;
    case Value::Kind::kTuple: return contains(kSequenceMethods, name) ? MethodKind::kMethod : MethodKind::kNone;
    default: return MethodKind::kNone;
  }
}

Result<Value> call_method(Interp& interp, const Value& self, std::string_view name, CallArgs& args) {
  switch (self.kind()) {
    case Value::Kind::kString: return str_method(self, name, args, interp.max_bytes());
    case Value::Kind::kDict: return dict_method(self, name, args);
    case Value::Kind::kList:
      if (name == "copy") return self;
      return sequence_method(self, name, args);
    case Value::Kind::kTuple: return sequence_method(self, name, args);
    default: break;
  }
  return fail(type_error(fmt::format("'{}' object has no attribute '{}'", self.type_name(), name)));
}

Value bound_method(const Value& self, std::string_view name) {
  return Value::function(std::make_shared<BoundMethod>(self, std::string(name)));
}

}  // namespace ix::jinja
