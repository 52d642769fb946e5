// The renderer. Scoping follows Jinja2: `for` bodies, macros, call blocks, `with`, block sets and
// filter blocks get their own frame (a `set` inside them does not leak out; a loop body starts
// each iteration afresh), `if` does not; macros see their parameters, the variables visible where
// they were defined (captured when defined) and the template's top level (read when called).
#include <fmt/format.h>

#include <chrono>
#include <unordered_map>

#include "jinja/builtins.h"
#include "jinja/interp.h"

namespace ix::jinja {
namespace {

constexpr int kMaxCallDepth = 100;

class MacroFunction final : public Function {
 public:
  MacroFunction(const MacroStmt& stmt, std::vector<std::pair<Symbol, Value>> captured)
      : stmt_(stmt), captured_(std::move(captured)) {}
  std::string_view name() const override { return stmt_.name; }
  Result<Value> call(Interp& interp, CallArgs& args) const override {
    return interp.call_macro(stmt_, captured_, args, Value());
  }
  Result<Value> call_with_caller(Interp& interp, CallArgs& args, const Value& caller) const {
    return interp.call_macro(stmt_, captured_, args, caller);
  }
  bool reports_position() const override { return true; }
  std::string repr() const override { return "<Macro '" + stmt_.name + "'>"; }

 private:
  const MacroStmt& stmt_;
  std::vector<std::pair<Symbol, Value>> captured_;
};

class CallerFunction final : public Function {
 public:
  CallerFunction(const CallBlockStmt& stmt, std::vector<std::pair<Symbol, Value>> captured)
      : stmt_(stmt), captured_(std::move(captured)) {}
  std::string_view name() const override { return "caller"; }
  Result<Value> call(Interp& interp, CallArgs& args) const override {
    return interp.call_caller(stmt_, captured_, args);
  }
  bool reports_position() const override { return true; }
  std::string repr() const override { return "<Macro 'caller'>"; }

 private:
  const CallBlockStmt& stmt_;
  std::vector<std::pair<Symbol, Value>> captured_;
};

class LoopObject;

// loop.cycle(...) and loop.changed(...).
class LoopMethod final : public Function {
 public:
  LoopMethod(std::shared_ptr<const LoopObject> loop, bool cycle) : loop_(std::move(loop)), cycle_(cycle) {}
  std::string_view name() const override { return cycle_ ? "cycle" : "changed"; }
  Result<Value> call(Interp& interp, CallArgs& args) const override;

 private:
  std::shared_ptr<const LoopObject> loop_;
  bool cycle_;
};

// Jinja2's LoopContext (non-recursive loops: depth is always 1).
class LoopObject final : public Object, public std::enable_shared_from_this<LoopObject> {
 public:
  explicit LoopObject(std::shared_ptr<const std::vector<Value>> items) : items_(std::move(items)) {}
  void set_index(size_t index0) { index0_ = index0; }
  size_t index0() const { return index0_; }
  std::string_view type_name() const override { return "LoopContext"; }
  Value get_attr(std::string_view name) const override {
    const auto length = static_cast<int64_t>(items_->size());
    const auto index0 = static_cast<int64_t>(index0_);
    if (name == "index") return Value(index0 + 1);
    if (name == "index0") return Value(index0);
    if (name == "revindex") return Value(length - index0);
    if (name == "revindex0") return Value(length - index0 - 1);
    if (name == "first") return Value(index0 == 0);
    if (name == "last") return Value(index0 + 1 == length);
    if (name == "length") return Value(length);
    if (name == "depth") return Value(int64_t{1});
    if (name == "depth0") return Value(int64_t{0});
    if (name == "previtem") {
      return index0 > 0 ? (*items_)[index0_ - 1] : Value::undefined("there is no previous item");
    }
    if (name == "nextitem") {
      return index0 + 1 < length ? (*items_)[index0_ + 1] : Value::undefined("there is no next item");
    }
    if (name == "cycle" || name == "changed") {
      return Value::function(std::make_shared<LoopMethod>(shared_from_this(), name == "cycle"));
    }
    return Value::undefined(fmt::format("'LoopContext object' has no attribute '{}'", name));
  }
  std::string repr() const override { return fmt::format("<LoopContext {}/{}>", index0_ + 1, items_->size()); }
  // loop.changed(): true when the arguments differ from the previous call's.
  bool changed(const std::vector<Value>& values) const {
    const bool differs = !has_last_ || last_.size() != values.size() ||
                         !std::equal(values.begin(), values.end(), last_.begin(),
                                     [](const Value& a, const Value& b) { return a.equals(b); });
    last_ = values;
    has_last_ = true;
    return differs;
  }

 private:
  std::shared_ptr<const std::vector<Value>> items_;
  size_t index0_ = 0;
  mutable std::vector<Value> last_;
  mutable bool has_last_ = false;
};

Result<Value> LoopMethod::call(Interp& /*interp*/, CallArgs& args) const {
  if (!args.kwargs.empty()) return fail(type_error(fmt::format("loop.{}() takes no keyword arguments", name())));
  if (cycle_) {
    if (args.args.empty()) return fail(type_error("no items for cycling given"));
    return args.args[loop_->index0() % args.args.size()];
  }
  return Value(loop_->changed(args.args));
}

std::string describe_target(const Value& value) {
  return std::string(value.type_name());
}

}  // namespace

Interp::Interp(const Program& program, const RenderOptions& options, const Value& variables)
    : program_(program), options_(options), context_(program.symbols.size()), has_context_(program.symbols.size()) {
  if (variables.is_dict()) {
    // Only names the template mentions can ever be looked up.
    std::unordered_map<std::string_view, Symbol> index;
    index.reserve(program.symbols.size());
    for (Symbol s = 0; s < program.symbols.size(); ++s) index.emplace(program.symbols[s], s);
    for (const auto& [key, value] : variables.entries()) {
      if (!key.is_string()) continue;
      if (auto it = index.find(key.as_string()); it != index.end()) {
        context_[it->second] = value;
        has_context_[it->second] = true;
      }
    }
  }
  if (options.now) {
    now_ = *options.now;
  } else {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    localtime_r(&t, &now_);
  }
}

Interp::~Interp() {
  for (const auto& object : adopted_) object->release();
}

Result<std::string> Interp::run() {
  std::string out;
  auto flow = exec_body(program_.body, top_, out);
  if (!flow) return fail(flow.error());
  return out;
}

Error Interp::located(Pos pos, const Error& error) const {
  return Error(error.code(), fmt::format("{}:{}:{}: {}", program_.name, pos.line, pos.column, error.message()));
}

Error Interp::located(const Expr& expr, const Error& error) const {
  return located(expr.pos, error);
}

Result<void> Interp::check_size(size_t bytes) const {
  if (bytes > options_.max_output_bytes) {
    return fail(type_error(fmt::format("the rendered text would exceed {} bytes (RenderOptions::max_output_bytes)",
                                       options_.max_output_bytes)));
  }
  return {};
}

Result<void> Interp::step(uint64_t units) {
  steps_ += units;
  if (steps_ > options_.max_steps) {
    return fail(
        type_error(fmt::format("rendering took more than {} steps (RenderOptions::max_steps): the template "
                               "loops too much",
                               options_.max_steps)));
  }
  return {};
}

Value Interp::lookup(Symbol symbol, const Frame& frame) const {
  for (const Frame* f = &frame; f; f = f->parent) {
    if (const Value* v = f->find(symbol)) return *v;
  }
  if (has_context_[symbol]) return context_[symbol];
  const Value& global = program_.globals[symbol];
  if (!global.is_undefined()) return global;
  return Value::undefined(fmt::format("'{}' is undefined", program_.symbols[symbol]));
}

std::vector<std::pair<Symbol, Value>> Interp::capture(const Frame& frame) const {
  std::vector<std::pair<Symbol, Value>> captured;
  for (const Frame* f = &frame; f && f != &top_; f = f->parent) {
    for (const auto& [symbol, value] : f->vars) {
      bool shadowed = false;
      for (const auto& existing : captured) shadowed = shadowed || existing.first == symbol;
      if (!shadowed) captured.emplace_back(symbol, value);
    }
  }
  return captured;
}

// ---- statements ----

Result<Interp::Flow> Interp::exec_body(const Body& body, Frame& frame, std::string& out) {
  for (const auto& stmt : body) {
    auto flow = exec(*stmt, frame, out);
    if (!flow) return flow;
    if (*flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<Interp::Flow> Interp::exec(const Stmt& stmt, Frame& frame, std::string& out) {
  switch (stmt.kind) {
    case StmtKind::kText: {
      out += static_cast<const TextStmt&>(stmt).text;
      if (auto r = check_size(out.size()); !r) return fail(located(stmt.pos, r.error()));
      return Flow::kNormal;
    }
    case StmtKind::kOutput: {
      const auto& s = static_cast<const OutputStmt&>(stmt);
      auto value = eval(*s.expr, frame);
      if (!value) return fail(value.error());
      value->append_str(out);
      if (auto r = check_size(out.size()); !r) return fail(located(stmt.pos, r.error()));
      if (auto r = step(); !r) return fail(located(stmt.pos, r.error()));
      return Flow::kNormal;
    }
    case StmtKind::kIf: {
      const auto& s = static_cast<const IfStmt&>(stmt);
      for (const auto& [test, body] : s.branches) {
        auto value = eval(*test, frame);
        if (!value) return fail(value.error());
        if (value->truthy()) return exec_body(body, frame, out);
      }
      return exec_body(s.otherwise, frame, out);
    }
    case StmtKind::kFor: return exec_for(static_cast<const ForStmt&>(stmt), frame, out);
    case StmtKind::kSet: {
      const auto& s = static_cast<const SetStmt&>(stmt);
      auto value = eval(*s.value, frame);
      if (!value) return fail(value.error());
      if (auto r = assign(s.target, std::move(*value), frame); !r) return fail(r.error());
      return Flow::kNormal;
    }
    case StmtKind::kSetBlock: {
      const auto& s = static_cast<const SetBlockStmt&>(stmt);
      Frame inner;
      inner.parent = &frame;
      std::string text;
      auto flow = exec_body(s.body, inner, text);
      if (!flow) return fail(flow.error());
      Value value(std::move(text));
      if (s.filter) {
        auto filtered = eval_filter(static_cast<const FilterExpr&>(*s.filter), frame, &value);
        if (!filtered) return fail(filtered.error());
        value = std::move(*filtered);
      }
      if (auto r = assign(s.target, std::move(value), frame); !r) return fail(r.error());
      return Flow::kNormal;
    }
    case StmtKind::kMacro: {
      const auto& s = static_cast<const MacroStmt&>(stmt);
      frame.set(s.symbol, Value::function(std::make_shared<MacroFunction>(s, capture(frame))));
      return Flow::kNormal;
    }
    case StmtKind::kCallBlock: {
      const auto& s = static_cast<const CallBlockStmt&>(stmt);
      auto callee = eval(*s.call->callee, frame);
      if (!callee) return fail(callee.error());
      auto args = eval_args(s.call->args, frame);
      if (!args) return fail(args.error());
      const auto* macro = callee->is_function() ? dynamic_cast<const MacroFunction*>(&callee->as_function()) : nullptr;
      if (!macro) {
        return fail(
            located(*s.call, type_error(fmt::format("'{{% call %}}' needs a macro, got {}",
                                                    callee->is_undefined() ? std::string(callee->undefined_hint())
                                                                           : describe_target(*callee)))));
      }
      const Value caller = Value::function(std::make_shared<CallerFunction>(s, capture(frame)));
      call_pos_ = s.call->pos;
      auto result = macro->call_with_caller(*this, *args, caller);
      if (!result) return fail(result.error());
      result->append_str(out);
      return Flow::kNormal;
    }
    case StmtKind::kFilterBlock: {
      const auto& s = static_cast<const FilterBlockStmt&>(stmt);
      Frame inner;
      inner.parent = &frame;
      std::string text;
      auto flow = exec_body(s.body, inner, text);
      if (!flow) return fail(flow.error());
      const Value body_text(std::move(text));
      auto filtered = eval_filter(static_cast<const FilterExpr&>(*s.filter), frame, &body_text);
      if (!filtered) return fail(filtered.error());
      filtered->append_str(out);
      return Flow::kNormal;
    }
    case StmtKind::kWith: {
      const auto& s = static_cast<const WithStmt&>(stmt);
      Frame inner;
      inner.parent = &frame;
      for (const auto& [target, expr] : s.assignments) {
        auto value = eval(*expr, frame);
        if (!value) return fail(value.error());
        if (auto r = assign(target, std::move(*value), inner); !r) return fail(r.error());
      }
      return exec_body(s.body, inner, out);
    }
    case StmtKind::kScope: {
      Frame inner;
      inner.parent = &frame;
      auto flow = exec_body(static_cast<const ScopeStmt&>(stmt).body, inner, out);
      if (!flow) return flow;
      return Flow::kNormal;
    }
    case StmtKind::kBreak: return Flow::kBreak;
    case StmtKind::kContinue: return Flow::kContinue;
  }
  return fail(ErrorCode::kInternal, "unknown statement");
}

Result<Interp::Flow> Interp::exec_for(const ForStmt& stmt, Frame& frame, std::string& out) {
  auto iterable = eval(*stmt.iter, frame);
  if (!iterable) return fail(iterable.error());
  std::shared_ptr<const std::vector<Value>> items;
  if (iterable->is_sequence()) {
    // Alias the list's own storage: no copy.
    const auto* data = static_cast<const ListData*>(iterable->handle().get());
    items = std::shared_ptr<const std::vector<Value>>(iterable->handle(), &data->items);
  } else {
    auto listed = iterate(*iterable);
    if (!listed) return fail(located(*stmt.iter, listed.error()));
    items = std::make_shared<const std::vector<Value>>(std::move(*listed));
  }
  Frame body;
  body.parent = &frame;
  if (stmt.filter) {
    std::vector<Value> kept;
    for (const auto& item : *items) {
      if (auto r = step(); !r) return fail(located(stmt.pos, r.error()));
      body.vars.clear();
      if (auto r = assign(stmt.target, item, body); !r) return fail(r.error());
      auto test = eval(*stmt.filter, body);
      if (!test) return fail(test.error());
      if (test->truthy()) kept.push_back(item);
    }
    items = std::make_shared<const std::vector<Value>>(std::move(kept));
  }
  auto loop = std::make_shared<LoopObject>(items);
  const Value loop_value = Value::object(loop);
  for (size_t index = 0; index < items->size(); ++index) {
    if (auto r = step(); !r) return fail(located(stmt.pos, r.error()));
    body.vars.clear();
    body.set(program_.loop_symbol, loop_value);
    if (auto r = assign(stmt.target, (*items)[index], body); !r) return fail(r.error());
    loop->set_index(index);
    auto flow = exec_body(stmt.body, body, out);
    if (!flow) return flow;
    if (*flow == Flow::kBreak) break;
  }
  if (items->empty() && !stmt.otherwise.empty()) {
    Frame inner;
    inner.parent = &frame;
    auto flow = exec_body(stmt.otherwise, inner, out);
    if (!flow) return flow;
  }
  return Flow::kNormal;
}

Result<void> Interp::assign(const Target& target, Value value, Frame& frame) {
  // Bounds the nesting a template can build up through repeated assignments (recursive repr,
  // ==, tojson and destructors stay shallow).
  constexpr uint32_t kMaxValueDepth = 256;
  if (value_depth(value) > kMaxValueDepth) {
    return fail(located(target.pos, type_error(fmt::format("value nested more than {} levels deep", kMaxValueDepth))));
  }
  switch (target.kind) {
    case Target::Kind::kName: frame.set(target.symbol, std::move(value)); return {};
    case Target::Kind::kAttribute: {
      const Value ns = lookup(target.symbol, frame);
      if (!ns.is_object() || !ns.as_object().set_attr(target.attr, std::move(value))) {
        return fail(located(target.pos, type_error(fmt::format("cannot assign attribute '{}' on '{}': only "
                                                               "namespace() objects take attribute assignments",
                                                               target.attr, program_.symbols[target.symbol]))));
      }
      return {};
    }
    case Target::Kind::kTuple: {
      auto items = iterate(value);
      if (!items) {
        return fail(
            located(target.pos, type_error(fmt::format("cannot unpack non-iterable {} object", value.type_name()))));
      }
      if (items->size() != target.items.size()) {
        return fail(located(
            target.pos, type_error(items->size() < target.items.size()
                                       ? fmt::format("not enough values to unpack (expected {}, got {})",
                                                     target.items.size(), items->size())
                                       : fmt::format("too many values to unpack (expected {})", target.items.size()))));
      }
      for (size_t index = 0; index < items->size(); ++index) {
        if (auto r = assign(target.items[index], std::move((*items)[index]), frame); !r) return r;
      }
      return {};
    }
  }
  return {};
}

// ---- macros ----

namespace {

struct DepthCounter {
  explicit DepthCounter(int& d) : depth(d) { ++depth; }
  ~DepthCounter() { --depth; }
  int& depth;
};

}  // namespace

Result<Value> Interp::call_macro(const MacroStmt& macro, const std::vector<std::pair<Symbol, Value>>& captured,
                                 CallArgs& args, const Value& caller) {
  if (call_depth_ >= kMaxCallDepth) {
    return fail(located(macro.pos, type_error(fmt::format("macro '{}': maximum recursion depth ({}) exceeded",
                                                          macro.name, kMaxCallDepth))));
  }
  DepthCounter depth(call_depth_);
  const Pos call_pos = call_pos_;
  if (auto r = step(); !r) return fail(located(call_pos, r.error()));
  Frame frame;
  frame.parent = &top_;
  frame.vars = captured;
  const auto& params = macro.params;
  if (args.args.size() > params.size() && !macro.uses_varargs) {
    return fail(located(
        call_pos, type_error(fmt::format("macro '{}' takes not more than {} argument(s)", macro.name, params.size()))));
  }
  std::vector<bool> given(params.size());
  for (size_t index = 0; index < params.size() && index < args.args.size(); ++index) {
    frame.set(params[index].symbol, std::move(args.args[index]));
    given[index] = true;
  }
  std::vector<DictEntry> extra_kwargs;
  for (auto& [key, value] : args.kwargs) {
    size_t index = 0;
    while (index < params.size() && params[index].name != key) ++index;
    if (index == params.size()) {
      if (key == "caller" && macro.uses_caller) continue;
      if (!macro.uses_kwargs) {
        return fail(
            located(call_pos, type_error(fmt::format("macro '{}' takes no keyword argument '{}'", macro.name, key))));
      }
      extra_kwargs.emplace_back(Value(key), std::move(value));
      continue;
    }
    if (given[index]) {
      return fail(located(
          call_pos, type_error(fmt::format("macro '{}' got multiple values for argument '{}'", macro.name, key))));
    }
    frame.set(params[index].symbol, std::move(value));
    given[index] = true;
  }
  for (size_t index = 0; index < params.size(); ++index) {
    if (given[index]) continue;
    if (params[index].default_value) {
      auto value = eval(*params[index].default_value, frame);
      if (!value) return fail(value.error());
      frame.set(params[index].symbol, std::move(*value));
    } else {
      frame.set(params[index].symbol,
                Value::undefined(fmt::format("parameter '{}' was not provided", params[index].name)));
    }
  }
  if (macro.uses_varargs) {
    std::vector<Value> rest;
    for (size_t index = params.size(); index < args.args.size(); ++index) rest.push_back(std::move(args.args[index]));
    frame.set(program_.varargs_symbol, Value::tuple(std::move(rest)));
  }
  if (macro.uses_kwargs) frame.set(program_.kwargs_symbol, Value::dict(std::move(extra_kwargs)));
  if (macro.uses_caller) {
    frame.set(program_.caller_symbol, caller.is_undefined()
                                          ? Value::undefined("'caller' is undefined (the macro was not called from a "
                                                             "'{% call %}' block)")
                                          : caller);
  }
  std::string out;
  auto flow = exec_body(macro.body, frame, out);
  if (!flow) return fail(flow.error());
  return Value(std::move(out));
}

Result<Value> Interp::call_caller(const CallBlockStmt& block, const std::vector<std::pair<Symbol, Value>>& captured,
                                  CallArgs& args) {
  if (call_depth_ >= kMaxCallDepth) {
    return fail(located(block.pos, type_error("caller(): maximum recursion depth exceeded")));
  }
  DepthCounter depth(call_depth_);
  const Pos call_pos = call_pos_;
  Frame frame;
  frame.parent = &top_;
  frame.vars = captured;
  const auto& params = block.params;
  if (args.args.size() > params.size() && !block.uses_varargs) {
    return fail(
        located(call_pos, type_error(fmt::format("caller() takes not more than {} argument(s)", params.size()))));
  }
  std::vector<bool> given(params.size());
  for (size_t index = 0; index < params.size() && index < args.args.size(); ++index) {
    frame.set(params[index].symbol, std::move(args.args[index]));
    given[index] = true;
  }
  std::vector<DictEntry> extra_kwargs;
  for (auto& [key, value] : args.kwargs) {
    size_t index = 0;
    while (index < params.size() && params[index].name != key) ++index;
    if (index == params.size()) {
      if (!block.uses_kwargs) {
        return fail(located(call_pos, type_error(fmt::format("caller() takes no keyword argument '{}'", key))));
      }
      extra_kwargs.emplace_back(Value(key), std::move(value));
      continue;
    }
    frame.set(params[index].symbol, std::move(value));
    given[index] = true;
  }
  for (size_t index = 0; index < params.size(); ++index) {
    if (given[index]) continue;
    if (params[index].default_value) {
      auto value = eval(*params[index].default_value, frame);
      if (!value) return fail(value.error());
      frame.set(params[index].symbol, std::move(*value));
    } else {
      frame.set(params[index].symbol,
                Value::undefined(fmt::format("parameter '{}' was not provided", params[index].name)));
    }
  }
  if (block.uses_varargs) {
    std::vector<Value> rest;
    for (size_t index = params.size(); index < args.args.size(); ++index) rest.push_back(std::move(args.args[index]));
    frame.set(program_.varargs_symbol, Value::tuple(std::move(rest)));
  }
  if (block.uses_kwargs) frame.set(program_.kwargs_symbol, Value::dict(std::move(extra_kwargs)));
  std::string out;
  auto flow = exec_body(block.body, frame, out);
  if (!flow) return fail(flow.error());
  return Value(std::move(out));
}

// ---- expressions ----

Result<CallArgs> Interp::eval_args(const Arguments& args, Frame& frame) {
  CallArgs out;
  out.args.reserve(args.positional.size());
  for (const auto& arg : args.positional) {
    auto value = eval(*arg, frame);
    if (!value) return fail(value.error());
    out.args.push_back(std::move(*value));
  }
  if (args.star) {
    auto value = eval(*args.star, frame);
    if (!value) return fail(value.error());
    auto items = iterate(*value);
    if (!items) return fail(located(*args.star, items.error()));
    for (auto& item : *items) out.args.push_back(std::move(item));
  }
  for (const auto& [key, arg] : args.keywords) {
    auto value = eval(*arg, frame);
    if (!value) return fail(value.error());
    out.kwargs.emplace_back(key, std::move(*value));
  }
  if (args.double_star) {
    auto value = eval(*args.double_star, frame);
    if (!value) return fail(value.error());
    if (!value->is_dict()) {
      return fail(located(*args.double_star,
                          type_error(fmt::format("argument after ** must be a mapping, not {}", value->type_name()))));
    }
    for (const auto& [key, item] : value->entries()) {
      if (!key.is_string()) return fail(located(*args.double_star, type_error("keywords must be strings")));
      out.kwargs.emplace_back(key.as_string(), item);
    }
  }
  for (size_t i = 0; i < out.kwargs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (out.kwargs[i].first == out.kwargs[j].first) {
        return fail(type_error(fmt::format("got multiple values for keyword argument '{}'", out.kwargs[i].first)));
      }
    }
  }
  return out;
}

Result<Value> Interp::call(const Value& callee, CallArgs& args) {
  if (callee.is_function()) {
    if (auto r = step(); !r) return fail(r.error());
    return callee.as_function().call(*this, args);
  }
  if (callee.is_undefined()) return fail(undefined_error(callee));
  return fail(type_error(fmt::format("'{}' object is not callable", callee.type_name())));
}

Result<Value> Interp::eval_call(const CallExpr& expr, Frame& frame) {
  // obj.method(...) on str/list/dict dispatches directly, without a bound-method value.
  if (expr.callee->kind == ExprKind::kGetattr) {
    const auto& getattr_expr = static_cast<const GetattrExpr&>(*expr.callee);
    auto object = eval(*getattr_expr.object, frame);
    if (!object) return fail(object.error());
    if (method_kind(*object, getattr_expr.attr) == MethodKind::kMethod) {
      auto args = eval_args(expr.args, frame);
      if (!args) return fail(args.error());
      auto result = call_method(*this, *object, getattr_expr.attr, *args);
      if (!result) return fail(located(expr, result.error()));
      return result;
    }
    auto callee = getattr(*object, getattr_expr.attr);
    if (!callee) return fail(located(getattr_expr, callee.error()));
    auto args = eval_args(expr.args, frame);
    if (!args) return fail(args.error());
    call_pos_ = expr.pos;
    auto result = call(*callee, *args);
    if (!result) {
      if (callee->is_function() && callee->as_function().reports_position()) return result;
      return fail(located(expr, result.error()));
    }
    return result;
  }
  auto callee = eval(*expr.callee, frame);
  if (!callee) return fail(callee.error());
  auto args = eval_args(expr.args, frame);
  if (!args) return fail(args.error());
  call_pos_ = expr.pos;
  auto result = call(*callee, *args);
  if (!result) {
    if (callee->is_function() && callee->as_function().reports_position()) return result;
    return fail(located(expr, result.error()));
  }
  return result;
}

Result<Value> Interp::eval_filter(const FilterExpr& expr, Frame& frame, const Value* block_text) {
  Value operand;
  if (expr.operand) {
    auto value = expr.operand->kind == ExprKind::kFilter
                     ? eval_filter(static_cast<const FilterExpr&>(*expr.operand), frame, block_text)
                     : eval(*expr.operand, frame);
    if (!value) return fail(value.error());
    operand = std::move(*value);
  } else if (block_text) {
    operand = *block_text;
  }
  auto args = eval_args(expr.args, frame);
  if (!args) return fail(args.error());
  auto result = expr.fn(*this, operand, *args);
  if (!result) return fail(located(expr, result.error()));
  return result;
}

Result<Value> Interp::filter_by_name(std::string_view name, const Value& operand, CallArgs& args) {
  const FilterFn fn = find_filter(name);
  if (!fn) return fail(type_error(fmt::format("no filter named '{}'", name)));
  return fn(*this, operand, args);
}

Result<bool> Interp::test_by_name(std::string_view name, const Value& operand, CallArgs& args) {
  const TestFn fn = find_test(name);
  if (!fn) return fail(type_error(fmt::format("no test named '{}'", name)));
  return fn(*this, operand, args);
}

Result<Value> Interp::eval(const Expr& expr, Frame& frame) {
  switch (expr.kind) {
    case ExprKind::kLiteral: return static_cast<const LiteralExpr&>(expr).value;
    case ExprKind::kName: return lookup(static_cast<const NameExpr&>(expr).symbol, frame);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      const auto& e = static_cast<const SequenceExpr&>(expr);
      std::vector<Value> items;
      items.reserve(e.items.size());
      for (const auto& item : e.items) {
        auto value = eval(*item, frame);
        if (!value) return fail(value.error());
        items.push_back(std::move(*value));
      }
      return expr.kind == ExprKind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::kDict: {
      const auto& e = static_cast<const DictExpr&>(expr);
      std::vector<DictEntry> entries;
      entries.reserve(e.entries.size());
      for (const auto& [key_expr, value_expr] : e.entries) {
        auto key = eval(*key_expr, frame);
        if (!key) return fail(key.error());
        if (key->is_list() || key->is_dict() || key->is_undefined()) {
          if (key->is_undefined()) return fail(located(*key_expr, undefined_error(*key)));
          return fail(located(*key_expr, type_error(fmt::format("unhashable type: '{}'", key->type_name()))));
        }
        auto value = eval(*value_expr, frame);
        if (!value) return fail(value.error());
        entries.emplace_back(std::move(*key), std::move(*value));
      }
      return Value::dict(std::move(entries));
    }
    case ExprKind::kUnary: {
      const auto& e = static_cast<const UnaryExpr&>(expr);
      auto operand = eval(*e.operand, frame);
      if (!operand) return fail(operand.error());
      if (e.op == UnaryOp::kNot) return Value(!operand->truthy());
      auto result = unary_op(e.op, *operand);
      if (!result) return fail(located(expr, result.error()));
      return result;
    }
    case ExprKind::kBinary: {
      const auto& e = static_cast<const BinaryExpr&>(expr);
      auto left = eval(*e.left, frame);
      if (!left) return fail(left.error());
      if (e.op == BinaryOp::kAnd) return left->truthy() ? eval(*e.right, frame) : left;
      if (e.op == BinaryOp::kOr) return left->truthy() ? left : eval(*e.right, frame);
      auto right = eval(*e.right, frame);
      if (!right) return fail(right.error());
      auto result = binary_op(e.op, *left, *right, options_.max_output_bytes);
      if (!result) return fail(located(expr, result.error()));
      return result;
    }
    case ExprKind::kCompare: {
      const auto& e = static_cast<const CompareExpr&>(expr);
      auto left = eval(*e.left, frame);
      if (!left) return fail(left.error());
      Value current = std::move(*left);
      for (const auto& [op, operand] : e.ops) {
        auto right = eval(*operand, frame);
        if (!right) return fail(right.error());
        if ((op == CompareOp::kIn || op == CompareOp::kNotIn) && right->is_sequence()) {
          // A linear scan: charged, so a loop of membership tests over a long list stays bounded.
          if (auto r = step(1 + right->items().size() / 16); !r) return fail(located(*operand, r.error()));
        }
        auto result = compare_op(op, current, *right);
        if (!result) return fail(located(*operand, result.error()));
        if (!*result) return Value(false);
        current = std::move(*right);
      }
      return Value(true);
    }
    case ExprKind::kCondition: {
      const auto& e = static_cast<const ConditionExpr&>(expr);
      auto test = eval(*e.test, frame);
      if (!test) return fail(test.error());
      if (test->truthy()) return eval(*e.then, frame);
      if (e.otherwise) return eval(*e.otherwise, frame);
      return Value::undefined(fmt::format("the inline if-expression at {}:{} evaluated to false and has no else",
                                          expr.pos.line, expr.pos.column));
    }
    case ExprKind::kGetattr: {
      const auto& e = static_cast<const GetattrExpr&>(expr);
      auto object = eval(*e.object, frame);
      if (!object) return fail(object.error());
      auto result = getattr(*object, e.attr);
      if (!result) return fail(located(expr, result.error()));
      return result;
    }
    case ExprKind::kGetitem: {
      const auto& e = static_cast<const GetitemExpr&>(expr);
      auto object = eval(*e.object, frame);
      if (!object) return fail(object.error());
      if (e.index->kind == ExprKind::kSlice) {
        const auto& s = static_cast<const SliceExpr&>(*e.index);
        Value bounds[3] = {Value::none(), Value::none(), Value::none()};
        const Expr* parts[3] = {s.start.get(), s.stop.get(), s.step.get()};
        for (int index = 0; index < 3; ++index) {
          if (!parts[index]) continue;
          auto value = eval(*parts[index], frame);
          if (!value) return fail(value.error());
          bounds[index] = std::move(*value);
        }
        if (object->is_undefined()) return fail(located(expr, undefined_error(*object)));
        auto result = slice_value(*object, bounds[0], bounds[1], bounds[2]);
        if (!result) return fail(located(expr, result.error()));
        return result;
      }
      auto key = eval(*e.index, frame);
      if (!key) return fail(key.error());
      auto result = getitem(*object, *key);
      if (!result) return fail(located(expr, result.error()));
      return result;
    }
    case ExprKind::kSlice: return fail(located(expr, type_error("a slice is only valid inside []")));
    case ExprKind::kCall: return eval_call(static_cast<const CallExpr&>(expr), frame);
    case ExprKind::kFilter: return eval_filter(static_cast<const FilterExpr&>(expr), frame, nullptr);
    case ExprKind::kTest: {
      const auto& e = static_cast<const TestExpr&>(expr);
      auto operand = eval(*e.operand, frame);
      if (!operand) return fail(operand.error());
      auto args = eval_args(e.args, frame);
      if (!args) return fail(args.error());
      auto result = e.fn(*this, *operand, *args);
      if (!result) return fail(located(expr, result.error()));
      return Value(*result);
    }
  }
  return fail(ErrorCode::kInternal, "unknown expression");
}

// ---- attribute and item access (Jinja2's SandboxedEnvironment) ----

Result<Value> Interp::getattr(const Value& object, std::string_view attr) {
  if (object.is_undefined()) return fail(undefined_error(object));
  if (!attr.empty() && attr.front() == '_') {
    return Value::undefined(fmt::format("access to attribute '{}' of '{}' object is unsafe", attr, object.type_name()));
  }
  switch (method_kind(object, attr)) {
    case MethodKind::kMethod: return bound_method(object, attr);
    case MethodKind::kUnsafe:
      return Value::undefined(
          fmt::format("access to attribute '{}' of '{}' object is unsafe (chat templates render "
                      "in an immutable sandbox: lists and dicts cannot be modified)",
                      attr, object.type_name()));
    case MethodKind::kNone: break;
  }
  if (object.is_object()) return object.as_object().get_attr(attr);
  if (object.is_dict()) {
    if (const Value* found = object.find(attr)) return *found;
  }
  if (object.is_none()) return Value::undefined(fmt::format("'None' has no attribute '{}'", attr));
  return Value::undefined(fmt::format("'{} object' has no attribute '{}'", object.type_name(), attr));
}

Result<Value> Interp::getitem(const Value& object, const Value& key) {
  if (object.is_undefined()) return fail(undefined_error(object));
  if (key.is_undefined()) return fail(undefined_error(key));
  if (object.is_dict()) {
    if (!key.is_list() && !key.is_dict()) {
      const auto* data = static_cast<const DictData*>(object.handle().get());
      if (const Value* found = data->find(key)) return *found;
    }
  } else if ((object.is_sequence() || object.is_string()) && (key.is_int() || key.is_bool())) {
    const int64_t index = key.as_int();
    if (object.is_string()) {
      if (auto c = py::char_at(object.as_string(), index)) return Value(std::move(*c));
    } else {
      const auto items = object.items();
      const auto size = static_cast<int64_t>(items.size());
      const int64_t at = index < 0 ? index + size : index;
      if (at >= 0 && at < size) return items[static_cast<size_t>(at)];
    }
    return Value::undefined(fmt::format("'{} object' has no element {}", object.type_name(), index));
  }
  if (key.is_string()) {
    auto attr = getattr(object, key.as_string());
    if (!attr) return attr;
    return attr;
  }
  return Value::undefined(fmt::format("'{} object' has no element {}", object.type_name(), key.repr()));
}

// ---- Template ----

Result<Template> Template::parse(std::string_view source, std::string_view name) {
  auto program = parse_program(source, name);
  if (!program) return fail(program.error());
  return Template(std::move(*program));
}

Result<std::string> Template::render(const Value& variables, const RenderOptions& options) const {
  if (!variables.is_dict() && !variables.is_undefined() && !variables.is_none()) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}: render() takes a dict of variables, not {}", program_->name, variables.type_name()));
  }
  Interp interp(*program_, options, variables);
  return interp.run();
}

const std::string& Template::name() const {
  return program_->name;
}

}  // namespace ix::jinja
