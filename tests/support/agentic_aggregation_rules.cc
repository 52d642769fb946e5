#include "support/agentic_aggregation_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/json_io.h"

namespace ix::testing {
namespace fs = std::filesystem;
namespace json = boost::json;

fs::path agentic_artifact_dir(const fs::path& result_dir) {
  const fs::path base = result_dir / "aiperf_artifacts";
  if (fs::is_regular_file(base / "profile_export.jsonl")) return base;
  if (!fs::is_directory(base)) return base;
  std::vector<fs::path> children;
  for (const auto& entry : fs::directory_iterator(base)) children.push_back(entry.path());
  std::sort(children.begin(), children.end());
  for (const auto& child : children) {
    if (fs::is_directory(child) && fs::is_regular_file(child / "profile_export.jsonl")) return child;
  }
  return base;
}

namespace {

// Python truthiness of a JSON value.
bool truthy(const json::value& v) {
  if (v.is_null()) return false;
  if (v.is_bool()) return v.as_bool();
  if (v.is_string()) return !v.as_string().empty();
  if (v.is_object()) return !v.as_object().empty();
  if (v.is_array()) return !v.as_array().empty();
  return v.to_number<double>() != 0;
}

std::string python_str(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_int64()) return std::to_string(v.as_int64());
  return json::serialize(v);
}

std::string error_category(const json::value& error) {
  json::value message;
  if (error.is_object()) {
    const auto& e = error.as_object();
    for (const char* key : {"type", "error_type", "code", "class", "status"}) {
      const auto* value = e.if_contains(key);
      if (value && !value->is_null() && !(value->is_string() && value->as_string().empty())) return python_str(*value);
    }
    if (const auto* m = e.if_contains("message"); m && truthy(*m))
      message = *m;
    else if (const auto* m2 = e.if_contains("error"))
      message = *m2;
  } else {
    message = error;
  }
  if (!truthy(message)) return "unknown";
  std::string text = python_str(message);
  const size_t begin = text.find_first_not_of(" \t\r\n");
  text = begin == std::string::npos ? "" : text.substr(begin);
  text = text.substr(0, text.find('\n'));
  text = text.substr(0, text.find(':'));
  return text.empty() ? "unknown" : text.substr(0, 120);
}

}  // namespace

ix::Result<AgenticRecords> agentic_load_records(const fs::path& jsonl) {
  std::ifstream in(jsonl);
  if (!in) return ix::fail(ix::ErrorCode::kNotFound, fmt::format("{} not found", jsonl.string()));
  AgenticRecords out;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto parsed = ix::json::parse(line, fmt::format("{}:{}", jsonl.string(), number));
    if (!parsed) return std::unexpected(parsed.error());
    if (!parsed->is_object()) return ix::fail(ix::ErrorCode::kParse, fmt::format("line {} is not an object", number));
    const json::object& row = parsed->as_object();
    ++out.records_total;
    const json::value* phase = nullptr;
    if (const auto* m = row.if_contains("metadata"); m && m->is_object())
      phase = m->as_object().if_contains("benchmark_phase");
    const bool warmup = phase && !phase->is_null() && !(phase->is_string() && phase->as_string() == "profiling");
    const json::value* error = row.if_contains("error");
    const bool failed = error && truthy(*error);
    if (warmup) ++out.records_warmup_dropped;
    if (failed) {
      ++out.records_error_dropped;
      ++out.error_categories[error_category(*error)];
    }
    if (!failed && !warmup) out.kept.push_back(row);
  }
  out.records_profiled = static_cast<int64_t>(out.kept.size());
  out.records_dropped_total = out.records_total - out.records_profiled;
  return out;
}

std::optional<double> agentic_metric_value(const json::object& row, const std::string& name) {
  const auto* metrics = row.if_contains("metrics");
  if (!metrics || !metrics->is_object()) return std::nullopt;
  const auto* metric = metrics->as_object().if_contains(name);
  if (!metric) return std::nullopt;
  const json::value* value = metric;
  if (metric->is_object()) value = metric->as_object().if_contains("value");
  if (!value || !value->is_number()) return std::nullopt;
  return value->to_number<double>();
}

namespace {

// _metric_avg(): nullopt when absent; an error message when malformed.
ix::Result<std::optional<double>> metric_avg(const json::object& aggregate, const std::string& name) {
  const auto* metric = aggregate.if_contains(name);
  if (!metric || metric->is_null()) return std::optional<double>();
  if (!metric->is_object()) return ix::fail(ix::ErrorCode::kParse, name + " must be an object");
  const auto* value = metric->as_object().if_contains("avg");
  if (!value || value->is_null()) return std::optional<double>();
  if (!value->is_number()) return ix::fail(ix::ErrorCode::kParse, name + ".avg must be numeric");
  const double v = value->to_number<double>();
  if (!std::isfinite(v) || v < 0)
    return ix::fail(ix::ErrorCode::kParse, name + ".avg must be a finite non-negative number");
  return std::optional<double>(v);
}

fs::path aggregate_path(const fs::path& artifact_dir) {
  const fs::path direct = artifact_dir / "profile_export_aiperf.json";
  if (fs::is_regular_file(direct) || !fs::is_directory(artifact_dir)) return direct;
  std::vector<fs::path> children;
  for (const auto& entry : fs::directory_iterator(artifact_dir)) children.push_back(entry.path());
  std::sort(children.begin(), children.end());
  for (const auto& child : children) {
    if (fs::is_directory(child) && fs::is_regular_file(child / "profile_export_aiperf.json")) {
      return child / "profile_export_aiperf.json";
    }
  }
  return direct;
}

}  // namespace

std::vector<std::string> agentic_validate(const fs::path& artifact_dir, double failed_request_threshold) {
  const fs::path path = aggregate_path(artifact_dir);
  if (!fs::is_regular_file(path)) return {path.string() + " not found"};
  auto parsed = ix::json::read_file(path);
  if (!parsed) return {"failed to read " + path.string() + ": " + parsed.error().message()};
  if (!parsed->is_object()) return {path.string() + " must contain a JSON object"};
  const auto& aggregate = parsed->as_object();
  auto successes = metric_avg(aggregate, "request_count");
  auto errors = metric_avg(aggregate, "error_request_count");
  auto completed = metric_avg(aggregate, "completed_request_count");
  for (const auto* r : {&successes, &errors, &completed}) {
    if (!*r) return {"failed to read " + path.string() + ": " + r->error().message()};
  }
  if (!successes->has_value()) return {"request_count.avg is missing"};
  const double error_count = errors->value_or(0.0);
  const double done = completed->value_or(**successes + error_count);
  if (done <= 0) return {"aiperf completed zero requests"};
  if (error_count / done > failed_request_threshold) return {"aiperf request error rate exceeded the benchmark limit"};
  return {};
}

ix::Result<std::string> agentic_server_backend(const json::object& server_metrics, const std::string& framework) {
  json::object metrics;
  if (const auto* m = server_metrics.if_contains("metrics"); m && m->is_object()) metrics = m->as_object();
  const auto any_name = [&metrics](auto&& pred) {
    return std::any_of(metrics.begin(), metrics.end(),
                       [&pred](const auto& kv) { return pred(std::string_view(kv.key())); });
  };
  std::string lower = framework;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.starts_with("dynamo") || any_name([](std::string_view n) { return n.starts_with("dynamo_"); }))
    return "dynamo";
  const auto named_or_framework = [&](std::string_view name, auto&& pred) {
    return any_name(pred) || (metrics.empty() && lower == name);
  };
  if (named_or_framework("atom", [](std::string_view n) { return n.starts_with("atom:") || n.starts_with("atom_"); })) {
    return "atom";
  }
  if (named_or_framework("sglang", [](std::string_view n) { return n.starts_with("sglang:"); })) return "sglang";
  if (any_name([](std::string_view n) { return n.starts_with("vllm:"); }) || (metrics.empty() && lower == "vllm")) {
    return "vllm";
  }
  if (metrics.empty()) return "none";
  return ix::fail(ix::ErrorCode::kInvalidArgument, "Unsupported agentic server metrics backend");
}

std::optional<double> agentic_theoretical_hit_rate(const json::object& aggregate) {
  const auto* metric = aggregate.if_contains("theoretical_prefix_cache_hit");
  if (!metric || !metric->is_object()) return std::nullopt;
  const auto& m = metric->as_object();
  const auto number = [&m](const char* key) -> std::optional<double> {
    const auto* v = m.if_contains(key);
    if (!v || !v->is_number()) return std::nullopt;
    return v->to_number<double>();
  };
  if (auto sum = number("sum"), count = number("count"); sum && count && *count > 0) return *sum / *count;
  auto avg = number("avg");
  if (!avg) return std::nullopt;
  const auto* unit = m.if_contains("unit");
  return unit && unit->is_string() && unit->as_string() == "%" ? *avg / 100 : *avg;
}

}  // namespace ix::testing
