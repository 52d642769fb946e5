#include "review/submission.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "common/file_io.h"
#include "review/review.h"
#include "store/ingest.h"

namespace ix::review {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxPrBodyBytes = 4 * 1024 * 1024;

// `path` (absolute, under `root`) as named from the folder the user gave as `given`.
std::string as_given(const std::string& path, const fs::path& root, const std::string& given) {
  std::error_code ec;
  const fs::path relative = fs::relative(path, root, ec);
  if (ec || relative.empty()) return path;
  return (fs::path(given) / relative).lexically_normal().string();
}

std::string agg_file(const store::ResultRecord& record) {
  for (const auto& artifact : record.artifacts) {
    if (artifact.kind == "agg") return artifact.path;
  }
  return record.result_stem;
}

// The folders under `dir` (itself included) that hold an eval set: meta_env.json or results*.json.
Result<std::set<fs::path>> eval_set_folders(const std::string& dir) {
  auto files = files::files_under(dir, ".json");
  if (!files) return std::unexpected(files.error());
  std::set<fs::path> out;
  for (const auto& file : *files) {
    const std::string name = file.filename().string();
    if (name == "meta_env.json" || name.starts_with("results")) out.insert(file.parent_path());
  }
  return out;
}

Result<void> read_results_folder(const std::string& dir, Submission& out) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return fail(ErrorCode::kNotFound, fmt::format("--results '{}': not a directory", dir));
  auto folder = store::read_result_folder(dir, "", store::ResultKind::kMeasured);
  if (!folder) return fail(folder.error().with_context(fmt::format("--results '{}'", dir)));
  const fs::path root = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  for (auto& record : folder->results) {
    std::string source = as_given(agg_file(record), root, dir);
    out.records.push_back({std::move(record), std::move(source), dir});
  }
  auto folders = eval_set_folders(dir);
  if (!folders) return fail(folders.error().with_context(fmt::format("--results '{}'", dir)));
  for (const auto& set_dir : *folders) {
    eval::EvalCheckOptions options;
    options.results = {set_dir.string()};
    auto set = eval::read_eval_results(options);
    if (!set) return fail(set.error().with_context(fmt::format("--results '{}'", dir)));
    out.eval_sets.push_back({set_dir.string(), std::move(*set)});
  }
  return {};
}

// A stored result's eval scores as one eval set: one results file at the result's concurrency,
// thresholds by the result's model prefix.
eval::EvalResultSet stored_eval_set(const store::ResultRecord& record, const std::string& source) {
  eval::EvalResultFile file{.path = source, .conc = record.conc, .incomplete = {}, .scores = {}};
  for (const auto& e : record.evals) {
    file.scores.push_back({e.task, e.metric + "," + e.filter, e.value});
    if (!e.complete) file.incomplete = "stored as incomplete";
  }
  eval::EvalManifest manifest;
  manifest.model_prefix = record.model_prefix;
  return {.manifest = std::move(manifest), .files = {std::move(file)}};
}

Result<void> read_store(const std::string& location, Submission& out) {
  const bool url = location.starts_with("postgresql://") || location.starts_with("postgres://");
  const std::string path = location.starts_with("sqlite:") ? location.substr(7) : location;
  std::error_code ec;
  // Opening a store creates a missing SQLite file: a mistyped path would review an empty store.
  if (!url && !fs::is_regular_file(path, ec))
    return fail(ErrorCode::kNotFound,
                fmt::format("--db '{}': no results store there (give an existing SQLite file or a postgresql:// URL)",
                            location));
  auto store = store::open_store(location);
  if (!store) return fail(store.error().with_context(fmt::format("--db '{}'", location)));
  store::ResultQuery query;
  query.kind = store::ResultKind::kMeasured;
  auto results = (*store)->latest(query);
  if (!results) return fail(results.error().with_context(fmt::format("--db '{}'", location)));
  const std::string name = (*store)->describe();
  for (auto& record : *results) {
    std::string source = fmt::format("{}: {}", name, record.result_stem);
    if (!record.evals.empty()) out.eval_sets.push_back({source, stored_eval_set(record, source)});
    out.records.push_back({std::move(record), std::move(source), name});
  }
  return {};
}

}  // namespace

Result<Submission> read_submission(const ReviewOptions& options) {
  Submission out;
  if (!options.results_dir.empty()) {
    if (auto ok = read_results_folder(options.results_dir, out); !ok) return std::unexpected(ok.error());
  }
  if (!options.db.empty()) {
    if (auto ok = read_store(options.db, out); !ok) return std::unexpected(ok.error());
  }
  if (!options.pr_body.empty()) {
    auto text = files::read_text_file(options.pr_body, kMaxPrBodyBytes, "a pull request body");
    if (!text) return fail(text.error().with_context("--pr-body"));
    out.pr_body = std::move(*text);
  }
  return out;
}

}  // namespace ix::review
