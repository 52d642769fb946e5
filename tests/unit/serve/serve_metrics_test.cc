// /metrics text: vLLM names, Prometheus exposition format, cumulative histograms (golden file).
#include "serve/serve_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "support/subprocess.h"

namespace ix::serve {
namespace {

std::string render_sample() {
  ServeMetrics metrics;
  metrics.observe_ttft_s(0.003);
  metrics.observe_ttft_s(0.3);
  metrics.observe_ttft_s(5000.0);
  metrics.observe_inter_token_s(0.02);
  metrics.observe_e2e_s(1.2);
  // Arrived at 1 s, scheduled at 1.25 s, first token at 1.75 s, last at 3 s.
  metrics.observe_request_phases(1'000'000'000, 1'250'000'000, 1'750'000'000, 3'000'000'000);
  metrics.delivery_lateness().observe(0.00015);
  metrics.delivery_lateness().observe(0.004);
  metrics.count_finished(sim::FinishReason::kLength);
  metrics.count_finished(sim::FinishReason::kStop);
  metrics.count_profile_start();
  sim::EngineMetrics engine;
  engine.num_requests_running = 3;
  engine.num_requests_waiting = 2;
  engine.kv_cache_usage_perc = 0.25;
  engine.prefix_cache_queries = 1000;
  engine.prefix_cache_hits = 640;
  engine.prompt_tokens_total = 5000;
  engine.generation_tokens_total = 700;
  engine.spec_decode_num_drafts = 10;
  engine.spec_decode_num_draft_tokens = 30;
  engine.spec_decode_num_accepted_tokens = 21;
  return metrics.render(engine, "deepseek-ai/DeepSeek-R1");
}

TEST(ServeMetrics, MatchesGoldenFile) {
  std::string path = testing::source_path("tests/unit/serve/testdata/metrics_golden.txt");
  if (std::getenv("IXBENCH_UPDATE_GOLDEN") != nullptr) std::ofstream(path) << render_sample();
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(render_sample(), golden.str());
}

TEST(ServeMetrics, EverySampleLineIsWellFormed) {
  std::istringstream lines(render_sample());
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    ++samples;
    // name{labels} value
    size_t brace = line.find('{');
    size_t close = line.find("} ");
    ASSERT_NE(brace, std::string::npos) << line;
    ASSERT_NE(close, std::string::npos) << line;
    EXPECT_NE(line.find("model_name=\"deepseek-ai/DeepSeek-R1\""), std::string::npos) << line;
    // vLLM v1's engine index on every vllm: series (the simulator is engine 0); not on ixbench's own.
    EXPECT_EQ(line.starts_with("vllm:"), line.find("{engine=\"0\",") == brace) << line;
    // Label names in name order, as prometheus_client prints them (le and finished_reason included).
    std::vector<std::string> names;
    for (size_t at = brace + 1; at < close;) {
      const size_t eq = line.find("=\"", at);
      names.push_back(line.substr(at, eq - at));
      size_t quote = eq + 2;
      while (line[quote] != '"') quote += line[quote] == '\\' ? 2 : 1;
      at = quote + 2;  // past the closing quote and the comma
    }
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end())) << line;
    std::string value = line.substr(close + 2);
    char* end = nullptr;
    std::strtod(value.c_str(), &end);
    EXPECT_EQ(*end, '\0') << line;
  }
  EXPECT_GT(samples, 50);
}

TEST(ServeMetrics, HistogramBucketsAreCumulativeAndCountMatchesInf) {
  std::string text = render_sample();
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.001\",model_name=\"deepseek-ai/"
                      "DeepSeek-R1\"} 0.0"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.005\",model_name=\"deepseek-ai/"
                      "DeepSeek-R1\"} 1.0"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"2560.0\",model_name=\"deepseek-ai/"
                      "DeepSeek-R1\"} 2.0"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"deepseek-ai/"
                      "DeepSeek-R1\"} 3.0"),
            std::string::npos);
  EXPECT_NE(
      text.find("vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-R1\"} 3.0"),
      std::string::npos);
}

// Samples of `name` (its _bucket/_sum/_count lines), with the name cut off.
std::vector<std::string> samples_of(const std::string& text, const std::string& name) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(name + "_", 0) == 0) out.push_back(line.substr(name.size()));
  }
  return out;
}

// vLLM >= 0.11 exposes the gap histogram as vllm:inter_token_latency_seconds (and the deprecated
// vllm:time_per_output_token_seconds beside it, with the same observations).
TEST(ServeMetrics, InterTokenLatencyHasVllmsCurrentNameAndTheDeprecatedOne) {
  const std::string text = render_sample();
  EXPECT_NE(text.find("# TYPE vllm:inter_token_latency_seconds histogram\n"), std::string::npos);
  auto current = samples_of(text, "vllm:inter_token_latency_seconds");
  auto deprecated = samples_of(text, "vllm:time_per_output_token_seconds");
  EXPECT_EQ(current.size(), 22u);  // 19 bounds + +Inf, _sum, _count
  EXPECT_EQ(current, deprecated);
  EXPECT_NE(text.find("vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.025\",model_name=\"deepseek-ai/"
                      "DeepSeek-R1\"} 1.0"),
            std::string::npos);
}

// vLLM's definitions: queue = arrival -> first scheduled, prefill = first scheduled -> first
// token, decode = first token -> last token, inference = first scheduled -> last token.
TEST(ServeMetrics, RequestPhaseHistogramsFollowVllmsDefinitions) {
  const std::string text = render_sample();
  const std::string labels = "{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-R1\"";
  for (const auto& [name, sum, first_bucket] : {std::tuple{"vllm:request_queue_time_seconds", "0.25", "0.3"},
                                                std::tuple{"vllm:request_prefill_time_seconds", "0.5", "0.5"},
                                                std::tuple{"vllm:request_decode_time_seconds", "1.25", "1.5"},
                                                std::tuple{"vllm:request_inference_time_seconds", "1.75", "2.0"}}) {
    const std::string family = name;
    EXPECT_NE(text.find("# TYPE " + family + " histogram\n"), std::string::npos) << family;
    EXPECT_EQ(samples_of(text, family).size(), 24u) << family;  // vLLM's 21 latency bounds + +Inf, _sum, _count
    EXPECT_NE(text.find(family + "_sum" + labels + "} " + sum + "\n"), std::string::npos) << family << "\n" << text;
    EXPECT_NE(text.find(family + "_count" + labels + "} 1.0\n"), std::string::npos) << family;
    // The first bucket that holds the observation.
    EXPECT_NE(text.find(family + "_bucket{engine=\"0\",le=\"" + first_bucket +
                        "\",model_name=\"deepseek-ai/DeepSeek-R1\"} 1.0\n"),
              std::string::npos)
        << family;
  }
  // Times out of order never make a phase negative: a request scheduled "before" it arrived
  // queued 0 s.
  ServeMetrics metrics;
  metrics.observe_request_phases(2'000'000'000, 1'000'000'000, 2'500'000'000, 2'600'000'000);
  const std::string clamped = metrics.render(sim::EngineMetrics{}, "m");
  EXPECT_NE(clamped.find("vllm:request_queue_time_seconds_sum{engine=\"0\",model_name=\"m\"} 0.0\n"),
            std::string::npos);
  EXPECT_NE(clamped.find("vllm:request_inference_time_seconds_sum{engine=\"0\",model_name=\"m\"} 0.6\n"),
            std::string::npos);
}

TEST(ServeMetrics, ModelNameLabelIsEscaped) {
  ServeMetrics metrics;
  const std::string text = metrics.render(sim::EngineMetrics{}, "a\"b\\c\nd");
  EXPECT_NE(text.find("vllm:num_requests_running{engine=\"0\",model_name=\"a\\\"b\\\\c\\nd\"} 0.0\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("a\"b"), std::string::npos);
}

TEST(Histogram, MergeAddsBatchedCounts) {
  Histogram histogram({0.1, 1.0});
  std::vector<uint32_t> counts(histogram.bucket_count(), 0);
  counts[histogram.bucket_of(0.05)] += 2;
  counts[histogram.bucket_of(5.0)] += 1;
  histogram.merge(counts, 5'100'000'000);
  EXPECT_EQ(histogram.count(), 3u);
  std::string out;
  histogram.render(out, "h", "help", "a=\"b\",z=\"y\"");
  // le in its name-order place among the labels, as prometheus_client prints them.
  EXPECT_NE(out.find("h_bucket{a=\"b\",le=\"0.1\",z=\"y\"} 2.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("h_bucket{a=\"b\",le=\"1.0\",z=\"y\"} 2.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("h_bucket{a=\"b\",le=\"+Inf\",z=\"y\"} 3.0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("h_sum{a=\"b\",z=\"y\"} 5.1\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace ix::serve

namespace ix::serve {
namespace {

sim::EngineMetrics offloading_engine() {
  sim::EngineMetrics engine;
  engine.prompt_tokens_total = 1000;
  engine.prefix_cache_hits = 300;
  engine.external_prefix_cache_queries = 1000;
  engine.external_prefix_cache_hits = 200;
  engine.kv_offload_bytes_gpu_to_cpu = 4096;
  engine.kv_offload_bytes_cpu_to_gpu = 1024;
  engine.kv_offload_seconds_gpu_to_cpu = 0.5;
  engine.kv_offload_seconds_cpu_to_gpu = 0.25;
  sim::CacheConfigInfo info;
  info.block_size = 16;
  info.num_gpu_blocks = 1234;
  info.num_cpu_blocks = 777;
  info.enable_prefix_caching = true;
  info.gpu_memory_utilization = 0.9;
  info.kv_offloading_size_gib = 64;
  info.kv_offloading_backend = "native";
  engine.cache_config = info;
  return engine;
}

// Where a series' value starts in `text` ("" when the series is absent).
std::string series_value(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return "";
  const size_t start = at + series.size() + 2;
  return text.substr(start, text.find('\n', start) - start);
}

TEST(ServeMetrics, PromptTokensBySourceAddUpToThePromptTokens) {
  const std::string text = ServeMetrics().render(offloading_engine(), "m");
  const std::string labels = "engine=\"0\",model_name=\"m\"";
  auto by_source = [&](const std::string& source) {
    return series_value(text, "vllm:prompt_tokens_by_source_total{" + labels + ",source=\"" + source + "\"}");
  };
  EXPECT_EQ(by_source("local_compute"), "500.0");
  EXPECT_EQ(by_source("local_cache_hit"), "300.0");
  EXPECT_EQ(by_source("external_kv_transfer"), "200.0");
  EXPECT_EQ(series_value(text, "vllm:prompt_tokens_cached_total{" + labels + "}"), "500.0");
  EXPECT_EQ(series_value(text, "vllm:external_prefix_cache_hits_total{" + labels + "}"), "200.0");
}

TEST(ServeMetrics, CacheConfigInfoAndOffloadCountersAsVllmNamesThem) {
  const std::string text = ServeMetrics().render(offloading_engine(), "m");
  // vLLM's info gauge: CacheConfig's fields as labels in name order, the engine index, no model.
  EXPECT_EQ(series_value(text,
                         "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\","
                         "enable_prefix_caching=\"True\",engine=\"0\",gpu_memory_utilization=\"0.9\","
                         "kv_offloading_backend=\"native\",kv_offloading_size=\"64.0\",num_cpu_blocks=\"777\","
                         "num_gpu_blocks=\"1234\",num_gpu_blocks_override=\"None\"}"),
            "1.0")
      << text;
  const std::string labels = "engine=\"0\",model_name=\"m\"";
  EXPECT_EQ(series_value(text, "vllm:kv_offload_total_bytes_total{" + labels + ",transfer_type=\"GPU_to_CPU\"}"),
            "4096.0");
  EXPECT_EQ(series_value(text, "vllm:kv_offload_total_bytes_total{" + labels + ",transfer_type=\"CPU_to_GPU\"}"),
            "1024.0");
  EXPECT_EQ(series_value(text, "vllm:kv_offload_total_time_total{" + labels + ",transfer_type=\"CPU_to_GPU\"}"),
            "0.25");
  EXPECT_EQ(series_value(text, "vllm:kv_offload_store_bytes_total{" + labels + "}"), "4096.0");
  EXPECT_EQ(series_value(text, "vllm:kv_offload_load_time_total{" + labels + "}"), "0.25");
  // Without offloading vLLM has no OffloadingConnector, so no offload series.
  sim::EngineMetrics plain = offloading_engine();
  plain.cache_config->kv_offloading_size_gib = 0;
  const std::string without = ServeMetrics().render(plain, "m");
  EXPECT_EQ(without.find("vllm:kv_offload_"), std::string::npos);
  EXPECT_NE(without.find("kv_offloading_size=\"None\""), std::string::npos);
}

TEST(ServeMetrics, Gsm8kCountersAppearOnlyInAnswerMode) {
  ServeMetrics metrics;
  metrics.count_gsm8k_answered(true, false);
  EXPECT_EQ(metrics.render({}, "m").find("ixbench:gsm8k"), std::string::npos);
  metrics.enable_gsm8k();
  metrics.count_gsm8k_answered(true, true);
  metrics.count_gsm8k_answered(false, false);
  metrics.count_gsm8k_unmatched();
  const std::string text = metrics.render({}, "m");
  EXPECT_NE(text.find("# TYPE ixbench:gsm8k_answered_total counter\n"
                      "ixbench:gsm8k_answered_total{correct=\"true\",model_name=\"m\"} 2.0\n"
                      "ixbench:gsm8k_answered_total{correct=\"false\",model_name=\"m\"} 1.0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ixbench:gsm8k_runaway_total{model_name=\"m\"} 1.0\n"), std::string::npos);
  EXPECT_NE(text.find("ixbench:gsm8k_unmatched_total{model_name=\"m\"} 1.0\n"), std::string::npos);
}

}  // namespace
}  // namespace ix::serve
