// Builtins shared by the interpreter: Python methods of str/list/dict, iteration, operators, and
// printf-style formatting. Internal to jinja/.
#pragma once

#include <string_view>
#include <vector>

#include "jinja/ast.h"

namespace ix::jinja {

enum class MethodKind { kNone, kMethod, kUnsafe };

// Whether `self` (str, list, tuple, dict) has a Python method `name`; kUnsafe for the mutating
// ones the immutable sandbox refuses (list.append, dict.update, ...).
MethodKind method_kind(const Value& self, std::string_view name);
Result<Value> call_method(Interp& interp, const Value& self, std::string_view name, CallArgs& args);
// `self.name` as a callable value.
Value bound_method(const Value& self, std::string_view name);

// The items of iter(value): list/tuple items, dict keys, str characters; Undefined is empty.
// Errors: "'<type>' object is not iterable".
Result<std::vector<Value>> iterate(const Value& value);

// Python operators (Jinja2's semantics for Undefined: arithmetic on it fails).
Result<Value> binary_op(BinaryOp op, const Value& left, const Value& right, size_t max_bytes);
Result<Value> unary_op(UnaryOp op, const Value& operand);
Result<bool> compare_op(CompareOp op, const Value& left, const Value& right);
// Python's < for sort keys and comparisons ('<' between incompatible types is an error).
Result<bool> less_than(const Value& left, const Value& right);
// Python slicing of str/list/tuple.
Result<Value> slice_value(const Value& object, const Value& start, const Value& stop, const Value& step);

// "%s" % args (Python printf-style formatting) and str.format; results longer than max_bytes
// are errors.
Result<std::string> percent_format(std::string_view format, const Value& args, size_t max_bytes);
Result<std::string> str_format(std::string_view format, const CallArgs& args, size_t max_bytes);

// Python json.dumps(value, ensure_ascii, indent, separators, sort_keys) as transformers' tojson.
struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // None: single line
  std::optional<std::pair<std::string, std::string>> separators;
  bool sort_keys = false;
};
Result<std::string> to_json(const Value& value, const JsonOptions& options);

// The error for using an Undefined where a value is needed.
Error undefined_error(const Value& undefined);

}  // namespace ix::jinja
