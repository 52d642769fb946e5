#include "bench/exchange.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>

#include "common/sanitize.h"
#include "common/strings.h"
#include "http/client_retry.h"

namespace ix::bench {

using metrics::ErrorKind;
using metrics::RequestRecord;

namespace {

// usage.completion_tokens may exceed max_tokens by this much before it is a bad count (a server
// that counts a stop or end-of-sequence token on top).
constexpr int64_t kUsageSlackTokens = 16;
// usage.prompt_tokens beyond twice the prompt's tokens plus this (a chat template's framing) is
// not a count of the prompt that was sent.
constexpr int64_t kPromptUsageSlackTokens = 4096;

ErrorKind error_kind_of(http::FailureKind kind);

}  // namespace

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void Exchange::reset(uint64_t new_tag, int64_t scheduled_ns, int64_t prompt_len, int64_t max_tokens, bool warmup) {
  tag = new_tag;
  rec = RequestRecord{};
  rec.warmup = warmup;
  rec.scheduled_ns = scheduled_ns;
  rec.prompt_len = prompt_len;
  rec.expected_output_len = max_tokens;
  attempts = 0;
  retry_pending = false;
  restart();
}

void Exchange::restart() {
  sse_.reset();
  rec.success = false;
  rec.error_kind = ErrorKind::kNone;
  rec.error_message.clear();
  rec.http_status = 0;
  rec.first_byte_ns = rec.first_token_ns = rec.end_ns = 0;
  rec.content_event_ns.clear();
  rec.tokens_per_event.clear();
  rec.server_output_tokens = -1;
  rec.output_len = 0;
  server_prompt_tokens = -1;
  text.clear();
  reasoning.clear();
  finish_reason.clear();
  last_usage_ = 0;
  saw_done_ = false;
  saw_finish_ = false;
  error_body_.clear();
  retry_after_.clear();
}

void Exchange::on_head(const http::ResponseHead& head, int64_t first_byte_ns) {
  rec.first_byte_ns = first_byte_ns;
  rec.http_status = head.status;
  retry_after_ = std::string(head.retry_after);
  if (head.status != 200) rec.error_kind = ErrorKind::kHttpStatus;
}

void Exchange::fail_with(ErrorKind kind, std::string message) {
  if (rec.error_kind == ErrorKind::kNone || rec.error_kind == ErrorKind::kHttpStatus) {
    rec.error_kind = kind;
    rec.error_message = std::move(message);
  }
}

// The start of a body kept to explain a failure, and how much of it the message shows. More is
// kept than shown so that a credential the server echoes is redacted whole before the cut.
constexpr size_t kErrorBodyKeptBytes = 4096;
constexpr size_t kErrorBodyShownBytes = 300;

bool Exchange::on_body(std::string_view bytes, int64_t t_ns) {
  const auto keep = [&] {
    if (error_body_.size() < kErrorBodyKeptBytes)
      error_body_.append(bytes.substr(0, kErrorBodyKeptBytes - error_body_.size()));
  };
  if (rec.error_kind == ErrorKind::kHttpStatus) {
    keep();
    return true;
  }
  bool keep_going = true;
  const bool before_first_event = sse_.events_decoded() == 0;
  auto fed = sse_.feed(bytes, [&](const http::SseEvent& event) {
    keep_going = on_event(event, t_ns);
    return keep_going;
  });
  // The start of a body that holds no event yet, to explain a response that is not an event
  // stream (kept only until the first event, so a stream's bytes are not copied).
  if (before_first_event && sse_.events_decoded() == 0) keep();
  if (!fed) {
    fail_with(ErrorKind::kMalformed, fed.error().message());
    return false;
  }
  return keep_going;
}

bool Exchange::on_event(const http::SseEvent& event, int64_t t_ns) {
  auto chunk = owner_->chunk_decoder().decode(event.data);
  if (!chunk) {
    fail_with(ErrorKind::kMalformed, chunk.error().message());
    return false;
  }
  switch (chunk->kind) {
    case openai::StreamChunk::Kind::kDone: saw_done_ = true; return true;
    case openai::StreamChunk::Kind::kError:
      fail_with(ErrorKind::kServerError, "server error in stream: " + chunk->error);
      return false;
    case openai::StreamChunk::Kind::kData: break;
  }
  if (auto bad = bad_usage(*chunk)) {
    fail_with(ErrorKind::kBadUsage, std::move(*bad));
    return false;
  }
  int64_t delta = 0;
  if (chunk->completion_tokens >= 0) {
    delta = chunk->completion_tokens - last_usage_;
    last_usage_ = chunk->completion_tokens;
    rec.server_output_tokens = chunk->completion_tokens;
  }
  if (chunk->prompt_tokens >= 0) server_prompt_tokens = chunk->prompt_tokens;
  if (chunk->has_choices) {
    if (chunk->finished) {
      saw_finish_ = true;
      finish_reason = chunk->finish_reason;
    }
    const bool content = !chunk->text.empty() || delta > 0;
    if (content) {
      if (rec.first_token_ns == 0) rec.first_token_ns = t_ns;
      rec.content_event_ns.push_back(t_ns);
      // Usage in a chunk with choices means continuous usage: the delta is this chunk's tokens.
      rec.tokens_per_event.push_back(chunk->completion_tokens >= 0 ? static_cast<int32_t>(std::max<int64_t>(delta, 1))
                                                                   : 1);
      if (split_reasoning) {
        reasoning.append(chunk->text.substr(0, chunk->reasoning_bytes));
        text.append(chunk->text.substr(chunk->reasoning_bytes));
      } else {
        text.append(chunk->text);
      }
      owner_->count_streamed(rec.tokens_per_event.back());
    }
  }
  return true;
}

// Usage counts that cannot be true of this request: never added to any total.
std::optional<std::string> Exchange::bad_usage(const openai::StreamChunk& chunk) const {
  if (!chunk.bad_usage_key.empty()) return fmt::format("server reported {}", chunk.usage_problem());
  if (chunk.completion_tokens > rec.expected_output_len + kUsageSlackTokens) {
    return fmt::format("server reported usage.completion_tokens {}, more than the {} requested (max_tokens) + {}",
                       chunk.completion_tokens, rec.expected_output_len, kUsageSlackTokens);
  }
  if (chunk.prompt_tokens > 2 * rec.prompt_len + kPromptUsageSlackTokens) {
    return fmt::format("server reported usage.prompt_tokens {} for a {}-token prompt (more than 2 x {} + {})",
                       chunk.prompt_tokens, rec.prompt_len, rec.prompt_len, kPromptUsageSlackTokens);
  }
  return std::nullopt;
}

namespace {

ErrorKind error_kind_of(http::FailureKind kind) {
  switch (kind) {
    case http::FailureKind::kNone: return ErrorKind::kNone;
    case http::FailureKind::kConnect: return ErrorKind::kConnect;
    case http::FailureKind::kTimeout: return ErrorKind::kTimeout;
    case http::FailureKind::kReset: return ErrorKind::kReset;
    case http::FailureKind::kClosed: return ErrorKind::kTruncated;
    case http::FailureKind::kMalformed: return ErrorKind::kMalformed;
    case http::FailureKind::kCancelled: return ErrorKind::kCancelled;
  }
  return ErrorKind::kOther;
}

}  // namespace

// A response that arrived whole: is it a complete stream with content?
void Exchange::classify_clean_end() {
  if (sse_.events_decoded() == 0) {
    rec.error_kind = ErrorKind::kMalformed;
    rec.error_message = fmt::format("response is not an event stream (no SSE event): '{}'",
                                    ix::storable(error_body_, kErrorBodyShownBytes));
  } else if (!saw_done_ && !saw_finish_) {
    rec.error_kind = ErrorKind::kTruncated;
    rec.error_message = fmt::format("stream ended without [DONE] or finish_reason after {} content events{}",
                                    rec.content_event_ns.size(), sse_.has_partial() ? " (last event incomplete)" : "");
  } else if (rec.content_event_ns.empty()) {
    // vLLM fails such a request too ("Never received a valid chunk"): a TTFT of 0 would be
    // data the server did not produce.
    rec.error_kind = ErrorKind::kNoContent;
    rec.error_message = fmt::format(
        "stream completed with {} events but no content-bearing one (no text, no token usage)", sse_.events_decoded());
  }
}

bool ExchangeOwner::resendable(const RequestRecord& rec) const {
  return retriable(rec);
}

bool retriable(const RequestRecord& rec) {
  return rec.error_kind == ErrorKind::kConnect || rec.error_kind == ErrorKind::kReset ||
         (rec.error_kind == ErrorKind::kHttpStatus && (rec.http_status == 429 || rec.http_status >= 500));
}

void Exchange::on_done(http::FailureKind kind, std::string_view message, int64_t t_ns) {
  rec.end_ns = t_ns;
  if (rec.error_kind == ErrorKind::kHttpStatus) {
    rec.error_message = fmt::format("HTTP {}: {}", rec.http_status, ix::storable(error_body_, kErrorBodyShownBytes));
  } else if (rec.error_kind == ErrorKind::kNone) {
    if (kind == http::FailureKind::kNone) {
      classify_clean_end();
    } else {
      rec.error_kind = error_kind_of(kind);
    }
    if (rec.error_kind != ErrorKind::kNone && rec.error_message.empty()) rec.error_message = std::string(message);
  }
  // Everything in a message may be the server's bytes (a body excerpt cut at a byte count, a
  // malformed chunk, an echoed credential): stored valid UTF-8, with the secrets redacted.
  if (!rec.error_message.empty()) rec.error_message = ix::storable(rec.error_message);
  rec.success = rec.error_kind == ErrorKind::kNone;
  if (rec.success) {
    rec.output_len = rec.server_output_tokens >= 0 ? rec.server_output_tokens : -1;  // -1: count client-side later
  } else {
    if (owner_->resendable(rec) && owner_->resend(*this)) return;
    rec.output_len = 0;
  }
  owner_->complete(*this);
}

Exchange* ExchangePool::acquire() {
  if (free_.empty()) {
    all_.push_back(std::make_unique<Exchange>(owner_));
    return all_.back().get();
  }
  Exchange* e = free_.back();
  free_.pop_back();
  return e;
}

std::vector<http::Header> request_headers(std::string_view api_key, const std::vector<http::Header>& extra,
                                          std::vector<http::Header> defaults) {
  std::vector<http::Header> out = std::move(defaults);
  auto put = [&out](http::Header header) {
    auto same = [&header](const http::Header& h) { return ascii_iequals(h.name, header.name); };
    if (auto it = std::find_if(out.begin(), out.end(), same); it != out.end()) {
      *it = std::move(header);
    } else {
      out.push_back(std::move(header));
    }
  };
  if (!api_key.empty()) put({"Authorization", "Bearer " + std::string(api_key)});
  for (const auto& header : extra) put(header);
  return out;
}

// --header KEY=VALUE (vLLM's --header): split at the first '=', surrounding spaces dropped. The
// name must be an HTTP token and the value free of control characters (a CR/LF would inject
// headers of its own); the headers that frame the message or the connection stay the client's;
// a name given twice is refused rather than one value silently dropped.
Result<std::vector<http::Header>> parse_headers(const std::vector<std::string>& items) {
  auto is_token_char = [](unsigned char c) {
    return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  };
  std::vector<http::Header> out;
  for (const auto& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      return fail(
          Error(ErrorCode::kInvalidArgument,
                fmt::format("--header '{}': expected KEY=VALUE (e.g. --header x-request-source=ixbench)", item)));
    const std::string name(strip(std::string_view(item).substr(0, eq)));
    const std::string value(strip(std::string_view(item).substr(eq + 1)));
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char))
      return fail(
          Error(ErrorCode::kInvalidArgument,
                fmt::format("--header '{}': '{}' is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)",
                            item, name)));
    if (std::any_of(value.begin(), value.end(), [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }))
      return fail(
          Error(ErrorCode::kInvalidArgument,
                fmt::format("--header {}: the value holds a control character (CR, LF, ...); HTTP header values cannot",
                            name)));
    for (const char* owned : {"host", "content-length", "transfer-encoding", "connection", "te", "upgrade", "expect"}) {
      if (ascii_iequals(name, owned))
        return fail(Error(
            ErrorCode::kInvalidArgument,
            fmt::format(
                "--header {}: set by the client itself (it frames the request or keeps the connection); remove it",
                name)));
    }
    for (const auto& earlier : out) {
      if (ascii_iequals(earlier.name, name))
        return fail(
            Error(ErrorCode::kInvalidArgument, fmt::format("--header {} is given twice; give each header once", name)));
    }
    out.push_back({name, value});
  }
  return out;
}

int64_t retry_budget(int64_t requests) {
  return kRetryBudgetFloor + static_cast<int64_t>(std::ceil(kRetryBudgetShare * static_cast<double>(requests)));
}

bool RetryBudget::take() {
  if (used_.fetch_add(1, std::memory_order_relaxed) >= budget_) {
    used_.fetch_sub(1, std::memory_order_relaxed);
    refused_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

bool schedule_resend(http::ClientLoop& loop, Exchange& f, int max_retries, RetryBudget& budget, Rng& jitter,
                     std::function<http::Request(const Exchange&)> request) {
  if (f.attempts >= max_retries || !budget.take()) return false;
  const int64_t delay = http::retry_delay_ns(f.attempts, f.retry_after(), unix_now_s(), jitter.uniform01());
  ++f.attempts;
  f.retry_pending = true;
  const uint64_t ticket = ++f.retry_ticket;
  loop.call_at(loop.now_ns() + delay, [&loop, &f, ticket, request = std::move(request)] {
    if (!f.retry_pending || f.retry_ticket != ticket) return;
    f.retry_pending = false;
    f.restart();
    loop.submit(request(f), &f);
  });
  return true;
}

}  // namespace ix::bench
