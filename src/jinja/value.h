// Values of the Jinja engine: what templates compute with and what callers pass in.
//
// A Value is one of Python's types as Jinja2 sees them: Undefined (a missing variable or
// attribute), None, bool, int (64-bit), float, str (UTF-8), list, tuple, dict (insertion-ordered),
// plus engine-internal objects (namespace(), the loop variable, macros and other callables) that
// only templates create. Semantics follow Python: truthiness, `==` (1 == 1.0 == True, deep for
// containers, dicts ignore order), str() and repr() text, len() and indexing by code point.
//
// Callers build contexts from scalars, Value::list / Value::dict, or from JSON text
// (Value::from_json), which maps JSON exactly as Python's json.loads does (integers stay int,
// numbers with a fraction or exponent become float).
//
// Ownership and thread-safety: a Value is a small handle (32 bytes) to immutable shared data;
// copies are cheap and a Value may be read from any number of threads at once. The only mutable
// values are namespace() objects and loop variables, which exist only inside one render() call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ix::jinja {

class Value;
struct ListData;
struct DictData;
class Object;
class Function;

using DictEntry = std::pair<Value, Value>;

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kTuple,
    kDict,
    kObject,    // namespace(), loop, cycler, joiner
    kFunction,  // macros, globals, bound methods
  };

  // Undefined (what a missing variable evaluates to).
  Value() : kind_(Kind::kUndefined), int_(0) {}
  static Value none();
  // An Undefined whose use in an error names what was missing ("'x' is undefined").
  static Value undefined(std::string hint);
  Value(bool value) : kind_(Kind::kBool), bool_(value) {}       // NOLINT(google-explicit-constructor)
  Value(int value) : kind_(Kind::kInt), int_(value) {}          // NOLINT(google-explicit-constructor)
  Value(int64_t value) : kind_(Kind::kInt), int_(value) {}      // NOLINT(google-explicit-constructor)
  Value(double value) : kind_(Kind::kFloat), float_(value) {}   // NOLINT(google-explicit-constructor)
  Value(std::string value);                                     // NOLINT(google-explicit-constructor)
  Value(std::string_view value) : Value(std::string(value)) {}  // NOLINT(google-explicit-constructor)
  Value(const char* value) : Value(std::string(value)) {}       // NOLINT(google-explicit-constructor)

  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  // Keys are usually strings; any hashable scalar (None, bool, int, float, str, tuple) works.
  // A repeated key keeps its first position and its last value, as a Python dict literal does.
  static Value dict(std::vector<DictEntry> entries);
  static Value dict(std::initializer_list<std::pair<std::string_view, Value>> entries);
  // JSON text -> Value (objects become dicts with string keys). Errors: kParse with line:column.
  static Result<Value> from_json(std::string_view json_text, std::string_view source_name = "<json>");

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_sequence() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  // Accessors; each requires the matching kind (checked with assert).
  bool as_bool() const;
  int64_t as_int() const;   // kInt or kBool
  double as_float() const;  // kFloat, kInt or kBool
  const std::string& as_string() const;
  std::span<const Value> items() const;           // kList or kTuple
  const std::vector<DictEntry>& entries() const;  // kDict
  const Object& as_object() const;
  const Function& as_function() const;
  // The hint of an Undefined ("" when none).
  std::string_view undefined_hint() const;

  // Dict lookup by string key (nullptr when absent or not a dict).
  const Value* find(std::string_view key) const;

  // Python truthiness (bool(x)); Undefined is false.
  bool truthy() const;
  // Python str(x) (Undefined: ""), appended to `out`.
  void append_str(std::string& out) const;
  std::string str() const;
  // Python repr(x).
  std::string repr() const;
  // Python ==. Containers compare deeply; 1 == 1.0 == True.
  bool equals(const Value& other) const;
  // Python type name ("str", "int", "list", "dict", "NoneType", "Undefined", ...).
  std::string_view type_name() const;

  // Internal construction (engine use).
  static Value object(std::shared_ptr<const Object> object);
  static Value function(std::shared_ptr<const Function> function);
  const std::shared_ptr<const void>& handle() const { return ptr_; }

 private:
  Kind kind_;
  union {
    bool bool_;
    int64_t int_;
    double float_;
  };
  // string (std::string), list/tuple (ListData), dict (DictData), Object, Function, or the hint
  // of an Undefined (std::string).
  std::shared_ptr<const void> ptr_;
};

}  // namespace ix::jinja
