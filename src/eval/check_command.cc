#include "eval/check_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <regex>
#include <set>

#include "common/file_io.h"
#include "common/json_io.h"
#include "config/eval_thresholds.h"

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

Result<std::vector<fs::path>> result_files(const std::vector<std::string>& given) {
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

struct Checker {
  const EvalCheckOptions& o;
  config::EvalThresholds thresholds;
  std::string prefix;
  int checked = 0;
  bool failed = false;

  void fail_line(const std::string& text) {
    fmt::print(stderr, "FAIL: {}\n", text);
    failed = true;
  }
  void pass_line(const std::string& text) { fmt::print("PASS: {}\n", text); }
};

// validate_batch_manifest() of validate_scores.py.
void check_manifest(Checker& c, const std::optional<bj::object>& meta, const std::vector<fs::path>& files) {
  const auto& expected_flag = c.o.expected_concs;
  if (!meta) {
    const bool batched =
        std::any_of(files.begin(), files.end(), [](const fs::path& f) { return conc_suffix(f).has_value(); });
    if (expected_flag || batched)
      c.fail_line("batched eval result files exist but meta_env.json is unavailable or invalid");
    return;
  }
  auto ints = [&](const char* key) -> std::optional<std::vector<int64_t>> {
    const bj::value* v = meta->if_contains(key);
    if (v == nullptr || !v->is_array()) return std::nullopt;
    std::vector<int64_t> out;
    for (const auto& item : v->as_array()) {
      if (!item.is_int64() || item.as_int64() <= 0) return std::nullopt;
      out.push_back(item.as_int64());
    }
    return out;
  };
  if (!meta->contains("eval_concs")) {
    if (!expected_flag) return;
    if (expected_flag->size() > 1)
      c.fail_line("workflow requested multiple concurrencies but batched eval metadata is missing");
    return;
  }
  auto requested = ints("eval_concs");
  auto completed = ints("completed_eval_concs");
  auto failed = ints("failed_eval_concs");
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
  for (const auto& f : files) {
    if (auto n = conc_suffix(f)) {
      have.insert(*n);
    } else {
      c.fail_line(fmt::format("batched eval result lacks a concurrency suffix: {}", f.string()));
    }
  }
  missing.clear();
  for (int64_t v : expected)
    if (!have.contains(v)) missing.push_back(v);
  if (!missing.empty())
    c.fail_line(fmt::format("batched eval is missing result files for concurrency: {}", fmt::join(missing, ", ")));
  if (!c.failed) c.pass_line("batched eval produced every requested concurrency");
}

Result<void> check_results_file(Checker& c, const fs::path& file) {
  auto data = json::read_file(file);
  if (!data) return std::unexpected(data.error());
  if (!data->is_object()) return fail(ErrorCode::kParse, fmt::format("{}: not a JSON object", file.string()));
  const auto conc = conc_suffix(file);
  const std::string label = conc ? fmt::format("[conc={}] ", *conc) : "";
  if (const bj::value* block = data->as_object().if_contains("ixbench"); block && block->is_object()) {
    if (const bj::value* complete = block->as_object().if_contains("complete");
        complete && complete->is_bool() && !complete->as_bool()) {
      const bj::value* reason = block->as_object().if_contains("stop_reason");
      c.fail_line(fmt::format("{}{}: the eval is incomplete ({})", label, file.string(),
                              reason && reason->is_string() ? std::string(reason->as_string()) : "requests failed"));
    }
  }
  const bj::value* results = data->as_object().if_contains("results");
  if (results == nullptr || !results->is_object()) return {};
  for (const auto& [task, metrics] : results->as_object()) {
    if (!metrics.is_object()) continue;
    const auto threshold = config::resolve_threshold(c.thresholds, c.prefix, task, c.o.min_score);
    for (const auto& [name, value] : metrics.as_object()) {
      if (!std::string_view(name).starts_with(c.o.metric_prefix) ||
          std::string_view(name).find("stderr") != std::string_view::npos)
        continue;
      if (!value.is_number()) continue;
      const double score = value.to_number<double>();
      ++c.checked;
      const std::string line =
          fmt::format("{}{} {} = {:.4f} ({} {} from {})", label, std::string_view(task), std::string_view(name), score,
                      score < threshold.min_score ? "<" : ">=", threshold.min_score, threshold.source);
      if (score < threshold.min_score) {
        c.fail_line(line);
      } else {
        c.pass_line(line);
      }
    }
  }
  return {};
}

std::optional<bj::object> read_meta(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  auto meta = json::read_file(path);
  if (!meta || !meta->is_object()) return std::nullopt;
  return meta->as_object();
}

std::string detect_prefix(const EvalCheckOptions& o, const std::optional<bj::object>& meta) {
  if (!o.model_prefix.empty()) return o.model_prefix;
  if (meta) {
    if (const bj::value* p = meta->if_contains("infmax_model_prefix");
        p && p->is_string() && p->as_string() != "unknown")
      return std::string(p->as_string());
  }
  if (const char* env = std::getenv("MODEL_PREFIX");
      env != nullptr && *env != '\0' && std::string_view(env) != "unknown")
    return env;
  return {};
}

}  // namespace

Result<int> run_eval_check(const EvalCheckOptions& o) {
  if (o.results.empty())
    return fail(ErrorCode::kInvalidArgument, "--results is required (result files or directories)");
  Checker c{o, {}, {}};
  if (!o.thresholds.empty()) {
    auto thresholds = config::load_eval_thresholds(o.thresholds);
    if (!thresholds) return std::unexpected(thresholds.error());
    c.thresholds = std::move(*thresholds);
    fmt::print("Loaded thresholds from {}\n", o.thresholds);
  }
  auto files = result_files(o.results);
  if (!files) return std::unexpected(files.error());
  fs::path meta_path = o.meta_env;
  if (meta_path.empty()) {
    const fs::path first(o.results.front());
    std::error_code ec;
    meta_path = (fs::is_directory(first, ec) ? first : first.parent_path()) / "meta_env.json";
  }
  const auto meta = read_meta(meta_path);
  c.prefix = detect_prefix(o, meta);
  if (c.prefix.empty()) {
    fmt::print("Model prefix: <unknown> (using global default thresholds)\n");
  } else {
    fmt::print("Model prefix: {} ({})\n", c.prefix,
               c.thresholds.models.contains(c.prefix) ? "per-model thresholds apply"
                                                      : "no per-model override; using global default");
  }
  check_manifest(c, meta, *files);
  for (const auto& file : *files) {
    if (auto ok = check_results_file(c, file); !ok) return std::unexpected(ok.error());
  }
  if (c.checked == 0)
    fmt::print(stderr, "FAIL: no metrics matched prefix '{}' in {} result file(s)\n", o.metric_prefix, files->size());
  std::fflush(stdout);
  return c.failed || c.checked == 0 ? 1 : 0;
}

}  // namespace ix::eval
