#include "eval/check_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <regex>
#include <set>

#include "common/file_io.h"
#include "common/json_io.h"

namespace ix::eval {

namespace bj = boost::json;
namespace fs = std::filesystem;

namespace {

// "_conc<N>.json" or "_conc<N>_<k>.json" at the end of a name (validate_scores.py's CONC_SUFFIX_RE).
std::optional<int64_t> conc_suffix(const fs::path& path) {
  static const std::regex re(R"(_conc(\d+)(?:_\d+)?\.json$)");
  std::smatch m;
  const std::string name = path.filename().string();
  if (!std::regex_search(name, m, re)) return std::nullopt;
  return std::stoll(m[1].str());
}

std::vector<fs::path> result_files(const std::vector<std::string>& given) {
  std::vector<fs::path> out;
  for (const auto& item : given) {
    const fs::path path(item);
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file() && name.starts_with("results") && name.ends_with(".json"))
          out.push_back(entry.path());
      }
    } else {
      out.push_back(path);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::vector<int64_t>> positive_ints(const bj::object& meta, const char* key) {
  const bj::value* v = meta.if_contains(key);
  if (v == nullptr || !v->is_array()) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& item : v->as_array()) {
    if (!item.is_int64() || item.as_int64() <= 0) return std::nullopt;
    out.push_back(item.as_int64());
  }
  return out;
}

std::optional<EvalManifest> read_manifest(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  auto meta = json::read_file(path);
  if (!meta || !meta->is_object()) return std::nullopt;
  const bj::object& o = meta->as_object();
  EvalManifest out;
  if (const bj::value* p = o.if_contains("infmax_model_prefix"); p && p->is_string() && p->as_string() != "unknown")
    out.model_prefix = std::string(p->as_string());
  out.batched = o.contains("eval_concs");
  out.eval_concs = positive_ints(o, "eval_concs");
  out.completed_eval_concs = positive_ints(o, "completed_eval_concs");
  out.failed_eval_concs = positive_ints(o, "failed_eval_concs");
  return out;
}

Result<EvalResultFile> read_results_file(const fs::path& path) {
  auto data = json::read_file(path);
  if (!data) return std::unexpected(data.error());
  if (!data->is_object()) return fail(ErrorCode::kParse, fmt::format("{}: not a JSON object", path.string()));
  EvalResultFile out{.path = path.string(), .conc = conc_suffix(path), .incomplete = {}, .scores = {}};
  if (const bj::value* block = data->as_object().if_contains("ixbench"); block && block->is_object()) {
    if (const bj::value* complete = block->as_object().if_contains("complete");
        complete && complete->is_bool() && !complete->as_bool()) {
      const bj::value* reason = block->as_object().if_contains("stop_reason");
      out.incomplete = reason && reason->is_string() ? std::string(reason->as_string()) : "requests failed";
    }
  }
  const bj::value* results = data->as_object().if_contains("results");
  if (results == nullptr || !results->is_object()) return out;
  for (const auto& [task, metrics] : results->as_object()) {
    if (!metrics.is_object()) continue;
    for (const auto& [name, value] : metrics.as_object()) {
      if (value.is_number()) out.scores.push_back({std::string(task), std::string(name), value.to_number<double>()});
    }
  }
  return out;
}

struct Checker {
  const EvalCheckOptions& o;
  const config::EvalThresholds& thresholds;
  EvalCheckReport report;

  void fail_line(std::string text, std::string file = "") { report.lines.push_back({false, file, std::move(text)}); }
  void pass_line(std::string text, std::string file = "") { report.lines.push_back({true, file, std::move(text)}); }
  bool failed() const {
    return std::any_of(report.lines.begin(), report.lines.end(), [](const EvalCheckLine& l) { return !l.passed; });
  }
};

// validate_batch_manifest() of validate_scores.py.
void check_manifest(Checker& c, const EvalResultSet& set) {
  const auto& expected_flag = c.o.expected_concs;
  const auto& meta = set.manifest;
  if (!meta) {
    const bool batched =
        std::any_of(set.files.begin(), set.files.end(), [](const EvalResultFile& f) { return f.conc.has_value(); });
    if (expected_flag || batched)
      c.fail_line("batched eval result files exist but meta_env.json is unavailable or invalid");
    return;
  }
  if (!meta->batched) {
    if (!expected_flag) return;
    if (expected_flag->size() > 1)
      c.fail_line("workflow requested multiple concurrencies but batched eval metadata is missing");
    return;
  }
  const auto& requested = meta->eval_concs;
  const auto& completed = meta->completed_eval_concs;
  const auto& failed = meta->failed_eval_concs;
  if (!requested || !completed || !failed) {
    c.fail_line("batched eval metadata must contain list-valued concurrency fields of positive integers");
    return;
  }
  const std::set<int64_t> expected = expected_flag ? std::set<int64_t>(expected_flag->begin(), expected_flag->end())
                                                   : std::set<int64_t>(requested->begin(), requested->end());
  if (expected_flag && std::set<int64_t>(requested->begin(), requested->end()) != expected)
    c.fail_line("batched eval metadata does not match workflow concurrencies");
  if (!failed->empty()) c.fail_line(fmt::format("batched eval failed for concurrency: {}", fmt::join(*failed, ", ")));
  std::set<int64_t> done(completed->begin(), completed->end());
  std::vector<int64_t> missing;
  for (int64_t v : expected)
    if (!done.contains(v)) missing.push_back(v);
  if (!missing.empty())
    c.fail_line(fmt::format("batched eval is missing completed concurrency: {}", fmt::join(missing, ", ")));
  std::set<int64_t> have;
  for (const auto& f : set.files) {
    if (f.conc) {
      have.insert(*f.conc);
    } else {
      c.fail_line(fmt::format("batched eval result lacks a concurrency suffix: {}", f.path), f.path);
    }
  }
  missing.clear();
  for (int64_t v : expected)
    if (!have.contains(v)) missing.push_back(v);
  if (!missing.empty())
    c.fail_line(fmt::format("batched eval is missing result files for concurrency: {}", fmt::join(missing, ", ")));
  if (!c.failed()) c.pass_line("batched eval produced every requested concurrency");
}

void check_results_file(Checker& c, const EvalResultFile& file) {
  const std::string label = file.conc ? fmt::format("[conc={}] ", *file.conc) : "";
  if (file.incomplete)
    c.fail_line(fmt::format("{}{}: the eval is incomplete ({})", label, file.path, *file.incomplete), file.path);
  for (const auto& score : file.scores) {
    if (!score.metric.starts_with(c.o.metric_prefix) || score.metric.find("stderr") != std::string::npos) continue;
    const auto threshold = config::resolve_threshold(c.thresholds, c.report.model_prefix, score.task, c.o.min_score);
    ++c.report.checked;
    const bool below = score.value < threshold.min_score;
    std::string line = fmt::format("{}{} {} = {:.4f} ({} {} from {})", label, score.task, score.metric, score.value,
                                   below ? "<" : ">=", threshold.min_score, threshold.source);
    if (below) {
      c.fail_line(std::move(line), file.path);
    } else {
      c.pass_line(std::move(line), file.path);
    }
  }
}

}  // namespace

bool EvalCheckReport::passed() const {
  return checked > 0 && std::all_of(lines.begin(), lines.end(), [](const EvalCheckLine& l) { return l.passed; });
}

Result<EvalResultSet> read_eval_results(const EvalCheckOptions& o) {
  EvalResultSet set;
  for (const auto& path : result_files(o.results)) {
    auto file = read_results_file(path);
    if (!file) return std::unexpected(file.error());
    set.files.push_back(std::move(*file));
  }
  fs::path meta_path = o.meta_env;
  if (meta_path.empty() && !o.results.empty()) {
    const fs::path first(o.results.front());
    std::error_code ec;
    meta_path = (fs::is_directory(first, ec) ? first : first.parent_path()) / "meta_env.json";
  }
  if (!meta_path.empty()) set.manifest = read_manifest(meta_path);
  return set;
}

EvalCheckReport check_eval_results(const EvalResultSet& set, const config::EvalThresholds& thresholds,
                                   const EvalCheckOptions& o) {
  Checker c{o, thresholds, {}};
  c.report.model_prefix = !o.model_prefix.empty() ? o.model_prefix : set.manifest ? set.manifest->model_prefix : "";
  check_manifest(c, set);
  for (const auto& file : set.files) check_results_file(c, file);
  if (c.report.checked == 0)
    c.fail_line(fmt::format("no metrics matched prefix '{}' in {} result file(s)", o.metric_prefix, set.files.size()));
  return std::move(c.report);
}

Result<int> run_eval_check(const EvalCheckOptions& o) {
  if (o.results.empty())
    return fail(ErrorCode::kInvalidArgument, "--results is required (result files or directories)");
  config::EvalThresholds thresholds;
  if (!o.thresholds.empty()) {
    auto loaded = config::load_eval_thresholds(o.thresholds);
    if (!loaded) return std::unexpected(loaded.error());
    thresholds = std::move(*loaded);
    fmt::print("Loaded thresholds from {}\n", o.thresholds);
  }
  auto set = read_eval_results(o);
  if (!set) return std::unexpected(set.error());
  // $MODEL_PREFIX is the prefix's last source (after --model-prefix and meta_env.json).
  EvalCheckOptions options = o;
  const char* env = std::getenv("MODEL_PREFIX");
  const bool manifest_names_prefix = set->manifest && !set->manifest->model_prefix.empty();
  if (options.model_prefix.empty() && !manifest_names_prefix && env != nullptr && *env != '\0' &&
      std::string_view(env) != "unknown")
    options.model_prefix = env;
  const auto report = check_eval_results(*set, thresholds, options);
  if (report.model_prefix.empty()) {
    fmt::print("Model prefix: <unknown> (using global default thresholds)\n");
  } else {
    fmt::print("Model prefix: {} ({})\n", report.model_prefix,
               thresholds.models.contains(report.model_prefix) ? "per-model thresholds apply"
                                                               : "no per-model override; using global default");
  }
  for (const auto& line : report.lines) {
    if (line.passed) {
      fmt::print("PASS: {}\n", line.text);
    } else {
      fmt::print(stderr, "FAIL: {}\n", line.text);
    }
  }
  std::fflush(stdout);
  return report.passed() ? 0 : 1;
}

}  // namespace ix::eval
