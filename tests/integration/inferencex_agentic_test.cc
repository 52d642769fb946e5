// InferenceX's own agentic aggregation and validation run on ixbench's golden aiperf artifacts
// (tests/data/aiperf, written by tests/unit/bench/aiperf_export_test.cc): both must succeed, and
// the request metrics the aggregation computes must equal those of ixbench's replay result for
// the same records (tests/data/aiperf/replay_result.json) to the 5 decimals it rounds to.
//
// Needs an InferenceX checkout (its utils/ tree) and python3: set IXBENCH_INFERENCEX_DIR to the
// checkout's root; skipped otherwise.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/json_io.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace fs = std::filesystem;

std::string quoted(const fs::path& path) {
  return "'" + path.string() + "'";
}

// Every number under `theirs` must be in `ours` at the same path, equal after rounding to 5
// decimals. Returns the first mismatch ("" when none).
std::string compare_numbers(const boost::json::value& theirs, const boost::json::value* ours, const std::string& path) {
  if (theirs.is_object()) {
    for (const auto& [key, value] : theirs.as_object()) {
      const boost::json::value* mine = ours && ours->is_object() ? ours->as_object().if_contains(key) : nullptr;
      if (auto diff = compare_numbers(value, mine, path + "." + std::string(key)); !diff.empty()) return diff;
    }
    return "";
  }
  if (!theirs.is_number()) return "";
  if (!ours || !ours->is_number()) return path + ": missing in ixbench's result";
  const double a = theirs.to_number<double>(), b = ours->to_number<double>();
  if (std::abs(a - std::round(b * 1e5) / 1e5) > 1e-9 * std::max(1.0, std::abs(a))) {
    return path + ": InferenceX " + std::to_string(a) + ", ixbench " + std::to_string(b);
  }
  return "";
}

TEST(InferenceXAgentic, AggregationAndValidationAcceptTheArtifacts) {
  const char* checkout = std::getenv("IXBENCH_INFERENCEX_DIR");
  if (!checkout || !fs::is_directory(fs::path(checkout) / "utils" / "agentic")) {
    GTEST_SKIP() << "set IXBENCH_INFERENCEX_DIR to an InferenceX checkout (with utils/agentic) to run this test";
  }
  if (testing::find_on_path("python3").empty()) GTEST_SKIP() << "needs python3";
  const fs::path run = testing::scratch_dir("inferencex_agentic");
  const fs::path artifacts = run / "result" / "aiperf_artifacts";
  fs::create_directories(artifacts);
  const fs::path golden = testing::source_path("tests/data/aiperf");
  for (const char* name : {"profile_export.jsonl", "profile_export_aiperf.json", "server_metrics_export.json",
                           "server_metrics_export.csv"}) {
    fs::copy_file(golden / name, artifacts / name);
  }
  const std::string script =
      "cd " + quoted(checkout) + " && RESULT_DIR=" + quoted(run / "result") +
      " AGENTIC_OUTPUT_DIR=" + quoted(run / "out") +
      " RESULT_FILENAME=agg KV_OFFLOADING=none TP=8 FRAMEWORK=vllm CONC=3 HF_HOME=" + quoted(run / "hf") +
      " python3 -m utils.agentic.aggregation.process_agentic_result" +
      " && python3 -m utils.agentic.validation.validate_agentic_result " + quoted(artifacts) +
      " --failed-request-threshold 0.10";
  const auto result = testing::run_process({"/bin/sh", "-c", script}, "", 120);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("12 successful / 16 total (3 warmup, 2 error dropped)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("Validated aiperf request error rate: 1/13"), std::string::npos) << result.out;

  auto agg = json::read_file(run / "out" / "agg.json");
  ASSERT_TRUE(agg) << agg.error().message();
  auto ours = json::read_file(golden / "replay_result.json");
  ASSERT_TRUE(ours) << ours.error().message();
  const auto& theirs = agg->as_object();
  EXPECT_EQ(theirs.at("request_accounting"), ours->as_object().at("request_accounting"));
  EXPECT_EQ(compare_numbers(theirs.at("request_metrics"), &ours->as_object().at("request_metrics"), "request_metrics"),
            "");
  EXPECT_EQ(theirs.at("server_metrics").as_object().at("adapter").as_string(), "vllm");
}

}  // namespace
}  // namespace ix
