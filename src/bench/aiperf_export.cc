#include "bench/aiperf_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <ctime>
#include <functional>
#include <limits>
#include <system_error>

#include "common/json_io.h"
#include "metrics/prometheus.h"
#include "metrics/statistics.h"

namespace ix::bench {
namespace json = boost::json;
namespace fs = std::filesystem;
using metrics::ReplayPhase;
using metrics::ReplayRecord;
using metrics::ReplaySample;

namespace {

json::object metric_value(double value, std::string_view unit) {
  return {{"value", value}, {"unit", unit}};
}
json::object metric_value(int64_t value, std::string_view unit) {
  return {{"value", value}, {"unit", unit}};
}

json::object row_metadata(const ReplayRecord& record, int64_t offset) {
  const auto& rec = record.rec;
  json::object m;
  m["benchmark_phase"] = metrics::replay_phase_name(record.phase);
  m["request_start_ns"] = rec.send_ns + offset;
  m["request_end_ns"] = rec.end_ns + offset;
  m["conversation_id"] = record.conversation_id;
  m["turn_index"] = record.turn_index;
  m["x_correlation_id"] = record.correlation_id;
  m["session_num"] = record.session_num;
  m["lane"] = record.lane;
  m["agent_depth"] = record.depth;
  m["turn_depth"] = record.turn_depth;
  if (record.scheduled_ns != 0) m["scheduled_ns"] = record.scheduled_ns + offset;
  m["was_cancelled"] = rec.error_kind == metrics::ErrorKind::kCancelled;
  return m;
}

json::object row_metrics(const ReplaySample& sample) {
  json::object m;
  if (auto v = sample.ttft_ms()) m["time_to_first_token"] = metric_value(*v, "ms");
  if (auto v = sample.latency_ms()) m["request_latency"] = metric_value(*v, "ms");
  if (auto v = sample.itl_ms()) m["inter_token_latency"] = metric_value(*v, "ms");
  m["input_sequence_length"] = metric_value(int64_t{sample.isl}, "tokens");
  m["output_sequence_length"] = metric_value(int64_t{sample.osl}, "tokens");
  return m;
}

json::value row_error(const ReplayRecord& record, const ReplaySample& sample) {
  if (sample.ok) return nullptr;
  const auto& rec = record.rec;
  json::object e;
  e["type"] = metrics::replay_error_type(sample.error);
  if (sample.error == metrics::ErrorKind::kCancelled) {
    e["code"] = 499;
  } else if (rec.http_status != 0) {
    e["code"] = rec.http_status;
  } else {
    e["code"] = nullptr;
  }
  e["message"] = rec.error_message.empty() ? std::string(metrics::error_kind_name(sample.error)) : rec.error_message;
  return e;
}

}  // namespace

json::object profile_export_row(const ReplayRecord& record, int64_t steady_to_unix_ns) {
  const ReplaySample sample = metrics::make_replay_sample(record);
  return {{"metadata", row_metadata(record, steady_to_unix_ns)},
          {"metrics", row_metrics(sample)},
          {"error", row_error(record, sample)}};
}

// ---- profile_export.jsonl ----

Result<ProfileExportWriter> ProfileExportWriter::open(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return fail(ErrorCode::kIo,
                fmt::format("cannot create the artifact directory '{}': {}", dir.string(), ec.message()));
  }
  auto file = files::AppendFile::create(dir / kProfileExportFile);
  if (!file) return std::unexpected(file.error());
  return ProfileExportWriter(std::move(*file));
}

Result<void> ProfileExportWriter::write(const ReplayRecord& record, int64_t steady_to_unix_ns) {
  if (record.skipped_context) return {};
  buffer_ += ix::json::to_string(profile_export_row(record, steady_to_unix_ns));
  buffer_ += '\n';
  ++rows_;
  if (buffer_.size() >= kFlushBytes) return flush();
  return {};
}

Result<void> ProfileExportWriter::flush() {
  if (buffer_.empty()) return {};
  if (auto written = file_.append(buffer_); !written) return written;
  buffer_.clear();
  return {};
}

Result<void> ProfileExportWriter::close() {
  if (auto flushed = flush(); !flushed) return flushed;
  return file_.close();
}

// ---- profile_export_aiperf.json ----

std::string iso8601_utc(int64_t unix_ns) {
  const int64_t seconds = unix_ns >= 0 ? unix_ns / 1'000'000'000 : (unix_ns - 999'999'999) / 1'000'000'000;
  const int64_t micros = (unix_ns - seconds * 1'000'000'000) / 1000;
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+00:00", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
}

namespace {

json::object count_metric(int64_t n) {
  return {{"unit", "requests"}, {"avg", n}};
}

// aiperf's statistics of a series (numpy: population std, linear percentiles): {avg, min, max,
// std, p1 ... p99}; empty for no values.
json::object summary_stats(std::vector<double> values) {
  json::object out;
  if (values.empty()) return out;
  static constexpr double kPercentiles[] = {1, 5, 10, 25, 50, 75, 90, 95, 99};
  const metrics::Summary s = metrics::summarize(values, kPercentiles);
  out["avg"] = s.mean;
  out["min"] = s.min;
  out["max"] = s.max;
  out["std"] = s.std_dev;
  for (const auto& [p, value] : s.percentiles) out["p" + metrics::percentile_label(p)] = value;
  return out;
}

// aiperf's per-metric statistics with the metric's unit first.
json::object distribution(std::vector<double> values, std::string_view unit) {
  json::object out{{"unit", unit}};
  for (auto& [key, value] : summary_stats(std::move(values))) out[key] = std::move(value);
  return out;
}

struct ProfilingTotals {
  int64_t successes = 0;
  int64_t errors = 0;
  int64_t cancelled = 0;  // stopped by the client (the duration's grace, a signal): not the server's errors
  int64_t hit_blocks = 0;
  int64_t total_blocks = 0;
  int64_t output_tokens = 0;
  int64_t first_start = std::numeric_limits<int64_t>::max();
  int64_t last_end = std::numeric_limits<int64_t>::min();
  std::vector<double> ttft, latency, itl, isl, osl;

  void add(const ReplaySample& s) {
    hit_blocks += s.hit_blocks;
    total_blocks += s.total_blocks;
    if (s.start_ns != 0) first_start = std::min(first_start, s.start_ns);
    if (s.end_ns != 0) last_end = std::max(last_end, s.end_ns);
    if (!s.ok) {
      ++(s.error == metrics::ErrorKind::kCancelled ? cancelled : errors);
      return;
    }
    ++successes;
    output_tokens += s.osl;
    if (auto v = s.ttft_ms()) ttft.push_back(*v);
    if (auto v = s.latency_ms()) latency.push_back(*v);
    if (auto v = s.itl_ms()) itl.push_back(*v);
    isl.push_back(s.isl);
    osl.push_back(s.osl);
  }
  bool has_window() const { return last_end > first_start; }
  double window_s() const { return has_window() ? static_cast<double>(last_end - first_start) / 1e9 : 0.0; }
};

json::object theoretical_hit(const ProfilingTotals& t) {
  const double avg =
      t.total_blocks > 0 ? 100.0 * static_cast<double>(t.hit_blocks) / static_cast<double>(t.total_blocks) : 0.0;
  return {{"unit", "%"}, {"avg", avg}, {"count", t.total_blocks}, {"sum", t.hit_blocks}};
}

json::object aggregate_metadata(const AiperfAggregateInfo& info) {
  json::array reasons;
  for (const auto& r : info.submission_invalid_reasons) reasons.emplace_back(r);
  json::object m{{"scenario", info.scenario},
                 {"submission_valid", info.submission_valid},
                 {"submission_invalid_reasons", std::move(reasons)}};
  if (!info.dataset.empty()) m["dataset"] = info.dataset;
  return m;
}

}  // namespace

json::object build_aiperf_aggregate(std::span<const ReplaySample> samples, const AiperfAggregateInfo& info) {
  ProfilingTotals t;
  for (const auto& s : samples) {
    if (s.profiled()) t.add(s);
  }
  const double window = t.window_s();
  json::object out;
  out["request_count"] = count_metric(t.successes);
  out["error_request_count"] = count_metric(t.errors);
  out["completed_request_count"] = count_metric(t.successes + t.errors);
  out["cancelled_request_count"] = count_metric(t.cancelled);
  if (window > 0) {
    out["request_throughput"] = {{"unit", "requests/sec"}, {"avg", static_cast<double>(t.successes) / window}};
    out["output_token_throughput"] = {{"unit", "tokens/sec"}, {"avg", static_cast<double>(t.output_tokens) / window}};
    out["benchmark_duration"] = {{"unit", "sec"}, {"avg", window}};
  }
  out["theoretical_prefix_cache_hit"] = theoretical_hit(t);
  out["time_to_first_token"] = distribution(std::move(t.ttft), "ms");
  out["request_latency"] = distribution(std::move(t.latency), "ms");
  out["inter_token_latency"] = distribution(std::move(t.itl), "ms");
  out["input_sequence_length"] = distribution(std::move(t.isl), "tokens");
  out["output_sequence_length"] = distribution(std::move(t.osl), "tokens");
  if (t.has_window()) {
    out["start_time"] = iso8601_utc(t.first_start + info.steady_to_unix_ns);
    out["end_time"] = iso8601_utc(t.last_end + info.steady_to_unix_ns);
  }
  out["metadata"] = aggregate_metadata(info);
  return out;
}

// ---- server_metrics_export.json ----

namespace {

std::string labels_key(const std::string& endpoint, const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string key = endpoint;
  for (const auto& [k, v] : labels) key += fmt::format("\x1f{}={}", k, v);
  return key;
}

// The name a family is exported under: counters without `_total`.
std::string export_name(const metrics::PrometheusFamily& family) {
  if (family.type == "counter" && family.name.ends_with("_total")) {
    return family.name.substr(0, family.name.size() - 6);
  }
  return family.name;
}

double parse_le(const std::string& text) {
  if (text == "+Inf" || text == "Inf" || text == "inf") return std::numeric_limits<double>::infinity();
  return std::strtod(text.c_str(), nullptr);
}

// Folds one histogram family's samples into per-label-set points (the `le` label removed).
void add_histogram(ServerMetricsCollector::Metric& metric, const metrics::PrometheusFamily& family,
                   const ServerScrape& scrape) {
  std::map<std::string, ServerMetricsCollector::HistogramPoint*> points;
  for (const auto& sample : family.samples) {
    auto labels = sample.labels;
    std::string le;
    std::erase_if(labels, [&le](const auto& kv) { return kv.first == "le" && (le = kv.second, true); });
    const std::string key = labels_key(scrape.endpoint_url, labels);
    auto& series = metric.series[key];
    if (series.endpoint_url.empty()) {
      series.endpoint_url = scrape.endpoint_url;
      series.labels = labels;
    }
    auto [it, fresh] = points.try_emplace(key, nullptr);
    if (fresh) {
      it->second = &series.histogram.emplace_back();
      it->second->unix_ns = scrape.unix_ns;
    }
    auto& point = *it->second;
    if (sample.name.ends_with("_bucket")) {
      point.buckets.emplace_back(parse_le(le), sample.value);
    } else if (sample.name.ends_with("_sum")) {
      point.sum = sample.value;
    } else if (sample.name.ends_with("_count")) {
      point.count = sample.value;
    }
  }
  for (auto& [key, point] : points) std::sort(point->buckets.begin(), point->buckets.end());
}

void add_scalar(ServerMetricsCollector::Metric& metric, const metrics::PrometheusFamily& family,
                const ServerScrape& scrape) {
  for (const auto& sample : family.samples) {
    // The value itself: `name` or `name_total`, not `_created` (a counter's creation time).
    if (sample.name != family.name && sample.name != family.name + "_total") continue;
    auto& series = metric.series[labels_key(scrape.endpoint_url, sample.labels)];
    if (series.endpoint_url.empty()) {
      series.endpoint_url = scrape.endpoint_url;
      series.labels = sample.labels;
    }
    series.points.push_back({scrape.unix_ns, sample.value});
  }
}

}  // namespace

void ServerMetricsCollector::add(const ServerScrape& scrape) {
  Endpoint& endpoint = endpoints_[scrape.endpoint_url];
  endpoint.fetch_ns.push_back(scrape.unix_ns);
  endpoint.fetch_latency_ms_sum += scrape.fetch_latency_ms;
  const size_t hash = std::hash<std::string>{}(scrape.text);
  if (endpoint.update_ns.empty() || hash != endpoint.last_text_hash) endpoint.update_ns.push_back(scrape.unix_ns);
  endpoint.last_text_hash = hash;
  for (const auto& family : metrics::parse_prometheus_families(scrape.text)) {
    if (family.samples.empty() || family.type == "summary") continue;
    const std::string type =
        family.type == "counter" || family.type == "histogram" ? family.type : std::string("gauge");
    Metric& metric = metrics_[export_name(family)];
    if (metric.type.empty()) {
      metric.type = type;
      metric.description = family.help;
    }
    if (metric.type != type) continue;  // a name reused with another type: the first one holds
    if (type == "histogram") {
      add_histogram(metric, family, scrape);
    } else {
      add_scalar(metric, family, scrape);
    }
  }
}

namespace {

using Point = ServerMetricsCollector::Point;
using HistogramPoint = ServerMetricsCollector::HistogramPoint;

struct Window {
  int64_t start = 0;
  int64_t end = 0;
  double seconds() const { return static_cast<double>(end - start) / 1e9; }
};

json::object gauge_stats(std::vector<double> values) {
  return summary_stats(std::move(values));
}

std::vector<double> values_in(const std::vector<Point>& points, Window w) {
  std::vector<double> out;
  for (const auto& p : points) {
    if (p.unix_ns >= w.start && p.unix_ns <= w.end) out.push_back(p.value);
  }
  return out;
}

// The last point at or before `t` (strictly before when `strict`), else nullptr.
template <typename P>
const P* last_before(const std::vector<P>& points, int64_t t, bool strict) {
  const P* found = nullptr;
  for (const auto& p : points) {
    if (strict ? p.unix_ns < t : p.unix_ns <= t) found = &p;
  }
  return found;
}

// The first point in the window and the last, for Δ: the baseline is the last point before the
// window when there is one.
template <typename P>
std::pair<const P*, const P*> delta_points(const std::vector<P>& points, Window w) {
  const P* last = last_before(points, w.end, false);
  if (!last || last->unix_ns < w.start) return {nullptr, nullptr};
  const P* base = last_before(points, w.start, true);
  if (!base) {
    for (const auto& p : points) {
      if (p.unix_ns >= w.start) {
        base = &p;
        break;
      }
    }
  }
  return {base, last};
}

// A counter's increase, from 0 again after a reset.
double increase(double from, double to) {
  return to >= from ? to - from : to;
}

std::optional<double> counter_total(const std::vector<Point>& points, Window w) {
  auto [base, last] = delta_points(points, w);
  if (!base) return std::nullopt;
  return increase(base->value, last->value);
}

json::object counter_stats(const std::vector<Point>& points, Window w) {
  json::object out;
  const auto total = counter_total(points, w);
  if (!total) return out;
  out["total"] = *total;
  out["rate"] = w.seconds() > 0 ? *total / w.seconds() : 0.0;
  return out;
}

struct HistogramDelta {
  double count = 0.0;
  double sum = 0.0;
  std::vector<std::pair<double, double>> buckets;  // (le, Δ cumulative count)
};

std::optional<HistogramDelta> histogram_delta(const std::vector<HistogramPoint>& points, Window w) {
  auto [base, last] = delta_points(points, w);
  if (!base) return std::nullopt;
  HistogramDelta d{increase(base->count, last->count), increase(base->sum, last->sum), {}};
  for (const auto& [le, cumulative] : last->buckets) {
    double before = 0.0;
    for (const auto& [base_le, base_cumulative] : base->buckets) {
      if (base_le == le) before = base_cumulative;
    }
    d.buckets.emplace_back(le, increase(before, cumulative));
  }
  return d;
}

// Prometheus' histogram_quantile: linear within the bucket holding the rank; the +Inf bucket
// answers with the highest finite bound.
double bucket_quantile(const HistogramDelta& d, double q) {
  if (d.buckets.empty() || d.count <= 0) return 0.0;
  const double rank = q * d.buckets.back().second;
  double lower = 0.0, below = 0.0;
  for (const auto& [le, cumulative] : d.buckets) {
    if (cumulative >= rank) {
      if (std::isinf(le)) return lower;
      const double in_bucket = cumulative - below;
      return in_bucket > 0 ? lower + (le - lower) * (rank - below) / in_bucket : le;
    }
    if (!std::isinf(le)) lower = le;
    below = cumulative;
  }
  return lower;
}

json::object histogram_stats(const HistogramDelta& d, Window w) {
  const double seconds = w.seconds();
  json::object out{{"count", d.count}, {"sum", d.sum}, {"avg", d.count > 0 ? d.sum / d.count : 0.0}};
  out["count_rate"] = seconds > 0 ? d.count / seconds : 0.0;
  out["sum_rate"] = seconds > 0 ? d.sum / seconds : 0.0;
  for (auto [key, q] :
       {std::pair{"p50_estimate", 0.5}, {"p90_estimate", 0.9}, {"p95_estimate", 0.95}, {"p99_estimate", 0.99}}) {
    out[key] = bucket_quantile(d, q);
  }
  return out;
}

json::object buckets_object(const HistogramDelta& d) {
  json::object out;
  for (const auto& [le, count] : d.buckets) out[std::isinf(le) ? std::string("+Inf") : fmt::format("{}", le)] = count;
  return out;
}

// Slices of `slice_s` from the window's start; `fill` writes a slice's values and says whether
// it had any.
template <typename Fill>
json::array timeslices(Window w, double slice_s, Fill&& fill) {
  json::array out;
  const auto step = static_cast<int64_t>(std::llround(slice_s * 1e9));
  if (step <= 0 || w.end <= w.start) return out;
  for (int64_t start = w.start; start < w.end; start += step) {
    const Window slice{start, start + step};
    json::object entry{{"start_ns", slice.start}, {"end_ns", slice.end}};
    if (!fill(Window{slice.start, std::min(slice.end, w.end)}, entry)) continue;
    entry["is_complete"] = slice.end <= w.end;
    out.push_back(std::move(entry));
  }
  return out;
}

json::object series_json(const std::string& type, const ServerMetricsCollector::Series& series, Window w,
                         double slice_s) {
  json::object labels;
  for (const auto& [k, v] : series.labels) labels[k] = v;
  json::object out{{"endpoint_url", series.endpoint_url}, {"labels", std::move(labels)}};
  if (type == "histogram") {
    const auto d = histogram_delta(series.histogram, w);
    if (!d) return {};
    out["stats"] = histogram_stats(*d, w);
    out["buckets"] = buckets_object(*d);
    out["timeslices"] = timeslices(w, slice_s, [&](Window s, json::object& e) {
      const auto sd = histogram_delta(series.histogram, s);
      if (!sd) return false;
      e["count"] = sd->count;
      e["sum"] = sd->sum;
      e["avg"] = sd->count > 0 ? sd->sum / sd->count : 0.0;
      return true;
    });
  } else if (type == "counter") {
    out["stats"] = counter_stats(series.points, w);
    if (out["stats"].as_object().empty()) return {};
    out["timeslices"] = timeslices(w, slice_s, [&](Window s, json::object& e) {
      const auto total = counter_total(series.points, s);
      if (!total) return false;
      e["total"] = *total;
      e["rate"] = s.seconds() > 0 ? *total / s.seconds() : 0.0;
      return true;
    });
  } else {
    out["stats"] = gauge_stats(values_in(series.points, w));
    if (out["stats"].as_object().empty()) return {};
    out["timeslices"] = timeslices(w, slice_s, [&](Window s, json::object& e) {
      const auto values = values_in(series.points, Window{s.start, s.end - 1});
      if (values.empty()) return false;
      e["avg"] = metrics::mean(values);
      e["min"] = *std::min_element(values.begin(), values.end());
      e["max"] = *std::max_element(values.begin(), values.end());
      return true;
    });
  }
  return out;
}

json::object endpoint_info(const ServerMetricsCollector::Endpoint& e) {
  json::object out{{"total_fetches", static_cast<int64_t>(e.fetch_ns.size())}};
  out["first_fetch_ns"] = e.fetch_ns.empty() ? 0 : *std::min_element(e.fetch_ns.begin(), e.fetch_ns.end());
  out["last_fetch_ns"] = e.fetch_ns.empty() ? 0 : *std::max_element(e.fetch_ns.begin(), e.fetch_ns.end());
  out["avg_fetch_latency_ms"] =
      e.fetch_ns.empty() ? 0.0 : e.fetch_latency_ms_sum / static_cast<double>(e.fetch_ns.size());
  out["unique_updates"] = static_cast<int64_t>(e.update_ns.size());
  const int64_t first = e.update_ns.empty() ? 0 : e.update_ns.front();
  const int64_t last = e.update_ns.empty() ? 0 : e.update_ns.back();
  out["first_update_ns"] = first;
  out["last_update_ns"] = last;
  out["duration_seconds"] = static_cast<double>(last - first) / 1e9;
  std::vector<double> intervals_ms;
  for (size_t i = 1; i < e.update_ns.size(); ++i) {
    intervals_ms.push_back(static_cast<double>(e.update_ns[i] - e.update_ns[i - 1]) / 1e6);
  }
  out["avg_update_interval_ms"] = metrics::mean(intervals_ms);
  out["median_update_interval_ms"] = metrics::median(intervals_ms);
  return out;
}

json::object export_summary(const std::map<std::string, ServerMetricsCollector::Endpoint>& endpoints,
                            const ServerMetricsWindow& window) {
  json::array configured, successful;
  json::object info;
  for (const auto& url : window.endpoints_configured) configured.emplace_back(url);
  for (const auto& [url, endpoint] : endpoints) {
    if (window.endpoints_configured.empty()) configured.emplace_back(url);
    if (!endpoint.fetch_ns.empty()) successful.emplace_back(url);
    info[url] = endpoint_info(endpoint);
  }
  return {{"endpoints_configured", std::move(configured)},
          {"endpoints_successful", std::move(successful)},
          {"start_time", iso8601_utc(window.start_unix_ns)},
          {"end_time", iso8601_utc(window.end_unix_ns)},
          {"endpoint_info", std::move(info)}};
}

}  // namespace

json::object ServerMetricsCollector::build(const ServerMetricsWindow& window) const {
  const Window w{window.start_unix_ns, window.end_unix_ns};
  json::object metrics_json;
  for (const auto& [name, metric] : metrics_) {
    json::array series;
    for (const auto& [key, s] : metric.series) {
      json::object one = series_json(metric.type, s, w, window.slice_duration_s);
      if (!one.empty()) series.push_back(std::move(one));
    }
    if (series.empty()) continue;
    metrics_json[name] = {{"type", metric.type}, {"description", metric.description}, {"series", std::move(series)}};
  }
  return {{"schema_version", "1.0"},
          {"aiperf_version", "ixbench"},
          {"benchmark_id", window.benchmark_id},
          {"summary", export_summary(endpoints_, window)},
          {"metrics", std::move(metrics_json)}};
}

// ---- CSV, realised hit, files ----

namespace {

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string number_text(const json::value& v) {
  if (v.is_int64()) return fmt::format("{}", v.as_int64());
  if (v.is_uint64()) return fmt::format("{}", v.as_uint64());
  if (v.is_double()) return fmt::format("{}", v.as_double());
  return {};
}

}  // namespace

std::string server_metrics_csv(const json::object& server_metrics_export) {
  std::string out = "metric,type,endpoint_url,labels,stat,value\n";
  const auto* metrics_json = server_metrics_export.if_contains("metrics");
  if (!metrics_json || !metrics_json->is_object()) return out;
  for (const auto& [name, metric] : metrics_json->as_object()) {
    const auto& m = metric.as_object();
    const std::string type(m.at("type").as_string());
    for (const auto& series : m.at("series").as_array()) {
      const auto& s = series.as_object();
      std::string labels;
      for (const auto& [k, v] : s.at("labels").as_object()) {
        labels +=
            fmt::format("{}{}={}", labels.empty() ? "" : ";", std::string_view(k), std::string_view(v.as_string()));
      }
      for (const auto& [stat, value] : s.at("stats").as_object()) {
        out += fmt::format("{},{},{},{},{},{}\n", csv_field(name), type, csv_field(s.at("endpoint_url").as_string()),
                           csv_field(labels), std::string_view(stat), number_text(value));
      }
    }
  }
  return out;
}

namespace {

std::optional<double> counter_sum(const json::object& metrics_json, std::string_view name) {
  const auto* metric = metrics_json.if_contains(name);
  if (!metric || !metric->is_object()) return std::nullopt;
  double total = 0.0;
  bool found = false;
  for (const auto& series : metric->as_object().at("series").as_array()) {
    const auto* value = series.as_object().at("stats").as_object().if_contains("total");
    if (!value || !value->is_number()) continue;
    total += value->to_number<double>();
    found = true;
  }
  return found ? std::optional<double>(total) : std::nullopt;
}

Result<void> ensure_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return fail(ErrorCode::kIo,
                fmt::format("cannot create the artifact directory '{}': {}", dir.string(), ec.message()));
  }
  return {};
}

}  // namespace

std::optional<metrics::ServerPrefixCacheDelta> realized_prefix_cache(const json::object& server_metrics_export) {
  const auto* metrics_json = server_metrics_export.if_contains("metrics");
  if (!metrics_json || !metrics_json->is_object()) return std::nullopt;
  const auto hits = counter_sum(metrics_json->as_object(), "vllm:prefix_cache_hits");
  const auto queries = counter_sum(metrics_json->as_object(), "vllm:prefix_cache_queries");
  if (!hits || !queries) return std::nullopt;
  return metrics::ServerPrefixCacheDelta{*hits, *queries};
}

Result<void> write_aiperf_aggregate(const fs::path& dir, const json::object& aggregate) {
  if (auto made = ensure_directory(dir); !made) return made;
  return files::write_file(dir / kAiperfAggregateFile, ix::json::to_pretty_string(aggregate));
}

Result<void> write_server_metrics_export(const fs::path& dir, const json::object& server_metrics) {
  if (auto made = ensure_directory(dir); !made) return made;
  if (auto written = files::write_file(dir / kServerMetricsJsonFile, ix::json::to_pretty_string(server_metrics));
      !written) {
    return written;
  }
  return files::write_file(dir / kServerMetricsCsvFile, server_metrics_csv(server_metrics));
}

}  // namespace ix::bench
