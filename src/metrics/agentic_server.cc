// server_metrics_export.json through the script's backend adapters (backends/vllm.py,
// dynamo_vllm.py, sglang.py, atom.py, base.py) and aggregation_common.py's series helpers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "common/strings.h"
#include "metrics/agentic_internal.h"
#include "metrics/statistics.h"

namespace ix::metrics::agentic::detail {
namespace {

namespace bj = boost::json;
using Names = std::vector<std::string>;
using Keys = std::vector<std::string_view>;
using Filter = std::function<bool(const bj::object&)>;
using Opt = std::optional<double>;

const Keys kCounterKeys = {"total", "sum", "max", "avg"};
const Keys kGaugeKeys = {"max", "avg", "total"};
const Keys kAverageKeys = {"avg", "max", "total"};

enum class Backend { kDynamoVllm, kAtom, kSglang, kVllm };

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::kDynamoVllm: return "dynamo-vllm";
    case Backend::kAtom: return "atom";
    case Backend::kSglang: return "sglang";
    case Backend::kVllm: return "vllm";
  }
  return "none";
}

// metric_series(): the dict entries of metrics[name].series, over the names in order.
std::vector<const bj::object*> metric_series(const bj::object& metrics, const Names& names) {
  std::vector<const bj::object*> out;
  for (const std::string& name : names) {
    const bj::value* entry = metrics.if_contains(name);
    const bj::object* e = entry ? entry->if_object() : nullptr;
    const bj::value* series = e ? e->if_contains("series") : nullptr;
    if (series == nullptr || !series->is_array()) continue;
    for (const bj::value& s : series->get_array())
      if (s.is_object()) out.push_back(&s.get_object());
  }
  return out;
}

Opt series_stat(const bj::object& series, const Keys& keys) {
  const bj::value* stats = series.if_contains("stats");
  if (stats == nullptr || !stats->is_object()) return std::nullopt;
  for (std::string_view key : keys) {
    const bj::value* v = stats->get_object().if_contains(key);
    if (v == nullptr) continue;
    if (auto value = to_float(*v)) return value;
  }
  return std::nullopt;
}

Opt sum_stat(const bj::object& metrics, const Names& names, const Keys& keys = kCounterKeys,
             const Filter& filter = {}) {
  double total = 0.0;
  bool found = false;
  for (const bj::object* series : metric_series(metrics, names)) {
    if (filter && !filter(*series)) continue;
    auto value = series_stat(*series, keys);
    if (!value) continue;
    total += *value;
    found = true;
  }
  return found ? Opt(total) : std::nullopt;
}

enum class Combine { kMax, kAverage };

Opt gauge_stat(const bj::object& metrics, const Names& names, const Keys& keys = kGaugeKeys,
               Combine combine = Combine::kMax, const Filter& filter = {}) {
  std::vector<double> values;
  for (const bj::object* series : metric_series(metrics, names)) {
    if (filter && !filter(*series)) continue;
    if (auto value = series_stat(*series, keys)) values.push_back(*value);
  }
  if (values.empty()) return std::nullopt;
  if (combine == Combine::kAverage) return python_mean(values);
  double best = values.front();  // Python's max(): the first of equals, NaN never replaces
  for (double v : values)
    if (v > best) best = v;
  return best;
}

std::optional<std::string> label_value(const bj::object& series, std::string_view key) {
  const bj::value* labels = series.if_contains("labels");
  if (labels == nullptr || !labels->is_object()) return std::nullopt;
  const bj::value* v = labels->get_object().if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  return py_str(*v);
}

Filter label_equals(std::string key, std::string value) {
  return [key = std::move(key), value = std::move(value)](const bj::object& s) { return label_value(s, key) == value; };
}

// sum_by_label() with one label key: {label: sum} in first-seen order.
std::vector<std::pair<std::string, double>> sum_by_label(const bj::object& metrics, const std::string& name,
                                                         std::string_view label_key) {
  std::vector<std::pair<std::string, double>> out;
  for (const bj::object* series : metric_series(metrics, {name})) {
    const bj::value* labels = series->if_contains("labels");
    if (labels == nullptr || !labels->is_object()) continue;
    const bj::value* raw = labels->get_object().if_contains(label_key);
    if (raw == nullptr || raw->is_null()) continue;
    auto value = series_stat(*series, kCounterKeys);
    if (!value) continue;
    const std::string label = py_str(*raw);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == label; });
    if (it == out.end()) {
      out.emplace_back(label, 0.0 + *value);
    } else {
      it->second += *value;
    }
  }
  return out;
}

Opt find_label(const std::vector<std::pair<std::string, double>>& sums, std::string_view label) {
  for (const auto& [key, value] : sums)
    if (key == label) return value;
  return std::nullopt;
}

// sum(values), as Python adds them (from 0, left to right).
double plain_sum(const std::vector<std::pair<std::string, double>>& sums) {
  double total = 0.0;
  for (const auto& [key, value] : sums) total += value;
  return total;
}

bj::object sums_object(const std::vector<std::pair<std::string, double>>& sums) {
  bj::object out;
  for (const auto& [key, value] : sums) out[key] = value;
  return out;
}

Opt rate(Opt numerator, Opt denominator) {
  if (!numerator || !denominator || *denominator <= 0) return std::nullopt;
  return *numerator / *denominator;
}

Opt normalize_fraction(Opt value) {
  if (!value) return std::nullopt;
  return *value > 1.5 ? *value / 100.0 : *value;
}

// int(round(value)): ties to even; Python raises for a non-finite value.
Result<std::optional<int64_t>> counter_int(Opt value, std::string_view what) {
  if (!value) return std::optional<int64_t>{};
  if (!std::isfinite(*value) || std::fabs(*value) >= 9.2e18)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("server metric {} is {}, which int(round()) cannot take", what, *value));
  return std::optional<int64_t>(static_cast<int64_t>(std::nearbyint(*value)));
}

// SERVER_CACHE_FLAT_FIELDS: what the adapters compute before the nested object takes it.
struct Flat {
  Opt gpu_hit, cpu_hit, external_hit, overall_hit, gpu_usage, cpu_usage;
  Opt bytes_g2c, bytes_c2g, time_g2c, time_c2g, bandwidth_g2c, bandwidth_c2g;
  std::optional<int64_t> prompt_total, generation_total;
};

bj::object empty_server_metrics(bool present, int64_t metric_count) {
  bj::object cache{{"gpu_cache_hit_rate", nullptr},
                   {"cpu_cache_hit_rate", nullptr},
                   {"external_cache_hit_rate", nullptr},
                   {"overall_cache_hit_rate", nullptr},
                   {"prefix_cache_hits", nullptr},
                   {"prefix_cache_queries", nullptr},
                   {"external_prefix_cache_hits", nullptr},
                   {"external_prefix_cache_queries", nullptr},
                   {"cached_tokens_by_source", bj::object{}},
                   {"frontend_cache_hit_rate", nullptr},
                   {"router_kv_hit_rate", nullptr},
                   {"router_shared_cache_hit_rate", nullptr},
                   {"frontend_cached_tokens", nullptr},
                   {"frontend_input_tokens", nullptr}};
  bj::object kv_cache{{"gpu_usage_pct", nullptr},
                      {"gpu_total_tokens", nullptr},
                      {"cpu_usage_pct", nullptr},
                      {"cpu_used_tokens", nullptr},
                      {"cpu_total_tokens", nullptr}};
  bj::object kv_offload{{"bytes_gpu_to_cpu", nullptr},
                        {"bytes_cpu_to_gpu", nullptr},
                        {"time_gpu_to_cpu", nullptr},
                        {"time_cpu_to_gpu", nullptr},
                        {"bandwidth_gpu_to_cpu_bytes_per_second", nullptr},
                        {"bandwidth_cpu_to_gpu_bytes_per_second", nullptr}};
  bj::object prompt_by_source{
      {"gpu_cache_hit", nullptr}, {"cpu_or_external_cache_hit", nullptr}, {"computed", nullptr}, {"raw", bj::object{}}};
  bj::object tokens{{"prompt_total", nullptr},
                    {"generation_total", nullptr},
                    {"requests_completed", nullptr},
                    {"prompt_by_source", std::move(prompt_by_source)}};
  return {{"present", present},
          {"adapter", "none"},
          {"metric_count", metric_count},
          {"cache", std::move(cache)},
          {"kv_cache", std::move(kv_cache)},
          {"kv_offload", std::move(kv_offload)},
          {"tokens", std::move(tokens)},
          {"sources", bj::array{}}};
}

bj::object& sub(bj::object& nested, std::string_view key) {
  return nested[key].as_object();
}

std::optional<Backend> detect_backend(const bj::object& metrics, const std::string& framework) {
  const std::string lower = ascii_lower(framework);
  auto any_prefix = [&](std::initializer_list<std::string_view> prefixes) {
    for (const auto& member : metrics)
      for (std::string_view prefix : prefixes)
        if (std::string_view(member.key()).starts_with(prefix)) return true;
    return false;
  };
  if (lower.starts_with("dynamo") || any_prefix({"dynamo_"})) return Backend::kDynamoVllm;
  if (any_prefix({"atom:", "atom_"}) || (metrics.empty() && lower == "atom")) return Backend::kAtom;
  if (any_prefix({"sglang:"}) || (metrics.empty() && lower == "sglang")) return Backend::kSglang;
  if (any_prefix({"vllm:"}) || (metrics.empty() && lower == "vllm")) return Backend::kVllm;
  return std::nullopt;
}

// _source_id(): role|endpoint|worker_id=..|dp_rank=..|engine=..
std::string source_id(const bj::object& series) {
  static const bj::object kNoLabels;
  const bj::value* labels_value = series.if_contains("labels");
  const bj::object& labels = labels_value && labels_value->is_object() ? labels_value->get_object() : kNoLabels;
  const bj::value* component_value = nullptr;
  for (const char* key : {"dynamo_component", "component"}) {
    const bj::value* v = labels.if_contains(key);
    if (v && truthy(*v)) {
      component_value = v;
      break;
    }
  }
  const std::string component = component_value ? py_str(*component_value) : "";
  std::string id = component == "prefill"                               ? "prefill"
                   : (component == "backend" || component == "decode")  ? "decode"
                   : (component == "frontend" || component == "router") ? "router"
                                                                        : "combined";
  const bj::value* endpoint = series.if_contains("endpoint_url");
  if (endpoint && truthy(*endpoint)) id += "|" + py_str(*endpoint);
  for (const char* key : {"worker_id", "dp_rank", "engine"})
    if (auto value = label_value(series, key)) id += fmt::format("|{}={}", key, *value);
  return id;
}

bj::array vllm_sources(const bj::object& metrics) {
  std::set<std::string> ids;
  for (const char* name : {"vllm:prompt_tokens", "vllm:generation_tokens", "vllm:prefix_cache_hits",
                           "vllm:prefix_cache_queries", "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_by_source"})
    for (const bj::object* series : metric_series(metrics, {name})) ids.insert(source_id(*series));
  bj::array out;
  for (const std::string& id : ids) {
    if (id.empty()) continue;
    const Filter same = [&id](const bj::object& s) { return source_id(s) == id; };
    const Opt hits = sum_stat(metrics, {"vllm:prefix_cache_hits"}, kCounterKeys, same);
    const Opt queries = sum_stat(metrics, {"vllm:prefix_cache_queries"}, kCounterKeys, same);
    const Opt usage = normalize_fraction(gauge_stat(metrics, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
                                                    kGaugeKeys, Combine::kMax, same));
    out.push_back(bj::object{
        {"id", id},
        {"role", id.substr(0, id.find('|'))},
        {"prompt_tokens", or_null(sum_stat(metrics, {"vllm:prompt_tokens"}, kCounterKeys, same))},
        {"generation_tokens", or_null(sum_stat(metrics, {"vllm:generation_tokens"}, kCounterKeys, same))},
        {"prefix_cache_hit_rate", or_null(rate(hits, queries))},
        {"gpu_kv_cache_usage_pct", or_null(usage)},
    });
  }
  return out;
}

Opt first_counter_total(const bj::object& metrics, const Names& names) {
  for (const std::string& name : names)
    if (auto value = sum_stat(metrics, {name})) return value;
  return std::nullopt;
}

Result<void> set_totals(Flat& flat, Opt prompt, Opt generation) {
  auto p = counter_int(prompt, "prompt tokens");
  if (!p) return std::unexpected(p.error());
  auto g = counter_int(generation, "generation tokens");
  if (!g) return std::unexpected(g.error());
  flat.prompt_total = *p;
  flat.generation_total = *g;
  return {};
}

void vllm_prompt_by_source(const bj::object& metrics, Flat& flat, bj::object& nested, Opt gpu_rate) {
  const auto by_source = sum_by_label(metrics, "vllm:prompt_tokens_by_source", "source");
  if (by_source.empty()) {
    if (gpu_rate) flat.overall_hit = gpu_rate;
    return;
  }
  const Opt local = find_label(by_source, "local_cache_hit");
  const Opt external = find_label(by_source, "external_kv_transfer");
  const Opt compute = find_label(by_source, "local_compute");
  const double total = plain_sum(by_source);
  if (total > 0) {
    if (local) flat.gpu_hit = *local / total;
    if (external) flat.cpu_hit = flat.external_hit = *external / total;
    flat.overall_hit = (local.value_or(0.0) + external.value_or(0.0)) / total;
  }
  sub(nested, "tokens")["prompt_by_source"] = bj::object{{"gpu_cache_hit", or_null(local)},
                                                         {"cpu_or_external_cache_hit", or_null(external)},
                                                         {"computed", or_null(compute)},
                                                         {"raw", sums_object(by_source)}};
}

void vllm_offload(const bj::object& metrics, Flat& flat, bj::object& nested) {
  flat.bytes_g2c = sum_stat(metrics, {"vllm:kv_offload_bytes_gpu_to_cpu"});
  flat.bytes_c2g = sum_stat(metrics, {"vllm:kv_offload_bytes_cpu_to_gpu"});
  flat.time_g2c = sum_stat(metrics, {"vllm:kv_offload_time_gpu_to_cpu"});
  flat.time_c2g = sum_stat(metrics, {"vllm:kv_offload_time_cpu_to_gpu"});
  flat.bandwidth_g2c = rate(flat.bytes_g2c, flat.time_g2c);
  flat.bandwidth_c2g = rate(flat.bytes_c2g, flat.time_c2g);
  bj::object& offload = sub(nested, "kv_offload");
  offload["bytes_gpu_to_cpu"] = or_null(flat.bytes_g2c);
  offload["bytes_cpu_to_gpu"] = or_null(flat.bytes_c2g);
  offload["time_gpu_to_cpu"] = or_null(flat.time_g2c);
  offload["time_cpu_to_gpu"] = or_null(flat.time_c2g);
  offload["bandwidth_gpu_to_cpu_bytes_per_second"] = or_null(flat.bandwidth_g2c);
  offload["bandwidth_cpu_to_gpu_bytes_per_second"] = or_null(flat.bandwidth_c2g);
}

void set_cache(bj::object& nested, const Flat& flat, std::initializer_list<std::pair<std::string_view, Opt>> extra) {
  bj::object& cache = sub(nested, "cache");
  cache["gpu_cache_hit_rate"] = or_null(flat.gpu_hit);
  cache["cpu_cache_hit_rate"] = or_null(flat.cpu_hit);
  cache["external_cache_hit_rate"] = or_null(flat.external_hit);
  cache["overall_cache_hit_rate"] = or_null(flat.overall_hit);
  for (const auto& [key, value] : extra) cache[key] = or_null(value);
}

void set_token_totals(bj::object& nested, const Flat& flat) {
  bj::object& tokens = sub(nested, "tokens");
  tokens["prompt_total"] = or_null(flat.prompt_total);
  tokens["generation_total"] = or_null(flat.generation_total);
}

// VllmBackend.populate(); `dynamo` picks DynamoVllmBackend's prompt/generation totals.
Result<void> populate_vllm(const bj::object& metrics, Flat& flat, bj::object& nested, bool dynamo) {
  const Opt prompt = dynamo
                         ? first_counter_total(metrics, {"dynamo_frontend_input_sequence_tokens", "vllm:prompt_tokens"})
                         : sum_stat(metrics, {"vllm:prompt_tokens"});
  const Opt generation = dynamo
                             ? first_counter_total(metrics, {"dynamo_frontend_output_tokens", "vllm:generation_tokens"})
                             : sum_stat(metrics, {"vllm:generation_tokens"});
  if (auto ok = set_totals(flat, prompt, generation); !ok) return ok;
  const Opt hits = sum_stat(metrics, {"vllm:prefix_cache_hits"});
  const Opt queries = sum_stat(metrics, {"vllm:prefix_cache_queries"});
  const Opt gpu_rate = rate(hits, queries);
  flat.gpu_hit = gpu_rate;
  const Opt external_hits = sum_stat(metrics, {"vllm:external_prefix_cache_hits"});
  const Opt external_queries = sum_stat(metrics, {"vllm:external_prefix_cache_queries"});
  flat.external_hit = flat.cpu_hit = rate(external_hits, external_queries);
  vllm_prompt_by_source(metrics, flat, nested, gpu_rate);
  flat.gpu_usage = normalize_fraction(gauge_stat(metrics, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}));
  flat.cpu_usage = normalize_fraction(gauge_stat(metrics, {"vllm:cpu_kv_cache_usage_perc"}));
  vllm_offload(metrics, flat, nested);
  set_cache(nested, flat,
            {{"prefix_cache_hits", hits},
             {"prefix_cache_queries", queries},
             {"external_prefix_cache_hits", external_hits},
             {"external_prefix_cache_queries", external_queries}});
  bj::object& kv = sub(nested, "kv_cache");
  kv["gpu_usage_pct"] = or_null(flat.gpu_usage);
  kv["cpu_usage_pct"] = or_null(flat.cpu_usage);
  set_token_totals(nested, flat);
  nested["sources"] = vllm_sources(metrics);
  return {};
}

// DynamoVllmBackend._populate_dynamo() (its overall hit rate lands only in the flat fields,
// which the record does not keep).
void populate_dynamo(const bj::object& metrics, Flat& flat, bj::object& nested) {
  const Opt usage = normalize_fraction(gauge_stat(metrics, {"dynamo_component_gpu_cache_usage_percent"}));
  if (!flat.gpu_usage) {
    flat.gpu_usage = usage;
    sub(nested, "kv_cache")["gpu_usage_pct"] = or_null(usage);
  }
  const Opt cached = sum_stat(metrics, {"dynamo_frontend_cached_tokens"});
  const Opt input = sum_stat(metrics, {"dynamo_frontend_input_sequence_tokens"});
  const Opt router_kv =
      normalize_fraction(gauge_stat(metrics, {"dynamo_component_router_kv_hit_rate"}, kAverageKeys, Combine::kAverage));
  const Opt router_shared = normalize_fraction(
      gauge_stat(metrics, {"dynamo_component_router_shared_cache_hit_rate"}, kAverageKeys, Combine::kAverage));
  bj::object& cache = sub(nested, "cache");
  cache["frontend_cache_hit_rate"] = or_null(rate(cached, input));
  cache["router_kv_hit_rate"] = or_null(router_kv);
  cache["router_shared_cache_hit_rate"] = or_null(router_shared);
  cache["frontend_cached_tokens"] = or_null(cached);
  cache["frontend_input_tokens"] = or_null(input);
}

Result<void> populate_sglang(const bj::object& metrics, Flat& flat, bj::object& nested) {
  const Opt prompt = sum_stat(metrics, {"sglang:prompt_tokens"});
  if (auto ok = set_totals(flat, prompt, sum_stat(metrics, {"sglang:generation_tokens"})); !ok) return ok;
  const auto cached = sum_by_label(metrics, "sglang:cached_tokens", "cache_source");
  const Opt device = find_label(cached, "device");
  const Opt host = find_label(cached, "host");
  const Opt total_cached = cached.empty() ? std::nullopt : Opt(plain_sum(cached));
  flat.gpu_hit = rate(device, prompt);
  flat.cpu_hit = flat.external_hit = rate(host, prompt);
  flat.overall_hit = rate(total_cached, prompt);
  if (!flat.overall_hit)
    flat.overall_hit =
        normalize_fraction(gauge_stat(metrics, {"sglang:cache_hit_rate"}, kAverageKeys, Combine::kAverage));
  flat.gpu_usage = normalize_fraction(gauge_stat(metrics, {"sglang:token_usage"}));
  auto pool = counter_int(sum_stat(metrics, {"sglang:max_total_num_tokens"}, {"max", "avg", "total", "sum"}),
                          "sglang:max_total_num_tokens");
  if (!pool) return std::unexpected(pool.error());
  const Opt host_used = gauge_stat(metrics, {"sglang:hicache_host_used_tokens"});
  const Opt host_total = gauge_stat(metrics, {"sglang:hicache_host_total_tokens"});
  flat.cpu_usage = rate(host_used, host_total);
  const Opt prefill_compute =
      sum_stat(metrics, {"sglang:realtime_tokens"}, kCounterKeys, label_equals("mode", "prefill_compute"));
  set_cache(nested, flat, {});
  sub(nested, "cache")["cached_tokens_by_source"] = sums_object(cached);
  bj::object& kv = sub(nested, "kv_cache");
  kv["gpu_usage_pct"] = or_null(flat.gpu_usage);
  kv["gpu_total_tokens"] = or_null(*pool);
  kv["cpu_usage_pct"] = or_null(flat.cpu_usage);
  kv["cpu_used_tokens"] = or_null(host_used);
  kv["cpu_total_tokens"] = or_null(host_total);
  set_token_totals(nested, flat);
  sub(nested, "tokens")["prompt_by_source"] = bj::object{{"gpu_cache_hit", or_null(device)},
                                                         {"cpu_or_external_cache_hit", or_null(host)},
                                                         {"computed", or_null(prefill_compute)},
                                                         {"raw", sums_object(cached)}};
  return {};
}

Names atom_names(const std::string& suffix) {
  return {"atom:" + suffix, "atom_" + suffix};
}

Names atom_counter_names(const std::string& stem) {
  Names names = atom_names(stem);
  for (std::string& name : atom_names(stem + "_total")) names.push_back(std::move(name));
  return names;
}

Result<void> populate_atom(const bj::object& metrics, Flat& flat, bj::object& nested) {
  if (auto ok = set_totals(flat, sum_stat(metrics, atom_counter_names("prompt_tokens")),
                           sum_stat(metrics, atom_counter_names("generation_tokens")));
      !ok)
    return ok;
  const Opt cached = sum_stat(metrics, atom_counter_names("prefix_cache_cached_tokens"));
  const Opt full = sum_stat(metrics, atom_counter_names("prefix_cache_full_tokens"));
  const Opt external = sum_stat(metrics, atom_counter_names("lmcache_loaded_tokens"));
  flat.gpu_hit = rate(cached, full);
  flat.cpu_hit = flat.external_hit = rate(external, full);
  flat.overall_hit = flat.gpu_hit;
  flat.gpu_usage = normalize_fraction(gauge_stat(metrics, atom_names("kv_cache_usage_ratio")));
  set_cache(nested, flat,
            {{"prefix_cache_hits", cached},
             {"prefix_cache_queries", full},
             {"external_prefix_cache_hits", external},
             {"external_prefix_cache_queries", full}});
  sub(nested, "kv_cache")["gpu_usage_pct"] = or_null(flat.gpu_usage);
  set_token_totals(nested, flat);
  return {};
}

Result<void> populate(Backend backend, const bj::object& metrics, Flat& flat, bj::object& nested) {
  switch (backend) {
    case Backend::kDynamoVllm:
      if (auto ok = populate_vllm(metrics, flat, nested, true); !ok) return ok;
      populate_dynamo(metrics, flat, nested);
      return {};
    case Backend::kAtom: return populate_atom(metrics, flat, nested);
    case Backend::kSglang: return populate_sglang(metrics, flat, nested);
    case Backend::kVllm: return populate_vllm(metrics, flat, nested, false);
  }
  return {};
}

// gpu_kv_capacity_tokens(): the sum over the logs that state one (ATOM reads none).
std::optional<int64_t> log_capacity(Backend backend, const std::vector<ServerLog>& logs) {
  if (backend == Backend::kAtom) return std::nullopt;
  int64_t total = 0;
  bool found = false;
  for (const ServerLog& log : logs) {
    const auto& tokens = backend == Backend::kSglang ? log.sglang_tokens : log.vllm_tokens;
    if (!tokens) continue;
    total += *tokens;
    found = true;
  }
  return found ? std::optional<int64_t>(total) : std::nullopt;
}

// _record_token_sum() of the kept rows.
std::optional<int64_t> token_sum(const std::vector<Record>& records, bool input) {
  int64_t total = 0;
  bool found = false;
  for (const Record& r : records) {
    const auto& v = input ? r.isl : r.osl;
    if (!v) continue;
    total += *v;
    found = true;
  }
  return found ? std::optional<int64_t>(total) : std::nullopt;
}

std::string metric_preview(const bj::object& metrics) {
  std::vector<std::string> names;
  for (const auto& member : metrics) names.emplace_back(member.key());
  std::sort(names.begin(), names.end());
  if (names.size() > 10) names.resize(10);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

Result<ServerResult> server_metrics(const Artifacts& artifacts, const std::string& framework) {
  static const bj::object kNone;
  const bj::object* top = artifacts.server_metrics ? artifacts.server_metrics->if_object() : nullptr;
  const bj::value* metrics_value = top ? top->if_contains("metrics") : nullptr;
  const bj::object& metrics = metrics_value && metrics_value->is_object() ? metrics_value->get_object() : kNone;
  ServerResult out{empty_server_metrics(!metrics.empty(), static_cast<int64_t>(metrics.size())), {}};
  Flat flat;
  const auto backend = detect_backend(metrics, framework);
  if (metrics.empty()) {
    out.warnings.emplace_back("server_metrics_export.json missing or empty");
  } else if (!backend) {
    return fail(ErrorCode::kUnsupported,
                fmt::format("Unsupported agentic server metrics backend; framework='{}', metric_names=[{}] (the "
                            "adapters know dynamo-vllm, atom, sglang and vllm metrics)",
                            ascii_lower(framework), metric_preview(metrics)));
  } else {
    out.nested["adapter"] = backend_name(*backend);
    if (auto ok = populate(*backend, metrics, flat, out.nested); !ok) return std::unexpected(ok.error());
  }
  if (backend)
    if (auto capacity = log_capacity(*backend, artifacts.server_logs))
      sub(out.nested, "kv_cache")["gpu_total_tokens"] = *capacity;
  if (!flat.prompt_total) flat.prompt_total = token_sum(artifacts.records, true);
  if (!flat.generation_total) flat.generation_total = token_sum(artifacts.records, false);
  bj::object& tokens = sub(out.nested, "tokens");
  if (metrics.empty() || tokens["prompt_total"].is_null()) tokens["prompt_total"] = or_null(flat.prompt_total);
  if (metrics.empty() || tokens["generation_total"].is_null())
    tokens["generation_total"] = or_null(flat.generation_total);
  tokens["requests_completed"] = static_cast<int64_t>(artifacts.records.size());
  return out;
}

}  // namespace ix::metrics::agentic::detail
