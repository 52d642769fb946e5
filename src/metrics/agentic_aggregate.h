// The aggregated record of an agentic trace replay, exactly as InferenceX's
// utils/agentic/aggregation/process_agentic_result.py (with request_metrics.py, server_metrics.py,
// server_log_metrics.py, trace_metadata.py and backends/) builds it from aiperf's artifact folder
// and the recipe's environment: the same keys in the same order, the same values (Python's int
// and float kinds kept: a mean of token counts is an integer when it divides evenly), rounded by
// round_floats() (5 decimals; a float of magnitude >= 1 that rounds to a whole number becomes an
// integer).
//
// Inputs (docs/results.md, "Agentic aggregation", has the user's view):
//   <result dir>/aiperf_artifacts/ (or its first child folder, by name, that holds
//     profile_export.jsonl): profile_export.jsonl (required: one JSON object per non-blank line;
//     warmup rows, metadata.benchmark_phase present and not "profiling", and rows with a truthy
//     `error` are counted and dropped), profile_export_aiperf.json (optional: dataset provenance,
//     theoretical_prefix_cache_hit), server_metrics_export.json (optional: Prometheus series by
//     metric name; the backend adapter is dynamo-vllm, atom, sglang or vllm, picked by metric
//     prefix or FRAMEWORK);
//   <result dir>/server.log and watchtower-*.out in the result dir and up to three folders above
//     it (KV pool size as vLLM and SGLang log it);
//   the Hugging Face cache (HF_HUB_CACHE | HUGGINGFACE_HUB_CACHE | HF_HOME/hub | ~/.cache/...):
//     the newest datasets--semianalysisai--cc-traces-weka*/snapshots/* holding *.jsonl or *.json
//     gives the recorded output lengths per trace turn (tokens.output_expected);
//   the environment (Inputs below).
//
// Everything except read_artifacts() and power_window() is computation on values already read.
// What Python would raise on (a malformed line, a value int() refuses, an unknown metrics
// backend) is an error that names the file (and line) or the variable.
//
// Thread-safety: plain functions and values.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ix::metrics::agentic {

// A variable of the environment (or of --env-file / --row), nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;

// --- environment -------------------------------------------------------------------------------

// What build_agg() reads from the environment: RUNNER_TYPE CONC IMAGE RECIPE_FINGERPRINT MODEL
// MODEL_PREFIX FRAMEWORK PRECISION SPEC_DECODING DISAGG IS_MULTINODE KV_OFFLOADING (required)
// KV_OFFLOAD_BACKEND KV_OFFLOAD_BACKEND_METADATA TOTAL_CPU_DRAM_GB ROUTER_METADATA
// KV_P2P_TRANSFER, and the GPU shape: single node TP EP_SIZE DP_ATTENTION PP_SIZE DCP_SIZE
// PCP_SIZE; multi node PREFILL_/DECODE_ NUM_WORKERS TP PP_SIZE DCP_SIZE PCP_SIZE EP DP_ATTN
// HARDWARE. Integers default as the script's env_int() defaults them (unset or empty).
struct Inputs {
  std::string hw;  // RUNNER_TYPE
  int64_t conc = 0;
  std::string image;
  std::string recipe_fingerprint;
  std::string model;
  std::string model_prefix;
  std::string framework;
  std::string precision;
  std::string spec_decoding = "none";
  bool disagg = false;
  bool is_multinode = false;
  int64_t tp = 1;
  int64_t ep = 1;
  std::string dp_attention = "false";
  std::string kv_offloading;
  std::optional<boost::json::object> kv_offload_backend;  // as given (name, optional version)
  int64_t allocated_cpu_dram_gb = 0;
  std::optional<boost::json::object> router;  // {name, version}
  std::string kv_p2p_transfer;                // "" = absent
  boost::json::object layout;                 // pp dcp_size pcp_size, or the prefill_/decode_ fields
  int64_t num_gpus = 0;                       // the per-GPU throughput divides by it when > 0
};

// The script's SystemExit messages verbatim ("Missing required environment variable:
// KV_OFFLOADING", "KV_OFFLOAD_BACKEND must be empty when KV_OFFLOADING=none", ...); an integer
// int() refuses names the variable.
Result<Inputs> inputs_from_env(const EnvLookup& get);

// --- profile_export.jsonl ----------------------------------------------------------------------

// What the aggregation reads of one kept row (profiling, no error). Numbers as the script's
// to_float() / to_int() read metrics.<name>.value (or a bare metrics.<name>).
struct Record {
  std::optional<double> ttft_ms;               // time_to_first_token
  std::optional<double> latency_ms;            // request_latency
  std::optional<double> itl_ms;                // inter_token_latency
  std::optional<double> full_response_itl_ms;  // full_response_inter_token_latency
  std::optional<double> osl_float;             // output_sequence_length as a float
  std::optional<int64_t> isl;                  // input_sequence_length as an int
  std::optional<int64_t> osl;                  // output_sequence_length as an int
  std::optional<int64_t> start_ns;             // int(metadata.request_start_ns) when truthy
  std::optional<int64_t> end_ns;               // int(metadata.request_end_ns) when truthy
  boost::json::value conversation_id;          // metadata.conversation_id (null when absent)
  boost::json::value turn_index;               // metadata.turn_index (null when absent)
  std::string where;                           // "<file>:<line>", for errors found later
};

struct Accounting {
  int64_t records_total = 0;
  int64_t records_warmup_dropped = 0;
  int64_t records_error_dropped = 0;
  std::vector<std::pair<std::string, int64_t>> error_categories;  // first-seen order
};

// load_records_with_accounting(), one line at a time (a run's file can be large).
class RecordReader {
 public:
  explicit RecordReader(std::string source) : source_(std::move(source)) {}
  // A line of the file (1-based number). Blank lines are skipped. Errors: not JSON
  // ("<file>:<line>:<column>: invalid JSON: ..."), not an object, `metadata` or a kept row's
  // `metrics` not an object, a request time int() refuses, a message that is only white space.
  Result<void> add_line(std::string_view line, size_t line_number);
  std::vector<Record>& records() { return records_; }
  const Accounting& accounting() const { return accounting_; }

 private:
  std::string source_;
  std::vector<Record> records_;
  Accounting accounting_;
  std::map<std::string, size_t, std::less<>> category_index_;
};

// The error category of a dropped row's `error` (_error_category()): the first non-empty of
// type|error_type|code|class|status, else the first line of message (or error) up to ':', at most
// 120 characters; "unknown" for none. Error: a message of white space only (Python's IndexError).
Result<std::string> error_category(const boost::json::value& error);

// --- trace metadata (the Hugging Face cache) ----------------------------------------------------

// {trace id: recorded output length of each "n"/"s" turn}, as load_trace_metadata() builds it.
class TraceMetadata {
 public:
  // One trace object (a line of a *.jsonl, or a *.json file). `where` names it in errors.
  Result<void> add_blob(const boost::json::value& blob, std::string_view where);
  bool empty() const { return traces_.empty(); }
  const std::vector<int64_t>* find(std::string_view trace_id) const;

 private:
  std::map<std::string, std::vector<int64_t>, std::less<>> traces_;
};

// --- server logs --------------------------------------------------------------------------------

// The KV pool size one log states, as the adapters parse it (nullopt: none):
// vLLM: "GPU KV cache size: N tokens" lines, the last per "(EngineCore[_DPn] pid=...)" tag summed
// over tags, else every untagged line summed; SGLang: "max_total_num_tokens=N", the last per
// "DPn TPn EPn" rank summed (times dp_size= when one rank of several logged), else the untagged.
std::optional<int64_t> vllm_kv_pool_tokens(std::string_view log);
std::optional<int64_t> sglang_kv_pool_tokens(std::string_view log);

// What one server log gives each adapter (the log's text is not kept).
struct ServerLog {
  std::optional<int64_t> vllm_tokens;
  std::optional<int64_t> sglang_tokens;
};
ServerLog parse_server_log(std::string_view text);

// --- the record ---------------------------------------------------------------------------------

struct Artifacts {
  std::vector<Record> records;  // kept rows
  Accounting accounting;
  std::optional<boost::json::value> aggregate;       // profile_export_aiperf.json; nullopt: absent
  std::optional<boost::json::value> server_metrics;  // server_metrics_export.json; nullopt: absent
  std::vector<ServerLog> server_logs;
  TraceMetadata traces;
  std::vector<std::string> notes;  // what was read but skipped (trace lines that are not JSON)
};

// build_agg() + round_floats(). Errors: metrics present whose backend none of the adapters knows
// (the script's "Unsupported agentic server metrics backend; framework=..., metric_names=[...]"),
// a trace turn index Python cannot use, a counter int(round()) refuses.
Result<boost::json::object> build_record(const Artifacts& artifacts, const Inputs& inputs);

// round_floats(obj, 5) in place.
void round_floats(boost::json::value& value);

// The lines the script prints after writing the record ("Requests: 12 successful / 16 total (3
// warmup, 2 error dropped)", "QPS: ...", cache hit rates, ...), without the "Saved ..." line.
std::vector<std::string> summary_lines(const boost::json::object& record, const Accounting& accounting);

// --- reading an artifact folder (the only file reading in metrics/) -----------------------------

// _resolve_artifact_dir(): <result_dir>/aiperf_artifacts when it holds profile_export.jsonl, else
// its first child folder (by name) that does, else <result_dir>/aiperf_artifacts.
std::filesystem::path resolve_artifact_dir(const std::filesystem::path& result_dir);

// find_server_log_paths(): <result_dir>/server.log, then watchtower-*.out (by name) in the result
// dir and its first three parents (lexical, as pathlib's), each file once.
std::vector<std::filesystem::path> server_log_paths(const std::filesystem::path& result_dir);

// The folder the HF cache variables name (as _hf_traces_dir() picks it), nullopt when none.
std::optional<std::filesystem::path> hf_traces_dir(const EnvLookup& get);

// Reads everything build_record() needs. server_metrics_export.json is parsed without its series'
// "timeslices" (never read, and most of a long run's file). Errors: profile_export.jsonl missing
// ("<path> not found", as the script says), unreadable or malformed files (named with their line
// where there is one).
Result<Artifacts> read_artifacts(const std::filesystem::path& result_dir, const std::filesystem::path& artifact_dir,
                                 const EnvLookup& get);

// --- the power window (power_adapter.py) -------------------------------------------------------

// build_power_window(): the benchmark window of the profile (start_time / end_time of
// profile_export_aiperf.json: ISO 8601, naive ones at the offset in
// <result_dir>/agentic_power_timezone_offset.txt, or epoch seconds) with the kept requests' count
// and token sums, as the raw-result fields the power step reads (benchmark_start_time_unix,
// benchmark_end_time_unix, duration, completed, total_input_tokens, total_output_tokens); or the
// adapter's reasons (profile_artifacts_missing, profile_window_missing,
// profile_timezone_offset_missing, profile_timezone_offset_invalid, profile_window_invalid,
// successful_request_count_invalid, incomplete_token_accounting).
struct PowerWindow {
  std::optional<boost::json::object> window;
  std::vector<std::string> reasons;
};
PowerWindow power_window(const std::filesystem::path& result_dir, const std::filesystem::path& artifact_dir,
                         const Artifacts& artifacts);

}  // namespace ix::metrics::agentic
