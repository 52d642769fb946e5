#include "jinja/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cassert>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "common/json_io.h"
#include "jinja/internal.h"

namespace ix::jinja {
namespace {

bool number_equal(const Value& a, const Value& b) {
  if (!a.is_float() && !b.is_float()) return a.as_int() == b.as_int();
  if (a.is_float() && b.is_float()) return a.as_float() == b.as_float();
  // int vs float: exact, as Python compares them (no rounding of large ints).
  const double f = a.is_float() ? a.as_float() : b.as_float();
  const int64_t i = a.is_float() ? b.as_int() : a.as_int();
  if (!std::isfinite(f) || f != std::floor(f)) return false;
  if (f < -9223372036854775808.0 || f >= 9223372036854775808.0) return false;
  return static_cast<int64_t>(f) == i;
}

void append_repr(const Value& value, std::string& out, int depth);

void append_sequence_repr(const Value& value, std::string& out, int depth) {
  const bool tuple = value.is_tuple();
  out += tuple ? '(' : '[';
  const auto items = value.items();
  for (size_t index = 0; index < items.size(); ++index) {
    if (index) out += ", ";
    append_repr(items[index], out, depth + 1);
  }
  if (tuple && items.size() == 1) out += ',';
  out += tuple ? ')' : ']';
}

void append_repr(const Value& value, std::string& out, int depth) {
  if (depth > 64) {
    out += "...";
    return;
  }
  switch (value.kind()) {
    case Value::Kind::kString: out += py::repr_string(value.as_string()); return;
    case Value::Kind::kUndefined: out += "Undefined"; return;
    case Value::Kind::kList:
    case Value::Kind::kTuple: append_sequence_repr(value, out, depth); return;
    case Value::Kind::kDict: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.entries()) {
        if (!first) out += ", ";
        first = false;
        append_repr(key, out, depth + 1);
        out += ": ";
        append_repr(item, out, depth + 1);
      }
      out += '}';
      return;
    }
    case Value::Kind::kObject: out += value.as_object().repr(); return;
    case Value::Kind::kFunction: out += value.as_function().repr(); return;
    default: value.append_str(out); return;
  }
}

Value from_boost(const boost::json::value& json) {
  switch (json.kind()) {
    case boost::json::kind::null: return Value::none();
    case boost::json::kind::bool_: return Value(json.get_bool());
    case boost::json::kind::int64: return Value(json.get_int64());
    case boost::json::kind::uint64: {
      const uint64_t u = json.get_uint64();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case boost::json::kind::double_: return Value(json.get_double());
    case boost::json::kind::string: return Value(std::string(json.get_string()));
    case boost::json::kind::array: {
      std::vector<Value> items;
      items.reserve(json.get_array().size());
      for (const auto& item : json.get_array()) items.push_back(from_boost(item));
      return Value::list(std::move(items));
    }
    case boost::json::kind::object: {
      std::vector<DictEntry> entries;
      entries.reserve(json.get_object().size());
      for (const auto& item : json.get_object()) {
        entries.emplace_back(Value(std::string(item.key())), from_boost(item.value()));
      }
      return Value::dict(std::move(entries));
    }
  }
  return Value();
}

uint32_t child_depth(const Value& value) {
  if (value.is_sequence()) return static_cast<const ListData*>(value.handle().get())->depth;
  if (value.is_dict()) return static_cast<const DictData*>(value.handle().get())->depth;
  return 0;
}

uint32_t items_depth(const std::vector<Value>& items) {
  uint32_t depth = 0;
  for (const auto& item : items) depth = std::max(depth, child_depth(item));
  return depth + 1;
}

}  // namespace

uint32_t value_depth(const Value& value) {
  return child_depth(value);
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& entry : entries) {
    if (entry.first.is_string() && entry.first.as_string() == key) return &entry.second;
  }
  return nullptr;
}

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& entry : entries) {
    if (entry.first.equals(key)) return &entry.second;
  }
  return nullptr;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.ptr_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}

Value::Value(std::string value) : kind_(Kind::kString), int_(0) {
  ptr_ = std::make_shared<const std::string>(std::move(value));
}

Value Value::list(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kList;
  const uint32_t depth = items_depth(items);
  v.ptr_ = std::make_shared<const ListData>(ListData{std::move(items), depth});
  return v;
}

Value Value::tuple(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kTuple;
  const uint32_t depth = items_depth(items);
  v.ptr_ = std::make_shared<const ListData>(ListData{std::move(items), depth});
  return v;
}

Value Value::dict(std::vector<DictEntry> entries) {
  // Python semantics for repeated keys: first position, last value.
  std::vector<DictEntry> unique;
  unique.reserve(entries.size());
  std::unordered_map<std::string_view, size_t> string_keys;
  for (auto& entry : entries) {
    std::optional<size_t> existing;
    if (entry.first.is_string()) {
      if (auto it = string_keys.find(entry.first.as_string()); it != string_keys.end()) existing = it->second;
    } else {
      for (size_t index = 0; index < unique.size(); ++index) {
        if (unique[index].first.equals(entry.first)) {
          existing = index;
          break;
        }
      }
    }
    if (existing) {
      unique[*existing].second = std::move(entry.second);
    } else {
      // Keys are shared handles: the string_view stays valid when `unique` reallocates.
      if (entry.first.is_string()) string_keys.emplace(entry.first.as_string(), unique.size());
      unique.push_back(std::move(entry));
    }
  }
  Value v;
  v.kind_ = Kind::kDict;
  uint32_t depth = 0;
  for (const auto& [key, item] : unique) depth = std::max({depth, child_depth(key), child_depth(item)});
  v.ptr_ = std::make_shared<const DictData>(DictData{std::move(unique), depth + 1});
  return v;
}

Value Value::dict(std::initializer_list<std::pair<std::string_view, Value>> entries) {
  std::vector<DictEntry> converted;
  converted.reserve(entries.size());
  for (const auto& [key, value] : entries) converted.emplace_back(Value(key), value);
  return dict(std::move(converted));
}

Result<Value> Value::from_json(std::string_view json_text, std::string_view source_name) {
  auto parsed = json::parse(json_text, source_name);
  if (!parsed) return fail(parsed.error());
  return from_boost(*parsed);
}

Value Value::object(std::shared_ptr<const Object> object) {
  Value v;
  v.kind_ = Kind::kObject;
  v.ptr_ = std::move(object);
  return v;
}

Value Value::function(std::shared_ptr<const Function> function) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.ptr_ = std::move(function);
  return v;
}

bool Value::as_bool() const {
  assert(kind_ == Kind::kBool);
  return bool_;
}

int64_t Value::as_int() const {
  assert(kind_ == Kind::kInt || kind_ == Kind::kBool);
  return kind_ == Kind::kBool ? (bool_ ? 1 : 0) : int_;
}

double Value::as_float() const {
  if (kind_ == Kind::kFloat) return float_;
  return static_cast<double>(as_int());
}

const std::string& Value::as_string() const {
  assert(kind_ == Kind::kString);
  return *static_cast<const std::string*>(ptr_.get());
}

std::span<const Value> Value::items() const {
  assert(kind_ == Kind::kList || kind_ == Kind::kTuple);
  return static_cast<const ListData*>(ptr_.get())->items;
}

const std::vector<DictEntry>& Value::entries() const {
  assert(kind_ == Kind::kDict);
  return static_cast<const DictData*>(ptr_.get())->entries;
}

const Object& Value::as_object() const {
  assert(kind_ == Kind::kObject);
  return *static_cast<const Object*>(ptr_.get());
}

const Function& Value::as_function() const {
  assert(kind_ == Kind::kFunction);
  return *static_cast<const Function*>(ptr_.get());
}

std::string_view Value::undefined_hint() const {
  if (kind_ != Kind::kUndefined || !ptr_) return {};
  return *static_cast<const std::string*>(ptr_.get());
}

const Value* Value::find(std::string_view key) const {
  if (kind_ != Kind::kDict) return nullptr;
  return static_cast<const DictData*>(ptr_.get())->find(key);
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return bool_;
    case Kind::kInt: return int_ != 0;
    case Kind::kFloat: return float_ != 0.0;
    case Kind::kString: return !as_string().empty();
    case Kind::kList:
    case Kind::kTuple: return !items().empty();
    case Kind::kDict: return !entries().empty();
    case Kind::kObject:
    case Kind::kFunction: return true;
  }
  return false;
}

void Value::append_str(std::string& out) const {
  switch (kind_) {
    case Kind::kUndefined: return;
    case Kind::kNone: out += "None"; return;
    case Kind::kBool: out += bool_ ? "True" : "False"; return;
    case Kind::kInt: fmt::format_to(std::back_inserter(out), "{}", int_); return;
    case Kind::kFloat: out += py::float_repr(float_); return;
    case Kind::kString: out += as_string(); return;
    default: append_repr(*this, out, 0); return;
  }
}

std::string Value::str() const {
  if (kind_ == Kind::kString) return as_string();
  std::string out;
  append_str(out);
  return out;
}

std::string Value::repr() const {
  std::string out;
  append_repr(*this, out, 0);
  return out;
}

bool Value::equals(const Value& other) const {
  if (is_number() && other.is_number()) return number_equal(*this, other);
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return as_string() == other.as_string();
    case Kind::kList:
    case Kind::kTuple: {
      const auto a = items();
      const auto b = other.items();
      if (a.size() != b.size()) return false;
      for (size_t index = 0; index < a.size(); ++index) {
        if (!a[index].equals(b[index])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const auto& a = entries();
      const auto& b = *static_cast<const DictData*>(other.ptr_.get());
      if (a.size() != b.entries.size()) return false;
      for (const auto& [key, value] : a) {
        const Value* found = b.find(key);
        if (!found || !found->equals(value)) return false;
      }
      return true;
    }
    default: return ptr_ == other.ptr_;
  }
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kDict: return "dict";
    case Kind::kObject: return as_object().type_name();
    case Kind::kFunction: return "function";
  }
  return "object";
}

Result<std::vector<std::optional<Value>>> bind_args(std::string_view function, CallArgs& args,
                                                    std::initializer_list<std::string_view> names, size_t required) {
  std::vector<std::optional<Value>> bound(names.size());
  if (args.args.size() > names.size()) {
    return fail(type_error(fmt::format("{}() takes at most {} argument{} ({} given)", function, names.size(),
                                       names.size() == 1 ? "" : "s", args.args.size())));
  }
  for (size_t index = 0; index < args.args.size(); ++index) bound[index] = std::move(args.args[index]);
  for (auto& [key, value] : args.kwargs) {
    size_t index = 0;
    for (const auto name : names) {
      if (name == key) break;
      ++index;
    }
    if (index == names.size()) {
      return fail(type_error(fmt::format("{}() got an unexpected keyword argument '{}'", function, key)));
    }
    if (bound[index]) {
      return fail(type_error(fmt::format("{}() got multiple values for argument '{}'", function, key)));
    }
    bound[index] = std::move(value);
  }
  for (size_t index = 0; index < required; ++index) {
    if (!bound[index]) {
      return fail(type_error(fmt::format("{}() missing required argument '{}'", function, *(names.begin() + index))));
    }
  }
  return bound;
}

}  // namespace ix::jinja
