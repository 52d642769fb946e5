#include "metrics/serve_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>

#include "common/sanitize.h"

namespace ix::metrics {

namespace {

constexpr double kNsPerS = 1e9;

// a + b, held at the int64 limits: token counts a server reported reach these sums, and a
// wrapped total would turn into a negative throughput.
int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

double seconds_between(int64_t from_ns, int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / kNsPerS;
}

// vLLM's metric display order; --percentile-metrics only selects among them.
constexpr const char* kVllmMetrics[] = {"ttft", "tpot", "itl", "e2el"};

bool selected(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// mean_/median_/std_/p{P}_<name><suffix> keys of statistics computed on seconds, then x1000 as
// vLLM does.
void put_summary(boost::json::object& out, std::string_view name, const Summary& s, std::string_view suffix) {
  out[fmt::format("mean_{}{}", name, suffix)] = s.mean;
  out[fmt::format("median_{}{}", name, suffix)] = s.median;
  out[fmt::format("std_{}{}", name, suffix)] = s.std_dev;
  for (const auto& [p, value] : s.percentiles) out[fmt::format("p{}_{}{}", percentile_label(p), name, suffix)] = value;
}

// Reorders `values` (summarised in place).
void put_stats(boost::json::object& out, std::string_view name, std::vector<double>& values,
               std::span<const double> percentiles) {
  put_summary(out, name, summarize_in_place(values, percentiles, 1000.0), "_ms");
}

int64_t end_of(const RequestRecord& r) {
  return r.content_event_ns.empty() ? r.end_ns : r.content_event_ns.back();
}

boost::json::array json_array(const std::vector<int64_t>& values) {
  boost::json::array out;
  out.reserve(values.size());
  for (int64_t v : values) out.emplace_back(v);
  return out;
}

}  // namespace

void ServeSummary::TokenSampleSet::reserve(size_t n) {
  if (how_ == TokenSamples::kEvery) every_.reserve(n);
}

Summary ServeSummary::TokenSampleSet::summarize(std::span<const double> percentiles, double scale) {
  if (how_ == TokenSamples::kCounted) return counted_.summarize(percentiles, scale);
  return summarize_in_place(every_, percentiles, scale);
}

ServeSummary::ServeSummary(TokenSamples token_samples, int64_t origin_ns)
    : itls_(token_samples), token_itls_(token_samples), tokens_per_chunk_(token_samples), origin_ns_(origin_ns) {}

void ServeSummary::reserve(size_t requests, size_t events) {
  for (auto* v : {&ttfts_, &tpots_, &all_tpots_, &e2els_, &queue_, &sched_ttft_, &sched_e2el_}) v->reserve(requests);
  for (auto* v : {&input_lens_, &output_lens_, &scheduled_ns_}) v->reserve(requests);
  spans_.reserve(requests);
  // One token per event is the common case; multi-token chunks grow token_itl beyond it.
  for (auto* v : {&itls_, &token_itls_, &tokens_per_chunk_}) v->reserve(events);
}

void ServeSummary::add_request(const RequestRecord& r) {
  if (r.warmup) {
    ++warmups_;
    return;
  }
  input_lens_.push_back(r.prompt_len);
  scheduled_ns_.push_back(r.scheduled_ns);
  if (r.success) {
    add_completed(r);
  } else {
    add_failed(r);
  }
}

void ServeSummary::flush_repeated_events() {
  const int64_t n = repeats_;
  if (n == 0) return;
  repeats_ = 0;
  const auto [previous_ns, event_ns, tokens] = repeated_;
  tokens_per_chunk_.add(tokens, n);
  const auto second = static_cast<int64_t>(seconds_between(origin_ns_, event_ns));
  if (second >= 0) {
    const auto bucket = static_cast<size_t>(second);
    if (bucket >= events_per_second_.size()) events_per_second_.resize(bucket + 1, 0.0);
    // Whole counts: adding n at once is adding 1.0 n times.
    events_per_second_[bucket] += static_cast<double>(n);
  }
  if (previous_ns == 0) return;
  // One ITL sample per gap, and one per token of the event (the gap split evenly).
  const double gap = seconds_between(previous_ns, event_ns);
  itls_.add(gap, n);
  const int32_t k = std::max<int32_t>(tokens, 1);
  token_itls_.add(gap / k, k * n);
}

void ServeSummary::add_failed(const RequestRecord& r) {
  ++failed_;
  output_lens_.push_back(0);
  const std::string kind(error_kind_name(r.error_kind));
  ++error_counts_[kind];
  if (!error_examples_.contains(kind)) error_examples_[kind] = ix::storable(r.error_message);
}

void ServeSummary::add_completed(const RequestRecord& r) {
  ++completed_;
  const int64_t output_len = r.output_len;
  output_lens_.push_back(output_len);
  total_input_ = saturating_add(total_input_, r.prompt_len);
  total_output_ = saturating_add(total_output_, output_len);

  const double ttft = r.first_token_ns ? seconds_between(r.send_ns, r.first_token_ns) : 0.0;
  const int64_t last_ns = end_of(r);
  const double e2el = seconds_between(r.send_ns, last_ns);
  double tpot = 0.0;
  if (output_len > 1) {
    tpot = (e2el - ttft) / static_cast<double>(output_len - 1);
    tpots_.push_back(tpot);
  }
  all_tpots_.push_back(tpot);
  ttfts_.push_back(ttft);
  e2els_.push_back(e2el);
  for (size_t i = 0; i < r.content_event_ns.size(); ++i) {
    const int32_t tokens = i < r.tokens_per_event.size() ? r.tokens_per_event[i] : 1;
    add_content_event(i > 0 ? r.content_event_ns[i - 1] : 0, r.content_event_ns[i], tokens);
  }
  spans_.emplace_back(r.send_ns, last_ns);
  queue_.push_back(seconds_between(r.scheduled_ns, r.send_ns));
  sched_ttft_.push_back(r.first_token_ns ? seconds_between(r.scheduled_ns, r.first_token_ns) : 0.0);
  sched_e2el_.push_back(seconds_between(r.scheduled_ns, last_ns));
  if (r.server_output_tokens >= 0 && r.client_output_tokens >= 0) {
    ++compared_requests_;
    server_tokens_ = saturating_add(server_tokens_, r.server_output_tokens);
    client_tokens_ = saturating_add(client_tokens_, r.client_output_tokens);
    if (r.server_output_tokens != r.client_output_tokens) ++mismatch_requests_;
  }
}

// Requests that met every --goodput SLO.
int64_t ServeSummary::count_good(const std::map<std::string, double>& slo_ms) const {
  int64_t good = 0;
  for (size_t i = 0; i < ttfts_.size(); ++i) {
    bool ok = true;
    for (const auto& [metric, slo] : slo_ms) {
      const double value = metric == "ttft" ? ttfts_[i] : metric == "tpot" ? all_tpots_[i] : e2els_[i];
      ok = ok && slo / 1000.0 >= value;
    }
    if (ok) ++good;
  }
  return good;
}

// vLLM's per-second view (serve.py calculate_metrics): content events and in-flight requests of
// the successful requests in one-second buckets from the earliest send, up to the second of the
// last event; the busiest second of each.
ServeSummary::BusiestSecond ServeSummary::busiest_second() const {
  BusiestSecond out;
  int64_t last_end = INT64_MIN;
  for (const auto& [send, end] : spans_) last_end = std::max(last_end, end);
  if (origin_ns_ > last_end) return out;
  const auto bucket = [&](int64_t t_ns) { return static_cast<int64_t>(seconds_between(origin_ns_, t_ns)); };
  const size_t seconds = static_cast<size_t>(std::ceil(seconds_between(origin_ns_, last_end))) + 1;
  const int64_t last = static_cast<int64_t>(seconds) - 1;
  const size_t counted = std::min(seconds, events_per_second_.size());
  out.output_tokens_per_s = 0.0;
  for (size_t i = 0; i < counted; ++i)
    out.output_tokens_per_s = std::max(out.output_tokens_per_s, events_per_second_[i]);
  std::vector<int64_t> active(seconds + 1, 0);  // difference array over [start, end] seconds
  for (const auto& [send, end] : spans_) {
    const int64_t from = std::clamp<int64_t>(bucket(send), 0, last);
    const int64_t to = std::clamp<int64_t>(bucket(end), from, last);
    ++active[static_cast<size_t>(from)];
    --active[static_cast<size_t>(to) + 1];
  }
  int64_t running = 0;
  for (size_t i = 0; i < seconds; ++i)
    out.concurrent_requests = std::max(out.concurrent_requests, running += active[i]);
  return out;
}

namespace {

// The run's header fields, as vLLM writes them.
void put_header(boost::json::object& out, const ServeRunInfo& info, double duration) {
  out["date"] = info.date;
  out["backend"] = info.backend;
  out["model_id"] = info.model_id;
  out["tokenizer_id"] = info.tokenizer_id;
  out["best_of"] = info.best_of;
  out["num_prompts"] = info.num_prompts;
  if (std::isinf(info.request_rate)) {
    out["request_rate"] = "inf";
  } else {
    out["request_rate"] = info.request_rate;
  }
  out["burstiness"] = info.burstiness;
  if (info.max_concurrency) {
    out["max_concurrency"] = *info.max_concurrency;
  } else {
    out["max_concurrency"] = nullptr;
  }
  out["duration"] = duration;
  out["benchmark_start_time_unix"] = info.start_unix_s;
  out["benchmark_end_time_unix"] = info.end_unix_s;
}

boost::json::object client_json(const ClientHealth& c) {
  return boost::json::object{
      {"event_loop_lag_p50_ms", c.event_loop_lag_p50_ms},
      {"event_loop_lag_p99_ms", c.event_loop_lag_p99_ms},
      {"event_loop_lag_max_ms", c.event_loop_lag_max_ms},
      {"cpu_utilization", c.cpu_utilization},
      {"worker_threads", c.worker_threads},
      {"send_delay_p90_ms", c.send_delay_p90_ms},
      {"client_delay_share", c.client_delay_share},
      {"saturated", c.saturated},
      {"warning", c.warning},
  };
}

}  // namespace

// Counts, throughputs and vLLM's per-metric statistics (reorders the samples).
void ServeSummary::put_measurements(boost::json::object& out, const ServeRunInfo& info, double duration) {
  auto per_s = [duration](double x) { return duration > 0 ? x / duration : 0.0; };
  const boost::json::value goodput =
      info.goodput_slo_ms.empty() ? boost::json::value(nullptr)
                                  : boost::json::value(per_s(static_cast<double>(count_good(info.goodput_slo_ms))));
  const BusiestSecond busiest = busiest_second();
  out["completed"] = completed_;
  out["failed"] = failed_;
  out["total_input_tokens"] = total_input_;
  out["total_output_tokens"] = total_output_;
  out["request_throughput"] = per_s(static_cast<double>(completed_));
  out["request_goodput:"] = goodput;
  out["output_throughput"] = per_s(static_cast<double>(total_output_));
  out["total_token_throughput"] = per_s(static_cast<double>(total_input_) + static_cast<double>(total_output_));
  out["max_output_tokens_per_s"] = busiest.output_tokens_per_s;
  out["max_concurrent_requests"] = busiest.concurrent_requests;
  out["input_lens"] = json_array(input_lens_);
  out["output_lens"] = json_array(output_lens_);
  const std::span<const double> ps = info.metric_percentiles;
  for (const std::string_view key : kVllmMetrics) {
    if (!selected(info.percentile_metrics, key)) continue;
    if (key == "itl") {
      put_summary(out, key, itls_.summarize(ps, 1000.0), "_ms");
    } else {
      put_stats(out, key, key == "ttft" ? ttfts_ : key == "tpot" ? tpots_ : e2els_, ps);
    }
  }
  // vLLM's current name of the goodput, a number only when it was asked for.
  if (!info.goodput_slo_ms.empty()) out["request_goodput"] = goodput;
}

// ixbench's own statistics: errors by kind, queue and scheduled-time views, tokens per chunk.
void ServeSummary::put_own_measurements(boost::json::object& own, const ServeRunInfo& info) {
  const std::span<const double> ps = info.metric_percentiles;
  own["schema_version"] = kServeResultSchemaVersion;
  own["num_warmups_excluded"] = warmups_;
  const int64_t measured = completed_ + failed_;
  own["error_rate"] = measured ? static_cast<double>(failed_) / static_cast<double>(measured) : 0.0;
  boost::json::object errors, examples;
  for (const auto& [kind, n] : error_counts_) errors[kind] = n;
  for (const auto& [kind, msg] : error_examples_) examples[kind] = msg;
  own["error_counts"] = std::move(errors);
  own["error_examples"] = std::move(examples);
  put_stats(own, "queue", queue_, ps);
  put_stats(own, "sched_ttft", sched_ttft_, ps);
  put_stats(own, "sched_e2el", sched_e2el_, ps);
  put_summary(own, "token_itl", token_itls_.summarize(ps, 1000.0), "_ms");
  const Summary chunk = tokens_per_chunk_.summarize({}, 1.0);
  own["mean_tokens_per_chunk"] = chunk.mean;
  own["median_tokens_per_chunk"] = chunk.median;
  own["max_tokens_per_chunk"] = chunk.max;
  own["output_token_mismatch"] = boost::json::object{
      {"compared_requests", compared_requests_},
      {"mismatched_requests", mismatch_requests_},
      {"server_output_tokens", server_tokens_},
      {"client_output_tokens", client_tokens_},
  };
  boost::json::array offsets;
  offsets.reserve(scheduled_ns_.size());
  for (int64_t t : scheduled_ns_) offsets.emplace_back(static_cast<double>(t - info.start_ns) / 1e6);
  own["scheduled_offsets_ms"] = std::move(offsets);
}

// The client's health, the run's validity with its reasons, then the caller's extra fields.
void ServeSummary::put_validity(boost::json::object& own, const ServeRunInfo& info) const {
  boost::json::array reasons;
  if (completed_ == 0 && failed_ > 0) {
    reasons.emplace_back(
        fmt::format("no request completed ({} of {} failed; see error_counts and error_examples)", failed_, failed_));
  }
  if (info.client) {
    own["client"] = client_json(*info.client);
    if (info.client->saturated) reasons.emplace_back(fmt::format("client saturated: {}", info.client->reason));
  }
  if (const auto* extra = info.extra.if_contains("invalid_reasons"); extra && extra->is_array()) {
    for (const auto& v : extra->as_array()) reasons.push_back(v);
  }
  own["run_valid"] = reasons.empty();
  own["invalid_reasons"] = std::move(reasons);
  for (const auto& [key, value] : info.extra) {
    if (key != "invalid_reasons") own[key] = value;
  }
}

boost::json::object ServeSummary::result(const ServeRunInfo& info) && {
  flush_repeated_events();
  const double duration = seconds_between(info.start_ns, info.end_ns);
  boost::json::object out;
  put_header(out, info, duration);
  put_measurements(out, info, duration);
  // Everything ixbench adds, in one versioned object: InferenceX's process_result.py reads every
  // top-level key ending in "ms" or containing "tpot" as a number, so nothing else may sit there.
  boost::json::object own;
  put_own_measurements(own, info);
  put_validity(own, info);
  out["ixbench"] = std::move(own);
  return out;
}

}  // namespace ix::metrics
