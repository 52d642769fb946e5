// Master configs (`*-master.yaml`; InferenceX keeps them in `configs/`) and `runners.yaml`
// as typed structs, with validation.
//
// Loading applies every rule of SPEC §1 and collects *all* problems of all files, each as a
// Diagnostic naming file:line:column, the config key, the field path and what was expected, so a
// user fixing a 10k-line YAML lands on the right line at once. Configs are only handed out when
// there are no diagnostics: callers never see a half-valid config.
//
// The structs keep what later stages (sweep, plan, run) need, including the document order of
// configs and of worker keys (the sweep output reproduces it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "config/yaml_tree.h"

namespace ix::config {

struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based
};

// One validation problem. Rendered as
//   "<file>:<line>:<column>: config '<key>': field '<field>': <message>"
// (the config and field parts are left out when empty).
struct Diagnostic {
  SourceLocation where;
  std::string config_key;
  std::string field;  // dotted path inside the config, e.g. scenarios.fixed-seq-len[0].isl
  std::string message;

  std::string to_string() const;
};

enum class SpecDecoding { kNone, kMtp, kDraftModel };
std::string_view spec_decoding_name(SpecDecoding value);  // "none", "mtp", "draft_model"

enum class KvOffloading { kNone, kDram };
std::string_view kv_offloading_name(KvOffloading value);  // "none", "dram"

// `router`, `kv-offload-backend`: {name, version?}. For router the version is required.
struct Component {
  std::string name;
  std::optional<std::string> version;
  bool version_first = false;  // written as {version, name}: the sweep output keeps that order
  bool operator==(const Component& other) const { return name == other.name && version == other.version; }
};

// Either a geometric range (start..end) or an explicit list, never both (validated).
struct Concurrency {
  bool is_list = false;
  int64_t start = 0;  // range form
  int64_t end = 0;
  std::vector<int64_t> list;  // list form, verbatim
};

// A multi-node worker (`prefill` / `decode`). `key_order` is the order the keys were written in;
// the sweep output reproduces it, then appends pp/dcp-size/pcp-size when they were omitted.
enum class WorkerKey { kNumWorker, kTp, kPp, kDcpSize, kPcpSize, kEp, kDpAttn, kHardware, kAdditionalSettings };
struct Worker {
  int64_t num_worker = 0;
  int64_t tp = 0;
  int64_t pp = 1;
  int64_t dcp_size = 1;
  int64_t pcp_size = 1;
  int64_t ep = 0;
  bool dp_attn = false;
  std::optional<std::string> hardware;
  std::vector<std::string> additional_settings;
  std::vector<WorkerKey> key_order;
};

// One search-space entry. Which fields are meaningful depends on the config (single- vs
// multi-node) and scenario (fixed-seq-len vs agentic-coding); validation enforces the schema.
struct SearchEntry {
  SourceLocation location;
  std::string path;  // inside its config, e.g. scenarios.agentic-coding[0].search-space[1]
  // Single-node topology.
  int64_t tp = 0;
  int64_t pp = 1;
  int64_t dcp_size = 1;
  int64_t pcp_size = 1;
  std::optional<int64_t> ep;
  std::optional<bool> dp_attn;
  // Multi-node topology.
  std::optional<Worker> prefill;
  std::optional<Worker> decode;
  SpecDecoding spec_decoding = SpecDecoding::kNone;
  std::optional<Component> router;
  std::optional<std::string> kv_p2p_transfer;
  Concurrency conc;
  // Agentic only. Single-node agentic entries always set kv_offloading.
  std::optional<KvOffloading> kv_offloading;
  std::optional<Component> kv_offload_backend;
};

struct FixedSeqLenScenario {
  int64_t isl = 0;
  int64_t osl = 0;
  std::vector<SearchEntry> search_space;
};

struct AgenticScenario {
  std::optional<double> dram_utilization;  // (0, 1]
  std::vector<SearchEntry> search_space;
};

struct MasterConfig {
  std::string key;
  SourceLocation location;
  std::string image;
  std::string model;
  std::string model_prefix;
  std::string precision;
  std::string framework;
  std::string runner;
  bool multinode = false;
  bool disagg = false;
  std::optional<Component> router;
  std::optional<std::string> kv_p2p_transfer;
  std::vector<FixedSeqLenScenario> fixed_seq_len;
  std::vector<AgenticScenario> agentic_coding;
};

// All configs of all files, in file order then document order (the sweep iterates in this order).
struct MasterConfigSet {
  std::vector<MasterConfig> configs;
  const MasterConfig* find(std::string_view key) const;
};

struct RunnerHardware {
  int64_t available_cpu_dram_mib = 0;
  int64_t gpus_per_node = 0;
};

struct RunnerConfig {
  std::string file;
  std::vector<std::pair<std::string, std::vector<std::string>>> labels;  // document order
  std::vector<std::pair<std::string, RunnerHardware>> hardware;
  const std::vector<std::string>* nodes(std::string_view label) const;
  const RunnerHardware* find_hardware(std::string_view label) const;
};

// Parses and validates master-config text as if read from `file_name` (used by tests and fuzzing).
// Appends problems to `diagnostics`; returns the configs that parsed (complete only when no
// diagnostics were added).
std::vector<MasterConfig> parse_master_configs(std::string_view text, std::string_view file_name,
                                               std::vector<Diagnostic>& diagnostics);
RunnerConfig parse_runner_config(std::string_view text, std::string_view file_name,
                                 std::vector<Diagnostic>& diagnostics);

// Cross-file and runner-dependent rules: a key defined in two files; agentic DRAM offloading needs
// hardware facts for the config's runner and a topology that fits one node.
void check_config_set(const std::vector<MasterConfig>& configs, const RunnerConfig* runners,
                      std::vector<Diagnostic>& diagnostics);

struct ValidationReport {
  MasterConfigSet configs;
  std::optional<RunnerConfig> runners;
  std::vector<Diagnostic> diagnostics;
  bool ok() const { return diagnostics.empty(); }
};

// Reads and validates the files. Missing or unreadable files are diagnostics too; the report is
// always complete (every file is checked even after the first one fails, and a key defined in two
// files is reported even when one of its definitions has problems of its own).
ValidationReport validate_files(std::span<const std::filesystem::path> config_files,
                                const std::filesystem::path* runner_file);

// For sweep/plan/run: the configs and runner facts, or one Error listing every diagnostic.
struct LoadedConfigs {
  MasterConfigSet configs;
  RunnerConfig runners;
};
Result<LoadedConfigs> load_configs(std::span<const std::filesystem::path> config_files,
                                   const std::filesystem::path& runner_file);

// Formats diagnostics one per line (no trailing newline).
std::string format_diagnostics(std::span<const Diagnostic> diagnostics);

}  // namespace ix::config
