#include "serve/serve_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace ix::serve {
namespace {

// vLLM v1's bucket boundaries (vllm/v1/metrics/loggers.py).
std::vector<double> ttft_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}
std::vector<double> tpot_buckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
}
// 1 µs .. 10 s, ten log-spaced bounds per decade (±12 % resolution for percentiles).
std::vector<double> lateness_buckets() {
  std::vector<double> bounds;
  for (int exponent = -6; exponent <= 0; ++exponent) {
    // Parsed from decimal text, so each bound is the double nearest its decimal (prints as "1.6e-06").
    for (const char* m : {"1", "1.25", "1.6", "2", "2.5", "3.2", "4", "5", "6.3", "8"}) {
      bounds.push_back(std::stod(fmt::format("{}e{}", m, exponent)));
    }
  }
  bounds.push_back(10.0);
  return bounds;
}
// vLLM's request_latency_buckets: e2e latency and the per-request phase histograms.
std::vector<double> e2e_buckets() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

// Numbers as Python's prometheus_client prints them (what vLLM's /metrics shows): shortest
// round-trip form, integral values with ".0" ("3.0", le="2560.0").
std::string number(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

// `labels` (k="v" pairs, comma-separated, in name order) with key="value" added in name order, as
// prometheus_client, vLLM's exporter, prints every sample's labels (sorted by name).
std::string with_label(std::string_view labels, std::string_view key, std::string_view value) {
  const std::string added = fmt::format("{}=\"{}\"", key, value);
  size_t pos = 0;  // start of the first pair whose name sorts after `key`
  while (pos < labels.size()) {
    const size_t eq = labels.find('=', pos);
    if (eq == std::string_view::npos || labels.substr(pos, eq - pos) > key) break;
    size_t i = eq + 2;  // inside the quoted value; escapes are backslash pairs
    while (i < labels.size() && labels[i] != '"') i += labels[i] == '\\' ? 2 : 1;
    pos = std::min(labels.size(), i + 1);
    if (pos < labels.size() && labels[pos] == ',') ++pos;
  }
  if (labels.empty()) return added;
  if (pos >= labels.size()) return fmt::format("{},{}", labels, added);
  return fmt::format("{}{},{}", labels.substr(0, pos), added, labels.substr(pos));
}

void gauge(std::string& out, std::string_view name, std::string_view help, std::string_view type,
           std::string_view labels, double value) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n{}{{{}}} {}\n", name, help, name, type, name,
                 labels, number(value));
}

// Python's str() of a value, as vLLM's info gauges print their labels.
std::string python_str(bool value) {
  return value ? "True" : "False";
}
std::string python_optional(double value) {
  return value > 0 ? number(value) : "None";
}

// vLLM's vllm:cache_config_info: an info gauge (value 1) whose labels are CacheConfig's fields
// (those the simulator has), in name order, with the engine index and no model name.
void render_cache_config(std::string& out, const sim::CacheConfigInfo& c) {
  const std::string labels = fmt::format(
      "block_size=\"{}\",cache_dtype=\"auto\",enable_prefix_caching=\"{}\",engine=\"0\",gpu_memory_utilization=\"{}\","
      "kv_offloading_backend=\"{}\",kv_offloading_size=\"{}\",num_cpu_blocks=\"{}\",num_gpu_blocks=\"{}\","
      "num_gpu_blocks_override=\"{}\"",
      c.block_size, python_str(c.enable_prefix_caching), number(c.gpu_memory_utilization), c.kv_offloading_backend,
      python_optional(c.kv_offloading_size_gib), c.num_cpu_blocks > 0 ? std::to_string(c.num_cpu_blocks) : "None",
      c.num_gpu_blocks, c.num_gpu_blocks_override > 0 ? std::to_string(c.num_gpu_blocks_override) : "None");
  gauge(out, "vllm:cache_config_info", "Information of the LLMEngine CacheConfig", "gauge", labels, 1.0);
}

// A counter with one series per value of label `key` (vLLM's labelled counters).
void labelled_counter(std::string& out, std::string_view name, std::string_view help, std::string_view labels,
                      std::string_view key, std::initializer_list<std::pair<std::string_view, double>> series) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} counter\n", name, help, name);
  for (const auto& [value, count] : series)
    fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, with_label(labels, key, value), number(count));
}

// Prompt tokens by where their KV came from (vLLM's PromptTokenStats: local_compute +
// local_cache_hit + external_kv_transfer = prompt tokens), and the cached ones.
void render_prompt_sources(std::string& out, const sim::EngineMetrics& e, std::string_view labels) {
  const double gpu = static_cast<double>(e.prefix_cache_hits);
  const double external = static_cast<double>(e.external_prefix_cache_hits);
  const double computed = std::max(0.0, static_cast<double>(e.prompt_tokens_total) - gpu - external);
  labelled_counter(out, "vllm:prompt_tokens_by_source_total", "Number of prompt tokens by source.", labels, "source",
                   {{"local_compute", computed}, {"local_cache_hit", gpu}, {"external_kv_transfer", external}});
  gauge(out, "vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local + external).", "counter", labels,
        gpu + external);
}

// The OffloadingConnector's transfer counters (vllm/distributed/kv_transfer/kv_connector/v1/
// offloading/metrics.py): the transfer_type-labelled totals and their flat load/store successors.
void render_offload(std::string& out, const sim::EngineMetrics& e, std::string_view labels,
                    std::string_view ixbench_labels) {
  const double loaded = static_cast<double>(e.kv_offload_bytes_cpu_to_gpu);
  const double stored = static_cast<double>(e.kv_offload_bytes_gpu_to_cpu);
  labelled_counter(out, "vllm:kv_offload_total_bytes_total", "Number of bytes offloaded by KV connector", labels,
                   "transfer_type", {{"CPU_to_GPU", loaded}, {"GPU_to_CPU", stored}});
  labelled_counter(out, "vllm:kv_offload_total_time_total", "Total time measured by all KV offloading operations",
                   labels, "transfer_type",
                   {{"CPU_to_GPU", e.kv_offload_seconds_cpu_to_gpu}, {"GPU_to_CPU", e.kv_offload_seconds_gpu_to_cpu}});
  gauge(out, "vllm:kv_offload_load_bytes_total", "Total bytes loaded from offload storage to GPU.", "counter", labels,
        loaded);
  gauge(out, "vllm:kv_offload_load_time_total", "Total load time from offload storage to GPU, in seconds.", "counter",
        labels, e.kv_offload_seconds_cpu_to_gpu);
  gauge(out, "vllm:kv_offload_store_bytes_total", "Total bytes stored from GPU to offload storage.", "counter", labels,
        stored);
  gauge(out, "vllm:kv_offload_store_time_total", "Total store time from GPU to offload storage, in seconds.", "counter",
        labels, e.kv_offload_seconds_gpu_to_cpu);
  gauge(out, "ixbench:kv_offload_cpu_cache_fill_perc",
        "Fraction of the CPU offload tier's blocks holding KV (mean over scheduler ranks). 1 means full.", "gauge",
        ixbench_labels, e.cpu_kv_cache_usage_perc);
}

// A label value in the exposition format: backslash, quote and newline escaped.
std::string escape_label(std::string_view value) {
  std::string escaped;
  for (char c : value) {
    if (c == '\\' || c == '"') escaped += '\\';
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    escaped += c;
  }
  return escaped;
}

// The engine's own gauges and counters, in vLLM's names and order.
void render_engine_series(std::string& out, const sim::EngineMetrics& engine, const std::string& labels) {
  gauge(out, "vllm:num_requests_running", "Number of requests in model execution batches.", "gauge", labels,
        static_cast<double>(engine.num_requests_running));
  gauge(out, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", "gauge", labels,
        static_cast<double>(engine.num_requests_waiting));
  gauge(out, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "gauge", labels,
        engine.kv_cache_usage_perc);
  gauge(out, "vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.",
        "counter", labels, static_cast<double>(engine.prefix_cache_queries));
  gauge(out, "vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", "counter",
        labels, static_cast<double>(engine.prefix_cache_hits));
  gauge(out, "vllm:external_prefix_cache_queries_total",
        "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried "
        "tokens.",
        "counter", labels, static_cast<double>(engine.external_prefix_cache_queries));
  gauge(out, "vllm:external_prefix_cache_hits_total",
        "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached "
        "tokens.",
        "counter", labels, static_cast<double>(engine.external_prefix_cache_hits));
  gauge(out, "vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", "counter", labels,
        static_cast<double>(engine.num_preemptions));
  gauge(out, "vllm:prompt_tokens_total", "Number of prefill tokens processed.", "counter", labels,
        static_cast<double>(engine.prompt_tokens_total));
  render_prompt_sources(out, engine, labels);
  gauge(out, "vllm:generation_tokens_total", "Number of generation tokens processed.", "counter", labels,
        static_cast<double>(engine.generation_tokens_total));
  gauge(out, "vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", "counter", labels,
        static_cast<double>(engine.spec_decode_num_drafts));
  gauge(out, "vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", "counter", labels,
        static_cast<double>(engine.spec_decode_num_draft_tokens));
  gauge(out, "vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", "counter", labels,
        static_cast<double>(engine.spec_decode_num_accepted_tokens));
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(upper_bounds_.size() + 1)) {
  for (size_t index = 0; index <= upper_bounds_.size(); ++index) buckets_[index].store(0);
}

void Histogram::observe(double value) {
  if (!std::isfinite(value)) return;
  size_t index =
      static_cast<size_t>(std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin());
  buckets_[index].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<int64_t>(std::llround(value * 1e9)), std::memory_order_relaxed);
}

void Histogram::observe_ns(int64_t ns) {
  buckets_[bucket_of(static_cast<double>(ns) / 1e9)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
}

size_t Histogram::bucket_of(double value) const {
  return static_cast<size_t>(std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) -
                             upper_bounds_.begin());
}

void Histogram::merge(std::span<const uint32_t> counts, int64_t sum_ns) {
  uint64_t total = 0;
  for (size_t index = 0; index < counts.size() && index < bucket_count(); ++index) {
    if (counts[index] == 0) continue;
    buckets_[index].fetch_add(counts[index], std::memory_order_relaxed);
    total += counts[index];
  }
  if (total == 0) return;
  count_.fetch_add(total, std::memory_order_relaxed);
  sum_ns_.fetch_add(sum_ns, std::memory_order_relaxed);
}

void Histogram::render(std::string& out, std::string_view name, std::string_view help, std::string_view labels) const {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t index = 0; index < upper_bounds_.size(); ++index) {
    cumulative += buckets_[index].load(std::memory_order_relaxed);
    fmt::format_to(std::back_inserter(out), "{}_bucket{{{}}} {}\n", name,
                   with_label(labels, "le", number(upper_bounds_[index])), number(static_cast<double>(cumulative)));
  }
  cumulative += buckets_[upper_bounds_.size()].load(std::memory_order_relaxed);
  fmt::format_to(std::back_inserter(out), "{}_bucket{{{}}} {}\n", name, with_label(labels, "le", "+Inf"),
                 number(static_cast<double>(cumulative)));
  fmt::format_to(std::back_inserter(out), "{}_sum{{{}}} {}\n", name, labels,
                 number(static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9));
  // _count equals the +Inf bucket, as Prometheus requires.
  fmt::format_to(std::back_inserter(out), "{}_count{{{}}} {}\n", name, labels, number(static_cast<double>(cumulative)));
}

ServeMetrics::ServeMetrics()
    : ttft_(ttft_buckets()),
      inter_token_(tpot_buckets()),
      e2e_(e2e_buckets()),
      queue_(e2e_buckets()),
      inference_(e2e_buckets()),
      prefill_(e2e_buckets()),
      decode_(e2e_buckets()),
      delivery_lateness_(lateness_buckets()),
      first_token_lateness_(lateness_buckets()) {}

void ServeMetrics::count_finished(sim::FinishReason reason) {
  switch (reason) {
    case sim::FinishReason::kLength: finished_length_.fetch_add(1, std::memory_order_relaxed); break;
    case sim::FinishReason::kStop: finished_stop_.fetch_add(1, std::memory_order_relaxed); break;
    case sim::FinishReason::kAbort: finished_abort_.fetch_add(1, std::memory_order_relaxed); break;
    case sim::FinishReason::kNone: break;
  }
}

void ServeMetrics::observe_request_phases(int64_t arrival_ns, int64_t scheduled_ns, int64_t first_token_ns,
                                          int64_t last_token_ns) {
  scheduled_ns = std::max(scheduled_ns, arrival_ns);
  first_token_ns = std::max(first_token_ns, scheduled_ns);
  last_token_ns = std::max(last_token_ns, first_token_ns);
  queue_.observe_ns(scheduled_ns - arrival_ns);
  prefill_.observe_ns(first_token_ns - scheduled_ns);
  decode_.observe_ns(last_token_ns - first_token_ns);
  inference_.observe_ns(last_token_ns - scheduled_ns);
}

std::string ServeMetrics::render(const sim::EngineMetrics& engine, std::string_view model_name) const {
  std::string out;
  out.reserve(8192);
  // vLLM v1 labels every series with its engine index beside the model, all in name order
  // (prometheus_client sorts them; with_label keeps le and finished_reason in place); the
  // simulator is one engine. ixbench's own series carry the model only.
  const std::string escaped = escape_label(model_name);
  const std::string labels = fmt::format("engine=\"0\",model_name=\"{}\"", escaped);
  const std::string ixbench_labels = fmt::format("model_name=\"{}\"", escaped);
  render_engine_series(out, engine, labels);
  render_finished(out, labels);
  if (engine.cache_config) {
    render_cache_config(out, *engine.cache_config);
    if (engine.cache_config->kv_offloading_size_gib > 0) render_offload(out, engine, labels, ixbench_labels);
  }
  render_latency_histograms(out, labels);
  render_own(out, ixbench_labels);
  return out;
}

void ServeMetrics::render_finished(std::string& out, const std::string& labels) const {
  out += "# HELP vllm:request_success_total Count of successfully processed requests.\n";
  out += "# TYPE vllm:request_success_total counter\n";
  for (auto [reason, value] : {std::pair{"length", &finished_length_}, std::pair{"stop", &finished_stop_},
                               std::pair{"abort", &finished_abort_}}) {
    fmt::format_to(std::back_inserter(out), "vllm:request_success_total{{{}}} {}\n",
                   with_label(labels, "finished_reason", reason),
                   number(static_cast<double>(value->load(std::memory_order_relaxed))));
  }
}

void ServeMetrics::render_latency_histograms(std::string& out, const std::string& labels) const {
  ttft_.render(out, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", labels);
  // vLLM 0.11 renamed this histogram vllm:inter_token_latency_seconds and kept the old name,
  // deprecated, beside it with the same observations; dashboards for either version read one.
  inter_token_.render(out, "vllm:time_per_output_token_seconds",
                      "Histogram of time per output token in seconds (gap between consecutive outputs). "
                      "DEPRECATED: Use vllm:inter_token_latency_seconds instead.",
                      labels);
  inter_token_.render(out, "vllm:inter_token_latency_seconds",
                      "Histogram of inter-token latency in seconds (gap between consecutive outputs).", labels);
  e2e_.render(out, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", labels);
  // vLLM's names, help texts and order.
  queue_.render(out, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
                labels);
  inference_.render(out, "vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.",
                    labels);
  prefill_.render(out, "vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
                  labels);
  decode_.render(out, "vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
                 labels);
}

// ixbench's own series: delivery lateness, profiler calls, injected faults.
void ServeMetrics::render_own(std::string& out, const std::string& ixbench_labels) const {
  delivery_lateness_.render(
      out, "ixbench:token_delivery_lateness_seconds",
      "Histogram of token events' delivery time (handed to the socket) minus their scheduled time.", ixbench_labels);
  first_token_lateness_.render(out, "ixbench:first_token_delivery_lateness_seconds",
                               "Histogram of each stream's first token event's delivery time minus its scheduled time.",
                               ixbench_labels);
  gauge(out, "ixbench:profile_starts_total", "Calls of /start_profile.", "counter", ixbench_labels,
        static_cast<double>(profile_starts_.load(std::memory_order_relaxed)));
  gauge(out, "ixbench:profile_stops_total", "Calls of /stop_profile.", "counter", ixbench_labels,
        static_cast<double>(profile_stops_.load(std::memory_order_relaxed)));
  gauge(out, "ixbench:injected_faults_total", "Requests given an injected fault.", "counter", ixbench_labels,
        static_cast<double>(faults_.load(std::memory_order_relaxed)));
  if (gsm8k_enabled_) render_gsm8k(out, ixbench_labels);
}

void ServeMetrics::count_gsm8k_answered(bool correct, bool runaway) {
  (correct ? gsm8k_correct_ : gsm8k_wrong_).fetch_add(1, std::memory_order_relaxed);
  if (runaway) gsm8k_runaway_.fetch_add(1, std::memory_order_relaxed);
}

void ServeMetrics::render_gsm8k(std::string& out, const std::string& ixbench_labels) const {
  auto load = [](const std::atomic<int64_t>& value) {
    return static_cast<double>(value.load(std::memory_order_relaxed));
  };
  labelled_counter(out, "ixbench:gsm8k_answered_total", "Requests answered from the GSM8K answer key, by verdict.",
                   ixbench_labels, "correct", {{"true", load(gsm8k_correct_)}, {"false", load(gsm8k_wrong_)}});
  gauge(out, "ixbench:gsm8k_runaway_total",
        "GSM8K answers that ignored the stop strings and ran on past the answer to max_tokens.", "counter",
        ixbench_labels, load(gsm8k_runaway_));
  gauge(out, "ixbench:gsm8k_unmatched_total",
        "Requests whose prompt held no GSM8K test question (answered with the ordinary simulated text).", "counter",
        ixbench_labels, load(gsm8k_unmatched_));
}

}  // namespace ix::serve
