// The front's Prometheus metrics, with vLLM's names and labels (`vllm:` prefix; `engine="0"` and
// `model_name` on every vllm: series, as vLLM v1 labels them; ixbench: series carry model_name
// only), so dashboards and scrapers written for vLLM read `ixbench sim serve` unchanged.
//
// Engine counters and gauges (running/waiting requests, KV usage, prefix cache and the KV
// offloading tier's lookups and transfers, prompt tokens by source, token totals, speculative
// decoding, vllm:cache_config_info) come from LiveEngine::metrics(); the front adds what it
// measures itself:
// TTFT, per-event inter-token time (vLLM's inter_token_latency_seconds, and its deprecated name
// time_per_output_token_seconds, observe the gap between consecutive outputs of a request),
// end-to-end latency and per-request phase (queue, prefill, decode, inference) histograms,
// finished requests by reason,
// and profiling windows (/start_profile, /stop_profile).
//
// Thread-safety: observe_*/count_* are lock-free (relaxed atomics) and may be called from any
// thread; render() reads a consistent-enough snapshot (each value atomically).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/live_engine.h"

namespace ix::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // A duration of `ns` nanoseconds: bucketed as seconds, summed exactly.
  void observe_ns(int64_t ns);
  // Appends the _bucket/_sum/_count lines of `name` with labels `labels` (k="v" pairs in name
  // order, e.g. engine="0",model_name="m"); `le` goes in its name-order place.
  void render(std::string& out, std::string_view name, std::string_view help, std::string_view labels) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  // Batched observation: callers that see many values (every token of a stream) count them into
  // `counts` (bucket_count() slots, indexed by bucket_of) and merge once.
  size_t bucket_count() const { return upper_bounds_.size() + 1; }
  size_t bucket_of(double value) const;
  void merge(std::span<const uint32_t> counts, int64_t sum_ns);

 private:
  std::vector<double> upper_bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // one per bound, plus +Inf
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> sum_ns_{0};  // values are seconds, summed in nanoseconds
};

class ServeMetrics {
 public:
  ServeMetrics();
  void observe_ttft_s(double seconds) { ttft_.observe(seconds); }
  void observe_inter_token_s(double seconds) { inter_token_.observe(seconds); }
  Histogram& inter_token() { return inter_token_; }
  // Delivery lateness: when a token event was handed to the socket minus its scheduled time
  // (engine time). With --fixed-* this is the server's own timing error (tick granularity,
  // scheduling, a busy loop); clients subtract it from what they measured to isolate their own.
  Histogram& delivery_lateness() { return delivery_lateness_; }
  // The same for each stream's first token alone: what the server adds to a measured TTFT (a
  // closed loop's requests arrive together, so their first tokens fall due together).
  void observe_first_token_lateness_s(double seconds) { first_token_lateness_.observe(seconds); }
  void observe_e2e_s(double seconds) { e2e_.observe(seconds); }
  // vLLM's per-request phase histograms, observed once per request the engine finished, from its
  // engine times (steady-clock ns): vllm:request_queue_time_seconds = first scheduled - arrival,
  // vllm:request_prefill_time_seconds = first token - first scheduled,
  // vllm:request_decode_time_seconds = last token - first token,
  // vllm:request_inference_time_seconds = last token - first scheduled (= prefill + decode, and
  // queue + inference = last token - arrival). A time before the one it follows counts as that
  // one, so no phase is negative.
  void observe_request_phases(int64_t arrival_ns, int64_t scheduled_ns, int64_t first_token_ns, int64_t last_token_ns);
  void count_finished(sim::FinishReason reason);
  void count_profile_start() { profile_starts_.fetch_add(1, std::memory_order_relaxed); }
  void count_profile_stop() { profile_stops_.fetch_add(1, std::memory_order_relaxed); }
  void count_fault() { faults_.fetch_add(1, std::memory_order_relaxed); }
  // GSM8K answer mode (--gsm8k-answers): its series are rendered once enabled. Answered requests
  // by verdict (ixbench:gsm8k_answered_total{correct}), the runaways among them, and requests whose
  // prompt held no known question (given the ordinary simulated text).
  void enable_gsm8k() { gsm8k_enabled_ = true; }
  void count_gsm8k_answered(bool correct, bool runaway);
  void count_gsm8k_unmatched() { gsm8k_unmatched_.fetch_add(1, std::memory_order_relaxed); }

  // The whole /metrics text (Prometheus exposition format 0.0.4).
  std::string render(const sim::EngineMetrics& engine, std::string_view model_name) const;

 private:
  void render_finished(std::string& out, const std::string& labels) const;
  void render_latency_histograms(std::string& out, const std::string& labels) const;
  void render_own(std::string& out, const std::string& ixbench_labels) const;
  void render_gsm8k(std::string& out, const std::string& ixbench_labels) const;
  Histogram ttft_;
  Histogram inter_token_;
  Histogram e2e_;
  Histogram queue_;
  Histogram inference_;
  Histogram prefill_;
  Histogram decode_;
  Histogram delivery_lateness_;
  Histogram first_token_lateness_;
  std::atomic<int64_t> finished_length_{0};
  std::atomic<int64_t> finished_stop_{0};
  std::atomic<int64_t> finished_abort_{0};
  std::atomic<int64_t> profile_starts_{0};
  std::atomic<int64_t> profile_stops_{0};
  std::atomic<int64_t> faults_{0};
  bool gsm8k_enabled_ = false;  // set before the server starts
  std::atomic<int64_t> gsm8k_correct_{0};
  std::atomic<int64_t> gsm8k_wrong_{0};
  std::atomic<int64_t> gsm8k_runaway_{0};
  std::atomic<int64_t> gsm8k_unmatched_{0};
};

}  // namespace ix::serve
