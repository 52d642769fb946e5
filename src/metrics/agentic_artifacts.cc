// The file reading of the agentic aggregation: the artifact folder, server logs, the Hugging Face
// cache's trace corpus and power_adapter.py's window. The one place in metrics/ that opens files
// (the aggregation's inputs are folders, not texts a caller could hand over cheaply).
#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <system_error>

#include "common/file_io.h"
#include "common/json_io.h"
#include "metrics/agentic_internal.h"
#include "metrics/power.h"

namespace ix::metrics::agentic {
namespace bj = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr size_t kServerLogHeadBytes = size_t{64} << 20;  // load_server_log_head()'s max_bytes
constexpr size_t kTraceFileBytes = size_t{1} << 30;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// The entries of `dir` (any kind, as pathlib's glob) accepted by `match`, sorted by name.
std::vector<fs::path> entries(const fs::path& dir, const std::function<bool(const std::string&)>& match) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (match(it->path().filename().string())) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

// pathlib's PurePath(text).parents: lexical, "." for the last of a relative path.
std::vector<fs::path> lexical_parents(const fs::path& path) {
  const std::string text = power::python_path_string(path.string());
  const bool absolute = text.starts_with('/');
  std::vector<std::string> parts;
  for (size_t pos = absolute ? 1 : 0; pos < text.size();) {
    const size_t slash = std::min(text.find('/', pos), text.size());
    if (slash > pos) parts.push_back(text.substr(pos, slash - pos));
    pos = slash + 1;
  }
  if (!absolute && (parts.empty() || text == ".")) return {};
  std::vector<fs::path> out;
  for (size_t k = parts.size(); k-- > 0;) {
    std::string parent = absolute ? "/" : "";
    for (size_t i = 0; i < k; ++i) parent += (i ? "/" : "") + parts[i];
    out.emplace_back(parent.empty() ? "." : parent);
  }
  return out;
}

Result<std::string> read_head(const fs::path& path, size_t max_bytes) {
  if (is_dir(path)) return fail(ErrorCode::kInvalidArgument, fmt::format("{}: a directory, not a log", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::kIo, fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  std::error_code size_error;
  const auto size = fs::file_size(path, size_error);
  std::string text(size_error ? max_bytes : std::min<size_t>(size, max_bytes), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) return fail(ErrorCode::kIo, fmt::format("{}: read failed", path.string()));
  return text;
}

// Calls `line(text, number)` for each line of a file (read in pieces; a run's file can be large).
Result<void> for_each_file_line(const fs::path& path,
                                const std::function<Result<void>(std::string_view, size_t)>& line) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::kIo, fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  std::string text;
  for (size_t number = 1; std::getline(in, text); ++number)
    if (auto ok = line(text, number); !ok) return ok;
  if (in.bad()) return fail(ErrorCode::kIo, fmt::format("{}: read failed", path.string()));
  return {};
}

std::string home_dir(const EnvLookup& get) {
  if (auto home = get("HOME"); home && !home->empty()) return *home;
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "~";
}

// _iter_trace_blobs() into `traces`: lines of *.jsonl, then whole *.json files; what does not
// parse is skipped (as the script skips it) and counted in `notes`.
Result<void> load_traces(const fs::path& dir, TraceMetadata& traces, std::vector<std::string>& notes) {
  auto ends_with = [](std::string suffix) { return [suffix](const std::string& n) { return n.ends_with(suffix); }; };
  for (const fs::path& path : entries(dir, ends_with(".jsonl"))) {
    if (!is_file(path)) continue;
    size_t skipped = 0;
    auto ok = for_each_file_line(path, [&](std::string_view line, size_t number) -> Result<void> {
      const std::string_view text = detail::py_strip(line);
      if (text.empty()) return {};
      auto blob = json::parse(text, "");
      if (!blob) return ++skipped, Result<void>{};
      return traces.add_blob(*blob, fmt::format("{}:{}", path.string(), number));
    });
    if (!ok) return ok;
    if (skipped)
      notes.push_back(
          fmt::format("{}: {} lines are not JSON; skipped, as the script skips them", path.string(), skipped));
  }
  for (const fs::path& path : entries(dir, ends_with(".json"))) {
    if (!is_file(path)) continue;
    auto blob = json::read_file(path, kTraceFileBytes, "a trace file");
    if (!blob) {
      notes.push_back(fmt::format("{}: not JSON; skipped, as the script skips it", path.string()));
      continue;
    }
    if (auto ok = traces.add_blob(*blob, path.string()); !ok) return ok;
  }
  return {};
}

Result<std::vector<ServerLog>> read_server_logs(const fs::path& result_dir) {
  std::vector<ServerLog> logs;
  for (const fs::path& path : server_log_paths(result_dir)) {
    if (!path_exists(path)) continue;
    auto text = read_head(path, kServerLogHeadBytes);
    if (!text) return std::unexpected(text.error());
    logs.push_back(parse_server_log(*text));
  }
  return logs;
}

// _captured_timezone(): seconds east of UTC from agentic_power_timezone_offset.txt, or the reason.
std::pair<std::optional<int64_t>, std::string> captured_offset(const fs::path& result_dir) {
  const fs::path path = result_dir / "agentic_power_timezone_offset.txt";
  if (!is_file(path)) return {std::nullopt, "profile_timezone_offset_missing"};
  auto text = files::read_text_file(path, files::kMaxConfigFileBytes, "a UTC offset");
  if (!text) return {std::nullopt, "profile_timezone_offset_invalid"};
  const std::string_view raw = detail::py_strip(*text);
  auto digits = [&](size_t at) {
    return at + 2 <= raw.size() && std::isdigit(static_cast<unsigned char>(raw[at])) &&
           std::isdigit(static_cast<unsigned char>(raw[at + 1]));
  };
  const bool colon = raw.size() == 6 && raw[3] == ':';
  if ((raw.size() != 5 && !colon) || (raw[0] != '+' && raw[0] != '-') || !digits(1) || !digits(colon ? 4 : 3))
    return {std::nullopt, "profile_timezone_offset_invalid"};
  const int hours = (raw[1] - '0') * 10 + (raw[2] - '0');
  const size_t m = colon ? 4 : 3;
  const int minutes = (raw[m] - '0') * 10 + (raw[m + 1] - '0');
  if (hours > 23 || minutes > 59) return {std::nullopt, "profile_timezone_offset_invalid"};
  const int64_t seconds = hours * 3600 + minutes * 60;
  return {raw[0] == '+' ? seconds : -seconds, ""};
}

// _parse_profile_timestamp()
std::optional<double> profile_timestamp(const bj::value& value, std::optional<int64_t> offset_s) {
  if (value.is_bool()) return std::nullopt;
  if (value.is_number()) {
    const double t = value.to_number<double>();
    return std::isfinite(t) ? std::optional<double>(t) : std::nullopt;
  }
  if (!value.is_string()) return std::nullopt;
  const std::string_view text = detail::py_strip(value.get_string());
  if (text.empty()) return std::nullopt;
  return power::iso_to_unix(text, offset_s);
}

bool naive_time(const bj::value& value) {
  if (!value.is_string()) return false;
  bool naive = false;
  power::iso_to_unix(detail::py_strip(value.get_string()), std::nullopt, &naive);
  return naive;
}

PowerWindow window_failure(std::string reason) {
  return {std::nullopt, {std::move(reason)}};
}

}  // namespace

fs::path resolve_artifact_dir(const fs::path& result_dir) {
  const fs::path base = result_dir / "aiperf_artifacts";
  if (is_file(base / "profile_export.jsonl")) return base;
  if (is_dir(base))
    for (const fs::path& child : entries(base, [](const std::string&) { return true; }))
      if (is_dir(child) && is_file(child / "profile_export.jsonl")) return child;
  return base;
}

std::vector<fs::path> server_log_paths(const fs::path& result_dir) {
  std::vector<fs::path> paths;
  if (is_file(result_dir / "server.log")) paths.push_back(result_dir / "server.log");
  std::vector<fs::path> roots{result_dir};
  const auto parents = lexical_parents(result_dir);
  roots.insert(roots.end(), parents.begin(), parents.begin() + static_cast<long>(std::min<size_t>(3, parents.size())));
  for (const fs::path& root : roots) {
    if (!is_dir(root)) continue;
    for (const fs::path& path :
         entries(root, [](const std::string& n) { return n.starts_with("watchtower-") && n.ends_with(".out"); }))
      paths.push_back(root == "." ? path.filename() : path);
  }
  std::vector<fs::path> unique;
  std::vector<fs::path> seen;
  for (const fs::path& path : paths) {
    std::error_code ec;
    const fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
    if (std::find(seen.begin(), seen.end(), resolved) != seen.end()) continue;
    seen.push_back(resolved);
    unique.push_back(path);
  }
  return unique;
}

std::optional<fs::path> hf_traces_dir(const EnvLookup& get) {
  auto set = [&](const char* name) -> std::optional<std::string> {
    auto v = get(name);
    return v && !v->empty() ? v : std::nullopt;
  };
  fs::path root;
  if (auto hub = set("HF_HUB_CACHE") ? set("HF_HUB_CACHE") : set("HUGGINGFACE_HUB_CACHE")) {
    root = *hub;
  } else if (auto home = set("HF_HOME")) {
    root = fs::path(*home) / "hub";
  } else {
    root = fs::path(home_dir(get)) / ".cache" / "huggingface" / "hub";
  }
  if (!is_dir(root)) return std::nullopt;
  std::vector<std::pair<fs::file_time_type, fs::path>> snapshots;
  for (const fs::path& dataset :
       entries(root, [](const std::string& n) { return n.starts_with("datasets--semianalysisai--cc-traces-weka"); })) {
    if (!is_dir(dataset / "snapshots")) continue;
    for (const fs::path& snapshot : entries(dataset / "snapshots", [](const std::string&) { return true; })) {
      std::error_code ec;
      if (!is_dir(snapshot)) continue;
      snapshots.emplace_back(fs::last_write_time(snapshot, ec), snapshot);
    }
  }
  // Newest first; snapshots of one time in name order (Python keeps the directory's order).
  std::stable_sort(snapshots.begin(), snapshots.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [time, snapshot] : snapshots)
    if (!entries(snapshot, [](const std::string& n) { return n.ends_with(".jsonl") || n.ends_with(".json"); }).empty())
      return snapshot;
  return std::nullopt;
}

Result<Artifacts> read_artifacts(const fs::path& result_dir, const fs::path& artifact_dir, const EnvLookup& get) {
  const fs::path jsonl = artifact_dir / "profile_export.jsonl";
  if (!path_exists(jsonl))
    return fail(ErrorCode::kNotFound,
                fmt::format("{} not found (an aiperf artifact folder holds profile_export.jsonl; `ixbench bench replay "
                            "--artifact-dir DIR` writes one)",
                            jsonl.string()));
  Artifacts a;
  RecordReader reader(jsonl.string());
  if (auto ok = for_each_file_line(jsonl, [&](std::string_view line, size_t n) { return reader.add_line(line, n); });
      !ok)
    return std::unexpected(ok.error());
  a.records = std::move(reader.records());
  a.accounting = reader.accounting();
  if (const fs::path path = artifact_dir / "profile_export_aiperf.json"; path_exists(path)) {
    auto value = json::read_file(path, files::kMaxResultFileBytes, "aiperf's profile aggregate");
    if (!value) return std::unexpected(value.error());
    a.aggregate = std::move(*value);
  }
  if (const fs::path path = artifact_dir / "server_metrics_export.json"; path_exists(path)) {
    auto value = json::read_file_without(path, {"timeslices"}, "aiperf's server metrics export");
    if (!value) return std::unexpected(value.error());
    a.server_metrics = std::move(*value);
  }
  auto logs = read_server_logs(result_dir);
  if (!logs) return std::unexpected(logs.error());
  a.server_logs = std::move(*logs);
  if (auto dir = hf_traces_dir(get))
    if (auto ok = load_traces(*dir, a.traces, a.notes); !ok) return std::unexpected(ok.error());
  return a;
}

PowerWindow power_window(const fs::path& result_dir, const fs::path& artifact_dir, const Artifacts& a) {
  if (!is_file(artifact_dir / "profile_export_aiperf.json") || !is_file(artifact_dir / "profile_export.jsonl") ||
      !a.aggregate || !a.aggregate->is_object())
    return window_failure("profile_artifacts_missing");
  const bj::object& aggregate = a.aggregate->get_object();
  const bj::value* raw_start = aggregate.if_contains("start_time");
  const bj::value* raw_end = aggregate.if_contains("end_time");
  if (!raw_start || raw_start->is_null() || !raw_end || raw_end->is_null())
    return window_failure("profile_window_missing");
  std::optional<int64_t> offset;
  if (naive_time(*raw_start) || naive_time(*raw_end)) {
    auto [captured, reason] = captured_offset(result_dir);
    if (!captured) return window_failure(reason);
    offset = captured;
  }
  const auto start = profile_timestamp(*raw_start, offset);
  const auto end = profile_timestamp(*raw_end, offset);
  if (!start || !end || *end <= *start) return window_failure("profile_window_invalid");
  const auto completed = static_cast<int64_t>(a.records.size());
  if (completed <= 0) return window_failure("successful_request_count_invalid");
  int64_t input = 0, output = 0, inputs = 0, outputs = 0;
  bool negative = false;
  for (const Record& r : a.records) {
    if (r.isl) input += *r.isl, ++inputs, negative = negative || *r.isl < 0;
    if (r.osl) output += *r.osl, ++outputs, negative = negative || *r.osl < 0;
  }
  if (inputs != completed || outputs != completed || negative || input <= 0 || output <= 0)
    return window_failure("incomplete_token_accounting");
  return {bj::object{{"benchmark_start_time_unix", *start},
                     {"benchmark_end_time_unix", *end},
                     {"duration", *end - *start},
                     {"completed", completed},
                     {"total_input_tokens", input},
                     {"total_output_tokens", output}},
          {}};
}

}  // namespace ix::metrics::agentic
