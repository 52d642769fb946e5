// The one sanitiser for text that came from outside ixbench (servers, configs, files, flags) and is
// echoed to a terminal, a log or a stored result.
//
// Two uses, two functions:
//   - printable(): for stderr and diagnostics. Control characters (C0, DEL, C1) and bytes that are
//     not valid UTF-8 are written as escapes (\n, \t, \x1b, \x80), so data can never forge a
//     diagnostic line or drive the terminal; valid printable UTF-8 passes unchanged.
//   - storable(): for strings stored in results (JSON escapes control characters itself): invalid
//     UTF-8 becomes U+FFFD, so every JSON reader (Python's json.load) accepts the file.
// Both redact the registered secrets first (an API key a server echoes in an error body never
// reaches a file or the terminal) and cap the length.
//
// Secrets are process-wide: commands register them as they read them (OPENAI_API_KEY, --header
// values). Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ix {

inline constexpr std::string_view kRedacted = "<redacted>";
// Longest echo kept by default; longer text is cut and marked "...(N more bytes)".
inline constexpr size_t kDefaultEchoLimit = 2048;

// Registers a secret to redact from everything printable()/storable() return. Values shorter
// than 4 bytes are ignored (redacting "a" everywhere would destroy every message).
void register_secret(std::string_view secret);
// Removes all registered secrets (tests).
void clear_secrets();
// `text` with every registered secret replaced by kRedacted.
std::string redact(std::string_view text);

// For terminals and logs: redacted, capped at `limit` bytes, control characters and invalid UTF-8
// escaped.
std::string printable(std::string_view text, size_t limit = kDefaultEchoLimit);
// printable() for a message of several lines composed by ixbench (a list of diagnostics): the same
// escapes, except that '\n' is kept. Only for text whose line breaks ixbench put there itself,
// with the outside data in it already passed through printable().
std::string printable_lines(std::string_view text, size_t limit = kDefaultEchoLimit);
// For stored results: redacted, capped at `limit` bytes, valid UTF-8 (invalid sequences become
// U+FFFD; control characters are left to the JSON writer's escapes).
std::string storable(std::string_view text, size_t limit = kDefaultEchoLimit);

}  // namespace ix
