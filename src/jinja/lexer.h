// Jinja2's lexer with transformers' environment options (trim_blocks, lstrip_blocks): template
// text, `{{ }}` / `{% %}` / `{# #}` with `-` / `+` whitespace control, `{% raw %}`, and the
// tokens inside tags. Internal to jinja/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "jinja/internal.h"

namespace ix::jinja {

enum class Tok : uint8_t {
  kData,
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInteger,
  kFloat,
  // Operators.
  kAdd,
  kSub,
  kDiv,
  kFloorDiv,
  kMul,
  kMod,
  kPow,
  kTilde,
  kLBracket,
  kRBracket,
  kLParen,
  kRParen,
  kLBrace,
  kRBrace,
  kEq,
  kNe,
  kGt,
  kGe,
  kLt,
  kLe,
  kAssign,
  kDot,
  kColon,
  kPipe,
  kComma,
  kSemicolon,
  kEof,
};

struct Token {
  Tok type = Tok::kEof;
  Pos pos;
  std::string text;  // data, name, or the decoded string literal
  int64_t integer = 0;
  double number = 0.0;
};

// Human description of a token for errors ("'endfor'", "end of template", "'%}'").
std::string describe(const Token& token);

// Tokenizes `source` (newlines normalized, one trailing newline dropped, as Jinja2 does).
// Errors: kParse "<name>:<line>:<column>: ...".
Result<std::vector<Token>> tokenize(std::string_view source, std::string_view name);

}  // namespace ix::jinja
