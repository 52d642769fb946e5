// The `--dataset-name random` workload: prompts of exact token lengths under the model's
// tokenizer, output lengths to request, seeded.
//
// Lengths (InferenceX semantics): input and output lengths are drawn independently and uniformly
// from the integers [⌊r·L⌋, L] (r = --random-range-ratio, at least 1 token), from the seed's
// "input_lens" / "output_lens" streams. Prompt text comes from tok::PromptSynth, a pure function
// of (seed, index) with exactly the drawn number of tokens; with a chat template, the template's
// overhead is subtracted so the *rendered* prompt has the drawn length (completions backends get
// the rendered text; chat backends get the user content and the server renders it).
//
// Warmup requests use their own length streams and prompt indices after the measured ones, so
// they never pre-warm the prefix cache for measured prompts.
//
// Thread-safety: RandomDataset is immutable after creation; prompt(i) is thread-safe.
// PromptPrefetcher generates on its own threads; get() may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/prompt_synth.h"

namespace ix::workload {

struct RandomDatasetOptions {
  int64_t input_len = 1024;
  int64_t output_len = 128;
  double range_ratio = 0.8;
  size_t num_prompts = 0;
  size_t num_warmups = 0;
  uint64_t seed = 0;
};

struct RequestShape {
  int64_t prompt_len = 0;
  int64_t output_len = 0;
};

// Lengths for the measured requests, then for the warmups. Errors: kInvalidArgument for
// non-positive lengths or a ratio outside [0, 1].
struct DatasetShapes {
  std::vector<RequestShape> measured;
  std::vector<RequestShape> warmups;
};
Result<DatasetShapes> random_shapes(const RandomDatasetOptions& options);

enum class PromptFormat {
  // Random text the server encodes (with the tokenizer's special tokens, as vLLM's completions
  // endpoint does: DeepSeek's BOS) to exactly prompt_len tokens: prompt_len minus the special
  // tokens of text, as vLLM's RandomDataset (num_special_tokens_to_add); at least one.
  kPlain,
  kChatRendered,  // chat template applied client-side; rendered text has prompt_len tokens
  kChatContent,   // user message content; the server's rendering has prompt_len tokens
};

class RandomDataset {
 public:
  // `synth` (and its tokenizer) must outlive the dataset. `chat` is required for the chat
  // formats.
  // `thinking` is the chat template's thinking switch (kOn for DeepSeek-V4's thinking mode).
  RandomDataset(const tok::PromptSynth& synth, PromptFormat format, std::optional<tok::ChatTemplate> chat,
                uint64_t seed, tok::Thinking thinking = tok::Thinking::kDefault);
  // Prompt for global index `index` (measured 0..n-1, warmups n..) with `tokens` tokens.
  // Errors: kInvalidArgument when a chat prompt is shorter than the template overhead + 1.
  Result<std::string> prompt(size_t index, int64_t tokens) const;
  // The fewest tokens prompt() can make: 1, or with a chat format the template's own tokens + 1
  // (checked against the drawn lengths before a run, so a short draw cannot end it midway).
  Result<int64_t> min_prompt_tokens() const;

 private:
  const tok::PromptSynth* synth_;
  PromptFormat format_;
  std::optional<tok::ChatTemplate> chat_;
  tok::ChatOptions chat_options_;
  uint64_t seed_;
  int64_t plain_special_tokens_ = 0;  // the tokenizer's num_special_tokens_to_add()
};

// Generates prompts ahead of the send schedule on background threads, in the order they will be
// sent, so synthesis never sits on the send path. get(k)/take(k) return at once when prompt k is
// ready (the normal case) and otherwise wait, reporting the wait so the runner can flag it. At
// most `lookahead` prompts beyond the highest one asked for are made, so memory stays bounded
// for long runs (take() releases a prompt once it has been sent).
class PromptPrefetcher {
 public:
  // order[k] = (global index, tokens) of the k-th prompt to be sent.
  PromptPrefetcher(const RandomDataset& dataset, std::vector<std::pair<size_t, int64_t>> order, int threads,
                   size_t lookahead = 65536);
  ~PromptPrefetcher();
  PromptPrefetcher(const PromptPrefetcher&) = delete;
  PromptPrefetcher& operator=(const PromptPrefetcher&) = delete;

  // Blocks until the prompt at position k of `order` is ready. `waited_ns` (optional) receives
  // the time spent waiting. Errors: the synthesis error of that prompt.
  Result<const std::string*> get(size_t k, int64_t* waited_ns = nullptr);
  // Like get(), but moves the prompt out (each k may be taken once).
  Result<std::string> take(size_t k, int64_t* waited_ns = nullptr);
  // Waits for the first `k` prompts (startup: what must exist before the clock starts).
  Result<void> wait_for_first(size_t k);
  size_t ready_count() const;

 private:
  void work();

  const RandomDataset& dataset_;
  std::vector<std::pair<size_t, int64_t>> order_;
  std::vector<std::string> prompts_;
  std::vector<std::optional<Error>> errors_;
  std::unique_ptr<std::atomic<uint8_t>[]> ready_;
  std::atomic<size_t> next_{0};
  std::atomic<size_t> asked_{0};  // one past the highest k asked for
  size_t lookahead_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
};

}  // namespace ix::workload
