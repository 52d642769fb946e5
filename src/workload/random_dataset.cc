#include "workload/random_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/clock.h"
#include "common/rng.h"

namespace ix::workload {

namespace {

std::vector<RequestShape> draw(const RandomDatasetOptions& o, size_t n, std::string_view in_name,
                               std::string_view out_name) {
  Rng in_rng = Rng::stream(o.seed, in_name);
  Rng out_rng = Rng::stream(o.seed, out_name);
  const int64_t in_lo =
      std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(o.input_len) * o.range_ratio)));
  const int64_t out_lo =
      std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(o.output_len) * o.range_ratio)));
  std::vector<RequestShape> shapes(n);
  for (auto& s : shapes) s.prompt_len = in_rng.uniform_int(in_lo, o.input_len);
  for (auto& s : shapes) s.output_len = out_rng.uniform_int(out_lo, o.output_len);
  return shapes;
}

}  // namespace

Result<DatasetShapes> random_shapes(const RandomDatasetOptions& o) {
  if (o.input_len < 1 || o.output_len < 1) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--random-input-len and --random-output-len must be >= 1 (got {} and {})", o.input_len,
                            o.output_len));
  }
  if (!(o.range_ratio >= 0.0 && o.range_ratio <= 1.0)) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--random-range-ratio must be in [0, 1] (got {})", o.range_ratio));
  }
  DatasetShapes shapes;
  shapes.measured = draw(o, o.num_prompts, "input_lens", "output_lens");
  shapes.warmups = draw(o, o.num_warmups, "warmup_input_lens", "warmup_output_lens");
  return shapes;
}

RandomDataset::RandomDataset(const tok::PromptSynth& synth, PromptFormat format, std::optional<tok::ChatTemplate> chat,
                             uint64_t seed, tok::Thinking thinking)
    : synth_(&synth), format_(format), chat_(std::move(chat)), seed_(seed) {
  chat_options_.thinking = thinking;
  // Pinned so prompts are reproducible across days (harmony and templates calling strftime_now()
  // render the current date).
  chat_options_.current_date = "2026-01-01";
  plain_special_tokens_ = static_cast<int64_t>(synth.tokenizer().num_special_tokens_to_add());
}

Result<std::string> RandomDataset::prompt(size_t index, int64_t tokens) const {
  if (format_ == PromptFormat::kPlain || !chat_) {
    const int64_t text_tokens = std::max<int64_t>(1, tokens - plain_special_tokens_);
    return synth_->random_prompt(static_cast<size_t>(text_tokens), seed_, index).text;
  }
  auto content = synth_->chat_user_content(*chat_, chat_options_, static_cast<size_t>(tokens), seed_, index);
  if (!content) return std::unexpected(content.error());
  if (format_ == PromptFormat::kChatContent) return std::move(*content);
  const tok::ChatMessage message{"user", std::move(*content)};
  return chat_->render(std::span<const tok::ChatMessage>(&message, 1), chat_options_);
}

Result<int64_t> RandomDataset::min_prompt_tokens() const {
  if (format_ == PromptFormat::kPlain || !chat_) return 1;
  auto overhead = chat_->overhead_tokens(synth_->tokenizer(), chat_options_);
  if (!overhead) return std::unexpected(overhead.error());
  return static_cast<int64_t>(*overhead) + 1;
}

PromptPrefetcher::PromptPrefetcher(const RandomDataset& dataset, std::vector<std::pair<size_t, int64_t>> order,
                                   int threads, size_t lookahead)
    : dataset_(dataset),
      order_(std::move(order)),
      prompts_(order_.size()),
      errors_(order_.size()),
      ready_(std::make_unique<std::atomic<uint8_t>[]>(order_.size())),
      lookahead_(std::max<size_t>(lookahead, 1)) {
  for (size_t i = 0; i < order_.size(); ++i) ready_[i].store(0, std::memory_order_relaxed);
  threads = std::max(1, threads);
  for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { work(); });
}

PromptPrefetcher::~PromptPrefetcher() {
  stop_.store(true);
  for (auto& t : threads_) t.join();
}

void PromptPrefetcher::work() {
  while (!stop_.load(std::memory_order_relaxed)) {
    const size_t k = next_.fetch_add(1);
    if (k >= order_.size()) return;
    while (k >= asked_.load(std::memory_order_acquire) + lookahead_) {
      if (stop_.load(std::memory_order_relaxed)) return;
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
    try {
      auto text = dataset_.prompt(order_[k].first, order_[k].second);
      if (text) {
        prompts_[k] = std::move(*text);
      } else {
        errors_[k] = text.error();
      }
    } catch (const std::exception& e) {  // e.g. bad_alloc: reported with the send, not a terminate
      errors_[k] = Error(ErrorCode::kInternal,
                         fmt::format("making the prompt of {} tokens failed: {}", order_[k].second, e.what()));
    }
    ready_[k].store(1, std::memory_order_release);
    { std::lock_guard lock(mutex_); }
    cv_.notify_all();
  }
}

Result<const std::string*> PromptPrefetcher::get(size_t k, int64_t* waited_ns) {
  if (waited_ns) *waited_ns = 0;
  if (k >= order_.size()) return fail(ErrorCode::kInternal, "prompt index out of range");
  size_t asked = asked_.load(std::memory_order_relaxed);
  while (k + 1 > asked && !asked_.compare_exchange_weak(asked, k + 1)) {
  }
  if (k + 1 > asked) {
    { std::lock_guard lock(mutex_); }
    cv_.notify_all();
  }
  if (!ready_[k].load(std::memory_order_acquire)) {
    const int64_t t0 = SteadyClock().now_ns();
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return ready_[k].load(std::memory_order_acquire) != 0; });
    if (waited_ns) *waited_ns = SteadyClock().now_ns() - t0;
  }
  if (errors_[k]) return std::unexpected(*errors_[k]);
  return &prompts_[k];
}

Result<std::string> PromptPrefetcher::take(size_t k, int64_t* waited_ns) {
  auto p = get(k, waited_ns);
  if (!p) return std::unexpected(p.error());
  return std::move(prompts_[k]);
}

Result<void> PromptPrefetcher::wait_for_first(size_t k) {
  k = std::min(k, order_.size());
  for (size_t i = 0; i < k; ++i) {
    auto p = get(i);
    if (!p) return std::unexpected(p.error());
  }
  return {};
}

size_t PromptPrefetcher::ready_count() const {
  size_t n = 0;
  for (size_t i = 0; i < order_.size() && ready_[i].load(std::memory_order_acquire); ++i) ++n;
  return n;
}

}  // namespace ix::workload
