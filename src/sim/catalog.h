// Hardware and model catalogs: data files (data/catalog/*.json, embedded at build time), parsed
// into typed specs. Every entry carries the source of its numbers.
//
// Lookup is by name or alias, case-insensitive, with an organisation prefix ("deepseek-ai/") and
// runner suffixes allowed. An unknown name is an error that lists the known names and says how
// to add one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::sim {

// PCIe Gen5 x16, one direction (64 GB/s): the host link of a GPU whose catalog entry states none.
inline constexpr double kDefaultHostLinkBandwidth = 64e9;

struct HardwareSpec {
  std::string name;
  std::vector<std::string> aliases;
  std::string vendor;
  double hbm_bytes = 0;
  double hbm_bandwidth_bytes_per_s = 0;
  double peak_bf16_flops = 0;
  double peak_fp8_flops = 0;                 // 0 = not native
  double peak_fp4_flops = 0;                 // 0 = not native
  double scaleup_bandwidth_bytes_per_s = 0;  // per GPU, one direction (NVLink / Infinity Fabric)
  double scaleup_latency_s = 0;
  int32_t scaleup_domain_gpus = 8;
  double scaleout_bandwidth_bytes_per_s = 0;  // per GPU, one direction (RDMA NIC)
  double scaleout_latency_s = 0;
  int32_t gpus_per_node = 8;
  // GPU <-> host memory, per GPU and direction (KV offloading's loads and stores). Catalog field
  // host_link_gb_s; absent = kDefaultHostLinkBandwidth.
  double host_link_bandwidth_bytes_per_s = kDefaultHostLinkBandwidth;
  // The device whose calibration single-node engines borrow when this one was fitted on no
  // single-node rows (same GPU die: h100 -> h200, gb200 -> b200, gb300 -> b300); "" = none.
  std::string calibration_sibling;
  std::string source;

  // Tensor-core peak for a weight dtype: fp4 falls back to fp8 then bf16 when not native.
  double peak_flops(const std::string& dtype) const;
};

// The weight precisions the cost model knows (fp4, fp8, bf16).
bool is_known_precision(std::string_view precision);

// How a model's attention caches keys and values.
enum class Attention {
  kGqa,  // grouped-query: K and V of every KV head (head_dim each), split over TP ranks
  kMla,  // multi-head latent (DeepSeek-V3/R1): one latent (kv_lora_rank + rope) per token and
         // layer, replicated on every TP rank, up-projected per head
  kCsa,  // DeepSeek-V4's compressed (sparse) attention: one shared head_dim-wide entry that is
         // both key and value (no up-projection), kept for 1 token in 4 or 128 depending on the
         // layer (kv_layer_fraction is the mean kept share), replicated on every TP rank
};

struct ModelSpec {
  std::string name;
  std::vector<std::string> aliases;
  Attention attention = Attention::kGqa;
  int32_t num_layers = 0;
  int32_t hidden_size = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t q_lora_rank = 0;
  int32_t kv_lora_rank = 0;
  int32_t qk_nope_head_dim = 0;
  int32_t qk_rope_head_dim = 0;
  int32_t v_head_dim = 0;
  // Grouped low-rank output projection (DeepSeek-V4: heads x head_dim -> o_groups x o_lora_rank
  // -> hidden); 0 = a plain heads x head_dim -> hidden projection.
  int32_t o_lora_rank = 0;
  int32_t o_groups = 0;
  int32_t intermediate_size = 0;  // dense FFN layers
  int32_t vocab_size = 0;
  int32_t num_experts = 0;  // routed experts (0 = dense model)
  int32_t experts_per_token = 0;
  int32_t moe_intermediate_size = 0;
  int32_t num_shared_experts = 0;
  int32_t first_dense_layers = 0;
  int32_t max_position_embeddings = 0;
  double kv_layer_fraction = 1.0;  // layers that keep a per-token KV cache
  int32_t num_mtp_layers = 0;
  int32_t default_num_spec_tokens = 3;
  double default_acceptance_length = 2.0;
  // The precision the checkpoint stores routed experts in whatever the deployment's precision
  // (DeepSeek-V4: FP4 experts in its "FP8" checkpoint); empty = the deployment's precision.
  std::string checkpoint_expert_precision;
  std::string source;

  bool is_moe() const { return num_experts > 0; }
  // One cache entry per token and layer shared by every head (MLA, CSA): replicated, not split,
  // over TP ranks.
  bool shared_kv() const { return attention != Attention::kGqa; }
  int32_t moe_layers() const { return is_moe() ? num_layers - first_dense_layers : 0; }
  int32_t dense_ffn_layers() const { return is_moe() ? first_dense_layers : num_layers; }
  // Parameters per layer / in total (counts, not bytes).
  double attention_params_per_layer() const;
  double expert_params() const;  // one routed expert
  double dense_params() const;   // everything except routed experts (attention, dense FFN, shared
                                 // experts, router, embeddings and LM head)
  double total_params() const;
  double active_params_per_token() const;
  // KV-cache elements per token over all layers, before TP sharding (MLA: latent + rope key;
  // CSA: one head_dim entry; GQA: K and V of every KV head), times kv_layer_fraction.
  double kv_elements_per_token() const;
};

class Catalog {
 public:
  // The catalogs embedded at build time from data/catalog/.
  static Result<Catalog> builtin();
  // hardware.json, models.json (and optional calibration.json, read elsewhere) in `dir`.
  static Result<Catalog> load_dir(const std::string& dir);
  static Result<Catalog> parse(const std::string& hardware_json, const std::string& models_json);

  Result<const HardwareSpec*> hardware(const std::string& name) const;
  Result<const ModelSpec*> model(const std::string& name) const;
  const std::vector<HardwareSpec>& all_hardware() const { return hardware_; }
  const std::vector<ModelSpec>& all_models() const { return models_; }

 private:
  std::vector<HardwareSpec> hardware_;
  std::vector<ModelSpec> models_;
};

// The embedded data files (generated from data/catalog/ by src/sim/CMakeLists.txt).
const char* embedded_hardware_json();
const char* embedded_models_json();
const char* embedded_calibration_json();
const char* embedded_recipes_json();  // data/catalog/recipes.json: SGLang recipe flags per CONFIG_FILE

// An optional catalog file (calibration.json, recipes.json): `catalog_dir`/`name` when a directory
// is given and holds that file, else the embedded text (a directory may override only some files).
// `origin` names where the text came from, for error messages. Errors: the file is there but
// cannot be read (files::read_text_file's errors).
struct CatalogFile {
  std::string text;
  std::string origin;
};
Result<CatalogFile> optional_catalog_file(const std::string& catalog_dir, const std::string& name,
                                          const char* embedded);

}  // namespace ix::sim
