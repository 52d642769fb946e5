// How a benchmark request travels: one streamed request/response on a client loop, turned into a
// RequestRecord (metrics/serve_result.h). Shared by every runner (`bench serve`, `bench replay`):
// the runners decide when a request goes and what it holds; an Exchange only measures it.
//
// Timing: send = just before the request bytes are written; each SSE event is stamped with the
// time its bytes were read, before JSON parsing (http/client.h). Content-bearing events are
// those whose choice carries text (or reasoning text), or whose usage delta shows new tokens; a
// role-only first chat chunk is not a token. A clean end is classified (no event stream, no
// terminal event, no content); usage counts that cannot be true fail the request (kBadUsage).
//
// Resends: a failure that may be resent (connect, reset, 429, 5xx) is offered to the owner
// (ExchangeOwner::resend); schedule_resend() does it within the run's RetryBudget.
//
// Thread-safety: an Exchange, its owner and its loop live on one thread; RetryBudget is shared by
// all of a run's threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/rng.h"
#include "http/client.h"
#include "http/sse.h"
#include "metrics/serve_result.h"
#include "openai/backend.h"

namespace ix::bench {

class Exchange;

// What an Exchange needs from the loop that owns it (called on the loop's thread).
class ExchangeOwner {
 public:
  virtual ~ExchangeOwner() = default;
  virtual openai::StreamChunkDecoder& chunk_decoder() = 0;
  // A content event carried `tokens` tokens (progress lines).
  virtual void count_streamed(int64_t tokens) = 0;
  // Whether a failure may be resent (default: retriable()).
  virtual bool resendable(const metrics::RequestRecord& rec) const;
  // A failure that may be resent: true when a resend was scheduled (the exchange stays open).
  virtual bool resend(Exchange& exchange) = 0;
  // The record is final (success or failure); the owner takes it and releases the exchange.
  virtual void complete(Exchange& exchange) = 0;
};

class Exchange final : public http::ResponseSink {
 public:
  explicit Exchange(ExchangeOwner* owner) : owner_(owner) {}

  // A new request: its record starts with these fields; everything measured is cleared.
  void reset(uint64_t tag, int64_t scheduled_ns, int64_t prompt_len, int64_t max_tokens, bool warmup);
  // A resend of the same request: the measurements are cleared, the request fields kept.
  void restart();

  void on_send(int64_t t_ns) override { rec.send_ns = t_ns; }
  void on_head(const http::ResponseHead& head, int64_t first_byte_ns) override;
  bool on_body(std::string_view bytes, int64_t t_ns) override;
  void on_done(http::FailureKind kind, std::string_view message, int64_t t_ns) override;

  uint64_t tag = 0;  // the owner's name for the request (a send position, a stream turn)
  metrics::RequestRecord rec;
  int64_t server_prompt_tokens = -1;  // usage.prompt_tokens when the server sent it
  std::string body;                   // the request body (kept for resends)
  std::string text;                   // the generated text streamed so far
  // With split_reasoning, reasoning text (delta.reasoning_content / reasoning) goes to `reasoning`
  // instead of `text` (an eval scores the answer, not the thinking).
  bool split_reasoning = false;
  std::string reasoning;
  std::string finish_reason;  // choices[0].finish_reason of the stream ("stop", "length"), when sent
  int attempts = 0;
  // A resend is scheduled (backoff); the ticket tells a stale timer from the current one.
  bool retry_pending = false;
  uint64_t retry_ticket = 0;
  const std::string& retry_after() const { return retry_after_; }

 private:
  bool on_event(const http::SseEvent& event, int64_t t_ns);
  std::optional<std::string> bad_usage(const openai::StreamChunk& chunk) const;
  void classify_clean_end();
  void fail_with(metrics::ErrorKind kind, std::string message);

  ExchangeOwner* owner_;
  http::SseDecoder sse_;
  int64_t last_usage_ = 0;
  bool saw_done_ = false;
  bool saw_finish_ = false;
  std::string error_body_;
  std::string retry_after_;
};

// Exchanges reused across requests (a run makes one per request in flight, not per request).
class ExchangePool {
 public:
  explicit ExchangePool(ExchangeOwner* owner) : owner_(owner) {}
  Exchange* acquire();
  void release(Exchange* exchange) { free_.push_back(exchange); }
  const std::vector<std::unique_ptr<Exchange>>& all() const { return all_; }

 private:
  ExchangeOwner* owner_;
  std::vector<std::unique_ptr<Exchange>> all_;
  std::vector<Exchange*> free_;
};

// Whether a failed request may be resent: connect errors, resets, 429 and 5xx.
bool retriable(const metrics::RequestRecord& rec);

// Retries are bounded per request and over the run (a retry budget, as Envoy's: retries may add
// at most kRetryBudgetShare of the run's requests, plus kRetryBudgetFloor so a short run against
// a flaky server still retries). A retry the budget refuses leaves the request failed.
inline constexpr int kMaxRetriesPerRequest = 20;
inline constexpr double kRetryBudgetShare = 0.2;
inline constexpr int64_t kRetryBudgetFloor = 10;
// The retries a run of `requests` (warmups and measured) may make in all.
int64_t retry_budget(int64_t requests);

class RetryBudget {
 public:
  explicit RetryBudget(int64_t budget = 0) : budget_(budget) {}
  void set(int64_t budget) { budget_ = budget; }
  // Takes one retry from the budget; false (counted as refused) when it is spent.
  bool take();
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  int64_t budget_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> refused_{0};
};

// Schedules a resend of `exchange` on `loop` after its backoff (or the server's Retry-After),
// when it has attempts left (< max_retries) and the budget allows; `request` rebuilds the
// request at send time. False when no resend was scheduled.
bool schedule_resend(http::ClientLoop& loop, Exchange& exchange, int max_retries, RetryBudget& budget, Rng& jitter,
                     std::function<http::Request(const Exchange&)> request);

// The headers of a request to the server: `defaults` (the client's own), Authorization from
// `api_key`, then `extra` (--header), each replacing an earlier one of the same name
// (case-insensitive), as vLLM's extra headers do.
std::vector<http::Header> request_headers(std::string_view api_key, const std::vector<http::Header>& extra,
                                          std::vector<http::Header> defaults);

// --header KEY=VALUE items (vLLM's --header) as headers: split at the first '=', surrounding
// spaces dropped; refused (kInvalidArgument): a name that is not an HTTP token, a value with a
// control character, a header that frames the message or the connection, a name given twice.
Result<std::vector<http::Header>> parse_headers(const std::vector<std::string>& items);

// The wall clock, seconds since the Unix epoch.
double unix_now_s();

}  // namespace ix::bench
