#include "bench/serve_output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cmath>

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
  if (!append) return json::write_file(target, text);
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return json::append_line(target, text);
}

Result<void> write_to(const BenchServeOptions& o, const std::filesystem::path& target, const std::string& result_text,
                      const std::string& detailed_text) {
  if (auto ok = put(o.append_result, target, result_text); !ok) return ok;
  log::info("bench serve: {} {}", o.append_result ? "appended to" : "wrote", target.string());
  if (!o.save_detailed) return {};
  const std::filesystem::path detailed = detailed_path(target);
  if (auto ok = put(o.append_result, detailed, detailed_text); !ok) return ok;
  log::info("bench serve: wrote {}", detailed.string());
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

Result<std::filesystem::path> result_directory(const std::string& result_dir, const std::string& filename) {
  std::filesystem::path dir = result_dir;
  if (const auto sub = std::filesystem::path(filename).parent_path(); !sub.empty()) dir /= sub;
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!filename.empty()) {
    // "sub/" was taken for a directory to create before the run and failed at the write after it.
    if (const auto leaf = std::filesystem::path(filename).filename(); leaf.empty() || leaf == "." || leaf == "..") {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--result-filename: '{}' names a directory, not a file (e.g. '{}result.json')", filename,
                              leaf.empty() ? filename : filename + "/"));
    }
    const std::filesystem::path target = std::filesystem::path(result_dir) / filename;
    if (std::filesystem::is_directory(target, ec)) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--result-filename: '{}' is a directory; name a file", target.string()));
    }
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--result-dir: cannot create '{}': {}", dir.string(), ec.message()));
  }
  // The file name may be derived only after the run (vLLM's naming has the date): probe the
  // directory with a file of our own.
  if (auto ok = json::check_writable(dir / fmt::format(".ixbench-write-probe-{}", ::getpid())); !ok)
    return fail(ok.error().with_context("--result-dir"));
  return dir;
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
  const std::string name = result_file_name(o, plan, std::string(result.at("date").as_string()));
  const std::filesystem::path path =
      o.result_dir.empty() ? std::filesystem::path(name) : std::filesystem::path(o.result_dir) / name;
  const std::string result_text = json::to_string(result);
  const std::string detailed_text = o.save_detailed ? detailed_lines(records, origin_ns) : std::string();
  // The directory was checked before the run; it may have gone since (recreated), or be
  // unwritable now: then the measurements go to the temporary directory rather than nowhere.
  Result<void> written;
  if (auto dir = result_directory(o.result_dir, name); !dir) {
    written = std::unexpected(dir.error());
  } else {
    written = write_to(o, path, result_text, detailed_text);
  }
  if (written) return {};
  const std::filesystem::path fallback = json::temp_fallback_path(path);
  if (!fallback.empty() && write_to(o, fallback, result_text, detailed_text))
    return fail(written.error().with_context(
        fmt::format("cannot write the result to {} (saved to {} instead)", path.string(), fallback.string())));
  return fail(written.error().with_context(
      fmt::format("cannot write the result to {} (only the console summary is left)", path.string())));
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
