// `ixbench bench serve` as a drop-in for InferenceX's client: the exact command line
// run_benchmark_serving (benchmarks/benchmark_lib.sh) builds, with benchmark_serving.py replaced
// by ixbench, against the real simulator; the result is held to the rules InferenceX's
// utils/process_result.py applies to it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/json_io.h"
#include "support/process_result_rules.h"
#include "support/server_process.h"
#include "support/subprocess.h"
#include "tokenizer/tokenizer.h"

namespace ix {
namespace {

constexpr const char* kModel = "deepseek-ai/DeepSeek-R1-0528";

// run_benchmark_serving's argv after `python3 benchmark_serving.py`, in its order (conc 4, ISL
// 256, OSL 16, 8 prompts), with the optional flags appended as it appends them.
std::vector<std::string> inferencex_command(int port, const std::filesystem::path& dir, const std::string& backend,
                                            const std::vector<std::string>& optional) {
  std::vector<std::string> argv = {"bench",
                                   "serve",
                                   "--model",
                                   kModel,
                                   "--backend",
                                   backend,
                                   "--base-url",
                                   "http://0.0.0.0:" + std::to_string(port),
                                   "--dataset-name",
                                   "random",
                                   "--random-input-len",
                                   "256",
                                   "--random-output-len",
                                   "16",
                                   "--random-range-ratio",
                                   "0.8",
                                   "--num-prompts",
                                   "8",
                                   "--max-concurrency",
                                   "4",
                                   "--request-rate",
                                   "inf",
                                   "--ignore-eos",
                                   "--save-result",
                                   "--num-warmups",
                                   "8",
                                   "--percentile-metrics",
                                   "ttft,tpot,itl,e2el",
                                   "--result-dir",
                                   dir.string(),
                                   "--result-filename",
                                   "result.json"};
  argv.insert(argv.end(), optional.begin(), optional.end());
  return argv;
}

// The keys process_result.py writes for the reference result (the example agg, power aside), or
// empty when the shared data is absent.
std::set<std::string> reference_agg_keys() {
  const std::string dir = ix::testing::shared_path("data/inferencex/examples/aggregate");
  std::set<std::string> keys;
  if (dir.empty()) return keys;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.path().filename().string().starts_with("agg_")) continue;
    if (auto agg = ix::json::read_file(entry.path()); agg && agg->is_object())
      for (const auto& [key, value] : agg->as_object()) keys.emplace(key);
  }
  keys.erase("power_metric_schema_version");
  keys.erase("power_valid");
  return keys;
}

// A Hugging Face cache holding kModel's tokenizer, as InferenceX's machines have it
// (HF_HUB_CACHE=/mnt/hf_hub_cache): the packaged DeepSeek-V3 file stands in for R1's (they differ
// in two added tokens random prompts never hold). What these tests check is the command line, the
// resolution through the cache and the result, not R1's vocabulary.
std::filesystem::path hf_cache_with_model() {
  const auto cache = std::filesystem::temp_directory_path() / ("ixbench_hf_cache_" + std::to_string(::getpid()));
  const auto repo = cache / "models--deepseek-ai--DeepSeek-R1-0528";
  std::filesystem::create_directories(repo / "refs");
  std::filesystem::create_directories(repo / "snapshots" / "0123abcd");
  std::ofstream(repo / "refs" / "main") << "0123abcd";
  auto packaged = tok::resolve_tokenizer("deepseek_v3");
  EXPECT_TRUE(packaged.has_value()) << packaged.error().to_string();
  // A snapshot holds tokenizer_config.json beside tokenizer.json (the BOS the server adds is there).
  if (packaged) {
    for (const char* file : {"tokenizer.json", "tokenizer_config.json"})
      std::filesystem::copy_file(packaged->parent_path() / file, repo / "snapshots" / "0123abcd" / file,
                                 std::filesystem::copy_options::overwrite_existing);
  }
  return cache;
}

// Runs ixbench with HF_HUB_CACHE pointing at `cache`.
ix::testing::ProcessResult run_with_cache(const std::filesystem::path& cache, std::vector<std::string> args) {
  std::vector<std::string> argv = {"/usr/bin/env", "HF_HUB_CACHE=" + cache.string(), ix::testing::ixbench_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return ix::testing::run_process(argv, "", 120);
}

struct Variant {
  const char* name;
  const char* backend;
  std::vector<std::string> optional;
};

TEST(InferenceXClient, EveryCommandLineVariantRunsAndFeedsProcessResult) {
  auto server = ix::testing::ServerProcess::start(
      {"--model", kModel, "--hardware", "h200", "--tp", "8", "--tokenizer", "deepseek_v3"});
  ASSERT_TRUE(server.has_value()) << server.error().to_string();
  const std::set<std::string> reference = reference_agg_keys();
  const auto cache = hf_cache_with_model();
  const std::vector<Variant> variants = {
      {"plain", "vllm", {}},
      {"trust_remote_code", "vllm", {"--trust-remote-code"}},
      {"chat_template", "vllm", {"--use-chat-template"}},
      {"dsv4", "vllm", {"--use-chat-template", "--dsv4"}},
      {"dsv4_mode",
       "vllm",
       {"--use-chat-template", "--dsv4", "--trust-remote-code", "--tokenizer-mode", "deepseek_v4"}},
      {"endpoint", "openai", {"--endpoint", "/v1/completions"}},
      {"sglang_profile", "sglang", {"--profile"}},
      {"chat", "openai-chat", {"--endpoint", "/v1/chat/completions", "--use-chat-template"}},
      {"tokenizer_dir", "vllm", {"--tokenizer", "deepseek_v3", "--tokenizer-mode", "auto"}},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    const auto dir = std::filesystem::temp_directory_path() /
                     ("ixbench_inferencex_" + std::string(v.name) + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    auto run = run_with_cache(cache, inferencex_command((*server)->port(), dir, v.backend, v.optional));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.signal, 0);
    auto raw = ix::json::read_file(dir / "result.json");
    ASSERT_TRUE(raw.has_value() && raw->is_object()) << run.err;
    const auto& result = raw->as_object();
    EXPECT_EQ(result.at("completed").as_int64(), 8);
    auto agg_keys = ix::testing::process_result_agg_keys(result);
    ASSERT_TRUE(agg_keys.has_value()) << agg_keys.error().to_string();
    if (!reference.empty()) EXPECT_EQ(*agg_keys, reference);
    const auto& own = result.at("ixbench").as_object();
    // Prompts have exactly the drawn length as the server counts them, whatever the framing.
    const auto& server_view = own.at("server_metrics").as_object();
    if (std::string(v.backend) != "openai-chat")
      EXPECT_EQ(server_view.at("prompt_tokens").to_number<double>(),
                result.at("total_input_tokens").to_number<double>());
    if (std::string(v.name).starts_with("dsv4")) EXPECT_EQ(own.at("chat_encoding").as_string(), "deepseek_v4");
    if (std::string(v.name) == "sglang_profile") EXPECT_EQ(own.at("profile_start").to_number<int64_t>(), 200);
    std::filesystem::remove_all(dir);
  }
  std::filesystem::remove_all(cache);
}

// No tokenizer anywhere: the error lists where it looked and names --tokenizer-from-server, which
// then makes the prompts through the server (exact lengths, as the server counts them).
TEST(InferenceXClient, TokenizerFromServerRunsWithoutALocalTokenizer) {
  auto server = ix::testing::ServerProcess::start(
      {"--model", kModel, "--hardware", "h200", "--tp", "8", "--tokenizer", "deepseek_v3"});
  ASSERT_TRUE(server.has_value()) << server.error().to_string();
  const auto empty_cache =
      std::filesystem::temp_directory_path() / ("ixbench_empty_cache_" + std::to_string(::getpid()));
  std::filesystem::create_directories(empty_cache);
  const auto dir = std::filesystem::temp_directory_path() / ("ixbench_from_server_" + std::to_string(::getpid()));
  auto missing = run_with_cache(empty_cache, inferencex_command((*server)->port(), dir, "vllm", {}));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("--tokenizer-from-server"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find(empty_cache.string()), std::string::npos) << missing.err;
  for (const char* backend : {"vllm", "openai-chat"}) {
    SCOPED_TRACE(backend);
    std::filesystem::remove_all(dir);
    auto run =
        run_with_cache(empty_cache, inferencex_command((*server)->port(), dir, backend, {"--tokenizer-from-server"}));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    auto raw = ix::json::read_file(dir / "result.json");
    ASSERT_TRUE(raw.has_value() && raw->is_object()) << run.err;
    const auto& result = raw->as_object();
    EXPECT_EQ(result.at("completed").as_int64(), 8);
    const auto& own = result.at("ixbench").as_object();
    EXPECT_TRUE(own.at("tokenizer_from_server").as_bool());
    if (std::string(backend) == "vllm")
      EXPECT_EQ(own.at("server_metrics").as_object().at("prompt_tokens").to_number<double>(),
                result.at("total_input_tokens").to_number<double>());
    EXPECT_TRUE(ix::testing::process_result_agg_keys(result).has_value());
  }
  // A server without /detokenize (sim serve's approximate codec answers 501): a clear error.
  auto approximate =
      ix::testing::ServerProcess::start({"--model", kModel, "--hardware", "h200", "--tp", "8", "--tokenizer", "none"});
  ASSERT_TRUE(approximate.has_value()) << approximate.error().to_string();
  auto refused =
      run_with_cache(empty_cache, inferencex_command((*approximate)->port(), dir, "vllm", {"--tokenizer-from-server"}));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("/detokenize"), std::string::npos) << refused.err;
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(empty_cache);
}

TEST(InferenceXClient, UnknownTokenizerModesAndMistralAreRefusedClearly) {
  auto bad = ix::testing::run_ixbench({"bench", "serve", "--model", kModel, "--tokenizer-mode", "fast"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--tokenizer-mode 'fast': use one of auto, hf, slow, custom, mistral, deepseek_v4"),
            std::string::npos)
      << bad.err;
  auto mistral = ix::testing::run_ixbench({"bench", "serve", "--model", kModel, "--tokenizer-mode", "mistral"});
  EXPECT_EQ(mistral.exit_code, 1);
  EXPECT_NE(mistral.err.find("--tokenizer-from-server"), std::string::npos) << mistral.err;
}

// A signal before anything is measured (here while waiting for a server that never answers)
// ends the command with 128 + the signal and no result file, as during the run.
TEST(InferenceXClient, ASignalBeforeTheRunExitsWith128PlusTheSignal) {
  const auto dir = std::filesystem::temp_directory_path() / ("ixbench_early_signal_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string err_file = dir.string() + ".err";
  std::vector<std::string> args = {"/bin/sh",
                                   "-c",
                                   "exec \"$0\" \"$@\" 2>" + err_file,
                                   ix::testing::ixbench_binary(),
                                   "bench",
                                   "serve",
                                   "--base-url",
                                   "http://127.0.0.1:1",
                                   "--model",
                                   kModel,
                                   "--tokenizer",
                                   "deepseek_v3",
                                   "--num-prompts",
                                   "4",
                                   "--ready-check-timeout-sec",
                                   "60",
                                   "--save-result",
                                   "--result-dir",
                                   dir.string(),
                                   "--result-filename",
                                   "result.json",
                                   "--no-progress"};
  const pid_t pid = ix::testing::spawn_quiet(args);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal";
  std::ifstream err_in(err_file);
  const std::string err((std::istreambuf_iterator<char>(err_in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << err;
  EXPECT_FALSE(std::filesystem::exists(dir / "result.json"));
  std::filesystem::remove(err_file);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ix
