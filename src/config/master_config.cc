#include "config/master_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <sstream>
#include <system_error>

#include "common/file_io.h"
#include "common/sanitize.h"

namespace ix::config {
namespace {

using Allowed = std::span<const std::string_view>;

std::string join(Allowed names) {
  std::string out;
  for (auto name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// Reports problems for one config (or the runner file) with its file and key filled in.
class Reporter {
 public:
  Reporter(std::string_view file, std::vector<Diagnostic>& out) : file_(file), out_(out) {}

  void set_key(std::string key) { key_ = std::move(key); }
  size_t count() const { return out_.size(); }

  void error(const Mark& mark, std::string field, std::string message) {
    out_.push_back(
        Diagnostic{SourceLocation{file_, mark.line, mark.column}, key_, std::move(field), std::move(message)});
  }

  SourceLocation location(const Mark& mark) const { return SourceLocation{file_, mark.line, mark.column}; }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::string key_;
  std::vector<Diagnostic>& out_;
};

std::string child_path(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return fmt::format("{}.{}", path, key);
}

// A mapping whose keys were checked against an allowed set. Lookups return the first occurrence
// (a duplicate is already reported).
class MapView {
 public:
  MapView(const YamlNode& node, std::string path, Reporter& reporter, std::initializer_list<std::string_view> allowed,
          std::string_view what)
      : MapView(node, std::move(path), reporter, Allowed(allowed.begin(), allowed.size()), what) {}

  MapView(const YamlNode& node, std::string path, Reporter& reporter, Allowed allowed, std::string_view what)
      : node_(node), path_(std::move(path)), reporter_(reporter) {
    if (!node.is_map()) {
      reporter.error(node.mark, path_,
                     fmt::format("expected {} (a mapping with keys {}), got {}", what, join(allowed), node.describe()));
      valid_ = false;
      return;
    }
    for (const auto& [key_node, value] : node.entries) {
      if (!key_node.is_scalar()) {
        reporter.error(key_node.mark, path_,
                       fmt::format("mapping keys must be plain names, got {}", key_node.describe()));
        continue;
      }
      const std::string& key = key_node.scalar;
      if (std::find(allowed.begin(), allowed.end(), std::string_view(key)) == allowed.end()) {
        reporter.error(
            key_node.mark, child_path(path_, key),
            fmt::format("unknown field '{}' in {}; allowed fields: {} (check the spelling)", key, what, join(allowed)));
        continue;
      }
      auto first = std::find_if(fields_.begin(), fields_.end(), [&](const auto& f) { return f.first == key; });
      if (first != fields_.end()) {
        reporter.error(key_node.mark, child_path(path_, key),
                       fmt::format("duplicate key '{}' (first defined at line {}, column {}); remove one of them", key,
                                   first->second.key_mark.line, first->second.key_mark.column));
        continue;
      }
      fields_.emplace_back(key, Field{key_node.mark, &value});
    }
  }

  bool valid() const { return valid_; }
  const YamlNode& node() const { return node_; }
  const std::string& path() const { return path_; }
  std::string path(std::string_view key) const { return child_path(path_, key); }

  const YamlNode* get(std::string_view key) const {
    for (const auto& [name, field] : fields_) {
      if (name == key) return field.value;
    }
    return nullptr;
  }
  bool has(std::string_view key) const { return get(key) != nullptr; }
  // Where a key is written (for "declared here" messages); the mapping itself when absent.
  Mark key_mark(std::string_view key) const {
    for (const auto& [name, field] : fields_) {
      if (name == key) return field.key_mark;
    }
    return node_.mark;
  }
  std::vector<std::string_view> keys() const {
    std::vector<std::string_view> out;
    for (const auto& [name, field] : fields_) out.push_back(name);
    return out;
  }

  void missing(std::string_view key, std::string_view expected) const {
    reporter_.error(node_.mark, path(key), fmt::format("missing required field '{}' ({})", key, expected));
  }

 private:
  struct Field {
    Mark key_mark;
    const YamlNode* value;
  };
  const YamlNode& node_;
  std::string path_;
  Reporter& reporter_;
  bool valid_ = true;
  std::vector<std::pair<std::string, Field>> fields_;
};

// Typed field readers. Each reports its own problem and returns nullopt on failure.
// Upper bounds far above any deployment, so sums and products of fields (GPUs = tp x pp x pcp,
// max-model-len = isl + osl + 256) cannot overflow into plausible-looking wrong values.
constexpr int64_t kMaxConfigInt = 1'000'000'000;
constexpr int64_t kMaxParallelism = 65'536;

std::optional<int64_t> read_int(const MapView& map, Reporter& reporter, std::string_view key, bool required,
                                int64_t min_value, std::string_view hint) {
  const bool parallelism = key == "tp" || key == "ep" || key == "pp" || key == "dcp-size" || key == "pcp-size" ||
                           key == "num-worker" || key == "gpus-per-node";
  const int64_t max_value = parallelism ? kMaxParallelism : kMaxConfigInt;
  const YamlNode* node = map.get(key);
  if (!node) {
    if (required) map.missing(key, fmt::format("an integer, e.g. `{}`", hint));
    return std::nullopt;
  }
  auto value = node->as_int();
  if (!value) {
    reporter.error(node->mark, map.path(key),
                   fmt::format("expected an integer >= {} (e.g. `{}`), got {}", min_value, hint, node->describe()));
    return std::nullopt;
  }
  if (*value < min_value) {
    reporter.error(node->mark, map.path(key),
                   fmt::format("expected an integer >= {} (e.g. `{}`), got {}", min_value, hint, *value));
    return std::nullopt;
  }
  if (*value > max_value) {
    reporter.error(node->mark, map.path(key),
                   fmt::format("expected an integer <= {} (e.g. `{}`), got {}", max_value, hint, *value));
    return std::nullopt;
  }
  return value;
}

std::optional<bool> read_bool(const MapView& map, Reporter& reporter, std::string_view key, bool required) {
  const YamlNode* node = map.get(key);
  if (!node) {
    if (required) map.missing(key, "true or false");
    return std::nullopt;
  }
  auto value = node->as_bool();
  if (!value) {
    reporter.error(node->mark, map.path(key), fmt::format("expected true or false, got {}", node->describe()));
  }
  return value;
}

std::optional<std::string> read_string(const MapView& map, Reporter& reporter, std::string_view key, bool required,
                                       std::string_view hint) {
  const YamlNode* node = map.get(key);
  if (!node) {
    if (required) map.missing(key, fmt::format("a string, e.g. `{}`", hint));
    return std::nullopt;
  }
  auto value = node->as_string();
  if (!value) {
    std::string fix = node->is_scalar() ? fmt::format(" (quote it: `{}: \"{}\"`)", key, node->scalar) : "";
    reporter.error(node->mark, map.path(key), fmt::format("expected a string, got {}{}", node->describe(), fix));
    return std::nullopt;
  }
  if (value->empty()) {
    reporter.error(node->mark, map.path(key), fmt::format("expected a non-empty string (e.g. `{}`)", hint));
    return std::nullopt;
  }
  return value;
}

// A list value; a present-but-null list counts as empty (PyYAML `key:` with nothing after it).
const YamlNode* read_list(const MapView& map, Reporter& reporter, std::string_view key, bool required,
                          std::string_view what) {
  const YamlNode* node = map.get(key);
  if (!node) {
    if (required) map.missing(key, fmt::format("a list of {}", what));
    return nullptr;
  }
  if (node->is_null()) return nullptr;
  if (!node->is_sequence()) {
    reporter.error(node->mark, map.path(key), fmt::format("expected a list of {}, got {}", what, node->describe()));
    return nullptr;
  }
  return node;
}

std::optional<Component> read_component(const MapView& parent, Reporter& reporter, std::string_view key,
                                        bool version_required) {
  const YamlNode* node = parent.get(key);
  if (!node) return std::nullopt;
  MapView map(*node, parent.path(key), reporter, {"name", "version"},
              version_required ? "a component {name, version}" : "a component {name, version?}");
  if (!map.valid()) return std::nullopt;
  Component component;
  size_t before = reporter.count();
  auto name = read_string(map, reporter, "name", true, "sglang-router");
  auto version = read_string(map, reporter, "version", version_required, "0.3.2");
  if (version && version->starts_with("image:")) {
    reporter.error(map.get("version")->mark, map.path("version"),
                   fmt::format("component version '{}' is an image reference; give the component's own release, "
                               "package version or source commit",
                               *version));
  }
  if (reporter.count() != before || !name) return std::nullopt;
  component.name = *name;
  component.version = version;
  auto keys = map.keys();
  component.version_first = !keys.empty() && keys.front() == "version";
  return component;
}

std::optional<SpecDecoding> read_spec_decoding(const MapView& map, Reporter& reporter) {
  const YamlNode* node = map.get("spec-decoding");
  if (!node) return SpecDecoding::kNone;
  auto text = node->as_string();
  if (text == "none") return SpecDecoding::kNone;
  if (text == "mtp") return SpecDecoding::kMtp;
  if (text == "draft_model") return SpecDecoding::kDraftModel;
  reporter.error(node->mark, map.path("spec-decoding"),
                 fmt::format("expected one of mtp, draft_model, none, got {}", node->describe()));
  return std::nullopt;
}

void read_concurrency(const MapView& map, Reporter& reporter, SearchEntry& entry) {
  bool has_start = map.has("conc-start");
  bool has_end = map.has("conc-end");
  bool has_list = map.has("conc-list");
  if (has_list && (has_start || has_end)) {
    reporter.error(map.key_mark("conc-list"), map.path("conc-list"),
                   "cannot specify both 'conc-list' and 'conc-start'/'conc-end'; use either a list or a range");
    return;
  }
  if (has_list) {
    const YamlNode& node = *map.get("conc-list");
    // read_list() reports a non-list; null (`conc-list:`) and [] are both "no concurrency".
    const YamlNode* list = read_list(map, reporter, "conc-list", true, "positive integers");
    if (!list || list->items.empty()) {
      if (node.is_null() || list) {
        reporter.error(node.mark, map.path("conc-list"),
                       "'conc-list' must hold at least one concurrency, e.g. `conc-list: [4, 8, 16]`");
      }
      return;
    }
    entry.conc.is_list = true;
    for (size_t index = 0; index < list->items.size(); ++index) {
      const YamlNode& item = list->items[index];
      auto value = item.as_int();
      if (!value || *value <= 0) {
        reporter.error(item.mark, fmt::format("{}[{}]", map.path("conc-list"), index),
                       fmt::format("'conc-list' entries must be integers > 0, got {}", item.describe()));
        continue;
      }
      if (*value > kMaxConfigInt) {
        reporter.error(item.mark, fmt::format("{}[{}]", map.path("conc-list"), index),
                       fmt::format("'conc-list' entries must be integers <= {} (e.g. `conc-list: [4, 8, 16]`), got {}",
                                   kMaxConfigInt, *value));
        continue;
      }
      entry.conc.list.push_back(*value);
    }
    return;
  }
  if (!has_start && !has_end) {
    reporter.error(map.node().mark, map.path(),
                   "missing concurrency: give either 'conc-list' (e.g. `conc-list: [4, 8]`) or both 'conc-start' "
                   "and 'conc-end' (e.g. `conc-start: 4, conc-end: 64`)");
    return;
  }
  if (has_start != has_end) {
    std::string_view missing = has_start ? "conc-end" : "conc-start";
    map.missing(missing, "'conc-start' and 'conc-end' must be given together");
    return;
  }
  auto start = read_int(map, reporter, "conc-start", true, 1, "conc-start: 4");
  auto end = read_int(map, reporter, "conc-end", true, 1, "conc-end: 64");
  if (!start || !end) return;
  if (*start > *end) {
    reporter.error(
        map.get("conc-start")->mark, map.path("conc-start"),
        fmt::format("'conc-start' ({}) must be <= 'conc-end' ({}); swap them or fix the range", *start, *end));
    return;
  }
  entry.conc.start = *start;
  entry.conc.end = *end;
}

void check_tp_dcp(const MapView& map, Reporter& reporter, int64_t tp, int64_t dcp) {
  if (tp > 0 && dcp > 0 && tp % dcp != 0) {
    reporter.error(
        map.get("dcp-size") ? map.get("dcp-size")->mark : map.node().mark, map.path("dcp-size"),
        fmt::format("'tp' ({}) must be divisible by 'dcp-size' ({}); pick a dcp-size that divides tp", tp, dcp));
  }
}

std::optional<Worker> read_worker(const MapView& parent, Reporter& reporter, std::string_view key) {
  const YamlNode* node = parent.get(key);
  if (!node) return std::nullopt;
  MapView map(*node, parent.path(key), reporter,
              {"num-worker", "tp", "pp", "dcp-size", "pcp-size", "ep", "dp-attn", "hardware", "additional-settings"},
              "a worker");
  if (!map.valid()) return std::nullopt;
  Worker worker;
  for (auto name : map.keys()) {
    static constexpr std::pair<std::string_view, WorkerKey> kKeys[] = {
        {"num-worker", WorkerKey::kNumWorker},
        {"tp", WorkerKey::kTp},
        {"pp", WorkerKey::kPp},
        {"dcp-size", WorkerKey::kDcpSize},
        {"pcp-size", WorkerKey::kPcpSize},
        {"ep", WorkerKey::kEp},
        {"dp-attn", WorkerKey::kDpAttn},
        {"hardware", WorkerKey::kHardware},
        {"additional-settings", WorkerKey::kAdditionalSettings}};
    for (const auto& [text, id] : kKeys) {
      if (text == name) worker.key_order.push_back(id);
    }
  }
  size_t before = reporter.count();
  auto num_worker = read_int(map, reporter, "num-worker", true, 0, "num-worker: 1");
  auto tp = read_int(map, reporter, "tp", true, 1, "tp: 8");
  auto pp = read_int(map, reporter, "pp", false, 1, "pp: 1");
  auto dcp = read_int(map, reporter, "dcp-size", false, 1, "dcp-size: 1");
  auto pcp = read_int(map, reporter, "pcp-size", false, 1, "pcp-size: 1");
  auto ep = read_int(map, reporter, "ep", true, 1, "ep: 1");
  auto dp_attn = read_bool(map, reporter, "dp-attn", true);
  auto hardware = read_string(map, reporter, "hardware", false, "gb200-nv");
  if (const YamlNode* list = read_list(map, reporter, "additional-settings", false, "strings")) {
    for (size_t index = 0; index < list->items.size(); ++index) {
      auto text = list->items[index].as_string();
      if (!text) {
        reporter.error(list->items[index].mark, fmt::format("{}[{}]", map.path("additional-settings"), index),
                       fmt::format("expected a string such as \"KEY=value\", got {}", list->items[index].describe()));
        continue;
      }
      worker.additional_settings.push_back(*text);
    }
  } else if (map.has("additional-settings") && map.get("additional-settings")->is_null()) {
    reporter.error(map.get("additional-settings")->mark, map.path("additional-settings"),
                   "expected a list of strings; write `additional-settings: []` or remove the key");
  }
  if (tp && dcp) check_tp_dcp(map, reporter, *tp, *dcp);
  if (reporter.count() != before) return std::nullopt;
  worker.num_worker = *num_worker;
  worker.tp = *tp;
  worker.pp = pp.value_or(1);
  worker.dcp_size = dcp.value_or(1);
  worker.pcp_size = pcp.value_or(1);
  worker.ep = *ep;
  worker.dp_attn = *dp_attn;
  worker.hardware = hardware;
  return worker;
}

enum class EntryKind { kSingleFixed, kMultiFixed, kSingleAgentic, kMultiAgentic };

constexpr std::string_view kSingleFixedKeys[] = {"tp",         "pp",       "dcp-size",      "pcp-size",
                                                 "ep",         "dp-attn",  "spec-decoding", "router",
                                                 "conc-start", "conc-end", "conc-list"};
constexpr std::string_view kMultiFixedKeys[] = {"spec-decoding",   "prefill",    "decode",   "router",
                                                "kv-p2p-transfer", "conc-start", "conc-end", "conc-list"};
constexpr std::string_view kSingleAgenticKeys[] = {"tp",
                                                   "pp",
                                                   "dcp-size",
                                                   "pcp-size",
                                                   "ep",
                                                   "dp-attn",
                                                   "spec-decoding",
                                                   "kv-offloading",
                                                   "kv-offload-backend",
                                                   "router",
                                                   "conc-start",
                                                   "conc-end",
                                                   "conc-list"};
constexpr std::string_view kMultiAgenticKeys[] = {"spec-decoding",      "prefill",  "decode",          "kv-offloading",
                                                  "kv-offload-backend", "router",   "kv-p2p-transfer", "conc-start",
                                                  "conc-end",           "conc-list"};

Allowed allowed_entry_keys(EntryKind kind) {
  switch (kind) {
    case EntryKind::kSingleFixed: return kSingleFixedKeys;
    case EntryKind::kMultiFixed: return kMultiFixedKeys;
    case EntryKind::kSingleAgentic: return kSingleAgenticKeys;
    case EntryKind::kMultiAgentic: return kMultiAgenticKeys;
  }
  return {};
}

std::string_view entry_description(EntryKind kind) {
  switch (kind) {
    case EntryKind::kSingleFixed: return "a single-node fixed-seq-len search-space entry";
    case EntryKind::kMultiFixed: return "a multi-node fixed-seq-len search-space entry";
    case EntryKind::kSingleAgentic: return "a single-node agentic-coding search-space entry";
    case EntryKind::kMultiAgentic: return "a multi-node agentic-coding search-space entry";
  }
  return "";
}

// Explains the most common schema mix-ups better than "unknown field".
void explain_misplaced_keys(const YamlNode& node, const std::string& path, EntryKind kind, Reporter& reporter) {
  if (!node.is_map()) return;
  bool multi = kind == EntryKind::kMultiFixed || kind == EntryKind::kMultiAgentic;
  for (const auto& [key, value] : node.entries) {
    if (!key.is_scalar()) continue;
    const std::string& name = key.scalar;
    if (!multi && (name == "prefill" || name == "decode")) {
      reporter.error(key.mark, child_path(path, name),
                     fmt::format("'{}' is only valid in multinode configs; this config has `multinode: false` "
                                 "(set `multinode: true` or describe the topology with tp)",
                                 name));
    } else if (!multi && name == "kv-p2p-transfer") {
      reporter.error(key.mark, child_path(path, name),
                     "'kv-p2p-transfer' is only valid when `multinode: true`; remove it from this single-node config");
    } else if (multi && (name == "tp" || name == "pp" || name == "dcp-size" || name == "pcp-size" || name == "ep" ||
                         name == "dp-attn")) {
      reporter.error(key.mark, child_path(path, name),
                     fmt::format("'{}' is not valid in a multinode search-space entry; set it inside 'prefill' and "
                                 "'decode'",
                                 name));
    }
  }
}

bool is_misplaced(std::string_view name, EntryKind kind) {
  bool multi = kind == EntryKind::kMultiFixed || kind == EntryKind::kMultiAgentic;
  if (!multi) return name == "prefill" || name == "decode" || name == "kv-p2p-transfer";
  return name == "tp" || name == "pp" || name == "dcp-size" || name == "pcp-size" || name == "ep" || name == "dp-attn";
}

std::optional<SearchEntry> read_entry(const YamlNode& node, const std::string& path, EntryKind kind,
                                      Reporter& reporter) {
  // Misplaced keys get a specific message; hide them from the generic unknown-key check.
  YamlNode filtered;
  const YamlNode* source = &node;
  if (node.is_map()) {
    explain_misplaced_keys(node, path, kind, reporter);
    filtered.kind = YamlKind::kMap;
    filtered.mark = node.mark;
    for (const auto& entry : node.entries) {
      if (entry.first.is_scalar() && is_misplaced(entry.first.scalar, kind)) continue;
      filtered.entries.push_back(entry);
    }
    source = &filtered;
  }
  size_t before = reporter.count();
  MapView map(*source, path, reporter, allowed_entry_keys(kind), entry_description(kind));
  if (!map.valid()) return std::nullopt;
  SearchEntry entry;
  entry.location = reporter.location(node.mark);
  entry.path = path;
  bool multi = kind == EntryKind::kMultiFixed || kind == EntryKind::kMultiAgentic;
  bool agentic = kind == EntryKind::kSingleAgentic || kind == EntryKind::kMultiAgentic;
  if (auto spec = read_spec_decoding(map, reporter)) entry.spec_decoding = *spec;
  entry.router = read_component(map, reporter, "router", true);
  if (multi) {
    entry.prefill = read_worker(map, reporter, "prefill");
    entry.decode = read_worker(map, reporter, "decode");
    if (!map.has("prefill") || !map.has("decode")) {
      reporter.error(node.mark, path,
                     "multinode search-space entries must specify both 'prefill' and 'decode' workers");
    }
    if (entry.prefill && entry.decode && entry.prefill->hardware.has_value() != entry.decode->hardware.has_value()) {
      reporter.error(node.mark, map.path("decode.hardware"),
                     "'hardware' must be specified for both 'prefill' and 'decode', or neither");
    }
    entry.kv_p2p_transfer = read_string(map, reporter, "kv-p2p-transfer", false, "nixl");
  } else {
    auto tp = read_int(map, reporter, "tp", true, 1, "tp: 8");
    auto pp = read_int(map, reporter, "pp", false, 1, "pp: 1");
    auto dcp = read_int(map, reporter, "dcp-size", false, 1, "dcp-size: 1");
    auto pcp = read_int(map, reporter, "pcp-size", false, 1, "pcp-size: 1");
    entry.ep = read_int(map, reporter, "ep", false, 1, "ep: 8");
    entry.dp_attn = read_bool(map, reporter, "dp-attn", false);
    if (tp && dcp) check_tp_dcp(map, reporter, *tp, *dcp);
    entry.tp = tp.value_or(0);
    entry.pp = pp.value_or(1);
    entry.dcp_size = dcp.value_or(1);
    entry.pcp_size = pcp.value_or(1);
  }
  if (agentic) {
    if (const YamlNode* offload = map.get("kv-offloading")) {
      auto text = offload->as_string();
      if (text == "none") {
        entry.kv_offloading = KvOffloading::kNone;
      } else if (text == "dram") {
        entry.kv_offloading = KvOffloading::kDram;
      } else {
        reporter.error(offload->mark, map.path("kv-offloading"),
                       fmt::format("expected one of none, dram, got {}", offload->describe()));
      }
    } else if (!multi) {
      map.missing("kv-offloading", "single-node agentic entries must say `kv-offloading: none` or `dram`");
    }
    entry.kv_offload_backend = read_component(map, reporter, "kv-offload-backend", false);
    if (map.has("kv-offload-backend") && map.has("kv-offloading")) {
      if (entry.kv_offloading == KvOffloading::kNone) {
        reporter.error(map.key_mark("kv-offload-backend"), map.path("kv-offload-backend"),
                       "'kv-offload-backend' can only be set when 'kv-offloading' is not 'none'; remove it or set "
                       "`kv-offloading: dram`");
      }
    } else if (map.has("kv-offload-backend")) {
      reporter.error(map.key_mark("kv-offload-backend"), map.path("kv-offload-backend"),
                     "'kv-offload-backend' requires 'kv-offloading' (e.g. `kv-offloading: dram`)");
    } else if (entry.kv_offloading == KvOffloading::kDram) {
      map.missing("kv-offload-backend",
                  "required when 'kv-offloading' is 'dram', e.g. `kv-offload-backend: { name: hicache }`");
    }
  }
  read_concurrency(map, reporter, entry);
  if (reporter.count() != before) return std::nullopt;
  return entry;
}

void read_fixed_scenarios(const MapView& scenarios, Reporter& reporter, bool multinode, MasterConfig& config) {
  const YamlNode* list = read_list(scenarios, reporter, "fixed-seq-len", false, "{isl, osl, search-space} entries");
  if (!list) return;
  for (size_t index = 0; index < list->items.size(); ++index) {
    std::string path = fmt::format("{}[{}]", scenarios.path("fixed-seq-len"), index);
    MapView map(list->items[index], path, reporter, {"isl", "osl", "search-space"}, "a fixed-seq-len scenario");
    if (!map.valid()) continue;
    FixedSeqLenScenario scenario;
    auto isl = read_int(map, reporter, "isl", true, 1, "isl: 8192");
    auto osl = read_int(map, reporter, "osl", true, 1, "osl: 1024");
    scenario.isl = isl.value_or(0);
    scenario.osl = osl.value_or(0);
    if (const YamlNode* space = read_list(map, reporter, "search-space", true, "search-space entries")) {
      for (size_t entry_index = 0; entry_index < space->items.size(); ++entry_index) {
        auto entry = read_entry(space->items[entry_index], fmt::format("{}[{}]", map.path("search-space"), entry_index),
                                multinode ? EntryKind::kMultiFixed : EntryKind::kSingleFixed, reporter);
        if (entry) scenario.search_space.push_back(std::move(*entry));
      }
    }
    config.fixed_seq_len.push_back(std::move(scenario));
  }
}

void read_agentic_scenarios(const MapView& scenarios, Reporter& reporter, bool multinode, MasterConfig& config) {
  const YamlNode* list =
      read_list(scenarios, reporter, "agentic-coding", false, "{search-space, dram-utilization?} entries");
  if (!list) return;
  for (size_t index = 0; index < list->items.size(); ++index) {
    std::string path = fmt::format("{}[{}]", scenarios.path("agentic-coding"), index);
    MapView map(list->items[index], path, reporter, {"search-space", "dram-utilization"}, "an agentic-coding scenario");
    if (!map.valid()) continue;
    AgenticScenario scenario;
    if (const YamlNode* util = map.get("dram-utilization")) {
      auto value = util->as_float();
      if (!value || !(*value > 0.0 && *value <= 1.0)) {
        reporter.error(
            util->mark, map.path("dram-utilization"),
            fmt::format("expected a fraction in (0, 1] (e.g. `dram-utilization: 0.80`), got {}", util->describe()));
      } else {
        scenario.dram_utilization = *value;
      }
    }
    if (const YamlNode* space = read_list(map, reporter, "search-space", true, "search-space entries")) {
      for (size_t entry_index = 0; entry_index < space->items.size(); ++entry_index) {
        const YamlNode& item = space->items[entry_index];
        std::string entry_path = fmt::format("{}[{}]", map.path("search-space"), entry_index);
        auto entry =
            read_entry(item, entry_path, multinode ? EntryKind::kMultiAgentic : EntryKind::kSingleAgentic, reporter);
        if (!entry) continue;
        if (entry->kv_offloading == KvOffloading::kDram && !map.has("dram-utilization")) {
          reporter.error(item.mark, child_path(entry_path, "kv-offloading"),
                         "`kv-offloading: dram` requires 'dram-utilization' on this agentic-coding scenario "
                         "(e.g. `dram-utilization: 0.80`)");
        }
        scenario.search_space.push_back(std::move(*entry));
      }
    }
    config.agentic_coding.push_back(std::move(scenario));
  }
}

// Cross-field rules of one config (SPEC §1 "Cross-field").
void check_component_scope(const MapView& top, const MasterConfig& config, Reporter& reporter) {
  std::vector<const SearchEntry*> entries;
  for (const auto& scenario : config.fixed_seq_len) {
    for (const auto& entry : scenario.search_space) entries.push_back(&entry);
  }
  for (const auto& scenario : config.agentic_coding) {
    for (const auto& entry : scenario.search_space) entries.push_back(&entry);
  }
  for (const auto* entry : entries) {
    if (config.router && entry->router) {
      reporter.error(Mark{entry->location.line, entry->location.column}, child_path(entry->path, "router"),
                     fmt::format("'router' is declared at the top level (line {}) and in this search-space entry; "
                                 "declare it in one place only",
                                 top.key_mark("router").line));
    }
    if (config.kv_p2p_transfer && entry->kv_p2p_transfer) {
      reporter.error(Mark{entry->location.line, entry->location.column}, child_path(entry->path, "kv-p2p-transfer"),
                     fmt::format("'kv-p2p-transfer' is declared at the top level (line {}) and in this search-space "
                                 "entry; declare it in one place only",
                                 top.key_mark("kv-p2p-transfer").line));
    }
  }
  if (config.disagg && config.multinode && !config.kv_p2p_transfer) {
    bool any_missing = false;
    for (const auto* entry : entries) {
      if (!entry->kv_p2p_transfer) {
        any_missing = true;
        reporter.error(Mark{entry->location.line, entry->location.column}, child_path(entry->path, "kv-p2p-transfer"),
                       "`disagg: true` requires 'kv-p2p-transfer' at the top level or in every search-space entry; "
                       "this entry has none (e.g. `kv-p2p-transfer: nixl`)");
      }
    }
    if (entries.empty() && !any_missing) {
      reporter.error(top.key_mark("disagg"), "kv-p2p-transfer",
                     "`disagg: true` requires 'kv-p2p-transfer' (e.g. `kv-p2p-transfer: nixl`)");
    }
  }
}

std::optional<MasterConfig> read_config(const YamlNode& key_node, const YamlNode& value, Reporter& reporter) {
  MasterConfig config;
  config.key = key_node.scalar;
  config.location = reporter.location(key_node.mark);
  reporter.set_key(config.key);
  size_t before = reporter.count();
  if (config.key.find('*') != std::string::npos) {
    reporter.error(key_node.mark, "",
                   "config keys may not contain '*' (it is reserved for --config-keys globs); rename the config");
  }
  MapView top(value, "", reporter,
              {"image", "model", "model-prefix", "precision", "framework", "runner", "multinode", "disagg", "router",
               "kv-p2p-transfer", "scenarios"},
              "a master config");
  if (!top.valid()) return std::nullopt;
  config.image = read_string(top, reporter, "image", true, "vllm/vllm-openai:v0.10.0").value_or("");
  config.model = read_string(top, reporter, "model", true, "deepseek-ai/DeepSeek-R1").value_or("");
  config.model_prefix = read_string(top, reporter, "model-prefix", true, "dsr1").value_or("");
  config.precision = read_string(top, reporter, "precision", true, "fp8").value_or("");
  config.framework = read_string(top, reporter, "framework", true, "vllm").value_or("");
  config.runner = read_string(top, reporter, "runner", true, "h200").value_or("");
  auto multinode = read_bool(top, reporter, "multinode", true);
  config.multinode = multinode.value_or(false);
  auto disagg = read_bool(top, reporter, "disagg", false);
  config.disagg = disagg.value_or(false);
  if (config.disagg && multinode && !config.multinode) {
    reporter.error(top.get("disagg")->mark, "disagg",
                   "`disagg: true` is only valid with `multinode: true`; remove it or make the config multinode");
  }
  config.router = read_component(top, reporter, "router", true);
  if (top.has("kv-p2p-transfer") && !config.multinode) {
    reporter.error(top.key_mark("kv-p2p-transfer"), "kv-p2p-transfer",
                   "'kv-p2p-transfer' is only valid when `multinode: true`; remove it from this single-node config");
  } else {
    config.kv_p2p_transfer = read_string(top, reporter, "kv-p2p-transfer", false, "nixl");
  }
  if (const YamlNode* scenarios_node = top.get("scenarios")) {
    MapView scenarios(*scenarios_node, "scenarios", reporter, {"fixed-seq-len", "agentic-coding"},
                      "the scenarios mapping");
    if (scenarios.valid()) {
      if (multinode) {
        read_fixed_scenarios(scenarios, reporter, config.multinode, config);
        read_agentic_scenarios(scenarios, reporter, config.multinode, config);
      }
      const YamlNode* fixed = scenarios.get("fixed-seq-len");
      const YamlNode* agentic = scenarios.get("agentic-coding");
      bool has_fixed = fixed && fixed->is_sequence() && !fixed->items.empty();
      bool has_agentic = agentic && agentic->is_sequence() && !agentic->items.empty();
      if (!has_fixed && !has_agentic) {
        reporter.error(scenarios_node->mark, "scenarios",
                       "at least one scenario type must be specified: a non-empty 'fixed-seq-len' or "
                       "'agentic-coding' list");
      }
      if (has_agentic && !config.runner.empty() && !config.runner.starts_with("cluster:")) {
        reporter.error(top.get("runner")->mark, "runner",
                       fmt::format("agentic-coding configs must use a 'cluster:<name>' runner so every point runs on "
                                   "one exact hardware fleet; got '{}'",
                                   config.runner));
      }
    }
  } else {
    top.missing("scenarios", "a mapping with 'fixed-seq-len' and/or 'agentic-coding'");
  }
  check_component_scope(top, config, reporter);
  if (reporter.count() != before) return std::nullopt;
  return config;
}

// Where a config key is defined, whether or not its config is valid: a key defined in two files is
// a problem of its own, reported beside whatever else is wrong with either definition.
struct KeyDefinition {
  std::string key;
  SourceLocation location;
};

void check_unique_keys(std::span<const KeyDefinition> definitions, std::vector<Diagnostic>& diagnostics) {
  std::unordered_map<std::string_view, const KeyDefinition*> seen;
  for (const auto& definition : definitions) {
    auto [it, inserted] = seen.emplace(definition.key, &definition);
    if (inserted) continue;
    const SourceLocation& first = it->second->location;
    diagnostics.push_back(
        Diagnostic{definition.location, definition.key, "",
                   fmt::format("config key '{}' is already defined in {}:{}:{}; config keys must be unique across all "
                               "--config-files",
                               definition.key, first.file, first.line, first.column)});
  }
}

Diagnostic file_diagnostic(const std::string& file, const Error& error) {
  // parse_yaml() messages already start with "file:line:col: "; keep them as the message only.
  std::string message = error.message();
  Diagnostic diagnostic;
  diagnostic.where.file = file;
  if (message.starts_with(file + ":")) {
    std::string rest = message.substr(file.size() + 1);
    int line = 0;
    int column = 0;
    if (std::sscanf(rest.c_str(), "%d:%d:", &line, &column) == 2) {
      diagnostic.where.line = line;
      diagnostic.where.column = column;
      size_t second = rest.find(':', rest.find(':') + 1);
      message = rest.substr(second + 2);
    } else {
      message = rest.starts_with(" ") ? rest.substr(1) : rest;
    }
  }
  diagnostic.message = message;
  return diagnostic;
}

}  // namespace

// One line per diagnostic: keys, fields and values come from the file and may hold anything (a key
// "\x1b[31m...\nfake.yaml:1:1: ..." printed a forged diagnostic line).
std::string Diagnostic::to_string() const {
  std::string out = printable(where.file);
  if (where.line > 0) out += fmt::format(":{}:{}", where.line, where.column);
  out += ": ";
  if (!config_key.empty()) out += fmt::format("config '{}': ", printable(config_key));
  if (!field.empty()) out += fmt::format("field '{}': ", printable(field));
  out += printable(message);
  return out;
}

std::string_view spec_decoding_name(SpecDecoding value) {
  switch (value) {
    case SpecDecoding::kNone: return "none";
    case SpecDecoding::kMtp: return "mtp";
    case SpecDecoding::kDraftModel: return "draft_model";
  }
  return "none";
}

std::string_view kv_offloading_name(KvOffloading value) {
  return value == KvOffloading::kDram ? "dram" : "none";
}

const MasterConfig* MasterConfigSet::find(std::string_view key) const {
  for (const auto& config : configs) {
    if (config.key == key) return &config;
  }
  return nullptr;
}

const std::vector<std::string>* RunnerConfig::nodes(std::string_view label) const {
  for (const auto& [name, nodes] : labels) {
    if (name == label) return &nodes;
  }
  return nullptr;
}

const RunnerHardware* RunnerConfig::find_hardware(std::string_view label) const {
  for (const auto& [name, facts] : hardware) {
    if (name == label) return &facts;
  }
  return nullptr;
}

namespace {

// parse_master_configs(), also appending the first definition of every config key of the file to
// `definitions` (when given), valid or not.
std::vector<MasterConfig> parse_master_file(std::string_view text, std::string_view file_name,
                                            std::vector<Diagnostic>& diagnostics,
                                            std::vector<KeyDefinition>* definitions) {
  std::vector<MasterConfig> configs;
  auto document = parse_yaml(text, file_name);
  if (!document) {
    diagnostics.push_back(file_diagnostic(std::string(file_name), document.error()));
    return configs;
  }
  Reporter reporter(file_name, diagnostics);
  if (!document->is_map()) {
    reporter.error(
        document->mark, "",
        fmt::format("a master config file must be a mapping of config keys to configs, got {}", document->describe()));
    return configs;
  }
  std::unordered_map<std::string, Mark> seen;
  for (const auto& [key, value] : document->entries) {
    reporter.set_key("");
    if (!key.is_scalar() || key.scalar.empty()) {
      reporter.error(key.mark, "", fmt::format("config keys must be plain names, got {}", key.describe()));
      continue;
    }
    auto [it, inserted] = seen.emplace(key.scalar, key.mark);
    if (!inserted) {
      reporter.set_key(key.scalar);
      reporter.error(key.mark, "",
                     fmt::format("duplicate config key '{}' (first defined at line {}, column {}); config keys must be "
                                 "unique",
                                 key.scalar, it->second.line, it->second.column));
      continue;
    }
    if (definitions) definitions->push_back(KeyDefinition{key.scalar, reporter.location(key.mark)});
    if (auto config = read_config(key, value, reporter)) configs.push_back(std::move(*config));
  }
  return configs;
}

}  // namespace

std::vector<MasterConfig> parse_master_configs(std::string_view text, std::string_view file_name,
                                               std::vector<Diagnostic>& diagnostics) {
  return parse_master_file(text, file_name, diagnostics, nullptr);
}

RunnerConfig parse_runner_config(std::string_view text, std::string_view file_name,
                                 std::vector<Diagnostic>& diagnostics) {
  RunnerConfig runners;
  runners.file = std::string(file_name);
  auto document = parse_yaml(text, file_name);
  if (!document) {
    diagnostics.push_back(file_diagnostic(std::string(file_name), document.error()));
    return runners;
  }
  Reporter reporter(file_name, diagnostics);
  MapView top(*document, "", reporter, {"labels", "hardware"}, "a runner config");
  if (!top.valid()) return runners;
  if (const YamlNode* labels_node = top.get("labels")) {
    if (!labels_node->is_map()) {
      reporter.error(
          labels_node->mark, "labels",
          fmt::format("expected a mapping of runner labels to lists of runner names, got {}", labels_node->describe()));
    } else {
      std::unordered_map<std::string, Mark> seen;
      for (const auto& [key, value] : labels_node->entries) {
        std::string path = child_path("labels", key.scalar);
        if (!seen.emplace(key.scalar, key.mark).second) {
          reporter.error(key.mark, path, fmt::format("duplicate runner label '{}'; remove one of them", key.scalar));
          continue;
        }
        if (!value.is_sequence() || value.items.empty()) {
          reporter.error(value.mark, path,
                         fmt::format("runner label '{}' must be a non-empty list of runner names, got {}", key.scalar,
                                     value.describe()));
          continue;
        }
        std::vector<std::string> nodes;
        for (size_t index = 0; index < value.items.size(); ++index) {
          auto name = value.items[index].as_string();
          if (!name) {
            reporter.error(value.items[index].mark, fmt::format("{}[{}]", path, index),
                           fmt::format("expected a runner name (string), got {}", value.items[index].describe()));
            continue;
          }
          nodes.push_back(*name);
        }
        runners.labels.emplace_back(key.scalar, std::move(nodes));
      }
    }
  } else {
    top.missing("labels", "a mapping of runner labels to lists of runner names");
  }
  if (const YamlNode* hardware_node = top.get("hardware")) {
    if (!hardware_node->is_map()) {
      reporter.error(hardware_node->mark, "hardware",
                     fmt::format("expected a mapping of labels to {{available-cpu-dram-mib, gpus-per-node}}, got {}",
                                 hardware_node->describe()));
    } else {
      std::unordered_map<std::string, Mark> seen;
      for (const auto& [key, value] : hardware_node->entries) {
        if (!seen.emplace(key.scalar, key.mark).second) {
          reporter.error(key.mark, child_path("hardware", key.scalar),
                         fmt::format("duplicate hardware label '{}'; remove one of them", key.scalar));
          continue;
        }
        MapView facts(value, child_path("hardware", key.scalar), reporter, {"available-cpu-dram-mib", "gpus-per-node"},
                      "runner hardware facts");
        if (!facts.valid()) continue;
        auto dram = read_int(facts, reporter, "available-cpu-dram-mib", true, 1, "available-cpu-dram-mib: 3_095_781");
        auto gpus = read_int(facts, reporter, "gpus-per-node", true, 1, "gpus-per-node: 8");
        if (dram && gpus) runners.hardware.emplace_back(key.scalar, RunnerHardware{*dram, *gpus});
      }
    }
  }
  return runners;
}

namespace {

// The runner-dependent rules of check_config_set().
void check_runner_facts(const std::vector<MasterConfig>& configs, const RunnerConfig& runners,
                        std::vector<Diagnostic>& diagnostics) {
  for (const auto& config : configs) {
    for (const auto& scenario : config.agentic_coding) {
      for (const auto& entry : scenario.search_space) {
        if (entry.kv_offloading != KvOffloading::kDram) continue;
        const RunnerHardware* facts = runners.find_hardware(config.runner);
        if (!facts) {
          diagnostics.push_back(
              Diagnostic{entry.location, config.key, child_path(entry.path, "kv-offloading"),
                         fmt::format("`kv-offloading: dram` needs hardware facts for runner '{}': add `hardware: {{{}: "
                                     "{{available-cpu-dram-mib: N, gpus-per-node: N}}}}` to {}",
                                     config.runner, config.runner, runners.file)});
          continue;
        }
        if (!config.multinode) {
          int64_t gpus = entry.tp * entry.pp * entry.pcp_size;
          if (gpus > facts->gpus_per_node) {
            diagnostics.push_back(Diagnostic{
                entry.location, config.key, child_path(entry.path, "tp"),
                fmt::format("tp={} with pp={} and pcp-size={} requires {} GPUs and exceeds gpus-per-node={} for "
                            "runner '{}'; a DRAM-offloading entry must fit one node",
                            entry.tp, entry.pp, entry.pcp_size, gpus, facts->gpus_per_node, config.runner)});
          }
        } else if (entry.prefill) {
          int64_t gpus = entry.prefill->tp * entry.prefill->pp * entry.prefill->pcp_size;
          int64_t per_node = facts->gpus_per_node;
          bool ok = gpus > per_node ? gpus % per_node == 0 : per_node % gpus == 0;
          if (!ok) {
            diagnostics.push_back(Diagnostic{
                entry.location, config.key, child_path(entry.path, "prefill.tp"),
                fmt::format("prefill worker tp*pp*pcp-size={} must divide gpus-per-node={} (or be a multiple of it) "
                            "for runner '{}'",
                            gpus, per_node, config.runner)});
          }
        }
      }
    }
  }
}

}  // namespace

void check_config_set(const std::vector<MasterConfig>& configs, const RunnerConfig* runners,
                      std::vector<Diagnostic>& diagnostics) {
  std::vector<KeyDefinition> definitions;
  definitions.reserve(configs.size());
  for (const auto& config : configs) definitions.push_back(KeyDefinition{config.key, config.location});
  check_unique_keys(definitions, diagnostics);
  if (runners) check_runner_facts(configs, *runners, diagnostics);
}

ValidationReport validate_files(std::span<const std::filesystem::path> config_files,
                                const std::filesystem::path* runner_file) {
  ValidationReport report;
  std::vector<MasterConfig> all;
  std::vector<KeyDefinition> definitions;                           // every file's keys, valid configs or not
  std::vector<std::pair<std::filesystem::path, std::string>> seen;  // canonical path, as given
  for (const auto& path : config_files) {
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(path, ec);
    if (!ec) {
      auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == canonical; });
      if (it != seen.end()) {
        // Every key of the file would be reported as defined twice, pointing at itself.
        Diagnostic d;
        d.where.file = path.string();
        d.message = fmt::format("listed twice in --config-files (also as '{}'); give each file once", it->second);
        report.diagnostics.push_back(std::move(d));
        continue;
      }
      seen.emplace_back(canonical, path.string());
    }
    auto text = files::read_text_file(path, files::kMaxConfigFileBytes, "a master config YAML file");
    if (!text) {
      report.diagnostics.push_back(file_diagnostic(path.string(), text.error()));
      continue;
    }
    auto configs = parse_master_file(*text, path.string(), report.diagnostics, &definitions);
    for (auto& config : configs) all.push_back(std::move(config));
  }
  if (runner_file) {
    auto text = files::read_text_file(*runner_file, files::kMaxConfigFileBytes, "a runner config YAML file");
    if (!text) {
      Diagnostic diagnostic = file_diagnostic(runner_file->string(), text.error());
      if (text.error().code() == ErrorCode::kNotFound) {
        diagnostic.message +=
            "; pass --runner-config PATH, or run from the root of an InferenceX checkout (it keeps the file at "
            "configs/runners.yaml)";
      }
      report.diagnostics.push_back(std::move(diagnostic));
    } else {
      report.runners = parse_runner_config(*text, runner_file->string(), report.diagnostics);
    }
  }
  // Keys are compared over every definition, so a key defined twice is reported even when one of
  // the definitions has problems of its own (check_config_set sees only the valid configs).
  check_unique_keys(definitions, report.diagnostics);
  if (report.runners) check_runner_facts(all, *report.runners, report.diagnostics);
  report.configs.configs = std::move(all);
  return report;
}

Result<LoadedConfigs> load_configs(std::span<const std::filesystem::path> config_files,
                                   const std::filesystem::path& runner_file) {
  auto report = validate_files(config_files, &runner_file);
  if (!report.ok()) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("{} problem(s) in the configs:\n{}", report.diagnostics.size(),
                                                         format_diagnostics(report.diagnostics)));
  }
  return LoadedConfigs{std::move(report.configs), std::move(*report.runners)};
}

std::string format_diagnostics(std::span<const Diagnostic> diagnostics) {
  std::string out;
  for (const auto& diagnostic : diagnostics) {
    if (!out.empty()) out += '\n';
    out += diagnostic.to_string();
  }
  return out;
}

}  // namespace ix::config
