// Prometheus text exposition parsing and the server-side view of a benchmark run.
//
// `bench serve` scrapes the server's /metrics before and after the measured window and reports
// what the server itself saw over that window: the speculative-decoding acceptance length it
// achieved (vLLM: 1 + Δaccepted / Δdrafts from vllm:spec_decode_num_{accepted_tokens,drafts};
// SGLang: the sglang:spec_accept_length gauge) next to the configured one, and the prefix-cache
// hit rate (vLLM: Δvllm:prefix_cache_hits / Δvllm:prefix_cache_queries; SGLang:
// sglang:cache_hit_rate gauge). Counters keep or drop the `_total` suffix depending on the
// client library; both spellings are accepted.
//
// Thread-safety: pure functions over values.
#pragma once

#include <boost/json/object.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ix::metrics {

// Metric family name → sum of its samples over all label sets. Malformed lines are skipped
// (a scrape is best-effort diagnostics, never a reason to fail a benchmark).
using PrometheusSample = std::map<std::string, double, std::less<>>;
PrometheusSample parse_prometheus_text(std::string_view text);

// One sample line with its labels kept: `name{k="v",...} value [timestamp]`.
struct PrometheusSeriesSample {
  std::string name;                                         // as written: `x_bucket`, `x_sum`, `x_total`, ...
  std::vector<std::pair<std::string, std::string>> labels;  // in the order written, values unescaped
  double value = 0.0;
};

// A metric family: the `# TYPE` (and `# HELP`) lines and the samples that follow them. A sample
// belongs to the family of the closest TYPE line before it when its name is the family name or
// the family name (without a counter's `_total`) plus `_bucket`, `_sum`, `_count`, `_total` or
// `_created`; any other sample
// starts a family of its own with type "untyped". Families keep the order of first appearance.
struct PrometheusFamily {
  std::string name;              // the TYPE line's name (a counter's may end in `_total`)
  std::string type = "untyped";  // counter | gauge | histogram | summary | untyped
  std::string help;
  std::vector<PrometheusSeriesSample> samples;
};

// Parses the text exposition format keeping labels, TYPE and HELP. Malformed lines are skipped,
// as parse_prometheus_text() does.
std::vector<PrometheusFamily> parse_prometheus_families(std::string_view text);

// Server-side summary of the window between two scrapes. Keys present only when the server
// exposes the underlying metrics: spec_decode_acceptance_length, spec_decode_accepted_tokens,
// spec_decode_draft_tokens, spec_decode_drafts, spec_decode_draft_acceptance_rate,
// prefix_cache_hit_rate, prefix_cache_queries, prefix_cache_hits, prompt_tokens,
// generation_tokens, request_success (vLLM counters over the window); plus
// configured_acceptance_length when given.
boost::json::object server_window_summary(const PrometheusSample& before, const PrometheusSample& after,
                                          std::optional<double> configured_acceptance_length);

}  // namespace ix::metrics
