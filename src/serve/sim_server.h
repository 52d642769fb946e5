// `ixbench sim serve`: an OpenAI-compatible HTTP server in front of a sim::LiveEngine.
//
// Endpoints (vLLM's shapes):
//   POST /v1/completions, /v1/chat/completions   streaming (SSE: `data: {json}\n\n` ... `data:
//        [DONE]\n\n`, chunked transfer encoding) and non-streaming; chunks as vLLM's
//        (text_completion / chat.completion.chunk; chat streams start with a role chunk whose
//        content is ""); finish_reason on the last token's chunk; a usage chunk
//        (choices: []) before [DONE] when stream_options.include_usage; usage carries
//        prompt_tokens_details.cached_tokens.
//   GET  /v1/models, /health (503 while --fault-health-delay-ms runs), /metrics (Prometheus,
//        vLLM names), /version;  POST /tokenize, /detokenize (vLLM's shapes; /detokenize and
//        return_token_strs need a real tokenizer: 501 with the approximate codec);  POST|GET
//        /start_profile, /stop_profile (record a profiling window, 200).
//   Bad requests get 400 with OpenAI error JSON naming the field in "param"; unknown model 404;
//   unknown path 404; wrong method 405; a body whose Content-Type is not application/json 415
//   (a missing Content-Type is accepted); a prompt over max_prompt_bytes or a body over
//   max_body_bytes 413; 503 when more than kMaxQueuedPromptBytes wait for a prompt worker.
//
// Bodies over kInlineBodyBytes are parsed and tokenized on prompt workers (PromptWorkers), never
// on an event loop: the loop defers the response (http::Responder) and schedules the request when
// the worker is done, so a big prompt delays no other connection.
//   Stop strings and stop_token_ids are matched on the output tokens (text and ids), not before
//   min_tokens tokens (vLLM); without max_tokens a chat request's budget is max_model_len - prompt
//   but the cost model's natural length is drawn as for kDefaultBudgetNaturalMaxTokens tokens.
//
// Tokens come from the engine as TokenEvents on the engine's thread; the front queues them per
// request (run-length, so a burst costs O(1) memory) and wakes the connection, which renders every
// event due at once into one write from pre-rendered chunk templates. With the NoDelayEngine the
// whole output is due at submit, so the stream is paced only by how fast the client reads. With
// the FixedScheduleEngine no engine thread is involved: the request is admitted to the schedule
// and the connection's own event loop produces each event when its timer fires at the due time
// (one timer per stream in the loop's timer queue), so delivery scales with the loop threads.
//
// With SimServeOptions::gsm8k (--gsm8k-answers) the output text of a request whose prompt holds a
// GSM8K test question is its scripted answer (serve/gsm8k_answers.h) instead of the passage: the
// engine generates the answer's tokens (its natural end) or, for a runaway, max_tokens.
//
// Thread-safety: start() and stop() from one controlling thread; port()/connection_count() from
// any thread. The engine and codec are owned by the server and outlive every connection.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "serve/fault_injector.h"
#include "serve/gsm8k_answers.h"
#include "serve/text_codec.h"
#include "sim/live_engine.h"

namespace ix::serve {

// When a request leaves max_tokens to its default budget (chat: max_model_len - prompt, often
// 100k+ tokens), the cost model draws the natural EOS length from [512, 1024] (its usual rule,
// uniform in [cap / 2, cap], with this cap) instead of the second half of the budget, which made
// a "Hi" stream for minutes. ignore_eos still generates the whole budget.
inline constexpr int32_t kDefaultBudgetNaturalMaxTokens = 1024;

// Prompt limit (--max-prompt-bytes): 4 MiB is 32 bytes per token of a 131072-token context, 8 times
// what English text takes (~4 bytes per token), so every prompt that can fit the context windows
// ixbench simulates passes, and a bigger one is refused with 413 before it is tokenized (a 4 MB
// prompt without spaces takes seconds of a worker's time).
inline constexpr int64_t kDefaultMaxPromptBytes = 4 * 1024 * 1024;
// Body limit (--max-body-bytes): room for a maximal prompt with every byte JSON-escaped as \u00XX.
inline constexpr int64_t kDefaultMaxBodyBytes = 32 * 1024 * 1024;
// Request bodies larger than this are parsed and tokenized on a prompt worker, not on the loop:
// up to 1 KiB costs at most ~1.5 ms even without spaces, and token-id prompts of capacity runs stay
// on the loop.
inline constexpr size_t kInlineBodyBytes = 1024;
// Bodies waiting for a prompt worker, at most (beyond: 503 with Retry-After).
inline constexpr size_t kMaxQueuedPromptBytes = 64 * 1024 * 1024;

struct SimServeOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  int threads = 0;                         // event-loop threads; 0 = number of cores
  std::string model_name = "ixbench-sim";  // the served model name (/v1/models, "model" fields)
  // Further names (vLLM's --served-model-name takes several; the first is model_name, the one
  // responses report): each is accepted in a request's "model" and listed by /v1/models.
  std::vector<std::string> model_aliases;
  uint64_t seed = 0;  // response ids, output text offsets and GSM8K verdicts
  FaultOptions faults;
  int64_t request_timeout_ms = 30000;
  int64_t idle_timeout_ms = 300000;
  int64_t max_prompt_bytes = kDefaultMaxPromptBytes;  // prompt text (chat: roles and contents) -> 413
  int64_t max_body_bytes = kDefaultMaxBodyBytes;      // request body -> 413
  int tokenize_threads = 0;                           // prompt workers; 0 = as many as event-loop threads
  // One line describing the engine, for /v1/models' "ixbench" block and the start log.
  std::string engine_description;
  // GSM8K answer mode; its answer key is loaded (and the start fails on its errors) in start().
  std::optional<Gsm8kAnswerOptions> gsm8k;
};

class SimServer {
 public:
  static Result<std::unique_ptr<SimServer>> start(const SimServeOptions& options,
                                                  std::unique_ptr<sim::LiveEngine> engine,
                                                  std::unique_ptr<TextCodec> codec);
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  uint16_t port() const;
  size_t connection_count() const;
  // Stops accepting, closes connections (their engine requests are cancelled), joins threads (a
  // prompt being tokenized is finished first).
  void stop();

  struct Impl;

 private:
  explicit SimServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Runs a server until SIGINT/SIGTERM: prints "listening on http://<host>:<port>" (an IPv6 host in
// brackets) as the first stdout line (tests and scripts wait for it), logs the configuration to
// stderr.
Result<void> run_until_signalled(const SimServeOptions& options, std::unique_ptr<sim::LiveEngine> engine,
                                 std::unique_ptr<TextCodec> codec);

}  // namespace ix::serve
