#include "metrics/serve_result.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>

#include "common/sanitize.h"
#include "metrics/statistics.h"

namespace ix::metrics {

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNone: return "none";
    case ErrorKind::kConnect: return "connect";
    case ErrorKind::kHttpStatus: return "http_status";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kReset: return "reset";
    case ErrorKind::kTruncated: return "truncated";
    case ErrorKind::kMalformed: return "malformed";
    case ErrorKind::kServerError: return "server_error";
    case ErrorKind::kNoContent: return "no_content";
    case ErrorKind::kCancelled: return "cancelled";
    case ErrorKind::kBadUsage: return "bad_usage";
    case ErrorKind::kOther: return "other";
  }
  return "other";
}

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
struct MetricName {
  const char* key;
  const char* display;
  const char* header;
};
constexpr MetricName kVllmMetrics[] = {
    {"ttft", "TTFT", "Time to First Token"},
    {"tpot", "TPOT", "Time per Output Token (excl. 1st token)"},
    {"itl", "ITL", "Inter-token Latency"},
    {"e2el", "E2EL", "End-to-end Latency"},
};

bool selected(const std::vector<std::string>& list, std::string_view name) {
  for (const auto& item : list) {
    if (item == name) return true;
  }
  return false;
}

// mean_/median_/std_/p{P}_<name><suffix> keys, statistics on seconds then ×1000 as vLLM does.
// Reorders `values` (summarised in place: the pooled ITL arrays of a long run are large).
void put_stats(boost::json::object& out, std::string_view name, std::span<double> values,
               std::span<const double> percentiles, double scale, std::string_view suffix) {
  const Summary s = summarize_in_place(values, percentiles, scale);
  out[fmt::format("mean_{}{}", name, suffix)] = s.mean;
  out[fmt::format("median_{}{}", name, suffix)] = s.median;
  out[fmt::format("std_{}{}", name, suffix)] = s.std_dev;
  for (const auto& [p, value] : s.percentiles) out[fmt::format("p{}_{}{}", percentile_label(p), name, suffix)] = value;
}

}  // namespace

namespace {

// The per-request samples of the measured, successful requests (seconds), and the counts.
struct Samples {
  std::vector<double> ttfts, tpots, all_tpots, itls, e2els;
  std::vector<double> queue, sched_ttft, sched_e2el, token_itl, tokens_per_chunk;
  boost::json::array input_lens, output_lens, scheduled_offsets;
  int64_t completed = 0, failed = 0, warmups = 0;
  int64_t total_input = 0, total_output = 0;
  std::map<std::string, int64_t> error_counts;
  std::map<std::string, std::string> error_examples;
  int64_t mismatch_requests = 0, compared_requests = 0, server_tokens = 0, client_tokens = 0;
};

// Sized up front: a sweep point pools millions of gaps, and growing by doubling copied them
// several times (most of `sim predict`'s page faults).
void reserve_samples(const std::vector<RequestRecord>& records, Samples& s) {
  size_t requests = 0, events = 0;
  for (const RequestRecord& r : records) {
    if (r.warmup || !r.success) continue;
    ++requests;
    events += r.content_event_ns.size();
  }
  for (auto* v : {&s.ttfts, &s.tpots, &s.all_tpots, &s.e2els, &s.queue, &s.sched_ttft, &s.sched_e2el})
    v->reserve(requests);
  // One token per event is the common case; multi-token chunks grow token_itl beyond it.
  for (auto* v : {&s.itls, &s.tokens_per_chunk, &s.token_itl}) v->reserve(events);
}

void add_failed(const RequestRecord& r, Samples& s) {
  ++s.failed;
  s.output_lens.emplace_back(0);
  const std::string kind(error_kind_name(r.error_kind));
  ++s.error_counts[kind];
  if (!s.error_examples.contains(kind)) s.error_examples[kind] = ix::storable(r.error_message);
}

// The gaps between a request's content events: one ITL sample per gap, and per token.
void add_gaps(const RequestRecord& r, Samples& s) {
  for (size_t i = 1; i < r.content_event_ns.size(); ++i) {
    const double gap = seconds_between(r.content_event_ns[i - 1], r.content_event_ns[i]);
    s.itls.push_back(gap);
    const int32_t k = i < r.tokens_per_event.size() ? std::max<int32_t>(r.tokens_per_event[i], 1) : 1;
    for (int32_t j = 0; j < k; ++j) s.token_itl.push_back(gap / k);
  }
  for (size_t i = 0; i < r.content_event_ns.size(); ++i) {
    s.tokens_per_chunk.push_back(i < r.tokens_per_event.size() ? r.tokens_per_event[i] : 1);
  }
}

void add_completed(const RequestRecord& r, Samples& s) {
  ++s.completed;
  const int64_t output_len = r.output_len;
  s.output_lens.emplace_back(output_len);
  s.total_input = saturating_add(s.total_input, r.prompt_len);
  s.total_output = saturating_add(s.total_output, output_len);

  const double ttft = r.first_token_ns ? seconds_between(r.send_ns, r.first_token_ns) : 0.0;
  const int64_t last_ns = r.content_event_ns.empty() ? r.end_ns : r.content_event_ns.back();
  const double e2el = seconds_between(r.send_ns, last_ns);
  double tpot = 0.0;
  if (output_len > 1) {
    tpot = (e2el - ttft) / static_cast<double>(output_len - 1);
    s.tpots.push_back(tpot);
  }
  s.all_tpots.push_back(tpot);
  s.ttfts.push_back(ttft);
  s.e2els.push_back(e2el);
  add_gaps(r, s);
  s.queue.push_back(seconds_between(r.scheduled_ns, r.send_ns));
  s.sched_ttft.push_back(r.first_token_ns ? seconds_between(r.scheduled_ns, r.first_token_ns) : 0.0);
  s.sched_e2el.push_back(seconds_between(r.scheduled_ns, last_ns));
  if (r.server_output_tokens >= 0 && r.client_output_tokens >= 0) {
    ++s.compared_requests;
    s.server_tokens = saturating_add(s.server_tokens, r.server_output_tokens);
    s.client_tokens = saturating_add(s.client_tokens, r.client_output_tokens);
    if (r.server_output_tokens != r.client_output_tokens) ++s.mismatch_requests;
  }
}

Samples collect_samples(const std::vector<RequestRecord>& records, const ServeRunInfo& info) {
  Samples s;
  reserve_samples(records, s);
  for (const RequestRecord& r : records) {
    if (r.warmup) {
      ++s.warmups;
      continue;
    }
    s.input_lens.emplace_back(r.prompt_len);
    s.scheduled_offsets.emplace_back(static_cast<double>(r.scheduled_ns - info.start_ns) / 1e6);
    if (r.success) {
      add_completed(r, s);
    } else {
      add_failed(r, s);
    }
  }
  return s;
}

// Requests that met every --goodput SLO.
int64_t count_good(const Samples& s, const std::map<std::string, double>& slo_ms) {
  int64_t good = 0;
  for (size_t i = 0; i < s.ttfts.size(); ++i) {
    bool ok = true;
    for (const auto& [metric, slo] : slo_ms) {
      const double value = metric == "ttft" ? s.ttfts[i] : metric == "tpot" ? s.all_tpots[i] : s.e2els[i];
      ok = ok && slo / 1000.0 >= value;
    }
    if (ok) ++good;
  }
  return good;
}

struct BusiestSecond {
  double output_tokens_per_s = 0.0;
  int64_t concurrent_requests = 0;
};

int64_t end_of(const RequestRecord& r) {
  return r.content_event_ns.empty() ? r.end_ns : r.content_event_ns.back();
}

// vLLM's per-second view (serve.py calculate_metrics): content events and in-flight requests of
// the successful requests in one-second buckets from the earliest send; the busiest second of each.
BusiestSecond busiest_second(const std::vector<RequestRecord>& records) {
  BusiestSecond out;
  int64_t first_send = INT64_MAX, last_end = INT64_MIN;
  for (const RequestRecord& r : records) {
    if (r.warmup || !r.success) continue;
    first_send = std::min(first_send, r.send_ns);
    last_end = std::max(last_end, end_of(r));
  }
  if (first_send > last_end) return out;
  const auto bucket = [&](int64_t t_ns) { return static_cast<int64_t>(seconds_between(first_send, t_ns)); };
  const size_t seconds = static_cast<size_t>(std::ceil(seconds_between(first_send, last_end))) + 1;
  const int64_t last = static_cast<int64_t>(seconds) - 1;
  std::vector<double> events(seconds, 0.0);
  std::vector<int64_t> active(seconds + 1, 0);  // difference array over [start, end] seconds
  for (const RequestRecord& r : records) {
    if (r.warmup || !r.success) continue;
    for (int64_t t : r.content_event_ns) {
      const int64_t b = bucket(t);
      if (b >= 0 && b <= last) events[static_cast<size_t>(b)] += 1.0;
    }
    const int64_t from = std::clamp<int64_t>(bucket(r.send_ns), 0, last);
    const int64_t to = std::clamp<int64_t>(bucket(end_of(r)), from, last);
    ++active[static_cast<size_t>(from)];
    --active[static_cast<size_t>(to) + 1];
  }
  out.output_tokens_per_s = *std::max_element(events.begin(), events.end());
  int64_t running = 0;
  for (size_t i = 0; i < seconds; ++i)
    out.concurrent_requests = std::max(out.concurrent_requests, running += active[i]);
  return out;
}

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

// Counts, throughputs and vLLM's per-metric statistics (reorders the samples).
void put_measurements(boost::json::object& out, Samples& s, const ServeRunInfo& info, double duration,
                      const std::vector<RequestRecord>& records) {
  auto per_s = [duration](double x) { return duration > 0 ? x / duration : 0.0; };
  const boost::json::value goodput =
      info.goodput_slo_ms.empty() ? boost::json::value(nullptr)
                                  : boost::json::value(per_s(static_cast<double>(count_good(s, info.goodput_slo_ms))));
  const BusiestSecond busiest = busiest_second(records);
  out["completed"] = s.completed;
  out["failed"] = s.failed;
  out["total_input_tokens"] = s.total_input;
  out["total_output_tokens"] = s.total_output;
  out["request_throughput"] = per_s(static_cast<double>(s.completed));
  out["request_goodput:"] = goodput;
  out["output_throughput"] = per_s(static_cast<double>(s.total_output));
  out["total_token_throughput"] = per_s(static_cast<double>(s.total_input) + static_cast<double>(s.total_output));
  out["max_output_tokens_per_s"] = busiest.output_tokens_per_s;
  out["max_concurrent_requests"] = busiest.concurrent_requests;
  out["input_lens"] = std::move(s.input_lens);
  out["output_lens"] = std::move(s.output_lens);
  for (const MetricName& m : kVllmMetrics) {
    if (!selected(info.percentile_metrics, m.key)) continue;
    const std::string_view key = m.key;
    std::vector<double>& values = key == "ttft" ? s.ttfts : key == "tpot" ? s.tpots : key == "itl" ? s.itls : s.e2els;
    put_stats(out, key, values, info.metric_percentiles, 1000.0, "_ms");
  }
  // vLLM's current name of the goodput, a number only when it was asked for.
  if (!info.goodput_slo_ms.empty()) out["request_goodput"] = goodput;
}

// ixbench's own statistics: errors by kind, queue and scheduled-time views, tokens per chunk.
void put_own_measurements(boost::json::object& own, Samples& s, std::span<const double> ps) {
  own["schema_version"] = kServeResultSchemaVersion;
  own["num_warmups_excluded"] = s.warmups;
  const int64_t measured = s.completed + s.failed;
  own["error_rate"] = measured ? static_cast<double>(s.failed) / static_cast<double>(measured) : 0.0;
  boost::json::object errors, examples;
  for (const auto& [kind, n] : s.error_counts) errors[kind] = n;
  for (const auto& [kind, msg] : s.error_examples) examples[kind] = msg;
  own["error_counts"] = std::move(errors);
  own["error_examples"] = std::move(examples);
  put_stats(own, "queue", s.queue, ps, 1000.0, "_ms");
  put_stats(own, "sched_ttft", s.sched_ttft, ps, 1000.0, "_ms");
  put_stats(own, "sched_e2el", s.sched_e2el, ps, 1000.0, "_ms");
  put_stats(own, "token_itl", s.token_itl, ps, 1000.0, "_ms");
  const Summary chunk = summarize_in_place(s.tokens_per_chunk, {}, 1.0);
  own["mean_tokens_per_chunk"] = chunk.mean;
  own["median_tokens_per_chunk"] = chunk.median;
  own["max_tokens_per_chunk"] = chunk.max;
  own["output_token_mismatch"] = boost::json::object{
      {"compared_requests", s.compared_requests},
      {"mismatched_requests", s.mismatch_requests},
      {"server_output_tokens", s.server_tokens},
      {"client_output_tokens", s.client_tokens},
  };
  own["scheduled_offsets_ms"] = std::move(s.scheduled_offsets);
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

// The client's health, the run's validity with its reasons, then the caller's extra fields.
void put_validity(boost::json::object& own, const ServeRunInfo& info, const Samples& s) {
  boost::json::array reasons;
  if (s.completed == 0 && s.failed > 0) {
    reasons.emplace_back(
        fmt::format("no request completed ({} of {} failed; see error_counts and error_examples)", s.failed, s.failed));
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

}  // namespace

boost::json::object build_serve_result(const std::vector<RequestRecord>& records, const ServeRunInfo& info) {
  Samples samples = collect_samples(records, info);
  const double duration = seconds_between(info.start_ns, info.end_ns);
  boost::json::object out;
  put_header(out, info, duration);
  put_measurements(out, samples, info, duration, records);
  // Everything ixbench adds, in one versioned object: InferenceX's process_result.py reads every
  // top-level key ending in "ms" or containing "tpot" as a number, so nothing else may sit there.
  boost::json::object own;
  put_own_measurements(own, samples, info.metric_percentiles);
  put_validity(own, info, samples);
  out["ixbench"] = std::move(own);
  return out;
}

boost::json::object request_record_to_json(const RequestRecord& r, int64_t origin_ns) {
  auto ms = [origin_ns](int64_t t) -> boost::json::value {
    if (t == 0) return nullptr;
    return static_cast<double>(t - origin_ns) / 1e6;
  };
  boost::json::array events;
  events.reserve(r.content_event_ns.size());
  for (int64_t t : r.content_event_ns) events.emplace_back(static_cast<double>(t - origin_ns) / 1e6);
  boost::json::array tokens;
  tokens.reserve(r.tokens_per_event.size());
  for (int32_t k : r.tokens_per_event) tokens.emplace_back(k);
  boost::json::object o;
  o["index"] = r.index;
  o["warmup"] = r.warmup;
  o["success"] = r.success;
  o["error_kind"] = error_kind_name(r.error_kind);
  o["error"] = ix::storable(r.error_message);
  o["http_status"] = r.http_status;
  o["prompt_len"] = r.prompt_len;
  o["output_len"] = r.output_len;
  o["expected_output_len"] = r.expected_output_len;
  o["server_output_tokens"] = r.server_output_tokens;
  o["client_output_tokens"] = r.client_output_tokens;
  o["scheduled_ms"] = ms(r.scheduled_ns);
  o["send_ms"] = ms(r.send_ns);
  o["first_byte_ms"] = ms(r.first_byte_ns);
  o["first_token_ms"] = ms(r.first_token_ns);
  o["end_ms"] = ms(r.end_ns);
  o["content_event_ms"] = std::move(events);
  o["tokens_per_event"] = std::move(tokens);
  return o;
}

std::string format_serve_summary(const boost::json::object& result) {
  static const boost::json::object kNone;
  const auto* own_value = result.if_contains("ixbench");
  const boost::json::object& own = own_value && own_value->is_object() ? own_value->as_object() : kNone;
  auto find = [&](std::string_view key) -> const boost::json::value* {
    if (const auto* v = result.if_contains(key)) return v;
    return own.if_contains(key);
  };
  auto num = [&](std::string_view key) -> double {
    const auto* v = find(key);
    if (!v) return 0.0;
    if (v->is_double()) return v->as_double();
    if (v->is_int64()) return static_cast<double>(v->as_int64());
    return 0.0;
  };
  auto has = [&](std::string_view key) { return find(key) && !find(key)->is_null(); };
  std::string out;
  auto line_i = [&](std::string_view label, int64_t v) { out += fmt::format("{:<40} {:<10}\n", label, v); };
  auto line_f = [&](std::string_view label, double v) { out += fmt::format("{:<40} {:<10.2f}\n", label, v); };
  out += fmt::format("{:=^50}\n", " Serving Benchmark Result ");
  line_i("Successful requests:", static_cast<int64_t>(num("completed")));
  line_i("Failed requests:", static_cast<int64_t>(num("failed")));
  if (has("max_concurrency")) line_i("Maximum request concurrency:", static_cast<int64_t>(num("max_concurrency")));
  if (has("request_rate") && result.at("request_rate").is_number()) {
    line_f("Request rate configured (RPS):", num("request_rate"));
  }
  line_f("Benchmark duration (s):", num("duration"));
  line_i("Total input tokens:", static_cast<int64_t>(num("total_input_tokens")));
  line_i("Total generated tokens:", static_cast<int64_t>(num("total_output_tokens")));
  line_f("Request throughput (req/s):", num("request_throughput"));
  if (has("request_goodput")) line_f("Request goodput (req/s):", num("request_goodput"));
  line_f("Output token throughput (tok/s):", num("output_throughput"));
  // vLLM prints its busiest second here; scripts grep these lines.
  if (has("max_output_tokens_per_s")) line_f("Peak output token throughput (tok/s):", num("max_output_tokens_per_s"));
  if (has("max_concurrent_requests")) line_f("Peak concurrent requests:", num("max_concurrent_requests"));
  line_f("Total Token throughput (tok/s):", num("total_token_throughput"));
  for (const MetricName& m : kVllmMetrics) {
    if (!result.contains(fmt::format("mean_{}_ms", m.key))) continue;
    out += fmt::format("{:-^50}\n", m.header);
    line_f(fmt::format("Mean {} (ms):", m.display), num(fmt::format("mean_{}_ms", m.key)));
    line_f(fmt::format("Median {} (ms):", m.display), num(fmt::format("median_{}_ms", m.key)));
    const std::string suffix = fmt::format("_{}_ms", m.key);
    for (const auto& [key, value] : result) {
      const std::string_view k = key;
      if (k.size() > suffix.size() && k.front() == 'p' && k.ends_with(suffix) &&
          k.find('_') == k.size() - suffix.size()) {
        const std::string_view p = k.substr(1, k.size() - 1 - suffix.size());
        line_f(fmt::format("P{} {} (ms):", p, m.display), value.is_double() ? value.as_double() : 0.0);
      }
    }
  }
  if (has("mean_sched_ttft_ms")) {
    out += fmt::format("{:-^50}\n", "Client-side view (ixbench)");
    line_f("Mean queue time (ms):", num("mean_queue_ms"));
    // Only when 99 is among --metric-percentiles (else there is no such value to print).
    if (has("p99_sched_ttft_ms")) line_f("P99 TTFT from scheduled (ms):", num("p99_sched_ttft_ms"));
    line_f("Mean tokens per chunk:", num("mean_tokens_per_chunk"));
  }
  if (const auto* v = own.if_contains("run_valid"); v && v->is_bool() && !v->as_bool()) {
    out += "RUN INVALID:";
    for (const auto& reason : own.at("invalid_reasons").as_array()) {
      out += fmt::format(" {};", std::string_view(reason.as_string()));
    }
    out += "\n";
  }
  out += fmt::format("{:=^50}\n", "");
  return out;
}

}  // namespace ix::metrics
