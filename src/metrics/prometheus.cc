#include "metrics/prometheus.h"

#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "common/strings.h"

namespace ix::metrics {

namespace {

// A sample line split into its parts; the label text is what lies between the braces.
struct SampleLine {
  std::string_view name;
  std::string_view label_text;
  double value = 0.0;
};

// The index of the '}' closing the label set that opens at `open`, or npos; label values may
// hold '}' and escaped quotes.
size_t label_set_end(std::string_view line, size_t open) {
  bool quoted = false;
  for (size_t i = open + 1; i < line.size(); ++i) {
    if (line[i] == '\\' && quoted) {
      ++i;
    } else if (line[i] == '"') {
      quoted = !quoted;
    } else if (line[i] == '}' && !quoted) {
      return i;
    }
  }
  return std::string_view::npos;
}

std::optional<SampleLine> split_sample_line(std::string_view line) {
  SampleLine out;
  size_t name_end = 0;
  while (name_end < line.size() && line[name_end] != '{' && line[name_end] != ' ') ++name_end;
  out.name = line.substr(0, name_end);
  size_t value_start = name_end;
  if (value_start < line.size() && line[value_start] == '{') {
    const size_t close = label_set_end(line, value_start);
    if (close == std::string_view::npos) return std::nullopt;
    out.label_text = line.substr(value_start + 1, close - value_start - 1);
    value_start = close + 1;
  }
  while (value_start < line.size() && line[value_start] == ' ') ++value_start;
  std::string_view value_text = line.substr(value_start);
  value_text = value_text.substr(0, value_text.find(' '));  // drop a timestamp
  if (out.name.empty() || value_text.empty()) return std::nullopt;
  const std::string value_string(value_text);
  char* end = nullptr;
  out.value = std::strtod(value_string.c_str(), &end);
  if (end != value_string.c_str() + value_string.size() || std::isnan(out.value)) return std::nullopt;
  return out;
}

// Calls `on_line` with each line, trailing CR and spaces removed, empty lines skipped.
template <typename OnLine>
void for_each_line(std::string_view text, OnLine&& on_line) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty()) on_line(line);
  }
}

// `k="v",k2="v2"` → pairs, with \\, \" and \n unescaped; nullopt when malformed.
std::optional<std::vector<std::pair<std::string, std::string>>> parse_labels(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> labels;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i >= text.size()) break;
    const size_t eq = text.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= text.size() || text[eq + 1] != '"') return std::nullopt;
    std::string key(strip(text.substr(i, eq - i)));
    std::string value;
    size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value += text[j] == 'n' ? '\n' : text[j];
      } else {
        value += text[j];
      }
    }
    if (j >= text.size() || key.empty()) return std::nullopt;
    labels.emplace_back(std::move(key), std::move(value));
    i = j + 1;
  }
  return labels;
}

bool belongs_to(std::string_view sample, std::string_view family) {
  if (family.ends_with("_total")) family.remove_suffix(6);  // a counter's base name
  if (!sample.starts_with(family)) return false;
  const std::string_view suffix = sample.substr(family.size());
  return suffix.empty() || suffix == "_bucket" || suffix == "_sum" || suffix == "_count" || suffix == "_total" ||
         suffix == "_created";
}

// Families in order of first appearance, found by name.
struct FamilyTable {
  std::vector<PrometheusFamily> families;
  std::map<std::string, size_t, std::less<>> index;

  PrometheusFamily& named(std::string_view name) {
    auto it = index.find(name);
    if (it == index.end()) {
      it = index.emplace(std::string(name), families.size()).first;
      PrometheusFamily family;
      family.name = std::string(name);
      families.push_back(std::move(family));
    }
    return families[it->second];
  }
};

}  // namespace

PrometheusSample parse_prometheus_text(std::string_view text) {
  PrometheusSample out;
  for_each_line(text, [&out](std::string_view line) {
    if (line.front() == '#') return;
    if (auto sample = split_sample_line(line)) out[std::string(sample->name)] += sample->value;
  });
  return out;
}

std::vector<PrometheusFamily> parse_prometheus_families(std::string_view text) {
  FamilyTable table;
  std::string current;  // the family of the last TYPE or HELP line
  for_each_line(text, [&](std::string_view line) {
    if (line.front() == '#') {
      std::string_view rest = strip(line.substr(1));
      const bool is_type = rest.starts_with("TYPE ");
      if (!is_type && !rest.starts_with("HELP ")) return;
      rest = strip(rest.substr(5));
      const size_t space = rest.find(' ');
      const std::string_view name = rest.substr(0, space);
      const std::string_view tail = space == std::string_view::npos ? std::string_view{} : strip(rest.substr(space));
      if (name.empty()) return;
      PrometheusFamily& family = table.named(name);
      (is_type ? family.type : family.help) = std::string(tail);
      current = std::string(name);
      return;
    }
    auto sample = split_sample_line(line);
    if (!sample) return;
    auto labels = parse_labels(sample->label_text);
    if (!labels) return;
    const std::string_view owner = belongs_to(sample->name, current) ? std::string_view(current) : sample->name;
    table.named(owner).samples.push_back({std::string(sample->name), std::move(*labels), sample->value});
  });
  return std::move(table.families);
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
