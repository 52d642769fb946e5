// The parsed template: an immutable tree of statements and expressions. Internal to jinja/.
//
// Names are interned into symbols (indexes into Program::symbols) at parse time, so variable
// lookup during rendering compares integers. Filters and tests are resolved to their functions at
// parse time (an unknown one is a parse error, as in Jinja2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "jinja/internal.h"

namespace ix::jinja {

using Symbol = uint32_t;

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Filter and test implementations (builtins.cc).
using FilterFn = Result<Value> (*)(Interp& interp, const Value& operand, CallArgs& args);
using TestFn = Result<bool> (*)(Interp& interp, const Value& operand, CallArgs& args);

enum class ExprKind : uint8_t {
  kLiteral,
  kName,
  kList,
  kTuple,
  kDict,
  kUnary,
  kBinary,
  kCompare,
  kCondition,
  kGetattr,
  kGetitem,
  kSlice,
  kCall,
  kFilter,
  kTest,
};

enum class UnaryOp : uint8_t { kNeg, kPos, kNot };
enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat, kAnd, kOr };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  explicit Expr(ExprKind k, Pos p) : kind(k), pos(p) {}
  virtual ~Expr() = default;
  ExprKind kind;
  Pos pos;
};

struct LiteralExpr : Expr {
  LiteralExpr(Pos p, Value v) : Expr(ExprKind::kLiteral, p), value(std::move(v)) {}
  Value value;
};

struct NameExpr : Expr {
  NameExpr(Pos p, Symbol s) : Expr(ExprKind::kName, p), symbol(s) {}
  Symbol symbol;
};

// kList / kTuple.
struct SequenceExpr : Expr {
  SequenceExpr(ExprKind k, Pos p) : Expr(k, p) {}
  std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
  explicit DictExpr(Pos p) : Expr(ExprKind::kDict, p) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
};

struct UnaryExpr : Expr {
  UnaryExpr(Pos p, UnaryOp o, ExprPtr x) : Expr(ExprKind::kUnary, p), op(o), operand(std::move(x)) {}
  UnaryOp op;
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  BinaryExpr(Pos p, BinaryOp o, ExprPtr l, ExprPtr r)
      : Expr(ExprKind::kBinary, p), op(o), left(std::move(l)), right(std::move(r)) {}
  BinaryOp op;
  ExprPtr left;
  ExprPtr right;
};

// a < b < c (chained, as Python and Jinja2 evaluate it).
struct CompareExpr : Expr {
  CompareExpr(Pos p, ExprPtr first) : Expr(ExprKind::kCompare, p), left(std::move(first)) {}
  ExprPtr left;
  std::vector<std::pair<CompareOp, ExprPtr>> ops;
};

// `a if test else b` (b may be null: Undefined).
struct ConditionExpr : Expr {
  explicit ConditionExpr(Pos p) : Expr(ExprKind::kCondition, p) {}
  ExprPtr test;
  ExprPtr then;
  ExprPtr otherwise;
};

struct GetattrExpr : Expr {
  GetattrExpr(Pos p, ExprPtr o, std::string a)
      : Expr(ExprKind::kGetattr, p), object(std::move(o)), attr(std::move(a)) {}
  ExprPtr object;
  std::string attr;
};

struct GetitemExpr : Expr {
  GetitemExpr(Pos p, ExprPtr o, ExprPtr i) : Expr(ExprKind::kGetitem, p), object(std::move(o)), index(std::move(i)) {}
  ExprPtr object;
  ExprPtr index;  // a SliceExpr for a[b:c:d]
};

struct SliceExpr : Expr {
  explicit SliceExpr(Pos p) : Expr(ExprKind::kSlice, p) {}
  ExprPtr start;
  ExprPtr stop;
  ExprPtr step;
};

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  ExprPtr star;         // *args
  ExprPtr double_star;  // **kwargs
  bool empty() const { return positional.empty() && keywords.empty() && !star && !double_star; }
};

struct CallExpr : Expr {
  CallExpr(Pos p, ExprPtr c) : Expr(ExprKind::kCall, p), callee(std::move(c)) {}
  ExprPtr callee;
  Arguments args;
};

struct FilterExpr : Expr {
  FilterExpr(Pos p, ExprPtr x, std::string n, FilterFn f)
      : Expr(ExprKind::kFilter, p), operand(std::move(x)), name(std::move(n)), fn(f) {}
  ExprPtr operand;  // null inside {% filter %} and {% set x | f %}: the block's text
  std::string name;
  FilterFn fn;
  Arguments args;
};

struct TestExpr : Expr {
  TestExpr(Pos p, ExprPtr x, std::string n, TestFn f)
      : Expr(ExprKind::kTest, p), operand(std::move(x)), name(std::move(n)), fn(f) {}
  ExprPtr operand;
  std::string name;
  TestFn fn;
  Arguments args;
};

// Assignment targets: a name, a namespace attribute (ns.attr) or a tuple of targets.
struct Target {
  enum class Kind : uint8_t { kName, kAttribute, kTuple } kind = Kind::kName;
  Pos pos;
  Symbol symbol = 0;          // kName, and the namespace variable of kAttribute
  std::string attr;           // kAttribute
  std::vector<Target> items;  // kTuple
};

enum class StmtKind : uint8_t {
  kText,
  kOutput,
  kIf,
  kFor,
  kSet,
  kSetBlock,
  kMacro,
  kCallBlock,
  kFilterBlock,
  kWith,
  kScope,  // {% generation %}, {% autoescape %}: the body as is
  kBreak,
  kContinue,
};

struct Stmt {
  Stmt(StmtKind k, Pos p) : kind(k), pos(p) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  Pos pos;
};

struct TextStmt : Stmt {
  TextStmt(Pos p, std::string t) : Stmt(StmtKind::kText, p), text(std::move(t)) {}
  std::string text;
};

struct OutputStmt : Stmt {
  OutputStmt(Pos p, ExprPtr e) : Stmt(StmtKind::kOutput, p), expr(std::move(e)) {}
  ExprPtr expr;
};

struct IfStmt : Stmt {
  explicit IfStmt(Pos p) : Stmt(StmtKind::kIf, p) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
  Body otherwise;
};

struct ForStmt : Stmt {
  explicit ForStmt(Pos p) : Stmt(StmtKind::kFor, p) {}
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // `for x in xs if test`
  Body body;
  Body otherwise;
  bool recursive = false;
};

struct SetStmt : Stmt {
  explicit SetStmt(Pos p) : Stmt(StmtKind::kSet, p) {}
  Target target;
  ExprPtr value;
};

struct SetBlockStmt : Stmt {
  explicit SetBlockStmt(Pos p) : Stmt(StmtKind::kSetBlock, p) {}
  Target target;
  ExprPtr filter;  // a FilterExpr chain whose innermost operand is null, or null
  Body body;
};

struct MacroParam {
  Symbol symbol = 0;
  std::string name;
  ExprPtr default_value;
};

struct MacroStmt : Stmt {
  explicit MacroStmt(Pos p) : Stmt(StmtKind::kMacro, p) {}
  Symbol symbol = 0;
  std::string name;
  std::vector<MacroParam> params;
  Body body;
  bool uses_caller = false;
  bool uses_varargs = false;
  bool uses_kwargs = false;
};

struct CallBlockStmt : Stmt {
  explicit CallBlockStmt(Pos p) : Stmt(StmtKind::kCallBlock, p) {}
  std::unique_ptr<CallExpr> call;
  std::vector<MacroParam> params;  // of caller()
  Body body;
  bool uses_varargs = false;
  bool uses_kwargs = false;
};

struct FilterBlockStmt : Stmt {
  explicit FilterBlockStmt(Pos p) : Stmt(StmtKind::kFilterBlock, p) {}
  ExprPtr filter;  // FilterExpr chain with a null innermost operand
  Body body;
};

struct WithStmt : Stmt {
  explicit WithStmt(Pos p) : Stmt(StmtKind::kWith, p) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};

struct ScopeStmt : Stmt {
  explicit ScopeStmt(Pos p) : Stmt(StmtKind::kScope, p) {}
  Body body;
};

struct Program {
  std::string name;
  Body body;
  std::vector<std::string> symbols;
  // Per symbol: the builtin global of that name (range, namespace, ...), or Undefined.
  std::vector<Value> globals;
  Symbol loop_symbol = 0;
  Symbol caller_symbol = 0;
  Symbol varargs_symbol = 0;
  Symbol kwargs_symbol = 0;
};

// Parses `source` into a Program. Errors: kParse "<name>:<line>:<column>: ...".
Result<std::shared_ptr<const Program>> parse_program(std::string_view source, std::string_view name);

// Builtin lookup for the parser and the interpreter (builtins.cc).
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
Value find_global(std::string_view name);

}  // namespace ix::jinja
