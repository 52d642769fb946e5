#include "http/server_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "common/strings.h"

namespace ix::http {
namespace {

bool is_token_char(char c) {
  // RFC 9110 tchar.
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

// True when the comma-separated header value contains `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    if (ascii_iequals(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

ParseResult error(int status, std::string message) {
  ParseResult result;
  result.state = ParseState::kError;
  result.error_status = status;
  result.error_message = std::move(message);
  return result;
}

// 413 naming the size (when known), the limit and how to raise it.
ParseResult body_too_large(std::optional<uint64_t> size, const RequestLimits& limits) {
  std::string message =
      size ? fmt::format("request body of {} bytes is larger than this server's limit of {} bytes", *size,
                         limits.max_body_bytes)
           : fmt::format("request body is larger than this server's limit of {} bytes", limits.max_body_bytes);
  if (!limits.body_limit_flag.empty()) message += fmt::format(" ({})", limits.body_limit_flag);
  return error(413, std::move(message));
}

// Finds the end of the head: returns the offset just past the blank line, or npos.
size_t find_head_end(std::string_view data) {
  for (size_t pos = data.find('\n'); pos != std::string_view::npos; pos = data.find('\n', pos + 1)) {
    if (pos + 1 < data.size() && data[pos + 1] == '\n') return pos + 2;
    if (pos + 2 < data.size() && data[pos + 1] == '\r' && data[pos + 2] == '\n') return pos + 3;
  }
  return std::string_view::npos;
}

// Decodes a chunked body starting at `data`. Returns bytes consumed (including the trailer), 0 when
// incomplete, or sets `error_out`.
size_t decode_chunked(std::string_view data, const RequestLimits& limits, std::string& body, ParseResult& error_out) {
  const size_t max_body = limits.max_body_bytes;
  size_t pos = 0;
  body.clear();
  while (true) {
    size_t line_end = data.find('\n', pos);
    if (line_end == std::string_view::npos) {
      if (data.size() - pos > 1024) error_out = error(400, "chunk size line too long");
      return 0;
    }
    std::string_view line = trim(data.substr(pos, line_end - pos));
    if (size_t semi = line.find(';'); semi != std::string_view::npos) line = trim(line.substr(0, semi));
    uint64_t size = 0;
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
    if (line.empty() || ec != std::errc() || ptr != line.data() + line.size()) {
      error_out = error(400, "malformed chunk size in request body");
      return 0;
    }
    pos = line_end + 1;
    if (size == 0) {
      // Trailer fields up to an empty line.
      while (true) {
        size_t end = data.find('\n', pos);
        if (end == std::string_view::npos) return 0;
        std::string_view field = trim(data.substr(pos, end - pos));
        pos = end + 1;
        if (field.empty()) return pos;
      }
    }
    if (size > max_body || body.size() + size > max_body) {
      error_out = body_too_large(std::nullopt, limits);
      return 0;
    }
    if (data.size() - pos < size + 1) return 0;
    body.append(data.substr(pos, size));
    pos += size;
    if (data[pos] == '\r') {
      if (data.size() - pos < 2) return 0;
      ++pos;
    }
    if (data[pos] != '\n') {
      error_out = error(400, "missing CRLF after chunk data");
      return 0;
    }
    ++pos;
  }
}

}  // namespace

const std::string* ServerRequest::header(std::string_view lower_name) const {
  for (const auto& field : headers) {
    if (field.name == lower_name) return &field.value;
  }
  return nullptr;
}

namespace {

// The request line (method SP request-target SP HTTP-version) into `request`; a failure's
// ParseResult, else nullopt.
std::optional<ParseResult> parse_request_line(std::string_view request_line, ServerRequest& request) {
  size_t sp1 = request_line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      request_line.find(' ', sp2 + 1) != std::string_view::npos) {
    return error(400, "malformed request line");
  }
  std::string_view method = request_line.substr(0, sp1);
  std::string_view target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = request_line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), is_token_char)) {
    return error(400, "malformed request method");
  }
  if (target.empty() || (target.front() != '/' && target != "*" && target.find("://") == std::string_view::npos)) {
    return error(400, "malformed request target");
  }
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return error(400, "malformed request target");
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' || version[5] < '0' ||
      version[5] > '9' || version[7] < '0' || version[7] > '9') {
    return error(400, "malformed HTTP version");
  }
  if (version[5] != '1') return error(505, "HTTP version not supported (only HTTP/1.0 and HTTP/1.1)");
  request.method = std::string(method);
  request.target = std::string(target);
  // Absolute-form targets (proxies) keep only the path.
  std::string_view path = target;
  if (size_t scheme = path.find("://"); scheme != std::string_view::npos) {
    size_t slash = path.find('/', scheme + 3);
    path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
  }
  size_t question = path.find('?');
  request.path = std::string(path.substr(0, question));
  if (question != std::string_view::npos) request.query = std::string(path.substr(question + 1));
  request.version_minor = version[7] - '0';
  return std::nullopt;
}

// The header fields after the request line (`head` from `pos`) into `request`, with the body's
// framing: its Content-Length (`content_length`) or chunked (`chunked`). A failure's
// ParseResult, else nullopt.
std::optional<ParseResult> parse_header_fields(std::string_view head, size_t pos, ServerRequest& request,
                                               std::optional<uint64_t>& content_length, bool& chunked) {
  bool connection_close = false;
  bool connection_keep_alive = false;
  while (pos < head.size()) {
    size_t end = head.find('\n', pos);
    std::string_view line = head.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return error(400, "obsolete header line folding is not allowed");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return error(400, "malformed header field");
    std::string_view name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_token_char)) return error(400, "malformed header field name");
    std::string_view value = trim(line.substr(colon + 1));
    for (char c : value) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        return error(400, "invalid character in header field value");
      }
    }
    HeaderField field{ascii_lower(name), std::string(value)};
    if (field.name == "content-length") {
      uint64_t length = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size()) {
        return error(400, "invalid Content-Length");
      }
      if (content_length && *content_length != length) return error(400, "conflicting Content-Length headers");
      content_length = length;
    } else if (field.name == "transfer-encoding") {
      // Every coding of every Transfer-Encoding field (RFC 9112 §6.1): only chunked, once, and
      // the no-op identity are implemented; any other coding (gzip, before or after chunked) is
      // refused, so the body's framing is never guessed.
      size_t start = 0;
      while (start <= value.size()) {
        size_t comma = value.find(',', start);
        if (comma == std::string_view::npos) comma = value.size();
        const std::string_view coding = trim(value.substr(start, comma - start));
        start = comma + 1;
        if (coding.empty() || ascii_iequals(coding, "identity")) continue;
        if (!ascii_iequals(coding, "chunked"))
          return error(501, "unsupported Transfer-Encoding '" + std::string(coding) + "'");
        if (chunked) return error(400, "chunked Transfer-Encoding applied twice");
        chunked = true;
      }
    } else if (field.name == "connection") {
      connection_close = connection_close || has_token(value, "close");
      connection_keep_alive = connection_keep_alive || has_token(value, "keep-alive");
    } else if (field.name == "expect") {
      if (!ascii_iequals(value, "100-continue")) return error(417, "unsupported Expect value");
      request.expect_continue = true;
    }
    request.headers.push_back(std::move(field));
  }
  if (chunked && content_length) return error(400, "both Content-Length and chunked Transfer-Encoding");
  request.keep_alive = request.version_minor >= 1 ? !connection_close : connection_keep_alive && !connection_close;
  return std::nullopt;
}

}  // namespace

ParseResult parse_request(std::string_view data, const RequestLimits& limits, ServerRequest& request) {
  // Tolerate empty lines before the request line (RFC 9112 §2.2).
  size_t skipped = 0;
  while (skipped < data.size() && (data[skipped] == '\r' || data[skipped] == '\n')) ++skipped;
  std::string_view input = data.substr(skipped);

  size_t head_end = find_head_end(input);
  if (head_end == std::string_view::npos) {
    if (input.size() > limits.max_head_bytes) return error(431, "request header fields too large");
    // A request line that is already clearly not HTTP fails early instead of waiting for a timeout.
    size_t first_line = input.find('\n');
    std::string_view line = input.substr(0, first_line == std::string_view::npos ? input.size() : first_line);
    for (char c : line) {
      if (c == '\0' || (static_cast<unsigned char>(c) < 0x20 && c != '\r' && c != '\t')) {
        return error(400, "malformed request line");
      }
    }
    return {};
  }
  if (head_end > limits.max_head_bytes) return error(431, "request header fields too large");

  request = ServerRequest();
  std::string_view head = input.substr(0, head_end);
  size_t line_end = head.find('\n');
  std::string_view request_line = trim(head.substr(0, line_end));

  if (auto failed = parse_request_line(request_line, request)) return *failed;
  std::optional<uint64_t> content_length;
  bool chunked = false;
  if (auto failed = parse_header_fields(head, line_end + 1, request, content_length, chunked)) return *failed;

  std::string_view rest = input.substr(head_end);
  ParseResult result;
  result.head_complete = true;
  result.expect_continue = request.expect_continue;
  if (chunked) {
    ParseResult failure;
    size_t used = decode_chunked(rest, limits, request.body, failure);
    if (failure.state == ParseState::kError) return failure;
    if (used == 0) return result;
    result.state = ParseState::kComplete;
    result.consumed = skipped + head_end + used;
    return result;
  }
  uint64_t length = content_length.value_or(0);
  if (length > limits.max_body_bytes) return body_too_large(length, limits);
  if (rest.size() < length) return result;
  request.body = std::string(rest.substr(0, length));
  result.state = ParseState::kComplete;
  result.consumed = skipped + head_end + length;
  return result;
}

std::string_view status_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 407: return "Proxy Authentication Required";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 423: return "Locked";
    case 424: return "Failed Dependency";
    case 425: return "Too Early";
    case 426: return "Upgrade Required";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 451: return "Unavailable For Legal Reasons";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 506: return "Variant Also Negotiates";
    case 507: return "Insufficient Storage";
    case 508: return "Loop Detected";
    case 510: return "Not Extended";
    case 511: return "Network Authentication Required";
    default: break;
  }
  // Codes without a registered phrase (--fault-error-codes takes any 400..599) get their class's.
  if (status >= 100 && status < 200) return "Informational";
  if (status >= 200 && status < 300) return "Success";
  if (status >= 300 && status < 400) return "Redirection";
  if (status >= 400 && status < 500) return "Client Error";
  return "Server Error";
}

namespace {

Result<std::string> form_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] != '%') {
      out += text[i];
    } else {
      unsigned value = 0;
      const char* begin = text.data() + i + 1;
      const char* end = begin + std::min<size_t>(2, text.size() - i - 1);
      const auto [ptr, ec] = std::from_chars(begin, end, value, 16);
      if (ec != std::errc() || ptr != begin + 2) {
        return fail(ErrorCode::kInvalidArgument,
                    fmt::format("query string: '{}' is not a %XX escape", text.substr(i, 3)));
      }
      out += static_cast<char>(value);
      i += 2;
    }
  }
  return out;
}

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> parse_query_string(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    auto name = form_decode(part.substr(0, eq));
    if (!name) return fail(name.error());
    auto value = form_decode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
    if (!value) return fail(value.error());
    pairs.emplace_back(std::move(*name), std::move(*value));
  }
  return pairs;
}

}  // namespace ix::http
