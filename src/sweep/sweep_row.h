// One job of a sweep matrix, and its renderings.
//
// A SweepRow is what `sweep` prints, `plan` buckets and stamps, and `run` executes. Its JSON form
// carries exactly the keys InferenceX's reference generator prints for that kind of row, in the
// same order, with the same value types (multi-node `conc` is a list), so existing workflows,
// Slurm arrays and dashboards consume ixbench matrices unchanged.
//
// Key order per kind ([..] = only when set; every kind ends in [recipe-fingerprint]):
//   single-node fixed:   image model model-prefix precision framework runner isl osl tp pp dcp-size
//                        pcp-size conc max-model-len ep dp-attn spec-decoding exp-name disagg run-eval
//                        [router] [eval-only]
//   multi-node fixed:    image model model-prefix precision framework runner isl osl spec-decoding
//                        prefill decode conc max-model-len exp-name disagg run-eval [router]
//                        [kv-p2p-transfer] [eval-conc] [eval-all-concs] [eval-only]
//   single-node agentic: image model model-prefix precision framework runner tp pp dcp-size pcp-size
//                        ep dp-attn spec-decoding conc kv-offloading total-cpu-dram-gb duration
//                        exp-name scenario-type [kv-offload-backend] [router] [run-eval] [eval-only]
//   multi-node agentic:  image model model-prefix precision framework runner spec-decoding prefill
//                        decode conc kv-offloading total-cpu-dram-gb duration exp-name disagg
//                        scenario-type [kv-offload-backend] [router] [kv-p2p-transfer] [run-eval]
//                        [eval-conc] [eval-only]
// Worker objects keep the master config's key order, then pp, dcp-size, pcp-size when omitted.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/master_config.h"

namespace ix::sweep {

enum class RowKind { kSingleNodeFixed, kMultiNodeFixed, kSingleNodeAgentic, kMultiNodeAgentic };

inline constexpr int64_t kAgenticDurationS = 3600;
inline constexpr int64_t kMaxModelLenMargin = 256;  // max-model-len = isl + osl + 256

struct SweepRow {
  RowKind kind = RowKind::kSingleNodeFixed;
  std::string image;
  std::string model;
  std::string model_prefix;
  std::string precision;
  std::string framework;
  std::string runner;  // the label, or one concrete runner with --runner-node-filter
  // Fixed-seq-len rows.
  int64_t isl = 0;
  int64_t osl = 0;
  // Single-node rows.
  int64_t tp = 0;
  int64_t pp = 1;
  int64_t dcp_size = 1;
  int64_t pcp_size = 1;
  int64_t ep = 1;
  bool dp_attn = false;
  // Multi-node rows (pp/dcp-size/pcp-size already defaulted to 1).
  config::Worker prefill;
  config::Worker decode;
  // One value for single-node rows; the whole list (one allocation runs them all) for multi-node.
  std::vector<int64_t> conc;
  config::SpecDecoding spec_decoding = config::SpecDecoding::kNone;
  std::string exp_name;
  bool disagg = false;
  std::optional<config::Component> router;
  std::optional<std::string> kv_p2p_transfer;
  // Agentic rows.
  config::KvOffloading kv_offloading = config::KvOffloading::kNone;
  std::optional<config::Component> kv_offload_backend;
  int64_t total_cpu_dram_gb = 0;
  int64_t duration_s = kAgenticDurationS;
  // Eval marking. run_eval is always present on fixed rows; agentic rows lack it under --no-evals.
  std::optional<bool> run_eval;
  std::optional<int64_t> eval_conc;
  bool eval_all_concs = false;
  bool eval_only = false;
  // The recipe fingerprint `plan` stamped on the row (64 lowercase hex digits); empty when unstamped.
  // Printed last, after every other key, as InferenceX's changelog planner adds it.
  std::string stamped_fingerprint;

  bool is_multinode() const { return kind == RowKind::kMultiNodeFixed || kind == RowKind::kMultiNodeAgentic; }
  bool is_agentic() const { return kind == RowKind::kSingleNodeAgentic || kind == RowKind::kMultiNodeAgentic; }
  int64_t max_model_len() const { return isl + osl + kMaxModelLenMargin; }
};

// The row as a JSON object (key order as above), for plan/run and other library users.
boost::json::object to_json(const SweepRow& row);

// The row exactly as Python's json.dumps prints it (", " / ": " separators, ASCII-only escapes).
void append_row_json(std::string& out, const SweepRow& row);
// The whole matrix as one JSON array, as the reference prints it, without a trailing newline.
std::string render_matrix(std::span<const SweepRow> rows);

// Canonical JSON of the row: keys sorted at every level, "," / ":" separators, ASCII-only, with
// the top-level keys in `excluded` left out.
std::string canonical_json(const SweepRow& row, std::span<const std::string_view> excluded);

// Recipe fingerprint: lowercase hex SHA-256 of canonical_json(row) without `conc`, `exp-name` and
// `recipe-fingerprint`,
// so every concurrency of one recipe shares it and any recipe change (image, topology, flags,
// runner, eval marking) changes it. Stamped by `plan`, checked by `run`.
std::string recipe_fingerprint(const SweepRow& row);

// Lowercase hex SHA-256 of `text` (fingerprints, and the input hashes of a run manifest).
std::string sha256_hex(std::string_view text);

// Result-file stem of one run of the row (SPEC §2):
//   {exp}_{precision}_{framework}_tp{T}-pp{P}-dcp{D}-pcp{C}-ep{E}-dpa{true|false}_disagg-{b}_spec-{x}_conc{N}_{runner}
// Multi-node rows describe both workers instead of the tp.. block:
//   ..._prefill-nw{N}-tp{T}-pp{P}-dcp{D}-pcp{C}-ep{E}-dpa{b}_decode-nw{N}-tp..-dpa{b}_disagg-..
// `conc` is the concurrency being run (multi-node rows hold several), `runner` the concrete runner
// (e.g. h200-cw_00). A non-empty fingerprint appends "_recipe-<first 16 hex digits>".
std::string result_file_stem(const SweepRow& row, int64_t conc, std::string_view runner,
                             std::string_view fingerprint = {});

// Concurrency expansion: geometric from start, x step, the last step clamped to end, which is
// always included (4..100 step 2 -> 4 8 16 32 64 100). Requires 0 < start <= end, step > 1.
std::vector<int64_t> expand_concurrency(int64_t start, int64_t end, int64_t step);

// "1k1k" / "8k1k" for the named shapes, else "<isl>_<osl>".
std::string seq_len_name(int64_t isl, int64_t osl);

}  // namespace ix::sweep
