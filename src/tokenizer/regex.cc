#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <fmt/format.h>
#include <pcre2.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace ix::tok {
namespace {

// Unicode White_Space (what Oniguruma's \s matches), as class items.
constexpr std::string_view kWhiteSpaceItems =
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

// Where Oniguruma (Unicode 16, what HF's regexes see) and PCRE2 10.42 (Unicode 14) disagree on a
// general-category class; generated from the oracle by tests/oracle/gen_unicode_delta.py.
struct ClassDelta {
  std::string_view name;
  std::vector<std::pair<char32_t, char32_t>> added;
  std::vector<std::pair<char32_t, char32_t>> removed;
};
const std::vector<ClassDelta>& class_deltas() {
  static const std::vector<ClassDelta> deltas = {
#include "tokenizer/unicode_delta.inc"
  };
  return deltas;
}

const ClassDelta* find_delta(std::string_view name) {
  for (const auto& d : class_deltas()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::string class_items(const std::vector<std::pair<char32_t, char32_t>>& ranges) {
  std::string out;
  for (const auto& [lo, hi] : ranges) {
    out += fmt::format("\\x{{{:X}}}", static_cast<uint32_t>(lo));
    if (hi != lo) out += fmt::format("-\\x{{{:X}}}", static_cast<uint32_t>(hi));
  }
  return out;
}

// Per-thread match state. Match data sized for a few groups works for every pattern (only the
// overall match is read); the JIT stack grows the default 32 KiB to 16 MiB so long runs of
// whitespace or letters never hit the JIT stack limit.
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(8, nullptr);
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 16 * 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(context, nullptr, stack);
    // HF's Oniguruma has no practical backtracking limit for these patterns; PCRE2's default
    // match limit (10 million) could stop a scan of a multi-megabyte whitespace run, which would
    // silently change the pieces.
    pcre2_set_match_limit(context, UINT32_MAX);
    pcre2_set_depth_limit(context, UINT32_MAX);
  }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

std::string rewrite_whitespace_classes(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  size_t i = 0;
  while (i < pattern.size()) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[i + 1];
      if (e == 'p' || e == 'P') {
        // \p{X} / \pX: widen to Oniguruma's (newer) Unicode membership of X.
        std::string_view name;
        size_t next = i + 2;
        if (next < pattern.size() && pattern[next] == '{') {
          const size_t close = pattern.find('}', next);
          if (close != std::string_view::npos) {
            name = pattern.substr(next + 1, close - next - 1);
            next = close + 1;
          }
        } else if (next < pattern.size()) {
          name = pattern.substr(next, 1);
          next += 1;
        }
        const ClassDelta* delta = name.empty() ? nullptr : find_delta(name);
        const std::string_view original = pattern.substr(i, next - i);
        if (delta == nullptr || (delta->added.empty() && delta->removed.empty())) {
          out.append(original);
        } else if (in_class) {
          // Inside a class only additions can be expressed (no class uses a class with removals).
          out.append(original);
          if (e == 'p') out.append(class_items(delta->added));
        } else {
          const std::string positive = fmt::format("\\p{{{}}}{}", name, class_items(delta->added));
          std::string expr = e == 'p' ? "[" + positive + "]" : "[^" + positive + "]";
          if (!delta->removed.empty()) {
            const std::string removed = "[" + class_items(delta->removed) + "]";
            expr = e == 'p' ? "(?:(?!" + removed + ")" + expr + ")" : "(?:" + removed + "|" + expr + ")";
          }
          out.append(expr);
        }
        i = next;
        continue;
      }
      if (e == 's') {
        if (in_class) {
          out.append(kWhiteSpaceItems);
        } else {
          out.append("[").append(kWhiteSpaceItems).append("]");
        }
        i += 2;
        continue;
      }
      if (e == 'S' && !in_class) {
        out.append("[^").append(kWhiteSpaceItems).append("]");
        i += 2;
        continue;
      }
      out.push_back(c);
      out.push_back(e);
      i += 2;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      ++i;
      // A ']' right after '[' or '[^' is a literal member.
      if (i < pattern.size() && pattern[i] == '^') out.push_back(pattern[i++]);
      if (i < pattern.size() && pattern[i] == ']') out.push_back(pattern[i++]);
      continue;
    }
    if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      const size_t close = pattern.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out.append(pattern.substr(i, close + 2 - i));
        i = close + 2;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
    ++i;
  }
  return out;
}

Regex::Regex(std::shared_ptr<const Code> code, std::string pattern)
    : code_(std::move(code)), pattern_(std::move(pattern)) {}

Result<Regex> Regex::compile(std::string_view pattern) {
  const std::string rewritten = rewrite_whitespace_classes(pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(error_code, buffer, sizeof(buffer));
    return fail(ErrorCode::kUnsupported, fmt::format("regex /{}/ does not compile with PCRE2 at offset {}: {}", pattern,
                                                     error_offset, reinterpret_cast<char*>(buffer)));
  }
  auto holder = std::make_shared<Code>();
  holder->code = code;
  holder->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return Regex(std::move(holder), std::string(pattern));
}

bool Regex::find(std::string_view subject, size_t start, size_t& match_start, size_t& match_end) const {
  ThreadMatchState& state = thread_state();
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  int rc;
  if (code_->jit) {
    rc = pcre2_jit_match(code_->code, s, subject.size(), start, 0, state.data, state.context);
  } else {
    rc = pcre2_match(code_->code, s, subject.size(), start, PCRE2_NO_UTF_CHECK, state.data, state.context);
  }
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    // Pathological input beyond the 16 MiB JIT stack: the interpreter uses heap memory instead.
    rc = pcre2_match(code_->code, s, subject.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, state.data,
                     state.context);
  }
  if (rc < 0) return false;
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
  match_start = ovector[0];
  match_end = ovector[1];
  return true;
}

}  // namespace ix::tok
