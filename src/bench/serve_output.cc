#include "bench/serve_output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cmath>

#include "common/file_io.h"
#include "common/json_io.h"
#include "common/log.h"
#include "common/sanitize.h"

namespace ix::bench {
namespace {

// `<result>.requests.jsonl` beside the result file.
std::filesystem::path detailed_path(std::filesystem::path result) {
  result.replace_extension(".requests.jsonl");
  return result;
}

std::string detailed_lines(const std::vector<metrics::RequestRecord>& records, int64_t origin_ns) {
  std::string text;
  for (const auto& r : records) {
    text += json::to_string(metrics::request_record_to_json(r, origin_ns));
    text += '\n';
  }
  return text;
}

// --append-result adds one line to what the file holds (rewritten atomically, so a failed write
// never loses the results already there); the detailed JSONL grows the same way.
Result<void> put(bool append, const std::filesystem::path& target, std::string_view text) {
  if (!append) return files::write_file(target, text);
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return files::append_line(target, text);
}

// Writes one file, else keeps `text` in the temporary directory; the error says which.
Result<void> put_or_keep(bool append, const std::filesystem::path& target, std::string_view text,
                         std::string_view what) {
  auto ok = put(append, target, text);
  if (ok) {
    log::info("bench serve: {} {}", append ? "appended to" : "wrote", printable(target.string()));
    return {};
  }
  const std::filesystem::path fallback = files::temp_fallback_path(target);
  if (!fallback.empty() && put(append, fallback, text)) {
    return fail(ok.error().with_context(fmt::format("cannot write {} to {} (saved to {} instead)", what,
                                                    printable(target.string()), fallback.string())));
  }
  return fail(ok.error().with_context(
      fmt::format("cannot write {} to {} (nor to the temporary directory)", what, printable(target.string()))));
}

// The result and the per-request JSONL are written independently: one failing never costs the
// other, and the error names the one that failed.
Result<void> write_both(const BenchServeOptions& o, const std::filesystem::path& target, const std::string& result_text,
                        const std::string& detailed_text) {
  auto result = put_or_keep(o.append_result, target, result_text, "the result");
  if (!o.save_detailed) return result;
  auto detailed = put_or_keep(o.append_result, detailed_path(target), detailed_text, "the per-request records");
  if (!result && !detailed)
    return fail(result.error().code(), fmt::format("{}; and {}", result.error().message(), detailed.error().message()));
  if (!result) return result;
  if (!detailed)
    return fail(detailed.error().code(),
                fmt::format("wrote the result to {}, but {}", printable(target.string()), detailed.error().message()));
  return {};
}

}  // namespace

std::string python_float_str(double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (std::isnan(value)) return "nan";
  std::string s = fmt::format("{}", value);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::filesystem::path result_path(const BenchServeOptions& o, const std::string& name) {
  if (name == files::kStdioName || o.result_dir.empty()) return name;
  return std::filesystem::path(o.result_dir) / name;
}

bool result_on_stdout(const BenchServeOptions& o) {
  return !o.result_filename.empty() && files::is_stdout(result_path(o, o.result_filename));
}

namespace {

// --result-filename "sub/" was taken for a directory to create before the run and failed at the
// write after it.
Result<void> check_file_name(const std::string& filename) {
  const auto leaf = std::filesystem::path(filename).filename();
  if (!leaf.empty() && leaf != "." && leaf != "..") return {};
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("--result-filename: '{}' names a directory, not a file (e.g. '{}result.json')",
                          printable(filename), leaf.empty() ? printable(filename) : printable(filename) + "/"));
}

}  // namespace

Result<void> check_result_target(const BenchServeOptions& o) {
  const std::string& filename = o.result_filename;
  if (result_on_stdout(o)) {
    if (!o.save_detailed) return {};
    return fail(ErrorCode::kInvalidArgument,
                "--save-detailed writes <result>.requests.jsonl beside the result file, and --result-filename "
                "names standard output: give --result-filename a file name, or drop --save-detailed");
  }
  if (!filename.empty()) {
    if (auto ok = check_file_name(filename); !ok) return ok;
  }
  const std::filesystem::path target = result_path(o, filename);
  std::error_code ec;
  if (!filename.empty() && std::filesystem::is_directory(target, ec)) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--result-filename: '{}' is a directory; name a file", printable(target.string())));
  }
  std::filesystem::path dir = filename.empty() ? std::filesystem::path(o.result_dir) : target.parent_path();
  if (dir.empty()) dir = ".";
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--result-dir: cannot create '{}': {}", printable(dir.string()), ec.message()));
  }
  // Without --result-filename the name has the date, known only after the run: the directory is
  // probed instead of the file.
  if (filename.empty()) {
    if (auto ok = files::check_directory_writable(dir); !ok) return fail(ok.error().with_context("--result-dir"));
    return {};
  }
  if (auto ok = files::check_writable(target); !ok) return fail(ok.error().with_context("--result-filename"));
  return {};
}

std::string result_file_name(const BenchServeOptions& o, const ServePlan& plan, const std::string& date) {
  if (!o.result_filename.empty()) return o.result_filename;
  const size_t slash = o.model.rfind('/');
  const std::string base_model = o.model.substr(slash == std::string::npos ? 0 : slash + 1);
  const std::string traffic = o.ramp_up_strategy.empty() ? fmt::format("{}qps", python_float_str(plan.request_rate))
                                                         : fmt::format("ramp-up-{}-{}qps-{}qps", o.ramp_up_strategy,
                                                                       *o.ramp_up_start_rps, *o.ramp_up_end_rps);
  return fmt::format("{}-{}{}-{}-{}.json", o.label.empty() ? o.backend : o.label, traffic,
                     o.max_concurrency ? fmt::format("-concurrency{}", *o.max_concurrency) : "", base_model, date);
}

Result<void> save_result(const BenchServeOptions& o, const ServePlan& plan, const boost::json::object& result,
                         const std::vector<metrics::RequestRecord>& records, int64_t origin_ns) {
  const std::filesystem::path path =
      result_path(o, result_file_name(o, plan, std::string(result.at("date").as_string())));
  const std::string result_text = json::to_string(result);
  const std::string detailed_text = o.save_detailed ? detailed_lines(records, origin_ns) : std::string();
  // The directory was checked before the run; it may have gone since: it is created again, and a
  // write that fails anyway keeps the measurements in the temporary directory.
  std::error_code ec;
  if (!files::is_stdout(path) && path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  return write_both(o, path, result_text, detailed_text);
}

int exit_status(const BenchServeOptions& o, const RunVerdict& v, const boost::json::object& result) {
  const boost::json::object& own = result.at("ixbench").as_object();
  const int64_t measured = v.completed + v.failed;
  int status = 0;
  if (measured == 0) {
    log::error("bench serve: no request was sent");
    status = 1;
  } else if (v.completed == 0 ||
             static_cast<double>(v.failed) > o.max_failed_fraction * static_cast<double>(measured)) {
    if (v.completed == 0) {
      log::error("bench serve: no request completed ({} of {} failed): {}", v.failed, measured,
                 json::to_string(own.at("error_counts")));
    } else {
      log::error("bench serve: {} of {} requests failed (more than {:.0f}%): {}", v.failed, measured,
                 o.max_failed_fraction * 100, json::to_string(own.at("error_counts")));
    }
    // What went wrong, not only how often (connection refused, TLS, HTTP status...).
    if (const auto* examples = own.if_contains("error_examples"); examples && examples->is_object()) {
      for (const auto& [kind, message] : examples->as_object()) {
        if (message.is_string())
          log::error("bench serve: e.g. {}: {}", std::string_view(kind), ix::printable(message.as_string()));
      }
    }
    status = 1;
  }
  if (v.server_lost) {
    log::error("bench serve: the server under test went away during the run (see invalid_reasons)");
    status = 1;
  }
  if (!v.run_valid) {
    // Printed in the summary too; the exit status follows it only when asked.
    log::warn("bench serve: RUN INVALID: {}{}", json::to_string(own.at("invalid_reasons")),
              o.fail_on_invalid ? "" : " (exit status unaffected; --fail-on-invalid makes it 1)");
    if (o.fail_on_invalid && status == 0) status = 1;
  }
  if (v.stop_signal > 0) {
    log::error("bench serve: stopped by signal {} after writing what was measured", v.stop_signal);
    status = 128 + v.stop_signal;
  }
  return status;
}

}  // namespace ix::bench
