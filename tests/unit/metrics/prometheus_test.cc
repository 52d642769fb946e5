#include "metrics/prometheus.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace ix::metrics {
namespace {

TEST(Prometheus, SumsLabelSetsAndSkipsCommentsAndJunk) {
  auto s = parse_prometheus_text(
      "# HELP vllm:prefix_cache_queries_total Prefix cache queries\n"
      "# TYPE vllm:prefix_cache_queries_total counter\n"
      "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m}x\"} 100.0\n"
      "vllm:prefix_cache_queries_total{engine=\"1\"} 50\r\n"
      "vllm:num_requests_running 3 1700000000000\n"
      "garbage line without value\n"
      "bad_value{a=\"b\"} abc\n"
      "unterminated{a=\"b 4\n");
  EXPECT_EQ(s.at("vllm:prefix_cache_queries_total"), 150.0);
  EXPECT_EQ(s.at("vllm:num_requests_running"), 3.0);
  EXPECT_FALSE(s.contains("bad_value"));
  EXPECT_FALSE(s.contains("unterminated"));
}

TEST(Prometheus, FamiliesKeepTypesHelpAndLabels) {
  const auto families = parse_prometheus_families(
      "# HELP vllm:prompt_tokens_total Prompt tokens\n"
      "# TYPE vllm:prompt_tokens_total counter\n"
      "vllm:prompt_tokens_total{engine=\"0\",model_name=\"a\\\"b,c}\"} 10\n"
      "vllm:prompt_tokens_created{engine=\"0\"} 1.7e9\n"
      "# TYPE vllm:ttft_seconds histogram\n"
      "vllm:ttft_seconds_bucket{le=\"0.1\"} 3\n"
      "vllm:ttft_seconds_bucket{le=\"+Inf\"} 5\n"
      "vllm:ttft_seconds_sum 0.9\n"
      "vllm:ttft_seconds_count 5\n"
      "vllm:num_requests_running 2\n"
      "broken{le=\"1} 4\n");  // an unclosed label set: skipped
  ASSERT_EQ(families.size(), 3u);
  EXPECT_EQ(families[0].name, "vllm:prompt_tokens_total");
  EXPECT_EQ(families[0].type, "counter");
  EXPECT_EQ(families[0].help, "Prompt tokens");
  ASSERT_EQ(families[0].samples.size(), 2u);  // the value and its _created
  const auto& labels = families[0].samples[0].labels;
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[1].first, "model_name");
  EXPECT_EQ(labels[1].second, "a\"b,c}");  // escapes undone, quoted ',' and '}' kept
  EXPECT_EQ(families[1].type, "histogram");
  EXPECT_EQ(families[1].samples.size(), 4u);
  EXPECT_EQ(families[1].samples[1].labels[0].second, "+Inf");
  EXPECT_EQ(families[2].name, "vllm:num_requests_running");  // no TYPE line: a family of its own
  EXPECT_EQ(families[2].type, "untyped");
  EXPECT_EQ(families[2].samples[0].value, 2.0);
}

TEST(Prometheus, WindowSummaryFromVllmCounters) {
  auto before = parse_prometheus_text(
      "vllm:spec_decode_num_accepted_tokens_total 100\nvllm:spec_decode_num_drafts_total 100\n"
      "vllm:spec_decode_num_draft_tokens_total 300\n"
      "vllm:prefix_cache_queries_total 1000\nvllm:prefix_cache_hits_total 100\n");
  auto after = parse_prometheus_text(
      "vllm:spec_decode_num_accepted_tokens_total 250\nvllm:spec_decode_num_drafts_total 200\n"
      "vllm:spec_decode_num_draft_tokens_total 600\n"
      "vllm:prefix_cache_queries_total 3000\nvllm:prefix_cache_hits_total 1100\n");
  auto w = server_window_summary(before, after, 2.5);
  EXPECT_DOUBLE_EQ(w.at("spec_decode_acceptance_length").as_double(), 2.5);  // 1 + 150/100
  EXPECT_DOUBLE_EQ(w.at("spec_decode_draft_acceptance_rate").as_double(), 0.5);
  EXPECT_DOUBLE_EQ(w.at("prefix_cache_hit_rate").as_double(), 0.5);
  EXPECT_DOUBLE_EQ(w.at("configured_acceptance_length").as_double(), 2.5);
}

// vLLM v1 (and `ixbench sim serve`) label every series engine="0" beside model_name, one series
// per engine with data parallelism; vLLM before v1 had model_name alone. The server-side view is
// the same from either shape.
TEST(Prometheus, WindowSummaryIsTheSameWithOrWithoutTheEngineLabel) {
  auto counters = [](std::string_view labels, double accepted, double drafts, double queries, double hits,
                     double finished) {
    const std::pair<std::string, double> series[] = {{"vllm:spec_decode_num_accepted_tokens_total", accepted},
                                                     {"vllm:spec_decode_num_drafts_total", drafts},
                                                     {"vllm:spec_decode_num_draft_tokens_total", 3 * drafts},
                                                     {"vllm:prefix_cache_queries_total", queries},
                                                     {"vllm:prefix_cache_hits_total", hits},
                                                     {"vllm:prompt_tokens_total", queries}};
    std::string text;
    for (const auto& [name, value] : series) {
      text += "# TYPE " + name + " counter\n" + name + "{" + std::string(labels) + "} " + std::to_string(value) + "\n";
    }
    text += "vllm:request_success_total{" + std::string(labels) + ",finished_reason=\"length\"} " +
            std::to_string(finished) + "\n";
    text += "vllm:e2e_request_latency_seconds_bucket{" + std::string(labels) + ",le=\"+Inf\"} 7.0\n";
    return text;
  };
  const auto older =
      server_window_summary(parse_prometheus_text(counters("model_name=\"m\"", 100, 100, 1000, 100, 2)),
                            parse_prometheus_text(counters("model_name=\"m\"", 250, 200, 3000, 1100, 6)), std::nullopt);
  const auto v1 = server_window_summary(
      parse_prometheus_text(counters("engine=\"0\",model_name=\"m\"", 100, 100, 1000, 100, 2)),
      parse_prometheus_text(counters("engine=\"0\",model_name=\"m\"", 250, 200, 3000, 1100, 6)), std::nullopt);
  EXPECT_DOUBLE_EQ(older.at("spec_decode_acceptance_length").as_double(), 2.5);  // 1 + 150/100
  EXPECT_DOUBLE_EQ(older.at("spec_decode_draft_acceptance_rate").as_double(), 0.5);
  EXPECT_DOUBLE_EQ(older.at("prefix_cache_hit_rate").as_double(), 0.5);
  EXPECT_DOUBLE_EQ(older.at("prompt_tokens").as_double(), 2000);
  EXPECT_DOUBLE_EQ(older.at("request_success").as_double(), 4);
  EXPECT_EQ(boost::json::serialize(v1), boost::json::serialize(older));
  // Two data-parallel engines: their series add up.
  const auto two_engines =
      server_window_summary(parse_prometheus_text(counters("engine=\"0\",model_name=\"m\"", 50, 50, 500, 50, 1) +
                                                  counters("engine=\"1\",model_name=\"m\"", 50, 50, 500, 50, 1)),
                            parse_prometheus_text(counters("engine=\"0\",model_name=\"m\"", 125, 100, 1500, 550, 3) +
                                                  counters("engine=\"1\",model_name=\"m\"", 125, 100, 1500, 550, 3)),
                            std::nullopt);
  EXPECT_EQ(boost::json::serialize(two_engines), boost::json::serialize(older));
}

TEST(Prometheus, SglangGaugesAndAbsentMetrics) {
  auto after = parse_prometheus_text("sglang:spec_accept_length 3.1\nsglang:cache_hit_rate 0.25\n");
  auto w = server_window_summary({}, after, std::nullopt);
  EXPECT_DOUBLE_EQ(w.at("spec_decode_acceptance_length").as_double(), 3.1);
  EXPECT_DOUBLE_EQ(w.at("prefix_cache_hit_rate").as_double(), 0.25);
  EXPECT_TRUE(server_window_summary({}, {}, std::nullopt).empty());
}

}  // namespace
}  // namespace ix::metrics
