// Sends an eval's requests and collects the answers, on the benchmarks' request engine
// (bench/exchange.h: the same streaming client, classification and resends as `bench serve`).
//
// Closed loop: `concurrency` requests in flight, the next one sent as one finishes, in order.
// A failure that may be resent (connect, reset, timeout, a stream cut short, 429, 5xx) is resent
// with backoff (or the server's Retry-After) up to `max_retries` times; every resend and every
// timeout is counted per request. A request that still fails is an answer-less reply with its
// error. The run stops early, leaving the rest unsent, on a signal, when the watched server
// process exits, or when a request fails to connect after all its retries (the server is gone):
// the output says so (`complete` false, `stop_reason`), and every reply already received is kept.
//
// Thread-safety: run_eval_requests() is a blocking call; it runs the client loop on a thread of
// its own and calls on_progress on the calling thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "http/client.h"

namespace ix::eval {

struct EvalReply {
  bool sent = false;               // false: the run stopped before this request went out
  bool ok = false;                 // an answer arrived
  std::string text;                // the answer (content; the reasoning text when the content is empty)
  std::string reasoning;           // reasoning text the server streamed apart from the content
  std::string finish_reason;       // "stop", "length", ... as the server sent it
  int64_t completion_tokens = -1;  // usage.completion_tokens when sent
  int retries = 0;                 // resends of this request
  int timeouts = 0;                // attempts that ran past the request timeout
  std::string error;               // the last failure ("" when ok)
  double latency_s = 0.0;          // last attempt: send to end
};

struct EvalProgress {
  int64_t answered = 0;
  int64_t failed = 0;
  int64_t in_flight = 0;
  int64_t retries = 0;
  int64_t timeouts = 0;
  int64_t total = 0;
  double elapsed_s = 0.0;
};

struct EvalRunOptions {
  http::Url base;
  std::string endpoint = "/v1/chat/completions";
  std::string api_key;                      // "Authorization: Bearer"; never logged or stored
  std::vector<http::Header> extra_headers;  // --header
  bool verify_tls = true;
  int64_t concurrency = 64;
  int64_t request_timeout_ns = 1'800'000'000'000;  // lm-eval's timeout=1800 in InferenceX
  int max_retries = 5;                             // lm-eval's max_retries=5 in InferenceX
  int64_t max_tokens = 0;                          // the bodies' max_tokens (a usage count above it fails the request)
  pid_t server_pid = 0;                            // 0 = do not watch
  const std::atomic<bool>* interrupt = nullptr;
  std::function<void(const EvalProgress&)> on_progress;  // on the calling thread
  int progress_interval_ms = 1000;
};

struct EvalRunOutput {
  std::vector<EvalReply> replies;  // one per body, in order
  bool complete = true;            // every request was sent and answered
  std::string stop_reason;         // why the run stopped early ("" when it did not)
  int64_t retries = 0;
  int64_t timeouts = 0;
  double duration_s = 0.0;
};

// Sends each of `bodies` (JSON request bodies, "stream": true) to base + endpoint. Errors:
// kInvalidArgument (concurrency < 1), kUnavailable when the host does not resolve. A server that
// fails is data in the replies.
Result<EvalRunOutput> run_eval_requests(const EvalRunOptions& options, const std::vector<std::string>& bodies);

}  // namespace ix::eval
