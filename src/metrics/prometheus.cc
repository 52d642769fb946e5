#include "metrics/prometheus.h"

#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace ix::metrics {

PrometheusSample parse_prometheus_text(std::string_view text) {
  PrometheusSample out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    size_t name_end = 0;
    while (name_end < line.size() && line[name_end] != '{' && line[name_end] != ' ') ++name_end;
    const std::string_view name = line.substr(0, name_end);
    size_t value_start = name_end;
    if (value_start < line.size() && line[value_start] == '{') {
      // Skip the label set; label values may contain '}' inside quotes.
      bool quoted = false;
      size_t i = value_start + 1;
      for (; i < line.size(); ++i) {
        if (line[i] == '\\' && quoted) {
          ++i;
        } else if (line[i] == '"') {
          quoted = !quoted;
        } else if (line[i] == '}' && !quoted) {
          break;
        }
      }
      if (i >= line.size()) continue;
      value_start = i + 1;
    }
    while (value_start < line.size() && line[value_start] == ' ') ++value_start;
    std::string_view value_text = line.substr(value_start);
    value_text = value_text.substr(0, value_text.find(' '));  // drop a timestamp
    if (name.empty() || value_text.empty()) continue;
    const std::string value_string(value_text);
    char* end = nullptr;
    const double value = std::strtod(value_string.c_str(), &end);
    if (end != value_string.c_str() + value_string.size() || std::isnan(value)) continue;
    out[std::string(name)] += value;
  }
  return out;
}

namespace {

std::optional<double> lookup(const PrometheusSample& s, std::string_view name) {
  if (auto it = s.find(name); it != s.end()) return it->second;
  if (auto it = s.find(std::string(name) + "_total"); it != s.end()) return it->second;
  return std::nullopt;
}

std::optional<double> delta(const PrometheusSample& before, const PrometheusSample& after, std::string_view name) {
  auto a = lookup(after, name);
  if (!a) return std::nullopt;
  return *a - lookup(before, name).value_or(0.0);
}

}  // namespace

boost::json::object server_window_summary(const PrometheusSample& before, const PrometheusSample& after,
                                          std::optional<double> configured_acceptance_length) {
  boost::json::object out;
  const auto accepted = delta(before, after, "vllm:spec_decode_num_accepted_tokens");
  const auto drafts = delta(before, after, "vllm:spec_decode_num_drafts");
  const auto draft_tokens = delta(before, after, "vllm:spec_decode_num_draft_tokens");
  if (accepted && drafts && *drafts > 0) {
    out["spec_decode_acceptance_length"] = 1.0 + *accepted / *drafts;
    out["spec_decode_accepted_tokens"] = *accepted;
    out["spec_decode_drafts"] = *drafts;
    if (draft_tokens && *draft_tokens > 0) {
      out["spec_decode_draft_tokens"] = *draft_tokens;
      out["spec_decode_draft_acceptance_rate"] = *accepted / *draft_tokens;
    }
  } else if (auto al = lookup(after, "sglang:spec_accept_length")) {
    out["spec_decode_acceptance_length"] = *al;
  }
  const auto queries = delta(before, after, "vllm:prefix_cache_queries");
  const auto hits = delta(before, after, "vllm:prefix_cache_hits");
  if (queries && hits && *queries > 0) {
    out["prefix_cache_hit_rate"] = *hits / *queries;
    out["prefix_cache_queries"] = *queries;
    out["prefix_cache_hits"] = *hits;
  } else if (auto rate = lookup(after, "sglang:cache_hit_rate")) {
    out["prefix_cache_hit_rate"] = *rate;
  }
  // What the server counted over the window, to compare with the client's totals.
  for (const char* name : {"vllm:prompt_tokens", "vllm:generation_tokens", "vllm:request_success"}) {
    if (auto d = delta(before, after, name)) out[std::string(name).substr(5)] = *d;
  }
  if (configured_acceptance_length) out["configured_acceptance_length"] = *configured_acceptance_length;
  return out;
}

}  // namespace ix::metrics
