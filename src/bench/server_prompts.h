// Random prompts of exact token lengths made through the server under test, for
// `bench serve --tokenizer-from-server`: no local tokenizer, only the server's vLLM endpoints
// POST /tokenize and POST /detokenize.
//
// Method (once per run, a few dozen requests):
//   1. a separator: the one token the server gives "\n" (else "|", else "#");
//   2. the vocabulary's words: /detokenize of ids 0..32767 in batches of 2048, each id between
//      two separators, split on the separator's text; the pieces that are a space and 2-12
//      lowercase ASCII letters (" word") are candidates. A batch after the first that the server
//      refuses (ids past its vocabulary: 400) ends the scan;
//   3. the pool: candidates checked by /tokenize in groups of 32 (the group's text must count 32
//      tokens, so every " word" is one token and no two merge); the first 4096 that pass, in id
//      order. Fewer than 256 is an error;
//   4. what the server adds: kPlain, the tokens of a one-word prompt with add_special_tokens
//      minus one (the BOS); kChatContent, the tokens of a two-word user message rendered with
//      add_generation_prompt minus two (the template's own tokens).
// Prompt (index, N): words drawn from the pool by the seed's stream for that index, then counted
// by /tokenize exactly as the measured request will be tokenized; when the count is off (a
// template that trims or joins the first word), the number of words moves by the difference and
// the prompt is counted again (a prompt of k words is a prefix of the one of k + 1, so this
// converges at once unless the first word is the cause); after 4 rounds, or when even one word
// is too many, the prompt is drawn again from another stream of its index (16 rounds in all).
// Every returned prompt was counted by the server at its target.
//
// Counts (the semantics of workload::RandomDataset):
//   kPlain        completions text; the server counts the prompt with add_special_tokens (vLLM's
//                 completions default), and the text has N minus the server's special tokens
//                 (vLLM's random dataset subtracts num_special_tokens_to_add), at least one word:
//                 the server counts max(N, specials + 1);
//   kChatContent  user message content; /tokenize of [{"role": "user", "content": c}] with
//                 add_generation_prompt (what a chat completion renders) counts N. N below the
//                 template's tokens + 1 is an error.
// kChatRendered (a client-side template) is not possible without a tokenizer: kUnsupported.
//
// Determinism: the same seed, index and length give byte-identical prompts from servers with the
// same tokenizer (and chat template): the pool and every decision depend only on the server's
// answers, never on timing.
//
// Speed: requests run `concurrency` at a time over keep-alive connections on one event loop
// (http::ClientLoop); thousands of prompts take seconds, bounded by the server's tokenization.
//
// Errors name the endpoint and what the server answered: kUnsupported when /tokenize or
// /detokenize is missing (404/405/501) or answers in another shape, kUnavailable when the
// server cannot be reached or fails (5xx), kInvalidArgument for an impossible length.
//
// Thread-safety: a ServerPromptMaker is immutable after create(); make() may be called from
// several threads at once (each call runs its own event loop on the calling thread).
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "http/client.h"
#include "workload/random_dataset.h"

namespace ix::bench {

struct ServerPromptOptions {
  http::Url base_url;
  std::string model;                  // "model" of every /tokenize and /detokenize body ("" = left out)
  std::vector<http::Header> headers;  // sent with every request (Authorization, --header)
  bool verify_tls = true;
  uint64_t seed = 0;
  workload::PromptFormat format = workload::PromptFormat::kPlain;  // kPlain or kChatContent
  int64_t request_timeout_ns = 60'000'000'000;                     // per request
  size_t concurrency = 32;                                         // requests in flight
  // Merged into every /tokenize body (replacing the defaults above): the fields of the measured
  // requests that change how the server tokenizes them, e.g. add_special_tokens or
  // chat_template_kwargs.
  boost::json::object tokenize_extra_body;
};

class ServerPromptMaker {
 public:
  // Steps 1-4 above. Errors as in the header comment.
  static Result<ServerPromptMaker> create(ServerPromptOptions options);

  // Prompts for order[k] = (global index, tokens), in that order (k-th prompt for order[k]).
  // kInvalidArgument for a length below min_prompt_tokens() (chat) or < 1.
  Result<std::vector<std::string>> make(std::span<const std::pair<size_t, int64_t>> order) const;

  // The fewest tokens a prompt can have: 1 (kPlain), the template's tokens + 1 (kChatContent).
  int64_t min_prompt_tokens() const;
  // kPlain: the tokens the server adds to a completion prompt (DeepSeek's BOS: 1).
  int64_t special_tokens() const { return special_tokens_; }
  // kChatContent: the tokens of the rendered conversation around the user content.
  int64_t chat_overhead_tokens() const { return chat_overhead_tokens_; }
  // The " word" pool, in the server's id order.
  const std::vector<std::string>& pool() const { return pool_; }

 private:
  explicit ServerPromptMaker(ServerPromptOptions options) : options_(std::move(options)) {}

  ServerPromptOptions options_;
  std::vector<std::string> pool_;
  int64_t special_tokens_ = 0;
  int64_t chat_overhead_tokens_ = 0;
};

// ServerPromptMaker::create(options) then make(order).
Result<std::vector<std::string>> make_prompts_via_server(const ServerPromptOptions& options,
                                                         std::span<const std::pair<size_t, int64_t>> order);

}  // namespace ix::bench
