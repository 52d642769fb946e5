// Error values and Result<T>: the one way fallible ixbench APIs report failure.
//
// A cheap value type in the spirit of leveldb::Status: a category code plus a human message that
// already says what went wrong, where, and how to fix it. Exceptions never cross library
// boundaries; third-party throws are caught at the boundary and turned into an Error.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace ix {

enum class ErrorCode {
  kInvalidArgument,  // bad user input: flags, config values, request fields
  kNotFound,         // a file, key or entity that does not exist
  kParse,            // malformed input text (YAML, JSON, SSE, HTTP)
  kIo,               // OS-level read/write/socket failure
  kUnavailable,      // a peer that cannot be reached or refused
  kTimeout,
  kUnsupported,  // a valid input ixbench does not implement (named in the message)
  kInternal,     // a bug in ixbench
};

std::string_view error_code_name(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefix the message with where it happened ("configs/a.yaml:12:3: " + message).
  Error with_context(std::string_view context) const&;
  Error with_context(std::string_view context) &&;

  // "<code name>: <message>", for logs.
  std::string to_string() const;

 private:
  ErrorCode code_;
  std::string message_;
};

template <typename T>
using Result = std::expected<T, Error>;

// Shorthand: `return fail(ErrorCode::kParse, "...")` in a function returning Result<T>.
inline std::unexpected<Error> fail(ErrorCode code, std::string message) {
  return std::unexpected<Error>(Error(code, std::move(message)));
}
inline std::unexpected<Error> fail(Error error) {
  return std::unexpected<Error>(std::move(error));
}

}  // namespace ix
