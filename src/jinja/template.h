// A Jinja2 template engine for Hugging Face chat templates.
//
// Debian ships no C++ Jinja library, so ixbench carries this one. It implements the language as
// Jinja2 does with the environment transformers' apply_chat_template uses (the semantics vLLM and
// SGLang render prompts with): trim_blocks and lstrip_blocks on, `-`/`+` whitespace control,
// the loopcontrols extension (break/continue), the `{% generation %}` tag (its body is rendered),
// an immutable sandbox (no mutating list/dict methods, no underscore attributes, range() of at
// most 100000 items), `raise_exception(msg)`, `strftime_now(fmt)`, and `tojson` as
// json.dumps(value, ensure_ascii=False, indent=..., separators=..., sort_keys=...).
//
// Supported: text, comments, {{ }}, if/elif/else, for (loop.*, for-else, `if` filter, tuple
// unpacking, break/continue), set (also block set and namespace attributes), macros (defaults,
// keyword arguments, varargs/kwargs, caller), call blocks, filter blocks, with, raw; literals,
// arithmetic, `~`, chained comparisons, `in`, `is` tests, and/or/not, conditional expressions,
// attributes, subscripts and slices; Jinja2's builtin filters and tests that chat templates use;
// Python str/dict/list methods; range, dict, namespace, cycler, joiner. Not supported (a parse
// error names them): template inheritance and includes, recursive loops, filters/tests outside
// that set. docs/tokenizer.md lists the exact sets and how they are checked against
// @huggingface/jinja.
//
// Errors are Result values: kParse "<name>:<line>:<column>: ..." from parse(), and
// kInvalidArgument "<name>:<line>:<column>: ..." from render() (undefined values used where a
// value is needed, type errors, raise_exception). Malformed templates and hostile inputs never
// crash: nesting, recursion, output size and work are bounded.
//
// Thread-safety: a Template is immutable after parse(); render() is const and may run on any
// number of threads at once. Copies share the parsed tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "jinja/value.h"

namespace ix::jinja {

struct Program;

struct RenderOptions {
  // What strftime_now() formats (Python's datetime.now(): local time). Unset: the current local
  // time. Pin it to make renders reproducible.
  std::optional<std::tm> now;
  // Limits that keep hostile templates bounded (errors, never crashes or runaway work).
  size_t max_output_bytes = size_t{256} << 20;
  uint64_t max_steps = 20'000'000;  // loop iterations + calls + outputs
};

class Template {
 public:
  // Parses once; `name` prefixes error positions ("tokenizer_config.json:3:14: ...").
  static Result<Template> parse(std::string_view source, std::string_view name = "<template>");

  // Renders with `variables` (a dict with string keys: messages, add_generation_prompt, ...).
  // Variables shadow the globals (range, namespace, raise_exception, ...).
  Result<std::string> render(const Value& variables, const RenderOptions& options = {}) const;

  const std::string& name() const;

 private:
  explicit Template(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const Program> program_;
};

}  // namespace ix::jinja
