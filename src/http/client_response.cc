#include "http/client_response.h"

#include <algorithm>
#include <charconv>

#include "common/strings.h"

namespace ix::http {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

void ResponseParser::reset(bool head_request) {
  state_ = State::kHead;
  head_request_ = head_request;
  head_.clear();
  line_.clear();
  status_ = 0;
  keep_alive_ = true;
  chunked_ = false;
  content_length_ = -1;
  remaining_ = 0;
  body_bytes_ = 0;
  content_type_.clear();
  retry_after_.clear();
}

Result<void> ResponseParser::parse_head(std::string_view head) {
  // Status line: HTTP/1.x SP 3DIGIT SP reason CRLF
  const size_t eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.") || status_line[8] != ' ') {
    return fail(ErrorCode::kParse, "malformed HTTP status line '" + std::string(status_line.substr(0, 80)) + "'");
  }
  int status = 0;
  auto [ptr, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
  if (ec != std::errc() || ptr != status_line.data() + 12 || status < 100 || status > 999) {
    return fail(ErrorCode::kParse, "malformed HTTP status code in '" + std::string(status_line.substr(0, 80)) + "'");
  }
  const bool http10 = status_line[7] == '0';
  bool keep_alive = !http10;
  bool chunked = false;
  int64_t length = -1;
  std::string content_type;
  std::string retry_after;
  size_t pos = eol + 2;
  while (pos < head.size()) {
    const size_t e = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, e - pos);
    pos = e + 2;
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return fail(ErrorCode::kParse, "malformed HTTP header line '" + std::string(line.substr(0, 80)) + "'");
    }
    const std::string name = ascii_lower(trim(line.substr(0, colon)));
    const std::string_view value = trim(line.substr(colon + 1));
    if (name == "content-length") {
      int64_t v = -1;
      auto [p, err] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (err != std::errc() || p != value.data() + value.size() || v < 0) {
        return fail(ErrorCode::kParse, "malformed Content-Length '" + std::string(value) + "'");
      }
      length = v;
    } else if (name == "transfer-encoding") {
      chunked = ascii_lower(value).find("chunked") != std::string::npos;
    } else if (name == "connection") {
      const std::string v = ascii_lower(value);
      if (v.find("close") != std::string::npos) keep_alive = false;
      if (v.find("keep-alive") != std::string::npos) keep_alive = true;
    } else if (name == "content-type") {
      content_type = ascii_lower(value);
    } else if (name == "retry-after") {
      retry_after = std::string(value.substr(0, 64));
    }
  }
  if (status >= 100 && status < 200 && status != 101) {
    // Interim response (100 Continue, 103 Early Hints): the real one follows.
    return {};
  }
  status_ = status;
  keep_alive_ = keep_alive;
  chunked_ = chunked;
  content_length_ = length;
  content_type_ = std::move(content_type);
  retry_after_ = std::move(retry_after);
  if (head_request_ || status == 204 || status == 304) {
    state_ = State::kDone;
  } else if (chunked) {
    state_ = State::kBodyChunkSize;
  } else if (length >= 0) {
    remaining_ = length;
    state_ = length == 0 ? State::kDone : State::kBodyLength;
  } else {
    keep_alive_ = false;  // body ends when the server closes
    state_ = State::kBodyEof;
  }
  return {};
}

Result<void> ResponseParser::chunk_line(std::string_view line) {
  switch (state_) {
    case State::kBodyChunkCrlf:
      if (!line.empty()) return fail(ErrorCode::kParse, "HTTP chunk data not followed by CRLF");
      state_ = State::kBodyChunkSize;
      return {};
    case State::kBodyChunkSize: {
      std::string_view size_text = line.substr(0, line.find(';'));
      size_text = trim(size_text);
      uint64_t size = 0;
      auto [p, err] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
      if (size_text.empty() || err != std::errc() || p != size_text.data() + size_text.size() || size > (1ull << 40)) {
        return fail(ErrorCode::kParse, "malformed HTTP chunk size '" + std::string(line.substr(0, 40)) + "'");
      }
      if (size == 0) {
        state_ = State::kTrailers;
      } else {
        remaining_ = static_cast<int64_t>(size);
        state_ = State::kBodyChunkData;
      }
      return {};
    }
    case State::kTrailers:
      if (line.empty()) state_ = State::kDone;
      return {};
    default: return fail(ErrorCode::kInternal, "chunk_line in a non-framing state");
  }
}

bool ResponseParser::on_eof() {
  if (state_ == State::kBodyEof) {
    state_ = State::kDone;
    return true;
  }
  return state_ == State::kDone;
}

}  // namespace ix::http
