// HTTP/1.1 requests as the server sees them, and the incremental request parser.
//
// The parser is a pure function over the bytes received so far (no sockets, no Asio), so it is
// unit-tested directly with malformed input. It accepts HTTP/1.0 and HTTP/1.1 request lines, headers
// terminated by CRLF (bare LF tolerated), bodies framed by Content-Length or chunked
// Transfer-Encoding, and enforces size limits. Errors carry the HTTP status the server answers
// with (400, 413, 431, 501, 505).
//
// Thread-safety: stateless functions; ServerRequest is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ix::http {

struct HeaderField {
  std::string name;   // lower-cased
  std::string value;  // surrounding whitespace removed
};

struct ServerRequest {
  std::string method;     // as sent (methods are case-sensitive)
  std::string target;     // request-target as sent
  std::string path;       // target up to '?'
  std::string query;      // after '?', without it
  int version_minor = 1;  // HTTP/1.<minor>
  std::vector<HeaderField> headers;
  std::string body;  // de-chunked when the request used chunked transfer encoding
  bool keep_alive = true;
  bool expect_continue = false;
  int64_t received_ns = 0;  // steady-clock time the last byte of the request was read
  // Steady-clock time the request's first bytes reached the server's socket: the kernel's receive
  // timestamp (plain TCP), else when they were read. <= received_ns; a busy loop does not move it.
  int64_t arrived_ns = 0;

  // First header with that (lower-case) name, or nullptr.
  const std::string* header(std::string_view lower_name) const;
};

struct RequestLimits {
  size_t max_head_bytes = 64 * 1024;  // request line + headers
  size_t max_body_bytes = 64 * 1024 * 1024;
  // How the limit is raised, for the 413's message (e.g. "--max-body-bytes"); empty: not said.
  std::string body_limit_flag;
};

enum class ParseState {
  kIncomplete,  // need more bytes (head_complete tells whether the head is already in)
  kComplete,    // `request` is filled; `consumed` bytes belong to it
  kError,       // answer `error_status` with `error_message`, then close
};

struct ParseResult {
  ParseState state = ParseState::kIncomplete;
  size_t consumed = 0;
  bool head_complete = false;    // with kIncomplete: headers parsed, body still arriving
  bool expect_continue = false;  // with head_complete: client sent "Expect: 100-continue"
  int error_status = 0;
  std::string error_message;
};

// Parses one request from the start of `data`. Call again with more bytes while kIncomplete;
// `request` is only meaningful on kComplete.
ParseResult parse_request(std::string_view data, const RequestLimits& limits, ServerRequest& request);

// Reason phrase for a status code: the IANA registry's ("OK", "Unsupported Media Type", ...), else
// its class's ("Client Error", "Server Error", ...).
std::string_view status_reason(int status);

// The name=value pairs of a query string (application/x-www-form-urlencoded: '&'-separated, '+' is
// a space, %XX escapes decoded), in order; a name without '=' has an empty value. A malformed
// escape is an error quoting it.
Result<std::vector<std::pair<std::string, std::string>>> parse_query_string(std::string_view query);

}  // namespace ix::http
