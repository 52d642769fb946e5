// The results store (SPEC §13): runs, matrix rows, raw and aggregated results, eval scores, power,
// predicted points and artifact paths, in SQLite (default, a file) or PostgreSQL (a team's shared
// server), with one schema and one set of queries for both behind a thin `Backend` interface.
//
// Natural keys make ingest idempotent: a run is keyed by `run_id`; a result by
// (run_id, result_stem, kind). Re-ingesting the same run changes nothing (same rows, same values);
// ingesting a result again with different values replaces it (last write wins) and reports it as
// updated. The "latest" view keeps, per (config identity, conc, isl, osl, kind), the result of the
// most recent run (`runs.created_at`, ties broken by run_id).
//
// Schema: versioned (`schema_version` table); `open_store` migrates an older database forward in
// one transaction and refuses a newer one with a message naming both versions.
//
// Thread-safety: a Store is used by one thread at a time; separate processes (or Store objects)
// may ingest into the same database at once — writes are transactions that retry on busy/
// serialization failures, so neither loses rows.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace ix::store {

// Version 1 lacked scenario, power and the content digest (schema.h keeps it for the migration test).
inline constexpr int kSchemaVersion = 2;

enum class ResultKind { kMeasured, kPredicted };
std::string_view result_kind_name(ResultKind kind);  // "measured" | "predicted"

enum class Scenario { kFixedSeqLen, kAgentic };
std::string_view scenario_name(Scenario scenario);  // "fixed-seq-len" | "agentic"

struct RunRecord {
  std::string run_id;      // natural key
  std::string created_at;  // ISO-8601 UTC, "2026-12-01T10:00:00Z"
  std::string source;      // what produced it: "ixbench run", "ingest /path", "sim predict"
  std::string host;
  std::string ixbench_version;
  std::string manifest_json;  // the run manifest as written, or "{}"
};

struct ArtifactRecord {
  std::string kind;  // "raw", "agg", "eval", "server_log", "telemetry", "command", ...
  std::string path;  // as found (absolute when ingested from a folder)
};

struct EvalRecord {
  std::string task;    // "gsm8k"
  std::string filter;  // "strict-match" | "flexible-extract"
  std::string metric;  // "exact_match"
  double value = 0.0;
  double stderr_value = 0.0;
  int64_t n_samples = 0;
  bool complete = true;
};

// One result: the aggregated record's identity and headline numbers as columns (so filters,
// the latest view and the dashboard's first view are SQL), and the full JSON documents beside.
struct ResultRecord {
  std::string run_id;
  std::string result_stem;  // agg_<stem>.json's <stem>
  ResultKind kind = ResultKind::kMeasured;
  Scenario scenario = Scenario::kFixedSeqLen;

  // Config identity (SPEC §5 fields).
  std::string model;         // model name as served
  std::string model_prefix;  // infmax_model_prefix
  std::string hw;
  std::string framework;
  std::string precision;
  std::string spec_decoding;
  bool disagg = false;
  bool is_multinode = false;
  int64_t tp = 0, ep = 0, pp = 1;
  std::string dp_attention;
  int64_t num_gpus = 0;
  int64_t conc = 0, isl = 0, osl = 0;
  std::string image;
  std::string recipe_fingerprint;
  std::string config_key;  // the master-config key when known

  // Headline numbers (seconds / tokens per second per user / tokens per second per GPU).
  std::optional<double> tput_per_gpu, output_tput_per_gpu, input_tput_per_gpu;
  std::optional<double> median_ttft, p90_ttft, median_tpot, median_e2el, p90_e2el;
  std::optional<double> median_intvty, p90_intvty;
  // Power (SPEC §9), absent when not measured.
  std::optional<double> avg_power_w, total_gpu_energy_j, joules_per_output_token, joules_per_total_token;
  std::optional<bool> power_valid;

  std::string agg_json;    // the agg record as ingested
  std::string raw_json;    // the raw result, "" when not found
  std::string row_json;    // the matrix row, "" when not known
  std::string created_at;  // the run's created_at; filled by latest(), not written by put_*
  std::vector<EvalRecord> evals;
  std::vector<ArtifactRecord> artifacts;
};

// Filters of the latest view; an empty field matches everything.
struct ResultQuery {
  std::vector<std::string> models;  // model_prefix or model
  std::vector<std::string> hardware, frameworks, precisions;
  std::optional<Scenario> scenario;
  std::optional<int64_t> isl, osl;
  std::optional<ResultKind> kind;
  std::string from_date, to_date;  // ISO dates, inclusive, on runs.created_at
  size_t limit = 0;                // 0 = no limit
};

// One chart panel of the dashboard: a model (model_prefix, else model) in a scenario at one ISL/OSL,
// with the number of results the latest view holds for it.
struct Panel {
  std::string model;
  std::string scenario;
  int64_t isl = 0, osl = 0;
  int64_t results = 0;
};

// Distinct values present (for the dashboard's filter menus), from the latest view.
struct Facets {
  std::vector<std::string> models, hardware, frameworks, precisions, scenarios;
  std::vector<std::pair<int64_t, int64_t>> isl_osl;  // fixed-seq-len only
  std::vector<Panel> panels;                         // by model, scenario, isl, osl
  std::string first_date, last_date;
  int64_t results = 0;
};

struct IngestStats {
  int64_t inserted = 0;
  int64_t updated = 0;
  int64_t unchanged = 0;
};

class Store {
 public:
  virtual ~Store() = default;
  virtual Result<void> put_run(const RunRecord& run) = 0;
  // Inserts or replaces each result of one run in one transaction.
  virtual Result<IngestStats> put_results(const std::vector<ResultRecord>& results) = 0;
  // The run (when given) and its results in one transaction: all of it or nothing (ingest).
  virtual Result<IngestStats> put_run_results(const std::optional<RunRecord>& run,
                                              const std::vector<ResultRecord>& results) = 0;
  virtual Result<std::vector<ResultRecord>> latest(const ResultQuery& query) = 0;
  virtual Result<Facets> facets() = 0;
  virtual Result<std::vector<RunRecord>> runs() = 0;
  // The result stems one run holds, of one kind, sorted (`run --resume` skips the jobs stored).
  virtual Result<std::vector<std::string>> result_stems(const std::string& run_id, ResultKind kind) = 0;
  // Whether some result records `path` as an artifact (the dashboard serves only those files).
  virtual Result<bool> has_artifact(const std::string& path) = 0;
  // Every row of every table, one line per row in key order (tests compare dumps before and after
  // a re-ingest).
  virtual Result<std::string> dump() = 0;
  virtual int schema_version() const = 0;
  virtual std::string describe() const = 0;  // "sqlite:./ixbench-results.db", "postgresql://host/db"
};

// "./file.db", "sqlite:PATH" or "postgresql://..." / "postgres://..."; creates or migrates.
Result<std::unique_ptr<Store>> open_store(const std::string& location);

inline constexpr const char* kDefaultStoreLocation = "./ixbench-results.db";

}  // namespace ix::store
