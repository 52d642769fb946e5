// Incremental HTTP/1.1 response parser for the load-generating client.
//
// Written for the hot path of `bench serve` rather than taken from Beast: it is fed exactly the
// bytes one socket read returned and hands body bytes (de-chunked) straight to the caller as
// views into that buffer, so the caller can stamp them with the read time and decode SSE without
// another copy. Supports Content-Length, chunked transfer coding (extensions and trailers
// skipped), bodies delimited by connection close, 1xx interim responses (skipped), and
// Connection: close / keep-alive (HTTP/1.0 defaults to close).
//
// Thread-safety: one parser per connection, one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace ix::http {

class ResponseParser {
 public:
  static constexpr size_t kMaxHeadBytes = 64 * 1024;

  // Prepare for the next response on the same connection. `head_request`: the response has no
  // body (HEAD).
  void reset(bool head_request = false);

  // Consumes `bytes`; calls on_body(std::string_view) for every piece of body. Returns the number
  // of bytes consumed: less than bytes.size() only when the response completed and bytes of a
  // following response remain (a protocol error for a client that does not pipeline).
  // Errors: kParse (malformed status line, headers, chunk framing; head too large).
  template <typename OnBody>
  Result<size_t> feed(std::string_view bytes, OnBody&& on_body);

  // The peer closed the connection. True when that completes the response (close-delimited
  // body); false when the response was cut short.
  bool on_eof();

  bool head_done() const { return state_ > State::kHead; }
  bool done() const { return state_ == State::kDone; }
  int status() const { return status_; }
  bool keep_alive() const { return keep_alive_; }
  int64_t body_bytes() const { return body_bytes_; }
  // Content-Type of the response (lowercased), e.g. "text/event-stream; charset=utf-8".
  const std::string& content_type() const { return content_type_; }
  // The Retry-After header's value (trimmed), or empty.
  const std::string& retry_after() const { return retry_after_; }

 private:
  enum class State { kHead, kBodyLength, kBodyChunkSize, kBodyChunkData, kBodyChunkCrlf, kTrailers, kBodyEof, kDone };

  Result<void> parse_head(std::string_view head);
  // Processes a complete line of chunk framing (size line or trailer line).
  Result<void> chunk_line(std::string_view line);

  State state_ = State::kHead;
  bool head_request_ = false;
  std::string head_;  // bytes of the head so far
  std::string line_;  // partial chunk-size / trailer line
  int status_ = 0;
  bool keep_alive_ = true;
  bool chunked_ = false;
  int64_t content_length_ = -1;
  int64_t remaining_ = 0;  // body bytes left (length mode) or chunk bytes left
  int64_t body_bytes_ = 0;
  std::string content_type_;
  std::string retry_after_;
};

template <typename OnBody>
Result<size_t> ResponseParser::feed(std::string_view bytes, OnBody&& on_body) {
  size_t pos = 0;
  const size_t n = bytes.size();
  while (pos < n && state_ != State::kDone) {
    switch (state_) {
      case State::kHead: {
        // Search for the end of the head across the already-buffered part.
        const size_t old = head_.size();
        const size_t take = std::min(n - pos, kMaxHeadBytes + 4 - std::min(old, kMaxHeadBytes + 4));
        head_.append(bytes.substr(pos, take));
        const size_t from = old >= 3 ? old - 3 : 0;
        const size_t end = head_.find("\r\n\r\n", from);
        if (end == std::string::npos) {
          if (head_.size() > kMaxHeadBytes) return fail(ErrorCode::kParse, "HTTP response head larger than 64 KiB");
          pos += take;
          break;
        }
        const size_t head_len = end + 4;
        pos += head_len - old;
        auto parsed = parse_head(std::string_view(head_).substr(0, head_len));
        if (!parsed) return std::unexpected(parsed.error());
        head_.clear();
        break;
      }
      case State::kBodyLength:
      case State::kBodyEof: {
        size_t take = n - pos;
        if (state_ == State::kBodyLength)
          take = static_cast<size_t>(std::min<int64_t>(remaining_, static_cast<int64_t>(take)));
        if (take > 0) {
          body_bytes_ += static_cast<int64_t>(take);
          on_body(bytes.substr(pos, take));
          pos += take;
        }
        if (state_ == State::kBodyLength) {
          remaining_ -= static_cast<int64_t>(take);
          if (remaining_ == 0) state_ = State::kDone;
        }
        break;
      }
      case State::kBodyChunkData: {
        const size_t take = static_cast<size_t>(std::min<int64_t>(remaining_, static_cast<int64_t>(n - pos)));
        body_bytes_ += static_cast<int64_t>(take);
        on_body(bytes.substr(pos, take));
        pos += take;
        remaining_ -= static_cast<int64_t>(take);
        if (remaining_ == 0) state_ = State::kBodyChunkCrlf;
        break;
      }
      case State::kBodyChunkCrlf:
      case State::kBodyChunkSize:
      case State::kTrailers: {
        const size_t lf = bytes.find('\n', pos);
        const size_t end = lf == std::string_view::npos ? n : lf;
        line_.append(bytes.substr(pos, end - pos));
        if (line_.size() > 4096) return fail(ErrorCode::kParse, "HTTP chunk framing line longer than 4 KiB");
        if (lf == std::string_view::npos) {
          pos = n;
          break;
        }
        pos = lf + 1;
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
        auto ok = chunk_line(line_);
        line_.clear();
        if (!ok) return std::unexpected(ok.error());
        break;
      }
      case State::kDone: break;
    }
  }
  return pos;
}

}  // namespace ix::http
