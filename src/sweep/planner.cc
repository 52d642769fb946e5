#include "sweep/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace ix::sweep {
namespace {

using config::AgenticScenario;
using config::KvOffloading;
using config::MasterConfig;
using config::RunnerConfig;
using config::SearchEntry;
using config::SpecDecoding;
using config::Worker;

constexpr int64_t kMaxAgenticDramMib = 2'861'022;  // 3 TB decimal cap, in MiB
constexpr int64_t kMinEvalConc = 16;

bool contains(const std::vector<std::string>& values, std::string_view value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

bool scenario_allowed(const SweepOptions& options, ScenarioType type) {
  return options.scenario_types.empty() ||
         std::find(options.scenario_types.begin(), options.scenario_types.end(), type) != options.scenario_types.end();
}

bool seq_len_allowed(const SweepOptions& options, int64_t isl, int64_t osl) {
  if (options.seq_lens.empty()) return true;
  return std::find(options.seq_lens.begin(), options.seq_lens.end(), std::pair{isl, osl}) != options.seq_lens.end();
}

std::vector<int64_t> entry_concurrency(const SearchEntry& entry, int64_t step) {
  if (entry.conc.is_list) return entry.conc.list;
  return expand_concurrency(entry.conc.start, entry.conc.end, step);
}

// Validation guarantees multi-node entries have both workers; pp/dcp-size/pcp-size already hold
// their defaults (rendering appends the keys the config omitted).
const Worker& worker_or(const std::optional<Worker>& worker) {
  static const Worker kEmpty;
  return worker ? *worker : kEmpty;
}

SweepRow base_row(const MasterConfig& config, const std::string& runner, RowKind kind) {
  SweepRow row;
  row.kind = kind;
  row.image = config.image;
  row.model = config.model;
  row.model_prefix = config.model_prefix;
  row.precision = config.precision;
  row.framework = config.framework;
  row.runner = runner;
  row.disagg = config.disagg;
  return row;
}

// router / kv-p2p-transfer come from the entry or, when absent there, the config (validation
// forbids both).
void add_components(SweepRow& row, const SearchEntry& entry, const MasterConfig& config) {
  row.router = entry.router ? entry.router : config.router;
  row.kv_p2p_transfer = entry.kv_p2p_transfer ? entry.kv_p2p_transfer : config.kv_p2p_transfer;
}

SweepRow fixed_single_row(const MasterConfig& config, const SearchEntry& entry, const std::string& runner, int64_t isl,
                          int64_t osl, int64_t conc, std::optional<int64_t> ep) {
  SweepRow row = base_row(config, runner, RowKind::kSingleNodeFixed);
  row.isl = isl;
  row.osl = osl;
  row.tp = entry.tp;
  row.pp = entry.pp;
  row.dcp_size = entry.dcp_size;
  row.pcp_size = entry.pcp_size;
  row.conc = {conc};
  row.ep = ep.value_or(1);
  row.dp_attn = entry.dp_attn.value_or(false);
  row.spec_decoding = entry.spec_decoding;
  row.exp_name = fmt::format("{}_{}", config.model_prefix, seq_len_name(isl, osl));
  row.run_eval = false;
  row.router = entry.router ? entry.router : config.router;
  return row;
}

SweepRow fixed_multi_row(const MasterConfig& config, const SearchEntry& entry, const std::string& runner, int64_t isl,
                         int64_t osl, std::vector<int64_t> conc) {
  SweepRow row = base_row(config, runner, RowKind::kMultiNodeFixed);
  row.isl = isl;
  row.osl = osl;
  row.spec_decoding = entry.spec_decoding;
  row.prefill = worker_or(entry.prefill);
  row.decode = worker_or(entry.decode);
  row.conc = std::move(conc);
  row.exp_name = fmt::format("{}_{}", config.model_prefix, seq_len_name(isl, osl));
  row.run_eval = false;
  add_components(row, entry, config);
  return row;
}

std::string offload_suffix(const SearchEntry& entry) {
  if (entry.kv_offloading.value_or(KvOffloading::kNone) == KvOffloading::kNone) return "kvnone";
  return fmt::format("kv{}-{}", config::kv_offloading_name(*entry.kv_offloading),
                     entry.kv_offload_backend ? entry.kv_offload_backend->name : "");
}

std::string worker_tag(const Worker& worker, char role) {
  std::string tag = fmt::format("{}{}x{}", role, worker.num_worker, worker.tp);
  if (worker.ep != 1) tag += fmt::format("ep{}", worker.ep);
  if (worker.dp_attn) tag += "dpa";
  return tag;
}

SweepRow agentic_single_row(const MasterConfig& config, const SearchEntry& entry, const std::string& runner,
                            int64_t conc, int64_t dram_gb) {
  SweepRow row = base_row(config, runner, RowKind::kSingleNodeAgentic);
  row.tp = entry.tp;
  row.pp = entry.pp;
  row.dcp_size = entry.dcp_size;
  row.pcp_size = entry.pcp_size;
  row.ep = entry.ep.value_or(1);
  row.dp_attn = entry.dp_attn.value_or(false);
  row.spec_decoding = entry.spec_decoding;
  row.conc = {conc};
  row.kv_offloading = entry.kv_offloading.value_or(KvOffloading::kNone);
  row.kv_offload_backend = entry.kv_offload_backend;
  row.total_cpu_dram_gb = dram_gb;
  row.exp_name = fmt::format("{}_tp{}_conc{}_{}", config.model_prefix, entry.tp, conc, offload_suffix(entry));
  if (entry.spec_decoding != SpecDecoding::kNone) {
    row.exp_name += fmt::format("_spec-{}", config::spec_decoding_name(entry.spec_decoding));
  }
  row.router = entry.router ? entry.router : config.router;
  row.disagg = false;
  return row;
}

SweepRow agentic_multi_row(const MasterConfig& config, const SearchEntry& entry, const std::string& runner,
                           int64_t conc, int64_t dram_gb) {
  SweepRow row = base_row(config, runner, RowKind::kMultiNodeAgentic);
  row.spec_decoding = entry.spec_decoding;
  row.prefill = worker_or(entry.prefill);
  row.decode = worker_or(entry.decode);
  row.conc = {conc};
  row.kv_offloading = entry.kv_offloading.value_or(KvOffloading::kNone);
  row.kv_offload_backend = entry.kv_offload_backend;
  row.total_cpu_dram_gb = dram_gb;
  // Historical exp-names have no suffix without offloading.
  std::string suffix = row.kv_offloading == KvOffloading::kNone ? "" : "_" + offload_suffix(entry);
  row.exp_name = fmt::format("{}_{}_{}_conc{}{}", config.model_prefix, worker_tag(row.prefill, 'p'),
                             worker_tag(row.decode, 'd'), conc, suffix);
  add_components(row, entry, config);
  return row;
}

Result<int64_t> agentic_dram_gb(const MasterConfig& config, const AgenticScenario& scenario, const SearchEntry& entry,
                                const RunnerConfig& runners) {
  if (entry.kv_offloading.value_or(KvOffloading::kNone) != KvOffloading::kDram) return 0;
  const config::RunnerHardware* facts = runners.find_hardware(config.runner);
  if (!facts) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}:{}:{}: config '{}': runner '{}' has no hardware facts in {}; `kv-offloading: dram` "
                            "needs available-cpu-dram-mib and gpus-per-node",
                            entry.location.file, entry.location.line, entry.location.column, config.key, config.runner,
                            runners.file));
  }
  int64_t gpu_count = 0;
  if (config.multinode) {
    const Worker& prefill = worker_or(entry.prefill);
    int64_t per_replica = prefill.tp * prefill.pp * prefill.pcp_size;
    gpu_count = per_replica > facts->gpus_per_node ? facts->gpus_per_node : per_replica;
  } else {
    gpu_count = entry.tp * entry.pp * entry.pcp_size;
  }
  return dram_budget_gb(facts->available_cpu_dram_mib, scenario.dram_utilization.value_or(0.0), gpu_count,
                        facts->gpus_per_node);
}

// Rows of one config's agentic-coding scenarios.
Result<void> add_agentic_rows(std::vector<SweepRow>& rows, const MasterConfig& config, const RunnerConfig& runners,
                              const std::vector<std::string>& runner_values, const SweepOptions& options,
                              bool full_sweep) {
  for (const auto& scenario : config.agentic_coding) {
    for (const auto& entry : scenario.search_space) {
      auto dram_gb = agentic_dram_gb(config, scenario, entry, runners);
      if (!dram_gb) return std::unexpected(dram_gb.error());
      std::vector<int64_t> conc_values = entry_concurrency(entry, full_sweep ? options.step_size : 2);
      if (full_sweep) {
        if (options.min_conc) std::erase_if(conc_values, [&](int64_t c) { return c < *options.min_conc; });
        if (options.max_conc) std::erase_if(conc_values, [&](int64_t c) { return c > *options.max_conc; });
      } else if (!options.conc.empty()) {
        std::erase_if(conc_values, [&](int64_t c) {
          return std::find(options.conc.begin(), options.conc.end(), c) == options.conc.end();
        });
      }
      if (conc_values.empty()) continue;
      if (config.multinode) {
        // One concurrency per allocation.
        for (const auto& runner : runner_values) {
          for (int64_t conc : conc_values) rows.push_back(agentic_multi_row(config, entry, runner, conc, *dram_gb));
        }
      } else {
        for (int64_t conc : conc_values) {
          for (const auto& runner : runner_values) {
            rows.push_back(agentic_single_row(config, entry, runner, conc, *dram_gb));
          }
        }
      }
    }
  }
  return {};
}

// full-sweep concurrency filters for a single-node entry; nullopt = skip the entry.
std::optional<std::vector<int64_t>> full_sweep_single_conc(const SearchEntry& entry, const SweepOptions& options) {
  if (entry.conc.is_list) {
    std::vector<int64_t> values = entry.conc.list;
    if (options.min_conc) {
      if (*options.min_conc <= 0) return std::nullopt;
      std::erase_if(values, [&](int64_t c) { return c < *options.min_conc; });
      if (values.empty()) return std::nullopt;
    }
    if (options.max_conc) {
      if (*options.max_conc <= 0) return std::nullopt;
      std::vector<int64_t> kept = values;
      std::erase_if(kept, [&](int64_t c) { return c > *options.max_conc; });
      values = kept.empty() ? std::vector<int64_t>{*options.max_conc} : kept;
    }
    return values;
  }
  int64_t start = entry.conc.start;
  int64_t end = entry.conc.end;
  if (options.min_conc) {
    if (*options.min_conc <= 0 || end < *options.min_conc) return std::nullopt;
    start = std::max(start, *options.min_conc);
  }
  if (options.max_conc) {
    if (*options.max_conc <= 0) return std::nullopt;
    if (start > *options.max_conc) {
      start = *options.max_conc;
      end = *options.max_conc;
    } else {
      end = std::min(end, *options.max_conc);
    }
  }
  return expand_concurrency(start, end, options.step_size);
}

std::optional<std::vector<int64_t>> full_sweep_multi_conc(const SearchEntry& entry, const SweepOptions& options) {
  std::vector<int64_t> values = entry_concurrency(entry, options.step_size);
  if (options.min_conc) {
    if (*options.min_conc <= 0) return std::nullopt;
    std::erase_if(values, [&](int64_t c) { return c < *options.min_conc; });
    if (values.empty()) return std::nullopt;
  }
  if (options.max_conc) {
    std::vector<int64_t> kept = values;
    std::erase_if(kept, [&](int64_t c) { return c > *options.max_conc; });
    if (kept.empty()) {
      if (*options.max_conc <= 0) return std::nullopt;
      values = {*options.max_conc};
    } else {
      values = kept;
    }
  }
  return values;
}

std::string runner_label_list(const RunnerConfig& runners) {
  std::vector<std::string> labels;
  for (const auto& [label, nodes] : runners.labels) labels.push_back(label);
  std::sort(labels.begin(), labels.end());
  return fmt::format("{}", fmt::join(labels, ", "));
}

// --- Eval marking -----------------------------------------------------------------------------

std::string parallelism_key(const SweepRow& row) {
  static constexpr std::string_view kIgnored[] = {"conc",      "run-eval",       "eval-only",
                                                  "eval-conc", "eval-all-concs", "exp-name"};
  return canonical_json(row, kIgnored);
}

std::vector<int64_t> eligible_eval_concs(const SweepRow& row) {
  std::vector<int64_t> values;
  for (int64_t c : row.conc) {
    if (c >= kMinEvalConc) values.push_back(c);
  }
  std::sort(values.begin(), values.end());
  return values;
}

bool is_8k1k(const SweepRow& row) {
  return (row.kind == RowKind::kSingleNodeFixed || row.kind == RowKind::kMultiNodeFixed) && row.isl == 8192 &&
         row.osl == 1024;
}

// Picks the first entry with the highest value (Python max() keeps the first on ties).
template <typename Entries>
const typename Entries::value_type& first_max(const Entries& entries) {
  const auto* best = &entries.front();
  for (const auto& entry : entries) {
    if (entry.second > best->second) best = &entry;
  }
  return *best;
}

void mark_eval_entries(std::vector<SweepRow>& rows, bool include_agentic) {
  std::vector<bool> selected(rows.size(), false);
  std::vector<std::optional<int64_t>> mn_eval_conc(rows.size());

  // Single-node 8k1k: per (model, runner, framework, precision, isl, osl, spec, dp-attn), the rows
  // at the highest and the median (sorted_unique[len/2]) eligible concurrency.
  std::map<std::string, std::vector<size_t>> single_groups;
  std::map<std::string, std::vector<std::pair<size_t, int64_t>>> multi_groups;
  for (size_t index = 0; index < rows.size(); ++index) {
    const SweepRow& row = rows[index];
    if (!is_8k1k(row)) continue;
    auto eligible = eligible_eval_concs(row);
    if (eligible.empty()) continue;
    if (row.kind == RowKind::kSingleNodeFixed) {
      std::string key =
          fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", row.model, row.runner, row.framework,
                      row.precision, row.isl, row.osl, config::spec_decoding_name(row.spec_decoding), row.dp_attn);
      single_groups[key].push_back(index);
    } else {
      multi_groups[parallelism_key(row)].emplace_back(index, eligible.back());
    }
  }
  for (const auto& [key, members] : single_groups) {
    std::set<int64_t> unique;
    for (size_t index : members) unique.insert(rows[index].conc.front());
    std::vector<int64_t> sorted(unique.begin(), unique.end());
    int64_t highest = sorted.back();
    int64_t median = sorted[sorted.size() / 2];
    for (size_t index : members) {
      int64_t conc = rows[index].conc.front();
      if (conc == highest || conc == median) selected[index] = true;
    }
  }
  for (const auto& [key, members] : multi_groups) {
    const auto& [index, conc] = first_max(members);
    selected[index] = true;
    mn_eval_conc[index] = conc;
  }

  if (include_agentic) {
    std::map<std::string, std::vector<std::pair<size_t, int64_t>>> agentic_single;
    std::map<std::string, std::vector<std::pair<size_t, int64_t>>> agentic_multi;
    for (size_t index = 0; index < rows.size(); ++index) {
      const SweepRow& row = rows[index];
      if (row.kind == RowKind::kMultiNodeAgentic) {
        auto eligible = eligible_eval_concs(row);
        if (eligible.empty()) continue;
        agentic_multi[parallelism_key(row)].emplace_back(index, eligible.back());
      } else if (row.kind == RowKind::kSingleNodeAgentic) {
        std::string key = fmt::format("{}\x1f{}\x1f{}\x1f{}", row.model, row.runner, row.framework, row.precision);
        agentic_single[key].emplace_back(index, *std::max_element(row.conc.begin(), row.conc.end()));
      }
    }
    for (const auto& [key, members] : agentic_single) selected[first_max(members).first] = true;
    for (const auto& [key, members] : agentic_multi) {
      const auto& [index, conc] = first_max(members);
      selected[index] = true;
      mn_eval_conc[index] = conc;
    }
  }

  for (size_t index = 0; index < rows.size(); ++index) {
    rows[index].run_eval = selected[index];
    if (mn_eval_conc[index]) rows[index].eval_conc = mn_eval_conc[index];
  }
}

std::vector<int64_t> sorted_union(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::set<int64_t> merged(a.begin(), a.end());
  merged.insert(b.begin(), b.end());
  return {merged.begin(), merged.end()};
}

// --all-evals: every 8k1k fixed row and every agentic row becomes an eval row; multi-node rows of
// one topology merge into one row running all their concurrencies.
std::vector<SweepRow> mark_all_eval_entries(std::vector<SweepRow> rows) {
  std::vector<SweepRow> expanded;
  expanded.reserve(rows.size());
  std::unordered_map<std::string, size_t> multi_fixed;
  std::unordered_map<std::string, size_t> multi_agentic;
  for (auto& row : rows) {
    if (row.kind == RowKind::kSingleNodeAgentic) {
      row.run_eval = true;
      expanded.push_back(std::move(row));
    } else if (row.kind == RowKind::kMultiNodeAgentic) {
      std::string key = parallelism_key(row);
      if (auto it = multi_agentic.find(key); it != multi_agentic.end()) {
        SweepRow& existing = expanded[it->second];
        existing.conc = sorted_union(existing.conc, row.conc);
        existing.eval_conc = existing.conc.back();
        continue;
      }
      row.conc = sorted_union(row.conc, {});
      row.run_eval = true;
      row.eval_conc = row.conc.back();
      multi_agentic.emplace(std::move(key), expanded.size());
      expanded.push_back(std::move(row));
    } else if (!is_8k1k(row)) {
      expanded.push_back(std::move(row));
    } else if (row.kind == RowKind::kMultiNodeFixed) {
      std::string key = parallelism_key(row);
      if (auto it = multi_fixed.find(key); it != multi_fixed.end()) {
        SweepRow& existing = expanded[it->second];
        existing.conc = sorted_union(existing.conc, row.conc);
        continue;
      }
      row.conc = sorted_union(row.conc, {});
      row.run_eval = true;
      row.eval_all_concs = true;
      row.eval_conc.reset();
      multi_fixed.emplace(std::move(key), expanded.size());
      expanded.push_back(std::move(row));
    } else {
      row.run_eval = true;
      expanded.push_back(std::move(row));
    }
  }
  return expanded;
}

// Python's str(float): the shortest repr, which Decimal(str(x)) then reads exactly.
std::pair<__int128, int> decimal_of(double value) {
  std::string text = fmt::format("{}", value);
  __int128 mantissa = 0;
  int scale = 0;  // value = mantissa * 10^-scale
  int exponent = 0;
  bool after_dot = false;
  for (size_t index = 0; index < text.size(); ++index) {
    char c = text[index];
    if (c == '.') {
      after_dot = true;
    } else if (c == 'e' || c == 'E') {
      exponent = std::atoi(text.c_str() + index + 1);
      break;
    } else if (c >= '0' && c <= '9') {
      mantissa = mantissa * 10 + (c - '0');
      if (after_dot) ++scale;
    }
  }
  scale -= exponent;
  while (scale < 0) {
    mantissa *= 10;
    ++scale;
  }
  return {mantissa, scale};
}

}  // namespace

int64_t dram_budget_gb(int64_t available_cpu_dram_mib, double dram_utilization, int64_t gpu_count,
                       int64_t gpus_per_node) {
  if (gpus_per_node <= 0 || dram_utilization <= 0.0) return 0;
  auto [mantissa, scale] = decimal_of(dram_utilization);
  __int128 numerator =
      static_cast<__int128>(std::min(available_cpu_dram_mib, kMaxAgenticDramMib)) * 1'048'576 * mantissa * gpu_count;
  __int128 denominator = static_cast<__int128>(gpus_per_node) * 1'000'000'000;
  for (int k = 0; k < scale; ++k) denominator *= 10;
  return static_cast<int64_t>(numerator / denominator);
}

Result<std::pair<int64_t, int64_t>> parse_seq_len(std::string_view name) {
  if (name == "1k1k") return std::pair<int64_t, int64_t>{1024, 1024};
  if (name == "8k1k") return std::pair<int64_t, int64_t>{8192, 1024};
  return fail(ErrorCode::kInvalidArgument, fmt::format("unknown sequence length '{}'; choose 1k1k or 8k1k", name));
}

Result<ScenarioType> parse_scenario_type(std::string_view name) {
  if (name == "fixed-seq-len") return ScenarioType::kFixedSeqLen;
  if (name == "agentic-coding") return ScenarioType::kAgenticCoding;
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("unknown scenario type '{}'; choose fixed-seq-len or agentic-coding", name));
}

Result<void> check_options(const SweepOptions& options, bool full_sweep) {
  if (full_sweep && options.step_size <= 1) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--step-size must be greater than 1, got {}", options.step_size));
  }
  // The reference generator turns a bound <= 0 into an empty matrix without a word: a typo that
  // plans nothing is an error here.
  const std::pair<const char*, const std::optional<int64_t>*> bounds[] = {{"--min-conc", &options.min_conc},
                                                                          {"--max-conc", &options.max_conc},
                                                                          {"--max-tp", &options.max_tp},
                                                                          {"--max-ep", &options.max_ep}};
  for (const auto& [flag, value] : bounds) {
    if (full_sweep && value->has_value() && **value <= 0) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{} must be a positive integer, got {} (leave it out for no bound)", flag, **value));
    }
  }
  for (const int64_t conc : options.conc) {
    if (conc <= 0) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--conc values must be positive concurrencies, got {}", conc));
    }
  }
  if (full_sweep && options.min_conc && options.max_conc && *options.min_conc > *options.max_conc) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--min-conc ({}) must be less than or equal to --max-conc ({})", *options.min_conc,
                            *options.max_conc));
  }
  if (options.no_evals && options.evals_only) {
    return fail(ErrorCode::kInvalidArgument, "--no-evals and --evals-only cannot be combined; pick one");
  }
  if (options.no_evals && options.all_evals) {
    return fail(ErrorCode::kInvalidArgument, "--all-evals cannot be combined with --no-evals; pick one");
  }
  return {};
}

bool glob_match(std::string_view pattern, std::string_view name) {
  // Iterative matcher with backtracking to the last '*'.
  size_t p = 0;
  size_t n = 0;
  size_t star = std::string_view::npos;
  size_t star_n = 0;
  auto match_class = [&](size_t at, char c, size_t& next) -> int {
    // Returns 1 match, 0 no match, -1 not a class (treat '[' literally).
    size_t index = at + 1;
    bool negate = false;
    if (index < pattern.size() && pattern[index] == '!') {
      negate = true;
      ++index;
    }
    size_t first = index;
    bool matched = false;
    while (index < pattern.size() && (pattern[index] != ']' || index == first)) {
      char low = pattern[index];
      if (index + 2 < pattern.size() && pattern[index + 1] == '-' && pattern[index + 2] != ']') {
        if (c >= low && c <= pattern[index + 2]) matched = true;
        index += 3;
      } else {
        if (c == low) matched = true;
        ++index;
      }
    }
    if (index >= pattern.size()) return -1;
    next = index + 1;
    return (matched != negate) ? 1 : 0;
  };
  while (n < name.size()) {
    if (p < pattern.size()) {
      char pc = pattern[p];
      if (pc == '*') {
        star = p++;
        star_n = n;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++n;
        continue;
      }
      if (pc == '[') {
        size_t next = 0;
        int result = match_class(p, name[n], next);
        if (result == 1) {
          p = next;
          ++n;
          continue;
        }
        if (result == -1 && name[n] == '[') {
          ++p;
          ++n;
          continue;
        }
      } else if (pc == name[n]) {
        ++p;
        ++n;
        continue;
      }
    }
    if (star == std::string_view::npos) return false;
    p = star + 1;
    n = ++star_n;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

void apply_eval_policy(std::vector<SweepRow>& rows, const SweepOptions& options) {
  if (!options.no_evals) {
    mark_eval_entries(rows, options.evals_only || options.all_evals);
    if (options.all_evals) rows = mark_all_eval_entries(std::move(rows));
  }
  if (options.evals_only || options.all_evals) {
    std::erase_if(rows, [](const SweepRow& row) { return !row.run_eval.value_or(false); });
    for (auto& row : rows) row.eval_only = true;
  }
}

Result<std::vector<SweepRow>> plan_full_sweep(const config::MasterConfigSet& configs, const RunnerConfig& runners,
                                              const SweepOptions& options) {
  if (auto ok = check_options(options, true); !ok) return std::unexpected(ok.error());
  for (const auto& type : options.runner_types) {
    if (!runners.nodes(type)) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("unknown runner type '{}' (not a label in {}); valid runner types are: {}", type,
                              runners.file, runner_label_list(runners)));
    }
  }
  bool single_node = options.single_node || !options.multi_node;
  bool multi_node = options.multi_node || !options.single_node;
  std::vector<SweepRow> rows;
  for (const auto& config : configs.configs) {
    if (!options.model_prefixes.empty() &&
        std::none_of(options.model_prefixes.begin(), options.model_prefixes.end(),
                     [&](const std::string& prefix) { return config.key.starts_with(prefix); })) {
      continue;
    }
    if (!options.precisions.empty() && !contains(options.precisions, config.precision)) continue;
    if (!options.frameworks.empty() && !contains(options.frameworks, config.framework)) continue;
    if (!options.runner_types.empty() && !contains(options.runner_types, config.runner)) continue;

    std::vector<std::string> runner_values{config.runner};
    if (options.runner_node_filter) {
      runner_values.clear();
      if (const auto* nodes = runners.nodes(config.runner)) {
        for (const auto& node : *nodes) {
          if (node.find(*options.runner_node_filter) != std::string::npos) runner_values.push_back(node);
        }
      }
      if (runner_values.empty()) continue;
    }
    bool node_type_ok = config.multinode ? multi_node : single_node;

    if (scenario_allowed(options, ScenarioType::kFixedSeqLen) && node_type_ok) {
      for (const auto& scenario : config.fixed_seq_len) {
        if (!seq_len_allowed(options, scenario.isl, scenario.osl)) continue;
        for (const auto& entry : scenario.search_space) {
          if (config.multinode) {
            auto conc = full_sweep_multi_conc(entry, options);
            if (!conc) continue;
            for (const auto& runner : runner_values) {
              rows.push_back(fixed_multi_row(config, entry, runner, scenario.isl, scenario.osl, *conc));
            }
            continue;
          }
          if (options.max_tp && (*options.max_tp <= 0 || entry.tp > *options.max_tp)) continue;
          std::optional<int64_t> ep = entry.ep;
          if (options.max_ep) {
            if (*options.max_ep <= 0) continue;
            if (ep && *ep > *options.max_ep) ep = *options.max_ep;
          }
          auto conc_values = full_sweep_single_conc(entry, options);
          if (!conc_values) continue;
          for (int64_t conc : *conc_values) {
            for (const auto& runner : runner_values) {
              rows.push_back(fixed_single_row(config, entry, runner, scenario.isl, scenario.osl, conc, ep));
            }
          }
        }
      }
    }
    if (!node_type_ok || !scenario_allowed(options, ScenarioType::kAgenticCoding)) continue;
    if (auto added = add_agentic_rows(rows, config, runners, runner_values, options, true); !added) {
      return std::unexpected(added.error());
    }
  }
  apply_eval_policy(rows, options);
  return rows;
}

Result<std::vector<SweepRow>> plan_test_config(const config::MasterConfigSet& configs, const RunnerConfig& runners,
                                               const SweepOptions& options) {
  if (auto ok = check_options(options, false); !ok) return std::unexpected(ok.error());
  if (options.config_keys.empty()) {
    return fail(ErrorCode::kInvalidArgument, "--config-keys needs at least one key or glob");
  }
  auto available = [&] {
    std::vector<std::string> keys;
    for (const auto& config : configs.configs) keys.push_back(config.key);
    std::sort(keys.begin(), keys.end());
    return fmt::format("{}", fmt::join(keys, ", "));
  };
  std::vector<const MasterConfig*> selected;
  std::set<std::string_view> seen;
  for (const auto& pattern : options.config_keys) {
    bool is_glob = pattern.find_first_of("*?") != std::string::npos;
    if (is_glob) {
      bool any = false;
      for (const auto& config : configs.configs) {
        if (!glob_match(pattern, config.key)) continue;
        any = true;
        if (seen.insert(config.key).second) selected.push_back(&config);
      }
      if (!any) {
        return fail(
            ErrorCode::kInvalidArgument,
            fmt::format("--config-keys pattern '{}' matched no config keys; available keys: {}", pattern, available()));
      }
    } else {
      const MasterConfig* config = configs.find(pattern);
      if (!config) {
        return fail(ErrorCode::kNotFound, fmt::format("config key '{}' not found in --config-files; available keys: {}",
                                                      pattern, available()));
      }
      if (seen.insert(config->key).second) selected.push_back(config);
    }
  }

  std::vector<SweepRow> rows;
  for (const MasterConfig* config_ptr : selected) {
    const MasterConfig& config = *config_ptr;
    std::vector<std::string> runner_values{config.runner};
    if (options.runner_node_filter) {
      const std::string& filter = *options.runner_node_filter;
      std::vector<std::string> candidates;
      if (config.runner.find(filter) != std::string::npos) candidates.push_back(config.runner);
      if (const auto* nodes = runners.nodes(config.runner))
        candidates.insert(candidates.end(), nodes->begin(), nodes->end());
      runner_values.clear();
      for (const auto& candidate : candidates) {
        if (candidate.find(filter) == std::string::npos) continue;
        if (std::find(runner_values.begin(), runner_values.end(), candidate) == runner_values.end()) {
          runner_values.push_back(candidate);
        }
      }
      if (runner_values.empty()) continue;
    }
    auto keep_conc = [&](std::vector<int64_t>& values) {
      if (options.conc.empty()) return;
      std::erase_if(values, [&](int64_t c) {
        return std::find(options.conc.begin(), options.conc.end(), c) == options.conc.end();
      });
    };
    if (scenario_allowed(options, ScenarioType::kFixedSeqLen)) {
      for (const auto& scenario : config.fixed_seq_len) {
        if (!seq_len_allowed(options, scenario.isl, scenario.osl)) continue;
        for (const auto& entry : scenario.search_space) {
          std::vector<int64_t> conc_values = entry_concurrency(entry, 2);
          keep_conc(conc_values);
          if (conc_values.empty()) continue;
          if (config.multinode) {
            for (const auto& runner : runner_values) {
              rows.push_back(fixed_multi_row(config, entry, runner, scenario.isl, scenario.osl, conc_values));
            }
          } else {
            for (int64_t conc : conc_values) {
              for (const auto& runner : runner_values) {
                rows.push_back(fixed_single_row(config, entry, runner, scenario.isl, scenario.osl, conc, entry.ep));
              }
            }
          }
        }
      }
    }
    if (scenario_allowed(options, ScenarioType::kAgenticCoding)) {
      if (auto added = add_agentic_rows(rows, config, runners, runner_values, options, false); !added) {
        return std::unexpected(added.error());
      }
    }
  }
  apply_eval_policy(rows, options);
  return rows;
}

}  // namespace ix::sweep
