// Server-Sent Events decoder (WHATWG "event stream" parsing) for streamed completions.
//
// Bytes go in as they are read from the socket, in pieces split anywhere (mid-line, mid-CRLF,
// mid-UTF-8); complete events come out. Lines end in LF, CRLF or CR; "data:" lines of one event
// are joined with "\n"; one space after the colon is dropped; comment lines (":...") and unknown
// fields are ignored; an event is dispatched at a blank line, and only if it has data (as the
// spec says for browsers' EventSource). The decoder does not parse the payload (JSON): callers
// stamp the read time before calling feed(), so every event of one read carries the time its
// bytes arrived, independent of parsing cost.
//
// Zero-copy on the fast path: when an event lies wholly inside the bytes of one feed() call and
// has a single data line, the SseEvent views point into the caller's buffer. Views are valid only
// during the callback.
//
// Thread-safety: one decoder per stream, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/error.h"

namespace ix::http {

struct SseEvent {
  std::string_view event;  // "event:" field; empty means "message"
  std::string_view data;   // data lines joined with '\n'
  std::string_view id;
};

class SseDecoder {
 public:
  // Largest event (bytes of all its lines) accepted before feed() fails with kParse; protects
  // against a server that never sends a blank line.
  static constexpr size_t kDefaultMaxEventBytes = 16u << 20;

  explicit SseDecoder(size_t max_event_bytes = kDefaultMaxEventBytes) : max_event_bytes_(max_event_bytes) {}

  // Decodes `bytes`, calling on_event(const SseEvent&) for each complete event, in order. If the
  // callback returns false, decoding stops (the rest of the input is dropped) and feed returns
  // ok. Errors: kParse when an event exceeds the size limit.
  template <typename OnEvent>
  Result<void> feed(std::string_view bytes, OnEvent&& on_event);

  // True when bytes of an incomplete event (or line) are buffered: the stream ended mid-event.
  bool has_partial() const { return !pending_.empty() || !bom_prefix_.empty(); }
  size_t events_decoded() const { return events_; }
  void reset() {
    pending_.clear();
    events_ = 0;
    bom_checked_ = false;
    bom_prefix_.clear();
  }

 private:
  // Parses complete events at the front of `text`; returns bytes consumed (up to the end of the
  // last complete event). Sets stop_ when the callback asked to stop.
  template <typename OnEvent>
  size_t parse(std::string_view text, OnEvent& on_event);
  // Fails (and drops the buffer) when the buffered event is over the size limit.
  Result<void> check_size();

  size_t max_event_bytes_;
  std::string pending_;  // unconsumed bytes from earlier feeds (always the start of an event)
  std::string joined_;   // scratch for multi-line data
  size_t events_ = 0;
  bool stop_ = false;
  // The stream's first bytes are checked for a UTF-8 BOM, which the SSE spec strips (it made
  // the first field name unknown and the first event lost).
  bool bom_checked_ = false;
  std::string bom_prefix_;  // first bytes while fewer than 3 have arrived
};

// ---- implementation (templates: the hot path is inlined into the caller) ----

template <typename OnEvent>
size_t SseDecoder::parse(std::string_view text, OnEvent& on_event) {
  size_t pos = 0;          // start of the current line
  size_t event_start = 0;  // start of the current event
  SseEvent ev;
  int data_lines = 0;
  joined_.clear();
  const size_t n = text.size();
  while (pos < n) {
    // Find the end of the line: the first LF, or an earlier CR (memchr: vectorised).
    const char* base = text.data();
    const char* lf = static_cast<const char*>(std::memchr(base + pos, '\n', n - pos));
    const size_t lf_pos = lf ? static_cast<size_t>(lf - base) : n;
    const char* cr = static_cast<const char*>(std::memchr(base + pos, '\r', lf_pos - pos));
    const size_t eol = cr ? static_cast<size_t>(cr - base) : lf_pos;
    if (eol == n) break;  // incomplete line
    size_t next = eol + 1;
    // A CR ends the line at once, also as the last byte of a read (CR-only framing would
    // otherwise be stamped one read late); an LF that arrives next is then an empty line, which
    // dispatches nothing (an incomplete event is re-parsed whole with the next read).
    if (text[eol] == '\r' && next < n && text[next] == '\n') ++next;
    const std::string_view line = text.substr(pos, eol - pos);
    pos = next;
    if (line.empty()) {
      if (data_lines > 0) {
        if (data_lines > 1) ev.data = joined_;
        ++events_;
        const bool go_on = on_event(static_cast<const SseEvent&>(ev));
        if (!go_on) {
          stop_ = true;
          return n;
        }
      }
      ev = SseEvent{};
      data_lines = 0;
      joined_.clear();
      event_start = pos;
      continue;
    }
    if (line.front() == ':') continue;
    const size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value;
    if (colon != std::string_view::npos) {
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      if (data_lines == 0) {
        ev.data = value;
      } else {
        if (data_lines == 1) joined_.assign(ev.data);
        joined_.push_back('\n');
        joined_.append(value);
      }
      ++data_lines;
    } else if (field == "event") {
      ev.event = value;
    } else if (field == "id") {
      ev.id = value;
    }
  }
  return event_start;
}

template <typename OnEvent>
Result<void> SseDecoder::feed(std::string_view bytes, OnEvent&& on_event) {
  stop_ = false;
  if (!bom_checked_) {
    // Once per stream: skip a leading BOM. Only a read that ends inside the BOM's 3 bytes is
    // copied (kept until the next read); the usual first read is decoded in place.
    constexpr std::string_view kBom = "\xEF\xBB\xBF";
    if (!bom_prefix_.empty()) {
      std::string head = std::move(bom_prefix_);
      bom_prefix_.clear();
      head.append(bytes);
      return feed(std::string_view(head), std::forward<OnEvent>(on_event));
    }
    if (bytes.size() < kBom.size() && kBom.starts_with(bytes)) {
      bom_prefix_.assign(bytes);  // wait for more
      return {};
    }
    bom_checked_ = true;
    if (bytes.starts_with(kBom)) bytes.remove_prefix(kBom.size());
  }
  if (!pending_.empty()) {
    // Complete the buffered event with as few new bytes as possible, so that the rest of this
    // read is decoded in place (zero-copy) instead of being copied behind the buffered tail:
    // reads rarely end on an event boundary. LF-framed streams end an event at "\n\n"; anything
    // else (CR framing) takes the general path below.
    size_t take = bytes.size();
    if (pending_.back() == '\n' && !bytes.empty() && bytes.front() == '\n') {
      take = 1;
    } else if (const size_t end = bytes.find("\n\n"); end != std::string_view::npos) {
      take = end + 2;
    }
    pending_.append(bytes.substr(0, take));
    const size_t used = parse(pending_, on_event);
    if (stop_) {
      pending_.clear();
      return {};
    }
    bytes.remove_prefix(take);
    if (used < pending_.size() || bytes.empty()) {
      pending_.erase(0, used);
      if (bytes.empty()) return check_size();
      // Not reached with LF framing ("\n\n" always ends an event); kept for safety: decode what
      // is left together with the rest of the read.
      pending_.append(bytes);
      const size_t more = parse(pending_, on_event);
      if (stop_) {
        pending_.clear();
        return {};
      }
      pending_.erase(0, more);
      return check_size();
    }
    pending_.clear();
  }
  const size_t used = parse(bytes, on_event);
  if (stop_) return {};
  if (used < bytes.size()) pending_.assign(bytes.substr(used));
  return check_size();
}

inline Result<void> SseDecoder::check_size() {
  if (pending_.size() > max_event_bytes_) {
    const size_t size = pending_.size();
    pending_.clear();
    return fail(ErrorCode::kParse, "SSE event larger than " + std::to_string(max_event_bytes_) +
                                       " bytes without a blank line (" + std::to_string(size) + " bytes buffered)");
  }
  return {};
}

}  // namespace ix::http
