// The tree-walking renderer of one render() call, and the services builtins need from it
// (attribute lookup with Jinja2's sandbox rules, calling values, filters and tests by name).
// Internal to jinja/. One Interp per render() call: it is never shared between threads.
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/template.h"

namespace ix::jinja {

struct Frame {
  Frame* parent = nullptr;
  std::vector<std::pair<Symbol, Value>> vars;
  const Value* find(Symbol symbol) const {
    for (const auto& [s, v] : vars) {
      if (s == symbol) return &v;
    }
    return nullptr;
  }
  void set(Symbol symbol, Value value) {
    for (auto& [s, v] : vars) {
      if (s == symbol) {
        v = std::move(value);
        return;
      }
    }
    vars.emplace_back(symbol, std::move(value));
  }
};

class Interp {
 public:
  Interp(const Program& program, const RenderOptions& options, const Value& variables);

  Result<std::string> run();

  // ---- services for builtins ----
  // Jinja2's sandboxed environment.getattr / getitem: methods and attributes first (getattr) or
  // items first (getitem); missing ones are Undefined, unsafe ones (mutating methods,
  // underscore names) an Undefined that fails when used.
  Result<Value> getattr(const Value& object, std::string_view attr);
  Result<Value> getitem(const Value& object, const Value& key);
  // Calls a callable value (macro, global, bound method). Errors carry no position.
  Result<Value> call(const Value& callee, CallArgs& args);
  Result<Value> filter_by_name(std::string_view name, const Value& operand, CallArgs& args);
  Result<bool> test_by_name(std::string_view name, const Value& operand, CallArgs& args);
  const std::tm& now() const { return now_; }
  // Fails when a value about to be built would exceed the output limit.
  Result<void> check_size(size_t bytes) const;
  // Counts one unit of work (loop iteration, call), or `units` for a scan over many items; fails
  // past the step limit.
  Result<void> step(uint64_t units = 1);
  const Program& program() const { return program_; }
  size_t max_bytes() const { return options_.max_output_bytes; }
  // Keeps a namespace() object to release when the render ends.
  void adopt(std::shared_ptr<const Object> object) { adopted_.push_back(std::move(object)); }
  ~Interp();

  // ---- used by the macro and caller functions ----
  Result<Value> call_macro(const MacroStmt& macro, const std::vector<std::pair<Symbol, Value>>& captured,
                           CallArgs& args, const Value& caller);
  Result<Value> call_caller(const CallBlockStmt& block, const std::vector<std::pair<Symbol, Value>>& captured,
                            CallArgs& args);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Result<Flow> exec_body(const Body& body, Frame& frame, std::string& out);
  Result<Flow> exec(const Stmt& stmt, Frame& frame, std::string& out);
  Result<Flow> exec_for(const ForStmt& stmt, Frame& frame, std::string& out);
  Result<void> assign(const Target& target, Value value, Frame& frame);
  Result<Value> eval(const Expr& expr, Frame& frame);
  Result<Value> eval_call(const CallExpr& expr, Frame& frame);
  Result<CallArgs> eval_args(const Arguments& args, Frame& frame);
  Result<Value> eval_filter(const FilterExpr& expr, Frame& frame, const Value* block_text);
  Value lookup(Symbol symbol, const Frame& frame) const;
  std::vector<std::pair<Symbol, Value>> capture(const Frame& frame) const;
  Error located(const Expr& expr, const Error& error) const;
  Error located(Pos pos, const Error& error) const;

  const Program& program_;
  const RenderOptions& options_;
  std::vector<Value> context_;  // per symbol: the caller's variable, or Undefined
  std::vector<bool> has_context_;
  Frame top_;
  std::tm now_{};
  Pos call_pos_;  // where the call being made is written (for errors binding its arguments)
  std::vector<std::shared_ptr<const Object>> adopted_;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
};

}  // namespace ix::jinja
