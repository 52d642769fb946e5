#include "metrics/serve_result.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>

#include "common/sanitize.h"
#include "metrics/serve_summary.h"

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

// vLLM's metric display order and names (the console summary's sections).
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

}  // namespace

boost::json::object build_serve_result(const std::vector<RequestRecord>& records, const ServeRunInfo& info) {
  // The busiest second's buckets start at the earliest send of a measured, successful request.
  int64_t first_send = INT64_MAX;
  size_t requests = 0, events = 0;
  for (const RequestRecord& r : records) {
    if (r.warmup || !r.success) continue;
    first_send = std::min(first_send, r.send_ns);
    ++requests;
    events += r.content_event_ns.size();
  }
  ServeSummary summary(TokenSamples::kEvery, first_send);
  summary.reserve(requests, events);
  for (const RequestRecord& r : records) summary.add_request(r);
  return std::move(summary).result(info);
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
