// The Store over a Backend: the SQL is written once here. Ingest compares a content digest of
// each result (every column, its evals and artifacts) with the stored one, so an unchanged result
// is not written at all and a re-ingest leaves every table byte-identical.
#include "store/store.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "common/strings.h"
#include "store/schema.h"
#include "store/sql_store.h"

namespace ix::store {

std::string_view result_kind_name(ResultKind kind) {
  return kind == ResultKind::kPredicted ? "predicted" : "measured";
}
std::string_view scenario_name(Scenario scenario) {
  return scenario == Scenario::kAgentic ? "agentic" : "fixed-seq-len";
}

namespace {

// Result columns in binding order (the table's id is the backend's; the digest is last).
constexpr std::array<std::string_view, 42> kResultColumns = {"run_id",
                                                             "result_stem",
                                                             "kind",
                                                             "scenario",
                                                             "model",
                                                             "model_prefix",
                                                             "hw",
                                                             "framework",
                                                             "precision",
                                                             "spec_decoding",
                                                             "disagg",
                                                             "is_multinode",
                                                             "tp",
                                                             "ep",
                                                             "pp",
                                                             "dp_attention",
                                                             "num_gpus",
                                                             "conc",
                                                             "isl",
                                                             "osl",
                                                             "image",
                                                             "recipe_fingerprint",
                                                             "config_key",
                                                             "tput_per_gpu",
                                                             "output_tput_per_gpu",
                                                             "input_tput_per_gpu",
                                                             "median_ttft",
                                                             "p90_ttft",
                                                             "median_tpot",
                                                             "median_e2el",
                                                             "p90_e2el",
                                                             "median_intvty",
                                                             "p90_intvty",
                                                             "avg_power_w",
                                                             "total_gpu_energy_j",
                                                             "joules_per_output_token",
                                                             "joules_per_total_token",
                                                             "power_valid",
                                                             "agg_json",
                                                             "raw_json",
                                                             "row_json",
                                                             "digest"};
constexpr size_t kKeyColumns = 3;  // run_id, result_stem, kind

std::string column_list(std::string_view prefix = "") {
  std::string out;
  for (auto name : kResultColumns) out += fmt::format("{}{}{}", out.empty() ? "" : ", ", prefix, name);
  return out;
}

std::vector<Value> result_values(const ResultRecord& r) {
  auto optional_bool = [](const std::optional<bool>& b) { return b ? Value(int64_t{*b}) : Value(std::monostate{}); };
  return {r.run_id,
          r.result_stem,
          std::string(result_kind_name(r.kind)),
          std::string(scenario_name(r.scenario)),
          r.model,
          r.model_prefix,
          r.hw,
          r.framework,
          r.precision,
          r.spec_decoding,
          int64_t{r.disagg},
          int64_t{r.is_multinode},
          r.tp,
          r.ep,
          r.pp,
          r.dp_attention,
          r.num_gpus,
          r.conc,
          r.isl,
          r.osl,
          r.image,
          r.recipe_fingerprint,
          r.config_key,
          optional_value(r.tput_per_gpu),
          optional_value(r.output_tput_per_gpu),
          optional_value(r.input_tput_per_gpu),
          optional_value(r.median_ttft),
          optional_value(r.p90_ttft),
          optional_value(r.median_tpot),
          optional_value(r.median_e2el),
          optional_value(r.p90_e2el),
          optional_value(r.median_intvty),
          optional_value(r.p90_intvty),
          optional_value(r.avg_power_w),
          optional_value(r.total_gpu_energy_j),
          optional_value(r.joules_per_output_token),
          optional_value(r.joules_per_total_token),
          optional_bool(r.power_valid),
          r.agg_json,
          r.raw_json,
          r.row_json};
}

// FNV-1a over a tagged encoding of every value: stable across builds and platforms.
struct Digest {
  uint64_t hash = 1469598103934665603ULL;
  void add(std::string_view bytes) {
    for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ULL;
    hash = (hash ^ 0xff) * 1099511628211ULL;
  }
  void add_value(const Value& value) {
    if (const auto* n = std::get_if<int64_t>(&value))
      add(fmt::format("i{}", *n));
    else if (const auto* d = std::get_if<double>(&value))
      add(fmt::format("d{}", *d));
    else if (const auto* s = std::get_if<std::string>(&value))
      add("s" + *s);
    else
      add("n");
  }
};

std::string result_digest(const ResultRecord& r, const std::vector<Value>& values) {
  Digest digest;
  for (const auto& value : values) digest.add_value(value);
  for (const auto& e : r.evals) {
    digest.add(fmt::format("eval|{}|{}|{}|{}|{}|{}|{}", e.task, e.filter, e.metric, e.value, e.stderr_value,
                           e.n_samples, e.complete));
  }
  for (const auto& a : r.artifacts) digest.add(fmt::format("artifact|{}|{}", a.kind, a.path));
  return fmt::format("{:016x}", digest.hash);
}

std::string key_of(std::string_view run_id, std::string_view stem, std::string_view kind) {
  return fmt::format("{}\x1f{}\x1f{}", run_id, stem, kind);
}

ResultRecord read_result(const Statement& s) {
  ResultRecord r;
  int c = 0;
  auto text = [&] { return s.column_text(c++); };
  auto integer = [&] { return s.column_int(c++); };
  auto number = [&]() -> std::optional<double> {
    const int at = c++;
    return s.is_null(at) ? std::nullopt : std::optional<double>(s.column_double(at));
  };
  r.run_id = text();
  r.result_stem = text();
  r.kind = text() == "predicted" ? ResultKind::kPredicted : ResultKind::kMeasured;
  r.scenario = text() == "agentic" ? Scenario::kAgentic : Scenario::kFixedSeqLen;
  r.model = text(), r.model_prefix = text(), r.hw = text(), r.framework = text(), r.precision = text();
  r.spec_decoding = text();
  r.disagg = integer() != 0, r.is_multinode = integer() != 0;
  r.tp = integer(), r.ep = integer(), r.pp = integer();
  r.dp_attention = text();
  r.num_gpus = integer(), r.conc = integer(), r.isl = integer(), r.osl = integer();
  r.image = text(), r.recipe_fingerprint = text(), r.config_key = text();
  for (auto* field : {&r.tput_per_gpu, &r.output_tput_per_gpu, &r.input_tput_per_gpu, &r.median_ttft, &r.p90_ttft,
                      &r.median_tpot, &r.median_e2el, &r.p90_e2el, &r.median_intvty, &r.p90_intvty, &r.avg_power_w,
                      &r.total_gpu_energy_j, &r.joules_per_output_token, &r.joules_per_total_token})
    *field = number();
  if (const int at = c++; !s.is_null(at)) r.power_valid = s.column_int(at) != 0;
  r.agg_json = text(), r.raw_json = text(), r.row_json = text();
  return r;
}

// The latest view's WHERE clause for `query`, its parameters appended to `params`.
std::string where_clause(const ResultQuery& query, std::vector<Value>& params) {
  std::vector<std::string> terms;
  auto in_list = [&](std::string_view column, const std::vector<std::string>& values) {
    std::string marks;
    for (const auto& value : values) {
      marks += marks.empty() ? "?" : ", ?";
      params.emplace_back(value);
    }
    return fmt::format("{} IN ({})", column, marks);
  };
  if (!query.models.empty()) {
    const std::string by_prefix = in_list("model_prefix", query.models);
    terms.push_back(fmt::format("({} OR {})", by_prefix, in_list("model", query.models)));
  }
  if (!query.hardware.empty()) terms.push_back(in_list("hw", query.hardware));
  if (!query.frameworks.empty()) terms.push_back(in_list("framework", query.frameworks));
  if (!query.precisions.empty()) terms.push_back(in_list("precision", query.precisions));
  auto compare = [&](std::string_view column, std::string_view op, Value value) {
    params.push_back(std::move(value));
    terms.push_back(fmt::format("{} {} ?", column, op));
  };
  auto equals = [&](std::string_view column, Value value) { compare(column, "=", std::move(value)); };
  if (query.scenario) equals("scenario", std::string(scenario_name(*query.scenario)));
  if (query.isl) equals("isl", *query.isl);
  if (query.osl) equals("osl", *query.osl);
  if (query.kind) equals("kind", std::string(result_kind_name(*query.kind)));
  if (!query.from_date.empty()) compare("substr(run_created_at, 1, 10)", ">=", query.from_date);
  if (!query.to_date.empty()) compare("substr(run_created_at, 1, 10)", "<=", query.to_date);
  std::string out;
  for (const auto& term : terms) out += (out.empty() ? " WHERE " : " AND ") + term;
  return out;
}

class SqlStore final : public Store {
 public:
  SqlStore(std::unique_ptr<Backend> backend, int version) : backend_(std::move(backend)), version_(version) {}

  Result<void> put_run(const RunRecord& run) override {
    return backend_->transaction([&] { return write_run(run); });
  }

  Result<IngestStats> put_results(const std::vector<ResultRecord>& results) override {
    return put_run_results(std::nullopt, results);
  }

  Result<IngestStats> put_run_results(const std::optional<RunRecord>& run,
                                      const std::vector<ResultRecord>& results) override {
    IngestStats stats;
    auto ok = backend_->transaction([&]() -> Result<void> {
      stats = {};
      if (run) {
        if (auto written = write_run(*run); !written) return written;
      }
      auto digests = stored_digests(results);
      if (!digests) return fail(digests.error());
      for (const auto& result : results) {
        if (auto written = write_result(result, *digests, stats); !written) return written;
      }
      return {};
    });
    if (!ok) return fail(ok.error());
    return stats;
  }

  Result<std::vector<ResultRecord>> latest(const ResultQuery& query) override;
  Result<Facets> facets() override;
  Result<std::vector<RunRecord>> runs() override;
  Result<bool> has_artifact(const std::string& path) override;
  Result<std::vector<std::string>> result_stems(const std::string& run_id, ResultKind kind) override;
  Result<std::string> dump() override;
  int schema_version() const override { return version_; }
  std::string describe() const override { return backend_->describe(); }

 private:
  // A statement prepared once per store and reused (ingest of a sweep binds it thousands of times).
  Result<Statement*> cached(std::string_view name, std::string_view sql) {
    auto& slot = statements_[std::string(name)];
    if (!slot) {
      auto prepared = backend_->prepare(sql);
      if (!prepared) return fail(prepared.error());
      slot = std::move(*prepared);
    }
    return slot.get();
  }

  Result<void> run_statement(std::string_view name, std::string_view sql, const std::vector<Value>& params) {
    auto statement = cached(name, sql);
    if (!statement) return fail(statement.error());
    if (auto ok = (*statement)->bind(params); !ok) return ok;
    while (true) {
      auto row = (*statement)->step();
      if (!row) return fail(row.error());
      if (!*row) return {};
    }
  }

  Result<void> write_run(const RunRecord& run);
  // The stored digest of every result of the runs `results` name, by key_of().
  Result<std::map<std::string, std::string>> stored_digests(const std::vector<ResultRecord>& results);
  Result<void> write_result(const ResultRecord& result, const std::map<std::string, std::string>& digests,
                            IngestStats& stats);
  Result<void> write_children(const ResultRecord& result, const std::string& kind, bool replace);
  Result<void> attach_children(const std::string& where, const std::vector<Value>& params,
                               std::vector<ResultRecord>& results);

  std::unique_ptr<Backend> backend_;
  int version_;
  std::map<std::string, std::unique_ptr<Statement>> statements_;
};

Result<void> SqlStore::write_run(const RunRecord& run) {
  auto existing =
      cached("run.get", "SELECT created_at, source, host, ixbench_version, manifest_json FROM runs WHERE run_id = ?");
  if (!existing) return fail(existing.error());
  if (auto ok = (*existing)->bind({run.run_id}); !ok) return ok;
  auto row = (*existing)->step();
  if (!row) return fail(row.error());
  if (*row) {
    const Statement& s = **existing;
    if (s.column_text(0) == run.created_at && s.column_text(1) == run.source && s.column_text(2) == run.host &&
        s.column_text(3) == run.ixbench_version && s.column_text(4) == run.manifest_json)
      return {};
  }
  return run_statement("run.put",
                       "INSERT INTO runs (run_id, created_at, source, host, ixbench_version, manifest_json) VALUES "
                       "(?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET created_at = excluded.created_at, "
                       "source = excluded.source, host = excluded.host, ixbench_version = excluded.ixbench_version, "
                       "manifest_json = excluded.manifest_json",
                       {run.run_id, run.created_at, run.source, run.host, run.ixbench_version, run.manifest_json});
}

// One query per run rather than one per result: on PostgreSQL each statement is a round trip.
Result<std::map<std::string, std::string>> SqlStore::stored_digests(const std::vector<ResultRecord>& results) {
  std::map<std::string, std::string> out;
  std::set<std::string> run_ids;
  for (const auto& r : results) run_ids.insert(r.run_id);
  auto statement = cached("result.digests", "SELECT result_stem, kind, digest FROM results WHERE run_id = ?");
  if (!statement) return fail(statement.error());
  for (const auto& run_id : run_ids) {
    if (auto ok = (*statement)->bind({run_id}); !ok) return fail(ok.error());
    while (true) {
      auto row = (*statement)->step();
      if (!row) return fail(row.error());
      if (!*row) break;
      const Statement& st = **statement;
      out[key_of(run_id, st.column_text(0), st.column_text(1))] = st.column_text(2);
    }
  }
  return out;
}

Result<void> SqlStore::write_result(const ResultRecord& result, const std::map<std::string, std::string>& digests,
                                    IngestStats& stats) {
  std::vector<Value> values = result_values(result);
  const std::string digest = result_digest(result, values);
  values.emplace_back(digest);
  const std::string kind(result_kind_name(result.kind));
  const auto stored = digests.find(key_of(result.run_id, result.result_stem, kind));
  const bool exists = stored != digests.end();
  if (exists && stored->second == digest) {
    ++stats.unchanged;
    return {};
  }
  ++(exists ? stats.updated : stats.inserted);

  static const std::string upsert = [] {
    std::string marks, updates;
    for (size_t i = 0; i < kResultColumns.size(); ++i) {
      marks += i == 0 ? "?" : ", ?";
      if (i >= kKeyColumns)
        updates += fmt::format("{}{} = excluded.{}", updates.empty() ? "" : ", ", kResultColumns[i], kResultColumns[i]);
    }
    return fmt::format("INSERT INTO results ({}) VALUES ({}) ON CONFLICT (run_id, result_stem, kind) DO UPDATE SET {}",
                       column_list(), marks, updates);
  }();
  if (auto ok = run_statement("result.put", upsert, values); !ok) return ok;
  return write_children(result, kind, exists);
}

Result<void> SqlStore::write_children(const ResultRecord& result, const std::string& kind, bool replace) {
  // A result new to the store has no children to clear (two statements saved per result).
  const std::vector<Value> key = {result.run_id, result.result_stem, kind};
  if (replace) {
    if (auto ok =
            run_statement("evals.clear", "DELETE FROM evals WHERE run_id = ? AND result_stem = ? AND kind = ?", key);
        !ok)
      return ok;
    if (auto ok = run_statement("artifacts.clear",
                                "DELETE FROM artifacts WHERE run_id = ? AND result_stem = ? AND kind = ?", key);
        !ok)
      return ok;
  }
  for (const auto& e : result.evals) {
    auto ok = run_statement(
        "eval.put",
        "INSERT INTO evals (run_id, result_stem, kind, task, eval_filter, metric, value, stderr_value, n_samples, "
        "complete) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, result_stem, kind, task, eval_filter, "
        "metric) DO UPDATE SET value = excluded.value, stderr_value = excluded.stderr_value, n_samples = "
        "excluded.n_samples, complete = excluded.complete",
        {result.run_id, result.result_stem, kind, e.task, e.filter, e.metric, e.value, e.stderr_value, e.n_samples,
         int64_t{e.complete}});
    if (!ok) return ok;
  }
  for (const auto& a : result.artifacts) {
    auto ok =
        run_statement("artifact.put",
                      "INSERT INTO artifacts (run_id, result_stem, kind, artifact_kind, path) VALUES (?, ?, ?, ?, "
                      "?) ON CONFLICT (run_id, result_stem, kind, artifact_kind, path) DO NOTHING",
                      {result.run_id, result.result_stem, kind, a.kind, a.path});
    if (!ok) return ok;
  }
  return {};
}

Result<std::vector<ResultRecord>> SqlStore::latest(const ResultQuery& query) {
  std::vector<Value> params;
  const std::string where = where_clause(query, params);
  std::string sql = fmt::format(
      "SELECT {}, run_created_at FROM latest_results{} ORDER BY model_prefix, model, hw, framework, precision, isl, "
      "osl, tp, ep, "
      "conc, kind, run_id, result_stem",
      column_list(), where);
  if (query.limit > 0) sql += fmt::format(" LIMIT {}", query.limit);
  auto statement = backend_->prepare(sql);
  if (!statement) return fail(statement.error());
  if (auto ok = (*statement)->bind(params); !ok) return fail(ok.error());
  std::vector<ResultRecord> results;
  while (true) {
    auto row = (*statement)->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    results.push_back(read_result(**statement));
    results.back().created_at = (*statement)->column_text(static_cast<int>(kResultColumns.size()));
  }
  if (auto ok = attach_children(where, params, results); !ok) return fail(ok.error());
  return results;
}

// Evals and artifacts of the selected results: one query each over the same filtered view.
Result<void> SqlStore::attach_children(const std::string& where, const std::vector<Value>& params,
                                       std::vector<ResultRecord>& results) {
  if (results.empty()) return {};
  std::map<std::string, ResultRecord*> by_key;
  for (auto& r : results) by_key[key_of(r.run_id, r.result_stem, result_kind_name(r.kind))] = &r;
  const std::string selected = fmt::format("(SELECT run_id, result_stem, kind FROM latest_results{}) l", where);
  auto read = [&](std::string_view columns, std::string_view table,
                  const std::function<void(const Statement&, ResultRecord&)>& add) -> Result<void> {
    auto statement = backend_->prepare(fmt::format(
        "SELECT c.run_id, c.result_stem, c.kind, {} FROM {} c JOIN {} ON c.run_id = l.run_id AND c.result_stem = "
        "l.result_stem AND c.kind = l.kind ORDER BY 1, 2, 3, 4, 5, 6",
        columns, table, selected));
    if (!statement) return fail(statement.error());
    if (auto ok = (*statement)->bind(params); !ok) return ok;
    while (true) {
      auto row = (*statement)->step();
      if (!row) return fail(row.error());
      if (!*row) return {};
      const Statement& s = **statement;
      auto found = by_key.find(key_of(s.column_text(0), s.column_text(1), s.column_text(2)));
      if (found != by_key.end()) add(s, *found->second);
    }
  };
  auto evals = read("c.task, c.eval_filter, c.metric, c.value, c.stderr_value, c.n_samples, c.complete", "evals",
                    [](const Statement& s, ResultRecord& r) {
                      r.evals.push_back({.task = s.column_text(3),
                                         .filter = s.column_text(4),
                                         .metric = s.column_text(5),
                                         .value = s.column_double(6),
                                         .stderr_value = s.column_double(7),
                                         .n_samples = s.column_int(8),
                                         .complete = s.column_int(9) != 0});
                    });
  if (!evals) return evals;
  return read("c.artifact_kind, c.path, ''", "artifacts", [](const Statement& s, ResultRecord& r) {
    r.artifacts.push_back({.kind = s.column_text(3), .path = s.column_text(4)});
  });
}

Result<bool> SqlStore::has_artifact(const std::string& path) {
  auto statement = cached("has_artifact", "SELECT 1 FROM artifacts WHERE path = ? LIMIT 1");
  if (!statement) return fail(statement.error());
  if (auto ok = (*statement)->bind({path}); !ok) return fail(ok.error());
  auto row = (*statement)->step();
  if (!row) return fail(row.error());
  return *row;
}

Result<std::vector<std::string>> SqlStore::result_stems(const std::string& run_id, ResultKind kind) {
  auto statement =
      cached("result_stems", "SELECT result_stem FROM results WHERE run_id = ? AND kind = ? ORDER BY result_stem");
  if (!statement) return fail(statement.error());
  if (auto ok = (*statement)->bind({run_id, std::string(result_kind_name(kind))}); !ok) return fail(ok.error());
  std::vector<std::string> stems;
  while (true) {
    auto row = (*statement)->step();
    if (!row) return fail(row.error());
    if (!*row) return stems;
    stems.push_back((*statement)->column_text(0));
  }
}

Result<std::vector<std::string>> strings_of(Backend& backend, std::string_view sql) {
  auto statement = backend.prepare(sql);
  if (!statement) return fail(statement.error());
  if (auto ok = (*statement)->bind({}); !ok) return fail(ok.error());
  std::vector<std::string> out;
  while (true) {
    auto row = (*statement)->step();
    if (!row) return fail(row.error());
    if (!*row) return out;
    out.push_back((*statement)->column_text(0));
  }
}

// Facets read `results`, not the latest view: every value listed is an identity column of the
// view's partition, and each partition has its one latest row, so the distinct values are the
// same — without ranking every row (with its JSON documents) once per list. The count and dates
// group the partitions instead (an order of magnitude faster on 100k rows: docs/performance.md).
constexpr std::string_view kLatestPartition =
    "r.model, r.model_prefix, r.hw, r.framework, r.precision, r.spec_decoding, r.disagg, r.is_multinode, r.tp, "
    "r.ep, r.pp, r.dp_attention, r.num_gpus, r.scenario, r.conc, r.isl, r.osl, r.kind";  // as in schema.cc

Result<Facets> SqlStore::facets() {
  Facets facets;
  const std::pair<std::string_view, std::vector<std::string>*> lists[] = {
      {"hw", &facets.hardware}, {"framework", &facets.frameworks}, {"precision", &facets.precisions}};
  for (const auto& [column, out] : lists) {
    auto values = strings_of(*backend_, fmt::format("SELECT DISTINCT {0} FROM results ORDER BY {0}", column));
    if (!values) return fail(values.error());
    *out = std::move(*values);
  }
  // One pass over the partitions gives the panels, and from them the models, scenarios, ISL/OSL
  // pairs, the count and the dates.
  auto panels = backend_->prepare(fmt::format(
      "SELECT m, scenario, isl, osl, count(*), min(newest), max(newest) FROM (SELECT CASE WHEN r.model_prefix <> '' "
      "THEN r.model_prefix ELSE r.model END AS m, r.scenario, r.isl, r.osl, max(runs.created_at) AS newest FROM "
      "results r JOIN runs ON runs.run_id = r.run_id GROUP BY {}) points GROUP BY m, scenario, isl, osl ORDER BY m, "
      "scenario, isl, osl",
      kLatestPartition));
  if (!panels) return fail(panels.error());
  if (auto ok = (*panels)->bind({}); !ok) return fail(ok.error());
  std::set<std::string> models, scenarios;
  std::set<std::pair<int64_t, int64_t>> isl_osl;
  while (true) {
    auto row = (*panels)->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    const Statement& p = **panels;
    Panel panel{.model = p.column_text(0),
                .scenario = p.column_text(1),
                .isl = p.column_int(2),
                .osl = p.column_int(3),
                .results = p.column_int(4)};
    const std::string first = p.column_text(5).substr(0, 10), last = p.column_text(6).substr(0, 10);
    if (facets.first_date.empty() || first < facets.first_date) facets.first_date = first;
    if (last > facets.last_date) facets.last_date = last;
    models.insert(panel.model), scenarios.insert(panel.scenario);
    if (panel.scenario == scenario_name(Scenario::kFixedSeqLen)) isl_osl.emplace(panel.isl, panel.osl);
    facets.results += panel.results;
    facets.panels.push_back(std::move(panel));
  }
  facets.models.assign(models.begin(), models.end());
  facets.scenarios.assign(scenarios.begin(), scenarios.end());
  facets.isl_osl.assign(isl_osl.begin(), isl_osl.end());
  return facets;
}

Result<std::vector<RunRecord>> SqlStore::runs() {
  auto statement = backend_->prepare(
      "SELECT run_id, created_at, source, host, ixbench_version, manifest_json FROM runs ORDER BY created_at, run_id");
  if (!statement) return fail(statement.error());
  if (auto ok = (*statement)->bind({}); !ok) return fail(ok.error());
  std::vector<RunRecord> out;
  while (true) {
    auto row = (*statement)->step();
    if (!row) return fail(row.error());
    if (!*row) return out;
    const Statement& s = **statement;
    out.push_back(
        {s.column_text(0), s.column_text(1), s.column_text(2), s.column_text(3), s.column_text(4), s.column_text(5)});
  }
}

Result<std::string> SqlStore::dump() {
  const std::pair<std::string_view, std::string> tables[] = {
      {"schema_version", "version"},
      {"runs", "run_id, created_at, source, host, ixbench_version, manifest_json"},
      {"results", "id, " + column_list()},
      {"evals", "run_id, result_stem, kind, task, eval_filter, metric, value, stderr_value, n_samples, complete"},
      {"artifacts", "run_id, result_stem, kind, artifact_kind, path"}};
  std::string out;
  for (const auto& [table, columns] : tables) {
    const size_t count = static_cast<size_t>(std::count(columns.begin(), columns.end(), ',')) + 1;
    auto statement = backend_->prepare(fmt::format("SELECT {} FROM {} ORDER BY {}", columns, table, columns));
    if (!statement) return fail(statement.error());
    if (auto ok = (*statement)->bind({}); !ok) return fail(ok.error());
    while (true) {
      auto row = (*statement)->step();
      if (!row) return fail(row.error());
      if (!*row) break;
      out += table;
      for (size_t c = 0; c < count; ++c) {
        const int at = static_cast<int>(c);
        out += (*statement)->is_null(at) ? "|NULL" : "|" + (*statement)->column_text(at);
      }
      out += '\n';
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Backend>> open_backend(const std::string& location) {
  if (location.starts_with("postgresql://") || location.starts_with("postgres://")) return open_postgres(location);
  std::string path = location.starts_with("sqlite:") ? location.substr(7) : location;
  if (path.empty())
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("results database '{}' names no file: give a path, sqlite:PATH or postgresql://...", location));
  return open_sqlite(path);
}

Result<std::unique_ptr<Store>> make_sql_store(std::unique_ptr<Backend> backend) {
  auto version = migrate(*backend, kSchemaVersion);
  if (!version) return fail(version.error());
  return std::unique_ptr<Store>(std::make_unique<SqlStore>(std::move(backend), *version));
}

Result<std::unique_ptr<Store>> open_store(const std::string& location) {
  auto backend = open_backend(location);
  if (!backend) return fail(backend.error());
  return make_sql_store(std::move(*backend));
}

}  // namespace ix::store
