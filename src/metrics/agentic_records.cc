// profile_export.jsonl rows, trace metadata blobs and server logs, read as the script reads them.
#include <fmt/format.h>

#include "common/json_io.h"
#include "common/utf8.h"
#include "metrics/agentic_internal.h"

namespace ix::metrics::agentic {
namespace bj = boost::json;
using detail::truthy;

namespace {

std::string_view kind_name(const bj::value& v) {
  switch (v.kind()) {
    case bj::kind::null: return "null";
    case bj::kind::bool_: return "a boolean";
    case bj::kind::int64:
    case bj::kind::uint64:
    case bj::kind::double_: return "a number";
    case bj::kind::string: return "a string";
    case bj::kind::array: return "a list";
    case bj::kind::object: return "an object";
  }
  return "a value";
}

std::string shown(const bj::value& v) {
  std::string text = json::to_string(v);
  return text.size() > 60 ? text.substr(0, 60) + "..." : text;
}

// metrics.<name>.value, or a bare metrics.<name>; null when absent.
const bj::value& metric_value(const bj::object* metrics, std::string_view name) {
  static const bj::value kNull;
  const bj::value* m = metrics ? metrics->if_contains(name) : nullptr;
  if (m == nullptr) return kNull;
  if (const bj::object* o = m->if_object()) {
    const bj::value* v = o->if_contains("value");
    return v ? *v : kNull;
  }
  return *m;
}

// int(metadata.<key>) when truthy (qps and throughput read them so).
Result<std::optional<int64_t>> request_time(const bj::object* metadata, std::string_view key) {
  const bj::value* v = metadata ? metadata->if_contains(key) : nullptr;
  if (v == nullptr || !truthy(*v)) return std::optional<int64_t>{};
  if (auto ns = detail::to_int(*v)) return std::optional<int64_t>(*ns);
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("metadata.{} is {}, not an integer (int() refuses it)", key, shown(*v)));
}

Result<Record> kept_record(const bj::object& row, const bj::object* metadata) {
  const bj::value* metrics_value = row.if_contains("metrics");
  const bj::object* metrics = nullptr;
  if (metrics_value) {
    metrics = metrics_value->if_object();
    if (metrics == nullptr)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("metrics is {}, not an object of {{name: {{value, unit}}}}", kind_name(*metrics_value)));
  }
  Record r;
  r.ttft_ms = detail::to_float(metric_value(metrics, "time_to_first_token"));
  r.latency_ms = detail::to_float(metric_value(metrics, "request_latency"));
  r.itl_ms = detail::to_float(metric_value(metrics, "inter_token_latency"));
  r.full_response_itl_ms = detail::to_float(metric_value(metrics, "full_response_inter_token_latency"));
  r.osl_float = detail::to_float(metric_value(metrics, "output_sequence_length"));
  r.isl = detail::to_int(metric_value(metrics, "input_sequence_length"));
  r.osl = detail::to_int(metric_value(metrics, "output_sequence_length"));
  auto start = request_time(metadata, "request_start_ns");
  if (!start) return std::unexpected(start.error());
  auto end = request_time(metadata, "request_end_ns");
  if (!end) return std::unexpected(end.error());
  r.start_ns = *start;
  r.end_ns = *end;
  if (metadata) {
    if (const bj::value* v = metadata->if_contains("conversation_id")) r.conversation_id = *v;
    if (const bj::value* v = metadata->if_contains("turn_index")) r.turn_index = *v;
  }
  return r;
}

bool word_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || u >= 0x80;
}

bool regex_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

bool digit(char c) {
  return c >= '0' && c <= '9';
}

size_t skip(std::string_view s, size_t pos, bool (*pred)(char)) {
  while (pos < s.size() && pred(s[pos])) ++pos;
  return pos;
}

// The lines of str.splitlines() (ASCII boundaries, and U+0085 / U+2028 / U+2029 as UTF-8).
template <typename F>
void for_each_line(std::string_view text, F&& f) {
  size_t begin = 0, pos = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    size_t width = 0;
    if (c == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') {
      width = 2;
    } else if (c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c' || (c >= '\x1c' && c <= '\x1e')) {
      width = 1;
    } else if (text.substr(pos, 2) == "\xC2\x85") {
      width = 2;
    } else if (text.substr(pos, 3) == "\xE2\x80\xA8" || text.substr(pos, 3) == "\xE2\x80\xA9") {
      width = 3;
    }
    if (width == 0) {
      ++pos;
      continue;
    }
    f(text.substr(begin, pos - begin));
    pos += width;
    begin = pos;
  }
  if (begin < text.size()) f(text.substr(begin));
}

// int() of decimal digits (commas removed by the caller); nullopt when empty or too large.
std::optional<int64_t> decimal(std::string_view digits) {
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

// GPU KV cache size:\s*(?P<tokens>[\d,]+)\s*tokens
std::optional<std::string> vllm_size_match(std::string_view line) {
  static constexpr std::string_view kLead = "GPU KV cache size:";
  for (size_t at = line.find(kLead); at != std::string_view::npos; at = line.find(kLead, at + 1)) {
    size_t pos = skip(line, at + kLead.size(), regex_space);
    const size_t start = pos;
    pos = skip(line, pos, [](char c) { return digit(c) || c == ','; });
    if (pos == start) continue;
    const std::string_view tokens = line.substr(start, pos - start);
    pos = skip(line, pos, regex_space);
    if (line.substr(pos, 6) != "tokens") continue;
    std::string digits;
    for (char c : tokens)
      if (c != ',') digits += c;
    return digits;
  }
  return std::nullopt;
}

// \((?P<tag>EngineCore(?:_DP\d+)?)\s+pid=\d+\)
std::optional<std::string> vllm_engine_tag(std::string_view line) {
  static constexpr std::string_view kLead = "(EngineCore";
  for (size_t at = line.find(kLead); at != std::string_view::npos; at = line.find(kLead, at + 1)) {
    const size_t name_end = at + kLead.size();
    auto rest_matches = [&](size_t pos) {
      const size_t spaced = skip(line, pos, regex_space);
      if (spaced == pos || line.substr(spaced, 4) != "pid=") return false;
      const size_t digits = skip(line, spaced + 4, digit);
      return digits > spaced + 4 && digits < line.size() && line[digits] == ')';
    };
    if (line.substr(name_end, 3) == "_DP") {
      const size_t digits = skip(line, name_end + 3, digit);
      if (digits > name_end + 3 && rest_matches(digits)) return std::string(line.substr(at + 1, digits - at - 1));
    }
    if (rest_matches(name_end)) return std::string(line.substr(at + 1, name_end - at - 1));
  }
  return std::nullopt;
}

// \b<lead>(\d+)\b: the first match's digits.
std::optional<std::string_view> bounded_number(std::string_view text, std::string_view lead) {
  for (size_t at = text.find(lead); at != std::string_view::npos; at = text.find(lead, at + 1)) {
    if (at > 0 && word_char(text[at - 1])) continue;
    const size_t start = at + lead.size();
    const size_t end = skip(text, start, digit);
    if (end == start || (end < text.size() && word_char(text[end]))) continue;
    return text.substr(start, end - start);
  }
  return std::nullopt;
}

// \b(?P<tag>DP\d+\s+TP\d+\s+EP\d+)\b
std::optional<std::string> sglang_rank_tag(std::string_view line) {
  for (size_t at = line.find("DP"); at != std::string_view::npos; at = line.find("DP", at + 1)) {
    if (at > 0 && word_char(line[at - 1])) continue;
    size_t pos = at;
    bool ok = true;
    for (std::string_view part : {"DP", "TP", "EP"}) {
      if (part != "DP") {
        const size_t spaced = skip(line, pos, regex_space);
        if (spaced == pos) {
          ok = false;
          break;
        }
        pos = spaced;
      }
      if (line.substr(pos, 2) != part) {
        ok = false;
        break;
      }
      const size_t digits = skip(line, pos + 2, digit);
      if (digits == pos + 2) {
        ok = false;
        break;
      }
      pos = digits;
    }
    if (ok && (pos == line.size() || !word_char(line[pos]))) return std::string(line.substr(at, pos - at));
  }
  return std::nullopt;
}

}  // namespace

Result<void> RecordReader::add_line(std::string_view line, size_t line_number) {
  const std::string_view text = detail::py_strip(line);
  if (text.empty()) return {};
  const std::string where = fmt::format("{}:{}", source_, line_number);
  auto parsed = json::parse(text, "");
  if (!parsed) {
    std::string_view rest = parsed.error().message();
    if (rest.starts_with(":1:")) rest.remove_prefix(3);
    return fail(ErrorCode::kParse, fmt::format("{}:{}", where, rest));
  }
  const bj::object* row = parsed->if_object();
  if (row == nullptr)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}: {}, not a JSON object (each line of profile_export.jsonl is one request)", where,
                            kind_name(*parsed)));
  ++accounting_.records_total;
  const bj::value* metadata_value = row->if_contains("metadata");
  const bj::object* metadata = metadata_value ? metadata_value->if_object() : nullptr;
  if (metadata_value && metadata == nullptr)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}: metadata is {}, not an object", where, kind_name(*metadata_value)));
  const bj::value* phase = metadata ? metadata->if_contains("benchmark_phase") : nullptr;
  const bool warmup = phase && !phase->is_null() && !(phase->is_string() && phase->get_string() == "profiling");
  const bj::value* error = row->if_contains("error");
  const bool failed = error && truthy(*error);
  if (warmup) ++accounting_.records_warmup_dropped;
  if (failed) {
    ++accounting_.records_error_dropped;
    auto category = error_category(*error);
    if (!category) return fail(category.error().with_context(where));
    auto [it, added] = category_index_.try_emplace(*category, accounting_.error_categories.size());
    if (added) accounting_.error_categories.emplace_back(*category, 0);
    ++accounting_.error_categories[it->second].second;
  }
  if (failed || warmup) return {};
  auto record = kept_record(*row, metadata);
  if (!record) return fail(record.error().with_context(where));
  record->where = where;
  records_.push_back(std::move(*record));
  return {};
}

Result<void> TraceMetadata::add_blob(const bj::value& blob, std::string_view where) {
  const bj::object* o = blob.if_object();
  if (o == nullptr)
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("{}: a trace is {}, not an object (load_trace_metadata fails on it)", where, kind_name(blob)));
  const bj::value* id = o->if_contains("id");
  if (id == nullptr || !truthy(*id)) return {};
  const bj::value* requests = o->if_contains("requests");
  // Python iterates whatever is there: nothing, an empty text or object is no request.
  if (requests == nullptr || (requests->is_string() && requests->get_string().empty()) ||
      (requests->is_object() && requests->get_object().empty()))
    return {};
  if (!requests->is_array())
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("{}: requests is {}, not a list (load_trace_metadata fails on it)", where, kind_name(*requests)));
  std::vector<int64_t> turns;
  for (const bj::value& request : requests->get_array()) {
    const bj::object* req = request.if_object();
    if (req == nullptr)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{}: a request is {}, not an object", where, kind_name(request)));
    const bj::value* type = req->if_contains("type");
    if (!type || !type->is_string() || (type->get_string() != "n" && type->get_string() != "s")) continue;
    const bj::value* hash_ids = req->if_contains("hash_ids");
    if (hash_ids && truthy(*hash_ids) && !hash_ids->is_array() && !hash_ids->is_string() && !hash_ids->is_object())
      return fail(ErrorCode::kInvalidArgument, fmt::format("{}: hash_ids is {}, not a list", where, shown(*hash_ids)));
    const bj::value* length = req->if_contains("output_length");
    if (length == nullptr || length->is_null()) length = req->if_contains("out");
    if (length == nullptr || !truthy(*length)) {
      turns.push_back(0);
      continue;
    }
    auto value = detail::to_int(*length);
    if (!value)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{}: output length {} is not an integer (int() refuses it)", where, shown(*length)));
    turns.push_back(*value);
  }
  if (!turns.empty()) traces_[detail::py_str(*id)] = std::move(turns);
  return {};
}

const std::vector<int64_t>* TraceMetadata::find(std::string_view trace_id) const {
  auto it = traces_.find(trace_id);
  return it == traces_.end() ? nullptr : &it->second;
}

std::optional<int64_t> vllm_kv_pool_tokens(std::string_view log) {
  std::map<std::string, int64_t> per_engine;
  int64_t bare_total = 0;
  bool bare_found = false;
  for_each_line(log, [&](std::string_view line) {
    if (line.find("GPU KV cache size") == std::string_view::npos) return;
    auto digits = vllm_size_match(line);
    if (!digits) return;
    auto tokens = decimal(*digits);
    if (!tokens || *tokens <= 0) return;
    if (auto tag = vllm_engine_tag(line)) {
      per_engine[*tag] = *tokens;
    } else {
      bare_total += *tokens;
      bare_found = true;
    }
  });
  if (!per_engine.empty()) {
    int64_t sum = 0;
    for (const auto& [tag, tokens] : per_engine) sum += tokens;
    return sum;
  }
  return bare_found ? std::optional<int64_t>(bare_total) : std::nullopt;
}

std::optional<int64_t> sglang_kv_pool_tokens(std::string_view log) {
  std::optional<int64_t> dp_size;
  if (auto digits = bounded_number(log, "dp_size=")) {
    auto value = decimal(*digits);
    if (value && *value > 0) dp_size = value;
  }
  std::map<std::string, int64_t> per_rank;
  int64_t bare_total = 0;
  int64_t bare_count = 0;
  for_each_line(log, [&](std::string_view line) {
    if (line.find("max_total_num_tokens") == std::string_view::npos) return;
    auto digits = bounded_number(line, "max_total_num_tokens=");
    if (!digits) return;
    auto tokens = decimal(*digits);
    if (!tokens || *tokens <= 0) return;
    if (auto tag = sglang_rank_tag(line)) {
      per_rank[*tag] = *tokens;
    } else {
      bare_total += *tokens;
      ++bare_count;
    }
  });
  if (!per_rank.empty()) {
    if (dp_size && per_rank.size() == 1 && *dp_size > 1) return per_rank.begin()->second * *dp_size;
    int64_t sum = 0;
    for (const auto& [tag, tokens] : per_rank) sum += tokens;
    return sum;
  }
  if (bare_count == 1 && dp_size && *dp_size > 1) return bare_total * *dp_size;
  return bare_count ? std::optional<int64_t>(bare_total) : std::nullopt;
}

ServerLog parse_server_log(std::string_view text) {
  std::string clean;
  utf8::append_lossy(text, clean);
  std::erase(clean, '\0');
  return {vllm_kv_pool_tokens(clean), sglang_kv_pool_tokens(clean)};
}

}  // namespace ix::metrics::agentic
