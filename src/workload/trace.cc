// Trace loaders (trace.h): Mooncake JSONL and session traces (.json, .jsonl, directory).
#include "workload/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <system_error>

#include "common/json_io.h"
#include "common/sanitize.h"

namespace ix::workload {
namespace {

namespace fs = std::filesystem;
using boost::json::array;
using boost::json::object;
using boost::json::value;

constexpr std::string_view kFixHint = "(see docs/bench-replay.md, \"Traces\")";

Error field_error(std::string_view path, std::string_view problem) {
  return Error(ErrorCode::kInvalidArgument, fmt::format("{}: {} {}", path, problem, kFixHint));
}

std::string member_path(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

// ---- Typed fields: required ones fail when missing; `path` names the object ("requests[2]").

Result<const value*> required(const object& o, std::string_view key, std::string_view path) {
  const value* v = o.if_contains(key);
  if (v == nullptr) return fail(field_error(member_path(path, key), "missing (a required field)"));
  return v;
}

Result<int64_t> non_negative_int(const value& v, std::string_view path) {
  if (v.is_int64() && v.get_int64() >= 0) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(v.get_uint64());
  return fail(field_error(path, fmt::format("must be an integer >= 0, not {}", printable(json::to_string(v), 64))));
}

Result<int64_t> count_field(const object& o, std::string_view key, std::string_view path) {
  auto v = required(o, key, path);
  if (!v) return fail(v.error());
  return non_negative_int(**v, member_path(path, key));
}

Result<double> seconds_value(const value& v, std::string_view path) {
  if (v.is_number() && v.to_number<double>() >= 0.0) return v.to_number<double>();
  return fail(field_error(path, fmt::format("must be a number >= 0, not {}", printable(json::to_string(v), 64))));
}

Result<double> seconds_field(const object& o, std::string_view key, std::string_view path) {
  auto v = required(o, key, path);
  if (!v) return fail(v.error());
  return seconds_value(**v, member_path(path, key));
}

// Absent or null: no value.
Result<std::optional<double>> optional_seconds(const object& o, std::string_view key, std::string_view path) {
  const value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<double>();
  auto seconds = seconds_value(*v, member_path(path, key));
  if (!seconds) return fail(seconds.error());
  return std::optional<double>(*seconds);
}

Result<std::vector<int64_t>> hash_ids_field(const object& o, std::string_view path) {
  auto v = required(o, "hash_ids", path);
  if (!v) return fail(v.error());
  const std::string here = member_path(path, "hash_ids");
  if (!(*v)->is_array()) return fail(field_error(here, "must be an array of integers >= 0"));
  std::vector<int64_t> ids;
  ids.reserve((*v)->get_array().size());
  for (const value& item : (*v)->get_array()) {
    auto id = non_negative_int(item, fmt::format("{}[{}]", here, ids.size()));
    if (!id) return fail(id.error());
    ids.push_back(*id);
  }
  return ids;
}

Result<const array*> requests_field(const object& o, std::string_view path) {
  auto v = required(o, "requests", path);
  if (!v) return fail(v.error());
  if (!(*v)->is_array()) return fail(field_error(member_path(path, "requests"), "must be an array of requests"));
  return &(*v)->get_array();
}

// ---- Session traces

Result<TraceTurn> parse_turn(const object& o, TurnType type, std::string_view path) {
  TraceTurn turn;
  turn.type = type;
  auto t = seconds_field(o, "t", path);
  if (!t) return fail(t.error());
  auto in = count_field(o, "in", path);
  if (!in) return fail(in.error());
  auto out = count_field(o, "out", path);
  if (!out) return fail(out.error());
  auto hash_ids = hash_ids_field(o, path);
  if (!hash_ids) return fail(hash_ids.error());
  auto think = optional_seconds(o, "think_time", path);
  if (!think) return fail(think.error());
  auto api = optional_seconds(o, "api_time", path);
  if (!api) return fail(api.error());
  turn.t = *t;
  turn.in = *in;
  turn.out = *out;
  turn.hash_ids = std::move(*hash_ids);
  turn.think_time = *think;
  turn.api_time = *api;
  return turn;
}

Result<std::vector<TraceEntry>> parse_entries(const array& requests, std::string_view path);

Result<TraceSubagent> parse_subagent(const object& o, std::string_view path) {
  TraceSubagent subagent;
  auto t = seconds_field(o, "t", path);
  if (!t) return fail(t.error());
  subagent.t = *t;
  if (const value* id = o.if_contains("agent_id"); id != nullptr && id->is_string()) {
    subagent.agent_id = std::string(id->get_string());
  }
  auto requests = requests_field(o, path);
  if (!requests) return fail(requests.error());
  auto entries = parse_entries(**requests, member_path(path, "requests"));
  if (!entries) return fail(entries.error());
  subagent.requests = std::move(*entries);
  return subagent;
}

Result<TraceEntry> parse_entry(const value& v, std::string_view path) {
  if (!v.is_object()) return fail(field_error(path, "must be an object (a turn or a subagent)"));
  const object& o = v.get_object();
  auto type = required(o, "type", path);
  if (!type) return fail(type.error());
  const std::string_view name = (*type)->is_string() ? std::string_view((*type)->get_string()) : "";
  if (name == "subagent") {
    auto subagent = parse_subagent(o, path);
    if (!subagent) return fail(subagent.error());
    return TraceEntry{std::move(*subagent)};
  }
  if (name != "n" && name != "s") {
    return fail(field_error(member_path(path, "type"), fmt::format("must be \"n\", \"s\" or \"subagent\", not {}",
                                                                   printable(json::to_string(**type), 64))));
  }
  auto turn = parse_turn(o, name == "n" ? TurnType::kN : TurnType::kS, path);
  if (!turn) return fail(turn.error());
  return TraceEntry{std::move(*turn)};
}

Result<std::vector<TraceEntry>> parse_entries(const array& requests, std::string_view path) {
  std::vector<TraceEntry> entries;
  entries.reserve(requests.size());
  for (const value& item : requests) {
    auto entry = parse_entry(item, fmt::format("{}[{}]", path, entries.size()));
    if (!entry) return fail(entry.error());
    entries.push_back(std::move(*entry));
  }
  return entries;
}

Result<std::string> tree_id(const object& o) {
  auto id = required(o, "id", "");
  if (!id) return fail(id.error());
  if ((*id)->is_string()) return std::string((*id)->get_string());
  if ((*id)->is_int64() || (*id)->is_uint64()) return json::to_string(**id);
  return fail(field_error("id", "must be a string (or an integer)"));
}

Result<int64_t> tree_block_size(const object& o, const TraceLoadOptions& options) {
  if (options.block_size) return *options.block_size;
  const value* v = o.if_contains("block_size");
  if (v == nullptr) return fail(field_error("block_size", "missing (a required field; or give --block-size N)"));
  auto size = non_negative_int(*v, "block_size");
  if (size && *size == 0) return fail(field_error("block_size", "must be an integer > 0, not 0"));
  return size;
}

// Times inside a subagent are absolute (seconds from the trace's start); older traces write them
// relative to the subagent's start. A time before its subagent's start can only be relative:
// it is moved onto the trace's clock. Top-down, so a nested subagent's own start is absolute
// before its entries are read against it.
void absolute_subagent_times(std::vector<TraceEntry>& entries) {
  for (TraceEntry& entry : entries) {
    auto* sub = std::get_if<TraceSubagent>(&entry.value);
    if (!sub) continue;
    for (TraceEntry& inner : sub->requests) {
      double& t = std::visit([](auto& e) -> double& { return e.t; }, inner.value);
      if (t < sub->t) t += sub->t;
    }
    absolute_subagent_times(sub->requests);
  }
}

Result<SessionTree> parse_tree(const value& v, const TraceLoadOptions& options) {
  if (!v.is_object()) return fail(field_error("trace", "must be a JSON object {id, block_size, requests}"));
  const object& o = v.get_object();
  SessionTree tree;
  auto id = tree_id(o);
  if (!id) return fail(id.error());
  tree.id = std::move(*id);
  auto block_size = tree_block_size(o, options);
  if (!block_size) return fail(block_size.error());
  tree.block_size = *block_size;
  auto requests = requests_field(o, "");
  if (!requests) return fail(requests.error());
  auto entries = parse_entries(**requests, "requests");
  if (!entries) return fail(entries.error());
  tree.requests = std::move(*entries);
  absolute_subagent_times(tree.requests);
  return tree;
}

// ---- Mooncake

Result<SessionTree> parse_mooncake_row(const value& v, size_t line, const TraceLoadOptions& options) {
  if (!v.is_object()) return fail(field_error("row", "must be a JSON object {timestamp, input_length, ...}"));
  const object& o = v.get_object();
  auto timestamp = seconds_field(o, "timestamp", "");
  if (!timestamp) return fail(timestamp.error());
  auto in = count_field(o, "input_length", "");
  if (!in) return fail(in.error());
  auto out = count_field(o, "output_length", "");
  if (!out) return fail(out.error());
  auto hash_ids = hash_ids_field(o, "");
  if (!hash_ids) return fail(hash_ids.error());
  TraceTurn turn;
  turn.t = *timestamp / 1000.0;
  turn.in = *in;
  turn.out = *out;
  turn.hash_ids = std::move(*hash_ids);
  SessionTree tree;
  tree.id = std::to_string(line);
  tree.block_size = options.block_size.value_or(kMooncakeBlockSize);
  tree.requests.push_back(TraceEntry{std::move(turn)});
  return tree;
}

// ---- Files

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// json::parse() of one line names it ":1:COLUMN: ..."; the file's line goes in its place.
Error jsonl_syntax_error(const Error& error, std::string_view source, size_t line) {
  std::string_view rest = error.message();
  if (rest.starts_with(":1:")) rest.remove_prefix(3);
  return Error(error.code(), fmt::format("{}:{}:{}", source, line, rest));
}

// Calls `row(line_number, json)` for every non-blank line; a line that is not JSON, or that
// `row` refuses, is an error naming source:line.
template <typename RowFn>
Result<void> for_each_json_line(std::string_view text, std::string_view source, RowFn row) {
  size_t line = 0;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = std::min(text.find('\n', begin), text.size());
    const std::string_view content = text.substr(begin, end - begin);
    begin = end + 1;
    ++line;
    if (blank(content)) continue;
    auto parsed = json::parse(content, "");
    if (!parsed) return fail(jsonl_syntax_error(parsed.error(), source, line));
    if (auto done = row(line, *parsed); !done)
      return fail(done.error().with_context(fmt::format("{}:{}", source, line)));
  }
  return {};
}

// Mooncake when the first non-blank line is a JSON object with `input_length`.
bool looks_like_mooncake(std::string_view text) {
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    const std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (blank(line)) continue;
    auto parsed = json::parse(line);
    return parsed && parsed->is_object() && parsed->get_object().contains("input_length");
  }
  return false;
}

Result<void> append_session_document(Trace& trace, std::string_view text, std::string_view source,
                                     const TraceLoadOptions& options) {
  auto parsed = json::parse(text, source);
  if (!parsed) return fail(parsed.error());
  auto tree = parse_tree(*parsed, options);
  if (!tree) return fail(tree.error().with_context(source));  // the field path says where in the document
  trace.trees.push_back(std::move(*tree));
  return {};
}

Result<Trace> load_directory(const fs::path& dir, const TraceLoadOptions& options) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(dir, ec)) {
    if (item.path().extension() == ".json") files.push_back(item.path());
  }
  const std::string shown = printable(dir.string());
  if (ec) return fail(ErrorCode::kIo, fmt::format("{}: cannot list the directory: {}", shown, ec.message()));
  if (files.empty()) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}: no .json files in the directory (a session-trace directory holds one trace "
                            "object per .json file)",
                            shown));
  }
  std::sort(files.begin(), files.end());
  Trace trace;
  trace.format = TraceFormat::kSession;
  for (const auto& file : files) {
    auto text = files::read_text_file(file, kMaxTraceFileBytes, "a session trace file");
    if (!text) return fail(text.error());
    if (auto added = append_session_document(trace, *text, printable(file.string()), options); !added) {
      return fail(added.error());
    }
  }
  return trace;
}

}  // namespace

std::string_view trace_format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAuto: return "auto";
    case TraceFormat::kMooncake: return "mooncake";
    case TraceFormat::kSession: return "session";
  }
  return "?";
}

Result<Trace> parse_trace_text(std::string_view text, std::string_view source, const TraceLoadOptions& options,
                               bool json_document) {
  TraceFormat format = options.format;
  if (format == TraceFormat::kAuto) format = looks_like_mooncake(text) ? TraceFormat::kMooncake : TraceFormat::kSession;
  Trace trace;
  trace.format = format;
  if (format == TraceFormat::kSession && json_document) {
    if (auto added = append_session_document(trace, text, source, options); !added) return fail(added.error());
  } else {
    auto done = for_each_json_line(text, source, [&](size_t line, const value& v) -> Result<void> {
      auto tree = format == TraceFormat::kMooncake ? parse_mooncake_row(v, line, options) : parse_tree(v, options);
      if (!tree) return fail(tree.error());
      trace.trees.push_back(std::move(*tree));
      return {};
    });
    if (!done) return fail(done.error());
  }
  if (trace.trees.empty()) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}: the trace holds no sessions (the file is empty)", source));
  }
  return trace;
}

Result<Trace> load_trace(const fs::path& path, const TraceLoadOptions& options) {
  if (options.block_size && *options.block_size <= 0) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--block-size {}: must be an integer > 0 (tokens per hash id)", *options.block_size));
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (options.format == TraceFormat::kMooncake) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{}: is a directory; a Mooncake trace is one JSONL file", printable(path.string())));
    }
    return load_directory(path, options);
  }
  auto text = files::read_text_file(path, kMaxTraceFileBytes, "a trace file");
  if (!text) return fail(text.error());
  return parse_trace_text(*text, printable(path.string()), options, path.extension() == ".json");
}

}  // namespace ix::workload
