// Engine internals shared by the jinja/ sources (not an API for other libraries): the data behind
// Value handles, callables and objects, argument binding, and Python string helpers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "jinja/value.h"

namespace ix::jinja {

// `depth`: how deeply containers nest inside (1 for a list of scalars); the interpreter refuses
// to store values nested past a limit, which bounds recursion in repr, ==, tojson and destructors.
struct ListData {
  std::vector<Value> items;
  uint32_t depth = 1;
};

struct DictData {
  std::vector<DictEntry> entries;
  uint32_t depth = 1;
  const Value* find(std::string_view key) const;
  const Value* find(const Value& key) const;
};

// A position in the template source (1-based; 0 = unknown).
struct Pos {
  uint32_t line = 0;
  uint32_t column = 0;
};

struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

class Interp;

class Function {
 public:
  virtual ~Function() = default;
  virtual std::string_view name() const = 0;
  // Errors of builtins carry no position (the caller adds the call's); macros report positions
  // inside their bodies themselves.
  virtual Result<Value> call(Interp& interp, CallArgs& args) const = 0;
  virtual bool reports_position() const { return false; }
  virtual std::string repr() const { return "<function " + std::string(name()) + ">"; }
};

class Object {
 public:
  virtual ~Object() = default;
  virtual std::string_view type_name() const = 0;
  // Undefined (with a hint) when there is no such attribute.
  virtual Value get_attr(std::string_view name) const = 0;
  // Namespaces only: false for other objects.
  virtual bool set_attr(std::string_view /*name*/, Value /*value*/) const { return false; }
  virtual std::string repr() const = 0;
  // namespace() entries, for tojson-like uses; nullptr for other objects.
  virtual const std::vector<std::pair<std::string, Value>>* namespace_entries() const { return nullptr; }
  // Drops what the object refers to (namespaces, at the end of a render: a namespace may have
  // been stored inside itself).
  virtual void release() const {}
};

// Nesting depth of a value: 0 for scalars.
uint32_t value_depth(const Value& value);

// Errors raised by builtins and operators (positions are added by the interpreter).
inline Error type_error(std::string message) {
  return Error(ErrorCode::kInvalidArgument, std::move(message));
}

// Python-style argument binding: positional arguments fill `names` in order, then keywords by
// name. Unknown keywords, too many positionals, a parameter given twice or a missing one of the
// first `required` are errors naming `function`.
Result<std::vector<std::optional<Value>>> bind_args(std::string_view function, CallArgs& args,
                                                    std::initializer_list<std::string_view> names, size_t required = 0);

// Python string helpers over UTF-8 (`py` namespace: semantics of CPython's str).
namespace py {

bool is_space(char32_t cp);
std::u32string decode(std::string_view text);
std::string encode(std::u32string_view text);
bool is_ascii(std::string_view text);
// len(s): code points.
size_t length(std::string_view text);
// The code point at Python index `index` (negative counts from the end); nullopt when out of
// range.
std::optional<std::string> char_at(std::string_view text, int64_t index);

std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right);
std::vector<std::string> split(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view text, bool keepends);
// nullopt when the result would be longer than `max_bytes`.
std::optional<std::string> replace(std::string_view text, std::string_view old, std::string_view replacement,
                                   int64_t count, size_t max_bytes);
// str.find / str.count over code points (start/end in code points, Python slice rules).
int64_t find(std::string_view text, std::string_view sub, bool reverse);
int64_t count(std::string_view text, std::string_view sub);

std::string upper(std::string_view text);
std::string lower(std::string_view text);
// str.title(), str.capitalize(), str.swapcase().
std::string title(std::string_view text);
std::string capitalize(std::string_view text);
std::string swapcase(std::string_view text);
bool is_lower(std::string_view text);
bool is_upper(std::string_view text);
// str.isdigit / isalpha / isalnum / isspace / isnumeric / isdecimal
bool is_all(std::string_view text, bool (*predicate)(char32_t));
bool is_digit_cp(char32_t cp);
bool is_alpha_cp(char32_t cp);
bool is_alnum_cp(char32_t cp);
bool is_numeric_cp(char32_t cp);
bool is_decimal_cp(char32_t cp);

// repr(str) with Python's quoting and escapes.
std::string repr_string(std::string_view text);
// repr(float) / str(float): shortest round-trip digits, Python's exponent rules.
std::string float_repr(double value);

}  // namespace py

}  // namespace ix::jinja
