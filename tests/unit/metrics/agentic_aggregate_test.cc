// The agentic aggregation on hand-made artifact folders: byte-equal to the records InferenceX's
// process_agentic_result.py wrote for the folders of tests/data/agentic_aggregate/
// (tests/oracle/agentic_goldens.py), and refused inputs, Python's value rules, the server-log
// parsers and the power window.
#include "metrics/agentic_aggregate.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/json_io.h"
#include "metrics/statistics.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::metrics::agentic {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;
using Vars = std::map<std::string, std::string>;

EnvLookup lookup(const Vars& vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

Vars base_env() {
  return {
      {"KV_OFFLOADING", "none"}, {"TP", "8"}, {"FRAMEWORK", "vllm"}, {"CONC", "4"}, {"HF_HUB_CACHE", "/nonexistent"}};
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string row(const std::string& extra_metadata = "", const std::string& error = "null") {
  return R"({"metadata": {"benchmark_phase": "profiling", "request_start_ns": 1000000000, "request_end_ns": 2500000000)" +
         extra_metadata +
         R"(}, "metrics": {"input_sequence_length": {"value": 100, "unit": "tokens"}, "output_sequence_length": )"
         R"({"value": 11, "unit": "tokens"}, "time_to_first_token": {"value": 30.0, "unit": "ms"}, )"
         R"("request_latency": {"value": 500.0, "unit": "ms"}, "inter_token_latency": {"value": 47.0, "unit": "ms"}}, )"
         R"("error": )" +
         error + "}\n";
}

// A result folder whose aiperf_artifacts/ holds `jsonl` (and an aggregate with a window).
fs::path result_with(const std::string& name, const std::string& jsonl) {
  const fs::path dir = testing::scratch_dir("agentic_" + name);
  write(dir / "aiperf_artifacts" / "profile_export.jsonl", jsonl);
  write(dir / "aiperf_artifacts" / "profile_export_aiperf.json",
        R"({"start_time": "2026-01-01T00:00:00.000000+00:00", "end_time": "2026-01-01T00:00:02.500000+00:00"})");
  return dir;
}

Result<bj::object> aggregate(const fs::path& result_dir, const Vars& vars) {
  const auto get = lookup(vars);
  auto inputs = inputs_from_env(get);
  if (!inputs) return std::unexpected(inputs.error());
  auto artifacts = read_artifacts(result_dir, resolve_artifact_dir(result_dir), get);
  if (!artifacts) return std::unexpected(artifacts.error());
  return build_record(*artifacts, *inputs);
}

std::string error_of(const fs::path& result_dir, const Vars& vars) {
  auto record = aggregate(result_dir, vars);
  return record ? std::string("(no error)") : record.error().message();
}

// --- the script's records ------------------------------------------------------------------------

class ScriptGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ScriptGolden, RecordIsByteEqualToTheScripts) {
  const fs::path dir = testing::source_path("tests/data/agentic_aggregate/" + GetParam());
  auto env = json::read_file(dir / "env.json");
  ASSERT_TRUE(env) << env.error().message();
  Vars vars;
  for (const auto& [key, value] : env->as_object()) vars[std::string(key)] = std::string(value.as_string());
  vars["HF_HUB_CACHE"] = (dir / "hf").string();
  auto record = aggregate(dir / "result", vars);
  ASSERT_TRUE(record) << record.error().message();
  EXPECT_EQ(json::to_python_json(*record), testing::read_whole_file(dir / "expected.json"));
}

INSTANTIATE_TEST_SUITE_P(AgenticAggregate, ScriptGolden,
                         ::testing::Values("basic", "vllm", "sglang", "dynamo_multinode", "atom", "mixed", "run_subdir",
                                           "zero_completed"));

TEST(AgenticAggregate, ZeroCompletedRequestsGiveEmptyStatisticsAndNoPowerWindow) {
  const fs::path dir = testing::source_path("tests/data/agentic_aggregate/zero_completed/result");
  auto record = aggregate(dir, base_env());
  ASSERT_TRUE(record) << record.error().message();
  EXPECT_EQ(record->at("num_requests_successful").as_int64(), 0);
  EXPECT_EQ(record->at("num_requests_total").as_int64(), 2);
  EXPECT_TRUE(record->at("request_metrics").at("latency").at("ttft").as_object().empty());
  EXPECT_TRUE(record->at("request_metrics").at("throughput").as_object().empty());
  auto artifacts = read_artifacts(dir, resolve_artifact_dir(dir), lookup(base_env()));
  ASSERT_TRUE(artifacts);
  // The aggregate has no start/end: the window is missing before the count is looked at.
  EXPECT_EQ(power_window(dir, resolve_artifact_dir(dir), *artifacts).reasons,
            std::vector<std::string>{"profile_window_missing"});
  const fs::path windowed = result_with("zero_window", "");
  auto none = read_artifacts(windowed, resolve_artifact_dir(windowed), lookup(base_env()));
  ASSERT_TRUE(none);
  EXPECT_EQ(power_window(windowed, resolve_artifact_dir(windowed), *none).reasons,
            std::vector<std::string>{"successful_request_count_invalid"});
  fs::remove_all(windowed);
}

// --- refused inputs -------------------------------------------------------------------------------

TEST(AgenticAggregate, MissingRecordsFileIsNamed) {
  const fs::path dir = testing::scratch_dir("agentic_missing");
  const std::string message = error_of(dir, base_env());
  EXPECT_NE(message.find((dir / "aiperf_artifacts" / "profile_export.jsonl").string() + " not found"),
            std::string::npos)
      << message;
  fs::remove_all(dir);
}

TEST(AgenticAggregate, GarbageJsonIsReportedAtFileAndLine) {
  const fs::path dir = result_with("garbage", row() + "\n" + "{\"metadata\": {oops\n" + row());
  const std::string message = error_of(dir, base_env());
  const std::string file = (dir / "aiperf_artifacts" / "profile_export.jsonl").string();
  EXPECT_EQ(message.rfind(file + ":3:", 0), 0u) << message;
  EXPECT_NE(message.find("invalid JSON"), std::string::npos) << message;
  fs::remove_all(dir);
}

TEST(AgenticAggregate, MalformedRowsAreRefusedWithTheirLine) {
  const std::map<std::string, std::string> cases = {
      {"[1, 2]\n", ":1: a list, not a JSON object"},
      {"{\"metadata\": null}\n", ":1: metadata is null, not an object"},
      {row() + "{\"metrics\": [1]}\n", ":2: metrics is a list, not an object"},
      {R"({"metadata": {"request_start_ns": "abc"}, "metrics": {}})"
       "\n",
       ":1: metadata.request_start_ns is \"abc\", not an integer"},
      {row("", "{\"message\": \"   \"}"), ":1: the error message is only white space"},
  };
  int n = 0;
  for (const auto& [jsonl, expected] : cases) {
    const fs::path dir = result_with("malformed" + std::to_string(n++), jsonl);
    const std::string message = error_of(dir, base_env());
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    fs::remove_all(dir);
  }
}

TEST(AgenticAggregate, UnknownServerMetricsBackendIsAnError) {
  const fs::path dir = result_with("unknown_backend", row());
  write(dir / "aiperf_artifacts" / "server_metrics_export.json",
        R"({"metrics": {"unknown_backend:cache_hits": {"type": "counter", "series": [{"stats": {"total": 1.0}}]}}})");
  Vars vars = base_env();
  vars["FRAMEWORK"] = "Unknown";
  const std::string message = error_of(dir, vars);
  EXPECT_NE(message.find("Unsupported agentic server metrics backend; framework='unknown', "
                         "metric_names=[unknown_backend:cache_hits]"),
            std::string::npos)
      << message;
  fs::remove_all(dir);
}

TEST(AgenticAggregate, EnvironmentErrorsAreTheScripts) {
  const std::vector<std::pair<Vars, std::string>> cases = {
      {{{"KV_OFFLOADING", ""}}, "Missing required environment variable: KV_OFFLOADING"},
      {{{"KV_OFFLOAD_BACKEND", "lmcache"}}, "KV_OFFLOAD_BACKEND must be empty when KV_OFFLOADING=none"},
      {{{"KV_OFFLOADING", "dram"}}, "KV_OFFLOAD_BACKEND is required when KV_OFFLOADING is enabled"},
      {{{"KV_OFFLOADING", "dram"}, {"KV_OFFLOAD_BACKEND", "a"}, {"KV_OFFLOAD_BACKEND_METADATA", R"({"name": "b"})"}},
       "KV_OFFLOAD_BACKEND must match KV_OFFLOAD_BACKEND_METADATA.name"},
      {{{"KV_OFFLOADING", "dram"}, {"KV_OFFLOAD_BACKEND", "a"}, {"KV_OFFLOAD_BACKEND_METADATA", R"({"version": "1"})"}},
       "KV_OFFLOAD_BACKEND_METADATA must contain 'name' and optional 'version'"},
      {{{"ROUTER_METADATA", "{"}}, "ROUTER_METADATA must contain valid JSON"},
      {{{"ROUTER_METADATA", R"({"name": "r"})"}}, "ROUTER_METADATA must contain exactly 'name' and 'version'"},
      {{{"TP", "eight"}}, "TP='eight' is not an integer"},
      {{{"CONC", ""}}, "CONC='' is not an integer"},
      {{{"PP_SIZE", "0"}}, "PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers."},
      {{{"IS_MULTINODE", "true"}, {"PREFILL_HARDWARE", "b200"}},
       "PREFILL_HARDWARE and DECODE_HARDWARE must be specified together."},
  };
  for (const auto& [overrides, expected] : cases) {
    Vars vars = base_env();
    for (const auto& [k, v] : overrides) vars[k] = v;
    auto inputs = inputs_from_env(lookup(vars));
    ASSERT_FALSE(inputs) << expected;
    EXPECT_NE(inputs.error().message().find(expected), std::string::npos) << inputs.error().message();
  }
}

TEST(AgenticAggregate, UnsetIntegersTakeTheScriptsDefaults) {
  auto inputs = inputs_from_env(lookup({{"KV_OFFLOADING", "none"}, {"TP", ""}}));
  ASSERT_TRUE(inputs) << inputs.error().message();
  EXPECT_EQ(inputs->tp, 1);
  EXPECT_EQ(inputs->conc, 0);
  EXPECT_EQ(inputs->num_gpus, 1);
  EXPECT_EQ(inputs->spec_decoding, "none");
  EXPECT_EQ(json::to_string(inputs->layout), R"({"pp": 1, "dcp_size": 1, "pcp_size": 1})");
}

// --- Python's rules -------------------------------------------------------------------------------

TEST(AgenticAggregate, ErrorCategoriesFollowTheScript) {
  auto category = [](std::string_view text) {
    auto value = json::parse(text);
    EXPECT_TRUE(value);
    auto got = error_category(*value);
    return got ? *got : "error: " + got.error().message();
  };
  EXPECT_EQ(category(R"({"type": "HTTPStatusError", "message": "500"})"), "HTTPStatusError");
  EXPECT_EQ(category(R"({"type": "", "code": 503})"), "503");
  EXPECT_EQ(category(R"({"status": false})"), "False");
  EXPECT_EQ(category(R"({"message": "ReadTimeout: no answer\nmore"})"), "ReadTimeout");
  EXPECT_EQ(category(R"({"message": "", "error": ":x"})"), "unknown");
  EXPECT_EQ(category(R"("  Connection refused  ")"), "Connection refused");
  EXPECT_EQ(category(R"({"message": {"a": 1}})"), "{'a'");
  EXPECT_EQ(category("{\"message\": \"" + std::string(130, 'x') + "\"}"), std::string(120, 'x'));
  EXPECT_EQ(category("{\"message\": \"\u00e9" + std::string(130, 'y') + "\"}"), "\u00e9" + std::string(119, 'y'));
  EXPECT_EQ(category(R"({})"), "unknown");
}

TEST(AgenticAggregate, RoundFloatsAsTheScript) {
  auto rounded = [](double v) {
    bj::value value(v);
    round_floats(value);
    return json::to_python_json(value);
  };
  EXPECT_EQ(rounded(0.123456789), "0.12346");
  EXPECT_EQ(rounded(2.0), "2");
  EXPECT_EQ(rounded(0.999999), "1");
  EXPECT_EQ(rounded(0.0), "0.0");
  EXPECT_EQ(rounded(-3.000001), "-3");
  EXPECT_EQ(rounded(1e-7), "0.0");
  EXPECT_EQ(rounded(2.675e-5), "3e-05");
  bj::value nan(std::nan(""));
  round_floats(nan);
  EXPECT_EQ(json::to_python_json(nan), "NaN");
}

TEST(AgenticAggregate, PythonStatistics) {
  const std::vector<double> values{0.1, 0.2, 0.3};
  EXPECT_EQ(python_mean(values), 0.2);  // exact mean rounded once (a plain sum gives 0.20000000000000004)
  EXPECT_EQ(python_pstdev(std::vector<double>{1.5, 2.5, 2.5, 2.75, 3.25, 4.75}), 0.986893273527251);
  const auto int_mean = python_mean(std::vector<int64_t>{100, 200});
  EXPECT_TRUE(int_mean.is_int);
  EXPECT_EQ(int_mean.int_value, 150);
  const auto float_mean = python_mean(std::vector<int64_t>{1, 2});
  EXPECT_FALSE(float_mean.is_int);
  EXPECT_EQ(float_mean.float_value, 1.5);
  EXPECT_EQ(python_pstdev(std::vector<int64_t>{2, 4, 4, 4, 5, 5, 7, 9}), 2.0);
}

// --- server logs ----------------------------------------------------------------------------------

TEST(AgenticAggregate, VllmLogKvPool) {
  EXPECT_EQ(vllm_kv_pool_tokens("INFO (EngineCore_DP0 pid=100) GPU KV cache size: 5,000,000 tokens\n"
                                "INFO (EngineCore_DP0 pid=100) GPU KV cache size: 5,000,000 tokens\n"
                                "INFO (EngineCore_DP1 pid=101) GPU KV cache size: 6,500,000 tokens"),
            11'500'000);
  EXPECT_EQ(vllm_kv_pool_tokens("GPU KV cache size: 1,000 tokens\r\nGPU KV cache size:2000 tokens\n"), 3000);
  EXPECT_EQ(vllm_kv_pool_tokens("GPU KV cache size: , tokens\nGPU KV cache size: 0 tokens"), std::nullopt);
  EXPECT_EQ(vllm_kv_pool_tokens("no capacity here"), std::nullopt);
}

TEST(AgenticAggregate, SglangLogKvPool) {
  EXPECT_EQ(sglang_kv_pool_tokens("server_args=ServerArgs(tp_size=4, dp_size=4)\n"
                                  "[2026-07-08 16:49:59 DP0 TP0 EP0] max_total_num_tokens=4602880, chunked=1"),
            18'411'520);
  EXPECT_EQ(sglang_kv_pool_tokens("[DP0 TP0 EP0] max_total_num_tokens=10\n[DP1 TP1 EP1] max_total_num_tokens=20\n"
                                  "[DP1 TP1 EP1] max_total_num_tokens=30"),
            40);
  EXPECT_EQ(sglang_kv_pool_tokens("attn_dp_size=2\nmax_total_num_tokens=100"), 100);  // no \b before dp_size
  EXPECT_EQ(sglang_kv_pool_tokens("xmax_total_num_tokens=100"), std::nullopt);
}

// --- the power window -----------------------------------------------------------------------------

TEST(AgenticAggregate, PowerWindowFromTheProfile) {
  const fs::path dir = result_with("window", row() + row());
  auto artifacts = read_artifacts(dir, resolve_artifact_dir(dir), lookup(base_env()));
  ASSERT_TRUE(artifacts) << artifacts.error().message();
  const auto window = power_window(dir, resolve_artifact_dir(dir), *artifacts);
  ASSERT_TRUE(window.window) << window.reasons.front();
  EXPECT_EQ(json::to_string(*window.window),
            R"({"benchmark_start_time_unix": 1767225600.0, "benchmark_end_time_unix": 1767225602.5, "duration": 2.5, )"
            R"("completed": 2, "total_input_tokens": 200, "total_output_tokens": 22})");
  // A naive time needs the offset captured at launch.
  write(dir / "aiperf_artifacts" / "profile_export_aiperf.json",
        R"({"start_time": "2026-01-01T01:00:00", "end_time": "2026-01-01T01:00:02.5"})");
  artifacts = read_artifacts(dir, resolve_artifact_dir(dir), lookup(base_env()));
  ASSERT_TRUE(artifacts);
  EXPECT_EQ(power_window(dir, resolve_artifact_dir(dir), *artifacts).reasons,
            std::vector<std::string>{"profile_timezone_offset_missing"});
  write(dir / "agentic_power_timezone_offset.txt", "+0100\n");
  const auto naive = power_window(dir, resolve_artifact_dir(dir), *artifacts);
  ASSERT_TRUE(naive.window);
  EXPECT_EQ(naive.window->at("benchmark_start_time_unix").as_double(), 1767225600.0);
  write(dir / "agentic_power_timezone_offset.txt", "+2400");
  EXPECT_EQ(power_window(dir, resolve_artifact_dir(dir), *artifacts).reasons,
            std::vector<std::string>{"profile_timezone_offset_invalid"});
  fs::remove_all(dir);
}

TEST(AgenticAggregate, ServerLogsAreFoundBesideAndAboveTheResult) {
  const fs::path root = testing::scratch_dir("agentic_logs");
  const fs::path result = root / "a" / "b" / "c" / "results";  // parents: c, b, a (not root)
  write(result / "server.log", "x");
  write(root / "a" / "watchtower-2.out", "x");
  write(root / "a" / "watchtower-1.out", "x");
  write(root / "watchtower-too-far.out", "x");
  const auto paths = server_log_paths(result);
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0], result / "server.log");
  EXPECT_EQ(paths[1], root / "a" / "watchtower-1.out");
  EXPECT_EQ(paths[2], root / "a" / "watchtower-2.out");
  fs::remove_all(root);
}

}  // namespace
}  // namespace ix::metrics::agentic
