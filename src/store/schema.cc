#include "store/schema.h"

#include <fmt/format.h>

#include <array>

#include "store/store.h"

namespace ix::store {

const std::string_view kSchemaV1 = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (
  run_id TEXT PRIMARY KEY,
  created_at TEXT NOT NULL,
  source TEXT NOT NULL,
  host TEXT NOT NULL,
  ixbench_version TEXT NOT NULL,
  manifest_json TEXT NOT NULL
);
CREATE TABLE results (
  id {autoid},
  run_id TEXT NOT NULL REFERENCES runs(run_id),
  result_stem TEXT NOT NULL,
  kind TEXT NOT NULL,
  model TEXT NOT NULL, model_prefix TEXT NOT NULL, hw TEXT NOT NULL, framework TEXT NOT NULL,
  precision TEXT NOT NULL, spec_decoding TEXT NOT NULL,
  disagg INTEGER NOT NULL, is_multinode INTEGER NOT NULL,
  tp BIGINT NOT NULL, ep BIGINT NOT NULL, pp BIGINT NOT NULL, dp_attention TEXT NOT NULL,
  num_gpus BIGINT NOT NULL, conc BIGINT NOT NULL, isl BIGINT NOT NULL, osl BIGINT NOT NULL,
  image TEXT NOT NULL, recipe_fingerprint TEXT NOT NULL, config_key TEXT NOT NULL,
  tput_per_gpu {double}, output_tput_per_gpu {double}, input_tput_per_gpu {double},
  median_ttft {double}, p90_ttft {double}, median_tpot {double}, median_e2el {double}, p90_e2el {double},
  median_intvty {double}, p90_intvty {double},
  agg_json TEXT NOT NULL, raw_json TEXT NOT NULL, row_json TEXT NOT NULL,
  UNIQUE (run_id, result_stem, kind)
);
CREATE TABLE evals (
  run_id TEXT NOT NULL REFERENCES runs(run_id),
  result_stem TEXT NOT NULL,
  kind TEXT NOT NULL,
  task TEXT NOT NULL, eval_filter TEXT NOT NULL, metric TEXT NOT NULL,
  value {double} NOT NULL, stderr_value {double} NOT NULL, n_samples BIGINT NOT NULL, complete INTEGER NOT NULL,
  PRIMARY KEY (run_id, result_stem, kind, task, eval_filter, metric)
);
CREATE TABLE artifacts (
  run_id TEXT NOT NULL REFERENCES runs(run_id),
  result_stem TEXT NOT NULL,
  kind TEXT NOT NULL,
  artifact_kind TEXT NOT NULL, path TEXT NOT NULL,
  PRIMARY KEY (run_id, result_stem, kind, artifact_kind, path)
);
INSERT INTO schema_version (version) VALUES (1);
)sql";

// The latest view: per config identity (what a recipe changes between points of one curve is
// conc; image and recipe fingerprint are not identity, so a new image supersedes the old result),
// conc, isl, osl and kind, the result of the newest run. Filters on partition columns are pushed
// into the window by both engines.
const std::string_view kMigrationV1ToV2 = R"sql(
ALTER TABLE results ADD COLUMN scenario TEXT NOT NULL DEFAULT 'fixed-seq-len';
ALTER TABLE results ADD COLUMN avg_power_w {double};
ALTER TABLE results ADD COLUMN total_gpu_energy_j {double};
ALTER TABLE results ADD COLUMN joules_per_output_token {double};
ALTER TABLE results ADD COLUMN joules_per_total_token {double};
ALTER TABLE results ADD COLUMN power_valid INTEGER;
ALTER TABLE results ADD COLUMN digest TEXT NOT NULL DEFAULT '';
CREATE INDEX results_filter_idx ON results (model_prefix, hw, framework, precision, isl, osl);
CREATE INDEX results_model_idx ON results (model);
CREATE INDEX results_run_idx ON results (run_id);
CREATE INDEX runs_created_idx ON runs (created_at, run_id);
CREATE VIEW latest_results AS
SELECT * FROM (
  SELECT res.*, runs.created_at AS run_created_at,
         ROW_NUMBER() OVER (
           PARTITION BY res.model, res.model_prefix, res.hw, res.framework, res.precision, res.spec_decoding,
                        res.disagg, res.is_multinode, res.tp, res.ep, res.pp, res.dp_attention, res.num_gpus,
                        res.scenario, res.conc, res.isl, res.osl, res.kind
           ORDER BY runs.created_at DESC, res.run_id DESC) AS latest_rank
  FROM results res JOIN runs ON runs.run_id = res.run_id
) ranked WHERE latest_rank = 1;
UPDATE schema_version SET version = 2;
)sql";

namespace {

// kMigrations[n] takes version n to n + 1.
constexpr std::array<const std::string_view*, 2> kMigrations = {&kSchemaV1, &kMigrationV1ToV2};
static_assert(kMigrations.size() == kSchemaVersion);

Result<int64_t> query_int(Backend& backend, std::string_view sql) {
  auto statement = backend.prepare(sql);
  if (!statement) return fail(statement.error());
  if (auto ok = (*statement)->bind({}); !ok) return fail(ok.error());
  auto row = (*statement)->step();
  if (!row) return fail(row.error());
  return *row ? (*statement)->column_int(0) : 0;
}

}  // namespace

Result<int> read_schema_version(Backend& backend) {
  const char* exists_sql =
      backend.dialect() == Dialect::kSqlite
          ? "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
          : "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version' AND "
            "table_schema = current_schema()";
  auto exists = query_int(backend, exists_sql);
  if (!exists) return fail(exists.error());
  if (*exists == 0) return 0;
  auto version = query_int(backend, "SELECT max(version) FROM schema_version");
  if (!version) return fail(version.error());
  return static_cast<int>(*version);
}

Result<int> migrate(Backend& backend, int target) {
  int reached = 0;
  auto ok = backend.transaction([&]() -> Result<void> {
    // PostgreSQL: one migrator at a time (SQLite's BEGIN IMMEDIATE already is).
    if (backend.dialect() == Dialect::kPostgres) {
      if (auto locked = backend.exec("SELECT pg_advisory_xact_lock(7270013)"); !locked) return locked;
    }
    auto version = read_schema_version(backend);
    if (!version) return fail(version.error());
    if (*version > kSchemaVersion)
      return fail(ErrorCode::kUnsupported,
                  fmt::format("{} has results schema version {}, newer than the version {} this ixbench knows: use "
                              "a newer ixbench with it (or another --db)",
                              backend.describe(), *version, kSchemaVersion));
    for (int from = *version; from < target; ++from) {
      if (auto step = backend.exec(*kMigrations[from]); !step)
        return fail(step.error().with_context(
            fmt::format("migrating the results schema from version {} to {}", from, from + 1)));
    }
    reached = std::max(*version, target);
    return {};
  });
  if (!ok) return fail(ok.error());
  return reached;
}

}  // namespace ix::store
