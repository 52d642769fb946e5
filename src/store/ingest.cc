#include "store/ingest.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "common/file_io.h"
#include "common/json_io.h"

namespace ix::store {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;

const bj::value* find_path(const bj::object& object, std::initializer_list<std::string_view> path) {
  const bj::object* at = &object;
  const bj::value* value = nullptr;
  for (auto key : path) {
    if (at == nullptr) return nullptr;
    value = at->if_contains(key);
    if (value == nullptr) return nullptr;
    at = value->if_object();
  }
  return value;
}

// Field readers: absent → the fallback; present with the wrong type → an error naming the field.
class AggReader {
 public:
  AggReader(const bj::object& object, std::string where) : object_(object), where_(std::move(where)) {}

  std::string text(std::string_view key, bool required = false) {
    const bj::value* value = object_.if_contains(key);
    if (value == nullptr || value->is_null()) {
      if (required) error(fmt::format("missing field '{}'", key));
      return "";
    }
    if (value->is_string()) return std::string(value->as_string());
    if (value->is_bool()) return value->as_bool() ? "true" : "false";
    error(fmt::format("field '{}' must be a string", key));
    return "";
  }

  int64_t integer(std::string_view key, int64_t fallback, bool required = false) {
    const bj::value* value = object_.if_contains(key);
    if (value == nullptr || value->is_null()) {
      if (required) error(fmt::format("missing field '{}'", key));
      return fallback;
    }
    if (value->is_int64()) return value->as_int64();
    if (value->is_uint64() && value->as_uint64() <= INT64_MAX) return static_cast<int64_t>(value->as_uint64());
    if (value->is_double() && std::trunc(value->as_double()) == value->as_double() &&
        std::abs(value->as_double()) < 9e15)
      return static_cast<int64_t>(value->as_double());
    error(fmt::format("field '{}' must be a whole number, not {}", key, json::to_string(*value)));
    return fallback;
  }

  bool boolean(std::string_view key) {
    const bj::value* value = object_.if_contains(key);
    if (value == nullptr || value->is_null()) return false;
    if (value->is_bool()) return value->as_bool();
    if (value->is_int64()) return value->as_int64() != 0;
    if (value->is_string() && (value->as_string() == "true" || value->as_string() == "false"))
      return value->as_string() == "true";
    error(fmt::format("field '{}' must be true or false, not {}", key, json::to_string(*value)));
    return false;
  }

  std::optional<bool> optional_boolean(std::string_view key) {
    const bj::value* value = object_.if_contains(key);
    if (value == nullptr || value->is_null()) return std::nullopt;
    return boolean(key);
  }

  std::optional<double> number_at(const bj::value* value, std::string_view name) {
    if (value == nullptr || value->is_null()) return std::nullopt;
    if (value->is_number()) return value->to_number<double>();
    error(fmt::format("field '{}' must be a number, not {}", name, json::to_string(*value)));
    return std::nullopt;
  }
  std::optional<double> number(std::string_view key) { return number_at(object_.if_contains(key), key); }
  std::optional<double> nested(std::initializer_list<std::string_view> path, std::string_view name) {
    return number_at(find_path(object_, path), name);
  }

  Result<void> status() const {
    if (errors_.empty()) return {};
    return fail(ErrorCode::kParse, fmt::format("{}: {}", where_, fmt::join(errors_, "; ")));
  }

 private:
  void error(std::string message) { errors_.push_back(std::move(message)); }
  const bj::object& object_;
  std::string where_;
  std::vector<std::string> errors_;
};

void read_identity(AggReader& in, ResultRecord& r, bool agentic) {
  r.hw = in.text("hw", true);
  r.conc = in.integer("conc", 0, true);
  r.model = in.text("model");
  r.model_prefix = in.text("infmax_model_prefix");
  r.framework = in.text("framework", true);
  r.precision = in.text("precision", true);
  r.spec_decoding = in.text("spec_decoding");
  r.disagg = in.boolean("disagg");
  r.is_multinode = in.boolean("is_multinode");
  r.tp = in.integer("tp", 0);
  r.ep = in.integer("ep", 0);
  r.pp = in.integer("pp", 1);
  r.dp_attention = in.text("dp_attention");
  r.isl = in.integer("isl", 0, !agentic);
  r.osl = in.integer("osl", 0, !agentic);
  r.image = in.text("image");
  r.recipe_fingerprint = in.text("recipe_fingerprint");
  r.config_key = in.text("config_key");
  // GPUs: the multi-node split when there is one, else TP × PP × PCP (process_result.py's count).
  const int64_t prefill = in.integer("num_prefill_gpu", 0), decode = in.integer("num_decode_gpu", 0);
  r.num_gpus = prefill + decode > 0 ? prefill + decode : r.tp * r.pp * in.integer("pcp_size", 1);
}

void read_headline(AggReader& in, ResultRecord& r) {
  if (r.scenario == Scenario::kAgentic) {
    auto lat = [&](std::string_view metric, std::string_view stat) {
      return in.nested({"request_metrics", "latency", metric, stat}, fmt::format("request_metrics.latency.{}", metric));
    };
    auto per_gpu = [&](std::string_view key) {
      return in.nested({"request_metrics", "throughput", "per_gpu", key}, "request_metrics.throughput.per_gpu");
    };
    r.tput_per_gpu = per_gpu("total_tput_tps"), r.output_tput_per_gpu = per_gpu("output_tput_tps");
    r.input_tput_per_gpu = per_gpu("input_tput_tps");
    r.median_ttft = lat("ttft", "p50"), r.p90_ttft = lat("ttft", "p90"), r.median_tpot = lat("tpot", "p50");
    r.median_e2el = lat("e2el", "p50"), r.p90_e2el = lat("e2el", "p90");
    r.median_intvty = lat("intvty", "p50"), r.p90_intvty = lat("intvty", "p90");
  } else {
    r.tput_per_gpu = in.number("tput_per_gpu"), r.output_tput_per_gpu = in.number("output_tput_per_gpu");
    r.input_tput_per_gpu = in.number("input_tput_per_gpu");
    r.median_ttft = in.number("median_ttft"), r.p90_ttft = in.number("p90_ttft");
    r.median_tpot = in.number("median_tpot"), r.median_e2el = in.number("median_e2el");
    r.p90_e2el = in.number("p90_e2el"), r.median_intvty = in.number("median_intvty");
    r.p90_intvty = in.number("p90_intvty");
  }
  r.avg_power_w = in.number("avg_power_w"), r.total_gpu_energy_j = in.number("total_gpu_energy_j");
  r.joules_per_output_token = in.number("joules_per_output_token");
  r.joules_per_total_token = in.number("joules_per_total_token");
  r.power_valid = in.optional_boolean("power_valid");  // aggregate_power.py writes 1/0
}

// A list item's stem: its identity, as InferenceX names result files.
std::string identity_stem(const ResultRecord& r) {
  return fmt::format("{}_{}_{}_{}_{}_tp{}-pp{}-ep{}-dpa{}_disagg-{}_spec-{}_gpus{}_{}_conc{}_{}",
                     r.model_prefix.empty() ? r.model : r.model_prefix, r.isl, r.osl, r.precision, r.framework, r.tp,
                     r.pp, r.ep, r.dp_attention, r.disagg, r.spec_decoding.empty() ? "none" : r.spec_decoding,
                     r.num_gpus, scenario_name(r.scenario), r.conc, r.hw);
}

Result<ResultRecord> result_from_object(const bj::value& value, const std::string& where) {
  if (!value.is_object()) return fail(ErrorCode::kParse, fmt::format("{}: an agg record must be a JSON object", where));
  const bj::object& object = value.as_object();
  AggReader in(object, where);
  ResultRecord r;
  r.scenario =
      in.text("scenario_type").find("agentic") != std::string::npos ? Scenario::kAgentic : Scenario::kFixedSeqLen;
  read_identity(in, r, r.scenario == Scenario::kAgentic);
  read_headline(in, r);
  if (auto ok = in.status(); !ok) return fail(ok.error());
  r.agg_json = json::to_string(value);
  return r;
}

}  // namespace

Result<std::vector<ResultRecord>> results_from_agg_json(std::string_view text, std::string_view source_name,
                                                        std::string_view stem) {
  auto value = json::parse(text, source_name);
  if (!value) return fail(value.error());
  std::vector<ResultRecord> out;
  if (const auto* list = value->if_array()) {
    std::map<std::string, int> seen;
    for (size_t i = 0; i < list->size(); ++i) {
      auto record = result_from_object((*list)[i], fmt::format("{}: record [{}]", source_name, i));
      if (!record) return fail(record.error());
      record->result_stem = identity_stem(*record);
      // Two list items of one identity (repeated runs of a point) keep both, in list order.
      if (const int n = seen[record->result_stem]++; n > 0) record->result_stem += fmt::format("#{}", n + 1);
      out.push_back(std::move(*record));
    }
    return out;
  }
  auto record = result_from_object(*value, std::string(source_name));
  if (!record) return fail(record.error());
  record->result_stem = std::string(stem);
  out.push_back(std::move(*record));
  return out;
}

namespace {

uint64_t fnv1a(std::string_view bytes) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ULL;
  return hash;
}

std::string iso_utc(std::chrono::system_clock::time_point when) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(when));
}

// The folder's files as they are read, with the newest modification time seen.
class FolderReader {
 public:
  explicit FolderReader(fs::path dir) : dir_(std::move(dir)) {}

  Result<std::string> text(const fs::path& path, std::string_view what) {
    std::error_code ec;
    const auto mtime = fs::last_write_time(path, ec);
    if (!ec) newest_ = std::max(newest_, std::chrono::file_clock::to_sys(mtime));
    return files::read_text_file(path, files::kMaxResultFileBytes, what);
  }
  Result<bj::value> json(const fs::path& path, std::string_view what) {
    auto content = text(path, what);
    if (!content) return fail(content.error());
    return json::parse(*content, path.string());
  }
  std::string created_at() const { return iso_utc(newest_); }

 private:
  fs::path dir_;
  std::chrono::system_clock::time_point newest_{};
};

struct EvalFile {
  fs::path path;
  int64_t conc = 0;
  std::string model_prefix;  // meta_env.json's, "" = any
  std::vector<EvalRecord> evals;
};

// lm-eval's results JSON: results.<task>["<metric>,<filter>"] and ["<metric>_stderr,<filter>"].
std::optional<std::vector<EvalRecord>> evals_of(const bj::value& value) {
  const auto* object = value.if_object();
  const bj::value* results = object ? object->if_contains("results") : nullptr;
  if (results == nullptr || !results->is_object() ||
      !(object->contains("n-samples") || object->contains("lm_eval_version")))
    return std::nullopt;
  bool complete = true;
  if (const auto* c = find_path(*object, {"ixbench", "complete"}); c && c->is_bool()) complete = c->as_bool();
  std::vector<EvalRecord> out;
  for (const auto& [task, scores] : results->as_object()) {
    if (!scores.is_object()) continue;
    int64_t samples = 0;
    if (const auto* n = find_path(*object, {"n-samples", task, "effective"}); n && n->is_int64())
      samples = n->as_int64();
    for (const auto& [key, score] : scores.as_object()) {
      const std::string name(key);
      const size_t comma = name.find(',');
      if (comma == std::string::npos || !score.is_number() || name.find("_stderr") != std::string::npos) continue;
      EvalRecord e{.task = std::string(task),
                   .filter = name.substr(comma + 1),
                   .metric = name.substr(0, comma),
                   .value = score.to_number<double>(),
                   .n_samples = samples,
                   .complete = complete};
      const std::string stderr_key = e.metric + "_stderr," + e.filter;
      if (const auto* se = scores.as_object().if_contains(stderr_key); se && se->is_number())
        e.stderr_value = se->to_number<double>();
      out.push_back(std::move(e));
    }
  }
  return out;
}

Result<void> read_agg_file(FolderReader& reader, const fs::path& path, std::vector<ResultRecord>& out,
                           std::set<std::string>& seen) {
  auto text = reader.text(path, "an agg result JSON file");
  if (!text) return fail(text.error());
  const std::string stem = path.stem().string().substr(4);  // agg_<stem>
  auto records = results_from_agg_json(*text, path.string(), stem);
  if (!records) return fail(records.error());
  const bool single = records->size() == 1 && records->front().result_stem == stem;
  const fs::path raw_path = path.parent_path() / (stem + ".json");
  std::string raw_json;
  if (single && fs::is_regular_file(raw_path)) {
    auto raw = reader.json(raw_path, "a raw result JSON file");
    if (!raw) return fail(raw.error());
    raw_json = json::to_string(*raw);
  }
  for (auto& record : *records) {
    // The same record in its own file and in a collect list is one result.
    if (!seen.insert(record.agg_json).second) continue;
    record.artifacts.push_back({"agg", path.string()});
    if (!raw_json.empty()) {
      record.raw_json = raw_json;
      record.artifacts.push_back({"raw", raw_path.string()});
    }
    out.push_back(std::move(record));
  }
  return {};
}

Result<std::optional<EvalFile>> read_eval_file(FolderReader& reader, const fs::path& path, int64_t conc) {
  auto value = reader.json(path, "an eval results JSON file");
  if (!value) return fail(value.error());
  auto evals = evals_of(*value);
  if (!evals) return std::optional<EvalFile>();
  EvalFile file{.path = path, .conc = conc, .model_prefix = "", .evals = std::move(*evals)};
  const fs::path meta = path.parent_path() / "meta_env.json";
  if (fs::is_regular_file(meta)) {
    auto manifest = reader.json(meta, "an eval manifest (meta_env.json)");
    if (!manifest) return fail(manifest.error());
    if (const auto* o = manifest->if_object())
      if (const auto* p = o->if_contains("infmax_model_prefix"); p && p->is_string())
        file.model_prefix = p->as_string();
  }
  return std::optional<EvalFile>(std::move(file));
}

void attach_evals(const std::vector<EvalFile>& files, std::vector<ResultRecord>& results,
                  std::vector<std::string>& notes) {
  for (const auto& file : files) {
    bool matched = false;
    for (auto& r : results) {
      if (r.conc != file.conc || (!file.model_prefix.empty() && r.model_prefix != file.model_prefix)) continue;
      r.evals.insert(r.evals.end(), file.evals.begin(), file.evals.end());
      r.artifacts.push_back({"eval", file.path.string()});
      matched = true;
    }
    if (!matched)
      notes.push_back(fmt::format("{}: not stored: no agg result of conc {}{} in this folder", file.path.string(),
                                  file.conc,
                                  file.model_prefix.empty() ? "" : " and model prefix " + file.model_prefix));
  }
}

Result<void> read_manifest(FolderReader& reader, const fs::path& dir, RunRecord& run) {
  const fs::path path = dir / "run_manifest.json";
  if (!fs::is_regular_file(path)) return {};
  auto value = reader.json(path, "a run manifest");
  if (!value) return fail(value.error());
  if (!value->is_object())
    return fail(ErrorCode::kParse, fmt::format("{}: a run manifest must be a JSON object", path.string()));
  AggReader in(value->as_object(), path.string());
  const std::string run_id = in.text("run_id"), created_at = in.text("created_at");
  run.host = in.text("host");
  run.ixbench_version = in.text("ixbench_version");
  if (auto ok = in.status(); !ok) return fail(ok.error());
  if (!run_id.empty()) run.run_id = run_id;
  if (!created_at.empty()) run.created_at = created_at;
  run.manifest_json = json::to_string(*value);
  return {};
}

}  // namespace

Result<FolderRun> read_result_folder(const fs::path& dir, const std::string& run_id, ResultKind kind) {
  std::error_code ec;
  const fs::path absolute = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  auto paths = files::files_under(absolute, ".json");
  if (!paths) return fail(paths.error());
  FolderReader reader(absolute);
  FolderRun out;
  std::set<std::string> seen;
  std::vector<EvalFile> eval_files;
  static const std::regex kEvalName(R"(.*_conc(\d+)\.json)");
  for (const auto& path : *paths) {
    const std::string name = path.filename().string();
    std::smatch match;
    if (name.starts_with("agg_")) {
      if (auto ok = read_agg_file(reader, path, out.results, seen); !ok) return fail(ok.error());
    } else if (std::regex_match(name, match, kEvalName)) {
      auto file = read_eval_file(reader, path, std::stoll(match[1].str()));
      if (!file) return fail(file.error());
      if (*file) eval_files.push_back(std::move(**file));
    }
  }
  attach_evals(eval_files, out.results, out.notes);
  out.run.run_id =
      fmt::format("{}-{:08x}", absolute.filename().string(), static_cast<uint32_t>(fnv1a(absolute.string())));
  out.run.created_at = reader.created_at();
  out.run.source = "ingest " + absolute.string();
  out.run.manifest_json = "{}";
  if (auto ok = read_manifest(reader, absolute, out.run); !ok) return fail(ok.error());
  if (!run_id.empty()) out.run.run_id = run_id;
  for (auto& r : out.results) {
    r.run_id = out.run.run_id;
    r.kind = kind;
  }
  if (out.results.empty()) out.notes.push_back(fmt::format("{}: no agg_*.json result found", absolute.string()));
  return out;
}

Result<std::vector<FolderIngest>> ingest_folders(const IngestOptions& options) {
  if (!options.run_id.empty() && options.dirs.size() != 1)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--run-id names one run, but {} folders were given: ingest them one at a time",
                            options.dirs.size()));
  std::vector<FolderRun> runs;
  for (const auto& dir : options.dirs) {
    auto run = read_result_folder(dir, options.run_id, options.kind);
    if (!run) return fail(run.error());
    runs.push_back(std::move(*run));
  }
  auto store = open_store(options.db);
  if (!store) return fail(store.error());
  std::vector<FolderIngest> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    // A folder without results adds no empty run (its note says why).
    const bool empty = runs[i].results.empty();
    auto stats = (*store)->put_run_results(empty ? std::nullopt : std::optional(runs[i].run), runs[i].results);
    if (!stats) return fail(stats.error().with_context(fmt::format("ingesting {}", options.dirs[i])));
    out.push_back({options.dirs[i], runs[i].run.run_id, *stats, std::move(runs[i].notes)});
  }
  return out;
}

}  // namespace ix::store
