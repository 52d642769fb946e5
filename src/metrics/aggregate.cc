#include "metrics/aggregate.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "common/strings.h"

namespace ix::metrics {

namespace bj = boost::json;

namespace {

// Python's int() of text: surrounding white space, a sign, digits with single underscores.
std::optional<int64_t> python_int(std::string_view text) {
  text = strip(text);
  std::string digits;
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  bool last_digit = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      digits += c;
      last_digit = true;
    } else if (c == '_' && last_digit) {
      last_digit = false;
    } else {
      return std::nullopt;
    }
  }
  if (digits.empty() || !last_digit) return std::nullopt;
  errno = 0;
  const long long value = std::strtoll(digits.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return negative ? -value : value;
}

// Python's float() of a JSON value: numbers, booleans, numeric text (inf, nan included).
std::optional<double> python_float(const bj::value& v) {
  if (v.is_double()) return v.as_double();
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
  if (!v.is_string()) return std::nullopt;
  const std::string text(strip(std::string_view(v.as_string())));
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

// Python's int() of a JSON value (max_concurrency): integers, floats truncated, booleans, text.
std::optional<int64_t> python_int_of(const bj::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64()) return static_cast<int64_t>(v.as_uint64());
  if (v.is_double() && std::isfinite(v.as_double())) return static_cast<int64_t>(std::trunc(v.as_double()));
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  if (v.is_string()) return python_int(v.as_string());
  return std::nullopt;
}

std::string describe(const bj::value& v) {
  const std::string text = bj::serialize(v);
  return text.size() > 60 ? text.substr(0, 60) + "..." : text;
}

Result<double> raw_float(const bj::object& raw, std::string_view key) {
  const bj::value* v = raw.if_contains(key);
  if (v == nullptr) return fail(ErrorCode::kInvalidArgument, fmt::format("the raw result has no '{}'", key));
  if (auto value = python_float(*v)) return *value;
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("the raw result's '{}' is {}, not a number (float() refuses it)", key, describe(*v)));
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

class EnvReader {
 public:
  explicit EnvReader(const std::function<std::optional<std::string>(const char*)>& get) : get_(get) {}

  // Required variables: an empty string when missing (the names are collected).
  std::string need(const char* name) {
    auto value = get_(name);
    if (!value) {
      missing_.emplace_back(name);
      return {};
    }
    return *value;
  }
  std::string optional(const char* name, std::string fallback = {}) { return get_(name).value_or(std::move(fallback)); }
  Result<void> missing() const {
    if (missing_.empty()) return {};
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("Missing required environment variables: {}", fmt::join(missing_, ", ")));
  }
  static Result<int64_t> to_int(const char* name, const std::string& text) {
    if (auto value = python_int(text)) return *value;
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}='{}' is not an integer", name, text));
  }

 private:
  const std::function<std::optional<std::string>(const char*)>& get_;
  std::vector<std::string> missing_;
};

Result<std::optional<ComponentMeta>> router_metadata(EnvReader& env) {
  const std::string raw = env.optional("ROUTER_METADATA");
  if (raw.empty() || raw == "null") return std::optional<ComponentMeta>{};
  boost::system::error_code ec;
  const bj::value v = bj::parse(raw, ec);
  if (ec) return fail(ErrorCode::kInvalidArgument, "ROUTER_METADATA must contain valid JSON");
  const bj::object* o = v.if_object();
  if (o == nullptr || o->size() != 2 || !o->contains("name") || !o->contains("version"))
    return fail(ErrorCode::kInvalidArgument, "ROUTER_METADATA must contain exactly 'name' and 'version'");
  const bj::value& name = o->at("name");
  const bj::value& version = o->at("version");
  if (!name.is_string() || !version.is_string() || name.as_string().empty() || version.as_string().empty())
    return fail(ErrorCode::kInvalidArgument, "ROUTER_METADATA name and version must be non-empty strings");
  return std::optional<ComponentMeta>(ComponentMeta{std::string(name.as_string()), std::string(version.as_string())});
}

Result<WorkerLayout> worker_from_env(EnvReader& env, bool prefill) {
  auto var = [prefill](const char* suffix) { return std::string(prefill ? "PREFILL_" : "DECODE_") + suffix; };
  WorkerLayout w;
  struct Field {
    std::string name;
    int64_t* target;
    std::optional<std::string> fallback;
  };
  const std::vector<Field> fields{{var("GPUS"), &w.gpus, {}},
                                  {var("NUM_WORKERS"), &w.num_workers, {}},
                                  {var("TP"), &w.tp, {}},
                                  {var("EP"), &w.ep, {}},
                                  {var("PP_SIZE"), &w.pp, "1"},
                                  {var("DCP_SIZE"), &w.dcp_size, "1"},
                                  {var("PCP_SIZE"), &w.pcp_size, "1"}};
  for (const auto& f : fields) {
    const std::string text = f.fallback ? env.optional(f.name.c_str(), *f.fallback) : env.need(f.name.c_str());
    if (text.empty() && !f.fallback) continue;  // reported as missing
    auto value = EnvReader::to_int(f.name.c_str(), text);
    if (!value) return std::unexpected(value.error());
    *f.target = *value;
  }
  w.dp_attention = env.need(var("DP_ATTN").c_str());
  return w;
}

Result<MultiNodeLayout> multinode_from_env(EnvReader& env) {
  MultiNodeLayout m;
  auto prefill = worker_from_env(env, true);
  if (!prefill) return std::unexpected(prefill.error());
  auto decode = worker_from_env(env, false);
  if (!decode) return std::unexpected(decode.error());
  if (auto ok = env.missing(); !ok) return std::unexpected(ok.error());
  m.prefill = *prefill;
  m.decode = *decode;
  m.prefill_hw = env.optional("PREFILL_HARDWARE");
  m.decode_hw = env.optional("DECODE_HARDWARE");
  if (m.prefill_hw.empty() != m.decode_hw.empty())
    return fail(ErrorCode::kInvalidArgument, "PREFILL_HARDWARE and DECODE_HARDWARE must be specified together.");
  for (int64_t v :
       {m.prefill.pp, m.prefill.dcp_size, m.prefill.pcp_size, m.decode.pp, m.decode.dcp_size, m.decode.pcp_size})
    if (v <= 0) return fail(ErrorCode::kInvalidArgument, "Multinode PP, DCP, and PCP sizes must be positive integers.");
  if (m.prefill.gpus + m.decode.gpus <= 0)
    return fail(ErrorCode::kInvalidArgument, "Multinode results require at least one GPU.");
  if (m.prefill.gpus <= 0)
    return fail(ErrorCode::kInvalidArgument, "Multinode results require at least one prefill GPU.");
  return m;
}

Result<SingleNodeLayout> single_from_env(EnvReader& env) {
  SingleNodeLayout s;
  const std::string tp = env.need("TP");
  const std::string ep = env.need("EP_SIZE");
  s.dp_attention = env.need("DP_ATTENTION");
  if (auto ok = env.missing(); !ok) return std::unexpected(ok.error());
  for (auto [name, text, target] : {std::tuple{"TP", tp, &s.tp}, std::tuple{"EP_SIZE", ep, &s.ep},
                                    std::tuple{"PP_SIZE", env.optional("PP_SIZE", "1"), &s.pp},
                                    std::tuple{"DCP_SIZE", env.optional("DCP_SIZE", "1"), &s.dcp_size},
                                    std::tuple{"PCP_SIZE", env.optional("PCP_SIZE", "1"), &s.pcp_size}}) {
    auto value = EnvReader::to_int(name, text);
    if (!value) return std::unexpected(value.error());
    *target = *value;
  }
  if (s.pp <= 0 || s.dcp_size <= 0 || s.pcp_size <= 0)
    return fail(ErrorCode::kInvalidArgument, "PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers.");
  return s;
}

void add_layout(bj::object& data, const AggregateInputs& in, double total, double output) {
  if (!in.multinode) {
    const SingleNodeLayout& s = in.single;
    const auto gpus = static_cast<double>(aggregate_num_gpus(in));
    data["is_multinode"] = false;
    data["tp"] = s.tp;
    data["pp"] = s.pp;
    data["dcp_size"] = s.dcp_size;
    data["pcp_size"] = s.pcp_size;
    data["ep"] = s.ep;
    data["dp_attention"] = s.dp_attention;
    data["tput_per_gpu"] = total / gpus;
    data["output_tput_per_gpu"] = output / gpus;
    data["input_tput_per_gpu"] = (total - output) / gpus;
    return;
  }
  const MultiNodeLayout& m = *in.multinode;
  const bool decode = m.decode.gpus > 0;
  const int64_t all = m.prefill.gpus + m.decode.gpus;
  data["is_multinode"] = true;
  data["prefill_tp"] = m.prefill.tp;
  data["prefill_pp"] = m.prefill.pp;
  data["prefill_dcp_size"] = m.prefill.dcp_size;
  data["prefill_pcp_size"] = m.prefill.pcp_size;
  data["prefill_ep"] = m.prefill.ep;
  data["prefill_dp_attention"] = m.prefill.dp_attention;
  data["prefill_num_workers"] = m.prefill.num_workers;
  data["decode_tp"] = decode ? m.decode.tp : 0;
  data["decode_pp"] = decode ? m.decode.pp : 1;
  data["decode_dcp_size"] = decode ? m.decode.dcp_size : 1;
  data["decode_pcp_size"] = decode ? m.decode.pcp_size : 1;
  data["decode_ep"] = decode ? m.decode.ep : 0;
  data["decode_dp_attention"] = m.decode.dp_attention;
  data["decode_num_workers"] = m.decode.num_workers;
  data["num_prefill_gpu"] = m.prefill.gpus;
  data["num_decode_gpu"] = m.decode.gpus;
  data["tput_per_gpu"] = total / static_cast<double>(all);
  data["output_tput_per_gpu"] = output / static_cast<double>(decode ? m.decode.gpus : all);
  data["input_tput_per_gpu"] = (total - output) / static_cast<double>(m.prefill.gpus);
  if (!m.prefill_hw.empty()) {
    data["prefill_hw"] = m.prefill_hw;
    data["decode_hw"] = m.decode_hw;
  }
}

// Every "*ms" key in seconds, every "tpot" key also as interactivity, in the raw key order.
Result<void> add_latencies(bj::object& data, const bj::object& raw) {
  for (const auto& [key, value] : raw) {
    const std::string name(key);
    const bool ms = name.ends_with("ms");
    const bool tpot = name.find("tpot") != std::string::npos;
    if (!ms && !tpot) continue;
    auto v = raw_float(raw, name);
    if (!v) return std::unexpected(v.error());
    if (ms) data[replace_all(name, "_ms", "")] = *v / 1000.0;
    if (tpot) {
      if (*v == 0.0)
        return fail(ErrorCode::kInvalidArgument,
                    fmt::format("the raw result's '{}' is 0: no interactivity (1000 / 0)", name));
      data[replace_all(replace_all(name, "_ms", ""), "tpot", "intvty")] = 1000.0 / *v;
    }
  }
  return {};
}

}  // namespace

Result<AggregateInputs> aggregate_inputs_from_env(const std::function<std::optional<std::string>(const char*)>& get) {
  EnvReader env(get);
  AggregateInputs in;
  in.hw = env.need("RUNNER_TYPE");
  in.framework = env.need("FRAMEWORK");
  in.precision = env.need("PRECISION");
  in.spec_decoding = env.need("SPEC_DECODING");
  in.result_filename = env.need("RESULT_FILENAME");
  const std::string isl = env.need("ISL");
  const std::string osl = env.need("OSL");
  in.disagg = ascii_lower(env.need("DISAGG")) == "true";
  in.model_prefix = env.need("MODEL_PREFIX");
  in.image = env.need("IMAGE");
  if (auto ok = env.missing(); !ok) return std::unexpected(ok.error());
  in.recipe_fingerprint = env.optional("RECIPE_FINGERPRINT");
  auto router = router_metadata(env);
  if (!router) return std::unexpected(router.error());
  in.router = *router;
  in.kv_p2p_transfer = env.optional("KV_P2P_TRANSFER");
  for (auto [name, text, target] : {std::tuple{"ISL", isl, &in.isl}, std::tuple{"OSL", osl, &in.osl}}) {
    auto value = EnvReader::to_int(name, text);
    if (!value) return std::unexpected(value.error());
    *target = *value;
  }
  if (ascii_lower(env.optional("IS_MULTINODE", "false")) == "true") {
    auto m = multinode_from_env(env);
    if (!m) return std::unexpected(m.error());
    in.multinode = std::move(*m);
    return in;
  }
  if (in.disagg) return fail(ErrorCode::kInvalidArgument, "Disaggregated mode requires multinode setup.");
  auto s = single_from_env(env);
  if (!s) return std::unexpected(s.error());
  in.single = *s;
  return in;
}

int64_t aggregate_num_gpus(const AggregateInputs& in) {
  if (in.multinode) return in.multinode->prefill.gpus + in.multinode->decode.gpus;
  return in.single.tp * in.single.pp * in.single.pcp_size;
}

Result<bj::object> aggregate_record(const bj::object& raw, const AggregateInputs& in) {
  const bj::value* conc = raw.if_contains("max_concurrency");
  const auto conc_value = conc ? python_int_of(*conc) : std::nullopt;
  if (!conc_value)
    return fail(ErrorCode::kInvalidArgument,
                conc
                    ? fmt::format("the raw result's 'max_concurrency' is {}, not an integer", describe(*conc))
                    : std::string("the raw result has no 'max_concurrency' (a rate run has no concurrency to record)"));
  const bj::value* model = raw.if_contains("model_id");
  if (model == nullptr) return fail(ErrorCode::kInvalidArgument, "the raw result has no 'model_id'");
  if (!in.multinode && aggregate_num_gpus(in) <= 0)
    return fail(ErrorCode::kInvalidArgument, "TP * PP_SIZE * PCP_SIZE must be at least 1 GPU");
  auto total = raw_float(raw, "total_token_throughput");
  if (!total) return std::unexpected(total.error());
  auto output = raw_float(raw, "output_throughput");
  if (!output) return std::unexpected(output.error());
  bj::object data;
  data["hw"] = in.hw;
  data["conc"] = *conc_value;
  data["image"] = in.image;
  data["model"] = *model;
  data["infmax_model_prefix"] = in.model_prefix;
  data["framework"] = in.framework;
  data["precision"] = in.precision;
  data["spec_decoding"] = in.spec_decoding;
  data["disagg"] = in.disagg;
  data["recipe_fingerprint"] = in.recipe_fingerprint;
  data["isl"] = in.isl;
  data["osl"] = in.osl;
  if (in.router) data["router"] = bj::object{{"name", in.router->name}, {"version", in.router->version}};
  if (!in.kv_p2p_transfer.empty()) data["kv_p2p_transfer"] = in.kv_p2p_transfer;
  add_layout(data, in, *total, *output);
  if (auto ok = add_latencies(data, raw); !ok) return std::unexpected(ok.error());
  return data;
}

void add_power_unavailable(bj::object& record) {
  record["power_metric_schema_version"] = 2;
  record["power_valid"] = 0;
}

}  // namespace ix::metrics
