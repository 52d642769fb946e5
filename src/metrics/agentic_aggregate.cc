// build_agg() of process_agentic_result.py and compute_request_metrics() of request_metrics.py.
#include "metrics/agentic_aggregate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/json_io.h"
#include "common/strings.h"
#include "metrics/agentic_internal.h"
#include "metrics/statistics.h"

namespace ix::metrics::agentic {
namespace bj = boost::json;
using detail::float_stats;
using detail::int_stats;
using detail::or_null;

namespace {

// os.environ as the script reads it.
class Env {
 public:
  explicit Env(const EnvLookup& get) : get_(get) {}
  // os.environ.get(name, fallback)
  std::string text(const char* name, std::string fallback = {}) const {
    return get_(name).value_or(std::move(fallback));
  }
  // env_int(): unset or empty -> fallback, else int() of the text.
  Result<int64_t> integer(const char* name, int64_t fallback) const {
    const auto value = get_(name);
    if (!value || value->empty()) return fallback;
    return parse_int(name, *value);
  }
  // env_bool(): 1, true, yes, on (any case).
  bool flag(const char* name) const {
    const std::string value = ascii_lower(text(name));
    return value == "1" || value == "true" || value == "yes" || value == "on";
  }
  static Result<int64_t> parse_int(const char* name, const std::string& text) {
    if (auto v = detail::int_of_text(text)) return *v;
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}='{}' is not an integer (the script's int() refuses it)", name, text));
  }

 private:
  const EnvLookup& get_;
};

// optional_component_metadata() / optional_kv_offload_backend_metadata(): nullopt for unset,
// "" and "null".
Result<std::optional<bj::object>> metadata_env(const Env& env, const char* name, bool version_optional) {
  const std::string raw = env.text(name);
  if (raw.empty() || raw == "null") return std::optional<bj::object>{};
  auto parsed = json::parse(raw, name);
  if (!parsed) return fail(ErrorCode::kInvalidArgument, fmt::format("{} must contain valid JSON", name));
  const bj::object* o = parsed->if_object();
  bool only_known = o != nullptr;
  if (o)
    for (const auto& member : *o) only_known = only_known && (member.key() == "name" || member.key() == "version");
  if (!version_optional) {
    if (!only_known || o->size() != 2 || !o->contains("name") || !o->contains("version"))
      return fail(ErrorCode::kInvalidArgument, fmt::format("{} must contain exactly 'name' and 'version'", name));
  } else {
    if (!only_known)
      return fail(ErrorCode::kInvalidArgument, fmt::format("{} may contain only 'name' and 'version'", name));
    if (!o->contains("name"))
      return fail(ErrorCode::kInvalidArgument, fmt::format("{} must contain 'name' and optional 'version'", name));
  }
  for (const auto& member : *o)
    if (!member.value().is_string() || member.value().get_string().empty())
      return fail(ErrorCode::kInvalidArgument, fmt::format("{} {} must be non-empty strings", name,
                                                           version_optional ? "values" : "name and version"));
  return std::optional<bj::object>(*o);
}

// _validate_kv_offload_env()
Result<void> kv_offload(const Env& env, Inputs& in) {
  const std::string offloading = env.text("KV_OFFLOADING");
  if (offloading.empty())
    return fail(ErrorCode::kInvalidArgument, "Missing required environment variable: KV_OFFLOADING");
  const std::string backend = env.text("KV_OFFLOAD_BACKEND");
  auto metadata = metadata_env(env, "KV_OFFLOAD_BACKEND_METADATA", true);
  if (!metadata) return std::unexpected(metadata.error());
  if (offloading == "none") {
    if (!backend.empty() || *metadata)
      return fail(ErrorCode::kInvalidArgument, "KV_OFFLOAD_BACKEND must be empty when KV_OFFLOADING=none");
  } else {
    if (backend.empty() || backend == "none" || !*metadata)
      return fail(ErrorCode::kInvalidArgument, "KV_OFFLOAD_BACKEND is required when KV_OFFLOADING is enabled");
    if ((*metadata)->at("name").get_string() != backend)
      return fail(ErrorCode::kInvalidArgument, "KV_OFFLOAD_BACKEND must match KV_OFFLOAD_BACKEND_METADATA.name");
  }
  in.kv_offloading = offloading;
  in.kv_offload_backend = std::move(*metadata);
  return {};
}

struct Worker {
  int64_t num_workers = 0, tp = 0, pp = 1, dcp = 1, pcp = 1, ep = 1;
  std::string dp_attention;
};

Result<Worker> worker_env(const Env& env, const std::string& side) {
  Worker w;
  for (auto [suffix, target, fallback] :
       {std::tuple{"NUM_WORKERS", &w.num_workers, 0}, std::tuple{"TP", &w.tp, 0}, std::tuple{"PP_SIZE", &w.pp, 1},
        std::tuple{"DCP_SIZE", &w.dcp, 1}, std::tuple{"PCP_SIZE", &w.pcp, 1}, std::tuple{"EP", &w.ep, 1}}) {
    const std::string name = side + "_" + suffix;
    auto value = env.integer(name.c_str(), fallback);
    if (!value) return std::unexpected(value.error());
    *target = *value;
  }
  w.dp_attention = env.text((side + "_DP_ATTN").c_str(), "false");
  return w;
}

void put_worker(bj::object& layout, const std::string& side, const Worker& w, int64_t gpus) {
  layout[side + "_num_workers"] = w.num_workers;
  layout[side + "_tp"] = w.tp;
  layout[side + "_pp"] = w.pp;
  layout[side + "_dcp_size"] = w.dcp;
  layout[side + "_pcp_size"] = w.pcp;
  layout[side + "_ep"] = w.ep;
  layout[side + "_dp_attention"] = w.dp_attention;
  layout["num_" + side + "_gpu"] = gpus;
}

// _gpu_shape() for IS_MULTINODE.
Result<void> multinode_shape(const Env& env, Inputs& in) {
  auto prefill = worker_env(env, "PREFILL");
  if (!prefill) return std::unexpected(prefill.error());
  auto decode = worker_env(env, "DECODE");
  if (!decode) return std::unexpected(decode.error());
  for (int64_t v : {prefill->pp, prefill->dcp, prefill->pcp, decode->pp, decode->dcp, decode->pcp})
    if (v <= 0) return fail(ErrorCode::kInvalidArgument, "Multinode PP, DCP, and PCP sizes must be positive integers.");
  const std::string prefill_hw = env.text("PREFILL_HARDWARE");
  const std::string decode_hw = env.text("DECODE_HARDWARE");
  if (prefill_hw.empty() != decode_hw.empty())
    return fail(ErrorCode::kInvalidArgument, "PREFILL_HARDWARE and DECODE_HARDWARE must be specified together.");
  const int64_t prefill_gpus = prefill->num_workers * prefill->tp * prefill->pp * prefill->pcp;
  const int64_t decode_gpus = decode->num_workers * decode->tp * decode->pp * decode->pcp;
  if (decode_gpus <= 0) {  // an aggregated worker: no separate decode GPUs
    decode->tp = 0;
    decode->ep = 0;
    decode->pp = decode->dcp = decode->pcp = 1;
  }
  in.num_gpus = prefill_gpus + decode_gpus;
  in.tp = prefill->tp + decode->tp;
  in.ep = std::max(prefill->ep, decode->ep);
  in.dp_attention = env.flag("PREFILL_DP_ATTN") || env.flag("DECODE_DP_ATTN") ? "true" : "false";
  put_worker(in.layout, "prefill", *prefill, prefill_gpus);
  put_worker(in.layout, "decode", *decode, decode_gpus);
  if (!prefill_hw.empty()) {
    in.layout["prefill_hw"] = prefill_hw;
    in.layout["decode_hw"] = decode_hw;
  }
  return {};
}

Result<void> gpu_shape(const Env& env, Inputs& in) {
  in.is_multinode = env.flag("IS_MULTINODE");
  auto tp = env.integer("TP", 1);
  if (!tp) return std::unexpected(tp.error());
  auto ep = env.integer("EP_SIZE", 1);
  if (!ep) return std::unexpected(ep.error());
  in.tp = *tp;
  in.ep = *ep;
  in.dp_attention = env.text("DP_ATTENTION", "false");
  if (in.is_multinode) return multinode_shape(env, in);
  int64_t sizes[3] = {1, 1, 1};
  const char* names[3] = {"PP_SIZE", "DCP_SIZE", "PCP_SIZE"};
  for (int i = 0; i < 3; ++i) {
    auto value = env.integer(names[i], 1);
    if (!value) return std::unexpected(value.error());
    sizes[i] = *value;
  }
  if (sizes[0] <= 0 || sizes[1] <= 0 || sizes[2] <= 0)
    return fail(ErrorCode::kInvalidArgument, "PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers.");
  in.layout = {{"pp", sizes[0]}, {"dcp_size", sizes[1]}, {"pcp_size", sizes[2]}};
  in.num_gpus = in.tp * sizes[0] * sizes[2];
  return {};
}

// --- request metrics ----------------------------------------------------------------------------

// compute_qps_stats(): completions per 1 s window from the first completion.
bj::object qps_stats(const std::vector<Record>& records) {
  std::vector<double> ends;
  for (const Record& r : records)
    if (r.end_ns) ends.push_back(static_cast<double>(*r.end_ns) / 1e9);
  if (ends.size() < 2) return {};
  std::sort(ends.begin(), ends.end());
  if (ends.back() - ends.front() <= 0) return {};
  constexpr double kWindow = 1.0;
  std::vector<double> values;
  for (double current = ends.front(); current + kWindow <= ends.back(); current += kWindow) {
    const auto first = std::lower_bound(ends.begin(), ends.end(), current);
    const auto last = std::lower_bound(first, ends.end(), current + kWindow);
    values.push_back(static_cast<double>(last - first) / kWindow);
  }
  bj::object out{{"window_seconds", kWindow}, {"samples", static_cast<int64_t>(values.size())}};
  if (values.empty()) {
    out["mean"] = static_cast<double>(ends.size()) / (ends.back() - ends.front());
    return out;
  }
  for (auto& member : float_stats(values)) out[member.key()] = member.value();
  return out;
}

// _ms_to_s(): finite values > 0, in seconds.
std::vector<double> seconds(const std::vector<Record>& records, std::optional<double> Record::*field) {
  std::vector<double> out;
  for (const Record& r : records) {
    const auto& v = r.*field;
    if (v && std::isfinite(*v) && *v > 0) out.push_back(*v / 1000.0);
  }
  return out;
}

// _interactivity_stats(): 1 / each statistic (the slow tail stays the slow tail), std of 1 / x.
bj::object interactivity(const bj::object& stats, const std::vector<double>& values) {
  bj::object out;
  for (const char* key : {"mean", "p50", "p75", "p90", "p95"}) {
    const bj::value* v = stats.if_contains(key);
    if (v && v->is_number() && v->to_number<double>() > 0) out[key] = 1.0 / v->to_number<double>();
  }
  std::vector<double> inverse;
  for (double v : values)
    if (v > 0) inverse.push_back(1.0 / v);
  if (!inverse.empty()) out["std"] = inverse.size() > 1 ? python_pstdev(inverse) : 0.0;
  return out;
}

bj::object latency_stats(const std::vector<Record>& records) {
  const auto ttfts = seconds(records, &Record::ttft_ms);
  const auto e2els = seconds(records, &Record::latency_ms);
  const auto itls = seconds(records, &Record::itl_ms);
  const auto full_itls = seconds(records, &Record::full_response_itl_ms);
  std::vector<double> per_osl;
  for (const Record& r : records) {
    if (!r.latency_ms || !r.osl_float) continue;
    const double e2el = *r.latency_ms, osl = *r.osl_float;
    if (!std::isfinite(e2el) || !std::isfinite(osl) || e2el <= 0 || osl <= 0) continue;
    per_osl.push_back(e2el / 1000.0 / osl);
  }
  const bj::object itl = float_stats(itls);
  const bj::object full_itl = float_stats(full_itls);
  return {{"ttft", float_stats(ttfts)},
          {"e2el", float_stats(e2els)},
          {"itl", itl},
          {"tpot", itl},
          {"intvty", interactivity(itl, itls)},
          {"e2e_norm_intvty", interactivity(float_stats(per_osl), per_osl)},
          {"full_response_itl", full_itl},
          {"full_response_intvty", interactivity(full_itl, full_itls)}};
}

// turns[int(turn_index)] as Python indexes it, for the turn indexes that pass `turn_index >= len`.
Result<std::optional<int64_t>> expected_turn(const Record& r, const std::vector<int64_t>& turns) {
  const bj::value& index = r.turn_index;
  if (!index.is_number() && !index.is_bool())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}: metadata.turn_index is {}, not a number (the script fails comparing it)", r.where,
                            json::to_string(index)));
  const double as_number = index.is_bool() ? (index.get_bool() ? 1.0 : 0.0) : index.to_number<double>();
  if (as_number >= static_cast<double>(turns.size())) return std::optional<int64_t>{};
  auto at = detail::to_int(index);
  if (!at) return fail(ErrorCode::kInvalidArgument, fmt::format("{}: metadata.turn_index is not finite", r.where));
  int64_t i = *at < 0 ? *at + static_cast<int64_t>(turns.size()) : *at;
  if (i < 0)
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("{}: metadata.turn_index {} is out of range for the trace's {} turns", r.where, *at, turns.size()));
  return std::optional<int64_t>(turns[static_cast<size_t>(i)]);
}

// expected_output_lengths()
Result<std::vector<int64_t>> expected_lengths(const std::vector<Record>& records, const TraceMetadata& traces) {
  std::vector<int64_t> out;
  if (traces.empty()) return out;
  for (const Record& r : records) {
    if (!detail::truthy(r.conversation_id) || r.turn_index.is_null()) continue;
    if (!r.conversation_id.is_string())
      return fail(ErrorCode::kInvalidArgument, fmt::format("{}: metadata.conversation_id is {}, not a string", r.where,
                                                           json::to_string(r.conversation_id)));
    const std::string_view id = r.conversation_id.get_string();
    const auto* turns = traces.find(id.substr(0, id.find("::")));
    if (turns == nullptr) continue;
    auto length = expected_turn(r, *turns);
    if (!length) return std::unexpected(length.error());
    if (*length) out.push_back(**length);
  }
  return out;
}

std::vector<int64_t> token_counts(const std::vector<Record>& records, bool input) {
  std::vector<int64_t> out;
  for (const Record& r : records)
    if (const auto& v = input ? r.isl : r.osl) out.push_back(*v);
  return out;
}

Result<bj::object> token_stats(const Artifacts& a) {
  auto expected = expected_lengths(a.records, a.traces);
  if (!expected) return std::unexpected(expected.error());
  return bj::object{{"input", int_stats(token_counts(a.records, true))},
                    {"output_actual", int_stats(token_counts(a.records, false))},
                    {"output_expected", int_stats(*expected)}};
}

int64_t sum(const std::vector<int64_t>& values) {
  int64_t total = 0;
  for (int64_t v : values) total += v;
  return total;
}

// compute_throughput_stats(): over max(end) - min(start) of the kept rows.
bj::object throughput_stats(const std::vector<Record>& records) {
  std::optional<int64_t> first_start, last_end;
  for (const Record& r : records) {
    if (r.start_ns) first_start = std::min(first_start.value_or(*r.start_ns), *r.start_ns);
    if (r.end_ns) last_end = std::max(last_end.value_or(*r.end_ns), *r.end_ns);
  }
  if (!first_start || !last_end) return {};
  const double duration = static_cast<double>(*last_end - *first_start) / 1e9;
  if (duration <= 0) return {};
  const int64_t input = sum(token_counts(records, true));
  const int64_t output = sum(token_counts(records, false));
  return {{"input", bj::object{{"tokens_per_second", static_cast<double>(input) / duration}}},
          {"output", bj::object{{"tokens_per_second", static_cast<double>(output) / duration}}},
          {"total", bj::object{{"tokens_per_second", static_cast<double>(input + output) / duration}}},
          {"duration_seconds", duration},
          {"per_gpu", bj::object{}}};
}

// _aiperf_percent_metric_as_rate(aggregate, "theoretical_prefix_cache_hit")
std::optional<double> theoretical_hit_rate(const bj::object& aggregate) {
  const bj::value* metric_value = aggregate.if_contains("theoretical_prefix_cache_hit");
  const bj::object* metric = metric_value ? metric_value->if_object() : nullptr;
  if (metric == nullptr) return std::nullopt;
  auto number = [&](const char* key) -> std::optional<double> {
    const bj::value* v = metric->if_contains(key);
    return v ? detail::to_float(*v) : std::nullopt;
  };
  const auto hit = number("sum"), total = number("count");
  if (hit && total && *total > 0) return *hit / *total;
  const auto avg = number("avg");
  if (!avg) return std::nullopt;
  const bj::value* unit = metric->if_contains("unit");
  const std::string text = unit ? detail::py_str(*unit) : "";
  return detail::py_strip(text) == "%" ? *avg / 100.0 : *avg;
}

Result<bj::object> request_metrics(const Artifacts& a, const bj::object& aggregate, int64_t num_gpus) {
  auto tokens = token_stats(a);
  if (!tokens) return std::unexpected(tokens.error());
  bj::object throughput = throughput_stats(a.records);
  if (!throughput.empty() && num_gpus > 0) {
    const auto gpus = static_cast<double>(num_gpus);
    auto rate = [&](const char* key) { return throughput.at(key).at("tokens_per_second").as_double() / gpus; };
    throughput["per_gpu"] = bj::object{
        {"total_tput_tps", rate("total")}, {"output_tput_tps", rate("output")}, {"input_tput_tps", rate("input")}};
  }
  return bj::object{{"qps", qps_stats(a.records)},
                    {"latency", latency_stats(a.records)},
                    {"tokens", std::move(*tokens)},
                    {"throughput", std::move(throughput)},
                    {"cache", bj::object{{"theoretical_cache_hit_rate", or_null(theoretical_hit_rate(aggregate))}}}};
}

bj::object accounting_object(const Artifacts& a) {
  const auto kept = static_cast<int64_t>(a.records.size());
  bj::object categories;
  for (const auto& [name, count] : a.accounting.error_categories) categories[name] = count;
  return {{"records_total", a.accounting.records_total},
          {"records_profiled", kept},
          {"records_dropped_total", a.accounting.records_total - kept},
          {"records_warmup_dropped", a.accounting.records_warmup_dropped},
          {"records_error_dropped", a.accounting.records_error_dropped},
          {"error_categories", std::move(categories)}};
}

// The environment's part of the record, in build_agg()'s key order.
bj::object identity(const Inputs& in) {
  return {{"hw", in.hw},
          {"conc", in.conc},
          {"image", in.image},
          {"recipe_fingerprint", in.recipe_fingerprint},
          {"model", in.model},
          {"infmax_model_prefix", in.model_prefix},
          {"framework", in.framework},
          {"precision", in.precision},
          {"spec_decoding", in.spec_decoding},
          {"disagg", in.disagg},
          {"scenario_type", "agentic-coding"},
          {"is_multinode", in.is_multinode},
          {"tp", in.tp},
          {"ep", in.ep},
          {"dp_attention", in.dp_attention},
          {"kv_offloading", in.kv_offloading},
          {"kv_offload_backend", in.kv_offload_backend ? bj::value(*in.kv_offload_backend) : bj::value(nullptr)},
          {"allocated_cpu_dram_gb", in.allocated_cpu_dram_gb}};
}

}  // namespace

Result<Inputs> inputs_from_env(const EnvLookup& get) {
  const Env env(get);
  Inputs in;
  if (auto ok = kv_offload(env, in); !ok) return std::unexpected(ok.error());
  if (auto ok = gpu_shape(env, in); !ok) return std::unexpected(ok.error());
  in.framework = env.text("FRAMEWORK");
  in.hw = env.text("RUNNER_TYPE");
  auto conc = Env::parse_int("CONC", env.text("CONC", "0"));
  if (!conc) return std::unexpected(conc.error());
  in.conc = *conc;
  in.image = env.text("IMAGE");
  in.recipe_fingerprint = env.text("RECIPE_FINGERPRINT");
  in.model = env.text("MODEL");
  in.model_prefix = env.text("MODEL_PREFIX");
  in.precision = env.text("PRECISION");
  in.spec_decoding = env.text("SPEC_DECODING", "none");
  in.disagg = env.flag("DISAGG");
  auto dram = env.integer("TOTAL_CPU_DRAM_GB", 0);
  if (!dram) return std::unexpected(dram.error());
  in.allocated_cpu_dram_gb = *dram;
  auto router = metadata_env(env, "ROUTER_METADATA", false);
  if (!router) return std::unexpected(router.error());
  in.router = std::move(*router);
  in.kv_p2p_transfer = env.text("KV_P2P_TRANSFER");
  return in;
}

Result<bj::object> build_record(const Artifacts& a, const Inputs& in) {
  static const bj::object kEmpty;
  if (a.aggregate && !a.aggregate->is_object())
    return fail(ErrorCode::kInvalidArgument,
                "profile_export_aiperf.json is not a JSON object (the script fails on it)");
  const bj::object& aggregate = a.aggregate ? a.aggregate->get_object() : kEmpty;
  bj::object agg = identity(in);
  agg["num_requests_total"] = a.accounting.records_total;
  agg["num_requests_successful"] = static_cast<int64_t>(a.records.size());
  agg["request_accounting"] = accounting_object(a);
  for (const auto& member : in.layout) agg[member.key()] = member.value();
  if (in.router) agg["router"] = *in.router;
  if (!in.kv_p2p_transfer.empty()) agg["kv_p2p_transfer"] = in.kv_p2p_transfer;
  const bj::value* metadata = aggregate.if_contains("metadata");
  if (metadata && metadata->is_object())
    if (const bj::value* dataset = metadata->get_object().if_contains("dataset"); dataset && dataset->is_object())
      agg["dataset"] = *dataset;
  auto requests = request_metrics(a, aggregate, in.num_gpus);
  if (!requests) return std::unexpected(requests.error());
  auto server = detail::server_metrics(a, in.framework);
  if (!server) return std::unexpected(server.error());
  agg["request_metrics"] = std::move(*requests);
  const bj::value pool = server->nested.at("kv_cache").at("gpu_total_tokens");
  agg["server_metrics"] = std::move(server->nested);
  agg["kv_cache_pool_tokens"] = pool;
  if (!server->warnings.empty()) {
    bj::array warnings;
    for (const std::string& w : server->warnings) warnings.emplace_back(w);
    agg["warnings"] = std::move(warnings);
  }
  bj::value rounded = std::move(agg);
  round_floats(rounded);
  return std::move(rounded.as_object());
}

std::vector<std::string> summary_lines(const bj::object& record, const Accounting& accounting) {
  auto at = [](const bj::value* v, std::string_view key) -> const bj::value* {
    return v && v->is_object() ? v->get_object().if_contains(key) : nullptr;
  };
  auto number = [](const bj::value* v) -> std::optional<double> {
    if (v == nullptr || !v->is_number()) return std::nullopt;
    return v->to_number<double>();
  };
  const auto successful = number(record.if_contains("num_requests_successful")).value_or(0);
  std::vector<std::string> lines{fmt::format("Requests: {} successful / {} total ({} warmup, {} error dropped)",
                                             static_cast<int64_t>(successful), accounting.records_total,
                                             accounting.records_warmup_dropped, accounting.records_error_dropped)};
  const bj::value* requests = record.if_contains("request_metrics");
  const bj::value* qps = at(requests, "qps");
  if (auto mean = number(at(qps, "mean")))
    lines.push_back(fmt::format("QPS: mean={:.2f} p75={:.2f} p95={:.2f}", *mean, number(at(qps, "p75")).value_or(0),
                                number(at(qps, "p95")).value_or(0)));
  const bj::value* server = record.if_contains("server_metrics");
  const bj::value* cache = at(server, "cache");
  const bj::value* kv = at(server, "kv_cache");
  auto percent = [&](const char* label, const bj::value* v) {
    if (auto x = number(v)) lines.push_back(fmt::format("{}{:.1f}%", label, *x * 100));
  };
  percent("GPU cache hit rate: ", at(cache, "gpu_cache_hit_rate"));
  percent("CPU/offload cache hit rate: ", at(cache, "cpu_cache_hit_rate"));
  percent("External cache hit rate: ", at(cache, "external_cache_hit_rate"));
  percent("GPU KV cache usage:  ", at(kv, "gpu_usage_pct"));
  if (const bj::value* capacity = at(kv, "gpu_total_tokens"); capacity && !capacity->is_null())
    lines.push_back(fmt::format("GPU KV cache capacity: {} tokens", json::to_string(*capacity)));
  percent("Theoretical cache hit rate: ", at(at(requests, "cache"), "theoretical_cache_hit_rate"));
  if (auto tput = number(at(at(at(requests, "throughput"), "per_gpu"), "total_tput_tps")))
    lines.push_back(fmt::format("Throughput per GPU: {:.0f} tok/s", *tput));
  return lines;
}

}  // namespace ix::metrics::agentic
