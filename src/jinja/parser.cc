// Recursive-descent parser following Jinja2's grammar (jinja2/parser.py): the same operator
// precedence (`~` between + and *, filters and tests bind tighter than `**`, left-associative
// `**`), chained comparisons, `is` tests with a bare argument, implicit string concatenation,
// and the statements chat templates use.
#include <fmt/format.h>

#include <unordered_map>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace ix::jinja {
namespace {

constexpr int kMaxDepth = 200;

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string_view name, Program& program)
      : tokens_(std::move(tokens)), name_(name), program_(program) {
    program_.loop_symbol = intern("loop");
    program_.caller_symbol = intern("caller");
    program_.varargs_symbol = intern("varargs");
    program_.kwargs_symbol = intern("kwargs");
  }

  Result<Body> parse_template() {
    auto body = subparse({});
    if (!body) return fail(body.error());
    return body;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return tokens_[index_]; }
  const Token& look() const { return tokens_[std::min(index_ + 1, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& token = tokens_[index_];
    if (index_ + 1 < tokens_.size()) ++index_;
    return token;
  }
  bool at(Tok type) const { return cur().type == type; }
  bool at_name(std::string_view value) const { return cur().type == Tok::kName && cur().text == value; }
  bool skip_if(Tok type) {
    if (!at(type)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view value) {
    if (!at_name(value)) return false;
    next();
    return true;
  }

  Error error_at(Pos pos, std::string_view message) const {
    return Error(ErrorCode::kParse, fmt::format("{}:{}:{}: {}", name_, pos.line, pos.column, message));
  }
  Error unexpected(std::string_view expected) const {
    std::string message = fmt::format("expected {}, got {}", expected, describe(cur()));
    if (at(Tok::kEof) && !open_.empty()) {
      message += fmt::format(" (the '{}' at {}:{} is not closed)", open_.back().first, open_.back().second.line,
                             open_.back().second.column);
    }
    return error_at(cur().pos, message);
  }
  Result<const Token*> expect(Tok type, std::string_view what) {
    if (!at(type)) return fail(unexpected(what));
    return &next();
  }

  Symbol intern(const std::string& name) {
    auto [it, inserted] = symbol_index_.emplace(name, static_cast<Symbol>(program_.symbols.size()));
    if (inserted) program_.symbols.push_back(name);
    return it->second;
  }

  struct DepthGuard {
    explicit DepthGuard(int& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
    int& depth;
  };
  Result<void> check_depth() const {
    if (depth_ > kMaxDepth) return fail(error_at(cur().pos, "template nested too deeply"));
    return {};
  }

  // ---- statements ----

  // Template text and tags until a block tag whose name is in `end` (left as the current token,
  // just after its '{%'), or the end of the template when `end` is empty.
  Result<Body> subparse(std::initializer_list<std::string_view> end) {
    Body body;
    while (!at(Tok::kEof)) {
      if (at(Tok::kData)) {
        const Token& token = next();
        body.push_back(std::make_unique<TextStmt>(token.pos, token.text));
      } else if (at(Tok::kVariableBegin)) {
        const Pos pos = next().pos;
        auto expr = parse_tuple(false, true, {}, false);
        if (!expr) return fail(expr.error());
        if (auto r = expect(Tok::kVariableEnd, "'}}'"); !r) return fail(r.error());
        body.push_back(std::make_unique<OutputStmt>(pos, std::move(*expr)));
      } else if (at(Tok::kBlockBegin)) {
        next();
        if (at(Tok::kName)) {
          for (const auto name : end) {
            if (cur().text == name) return body;
          }
        }
        auto stmt = parse_statement();
        if (!stmt) return fail(stmt.error());
        if (*stmt) body.push_back(std::move(*stmt));
        if (auto r = expect(Tok::kBlockEnd, "'%}'"); !r) return fail(r.error());
      } else {
        return fail(unexpected("template text or a tag"));
      }
    }
    if (end.size() != 0) {
      std::string names;
      for (const auto name : end) names += (names.empty() ? "'" : " or '") + std::string(name) + "'";
      return fail(
          error_at(cur().pos, fmt::format("unexpected end of template: expected {} to close the '{}' at {}:{}", names,
                                          open_.back().first, open_.back().second.line, open_.back().second.column)));
    }
    return body;
  }

  // Expects the '%}' of the current tag, then the body up to one of `end`; with drop_needle the
  // end tag's name is consumed.
  Result<Body> parse_statements(std::initializer_list<std::string_view> end, bool drop_needle) {
    skip_if(Tok::kColon);
    if (auto r = expect(Tok::kBlockEnd, "'%}'"); !r) return fail(r.error());
    auto body = subparse(end);
    if (!body) return fail(body.error());
    if (drop_needle) next();
    return body;
  }

  Result<StmtPtr> parse_statement() {
    if (auto r = check_depth(); !r) return fail(r.error());
    DepthGuard guard(depth_);
    if (!at(Tok::kName)) return fail(unexpected("a tag name"));
    const Token& token = cur();
    const std::string& tag = token.text;
    if (tag == "for") return parse_for();
    if (tag == "if") return parse_if();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "with") return parse_with();
    if (tag == "generation" || tag == "autoescape") return parse_scope();
    if (tag == "print") {
      const Pos pos = next().pos;
      auto expr = parse_tuple(false, true, {}, false);
      if (!expr) return fail(expr.error());
      return StmtPtr(std::make_unique<OutputStmt>(pos, std::move(*expr)));
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) return fail(error_at(token.pos, fmt::format("'{}' outside a for loop", tag)));
      const Pos pos = next().pos;
      return StmtPtr(std::make_unique<Stmt>(tag == "break" ? StmtKind::kBreak : StmtKind::kContinue, pos));
    }
    if (tag == "block" || tag == "extends" || tag == "include" || tag == "import" || tag == "from") {
      return fail(Error(ErrorCode::kParse,
                        fmt::format("{}:{}:{}: '{{% {} %}}' is not supported: a chat template is a single file "
                                    "(ixbench's Jinja engine renders no template inheritance or includes)",
                                    name_, token.pos.line, token.pos.column, tag)));
    }
    const bool closing = tag.starts_with("end") || tag == "else" || tag == "elif";
    std::string message = closing && open_.empty() ? fmt::format("unexpected '{{% {} %}}': no open block to close", tag)
                                                   : fmt::format("unknown tag '{}'", tag);
    if (!open_.empty()) {
      message += fmt::format(" (the innermost open block is the '{}' at {}:{})", open_.back().first,
                             open_.back().second.line, open_.back().second.column);
    }
    return fail(error_at(token.pos, message));
  }

  struct OpenBlock {
    OpenBlock(Parser& p, std::string tag, Pos pos) : parser(p) { parser.open_.emplace_back(std::move(tag), pos); }
    ~OpenBlock() { parser.open_.pop_back(); }
    Parser& parser;
  };

  Result<StmtPtr> parse_for() {
    const Pos pos = next().pos;
    OpenBlock open(*this, "for", pos);
    auto stmt = std::make_unique<ForStmt>(pos);
    auto target = parse_assign_target(true, false, {"in"}, false);
    if (!target) return fail(target.error());
    stmt->target = std::move(*target);
    if (!skip_name("in")) return fail(unexpected("'in'"));
    auto iter = parse_tuple(false, false, {"recursive"}, false);
    if (!iter) return fail(iter.error());
    stmt->iter = std::move(*iter);
    if (skip_name("if")) {
      auto test = parse_expression(true);
      if (!test) return fail(test.error());
      stmt->filter = std::move(*test);
    }
    if (skip_name("recursive")) {
      return fail(error_at(pos, "recursive for loops are not supported by ixbench's Jinja engine"));
    }
    ++loop_depth_;
    auto body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (!body) return fail(body.error());
    stmt->body = std::move(*body);
    if (next().text == "else") {
      auto otherwise = parse_statements({"endfor"}, true);
      if (!otherwise) return fail(otherwise.error());
      stmt->otherwise = std::move(*otherwise);
    }
    return StmtPtr(std::move(stmt));
  }

  Result<StmtPtr> parse_if() {
    const Pos pos = next().pos;
    OpenBlock open(*this, "if", pos);
    auto stmt = std::make_unique<IfStmt>(pos);
    while (true) {
      auto test = parse_tuple(false, false, {}, false);
      if (!test) return fail(test.error());
      auto body = parse_statements({"elif", "else", "endif"}, false);
      if (!body) return fail(body.error());
      stmt->branches.emplace_back(std::move(*test), std::move(*body));
      const std::string tag = next().text;
      if (tag == "elif") continue;
      if (tag == "else") {
        auto otherwise = parse_statements({"endif"}, true);
        if (!otherwise) return fail(otherwise.error());
        stmt->otherwise = std::move(*otherwise);
      }
      break;
    }
    return StmtPtr(std::move(stmt));
  }

  Result<StmtPtr> parse_set() {
    const Pos pos = next().pos;
    auto target = parse_assign_target(true, false, {}, true);
    if (!target) return fail(target.error());
    if (skip_if(Tok::kAssign)) {
      auto stmt = std::make_unique<SetStmt>(pos);
      stmt->target = std::move(*target);
      auto value = parse_tuple(false, true, {}, false);
      if (!value) return fail(value.error());
      stmt->value = std::move(*value);
      return StmtPtr(std::move(stmt));
    }
    OpenBlock open(*this, "set", pos);
    auto stmt = std::make_unique<SetBlockStmt>(pos);
    stmt->target = std::move(*target);
    if (at(Tok::kPipe)) {
      auto filter = parse_filter(nullptr, false);
      if (!filter) return fail(filter.error());
      stmt->filter = std::move(*filter);
    }
    auto body = parse_statements({"endset"}, true);
    if (!body) return fail(body.error());
    stmt->body = std::move(*body);
    return StmtPtr(std::move(stmt));
  }

  Result<std::vector<MacroParam>> parse_signature() {
    std::vector<MacroParam> params;
    if (auto r = expect(Tok::kLParen, "'('"); !r) return fail(r.error());
    bool defaults = false;
    while (!at(Tok::kRParen)) {
      if (!params.empty()) {
        if (auto r = expect(Tok::kComma, "',' or ')'"); !r) return fail(r.error());
        if (at(Tok::kRParen)) break;
      }
      auto name = expect(Tok::kName, "a parameter name");
      if (!name) return fail(name.error());
      MacroParam param;
      param.name = (*name)->text;
      param.symbol = intern(param.name);
      for (const auto& other : params) {
        if (other.name == param.name) {
          return fail(error_at((*name)->pos, fmt::format("duplicate parameter '{}'", param.name)));
        }
      }
      if (skip_if(Tok::kAssign)) {
        auto value = parse_expression(true);
        if (!value) return fail(value.error());
        param.default_value = std::move(*value);
        defaults = true;
      } else if (defaults) {
        return fail(error_at((*name)->pos, "non-default argument follows default argument"));
      }
      params.push_back(std::move(param));
    }
    next();
    return params;
  }

  struct SpecialUse {
    bool caller = false;
    bool varargs = false;
    bool kwargs = false;
  };

  Result<StmtPtr> parse_macro() {
    const Pos pos = next().pos;
    OpenBlock open(*this, "macro", pos);
    auto stmt = std::make_unique<MacroStmt>(pos);
    auto name = expect(Tok::kName, "a macro name");
    if (!name) return fail(name.error());
    stmt->name = (*name)->text;
    stmt->symbol = intern(stmt->name);
    auto params = parse_signature();
    if (!params) return fail(params.error());
    stmt->params = std::move(*params);
    specials_.emplace_back();
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    auto body = parse_statements({"endmacro"}, true);
    loop_depth_ = saved_loops;
    const SpecialUse used = specials_.back();
    specials_.pop_back();
    if (!body) return fail(body.error());
    stmt->body = std::move(*body);
    stmt->uses_caller = used.caller;
    stmt->uses_varargs = used.varargs;
    stmt->uses_kwargs = used.kwargs;
    return StmtPtr(std::move(stmt));
  }

  Result<StmtPtr> parse_call_block() {
    const Pos pos = next().pos;
    OpenBlock open(*this, "call", pos);
    auto stmt = std::make_unique<CallBlockStmt>(pos);
    if (at(Tok::kLParen)) {
      auto params = parse_signature();
      if (!params) return fail(params.error());
      stmt->params = std::move(*params);
    }
    auto call = parse_expression(true);
    if (!call) return fail(call.error());
    if ((*call)->kind != ExprKind::kCall) return fail(error_at(pos, "expected a macro call after '{% call %}'"));
    stmt->call.reset(static_cast<CallExpr*>(call->release()));
    specials_.emplace_back();
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    auto body = parse_statements({"endcall"}, true);
    loop_depth_ = saved_loops;
    const SpecialUse used = specials_.back();
    specials_.pop_back();
    if (!body) return fail(body.error());
    stmt->body = std::move(*body);
    stmt->uses_varargs = used.varargs;
    stmt->uses_kwargs = used.kwargs;
    return StmtPtr(std::move(stmt));
  }

  Result<StmtPtr> parse_filter_block() {
    const Pos pos = next().pos;
    OpenBlock open(*this, "filter", pos);
    auto stmt = std::make_unique<FilterBlockStmt>(pos);
    auto filter = parse_filter(nullptr, true);
    if (!filter) return fail(filter.error());
    stmt->filter = std::move(*filter);
    auto body = parse_statements({"endfilter"}, true);
    if (!body) return fail(body.error());
    stmt->body = std::move(*body);
    return StmtPtr(std::move(stmt));
  }

  Result<StmtPtr> parse_with() {
    const Pos pos = next().pos;
    OpenBlock open(*this, "with", pos);
    auto stmt = std::make_unique<WithStmt>(pos);
    while (!at(Tok::kBlockEnd)) {
      if (!stmt->assignments.empty()) {
        if (auto r = expect(Tok::kComma, "','"); !r) return fail(r.error());
      }
      auto target = parse_assign_target(true, false, {}, false);
      if (!target) return fail(target.error());
      if (auto r = expect(Tok::kAssign, "'='"); !r) return fail(r.error());
      auto value = parse_expression(true);
      if (!value) return fail(value.error());
      stmt->assignments.emplace_back(std::move(*target), std::move(*value));
    }
    auto body = parse_statements({"endwith"}, true);
    if (!body) return fail(body.error());
    stmt->body = std::move(*body);
    return StmtPtr(std::move(stmt));
  }

  Result<StmtPtr> parse_scope() {
    const Token& token = next();
    const std::string tag = token.text;
    OpenBlock open(*this, tag, token.pos);
    if (tag == "autoescape") {
      auto option = parse_expression(true);  // autoescape is off in transformers; the option is ignored
      if (!option) return fail(option.error());
    }
    auto stmt = std::make_unique<ScopeStmt>(token.pos);
    const std::string end = "end" + tag;
    auto body = parse_statements({std::string_view(end)}, true);
    if (!body) return fail(body.error());
    stmt->body = std::move(*body);
    return StmtPtr(std::move(stmt));
  }

  // parse_assign_target of Jinja2.
  Result<Target> parse_assign_target(bool with_tuple, bool name_only, std::initializer_list<std::string_view> extra_end,
                                     bool with_namespace) {
    Target target;
    target.pos = cur().pos;
    if (with_namespace && at(Tok::kName) && look().type == Tok::kDot) {
      target.kind = Target::Kind::kAttribute;
      target.symbol = intern(next().text);
      next();
      auto attr = expect(Tok::kName, "an attribute name");
      if (!attr) return fail(attr.error());
      target.attr = (*attr)->text;
      return target;
    }
    if (name_only || !with_tuple) {
      auto name = expect(Tok::kName, "a name");
      if (!name) return fail(name.error());
      return name_target(**name);
    }
    // A (possibly parenthesised, possibly nested) tuple of names.
    std::vector<Target> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) {
        if (auto r = expect(Tok::kComma, "','"); !r) return fail(r.error());
      }
      if (tuple_end(extra_end)) break;
      auto item = parse_target_primary();
      if (!item) return fail(item.error());
      items.push_back(std::move(*item));
      if (at(Tok::kComma)) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (items.empty()) return fail(unexpected("an assignment target"));
    if (!is_tuple) return std::move(items.front());
    target.kind = Target::Kind::kTuple;
    target.items = std::move(items);
    return target;
  }

  Result<Target> parse_target_primary() {
    if (at(Tok::kLParen)) {
      next();
      auto inner = parse_assign_target(true, false, {}, false);
      if (!inner) return fail(inner.error());
      if (auto r = expect(Tok::kRParen, "')'"); !r) return fail(r.error());
      return inner;
    }
    if (!at(Tok::kName)) return fail(unexpected("a name to assign to"));
    return name_target(next());
  }

  Result<Target> name_target(const Token& token) {
    static constexpr std::string_view kConstants[] = {"true", "false", "none", "True", "False", "None"};
    for (const auto constant : kConstants) {
      if (token.text == constant) return fail(error_at(token.pos, fmt::format("cannot assign to '{}'", constant)));
    }
    Target target;
    target.kind = Target::Kind::kName;
    target.pos = token.pos;
    target.symbol = intern(token.text);
    return target;
  }

  bool tuple_end(std::initializer_list<std::string_view> extra_end) const {
    if (at(Tok::kVariableEnd) || at(Tok::kBlockEnd) || at(Tok::kRParen)) return true;
    for (const auto name : extra_end) {
      if (at_name(name)) return true;
    }
    return false;
  }

  // ---- expressions ----

  Result<ExprPtr> parse_tuple(bool simplified, bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                              bool explicit_parentheses) {
    const Pos pos = cur().pos;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) {
        if (auto r = expect(Tok::kComma, "','"); !r) return fail(r.error());
      }
      if (tuple_end(extra_end)) break;
      auto item = simplified ? parse_primary() : parse_expression(with_condexpr);
      if (!item) return fail(item.error());
      items.push_back(std::move(*item));
      if (at(Tok::kComma)) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items.front());
      if (!explicit_parentheses) return fail(unexpected("an expression"));
    }
    auto tuple = std::make_unique<SequenceExpr>(ExprKind::kTuple, pos);
    tuple->items = std::move(items);
    return ExprPtr(std::move(tuple));
  }

  Result<ExprPtr> parse_expression(bool with_condexpr) {
    if (auto r = check_depth(); !r) return fail(r.error());
    DepthGuard guard(depth_);
    if (!with_condexpr) return parse_or();
    auto expr = parse_or();
    if (!expr) return fail(expr.error());
    while (at_name("if")) {
      const Pos pos = next().pos;
      auto cond = std::make_unique<ConditionExpr>(pos);
      auto test = parse_or();
      if (!test) return fail(test.error());
      cond->test = std::move(*test);
      cond->then = std::move(*expr);
      if (skip_name("else")) {
        auto otherwise = parse_expression(true);
        if (!otherwise) return fail(otherwise.error());
        cond->otherwise = std::move(*otherwise);
      }
      *expr = std::move(cond);
    }
    return expr;
  }

  Result<ExprPtr> parse_or() {
    auto left = parse_and();
    if (!left) return fail(left.error());
    while (at_name("or")) {
      const Pos pos = next().pos;
      auto right = parse_and();
      if (!right) return fail(right.error());
      *left = std::make_unique<BinaryExpr>(pos, BinaryOp::kOr, std::move(*left), std::move(*right));
    }
    return left;
  }

  Result<ExprPtr> parse_and() {
    auto left = parse_not();
    if (!left) return fail(left.error());
    while (at_name("and")) {
      const Pos pos = next().pos;
      auto right = parse_not();
      if (!right) return fail(right.error());
      *left = std::make_unique<BinaryExpr>(pos, BinaryOp::kAnd, std::move(*left), std::move(*right));
    }
    return left;
  }

  Result<ExprPtr> parse_not() {
    if (at_name("not")) {
      if (auto r = check_depth(); !r) return fail(r.error());
      DepthGuard guard(depth_);
      const Pos pos = next().pos;
      auto operand = parse_not();
      if (!operand) return fail(operand.error());
      return ExprPtr(std::make_unique<UnaryExpr>(pos, UnaryOp::kNot, std::move(*operand)));
    }
    return parse_compare();
  }

  Result<ExprPtr> parse_compare() {
    const Pos pos = cur().pos;
    auto expr = parse_math1();
    if (!expr) return fail(expr.error());
    std::unique_ptr<CompareExpr> compare;
    while (true) {
      CompareOp op;
      if (at(Tok::kEq)) {
        op = CompareOp::kEq;
      } else if (at(Tok::kNe)) {
        op = CompareOp::kNe;
      } else if (at(Tok::kLt)) {
        op = CompareOp::kLt;
      } else if (at(Tok::kLe)) {
        op = CompareOp::kLe;
      } else if (at(Tok::kGt)) {
        op = CompareOp::kGt;
      } else if (at(Tok::kGe)) {
        op = CompareOp::kGe;
      } else if (at_name("in")) {
        op = CompareOp::kIn;
      } else if (at_name("not") && look().type == Tok::kName && look().text == "in") {
        next();
        op = CompareOp::kNotIn;
      } else {
        break;
      }
      next();
      auto right = parse_math1();
      if (!right) return fail(right.error());
      if (!compare) compare = std::make_unique<CompareExpr>(pos, std::move(*expr));
      compare->ops.emplace_back(op, std::move(*right));
    }
    if (compare) return ExprPtr(std::move(compare));
    return expr;
  }

  Result<ExprPtr> parse_math1() {
    auto left = parse_concat();
    if (!left) return fail(left.error());
    while (at(Tok::kAdd) || at(Tok::kSub)) {
      const Token& op = next();
      auto right = parse_concat();
      if (!right) return fail(right.error());
      *left = std::make_unique<BinaryExpr>(op.pos, op.type == Tok::kAdd ? BinaryOp::kAdd : BinaryOp::kSub,
                                           std::move(*left), std::move(*right));
    }
    return left;
  }

  Result<ExprPtr> parse_concat() {
    auto left = parse_math2();
    if (!left) return fail(left.error());
    while (at(Tok::kTilde)) {
      const Pos pos = next().pos;
      auto right = parse_math2();
      if (!right) return fail(right.error());
      *left = std::make_unique<BinaryExpr>(pos, BinaryOp::kConcat, std::move(*left), std::move(*right));
    }
    return left;
  }

  Result<ExprPtr> parse_math2() {
    auto left = parse_pow();
    if (!left) return fail(left.error());
    while (at(Tok::kMul) || at(Tok::kDiv) || at(Tok::kFloorDiv) || at(Tok::kMod)) {
      const Token& op = next();
      const BinaryOp kind = op.type == Tok::kMul   ? BinaryOp::kMul
                            : op.type == Tok::kDiv ? BinaryOp::kDiv
                            : op.type == Tok::kMod ? BinaryOp::kMod
                                                   : BinaryOp::kFloorDiv;
      auto right = parse_pow();
      if (!right) return fail(right.error());
      *left = std::make_unique<BinaryExpr>(op.pos, kind, std::move(*left), std::move(*right));
    }
    return left;
  }

  Result<ExprPtr> parse_pow() {
    auto left = parse_unary(true);
    if (!left) return fail(left.error());
    while (at(Tok::kPow)) {
      const Pos pos = next().pos;
      auto right = parse_unary(true);
      if (!right) return fail(right.error());
      *left = std::make_unique<BinaryExpr>(pos, BinaryOp::kPow, std::move(*left), std::move(*right));
    }
    return left;
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
    if (auto r = check_depth(); !r) return fail(r.error());
    DepthGuard guard(depth_);
    Result<ExprPtr> node = fail(ErrorCode::kInternal, "unset");
    if (at(Tok::kSub) || at(Tok::kAdd)) {
      const Token& op = next();
      auto operand = parse_unary(false);
      if (!operand) return fail(operand.error());
      node = ExprPtr(std::make_unique<UnaryExpr>(op.pos, op.type == Tok::kSub ? UnaryOp::kNeg : UnaryOp::kPos,
                                                 std::move(*operand)));
    } else {
      node = parse_primary();
      if (!node) return fail(node.error());
    }
    node = parse_postfix(std::move(*node));
    if (!node) return fail(node.error());
    if (with_filter) return parse_filter_expr(std::move(*node));
    return node;
  }

  Result<ExprPtr> parse_primary() {
    if (auto r = check_depth(); !r) return fail(r.error());
    DepthGuard guard(depth_);
    const Token& token = cur();
    switch (token.type) {
      case Tok::kName: {
        next();
        if (token.text == "true" || token.text == "True") return literal(token.pos, Value(true));
        if (token.text == "false" || token.text == "False") return literal(token.pos, Value(false));
        if (token.text == "none" || token.text == "None") return literal(token.pos, Value::none());
        const Symbol symbol = intern(token.text);
        note_special(symbol);
        return ExprPtr(std::make_unique<NameExpr>(token.pos, symbol));
      }
      case Tok::kString: {
        const Pos pos = token.pos;
        std::string text = next().text;
        while (at(Tok::kString)) text += next().text;
        return literal(pos, Value(std::move(text)));
      }
      case Tok::kInteger: next(); return literal(token.pos, Value(token.integer));
      case Tok::kFloat: next(); return literal(token.pos, Value(token.number));
      case Tok::kLParen: {
        next();
        auto inner = parse_tuple(false, true, {}, true);
        if (!inner) return fail(inner.error());
        if (auto r = expect(Tok::kRParen, "')'"); !r) return fail(r.error());
        return inner;
      }
      case Tok::kLBracket: {
        auto list = std::make_unique<SequenceExpr>(ExprKind::kList, next().pos);
        while (!at(Tok::kRBracket)) {
          if (!list->items.empty()) {
            if (auto r = expect(Tok::kComma, "',' or ']'"); !r) return fail(r.error());
            if (at(Tok::kRBracket)) break;
          }
          auto item = parse_expression(true);
          if (!item) return fail(item.error());
          list->items.push_back(std::move(*item));
        }
        next();
        return ExprPtr(std::move(list));
      }
      case Tok::kLBrace: {
        auto dict = std::make_unique<DictExpr>(next().pos);
        while (!at(Tok::kRBrace)) {
          if (!dict->entries.empty()) {
            if (auto r = expect(Tok::kComma, "',' or '}'"); !r) return fail(r.error());
            if (at(Tok::kRBrace)) break;
          }
          auto key = parse_expression(true);
          if (!key) return fail(key.error());
          if (auto r = expect(Tok::kColon, "':'"); !r) return fail(r.error());
          auto value = parse_expression(true);
          if (!value) return fail(value.error());
          dict->entries.emplace_back(std::move(*key), std::move(*value));
        }
        next();
        return ExprPtr(std::move(dict));
      }
      default: return fail(unexpected("an expression"));
    }
  }

  static Result<ExprPtr> literal(Pos pos, Value value) {
    return ExprPtr(std::make_unique<LiteralExpr>(pos, std::move(value)));
  }

  void note_special(Symbol symbol) {
    for (auto& use : specials_) {
      if (symbol == program_.caller_symbol) use.caller = true;
      if (symbol == program_.varargs_symbol) use.varargs = true;
      if (symbol == program_.kwargs_symbol) use.kwargs = true;
    }
  }

  Result<ExprPtr> parse_postfix(ExprPtr node) {
    while (true) {
      if (at(Tok::kDot) || at(Tok::kLBracket)) {
        auto subscript = parse_subscript(std::move(node));
        if (!subscript) return fail(subscript.error());
        node = std::move(*subscript);
      } else if (at(Tok::kLParen)) {
        auto call = parse_call(std::move(node));
        if (!call) return fail(call.error());
        node = std::move(*call);
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_filter_expr(ExprPtr node) {
    while (true) {
      if (at(Tok::kPipe)) {
        auto filtered = parse_filter(std::move(node), false);
        if (!filtered) return fail(filtered.error());
        node = std::move(*filtered);
      } else if (at_name("is")) {
        auto tested = parse_test(std::move(node));
        if (!tested) return fail(tested.error());
        node = std::move(*tested);
      } else if (at(Tok::kLParen)) {
        auto call = parse_call(std::move(node));
        if (!call) return fail(call.error());
        node = std::move(*call);
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_subscript(ExprPtr node) {
    const Token& token = next();
    if (token.type == Tok::kDot) {
      const Token& attr = cur();
      if (attr.type == Tok::kName) {
        next();
        return ExprPtr(std::make_unique<GetattrExpr>(attr.pos, std::move(node), attr.text));
      }
      if (attr.type != Tok::kInteger) return fail(unexpected("an attribute name or number after '.'"));
      next();
      return ExprPtr(std::make_unique<GetitemExpr>(attr.pos, std::move(node),
                                                   std::make_unique<LiteralExpr>(attr.pos, Value(attr.integer))));
    }
    // '['
    std::vector<ExprPtr> args;
    while (!at(Tok::kRBracket)) {
      if (!args.empty()) {
        if (auto r = expect(Tok::kComma, "',' or ']'"); !r) return fail(r.error());
      }
      auto arg = parse_subscribed();
      if (!arg) return fail(arg.error());
      args.push_back(std::move(*arg));
    }
    next();
    if (args.empty()) return fail(error_at(token.pos, "expected an index or slice inside '[]'"));
    ExprPtr index;
    if (args.size() == 1) {
      index = std::move(args.front());
    } else {
      auto tuple = std::make_unique<SequenceExpr>(ExprKind::kTuple, token.pos);
      tuple->items = std::move(args);
      index = std::move(tuple);
    }
    return ExprPtr(std::make_unique<GetitemExpr>(token.pos, std::move(node), std::move(index)));
  }

  Result<ExprPtr> parse_subscribed() {
    const Pos pos = cur().pos;
    auto slice = std::make_unique<SliceExpr>(pos);
    if (at(Tok::kColon)) {
      next();
    } else {
      auto start = parse_expression(true);
      if (!start) return fail(start.error());
      if (!at(Tok::kColon)) return start;
      next();
      slice->start = std::move(*start);
    }
    if (!at(Tok::kColon) && !at(Tok::kRBracket) && !at(Tok::kComma)) {
      auto stop = parse_expression(true);
      if (!stop) return fail(stop.error());
      slice->stop = std::move(*stop);
    }
    if (at(Tok::kColon)) {
      next();
      if (!at(Tok::kRBracket) && !at(Tok::kComma)) {
        auto step = parse_expression(true);
        if (!step) return fail(step.error());
        slice->step = std::move(*step);
      }
    }
    return ExprPtr(std::move(slice));
  }

  Result<Arguments> parse_call_args() {
    Arguments args;
    const Pos pos = cur().pos;
    if (auto r = expect(Tok::kLParen, "'('"); !r) return fail(r.error());
    bool require_comma = false;
    const auto invalid = [&] { return error_at(pos, "invalid syntax for function call arguments"); };
    while (!at(Tok::kRParen)) {
      if (require_comma) {
        if (auto r = expect(Tok::kComma, "',' or ')'"); !r) return fail(r.error());
        if (at(Tok::kRParen)) break;
      }
      if (at(Tok::kMul)) {
        if (args.star || args.double_star) return fail(invalid());
        next();
        auto value = parse_expression(true);
        if (!value) return fail(value.error());
        args.star = std::move(*value);
      } else if (at(Tok::kPow)) {
        if (args.double_star) return fail(invalid());
        next();
        auto value = parse_expression(true);
        if (!value) return fail(value.error());
        args.double_star = std::move(*value);
      } else if (at(Tok::kName) && look().type == Tok::kAssign) {
        if (args.double_star) return fail(invalid());
        std::string key = next().text;
        next();
        auto value = parse_expression(true);
        if (!value) return fail(value.error());
        args.keywords.emplace_back(std::move(key), std::move(*value));
      } else {
        if (args.star || args.double_star || !args.keywords.empty()) return fail(invalid());
        auto value = parse_expression(true);
        if (!value) return fail(value.error());
        args.positional.push_back(std::move(*value));
      }
      require_comma = true;
    }
    next();
    return args;
  }

  Result<ExprPtr> parse_call(ExprPtr callee) {
    const Pos pos = callee->pos;
    auto args = parse_call_args();
    if (!args) return fail(args.error());
    auto call = std::make_unique<CallExpr>(pos, std::move(callee));
    call->args = std::move(*args);
    return ExprPtr(std::move(call));
  }

  Result<std::string> dotted_name() {
    auto name = expect(Tok::kName, "a name");
    if (!name) return fail(name.error());
    std::string text = (*name)->text;
    while (at(Tok::kDot)) {
      next();
      auto part = expect(Tok::kName, "a name");
      if (!part) return fail(part.error());
      text += "." + (*part)->text;
    }
    return text;
  }

  Result<ExprPtr> parse_filter(ExprPtr node, bool start_inline) {
    while (at(Tok::kPipe) || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      const Pos pos = cur().pos;
      auto name = dotted_name();
      if (!name) return fail(name.error());
      const FilterFn fn = find_filter(*name);
      if (!fn) {
        return fail(error_at(pos, fmt::format("no filter named '{}' (not a Jinja2 builtin, or one ixbench's Jinja "
                                              "engine does not implement)",
                                              *name)));
      }
      auto filter = std::make_unique<FilterExpr>(pos, std::move(node), *name, fn);
      if (at(Tok::kLParen)) {
        auto args = parse_call_args();
        if (!args) return fail(args.error());
        filter->args = std::move(*args);
      }
      node = std::move(filter);
    }
    return node;
  }

  Result<ExprPtr> parse_test(ExprPtr node) {
    next();  // 'is'
    const bool negated = skip_name("not");
    const Pos pos = cur().pos;
    auto name = dotted_name();
    if (!name) return fail(name.error());
    const TestFn fn = find_test(*name);
    if (!fn) {
      return fail(error_at(pos, fmt::format("no test named '{}' (not a Jinja2 builtin, or one ixbench's Jinja engine "
                                            "does not implement)",
                                            *name)));
    }
    auto test = std::make_unique<TestExpr>(pos, std::move(node), *name, fn);
    if (at(Tok::kLParen)) {
      auto args = parse_call_args();
      if (!args) return fail(args.error());
      test->args = std::move(*args);
    } else if ((at(Tok::kName) || at(Tok::kString) || at(Tok::kInteger) || at(Tok::kFloat) || at(Tok::kLParen) ||
                at(Tok::kLBracket) || at(Tok::kLBrace)) &&
               !at_name("else") && !at_name("or") && !at_name("and")) {
      if (at_name("is")) return fail(error_at(cur().pos, "cannot chain multiple tests with 'is'"));
      auto arg = parse_primary();
      if (!arg) return fail(arg.error());
      auto postfixed = parse_postfix(std::move(*arg));
      if (!postfixed) return fail(postfixed.error());
      test->args.positional.push_back(std::move(*postfixed));
    }
    if (negated) return ExprPtr(std::make_unique<UnaryExpr>(test->pos, UnaryOp::kNot, std::move(test)));
    return ExprPtr(std::move(test));
  }

  std::vector<Token> tokens_;
  size_t index_ = 0;
  std::string_view name_;
  Program& program_;
  std::unordered_map<std::string, Symbol> symbol_index_;
  std::vector<std::pair<std::string, Pos>> open_;
  std::vector<SpecialUse> specials_;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Result<std::shared_ptr<const Program>> parse_program(std::string_view source, std::string_view name) {
  auto tokens = tokenize(source, name);
  if (!tokens) return fail(tokens.error());
  auto program = std::make_shared<Program>();
  program->name = std::string(name);
  Parser parser(std::move(*tokens), program->name, *program);
  auto body = parser.parse_template();
  if (!body) return fail(body.error());
  program->body = std::move(*body);
  program->globals.reserve(program->symbols.size());
  for (const auto& symbol : program->symbols) program->globals.push_back(find_global(symbol));
  return std::shared_ptr<const Program>(std::move(program));
}

}  // namespace ix::jinja
