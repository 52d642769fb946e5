#include "sim/catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/file_io.h"
#include "common/json_io.h"
#include "common/strings.h"

namespace ix::sim {

namespace {

// Reads numeric and string fields with the entry name in every error, so a bad catalog edit is
// found at once; a field it was never asked for (a misspelt name, whose value would otherwise be
// silently replaced by an error about the real name or, for an optional field, ignored) is an
// error too.
class EntryReader {
 public:
  EntryReader(const boost::json::object& object, std::string where) : object_(object), where_(std::move(where)) {}

  double number(std::string_view key) {
    known(key);
    auto value = json::get_number(object_, key);
    if (!value) {
      note(value.error());
      return 0;
    }
    return *value;
  }
  int32_t integer(std::string_view key) {
    known(key);
    auto value = json::get_int(object_, key);
    if (!value) {
      note(value.error());
      return 0;
    }
    return static_cast<int32_t>(*value);
  }
  std::string text(std::string_view key) {
    known(key);
    auto value = json::get_string(object_, key);
    if (!value) {
      note(value.error());
      return {};
    }
    return *value;
  }
  std::vector<std::string> strings(std::string_view key) {
    std::vector<std::string> out;
    known(key);
    auto it = object_.find(key);
    if (it == object_.end()) return out;
    if (!it->value().is_array()) {
      note(Error(ErrorCode::kParse, fmt::format("field '{}' must be an array of strings", key)));
      return out;
    }
    for (const auto& item : it->value().as_array()) {
      if (!item.is_string()) {
        note(Error(ErrorCode::kParse, fmt::format("field '{}' must be an array of strings", key)));
        return out;
      }
      out.emplace_back(item.as_string());
    }
    return out;
  }
  // Optional fields: absent = 0 / empty; present but of the wrong type is an error.
  int32_t optional_integer(std::string_view key) {
    known(key);
    return object_.contains(key) ? integer(key) : 0;
  }
  double optional_number(std::string_view key, double absent) {
    known(key);
    return object_.contains(key) ? number(key) : absent;
  }
  std::string optional_text(std::string_view key) {
    known(key);
    return object_.contains(key) ? text(key) : std::string();
  }
  // A field read without this reader.
  void known(std::string_view key) { known_.emplace(key); }
  Result<void> status() const {
    if (first_error_) return fail(ErrorCode::kParse, *first_error_);
    for (const auto& field : object_) {
      if (known_.count(std::string(field.key()))) continue;
      std::string names;
      for (const auto& name : known_) names += (names.empty() ? "" : ", ") + name;
      return fail(ErrorCode::kParse,
                  fmt::format("{}: unknown field '{}' (misspelt? the fields are: {})", where_, field.key(), names));
    }
    return {};
  }

 private:
  void note(const Error& error) {
    if (!first_error_) first_error_ = fmt::format("{}: {}", where_, error.message());
  }
  const boost::json::object& object_;
  std::string where_;
  std::optional<std::string> first_error_;
  std::set<std::string> known_;
};

Result<const boost::json::array*> entries(const boost::json::value& root, std::string_view key, std::string_view file) {
  if (!root.is_object()) return fail(ErrorCode::kParse, fmt::format("{}: top level must be an object", file));
  auto it = root.as_object().find(key);
  if (it == root.as_object().end() || !it->value().is_array())
    return fail(ErrorCode::kParse, fmt::format("{}: missing array '{}'", file, key));
  return &it->value().as_array();
}

Result<HardwareSpec> parse_hardware(const boost::json::value& value, size_t index) {
  if (!value.is_object())
    return fail(ErrorCode::kParse, fmt::format("hardware.json: entry {} is not an object", index));
  const auto& object = value.as_object();
  std::string where = fmt::format("hardware.json: entry {}", index);
  if (auto it = object.find("name"); it != object.end() && it->value().is_string())
    where = fmt::format("hardware.json: entry '{}'", std::string(it->value().as_string()));
  EntryReader reader(object, where);
  HardwareSpec spec;
  spec.name = ascii_lower(reader.text("name"));
  spec.aliases = reader.strings("aliases");
  spec.vendor = reader.text("vendor");
  spec.hbm_bytes = reader.number("hbm_gib") * 1073741824.0;
  spec.hbm_bandwidth_bytes_per_s = reader.number("hbm_bandwidth_tb_s") * 1e12;
  spec.peak_bf16_flops = reader.number("peak_bf16_tflops") * 1e12;
  spec.peak_fp8_flops = reader.number("peak_fp8_tflops") * 1e12;
  spec.peak_fp4_flops = reader.number("peak_fp4_tflops") * 1e12;
  spec.scaleup_bandwidth_bytes_per_s = reader.number("scaleup_bandwidth_gb_s") * 1e9;
  spec.scaleup_latency_s = reader.number("scaleup_latency_us") * 1e-6;
  spec.scaleup_domain_gpus = reader.integer("scaleup_domain_gpus");
  spec.scaleout_bandwidth_bytes_per_s = reader.number("scaleout_bandwidth_gb_s") * 1e9;
  spec.scaleout_latency_s = reader.number("scaleout_latency_us") * 1e-6;
  spec.gpus_per_node = reader.integer("gpus_per_node");
  spec.host_link_bandwidth_bytes_per_s =
      reader.optional_number("host_link_gb_s", kDefaultHostLinkBandwidth / 1e9) * 1e9;
  spec.source = reader.text("source");
  reader.known("calibration_sibling");
  if (auto it = object.find("calibration_sibling"); it != object.end()) {
    if (!it->value().is_string())
      return fail(ErrorCode::kParse, fmt::format("{}: 'calibration_sibling' must be a hardware name", where));
    spec.calibration_sibling = ascii_lower(std::string(it->value().as_string()));
  }
  if (auto status = reader.status(); !status) return fail(status.error());
  if (spec.hbm_bytes <= 0 || spec.hbm_bandwidth_bytes_per_s <= 0 || spec.peak_bf16_flops <= 0 ||
      spec.scaleup_bandwidth_bytes_per_s <= 0 || spec.scaleup_domain_gpus <= 0 || spec.gpus_per_node <= 0 ||
      spec.host_link_bandwidth_bytes_per_s <= 0)
    return fail(ErrorCode::kParse,
                fmt::format("{}: memory, bandwidth, bf16 peak, links and GPU counts must be positive", where));
  if (spec.source.empty())
    return fail(ErrorCode::kParse, fmt::format("{}: 'source' must say where the numbers come from", where));
  return spec;
}

Result<ModelSpec> parse_model(const boost::json::value& value, size_t index) {
  if (!value.is_object()) return fail(ErrorCode::kParse, fmt::format("models.json: entry {} is not an object", index));
  const auto& object = value.as_object();
  std::string where = fmt::format("models.json: entry {}", index);
  if (auto it = object.find("name"); it != object.end() && it->value().is_string())
    where = fmt::format("models.json: entry '{}'", std::string(it->value().as_string()));
  EntryReader reader(object, where);
  ModelSpec spec;
  spec.name = ascii_lower(reader.text("name"));
  spec.aliases = reader.strings("aliases");
  std::string attention = reader.text("attention");
  spec.num_layers = reader.integer("num_layers");
  spec.hidden_size = reader.integer("hidden_size");
  spec.num_heads = reader.integer("num_heads");
  spec.num_kv_heads = reader.integer("num_kv_heads");
  spec.head_dim = reader.integer("head_dim");
  spec.q_lora_rank = reader.integer("q_lora_rank");
  spec.kv_lora_rank = reader.integer("kv_lora_rank");
  spec.qk_nope_head_dim = reader.integer("qk_nope_head_dim");
  spec.qk_rope_head_dim = reader.integer("qk_rope_head_dim");
  spec.v_head_dim = reader.integer("v_head_dim");
  spec.intermediate_size = reader.integer("intermediate_size");
  spec.vocab_size = reader.integer("vocab_size");
  spec.num_experts = reader.integer("num_experts");
  spec.experts_per_token = reader.integer("experts_per_token");
  spec.moe_intermediate_size = reader.integer("moe_intermediate_size");
  spec.num_shared_experts = reader.integer("num_shared_experts");
  spec.first_dense_layers = reader.integer("first_dense_layers");
  spec.max_position_embeddings = reader.integer("max_position_embeddings");
  spec.kv_layer_fraction = reader.number("kv_layer_fraction");
  spec.num_mtp_layers = reader.integer("num_mtp_layers");
  spec.default_num_spec_tokens = reader.integer("default_num_spec_tokens");
  spec.default_acceptance_length = reader.number("default_acceptance_length");
  spec.o_lora_rank = reader.optional_integer("o_lora_rank");
  spec.o_groups = reader.optional_integer("o_groups");
  spec.checkpoint_expert_precision = reader.optional_text("checkpoint_expert_precision");
  spec.source = reader.text("source");
  if (auto status = reader.status(); !status) return fail(status.error());
  if (attention == "mla") {
    spec.attention = Attention::kMla;
  } else if (attention == "csa") {
    spec.attention = Attention::kCsa;
  } else if (attention == "gqa") {
    spec.attention = Attention::kGqa;
  } else {
    return fail(ErrorCode::kParse,
                fmt::format("{}: attention must be 'gqa', 'mla' or 'csa' (DeepSeek-V4), got '{}'", where, attention));
  }
  if (spec.num_layers <= 0 || spec.hidden_size <= 0 || spec.num_heads <= 0 || spec.vocab_size <= 0 ||
      spec.max_position_embeddings <= 0 || spec.kv_layer_fraction <= 0 || spec.kv_layer_fraction > 1)
    return fail(
        ErrorCode::kParse,
        fmt::format("{}: layers, hidden size, heads, vocab, context must be positive and kv_layer_fraction in (0,1]",
                    where));
  if (spec.attention == Attention::kMla &&
      (spec.kv_lora_rank <= 0 || spec.qk_nope_head_dim <= 0 || spec.v_head_dim <= 0))
    return fail(ErrorCode::kParse, fmt::format("{}: MLA needs kv_lora_rank, qk_nope_head_dim, v_head_dim", where));
  if (spec.attention == Attention::kGqa && (spec.num_kv_heads <= 0 || spec.head_dim <= 0))
    return fail(ErrorCode::kParse, fmt::format("{}: GQA needs num_kv_heads and head_dim", where));
  if (spec.attention == Attention::kCsa && (spec.head_dim <= 0 || spec.num_kv_heads != 1))
    return fail(ErrorCode::kParse,
                fmt::format("{}: CSA needs head_dim (the shared key/value entry) and num_kv_heads 1", where));
  if (spec.o_lora_rank < 0 || spec.o_groups < 0 || (spec.o_lora_rank > 0) != (spec.o_groups > 0) ||
      (spec.o_groups > 0 && spec.num_heads % spec.o_groups != 0))
    return fail(ErrorCode::kParse, fmt::format("{}: o_lora_rank and o_groups go together, positive, and o_groups "
                                               "must divide num_heads ({})",
                                               where, spec.num_heads));
  if (!spec.checkpoint_expert_precision.empty() && !is_known_precision(spec.checkpoint_expert_precision))
    return fail(ErrorCode::kParse, fmt::format("{}: checkpoint_expert_precision must be fp4, fp8 or bf16, got '{}'",
                                               where, spec.checkpoint_expert_precision));
  if (spec.is_moe() && (spec.experts_per_token <= 0 || spec.experts_per_token > spec.num_experts ||
                        spec.moe_intermediate_size <= 0 || spec.first_dense_layers >= spec.num_layers))
    return fail(ErrorCode::kParse, fmt::format("{}: MoE needs 0 < experts_per_token <= num_experts, "
                                               "moe_intermediate_size, first_dense_layers < num_layers",
                                               where));
  if (spec.default_acceptance_length < 1 || spec.default_acceptance_length > 1 + spec.default_num_spec_tokens)
    return fail(ErrorCode::kParse,
                fmt::format("{}: default_acceptance_length must be in [1, 1 + default_num_spec_tokens]", where));
  if (spec.source.empty())
    return fail(ErrorCode::kParse, fmt::format("{}: 'source' must say where the numbers come from", where));
  return spec;
}

// "deepseek-ai/DeepSeek-R1-0528" and "dsr1" both find deepseek-r1; "h200-multinode" finds h200.
bool matches(const std::string& query, const std::string& name, const std::vector<std::string>& aliases) {
  if (query == name) return true;
  for (const auto& alias : aliases)
    if (query == ascii_lower(alias)) return true;
  return false;
}

template <typename Spec>
std::string known_names(const std::vector<Spec>& specs) {
  std::string out;
  for (const auto& spec : specs) {
    if (!out.empty()) out += ", ";
    out += spec.name;
  }
  return out;
}

template <typename Spec>
const Spec* find_spec(const std::vector<Spec>& specs, const std::string& name) {
  std::string query = ascii_lower(name);
  for (const auto& spec : specs)
    if (matches(query, spec.name, spec.aliases)) return &spec;
  // Without the organisation prefix ("nvidia/...").
  if (auto slash = query.rfind('/'); slash != std::string::npos) {
    std::string tail = query.substr(slash + 1);
    for (const auto& spec : specs)
      if (matches(tail, spec.name, spec.aliases)) return &spec;
  }
  // A bare model name against an alias's HF id ("Kimi-K2.5" -> "moonshotai/Kimi-K2.5").
  for (const auto& spec : specs)
    for (const auto& alias : spec.aliases)
      if (auto slash = alias.rfind('/'); slash != std::string::npos && ascii_lower(alias.substr(slash + 1)) == query)
        return &spec;
  // Runner labels: "cluster:b200-dgxc" -> "b200-dgxc" -> "b200".
  if (auto colon = query.rfind(':'); colon != std::string::npos) return find_spec(specs, query.substr(colon + 1));
  if (auto dash = query.find('-'); dash != std::string::npos) {
    std::string head = query.substr(0, dash);
    for (const auto& spec : specs)
      if (spec.name == head) return &spec;
  }
  return nullptr;
}

template <typename Spec>
Result<void> check_unique_names(const std::vector<Spec>& specs, std::string_view file) {
  std::map<std::string, std::string> owner;  // lower-cased name or alias -> entry name
  for (const auto& spec : specs) {
    std::vector<std::string> keys = {spec.name};
    keys.insert(keys.end(), spec.aliases.begin(), spec.aliases.end());
    for (const auto& key : keys) {
      auto [it, inserted] = owner.try_emplace(ascii_lower(key), spec.name);
      if (!inserted && !(it->second == spec.name && key != spec.name))
        return fail(ErrorCode::kInvalidArgument,
                    fmt::format("{}: '{}' names both entry '{}' and entry '{}' (names and aliases must be unique)",
                                file, key, it->second, spec.name));
    }
  }
  return {};
}

Result<std::string> read_text(const std::filesystem::path& path) {
  return files::read_text_file(path, files::kMaxConfigFileBytes, "a catalog JSON file");
}

}  // namespace

double HardwareSpec::peak_flops(const std::string& dtype) const {
  if (dtype == "fp4" && peak_fp4_flops > 0) return peak_fp4_flops;
  if ((dtype == "fp4" || dtype == "fp8") && peak_fp8_flops > 0) return peak_fp8_flops;
  return peak_bf16_flops;
}

bool is_known_precision(std::string_view precision) {
  return precision == "fp4" || precision == "fp8" || precision == "bf16";
}

double ModelSpec::attention_params_per_layer() const {
  const double d = hidden_size;
  // Query: through the low-rank q_lora_rank when the model has one.
  auto query = [&](double per_head) {
    return q_lora_rank > 0 ? d * q_lora_rank + double(q_lora_rank) * num_heads * per_head : d * num_heads * per_head;
  };
  // Output: heads x per_head -> hidden, or grouped low-rank (each group of heads -> o_lora_rank, the
  // groups' concatenation -> hidden).
  auto output = [&](double per_head) {
    return o_groups > 0 ? num_heads * per_head * o_lora_rank + double(o_groups) * o_lora_rank * d
                        : num_heads * per_head * d;
  };
  switch (attention) {
    case Attention::kMla:
      return query(qk_nope_head_dim + qk_rope_head_dim) + d * (kv_lora_rank + qk_rope_head_dim) +
             double(kv_lora_rank) * num_heads * (qk_nope_head_dim + v_head_dim) + output(v_head_dim);
    case Attention::kCsa: return query(head_dim) + d * head_dim + output(head_dim);
    case Attention::kGqa: break;
  }
  return query(head_dim) + 2.0 * d * num_kv_heads * head_dim + output(head_dim);
}

double ModelSpec::expert_params() const {
  return 3.0 * hidden_size * moe_intermediate_size;
}

double ModelSpec::dense_params() const {
  const double d = hidden_size;
  double params = num_layers * attention_params_per_layer();
  params += dense_ffn_layers() * 3.0 * d * intermediate_size;
  if (is_moe()) params += moe_layers() * (num_shared_experts * expert_params() + d * num_experts);
  params += 2.0 * vocab_size * d;
  return params;
}

double ModelSpec::total_params() const {
  return dense_params() + moe_layers() * double(num_experts) * expert_params();
}

double ModelSpec::active_params_per_token() const {
  // The embedding lookup does no FLOPs; the LM head is counted per sampled token by the cost model.
  return dense_params() - 2.0 * vocab_size * hidden_size + moe_layers() * double(experts_per_token) * expert_params();
}

double ModelSpec::kv_elements_per_token() const {
  const double per_layer = attention == Attention::kMla   ? double(kv_lora_rank + qk_rope_head_dim)
                           : attention == Attention::kCsa ? double(head_dim)
                                                          : 2.0 * num_kv_heads * head_dim;
  return per_layer * num_layers * kv_layer_fraction;
}

Result<Catalog> Catalog::parse(const std::string& hardware_json, const std::string& models_json) {
  auto hardware_root = json::parse(hardware_json, "hardware.json");
  if (!hardware_root) return fail(hardware_root.error());
  auto models_root = json::parse(models_json, "models.json");
  if (!models_root) return fail(models_root.error());
  auto hardware_entries = entries(*hardware_root, "hardware", "hardware.json");
  if (!hardware_entries) return fail(hardware_entries.error());
  auto model_entries = entries(*models_root, "models", "models.json");
  if (!model_entries) return fail(model_entries.error());
  Catalog catalog;
  for (size_t i = 0; i < (*hardware_entries)->size(); ++i) {
    auto spec = parse_hardware((**hardware_entries)[i], i);
    if (!spec) return fail(spec.error());
    catalog.hardware_.push_back(std::move(*spec));
  }
  for (size_t i = 0; i < (*model_entries)->size(); ++i) {
    auto spec = parse_model((**model_entries)[i], i);
    if (!spec) return fail(spec.error());
    catalog.models_.push_back(std::move(*spec));
  }
  // Names and aliases must name one entry each: otherwise the first entry silently wins.
  if (auto ok = check_unique_names(catalog.hardware_, "hardware.json"); !ok) return fail(ok.error());
  if (auto ok = check_unique_names(catalog.models_, "models.json"); !ok) return fail(ok.error());
  for (const auto& spec : catalog.hardware_) {
    if (spec.calibration_sibling.empty()) continue;
    auto sibling = catalog.hardware(spec.calibration_sibling);
    if (!sibling || (*sibling)->name == spec.name)
      return fail(ErrorCode::kParse,
                  fmt::format("hardware.json: entry '{}': calibration_sibling '{}' must name another hardware entry",
                              spec.name, spec.calibration_sibling));
  }
  return catalog;
}

Result<CatalogFile> optional_catalog_file(const std::string& catalog_dir, const std::string& name,
                                          const char* embedded) {
  if (!catalog_dir.empty()) {
    const std::filesystem::path path = std::filesystem::path(catalog_dir) / name;
    // A missing optional file falls back to the embedded one; any other failure is an error.
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      auto text = files::read_text_file(path, files::kMaxConfigFileBytes, "a catalog JSON file");
      if (!text) return fail(text.error());
      return CatalogFile{std::move(*text), path.string()};
    }
  }
  return CatalogFile{embedded, "data/catalog/" + name};
}

Result<Catalog> Catalog::builtin() {
  return parse(embedded_hardware_json(), embedded_models_json());
}

Result<Catalog> Catalog::load_dir(const std::string& dir) {
  auto hardware_text = read_text(std::filesystem::path(dir) / "hardware.json");
  if (!hardware_text) return fail(hardware_text.error());
  auto models_text = read_text(std::filesystem::path(dir) / "models.json");
  if (!models_text) return fail(models_text.error());
  auto catalog = parse(*hardware_text, *models_text);
  if (!catalog) return fail(catalog.error().with_context(dir));
  return catalog;
}

Result<const HardwareSpec*> Catalog::hardware(const std::string& name) const {
  if (const auto* spec = find_spec(hardware_, name)) return spec;
  return fail(
      ErrorCode::kNotFound,
      fmt::format("unknown hardware '{}'; known: {}. To add one, append an entry (with its datasheet source) to "
                  "data/catalog/hardware.json and rebuild, or pass --catalog-dir DIR holding your own hardware.json",
                  name, known_names(hardware_)));
}

Result<const ModelSpec*> Catalog::model(const std::string& name) const {
  if (const auto* spec = find_spec(models_, name)) return spec;
  return fail(
      ErrorCode::kNotFound,
      fmt::format("unknown model '{}'; known: {}. To add one, append an entry (fields from its HF config.json, "
                  "with a source) to data/catalog/models.json and rebuild, or pass --catalog-dir DIR holding your "
                  "own models.json",
                  name, known_names(models_)));
}

}  // namespace ix::sim
