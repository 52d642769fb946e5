// `ixbench sim predict` and `ixbench sim calibrate` through the real binary.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/subprocess.h"

namespace ix::testing {
namespace {

boost::json::object parse_object(const std::string& text) {
  boost::system::error_code ec;
  auto value = boost::json::parse(text, ec);
  EXPECT_FALSE(ec) << text.substr(0, 400);
  return value.is_object() ? value.as_object() : boost::json::object{};
}

TEST(SimPredict, PrintsOneSpecResultPerConcurrency) {
  auto result = run_ixbench({"sim", "predict", "--model", "deepseek-ai/DeepSeek-R1-0528", "--hardware", "h200", "--tp",
                             "8", "--framework", "sglang", "--isl", "1024", "--osl", "128", "--conc", "1,4,16"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto out = parse_object(result.out);
  ASSERT_TRUE(out.contains("engine"));
  EXPECT_EQ(out.at("engine").at("model").as_string(), "deepseek-r1");
  EXPECT_FALSE(out.at("engine").at("calibration_group").as_string().empty());
  const auto& results = out.at("results").as_array();
  ASSERT_EQ(results.size(), 3u);
  const int64_t expected_conc[] = {1, 4, 16};
  double previous_tpot = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i].as_object();
    EXPECT_EQ(r.at("max_concurrency").as_int64(), expected_conc[i]);
    EXPECT_EQ(r.at("num_prompts").as_int64(), 10 * r.at("max_concurrency").as_int64());
    EXPECT_EQ(r.at("model_id").as_string(), "deepseek-ai/DeepSeek-R1-0528");
    for (const char* key : {"median_ttft_ms", "median_tpot_ms", "median_itl_ms", "median_e2el_ms", "p99_ttft_ms",
                            "total_token_throughput", "tput_per_gpu", "median_intvty"})
      EXPECT_TRUE(r.contains(key)) << key;
    EXPECT_GT(r.at("median_tpot_ms").as_double(), previous_tpot);
    previous_tpot = r.at("median_tpot_ms").as_double();
  }
}

TEST(SimPredict, ExplainAttributesTheMeanTtftAndTpotToCostTerms) {
  const std::vector<std::string> base = {"sim",   "predict", "--hardware", "h200", "--tp",   "8",
                                         "--isl", "1024",    "--osl",      "128",  "--conc", "1,256"};
  auto plain = run_ixbench(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("sim_cost_attribution"), std::string::npos);
  std::vector<std::string> args = base;
  args.push_back("--explain");
  auto explained = run_ixbench(args);
  ASSERT_EQ(explained.exit_code, 0) << explained.err;
  const auto out = parse_object(explained.out);
  const auto& results = out.at("results").as_array();
  ASSERT_EQ(results.size(), 2u);
  std::vector<double> prefill_share;
  for (const auto& item : results) {
    const auto& r = item.as_object();
    const auto& attribution = r.at("sim_cost_attribution").as_object();
    for (const char* phase : {"ttft_mean_ms", "tpot_mean_ms"}) {
      const auto& terms = attribution.at(phase).as_object();
      EXPECT_EQ(terms.size(), 9u) << phase;
      double total = 0;
      for (const auto& [name, value] : terms) {
        EXPECT_GE(value.to_number<double>(), 0.0) << name;
        total += value.to_number<double>();
      }
      // The terms add up to about the mean: idle engine time is in none of them, and a step a
      // request joined midway counts whole (1.3 % over at 256 streams).
      const double mean = r.at(std::string("mean_") + (phase[1] == 't' ? "ttft" : "tpot") + "_ms").to_number<double>();
      EXPECT_GT(total, 0.5 * mean) << phase;
      EXPECT_LT(total, 1.1 * mean) << phase;
    }
    const auto& ttft = attribution.at("ttft_mean_ms").as_object();
    double total = 0;
    for (const auto& [name, value] : ttft) total += value.to_number<double>();
    prefill_share.push_back(ttft.at("prefill").to_number<double>() / total);
  }
  // Alone, a request's TTFT is mostly its own API and step overheads; at 256 streams the
  // prefills it queues behind take a larger share.
  EXPECT_GT(prefill_share[1], prefill_share[0]);
  args.insert(args.end(), {"--format", "table"});
  auto table = run_ixbench(args);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("where the mean TTFT and TPOT go"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("   256  TTFT: "), std::string::npos) << table.out;
}

// A 1P+1D deployment whose prefill side reaches its capacity edge within conc 16-256 (and is far
// from it at conc 4): --prefill-sensitivity shows the TTFT there moving by multiples, and marks it.
TEST(SimPredict, PrefillSensitivityMarksTtftOnTheKnifeEdge) {
  std::vector<std::string> args = {"sim",
                                   "predict",
                                   "--model",
                                   "deepseek-r1",
                                   "--hardware",
                                   "h200",
                                   "--precision",
                                   "fp8",
                                   "--framework",
                                   "dynamo-sglang",
                                   "--prefill-workers",
                                   "1",
                                   "--prefill-tp",
                                   "8",
                                   "--decode-workers",
                                   "1",
                                   "--decode-tp",
                                   "8",
                                   "--isl",
                                   "1024",
                                   "--osl",
                                   "128",
                                   "--conc",
                                   "4,16,32,64,128,256"};
  auto plain = run_ixbench(args);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("sim_prefill_sensitivity"), std::string::npos);
  args.insert(args.end(), {"--prefill-sensitivity", "0.2"});
  auto result = run_ixbench(args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = parse_object(result.out);
  const auto& results = out.at("results").as_array();
  ASSERT_EQ(results.size(), 6u);
  std::vector<bool> edge;
  for (const auto& item : results) {
    const auto& r = item.as_object();
    const double ttft = r.at("median_ttft_ms").to_number<double>();
    const auto& s = r.at("sim_prefill_sensitivity").as_object();
    EXPECT_NEAR(s.at("prefill_cost_factors").as_array()[0].to_number<double>(), 0.8, 1e-12);
    EXPECT_NEAR(s.at("prefill_cost_factors").as_array()[1].to_number<double>(), 1.2, 1e-12);
    const auto& range = s.at("median_ttft_ms").as_array();
    // Cheaper prefill, earlier first token; the base prediction lies between.
    EXPECT_LE(range[0].to_number<double>(), ttft);
    EXPECT_GE(range[1].to_number<double>(), ttft);
    for (const char* key : {"median_tpot_ms", "tput_per_gpu"}) EXPECT_EQ(s.at(key).as_array().size(), 2u) << key;
    edge.push_back(s.at("ttft_knife_edge").as_bool());
    // The share of the TTFT spent before the first scheduled step is reported for every point.
    const double share = r.at("sim_ttft_queue_share").to_number<double>();
    EXPECT_GE(share, 0.0);
    EXPECT_LE(share, 1.0);
  }
  EXPECT_FALSE(edge[0]);
  EXPECT_NE(std::find(edge.begin() + 1, edge.end(), true), edge.end());
  EXPECT_LT(results[0].at("sim_ttft_queue_share").to_number<double>(),
            results[5].at("sim_ttft_queue_share").to_number<double>());
  args.insert(args.end(), {"--format", "table"});
  auto table = run_ixbench(args);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("with the prefill cost x0.80 / x1.20"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("knife edge: TTFT moves"), std::string::npos) << table.out;
  for (const char* bad : {"1", "-0.1", "nan", "x"}) {
    auto refused = run_ixbench({"sim", "predict", "--hardware", "h200", "--tp", "8", "--isl", "128", "--osl", "16",
                                "--conc", "1", "--prefill-sensitivity", bad});
    EXPECT_NE(refused.exit_code, 0) << bad;
    EXPECT_NE(refused.err.find("--prefill-sensitivity"), std::string::npos) << bad << ": " << refused.err;
  }
}

TEST(SimPredict, SaysWhatDraftsTheTokens) {
  // InferenceX labels every speculative method `mtp`; MiniMax-M3's rows run an EAGLE3 head, the
  // checkpoint has no MTP layers. The engine says which it simulated.
  const auto draft_of = [](const std::string& model, const std::string& spec) {
    auto result = run_ixbench({"sim", "predict", "--model", model, "--hardware", "b200", "--tp", "8", "--isl", "256",
                               "--osl", "16", "--conc", "1", "--spec-decoding", spec});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    const auto out = parse_object(result.out);
    const auto* draft = out.contains("engine") ? out.at("engine").as_object().if_contains("spec_draft") : nullptr;
    return draft ? std::string(draft->as_string()) : std::string("(none)");
  };
  EXPECT_NE(draft_of("deepseek-r1", "mtp").find("1 MTP layer"), std::string::npos);
  EXPECT_NE(draft_of("MiniMaxAI/MiniMax-M3-MXFP8", "mtp").find("has no MTP layers"), std::string::npos);
  EXPECT_NE(draft_of("deepseek-r1", "draft_model").find("separate draft model"), std::string::npos);
  EXPECT_EQ(draft_of("deepseek-r1", "none"), "(none)");
}

TEST(SimPredict, AcceptsASweepRowAndPrintsATable) {
  const std::string row =
      R"({"image": "x", "model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp4",
          "framework": "sglang", "runner": "mi355x", "isl": 1024, "osl": 256, "tp": 4, "pp": 1, "dcp-size": 1,
          "pcp-size": 1, "conc": 4, "max-model-len": 2304, "ep": 1, "dp-attn": false, "spec-decoding": "none",
          "exp-name": "dsr1_1k1k", "disagg": false, "run-eval": false})";
  auto result = run_ixbench({"sim", "predict", "--row", row, "--format", "table"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("tpot_p50_ms"), std::string::npos);
  EXPECT_NE(result.out.find("\n     4 "), std::string::npos) << result.out;
}

TEST(SimPredict, TrtRecipeRowQueuesForItsDecodeSlots) {
  // nvidia-master's H100 Dynamo TRT-LLM 8k/1k row: 3 decode workers x batch 1 at conc 6.
  auto row = [](const std::string& recipe) {
    return R"({"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
        "framework": "dynamo-trt", "runner": "h100-multinode", "isl": 8192, "osl": 1024, "spec-decoding": "none",
        "prefill": {"num-worker": 1, "tp": 16, "ep": 16, "dp-attn": true,
                    "additional-settings": ["CONFIG_FILE=recipes/trtllm/h100-fp8/8k1k/stp/)" +
           recipe + R"("]}, "decode": {"num-worker": 3, "tp": 16, "ep": 16, "dp-attn": false}, "conc": [6]})";
  };
  auto predict = [&](const std::string& recipe) {
    auto result = run_ixbench({"sim", "predict", "--row", row(recipe)});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    const auto out = parse_object(result.out);
    EXPECT_TRUE(out.contains("engine") && out.contains("results")) << result.out.substr(0, 300);
    if (!out.contains("results")) return std::make_pair(0.0, 0.0);
    EXPECT_EQ(out.at("engine").at("decode").at("max_num_seqs").as_int64(),
              recipe.find("batch1_") != std::string::npos ? 1 : 0);
    const auto& r = out.at("results").as_array()[0].as_object();
    return std::make_pair(r.at("median_ttft_ms").to_number<double>(), r.at("median_tpot_ms").to_number<double>());
  };
  const auto [capped_ttft, capped_tpot] = predict("ctx1_gen3_tep16_batch1_eplb0_mtp0.yaml");
  const auto [free_ttft, free_tpot] = predict("h100-fp8-1p3d.yaml");
  // Half the requests wait a generation (~0.9 x 1024 tokens) for a slot; 14.4 s was measured.
  EXPECT_GT(capped_ttft, 0.7 * 0.9 * 1024 * capped_tpot);
  EXPECT_LT(free_ttft, 0.5 * 0.9 * 1024 * free_tpot);
}

TEST(SimPredict, TrtWithAttentionDpBalancesContextsAsTheInferenceXScripts) {
  auto predict = [](const std::string& balance) {
    return run_ixbench({"sim",        "predict",
                        "--model",    "deepseek-r1",
                        "--hardware", "h200",
                        "--tp",       "8",
                        "--ep",       "8",
                        "--dp-attn",  "--framework",
                        "trt",        "--spec-decoding",
                        "mtp",        "--isl",
                        "1024",       "--osl",
                        "256",        "--conc",
                        "64",         "--num-prompts",
                        "128",        "--attention-dp-balance",
                        balance});
  };
  auto balanced = predict("auto");
  auto plain = predict("off");
  ASSERT_EQ(balanced.exit_code, 0) << balanced.err;
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto on = parse_object(balanced.out);
  const auto off = parse_object(plain.out);
  const auto& engine = on.at("engine").as_object();
  EXPECT_EQ(engine.at("attention_dp_balance").at("timeout_iters").as_int64(), 60);
  EXPECT_EQ(engine.at("attention_dp_balance").at("batching_wait_iters").as_int64(), 0);
  EXPECT_TRUE(off.at("engine").at("attention_dp_balance").is_null());
  EXPECT_EQ(engine.at("num_spec_tokens").as_int64(), 1);  // one MTP layer with attention DP
  const auto& point = on.at("results").at(0).as_object();
  EXPECT_EQ(point.at("max_num_seqs").as_int64(), 8);               // max_batch_size = conc / tp
  EXPECT_EQ(point.at("max_num_batched_tokens").as_int64(), 1152);  // roundup64(2 x 8 + 1024 + 64)
  // Prompts wait for a rank-balanced batch or the 60-iteration timeout: TTFT grows by tens of steps.
  const double ttft_on = point.at("median_ttft_ms").as_double();
  const double ttft_off = off.at("results").at(0).at("median_ttft_ms").as_double();
  const double step_ms = point.at("median_itl_ms").as_double();
  EXPECT_GT(ttft_on - ttft_off, 10 * step_ms) << ttft_on << " vs " << ttft_off;
  for (const auto& [flag, value, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--attention-dp-balance", "maybe", "must be auto, on or off"},
           {"--attention-dp-timeout-iters", "0", "--attention-dp-timeout-iters must be >= 1"},
           {"--attention-dp-batching-wait-iters", "-1", "--attention-dp-batching-wait-iters must be >= 0"},
           {"--max-num-seqs", "-1", "--max-num-seqs must be >= 1"}}) {
    auto bad = run_ixbench(
        {"sim", "predict", "--hardware", "h200", "--tp", "8", "--isl", "8", "--osl", "8", "--conc", "1", flag, value});
    EXPECT_EQ(bad.exit_code, 1) << flag;
    EXPECT_NE(bad.err.find(message), std::string::npos) << bad.err;
  }
}

TEST(SimPredict, SameSeedIsByteIdenticalApartFromTheDate) {
  std::vector<std::string> args = {"sim",   "predict", "--hardware",      "b200", "--precision", "fp4",
                                   "--tp",  "4",       "--spec-decoding", "mtp",  "--isl",       "1024",
                                   "--osl", "64",      "--conc",          "8",    "--seed",      "3"};
  auto a = run_ixbench(args), b = run_ixbench(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto strip = [](boost::json::object o) {
    for (auto& r : o.at("results").as_array()) r.as_object().erase("date");
    return boost::json::serialize(o);
  };
  EXPECT_EQ(strip(parse_object(a.out)), strip(parse_object(b.out)));
}

// Every value of `actual` equals `expected` (same keys in the same order), apart from the mean and
// std of the ITL samples, which are rounded once from exact sums over the distinct gaps where
// numpy sums the list pairwise: those may differ in the last bits.
void expect_same_prediction(const boost::json::value& expected, const boost::json::value& actual,
                            const std::string& path) {
  static const std::set<std::string> kRoundedOnce = {"mean_itl_ms", "std_itl_ms", "mean_token_itl_ms",
                                                     "std_token_itl_ms"};
  if (expected.is_object() && actual.is_object()) {
    const auto& e = expected.as_object();
    const auto& a = actual.as_object();
    ASSERT_EQ(e.size(), a.size()) << path;
    for (auto ei = e.begin(), ai = a.begin(); ei != e.end(); ++ei, ++ai) {
      ASSERT_EQ(ei->key(), ai->key()) << path;
      expect_same_prediction(ei->value(), ai->value(), path + "." + std::string(ei->key()));
    }
    return;
  }
  if (expected.is_array() && actual.is_array()) {
    ASSERT_EQ(expected.as_array().size(), actual.as_array().size()) << path;
    for (size_t i = 0; i < expected.as_array().size(); ++i)
      expect_same_prediction(expected.as_array()[i], actual.as_array()[i], fmt::format("{}[{}]", path, i));
    return;
  }
  const std::string key = path.substr(path.rfind('.') + 1);
  if (kRoundedOnce.contains(key) && expected.is_double() && actual.is_double()) {
    EXPECT_NEAR(actual.as_double(), expected.as_double(), 1e-15 * std::abs(expected.as_double())) << path;
    return;
  }
  EXPECT_EQ(boost::json::serialize(expected), boost::json::serialize(actual)) << path;
}

// Predictions of shipped master rows (single-node vLLM, SGLang, TRT-LLM with MTP, ATOM;
// disaggregated Dynamo-TRT, Dynamo-SGLang, SGLang with MTP, a 1k/8k row) at conc 4 and 16, as the
// simulator made them when it still kept every token event of every request. Not a timing test:
// it pins the numbers. After a deliberate model or calibration change, regenerate each file with
// `ixbench sim predict --row-file tests/data/sim_predict/NAME.row.json --conc 4,16`, dropping each
// result's "date".
TEST(SimPredict, ShippedRowsGiveTheirRecordedPredictions) {
  const std::filesystem::path dir = source_path("tests/data/sim_predict");
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".row.json")) continue;
    const std::string stem = name.substr(0, name.size() - std::string(".row.json").size());
    SCOPED_TRACE(stem);
    auto run = run_ixbench({"sim", "predict", "--row-file", entry.path().string(), "--conc", "4,16"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    boost::json::object actual = parse_object(run.out);
    for (auto& result : actual.at("results").as_array()) {
      boost::json::object undated;  // in order (object::erase moves the last key into the gap)
      for (const auto& [key, value] : result.as_object())
        if (key != "date") undated[key] = value;
      result = std::move(undated);
    }
    std::ifstream in(dir / (stem + ".expected.json"));
    std::stringstream expected;
    expected << in.rdbuf();
    expect_same_prediction(parse_object(expected.str()), actual, stem);
    ++compared;
  }
  EXPECT_EQ(compared, 8);
}

TEST(SimPredict, UnknownModelListsKnownOnesAndExitsOne) {
  auto result = run_ixbench({"sim", "predict", "--model", "gpt-9", "--isl", "128", "--osl", "16", "--conc", "1"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("unknown model 'gpt-9'"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("deepseek-r1"), std::string::npos);
  EXPECT_NE(result.err.find("models.json"), std::string::npos);
}

TEST(SimPredict, BadInputsAreErrorsNotCrashes) {
  auto no_conc = run_ixbench({"sim", "predict", "--isl", "128", "--osl", "16"});
  EXPECT_EQ(no_conc.exit_code, 1);
  EXPECT_NE(no_conc.err.find("--conc"), std::string::npos);
  auto bad_flag = run_ixbench({"sim", "predict", "--tp", "eight"});
  EXPECT_EQ(bad_flag.exit_code, 2);
  auto bad_row = run_ixbench({"sim", "predict", "--row", "{not json"});
  EXPECT_EQ(bad_row.exit_code, 1);
  auto does_not_fit =
      run_ixbench({"sim", "predict", "--hardware", "h100", "--tp", "2", "--isl", "128", "--osl", "16", "--conc", "1"});
  EXPECT_EQ(does_not_fit.exit_code, 1);
  EXPECT_NE(does_not_fit.err.find("does not fit"), std::string::npos);
  auto half_disagg =
      run_ixbench({"sim", "predict", "--prefill-workers", "1", "--isl", "128", "--osl", "16", "--conc", "1"});
  EXPECT_EQ(half_disagg.exit_code, 1);
}

TEST(SimPredict, MetricPercentilesAreCheckedAsBenchServeChecksThem) {
  // "" reported no percentile at all and "99,99" was accepted; the same rules as bench serve's.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no percentile given"},
      {"90,,99", "item 2 of 3 is empty"},
      {"99,99.0", "percentile 99 is given twice ('99' and '99.0')"},
      {"101", "'101' is not a number in [0, 100]"},
  };
  for (const auto& [value, message] : cases) {
    auto r = run_ixbench(
        {"sim", "predict", "--tp", "8", "--isl", "16", "--osl", "4", "--conc", "1", "--metric-percentiles", value});
    EXPECT_EQ(r.exit_code, 1) << "'" << value << "': " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("e.g. --metric-percentiles 90,99,99.9"), std::string::npos) << r.err;
  }
  auto ok = run_ixbench(
      {"sim", "predict", "--tp", "8", "--isl", "16", "--osl", "4", "--conc", "1", "--metric-percentiles", "50, 99.9"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("\"p50_ttft_ms\""), std::string::npos);
  EXPECT_NE(ok.out.find("\"p99.9_ttft_ms\""), std::string::npos);
  EXPECT_EQ(ok.out.find("\"p90_ttft_ms\""), std::string::npos);
}

TEST(SimPredict, LayoutsTheModelOrTheSimulatorCannotHoldAreRefused) {
  // Each was predicted before (tp 1000000: throughput 0 per GPU), or ran out of memory.
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--model", "llama-3.3-70b", "--hardware", "h200", "--tp", "3"}, "--tp 3 does not divide llama-3.3-70b's 64"},
      {{"--model", "deepseek-r1", "--hardware", "mi355x", "--precision", "fp4", "--tp", "5"}, "attention heads"},
      {{"--model", "llama-3.3-70b", "--hardware", "h200", "--tp", "8", "--ep", "8"}, "is a dense model"},
      {{"--model", "deepseek-r1", "--hardware", "b200", "--precision", "fp4", "--tp", "1000000"},
       "--tp must be in [1, 1024]"},
      {{"--model", "deepseek-r1", "--hardware", "b200", "--precision", "fp4", "--tp", "4", "--replicas", "100000"},
       "--replicas must be in [1, 1024]"},
      {{"--model", "deepseek-r1", "--hardware", "h200", "--tp", "8", "--dp-attn", "--replicas", "300"},
       "2400 schedulers"},
      {{"--model", "deepseek-r1", "--hardware", "h200", "--tp", "8", "--num-gpu-blocks-override", "2000000000"},
       "--num-gpu-blocks-override 2000000000"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {"sim", "predict", "--isl", "128", "--osl", "16", "--conc", "4"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto r = run_ixbench(argv);
    EXPECT_EQ(r.exit_code, 1) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  // With DP attention every rank holds whole heads: tp 48 is fine for DeepSeek's 128.
  auto dp = run_ixbench({"sim", "predict", "--model", "deepseek-r1", "--hardware", "gb300", "--precision", "fp4",
                         "--tp", "48", "--ep", "48", "--dp-attn", "--isl", "128", "--osl", "16", "--conc", "4"});
  EXPECT_EQ(dp.exit_code, 0) << dp.err;
  // A sweep row with pipeline or context parallelism is refused, not predicted on part of its GPUs.
  for (const char* extra : {R"("pp":2)", R"("pcp-size":2)", R"("isl":0)"}) {
    auto row =
        run_ixbench({"sim", "predict", "--row",
                     std::string(R"({"model":"deepseek-r1","runner":"h200","precision":"fp8","framework":"vllm",)") +
                         R"("osl":128,"conc":4,"tp":8,"isl":1024,)" + extra + "}"});
    EXPECT_EQ(row.exit_code, 1) << extra;
    const std::string key(extra);
    EXPECT_NE(row.err.find("'" + key.substr(1, key.find('"', 1) - 1) + "'"), std::string::npos) << row.err;
  }
}

TEST(SimPredict, ConcListsAndSpecFlagsAreChecked) {
  const std::vector<std::string> base = {"sim",   "predict", "--hardware", "h200", "--tp",     "8",
                                         "--isl", "128",     "--osl",      "16",   "--format", "table"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ixbench(args);
  };
  for (const auto& [conc, expect] :
       std::vector<std::pair<std::string, std::string>>{{"4,,8", "'' is not a positive integer"},
                                                        {"4,4", "lists 4 twice"},
                                                        {"0", "'0' is not a positive integer"}}) {
    auto result = with({"--conc", conc});
    EXPECT_EQ(result.exit_code, 1) << conc;
    EXPECT_NE(result.err.find(expect), std::string::npos) << conc << ": " << result.err;
  }
  auto two_flags = with({"--conc", "1", "--conc", "2"});
  EXPECT_EQ(two_flags.exit_code, 0) << two_flags.err;
  auto al_without_spec = with({"--conc", "1", "--acceptance-length", "2"});
  EXPECT_EQ(al_without_spec.exit_code, 1);
  EXPECT_NE(al_without_spec.err.find("--spec-decoding"), std::string::npos) << al_without_spec.err;
}

TEST(SimPredict, ResultDirNamesEveryConfiguration) {
  const std::string dir = ::testing::TempDir() + "/ix_sim_result_dir";
  std::filesystem::remove_all(dir);
  for (const char* tp : {"2", "4"}) {
    auto result = run_ixbench({"sim", "predict", "--model", "llama-3.3-70b", "--hardware", "h200", "--tp", tp, "--isl",
                               "128", "--osl", "16", "--conc", "1", "--result-dir", dir});
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
  // Two topologies, two files (the names once held only model/hardware/precision/lengths/conc).
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], "sim_llama-3.3-70b_h200_fp8_vllm_tp2ep1_none_isl128_osl16_conc1.json");
  EXPECT_EQ(names[1], "sim_llama-3.3-70b_h200_fp8_vllm_tp4ep1_none_isl128_osl16_conc1.json");
}

TEST(SimPredict, MissingOrNonPositiveLengthsAndCountsNameTheFlag) {
  const std::vector<std::string> base = {"sim", "predict", "--hardware", "h200", "--tp", "8", "--conc", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ixbench(args);
  };
  // No --isl/--osl used to predict 1024/1024 silently.
  auto missing = with({});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("--isl and --osl are required"), std::string::npos) << missing.err;
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--isl", "-5"}, {"--osl", "0"}, {"--num-prompts", "0"}, {"--num-prompts", "-1"}}) {
    std::vector<std::string> extra = {"--isl", "128", "--osl", "16"};
    if (flag == "--isl") extra = {"--osl", "16"};
    if (flag == "--osl") extra = {"--isl", "128"};
    extra.push_back(flag);
    extra.push_back(value);
    auto result = with(extra);
    EXPECT_EQ(result.exit_code, 1) << flag << " " << value;
    EXPECT_NE(result.err.find(flag + " must be >= 1"), std::string::npos) << result.err;
  }
  auto percentile = with({"--isl", "128", "--osl", "16", "--metric-percentiles", "150"});
  EXPECT_EQ(percentile.exit_code, 1);
  EXPECT_NE(percentile.err.find("--metric-percentiles"), std::string::npos) << percentile.err;
  // 10 x conc prompts overflowed int32 ("internal error: cannot create std::vector ...").
  auto huge = with({"--isl", "128", "--osl", "16", "--conc", "300000000"});
  EXPECT_EQ(huge.exit_code, 1);
  EXPECT_NE(huge.err.find("--conc values must be <="), std::string::npos) << huge.err;
  EXPECT_EQ(huge.err.find("internal error"), std::string::npos) << huge.err;
  // Longer than the context window: named by the flags (the engine used to name the first drawn
  // prompt length, "prompt (2007254999 tokens) + max_tokens (1)").
  auto too_long = with({"--isl", "2147483647", "--osl", "1"});
  EXPECT_EQ(too_long.exit_code, 1);
  EXPECT_NE(too_long.err.find("--isl 2147483647 + --osl 1 = 2147483648 tokens exceed"), std::string::npos)
      << too_long.err;
}

TEST(SimPredict, RowFileThatIsADirectoryOrEmptyIsAnError) {
  auto directory = run_ixbench({"sim", "predict", "--row-file", ::testing::TempDir(), "--isl", "128", "--osl", "16",
                                "--conc", "1", "--hardware", "h200", "--tp", "8"});
  EXPECT_EQ(directory.exit_code, 1);
  EXPECT_NE(directory.err.find("is a directory"), std::string::npos) << directory.err;
  const std::string empty = ::testing::TempDir() + "/ix_sim_empty_row.json";
  std::ofstream(empty) << "\n";
  auto blank = run_ixbench({"sim", "predict", "--row-file", empty, "--isl", "128", "--osl", "16", "--conc", "1",
                            "--hardware", "h200", "--tp", "8"});
  EXPECT_EQ(blank.exit_code, 1);
  EXPECT_NE(blank.err.find("is empty"), std::string::npos) << blank.err;
}

TEST(SimPredict, MtpRowWithOneDraftAndAnAgenticRow) {
  // A multi-node row of amd-master.yaml as `ixbench sweep` prints it (DECODE_MTP_SIZE=1).
  const std::string row =
      R"({"image": "x", "model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
          "framework": "sglang-disagg", "runner": "mi355x-disagg", "isl": 1024, "osl": 64, "spec-decoding": "mtp",
          "prefill": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": true, "additional-settings": ["PREFILL_NODES=1"],
                      "pp": 1, "dcp-size": 1, "pcp-size": 1},
          "decode": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": true,
                     "additional-settings": ["DECODE_NODES=1", "DECODE_MTP_SIZE=1"], "pp": 1, "dcp-size": 1,
                     "pcp-size": 1},
          "conc": [4], "max-model-len": 1344, "exp-name": "dsr1_1k1k", "disagg": true, "run-eval": false})";
  auto result = run_ixbench({"sim", "predict", "--row", row, "--num-prompts", "8"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto out = parse_object(result.out);
  EXPECT_EQ(out.at("engine").at("num_spec_tokens").as_int64(), 1);
  const double al = out.at("engine").at("acceptance_length").as_double();
  EXPECT_GT(al, 1.0);
  EXPECT_LE(al, 2.0);

  const std::string agentic =
      R"({"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8", "framework": "sglang",
          "runner": "h200", "tp": 8, "ep": 1, "dp-attn": false, "spec-decoding": "none", "conc": 4,
          "scenario-type": "agentic-coding", "duration": 3600})";
  auto agentic_result = run_ixbench({"sim", "predict", "--row", agentic});
  EXPECT_EQ(agentic_result.exit_code, 1);
  EXPECT_NE(agentic_result.err.find("agentic-coding"), std::string::npos) << agentic_result.err;
}

TEST(SimCalibrate, MissingCsvIsAnError) {
  auto result = run_ixbench({"sim", "calibrate", "--csv", "/nonexistent/measured.csv"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("/nonexistent/measured.csv: file does not exist"), std::string::npos) << result.err;
}

TEST(SimCalibrate, MalformedFieldsAreRefusedWithFileAndLine) {
  const std::string dir = ::testing::TempDir();
  const std::string header =
      "hardware,framework,precision,spec_decoding,tp,ep,dp_attention,isl,osl,conc,median_ttft_s,median_tpot_s,"
      "tput_per_gpu,gpus_total,is_multinode\n";
  const std::string good = "h200,sglang,fp8,none,8,1,false,1024,1024,4,0.15,0.011,300,8,false\n";
  auto write = [&](const std::string& name, const std::string& rows) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << header << good << rows;
    return path;
  };
  struct Case {
    const char* name;
    const char* row;
    const char* expect;
  };
  for (const Case& c : {
           Case{"nan.csv", "h200,sglang,fp8,none,8,1,false,1024,1024,16,nan,0.02,900,8,false\n",
                "nan.csv:3: column 'median_ttft_s' is 'nan', expected a finite number"},
           Case{"inf.csv", "h200,sglang,fp8,none,8,1,false,1024,1024,16,0.2,inf,900,8,false\n",
                "inf.csv:3: column 'median_tpot_s' is 'inf'"},
           Case{"ep.csv", "h200,sglang,fp8,none,8,x,false,1024,1024,16,0.2,0.02,900,8,false\n",
                "ep.csv:3: column 'ep' is 'x'"},
           Case{"conc.csv", "h200,sglang,fp8,none,8,1,false,1024,1024,4.6,0.2,0.02,900,8,false\n",
                "conc.csv:3: column 'conc' is '4.6', expected an integer"},
           Case{"flag.csv", "h200,sglang,fp8,none,8,1,yes,1024,1024,16,0.2,0.02,900,8,false\n",
                "flag.csv:3: column 'dp_attention' is 'yes', expected true or false"},
           Case{"short.csv", "h200,sglang,fp8,none,8,1\n", "short.csv:3: 6 fields, the header has 15"},
           Case{"hw.csv", "h900,sglang,fp8,none,8,1,false,1024,1024,16,0.2,0.02,900,8,false\n",
                "hw.csv:3: unknown hardware"},
       }) {
    auto result = run_ixbench({"sim", "calibrate", "--csv", write(c.name, c.row), "--quiet"});
    EXPECT_EQ(result.exit_code, 1) << c.name;
    EXPECT_NE(result.err.find(c.expect), std::string::npos) << c.name << ": " << result.err;
  }
  // The same file without the bad row fits.
  auto clean = run_ixbench({"sim", "calibrate", "--csv", write("clean.csv", ""), "--iterations", "1", "--quiet"});
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  auto directory = run_ixbench({"sim", "calibrate", "--csv", dir});
  EXPECT_EQ(directory.exit_code, 1);
  EXPECT_NE(directory.err.find("is a directory"), std::string::npos) << directory.err;
}

// Writes the header of `csv` and the data lines `keep` accepts to `path`.
void write_csv_subset(const std::string& csv, const std::string& path,
                      const std::function<bool(const std::string&)>& keep) {
  std::ifstream in(csv);
  std::ofstream out(path);
  std::string line;
  std::getline(in, line);
  out << line << "\n";
  while (std::getline(in, line))
    if (keep(line)) out << line << "\n";
}

TEST(SimCalibrate, DeviceLevelComesFromSingleNodeRowsWhereThereAreEnough) {
  const std::string csv = shared_path("data/calibration/measured_dsr1.csv");
  if (csv.empty()) GTEST_SKIP() << shared_missing_message("data/calibration/measured_dsr1.csv");
  // h200: 4 single-node rows and 3 low-concurrency multi-node ones; h100: only multi-node rows.
  const std::string subset = ::testing::TempDir() + "/ix_sim_device_level.csv";
  int single = 0, multi = 0, h100 = 0;
  write_csv_subset(csv, subset, [&](const std::string& line) {
    const bool h200_row = line.rfind("h200,", 0) == 0;
    if (h200_row && line.find(",false,8,1,false,8,8,1024,1024,4,") != std::string::npos) return single++ < 4;
    if (h200_row && line.find(",true,") != std::string::npos && line.find(",1024,1024,1,") != std::string::npos)
      return multi++ < 3;
    if (line.rfind("h100,", 0) == 0 && line.find(",1024,1024,") != std::string::npos) return h100++ < 3;
    return false;
  });
  const std::string out_path = ::testing::TempDir() + "/ix_sim_device_level.json";
  auto result = run_ixbench(
      {"sim", "calibrate", "--csv", subset, "--out", out_path, "--iterations", "1", "--max-prompts", "30", "--quiet"},
      "", 300);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::ifstream in(out_path);
  const auto root = boost::json::parse(std::string((std::istreambuf_iterator<char>(in)), {})).as_object();
  std::map<std::string, int64_t> device_rows;
  for (const auto& g : root.at("groups").as_array()) {
    const auto& o = g.as_object();
    if (o.at("framework").as_string() == "*")
      device_rows[std::string(o.at("hardware").as_string())] = o.at("fit_rows").as_int64();
  }
  EXPECT_EQ(device_rows["h200"], 4) << "fitted on the single-node rows only";
  EXPECT_EQ(device_rows["h100"], 3) << "no single-node rows: fitted on the multi-node ones";
}

TEST(SimCalibrate, TheTableWithTheLowestSimulatedLossIsKept) {
  // Each refit rescales around the last simulation; the tables of rounds 1..N are each simulated
  // once and the one with the lowest simulated loss is written (its round named in the source).
  // On these eight mi355x points (concurrency <= 64) the first refit is the best and later rounds
  // overshoot (0.104 vs 0.133 / 0.135 when written), so keeping the last table would fail here.
  const std::string csv = shared_path("data/calibration/measured_dsr1.csv");
  if (csv.empty()) GTEST_SKIP() << shared_missing_message("data/calibration/measured_dsr1.csv");
  const std::string subset = ::testing::TempDir() + "/ix_sim_best_round.csv";
  int kept = 0;
  write_csv_subset(csv, subset, [&](const std::string& line) {
    if (line.rfind("mi355x,", 0) != 0) return false;
    std::istringstream fields(line);
    std::string field;
    for (int i = 0; i <= 14; ++i) std::getline(fields, field, ',');  // field 15 is conc
    return std::stoi(field) <= 64 && kept++ < 8;
  });
  const std::string out_path = ::testing::TempDir() + "/ix_sim_best_round.json";
  auto result = run_ixbench(
      {"sim", "calibrate", "--csv", subset, "--out", out_path, "--iterations", "3", "--max-prompts", "20"}, "", 300);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // "round 2: simulated loss of round 1's table X", ..., "final: simulated loss of round 3's table Z"
  std::map<int, double> loss;
  const std::regex line(R"(simulated loss of round (\d+)'s table ([0-9.]+))");
  for (std::sregex_iterator it(result.err.begin(), result.err.end(), line), end; it != end; ++it)
    loss[std::stoi((*it)[1])] = std::stod((*it)[2]);
  ASSERT_EQ(loss.size(), 3u) << result.err;
  const int best = std::min_element(loss.begin(), loss.end(), [](const auto& a, const auto& b) {
                     return a.second < b.second;
                   })->first;
  std::ifstream in(out_path);
  const auto root = boost::json::parse(std::string((std::istreambuf_iterator<char>(in)), {})).as_object();
  const std::string source(root.at("source").as_string());
  EXPECT_NE(source.find(fmt::format("round {}'s table kept", best)), std::string::npos) << source << "\n" << result.err;
}

TEST(SimCalibrate, DisaggregatedRowsWithoutWorkersAreSkippedNotReadAsOneEngine) {
  const std::string csv = shared_path("data/calibration/measured_dsr1.csv");
  if (csv.empty()) GTEST_SKIP() << shared_missing_message("data/calibration/measured_dsr1.csv");
  // Three GB200 rows are disaggregated deployments recorded without their workers (qa_flags
  // legacy_disagg_gpu_fields); read as one TP20/TP72/TP28 engine they once set GB200's factors.
  const std::string subset = ::testing::TempDir() + "/ix_sim_legacy.csv";
  int legacy = 0, good = 0;
  write_csv_subset(csv, subset, [&](const std::string& line) {
    if (line.find("legacy_disagg_gpu_fields") != std::string::npos) return ++legacy > 0;
    return line.rfind("h200,", 0) == 0 && line.find(",false,8,1,false,8,8,1024,1024,4,") != std::string::npos &&
           good++ < 1;
  });
  ASSERT_EQ(legacy, 3);
  auto result = run_ixbench({"sim", "calibrate", "--csv", subset, "--evaluate", "--quiet"}, "", 120);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("points: 1 simulated, 3 skipped"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(":2: disaggregated, but without prefill/decode workers (split unknown)"), std::string::npos)
      << result.out;
}

TEST(SimCalibrate, FitsASmallMeasuredFile) {
  const std::string csv = shared_path("data/calibration/measured_dsr1.csv");
  if (csv.empty()) GTEST_SKIP() << shared_missing_message("data/calibration/measured_dsr1.csv");
  // The h200 SGLang/TRT single-node 1k1k rows at low concurrency: a quick fit end to end.
  const std::string subset = ::testing::TempDir() + "/ix_sim_subset.csv";
  int kept = 0;
  write_csv_subset(csv, subset, [&](const std::string& line) {
    return line.rfind("h200,", 0) == 0 && line.find(",false,8,1,false,8,8,1024,1024,4,") != std::string::npos &&
           kept++ < 12;
  });
  const std::string out_path = ::testing::TempDir() + "/ix_sim_calibration.json";
  auto result = run_ixbench(
      {"sim", "calibrate", "--csv", subset, "--out", out_path, "--iterations", "1", "--quiet", "--jobs", "2"}, "", 120);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("| h200 |"), std::string::npos) << result.out;
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string text = read(out_path);
  EXPECT_NE(text.find("\"hardware\": \"h200\""), std::string::npos) << text.substr(0, 300);

  // One thread gives the same file byte for byte (points are simulated independently).
  const std::string serial_path = ::testing::TempDir() + "/ix_sim_calibration_serial.json";
  auto serial = run_ixbench(
      {"sim", "calibrate", "--csv", subset, "--out", serial_path, "--iterations", "1", "--quiet", "--jobs", "1"}, "",
      120);
  ASSERT_EQ(serial.exit_code, 0) << serial.err;
  EXPECT_EQ(read(serial_path), text);
  EXPECT_EQ(serial.out, result.out);

  auto bad_jobs = run_ixbench({"sim", "calibrate", "--csv", subset, "--jobs", "-1"});
  EXPECT_EQ(bad_jobs.exit_code, 1);
  EXPECT_NE(bad_jobs.err.find("--jobs"), std::string::npos) << bad_jobs.err;

  // Output paths that cannot take the files fail before the fit (the whole file takes hours on
  // two cores), naming the flag; they used to fail after it, losing the fit.
  const std::vector<std::pair<std::vector<std::string>, std::string>> unwritable = {
      {{"--out", "/nonexistent-ixbench-dir/c.json"},
       "--out: cannot create files in '/nonexistent-ixbench-dir': No such file or directory"},
      {{"--residuals-csv", ::testing::TempDir()}, "--residuals-csv: '"},
  };
  for (const auto& [args, message] : unwritable) {
    std::vector<std::string> argv = {"sim", "calibrate", "--csv", csv, "--quiet"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto started = std::chrono::steady_clock::now();
    auto r = run_ixbench(argv, "", 60);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 20.0);
    EXPECT_EQ(r.out.find("points:"), std::string::npos) << "fitted first: " << r.out.substr(0, 200);
  }
}

TEST(SimCalibrate, HoldoutSeriesJudgesWholeSeriesTheFitNeverSaw) {
  const std::string csv = shared_path("data/calibration/measured_dsr1.csv");
  if (csv.empty()) GTEST_SKIP() << shared_missing_message("data/calibration/measured_dsr1.csv");
  // h200 single-node 1k1k rows at conc <= 8: three series in key order — SGLang FP8 MTP TP8 (1
  // point), SGLang FP8 TP8 (6), TRT FP8 TP8/EP8 (5). N = 2 holds out the second one whole.
  const std::string subset = ::testing::TempDir() + "/ix_sim_series_holdout.csv";
  write_csv_subset(csv, subset, [&](const std::string& line) {
    if (line.rfind("h200,", 0) != 0 || line.find(",1024,1024,") == std::string::npos) return false;
    std::vector<std::string> fields;
    std::stringstream in(line);
    for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
    // hardware,model,model_prefix,precision,framework,spec_decoding,disagg,tp,ep,dp_attention,
    // num_prefill_gpu,num_decode_gpu,isl,osl,conc,...,is_multinode (26)
    return fields.size() > 26 && fields[26] == "false" && std::stoi(fields[14]) <= 8;
  });
  const std::string residuals = ::testing::TempDir() + "/ix_sim_series_holdout_residuals.csv";
  auto result = run_ixbench({"sim", "calibrate", "--csv", subset, "--holdout-series", "2", "--iterations", "1",
                             "--quiet", "--residuals-csv", residuals},
                            "", 300);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto held = result.out.find("Held-out points (not used for fitting)");
  const auto fitting = result.out.find("Fitting points (every concurrency of the series not held out)");
  ASSERT_NE(held, std::string::npos) << result.out;
  ASSERT_NE(fitting, std::string::npos) << result.out;
  EXPECT_NE(result.out.substr(held, fitting - held).find("| h200 | 6 |"), std::string::npos) << result.out;
  EXPECT_NE(result.out.substr(fitting).find("| h200 | 6 |"), std::string::npos) << result.out;
  // Every point of a series is on the same side of the split.
  std::ifstream in(residuals);
  std::string line;
  std::getline(in, line);
  std::map<std::string, std::set<std::string>> sides;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
    ASSERT_GT(fields.size(), 6u) << line;
    sides[fields[4]].insert(fields[6]);
  }
  ASSERT_EQ(sides.size(), 3u);
  for (const auto& [series, side] : sides) EXPECT_EQ(side.size(), 1u) << series;
  EXPECT_EQ(*sides["h200|sglang|fp8|none|1024x1024|1x(tp8ep1)"].begin(), "0");

  auto one = run_ixbench({"sim", "calibrate", "--csv", subset, "--holdout-series", "1"});
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_NE(one.err.find("--holdout-series must be >= 2"), std::string::npos) << one.err;
  auto evaluate = run_ixbench({"sim", "calibrate", "--csv", subset, "--evaluate", "--holdout-series", "2"});
  EXPECT_EQ(evaluate.exit_code, 1);
  EXPECT_NE(evaluate.err.find("--evaluate fits nothing"), std::string::npos) << evaluate.err;
}

TEST(SimCalibrate, SweepRowsGiveDisaggregatedPointsTheirDecodeBatch) {
  const std::string csv = shared_path("data/calibration/measured_dsr1.csv");
  if (csv.empty()) GTEST_SKIP() << shared_missing_message("data/calibration/measured_dsr1.csv");
  // H100 Dynamo TRT-LLM 8k/1k at conc 6 on 3 decode workers whose recipe allows one request each
  // (ctx1_gen3_tep16_batch1): half the requests wait a whole generation for a slot, and the
  // measured median TTFT is 14.4 s.
  const std::string subset = ::testing::TempDir() + "/ix_sim_rows.csv";
  write_csv_subset(csv, subset, [](const std::string& line) {
    return line.rfind("h100,", 0) == 0 && line.find(",dynamo-trt,none,") != std::string::npos &&
           line.find(",8192,1024,6,") != std::string::npos;
  });
  const std::string rows_path = ::testing::TempDir() + "/ix_sim_rows.json";
  std::ofstream(rows_path) << R"([{"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
      "framework": "dynamo-trt", "runner": "h100-multinode", "isl": 8192, "osl": 1024, "spec-decoding": "none",
      "prefill": {"num-worker": 1, "tp": 16, "ep": 16, "dp-attn": true, "additional-settings":
                  ["CONFIG_FILE=recipes/trtllm/h100-fp8/8k1k/stp/ctx1_gen3_tep16_batch1_eplb0_mtp0.yaml"]},
      "decode": {"num-worker": 3, "tp": 16, "ep": 16, "dp-attn": false}, "conc": [6]},
      {"model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
       "framework": "sglang", "runner": "h200", "isl": 1024, "osl": 1024, "tp": 8, "conc": [4]}])";
  // Predicted TTFT and TPOT (seconds) of the point with the built-in factors, nothing fitted.
  struct Predicted {
    double ttft_s = 0, tpot_s = 0;
    std::string log;
  };
  auto evaluate = [&](const std::vector<std::string>& extra) {
    const std::string residuals = ::testing::TempDir() + "/ix_sim_rows_residuals.csv";
    std::vector<std::string> args{"sim", "calibrate", "--csv", subset, "--evaluate", "--residuals-csv", residuals};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run_ixbench(args, "", 300);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    std::ifstream in(residuals);
    std::string line;
    std::getline(in, line);
    std::getline(in, line);
    std::vector<std::string> fields;
    for (size_t start = 0;;) {
      const size_t comma = line.find(',', start);
      fields.push_back(line.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    EXPECT_EQ(fields.size(), 13u) << line;
    if (fields.size() != 13) return Predicted{};
    return Predicted{std::stod(fields[8]), std::stod(fields[10]), result.err};
  };
  const Predicted with_rows = evaluate({"--sweep-rows", rows_path});
  EXPECT_NE(
      with_rows.log.find("1 disaggregated rows (1 others skipped); 1 points matched a row, 1 took its batch limits"),
      std::string::npos)
      << with_rows.log;
  const Predicted without_rows = evaluate({"--quiet"});
  // Half the requests wait for a slot: a generation of ~0.9 x 1024 tokens at the predicted TPOT.
  const double generation_s = 0.9 * 1024 * with_rows.tpot_s;
  EXPECT_GT(with_rows.ttft_s, 0.7 * generation_s) << "a whole generation of waiting";
  EXPECT_GT(with_rows.ttft_s, 1.5 * without_rows.ttft_s);
  auto evaluate_and_out = run_ixbench({"sim", "calibrate", "--csv", subset, "--evaluate", "--out", "/tmp/x.json"});
  EXPECT_EQ(evaluate_and_out.exit_code, 1);
  EXPECT_NE(evaluate_and_out.err.find("--evaluate fits nothing"), std::string::npos) << evaluate_and_out.err;

  // A file that is not a list of rows is refused.
  const std::string bad = ::testing::TempDir() + "/ix_sim_rows_bad.json";
  std::ofstream(bad) << R"({"rows": []})";
  auto refused = run_ixbench({"sim", "calibrate", "--csv", subset, "--sweep-rows", bad, "--quiet"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("expected a JSON array of sweep rows"), std::string::npos) << refused.err;
  const std::string single_node = ::testing::TempDir() + "/ix_sim_rows_single.json";
  std::ofstream(single_node) << R"([{"model": "deepseek-r1", "precision": "fp8", "framework": "sglang",
      "runner": "h200", "isl": 1024, "osl": 1024, "tp": 8, "conc": [4]}])";
  auto useless = run_ixbench({"sim", "calibrate", "--csv", subset, "--sweep-rows", single_node, "--evaluate"});
  EXPECT_EQ(useless.exit_code, 1);
  EXPECT_NE(useless.err.find("none of its 1 rows is a disaggregated deployment"), std::string::npos) << useless.err;
  // Several files are joined (the current master's rows beside older ones).
  auto joined =
      run_ixbench({"sim", "calibrate", "--csv", subset, "--evaluate", "--sweep-rows", single_node, rows_path});
  EXPECT_EQ(joined.exit_code, 0) << joined.err;
  EXPECT_NE(joined.err.find("1 disaggregated rows (2 others skipped); 1 points matched a row, 1 took its batch limits"),
            std::string::npos)
      << joined.err;
  auto directory = run_ixbench({"sim", "calibrate", "--csv", subset, "--sweep-rows", ::testing::TempDir()});
  EXPECT_EQ(directory.exit_code, 1);
  EXPECT_NE(directory.err.find("is a directory"), std::string::npos) << directory.err;
  auto missing = run_ixbench({"sim", "calibrate", "--csv", subset, "--sweep-rows", "/nonexistent/rows.json"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/rows.json"), std::string::npos) << missing.err;
}

TEST(SimPredict, DecodeBatchFlagsNeedDisaggregation) {
  auto result = run_ixbench({"sim", "predict", "--model", "deepseek-r1", "--hardware", "h200", "--tp", "8", "--isl",
                             "1024", "--osl", "128", "--conc", "4", "--decode-max-num-seqs", "4"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("--decode-max-num-seqs apply to disaggregation"), std::string::npos) << result.err;
  auto tokens = run_ixbench({"sim", "predict", "--model", "deepseek-r1", "--hardware", "h200", "--tp", "8", "--isl",
                             "1024", "--osl", "128", "--conc", "4", "--prefill-max-num-batched-tokens", "16384",
                             "--decode-max-kv-tokens", "100000"});
  EXPECT_EQ(tokens.exit_code, 1);
  EXPECT_NE(tokens.err.find("--prefill-max-num-batched-tokens, --decode-max-kv-tokens apply to disaggregation"),
            std::string::npos)
      << tokens.err;
  auto reserve = run_ixbench({"sim",
                              "predict",
                              "--model",
                              "deepseek-r1",
                              "--hardware",
                              "h200",
                              "--isl",
                              "1024",
                              "--osl",
                              "128",
                              "--conc",
                              "4",
                              "--prefill-workers",
                              "1",
                              "--decode-workers",
                              "1",
                              "--prefill-tp",
                              "8",
                              "--decode-tp",
                              "8",
                              "--decode-reserved-tokens",
                              "-1"});
  EXPECT_EQ(reserve.exit_code, 1);
  EXPECT_NE(reserve.err.find("--decode-reserved-tokens must be in [0, 2^20]"), std::string::npos) << reserve.err;
  // One prefill and one decode engine of 8 GPUs, 4 concurrent requests, the given decode cap.
  auto disaggregated = [](const std::string& cap) {
    std::vector<std::string> args{
        "sim", "predict", "--model", "deepseek-r1",           "--hardware", "h200", "--isl", "1024", "--osl",
        "256", "--conc",  "4",       "--decode-max-num-seqs", cap};
    for (const char* side : {"prefill", "decode"}) {
      args.push_back(fmt::format("--{}-workers", side));
      args.push_back("1");
      args.push_back(fmt::format("--{}-tp", side));
      args.push_back("8");
    }
    return run_ixbench(args);
  };
  auto negative = disaggregated("-2");
  EXPECT_EQ(negative.exit_code, 1);
  EXPECT_NE(negative.err.find("--decode-max-num-seqs must be >= 1"), std::string::npos) << negative.err;
  // With a cap of 2, 4 concurrent requests queue for decode slots: TTFT rises.
  auto ttft = [&](const std::string& cap) {
    auto run = disaggregated(cap);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const auto out = parse_object(run.out);
    if (!out.contains("results") || out.at("results").as_array().empty()) return 0.0;
    return out.at("results").as_array()[0].as_object().at("median_ttft_ms").to_number<double>();
  };
  EXPECT_GT(ttft("2"), 3 * ttft("0"));
}

}  // namespace
}  // namespace ix::testing
