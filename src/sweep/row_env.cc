#include "sweep/row_env.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <span>

namespace ix::sweep {
namespace {

namespace bj = boost::json;

// A row field the workflows map to a variable.
struct Field {
  const char* variable;
  const char* key;
  bool required;  // the aggregation (or the result file's name) needs it
};

constexpr Field kCommon[] = {
    {"RUNNER_TYPE", "runner", true},
    {"IMAGE", "image", true},
    {"MODEL", "model", true},
    {"MODEL_PREFIX", "model-prefix", true},
    {"FRAMEWORK", "framework", true},
    {"PRECISION", "precision", true},
    {"SPEC_DECODING", "spec-decoding", true},
    {"EXP_NAME", "exp-name", true},
    {"RECIPE_FINGERPRINT", "recipe-fingerprint", false},
    {"KV_P2P_TRANSFER", "kv-p2p-transfer", false},
};
constexpr Field kSingleNode[] = {
    {"TP", "tp", true},
    {"PP_SIZE", "pp", true},
    {"DCP_SIZE", "dcp-size", true},
    {"PCP_SIZE", "pcp-size", true},
    {"EP_SIZE", "ep", true},
    {"DP_ATTENTION", "dp-attn", true},
};
constexpr Field kWorker[] = {
    {"NUM_WORKERS", "num-worker", true},
    {"TP", "tp", true},
    {"PP_SIZE", "pp", true},
    {"DCP_SIZE", "dcp-size", true},
    {"PCP_SIZE", "pcp-size", true},
    {"EP", "ep", true},
    {"DP_ATTN", "dp-attn", true},
    {"HARDWARE", "hardware", false},
};

std::string missing(std::string_view key, std::string_view variable) {
  return fmt::format(
      "the row has no \"{}\" (the aggregation reads it as {}; a row as `ixbench sweep` prints it has it)", key,
      variable);
}

// ${{ value }} of a scalar.
Result<std::string> render(const bj::value& v, std::string_view key) {
  switch (v.kind()) {
    case bj::kind::null: return std::string();
    case bj::kind::bool_: return std::string(v.get_bool() ? "true" : "false");
    case bj::kind::int64: return std::to_string(v.get_int64());
    case bj::kind::uint64: return std::to_string(v.get_uint64());
    case bj::kind::double_: return fmt::format("{}", v.get_double());
    case bj::kind::string: return std::string(v.get_string());
    default:
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("the row's \"{}\" is {}, not a single value", key, bj::serialize(v)));
  }
}

class Builder {
 public:
  Result<void> fields(const bj::object& source, std::span<const Field> list, std::string_view prefix = {},
                      std::string_view key_prefix = {}) {
    for (const Field& f : list) {
      const std::string variable = std::string(prefix) + f.variable;
      const std::string key = std::string(key_prefix) + f.key;
      const bj::value* v = source.if_contains(f.key);
      if (v == nullptr && f.required) return fail(ErrorCode::kInvalidArgument, missing(key, variable));
      auto text = v ? render(*v, key) : Result<std::string>(std::string());
      if (!text) return std::unexpected(text.error());
      set(variable, *text);
    }
    return {};
  }
  // toJson(field) || ''
  void json(const bj::object& row, const char* variable, const char* key) {
    const bj::value* v = row.if_contains(key);
    set(variable, v && !v->is_null() ? bj::serialize(*v) : std::string());
  }
  void set(std::string variable, std::string value) {
    out.variables.emplace_back(std::move(variable), std::move(value));
  }
  RowEnvironment out;
};

Result<void> multinode(const bj::object& row, Builder& b, bool agentic) {
  for (const char* side : {"prefill", "decode"}) {
    const bj::value* worker = row.if_contains(side);
    if (worker == nullptr || !worker->is_object())
      return fail(ErrorCode::kInvalidArgument,
                  worker ? fmt::format("the row's \"{}\" is not an object of worker fields", side)
                         : missing(side, side == std::string_view("prefill") ? "PREFILL_*" : "DECODE_*"));
    const std::string upper = side == std::string_view("prefill") ? "PREFILL_" : "DECODE_";
    if (auto ok = b.fields(worker->get_object(), kWorker, upper, std::string(side) + "."); !ok) return ok;
  }
  const bj::value* conc = row.if_contains("conc");
  if (conc == nullptr) return fail(ErrorCode::kInvalidArgument, missing("conc", "CONC_LIST"));
  if (!conc->is_array() || conc->get_array().empty())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("the row's \"conc\" is {}, not the list of concurrencies of a multi-node row",
                            bj::serialize(*conc)));
  std::string list;
  for (const bj::value& c : conc->get_array()) {
    auto text = render(c, "conc");
    if (!text) return std::unexpected(text.error());
    list += (list.empty() ? "" : " ") + *text;
  }
  b.set("CONC_LIST", list);
  if (agentic) b.set("CONC", *render(conc->get_array().front(), "conc"));
  const bj::value* disagg = row.if_contains("disagg");
  if (disagg == nullptr) return fail(ErrorCode::kInvalidArgument, missing("disagg", "DISAGG"));
  auto text = render(*disagg, "disagg");
  if (!text) return std::unexpected(text.error());
  b.set("DISAGG", *text);
  b.set("IS_MULTINODE", "true");
  return {};
}

Result<void> single_node(const bj::object& row, Builder& b, bool agentic) {
  if (auto ok = b.fields(row, kSingleNode); !ok) return ok;
  const bj::value* conc = row.if_contains("conc");
  if (conc == nullptr) return fail(ErrorCode::kInvalidArgument, missing("conc", "CONC"));
  auto text = render(*conc, "conc");
  if (!text) return std::unexpected(text.error());
  b.set("CONC", *text);
  if (agentic) {
    b.set("DISAGG", "false");
    return {};
  }
  const Field disagg[] = {{"DISAGG", "disagg", true}};
  return b.fields(row, disagg);
}

Result<void> scenario_fields(const bj::object& row, Builder& b, bool agentic) {
  if (!agentic) {
    const Field fixed[] = {{"ISL", "isl", true}, {"OSL", "osl", true}, {"MAX_MODEL_LEN", "max-model-len", false}};
    if (auto ok = b.fields(row, fixed); !ok) return ok;
    b.set("SCENARIO_TYPE", "fixed-seq-len");
    b.set("IS_AGENTIC", "0");
    return {};
  }
  for (const char* zero : {"ISL", "OSL", "MAX_MODEL_LEN"}) b.set(zero, "0");
  const Field fields[] = {{"KV_OFFLOADING", "kv-offloading", true},
                          {"TOTAL_CPU_DRAM_GB", "total-cpu-dram-gb", true},
                          {"DURATION", "duration", false}};
  if (auto ok = b.fields(row, fields); !ok) return ok;
  const bj::value* backend = row.if_contains("kv-offload-backend");
  const bj::value* name = backend && backend->is_object() ? backend->get_object().if_contains("name") : nullptr;
  auto text = name ? render(*name, "kv-offload-backend.name") : Result<std::string>(std::string());
  if (!text) return std::unexpected(text.error());
  b.set("KV_OFFLOAD_BACKEND", *text);
  b.json(row, "KV_OFFLOAD_BACKEND_METADATA", "kv-offload-backend");
  b.set("SCENARIO_TYPE", "agentic-coding");
  b.set("IS_AGENTIC", "1");
  return {};
}

}  // namespace

Result<RowEnvironment> row_environment(const bj::object& row) {
  bool agentic = false;
  if (const bj::value* scenario = row.if_contains("scenario-type")) {
    const bool known = scenario->is_string() &&
                       (scenario->get_string() == "agentic-coding" || scenario->get_string() == "fixed-seq-len");
    if (!known)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("the row's \"scenario-type\" is {}, not \"fixed-seq-len\" or "
                              "\"agentic-coding\"",
                              bj::serialize(*scenario)));
    agentic = scenario->get_string() == "agentic-coding";
  }
  const bool multi = row.contains("prefill");
  Builder b;
  b.out.kind = multi ? (agentic ? RowJobKind::kMultiNodeAgentic : RowJobKind::kMultiNodeFixed)
                     : (agentic ? RowJobKind::kSingleNodeAgentic : RowJobKind::kSingleNodeFixed);
  if (auto ok = b.fields(row, kCommon); !ok) return std::unexpected(ok.error());
  b.json(row, "ROUTER_METADATA", "router");
  if (auto ok = multi ? multinode(row, b, agentic) : single_node(row, b, agentic); !ok)
    return std::unexpected(ok.error());
  if (auto ok = scenario_fields(row, b, agentic); !ok) return std::unexpected(ok.error());
  return std::move(b.out);
}

std::optional<std::string> row_result_filename(RowJobKind kind,
                                               const std::function<std::optional<std::string>(const char*)>& get) {
  if (kind == RowJobKind::kMultiNodeFixed) return std::nullopt;
  auto v = [&](const char* name) { return get(name).value_or(""); };
  const std::string runner = v("RUNNER_NAME").empty() ? v("RUNNER_TYPE") : v("RUNNER_NAME");
  std::string name;
  if (kind == RowJobKind::kMultiNodeAgentic) {
    std::string concs = v("CONC_LIST");
    for (char& c : concs)
      if (c == ' ') c = 'x';
    auto worker = [&](const std::string& side) {
      auto w = [&](const char* suffix) { return v((side + "_" + suffix).c_str()); };
      return fmt::format("tp{}-pp{}-dcp{}-pcp{}-ep{}-dp{}-nw{}", w("TP"), w("PP_SIZE"), w("DCP_SIZE"), w("PCP_SIZE"),
                         w("EP"), w("DP_ATTN"), w("NUM_WORKERS"));
    };
    name = fmt::format("{}_{}_{}_prefill-{}_decode-{}_disagg-{}_spec-{}_conc{}_{}", v("EXP_NAME"), v("PRECISION"),
                       v("FRAMEWORK"), worker("PREFILL"), worker("DECODE"), v("DISAGG"), v("SPEC_DECODING"), concs,
                       runner);
  } else {
    name = fmt::format("{}_{}_{}_tp{}-pp{}-dcp{}-pcp{}-ep{}-dpa{}_disagg-{}_spec-{}_conc{}_{}", v("EXP_NAME"),
                       v("PRECISION"), v("FRAMEWORK"), v("TP"), v("PP_SIZE"), v("DCP_SIZE"), v("PCP_SIZE"),
                       v("EP_SIZE"), v("DP_ATTENTION"), v("DISAGG"), v("SPEC_DECODING"), v("CONC"), runner);
  }
  if (const std::string fingerprint = v("RECIPE_FINGERPRINT"); !fingerprint.empty())
    name += "_recipe-" + fingerprint.substr(0, 16);
  if (kind == RowJobKind::kMultiNodeAgentic) name += "_conc" + v("CONC");
  return name;
}

}  // namespace ix::sweep
