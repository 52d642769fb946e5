#include "sim/sweep_row.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <charconv>
#include <climits>
#include <cmath>
#include <optional>

#include "common/json_io.h"
#include "sim/catalog.h"

namespace ix::sim {

namespace {

Result<int32_t> int_field(const boost::json::object& object, std::string_view key, std::string_view where) {
  auto value = json::get_int(object, key);
  if (!value) return fail(value.error().with_context(where));
  if (*value < INT32_MIN || *value > INT32_MAX)
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}: field '{}' is out of range: {}", where, key, *value));
  return static_cast<int32_t>(*value);
}

Result<bool> bool_field(const boost::json::object& object, std::string_view key, std::string_view where) {
  auto it = object.find(key);
  if (it == object.end() || it->value().is_null()) return false;
  if (it->value().is_bool()) return it->value().as_bool();
  if (it->value().is_string()) {
    const std::string_view text = it->value().as_string();
    if (text == "true" || text == "True") return true;
    if (text == "false" || text == "False") return false;
  }
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("{}: field '{}' must be true or false, got {}", where, key, json::to_string(it->value())));
}

Result<WorkerTopology> parse_side(const boost::json::object& side, std::string_view name) {
  std::string where = fmt::format("row.{}", name);
  WorkerTopology topology;
  auto workers = int_field(side, "num-worker", where);
  if (!workers) return fail(workers.error());
  auto tp = int_field(side, "tp", where);
  if (!tp) return fail(tp.error());
  topology.num_workers = *workers;
  topology.tp = *tp;
  topology.ep = 1;
  if (side.contains("ep")) {
    auto ep = int_field(side, "ep", where);
    if (!ep) return fail(ep.error());
    topology.ep = *ep;
  }
  auto dp_attn = bool_field(side, "dp-attn", where);
  if (!dp_attn) return fail(dp_attn.error());
  topology.dp_attn = *dp_attn;
  return topology;
}

// "KEY=VALUE" entries of additional-settings.
std::optional<std::string> setting(const boost::json::object& side, std::string_view key) {
  auto it = side.find("additional-settings");
  if (it == side.end() || !it->value().is_array()) return std::nullopt;
  for (const auto& item : it->value().as_array()) {
    if (!item.is_string()) continue;
    std::string_view text = item.as_string();
    if (text.size() > key.size() && text.starts_with(key) && text[key.size()] == '=')
      return std::string(text.substr(key.size() + 1));
  }
  return std::nullopt;
}

// The whole of `text` as a decimal integer, or nothing.
std::optional<int64_t> parse_integer(std::string_view text) {
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

struct SideLimits {
  // Per rank; 0 = not given.
  int32_t running = 0;          // max-running-requests over the DP ranks
  int32_t budget = 0;           // chunked-prefill-size over the DP ranks, capped by max-prefill-tokens
  int64_t kv_tokens = 0;        // max-total-tokens (each rank's own pool)
  int32_t reserved_decode = 0;  // num-reserved-decode-tokens
};
struct RecipeLimits {
  SideLimits prefill, decode;
};

// SGLang's defaults of --max-prefill-tokens and --num-reserved-decode-tokens.
constexpr int64_t kSglangMaxPrefillTokens = 16384;
constexpr int64_t kSglangReservedDecodeTokens = 512;

// "recipe": {"prefill": {...}, "decode": {...}} with SGLang flags as the recipe spells them; `where`
// names it in errors ("row: recipe", "recipes.json: recipe 'X'"). SGLang's semantics with
// enable-dp-attention (server_args.py, model_runner.py): max-running-requests and
// chunked-prefill-size are for the whole server and divided over dp-size ranks; max-total-tokens,
// max-prefill-tokens and num-reserved-decode-tokens are per rank.
Result<RecipeLimits> recipe_limits(const boost::json::value& value, const std::string& where) {
  RecipeLimits limits;
  if (!value.is_object()) return fail(ErrorCode::kParse, fmt::format("{}: must be an object", where));
  const auto& recipe = value.as_object();
  auto number = [](const boost::json::value& v) -> std::optional<int64_t> {
    if (v.is_int64()) return v.as_int64();
    if (v.is_uint64()) return static_cast<int64_t>(v.as_uint64());
    if (v.is_string()) return parse_integer(v.as_string());
    return std::nullopt;
  };
  for (auto [name, out] : {std::pair{"prefill", &limits.prefill}, std::pair{"decode", &limits.decode}}) {
    auto side = recipe.find(name);
    if (side == recipe.end()) continue;
    if (!side->value().is_object())
      return fail(ErrorCode::kParse, fmt::format("{}.{}: must be an object", where, name));
    const auto& flags = side->value().as_object();
    // A positive integer flag in [1, max], or nothing when absent (-1 allowed where SGLang means "off").
    auto flag = [&](const char* key, int64_t max, bool minus_one_is_off = false) -> Result<std::optional<int64_t>> {
      auto f = flags.find(key);
      if (f == flags.end() || f->value().is_null()) return std::optional<int64_t>();
      auto v = number(f->value());
      if (v && minus_one_is_off && *v == -1) return std::optional<int64_t>();
      if (!v || *v < 1 || *v > max)
        return fail(ErrorCode::kParse, fmt::format("{}.{}.{} {} is not an integer in [1, {}]", where, name, key,
                                                   json::to_string(f->value()), max));
      return v;
    };
    int64_t dp = 1;
    bool dp_attention = false;
    if (auto f = flags.find("enable-dp-attention"); f != flags.end())
      dp_attention = (f->value().is_bool() && f->value().as_bool()) ||
                     (f->value().is_string() && f->value().as_string() == "true");
    for (const char* key : {"dp-size", "data-parallel-size", "dp"}) {
      auto value = flag(key, 65536);
      if (!value) return fail(value.error());
      if (*value) dp = **value;
    }
    const int64_t ranks = dp_attention ? dp : 1;
    auto running = flag("max-running-requests", INT32_MAX);
    if (!running) return fail(running.error());
    if (*running) out->running = int32_t(std::max<int64_t>(1, **running / ranks));
    auto chunk = flag("chunked-prefill-size", INT32_MAX, true);
    if (!chunk) return fail(chunk.error());
    auto max_prefill = flag("max-prefill-tokens", INT32_MAX);
    if (!max_prefill) return fail(max_prefill.error());
    const int64_t prefill_cap = max_prefill->value_or(kSglangMaxPrefillTokens);
    if (*chunk) {
      out->budget = int32_t(std::max<int64_t>(1, std::min(**chunk / ranks, prefill_cap)));
    } else if (auto f = flags.find("chunked-prefill-size"); f != flags.end() && number(f->value()) == -1) {
      out->budget = int32_t(prefill_cap);  // chunking off: whole prompts, max-prefill-tokens per batch
    }
    auto kv = flag("max-total-tokens", int64_t(1) << 40);
    if (!kv) return fail(kv.error());
    if (*kv) out->kv_tokens = **kv;
    auto reserved = flag("num-reserved-decode-tokens", 1 << 20);
    if (!reserved) return fail(reserved.error());
    // As stated, or SGLang's default (512) where the recipe states the pool (max-total-tokens);
    // without either the pool is the memory model's estimate and nothing is reserved
    // (WorkerTopology::reserved_decode_tokens).
    if (*reserved) {
      out->reserved_decode = int32_t(**reserved);
    } else if (out->kv_tokens > 0) {
      out->reserved_decode = int32_t(kSglangReservedDecodeTokens);
    }
  }
  return limits;
}

// The recipe catalog: data/catalog/recipes.json (embedded), or DIR/recipes.json with
// --catalog-dir DIR when that file exists. {"recipes": [{"config_file": ..., "prefill": {...},
// "decode": {...}, "source": ...}]}; a row's CONFIG_FILE value is looked up as written.
Result<std::optional<boost::json::value>> catalog_recipe(const std::string& catalog_dir,
                                                         const std::string& config_file) {
  auto parse = [](const Result<CatalogFile>& file) -> Result<boost::json::value> {
    if (!file) return fail(file.error());
    return json::parse(file->text, file->origin);
  };
  static const Result<boost::json::value> builtin =
      parse(optional_catalog_file("", "recipes.json", embedded_recipes_json()));
  Result<boost::json::value> from_dir = boost::json::value();
  const Result<boost::json::value>* catalog = &builtin;
  if (!catalog_dir.empty()) {
    from_dir = parse(optional_catalog_file(catalog_dir, "recipes.json", embedded_recipes_json()));
    catalog = &from_dir;
  }
  if (!*catalog) return fail(catalog->error());
  const auto* root = (*catalog)->if_object();
  const auto* list = root ? root->if_contains("recipes") : nullptr;
  if (list == nullptr || !list->is_array())
    return fail(ErrorCode::kParse, "recipes.json: expected {\"recipes\": [...]}");
  for (const auto& entry : list->as_array()) {
    const auto* object = entry.if_object();
    if (object == nullptr) continue;
    const auto* name = object->if_contains("config_file");
    if (name != nullptr && name->is_string() && name->as_string() == config_file) return std::optional(entry);
  }
  return std::optional<boost::json::value>();
}

}  // namespace

RecipeNameHints recipe_name_hints(std::string_view config_file) {
  RecipeNameHints hints;
  std::string_view name = config_file.substr(config_file.find_last_of('/') + 1);
  if (const size_t dot = name.rfind('.'); dot != std::string_view::npos) name = name.substr(0, dot);
  auto number_after = [](std::string_view token, std::string_view prefix) -> int32_t {
    if (!token.starts_with(prefix) || token.size() == prefix.size()) return -1;
    int32_t value = 0;
    auto [ptr, ec] = std::from_chars(token.data() + prefix.size(), token.data() + token.size(), value);
    return ec == std::errc() && ptr == token.data() + token.size() ? value : -1;
  };
  while (!name.empty()) {
    const size_t end = name.find_first_of("_-");
    const std::string_view token = name.substr(0, end);
    name = end == std::string_view::npos ? std::string_view() : name.substr(end + 1);
    if (int32_t batch = number_after(token, "batch"); batch > 0) hints.decode_batch = batch;
    if (int32_t mtp = number_after(token, "mtp"); mtp > 0) hints.mtp = mtp;
  }
  return hints;
}

namespace {

// An agentic row's replay settings: its duration, and with `kv-offloading: dram` the DRAM budget
// (total-cpu-dram-gb, already scaled by dram-utilization and the row's GPUs) as the engine's KV
// offloading tier, as InferenceX's agentic launchers hand it to vLLM (bytes over the engine's GPUs).
Result<void> read_agentic_fields(const boost::json::object& row, RowWorkload& workload) {
  if (const auto* duration = row.if_contains("duration"); duration && !duration->is_null()) {
    auto value = json::get_number(row, "duration");
    if (!value || !(*value > 0))
      return fail(ErrorCode::kInvalidArgument, "row: 'duration' must be a number of seconds > 0");
    workload.duration_s = *value;
  }
  const auto* offloading = row.if_contains("kv-offloading");
  if (!offloading || offloading->is_null()) return {};
  if (!offloading->is_string()) return fail(ErrorCode::kParse, "row: 'kv-offloading' must be a string (none | dram)");
  const std::string_view mode = offloading->as_string();
  if (mode == "none") return {};
  if (mode != "dram")
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("row: 'kv-offloading' is '{}': the simulator models none and dram", mode));
  auto budget_gb = json::get_number(row, "total-cpu-dram-gb");
  if (!budget_gb || !(*budget_gb > 0))
    return fail(ErrorCode::kInvalidArgument,
                "row: 'kv-offloading: dram' needs 'total-cpu-dram-gb' > 0 (the DRAM budget the planner computes)");
  // GiB to two decimals, as `ixbench run` renders the launch flag (run/render.cc).
  workload.engine.kv_offloading_size_gib = std::round(*budget_gb * 1e9 / double(1ULL << 30) * 100) / 100;
  return {};
}

}  // namespace

namespace {

// model (or its catalog model-prefix), runner, precision, framework, spec-decoding, scenario-type.
Result<void> read_identity(const boost::json::object& row, RowWorkload& workload) {
  EngineConfig& config = workload.engine;
  auto model = json::get_string(row, "model");
  if (!model) return fail(model.error().with_context("row"));
  workload.model_id = *model;
  config.model = *model;
  // A checkpoint name the catalog does not know may still have a known model-prefix (dsr1, ...).
  if (auto catalog = Catalog::builtin(); catalog && !catalog->model(*model)) {
    if (auto prefix = json::get_string(row, "model-prefix"); prefix && catalog->model(*prefix)) config.model = *prefix;
  }
  auto runner = json::get_string(row, "runner");
  if (!runner) return fail(runner.error().with_context("row"));
  config.hardware = *runner;
  auto precision = json::get_string(row, "precision");
  if (!precision) return fail(precision.error().with_context("row"));
  config.precision = *precision;
  auto framework = json::get_string(row, "framework");
  if (!framework) return fail(framework.error().with_context("row"));
  config.framework = *framework;
  if (row.contains("spec-decoding")) {
    auto spec_text = json::get_string(row, "spec-decoding");
    if (!spec_text) return fail(spec_text.error().with_context("row"));
    auto spec = parse_spec_decoding(*spec_text);
    if (!spec) return fail(spec.error().with_context("row"));
    config.spec_decoding = *spec;
  }
  if (auto it = row.find("scenario-type"); it != row.end() && it->value().is_string())
    workload.scenario_type = std::string(it->value().as_string());
  return {};
}

// isl/osl, the parallelism the simulator refuses, max-model-len, conc.
Result<void> read_workload(const boost::json::object& row, RowWorkload& workload) {
  EngineConfig& config = workload.engine;
  for (const char* key : {"isl", "osl"}) {
    if (!row.contains(key)) continue;
    auto value = int_field(row, key, "row");
    if (!value) return fail(value.error());
    if (*value < 1)
      return fail(ErrorCode::kInvalidArgument, fmt::format("row: '{}' must be >= 1, got {}", key, *value));
    (std::string_view(key) == "isl" ? workload.isl : workload.osl) = *value;
  }
  // Parallelism the simulator does not model is refused rather than predicted as if absent
  // (a pp 2 row was predicted on half its GPUs).
  for (const boost::json::object* where : {&row, row.if_contains("prefill") ? row.at("prefill").if_object() : nullptr,
                                           row.if_contains("decode") ? row.at("decode").if_object() : nullptr}) {
    if (!where) continue;
    for (const char* key : {"pp", "pcp-size", "dcp-size"}) {
      if (!where->contains(key) || where->at(key).is_null()) continue;
      auto value = int_field(*where, key, "row");
      if (!value) return fail(value.error());
      if (*value > 1)
        return fail(ErrorCode::kUnsupported,
                    fmt::format("row: '{}' = {}: pipeline and context parallelism are not modelled by the simulator "
                                "(tp, ep, dp-attn and disaggregation are)",
                                key, *value));
    }
  }
  if (row.contains("max-model-len") && !row.at("max-model-len").is_null() && config.max_model_len == 0) {
    auto value = int_field(row, "max-model-len", "row");
    if (!value) return fail(value.error());
    if (*value < 0)
      return fail(ErrorCode::kInvalidArgument, fmt::format("row: 'max-model-len' must be >= 0, got {}", *value));
    config.max_model_len = *value;
  }
  if (auto it = row.find("conc"); it != row.end()) {
    auto add_conc = [&](int64_t value) -> Result<void> {
      if (value < 1 || value > INT32_MAX)
        return fail(ErrorCode::kInvalidArgument,
                    fmt::format("row: 'conc' values must be in [1, {}], got {}", INT32_MAX, value));
      workload.concurrencies.push_back(int32_t(value));
      return {};
    };
    if (it->value().is_int64()) {
      if (auto ok = add_conc(it->value().as_int64()); !ok) return fail(ok.error());
    } else if (it->value().is_array()) {
      if (it->value().as_array().empty()) return fail(ErrorCode::kParse, "row: 'conc' is an empty list");
      for (const auto& item : it->value().as_array()) {
        if (!item.is_int64()) return fail(ErrorCode::kParse, "row: 'conc' must be an integer or a list of integers");
        if (auto ok = add_conc(item.as_int64()); !ok) return fail(ok.error());
      }
    } else {
      return fail(ErrorCode::kParse, "row: 'conc' must be an integer or a list of integers");
    }
  }
  return {};
}

// What a multi-node row's additional-settings and recipe say: draft length and acceptance, the
// sides' running limits and token budgets, where the caller named none.
Result<void> apply_side_settings(const boost::json::object& row, const EngineConfig& base,
                                 const boost::json::object& prefill_object, const boost::json::object& decode_object,
                                 EngineConfig& config) {
  bool mtp_size_given = false;
  RecipeNameHints hints;
  std::optional<std::string> config_file;
  for (const auto* side : {&decode_object, &prefill_object}) {
    if (auto file = setting(*side, "CONFIG_FILE")) {
      config_file = *file;
      const RecipeNameHints named = recipe_name_hints(*file);
      if (named.decode_batch > 0) hints.decode_batch = named.decode_batch;
      if (named.mtp > 0) hints.mtp = named.mtp;
    }
    if (auto mtp = setting(*side, "DECODE_MTP_SIZE")) {
      mtp_size_given = true;
      int32_t value = 0;
      auto [ptr, ec] = std::from_chars(mtp->data(), mtp->data() + mtp->size(), value);
      if (ec == std::errc() && value > 0) config.num_spec_tokens = value;
    }
    if (auto al = setting(*side, "SYNTHETIC_ACCEPTANCE_LENGTH")) {
      try {
        config.acceptance_length = std::stod(*al);
      } catch (const std::exception&) {
        return fail(ErrorCode::kParse, fmt::format("row: SYNTHETIC_ACCEPTANCE_LENGTH '{}' is not a number", *al));
      }
    }
  }
  // Older master entries name the batch limits as settings instead of in a recipe file name.
  auto batch_setting = [](const boost::json::object& side, std::string_view key) -> Result<int32_t> {
    auto text = setting(side, key);
    if (!text) return 0;
    const auto value = parse_integer(*text);
    if (!value || *value < 1 || *value > INT32_MAX)
      return fail(ErrorCode::kParse, fmt::format("row: {} '{}' is not a positive integer", key, *text));
    return static_cast<int32_t>(*value);
  };
  auto decode_batch = batch_setting(decode_object, "DECODE_MAX_BATCH_SIZE");
  if (!decode_batch) return fail(decode_batch.error());
  auto prefill_batch = batch_setting(prefill_object, "PREFILL_MAX_BATCH_SIZE");
  if (!prefill_batch) return fail(prefill_batch.error());
  if (*decode_batch > 0) hints.decode_batch = *decode_batch;
  // ixbench's extension for rows that carry their recipe's SGLang server flags ("recipe":
  // {"prefill": {...}, "decode": {...}}, data/calibration/): max-running-requests is per server,
  // and SGLang splits it over the data-parallel attention ranks.
  RecipeLimits recipe;
  if (auto it = row.find("recipe"); it != row.end()) {
    auto limits = recipe_limits(it->value(), "row: recipe");
    if (!limits) return fail(limits.error());
    recipe = *limits;
  } else if (config_file) {
    auto entry = catalog_recipe(base.catalog_dir, *config_file);
    if (!entry) return fail(entry.error());
    if (*entry) {
      auto limits = recipe_limits(**entry, fmt::format("recipes.json: recipe '{}'", *config_file));
      if (!limits) return fail(limits.error());
      recipe = *limits;
    }
  }
  if (hints.decode_batch == 0 && recipe.decode.running > 0) hints.decode_batch = recipe.decode.running;
  if (*prefill_batch == 0 && recipe.prefill.running > 0) *prefill_batch = recipe.prefill.running;
  if (config.disagg && hints.decode_batch > 0 && config.decode.max_num_seqs == 0)
    config.decode.max_num_seqs = hints.decode_batch;
  if (config.disagg && *prefill_batch > 0 && config.prefill.max_num_seqs == 0)
    config.prefill.max_num_seqs = *prefill_batch;
  // The recipe's token limits, unless the caller set them (--prefill-/--decode-* flags). The
  // decode side's chunked-prefill-size is left out: decode steps are not prefill chunks.
  if (config.disagg) {
    auto take = [](auto& field, auto value) {
      if (field == 0 && value > 0) field = value;
    };
    take(config.prefill.max_num_batched_tokens, recipe.prefill.budget);
    take(config.prefill.max_kv_tokens, recipe.prefill.kv_tokens);
    take(config.decode.max_kv_tokens, recipe.decode.kv_tokens);
    take(config.decode.reserved_decode_tokens, recipe.decode.reserved_decode);
  }
  if (!mtp_size_given && hints.mtp > 0 && config.spec_decoding == SpecDecoding::kMtp)
    config.num_spec_tokens = hints.mtp;
  return {};
}

// prefill{...} and decode{...}: disaggregated when both sides have workers, else the one side's
// workers serve alone behind the router.
Result<void> read_sides(const boost::json::object& row, const EngineConfig& base, EngineConfig& config) {
  if (!row.at("prefill").is_object() || !row.at("decode").is_object())
    return fail(ErrorCode::kParse, "row: 'prefill' and 'decode' must be objects");
  const auto& prefill_object = row.at("prefill").as_object();
  const auto& decode_object = row.at("decode").as_object();
  auto prefill = parse_side(prefill_object, "prefill");
  if (!prefill) return fail(prefill.error());
  auto decode = parse_side(decode_object, "decode");
  if (!decode) return fail(decode.error());
  // Batch and token limits are not row fields: the caller's (--prefill-/--decode-* flags) stay.
  for (auto [side, from] : {std::pair{&*prefill, &base.prefill}, std::pair{&*decode, &base.decode}}) {
    side->max_num_seqs = from->max_num_seqs;
    side->max_num_batched_tokens = from->max_num_batched_tokens;
    side->max_kv_tokens = from->max_kv_tokens;
    side->reserved_decode_tokens = from->reserved_decode_tokens;
  }
  if (prefill->num_workers > 0 && decode->num_workers > 0) {
    config.disagg = true;
    config.prefill = *prefill;
    config.decode = *decode;
  } else {
    // One side only: those workers serve everything (aggregated behind the router).
    const WorkerTopology& only = prefill->num_workers > 0 ? *prefill : *decode;
    config.disagg = false;
    config.tp = only.tp;
    config.ep = only.ep;
    config.dp_attn = only.dp_attn;
    config.num_replicas = std::max(1, only.num_workers);
  }
  return apply_side_settings(row, base, prefill_object, decode_object, config);
}

Result<void> read_single_node(const boost::json::object& row, EngineConfig& config) {
  auto tp = int_field(row, "tp", "row");
  if (!tp) return fail(tp.error());
  config.tp = *tp;
  config.ep = 1;
  if (row.contains("ep")) {
    auto ep = int_field(row, "ep", "row");
    if (!ep) return fail(ep.error());
    config.ep = *ep;
  }
  auto dp_attn = bool_field(row, "dp-attn", "row");
  if (!dp_attn) return fail(dp_attn.error());
  config.dp_attn = *dp_attn;
  config.disagg = false;
  return {};
}

}  // namespace

Result<RowWorkload> parse_sweep_row(const boost::json::object& row, const EngineConfig& base) {
  RowWorkload workload;
  workload.engine = base;
  EngineConfig& config = workload.engine;
  if (auto ok = read_identity(row, workload); !ok) return fail(ok.error());
  if (auto ok = read_workload(row, workload); !ok) return fail(ok.error());
  const bool has_sides = row.contains("prefill") && row.contains("decode");
  if (auto ok = has_sides ? read_sides(row, base, config) : read_single_node(row, config); !ok) return fail(ok.error());
  if (auto ok = read_agentic_fields(row, workload); !ok) return fail(ok.error());
  if (auto ok = validate(config); !ok) return fail(ok.error().with_context("row"));
  return workload;
}

Result<RowWorkload> parse_sweep_row_text(const std::string& text, const EngineConfig& base, const std::string& source) {
  auto value = json::parse(text, source);
  if (!value) return fail(value.error());
  if (value->is_array() && value->as_array().size() == 1)
    return parse_sweep_row_text(json::to_string(value->as_array()[0]), base, source);
  if (!value->is_object())
    return fail(ErrorCode::kParse, fmt::format("{}: expected one JSON object (a sweep row)", source));
  auto row = parse_sweep_row(value->as_object(), base);
  if (!row) return fail(row.error().with_context(source));
  return row;
}

}  // namespace ix::sim
