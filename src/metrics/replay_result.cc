#include "metrics/replay_result.h"

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <map>

#include "metrics/statistics.h"

namespace ix::metrics {
namespace json = boost::json;

std::string_view replay_phase_name(ReplayPhase phase) {
  return phase == ReplayPhase::kWarmup ? "warmup" : "profiling";
}

int64_t replay_isl(const ReplayRecord& record) {
  return record.server_prompt_tokens >= 0 ? record.server_prompt_tokens : record.rec.prompt_len;
}

std::string replay_error_type(ErrorKind kind) {
  if (kind == ErrorKind::kCancelled) return "RequestCancellationError";
  return std::string(error_kind_name(kind));
}

std::optional<double> ReplaySample::ttft_ms() const {
  if (ttft_ns <= 0) return std::nullopt;
  return static_cast<double>(ttft_ns) / 1e6;
}

std::optional<double> ReplaySample::latency_ms() const {
  if (start_ns == 0 || end_ns < start_ns) return std::nullopt;
  return static_cast<double>(end_ns - start_ns) / 1e6;
}

std::optional<double> ReplaySample::itl_ms() const {
  const auto latency = latency_ms();
  const auto ttft = ttft_ms();
  if (osl < 2 || !latency || !ttft) return std::nullopt;
  return (*latency - *ttft) / static_cast<double>(osl - 1);
}

namespace {

int32_t clamp32(int64_t value) {
  return static_cast<int32_t>(
      std::clamp<int64_t>(value, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
}

// The first content event: content_event_ns when the runner kept it, else first_token_ns.
int64_t first_content_ns(const RequestRecord& rec) {
  if (!rec.content_event_ns.empty()) return rec.content_event_ns.front();
  return rec.first_token_ns;
}

}  // namespace

ReplaySample make_replay_sample(const ReplayRecord& record) {
  const RequestRecord& rec = record.rec;
  ReplaySample s;
  s.start_ns = rec.send_ns;
  s.end_ns = rec.end_ns;
  const int64_t first = first_content_ns(rec);
  s.ttft_ns = first > 0 && rec.send_ns > 0 && first >= rec.send_ns ? first - rec.send_ns : 0;
  s.scheduled = record.scheduled_ns != 0 && rec.send_ns != 0;
  s.schedule_lag_ns = s.scheduled ? rec.send_ns - record.scheduled_ns : 0;
  s.isl = clamp32(replay_isl(record));
  s.osl = clamp32(rec.output_len);
  s.hit_blocks = clamp32(record.hit_blocks);
  s.total_blocks = clamp32(record.total_blocks);
  s.session_num = clamp32(record.session_num);
  s.turn_depth = clamp32(record.turn_depth);
  s.phase = record.phase;
  s.skipped_context = record.skipped_context;
  s.ok = rec.success && rec.error_kind == ErrorKind::kNone && !record.skipped_context;
  s.error = s.ok ? ErrorKind::kNone : (rec.error_kind == ErrorKind::kNone ? ErrorKind::kOther : rec.error_kind);
  return s;
}

double agentic_percentile(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0.0;
  const double k = static_cast<double>(sorted.size() - 1) * (p / 100.0);
  const size_t f = static_cast<size_t>(k);
  if (f + 1 >= sorted.size()) return sorted[f];
  return sorted[f] + (k - static_cast<double>(f)) * (sorted[f + 1] - sorted[f]);
}

namespace {

constexpr std::array<std::pair<const char*, double>, 5> kPercentiles = {
    {{"p50", 50}, {"p75", 75}, {"p90", 90}, {"p95", 95}, {"p99", 99}}};

// {mean, p50, p75, p90, p95, p99, std}; empty for no values.
json::object stats_object(std::vector<double> values) {
  json::object out;
  if (values.empty()) return out;
  out["mean"] = mean(values);
  const double deviation = std_dev(values);
  std::sort(values.begin(), values.end());
  for (const auto& [key, p] : kPercentiles) out[key] = agentic_percentile(values, p);
  out["std"] = values.size() > 1 ? deviation : 0.0;
  return out;
}

// 1 / each statistic of `stats` (the slow tail stays the slow tail), std over 1 / value_i.
json::object inverse_stats_object(const json::object& stats, const std::vector<double>& values) {
  json::object out;
  for (const char* key : {"mean", "p50", "p75", "p90", "p95", "p99"}) {
    const auto* value = stats.if_contains(key);
    if (value && value->as_double() > 0) out[key] = 1.0 / value->as_double();
  }
  std::vector<double> inverse;
  for (double v : values) {
    if (v > 0) inverse.push_back(1.0 / v);
  }
  if (!inverse.empty()) out["std"] = inverse.size() > 1 ? std_dev(inverse) : 0.0;
  return out;
}

// Milliseconds to seconds as the aggregation converts them, keeping finite values > 0.
void push_seconds(std::vector<double>& out, std::optional<double> ms) {
  if (!ms || !std::isfinite(*ms) || *ms <= 0) return;
  out.push_back(*ms / 1000.0);
}

std::vector<const ReplaySample*> kept_samples(std::span<const ReplaySample> samples) {
  std::vector<const ReplaySample*> kept;
  for (const auto& s : samples) {
    if (s.profiled() && s.ok) kept.push_back(&s);
  }
  return kept;
}

json::object request_accounting(std::span<const ReplaySample> samples) {
  int64_t total = 0, warmup = 0, errors = 0, kept = 0;
  std::map<std::string, int64_t> categories;
  for (const auto& s : samples) {
    if (s.skipped_context) continue;  // never sent: not a record
    ++total;
    if (s.phase == ReplayPhase::kWarmup) ++warmup;
    if (!s.ok) {
      ++errors;
      ++categories[replay_error_type(s.error)];
    }
    if (s.ok && s.phase == ReplayPhase::kProfiling) ++kept;
  }
  json::object by_category;
  for (const auto& [name, n] : categories) by_category[name] = n;
  return {{"records_total", total},
          {"records_profiled", kept},
          {"records_dropped_total", total - kept},
          {"records_warmup_dropped", warmup},
          {"records_error_dropped", errors},
          {"error_categories", std::move(by_category)}};
}

json::object latency_metrics(const std::vector<const ReplaySample*>& kept) {
  std::vector<double> ttft, e2el, itl, e2el_per_osl;
  for (const auto* s : kept) {
    push_seconds(ttft, s->ttft_ms());
    push_seconds(e2el, s->latency_ms());
    push_seconds(itl, s->itl_ms());
    const auto latency = s->latency_ms();
    if (latency && std::isfinite(*latency) && *latency > 0 && s->osl > 0) {
      e2el_per_osl.push_back(*latency / 1000.0 / static_cast<double>(s->osl));
    }
  }
  json::object itl_stats = stats_object(itl);
  const json::object ratio_stats = stats_object(e2el_per_osl);
  json::object out;
  out["ttft"] = stats_object(ttft);
  out["e2el"] = stats_object(e2el);
  out["itl"] = itl_stats;
  out["tpot"] = itl_stats;
  out["intvty"] = inverse_stats_object(itl_stats, itl);
  out["e2e_norm_intvty"] = inverse_stats_object(ratio_stats, e2el_per_osl);
  return out;
}

// Completions per 1 s window [t, t + 1) from the first completion, while t + 1 ≤ the last.
json::object qps_metrics(const std::vector<const ReplaySample*>& kept) {
  std::vector<double> ends;
  for (const auto* s : kept) {
    if (s->end_ns != 0) ends.push_back(static_cast<double>(s->end_ns) / 1e9);
  }
  std::sort(ends.begin(), ends.end());
  if (ends.size() < 2 || ends.back() - ends.front() <= 0) return {};
  constexpr double kWindow = 1.0;
  std::vector<double> per_window;
  size_t first = 0;
  for (double current = ends.front(); current + kWindow <= ends.back(); current += kWindow) {
    while (first < ends.size() && ends[first] < current) ++first;
    size_t last = first;
    while (last < ends.size() && ends[last] < current + kWindow) ++last;
    per_window.push_back(static_cast<double>(last - first) / kWindow);
  }
  json::object out{{"window_seconds", kWindow}, {"samples", static_cast<int64_t>(per_window.size())}};
  if (per_window.empty()) {
    out["mean"] = static_cast<double>(ends.size()) / (ends.back() - ends.front());
    return out;
  }
  for (auto& [key, value] : stats_object(per_window)) out[key] = value;
  return out;
}

json::object token_metrics(const std::vector<const ReplaySample*>& kept) {
  std::vector<double> input, output;
  for (const auto* s : kept) {
    input.push_back(s->isl);
    output.push_back(s->osl);
  }
  return {{"input", stats_object(input)}, {"output_actual", stats_object(output)}};
}

json::object throughput_metrics(const std::vector<const ReplaySample*>& kept, int64_t num_gpus) {
  int64_t first_start = std::numeric_limits<int64_t>::max(), last_end = std::numeric_limits<int64_t>::min();
  double input = 0, output = 0;
  for (const auto* s : kept) {
    if (s->start_ns != 0) first_start = std::min(first_start, s->start_ns);
    if (s->end_ns != 0) last_end = std::max(last_end, s->end_ns);
    input += s->isl;
    output += s->osl;
  }
  if (kept.empty() || last_end <= first_start) return {};
  const double duration = static_cast<double>(last_end - first_start) / 1e9;
  json::object per_gpu;
  if (num_gpus > 0) {
    const double gpus = static_cast<double>(num_gpus);
    per_gpu = {{"total_tput_tps", (input + output) / duration / gpus},
               {"output_tput_tps", output / duration / gpus},
               {"input_tput_tps", input / duration / gpus}};
  }
  return {{"input", {{"tokens_per_second", input / duration}}},
          {"output", {{"tokens_per_second", output / duration}}},
          {"total", {{"tokens_per_second", (input + output) / duration}}},
          {"duration_seconds", duration},
          {"per_gpu", std::move(per_gpu)}};
}

struct BlockCount {
  int64_t hit = 0;
  int64_t total = 0;
  json::object to_json() const {
    json::object out{{"hit_blocks", hit}, {"total_blocks", total}};
    out["hit_rate"] = total > 0 ? json::value(static_cast<double>(hit) / static_cast<double>(total)) : json::value();
    return out;
  }
};

// Theoretical hit of the requests sent in `phase` (errors included: their prompts reached the
// server's cache as much as anyone's).
BlockCount theoretical_blocks(std::span<const ReplaySample> samples, ReplayPhase phase) {
  BlockCount count;
  for (const auto& s : samples) {
    if (s.phase != phase || s.skipped_context) continue;
    count.hit += s.hit_blocks;
    count.total += s.total_blocks;
  }
  return count;
}

json::object prefix_cache(std::span<const ReplaySample> samples, const ReplayRunInfo& info) {
  json::object theoretical{{"warmup", theoretical_blocks(samples, ReplayPhase::kWarmup).to_json()},
                           {"profiling", theoretical_blocks(samples, ReplayPhase::kProfiling).to_json()}};
  json::value realized;
  if (const auto& delta = info.server_prefix_cache) {
    json::object r{{"hits", delta->hits}, {"queries", delta->queries}};
    r["hit_rate"] = delta->queries > 0 ? json::value(delta->hits / delta->queries) : json::value();
    realized = std::move(r);
  }
  return {{"theoretical", std::move(theoretical)}, {"realized", std::move(realized)}};
}

json::object schedule_lag(std::span<const ReplaySample> samples) {
  std::vector<double> lag_ms;
  for (const auto& s : samples) {
    if (s.profiled() && s.scheduled) lag_ms.push_back(static_cast<double>(s.schedule_lag_ns) / 1e6);
  }
  json::object out{{"count", static_cast<int64_t>(lag_ms.size())}};
  if (lag_ms.empty()) return out;
  out["mean"] = mean(lag_ms);
  std::sort(lag_ms.begin(), lag_ms.end());
  for (auto [key, p] : {std::pair{"p50", 50.0}, {"p90", 90.0}, {"p99", 99.0}}) out[key] = agentic_percentile(lag_ms, p);
  out["max"] = lag_ms.back();
  return out;
}

// {count, p50, p90} (count alone when empty).
json::object count_p50_p90(std::vector<double> values) {
  json::object out{{"count", static_cast<int64_t>(values.size())}};
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  out["p50"] = agentic_percentile(values, 50);
  out["p90"] = agentic_percentile(values, 90);
  return out;
}

json::object makespans(std::span<const ReplaySample> samples) {
  std::map<int32_t, std::pair<int64_t, int64_t>> window;  // session → (first send, last end)
  for (const auto& s : samples) {
    if (!s.profiled() || s.start_ns == 0) continue;
    auto [it, fresh] = window.try_emplace(s.session_num, s.start_ns, s.end_ns);
    if (!fresh) {
      it->second.first = std::min(it->second.first, s.start_ns);
      it->second.second = std::max(it->second.second, s.end_ns);
    }
  }
  std::vector<double> seconds;
  for (const auto& [session, span] : window) seconds.push_back(static_cast<double>(span.second - span.first) / 1e9);
  json::object out = count_p50_p90(seconds);
  if (!seconds.empty()) out["mean"] = mean(seconds);
  return out;
}

// Turn-depth buckets: 0, 1, 2-3, 4-7, 8-15, 16+.
constexpr std::array<std::pair<const char*, int64_t>, 6> kDepthBuckets = {
    {{"0", 0}, {"1", 1}, {"2-3", 2}, {"4-7", 4}, {"8-15", 8}, {"16+", 16}}};

size_t depth_bucket(int64_t turn_depth) {
  size_t bucket = 0;
  for (size_t i = 0; i < kDepthBuckets.size(); ++i) {
    if (turn_depth >= kDepthBuckets[i].second) bucket = i;
  }
  return bucket;
}

json::object ttft_by_turn_depth(const std::vector<const ReplaySample*>& kept) {
  std::array<std::vector<double>, kDepthBuckets.size()> ttft;
  for (const auto* s : kept) push_seconds(ttft[depth_bucket(s->turn_depth)], s->ttft_ms());
  json::object out;
  for (size_t i = 0; i < kDepthBuckets.size(); ++i) out[kDepthBuckets[i].first] = count_p50_p90(std::move(ttft[i]));
  return out;
}

json::object validity(std::span<const ReplaySample> samples, const ReplayRunInfo& info, double measured_s) {
  int64_t successes = 0, errors = 0, cancelled = 0, skipped = 0, sent = 0;
  for (const auto& s : samples) {
    if (s.skipped_context) ++skipped;
    if (!s.profiled()) continue;
    ++sent;
    if (s.error == ErrorKind::kCancelled) {
      ++cancelled;  // the client stopped it (the duration's grace, a signal): not a server error
    } else {
      (s.ok ? successes : errors) += 1;
    }
  }
  const int64_t completed = successes + errors;
  const double error_rate = completed > 0 ? static_cast<double>(errors) / static_cast<double>(completed) : 0.0;
  const double duration = info.benchmark_duration_s > 0 ? info.benchmark_duration_s : measured_s;
  const int64_t considered = sent + skipped;
  const double overflow_share = considered > 0 ? static_cast<double>(skipped) / static_cast<double>(considered) : 0.0;
  json::array reasons;
  if (completed > 0 && error_rate > info.failed_request_threshold) reasons.emplace_back("error_rate_exceeded");
  if (completed <= 0) reasons.emplace_back("no_completed_requests");
  if (duration < info.min_submission_duration_s) reasons.emplace_back("duration_below_minimum");
  if (overflow_share > info.max_context_overflow_share) reasons.emplace_back("context_overflow_rate_exceeded");
  for (const auto& reason : info.client_invalid_reasons) reasons.emplace_back(reason);
  return {{"submission_valid", reasons.empty()},
          {"reasons", std::move(reasons)},
          {"completed", completed},
          {"errors", errors},
          {"cancelled", cancelled},
          {"error_rate", error_rate},
          {"failed_request_threshold", info.failed_request_threshold},
          {"duration_seconds", duration},
          {"context_overflow", {{"count", skipped}, {"share", overflow_share}}}};
}

}  // namespace

json::object build_replay_result(std::span<const ReplaySample> samples, const ReplayRunInfo& info) {
  const auto kept = kept_samples(samples);
  json::object accounting = request_accounting(samples);
  json::object throughput = throughput_metrics(kept, info.num_gpus);
  const double measured_s =
      throughput.contains("duration_seconds") ? throughput.at("duration_seconds").as_double() : 0.0;
  const BlockCount profiled_blocks = theoretical_blocks(samples, ReplayPhase::kProfiling);

  json::object request_metrics;
  request_metrics["qps"] = qps_metrics(kept);
  request_metrics["latency"] = latency_metrics(kept);
  request_metrics["tokens"] = token_metrics(kept);
  request_metrics["throughput"] = std::move(throughput);
  request_metrics["cache"] = {{"theoretical_cache_hit_rate", profiled_blocks.to_json().at("hit_rate")}};

  json::object out;
  out["schema_version"] = kReplayResultSchemaVersion;
  out["num_requests_total"] = accounting.at("records_total");
  out["num_requests_successful"] = static_cast<int64_t>(kept.size());
  out["request_accounting"] = std::move(accounting);
  out["request_metrics"] = std::move(request_metrics);
  out["prefix_cache"] = prefix_cache(samples, info);
  if (info.open_loop) out["schedule_lag_ms"] = schedule_lag(samples);
  out["sessions"] = {{"makespan_s", makespans(samples)}, {"ttft_by_turn_depth_s", ttft_by_turn_depth(kept)}};
  out["validity"] = validity(samples, info, measured_s);
  return out;
}

}  // namespace ix::metrics
