// `ixbench trace stats` on the fixtures and on the public Mooncake traces, through the real binary.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "support/subprocess.h"

namespace ix::testing {
namespace {

std::string fixture(const std::string& name) {
  return source_path("tests/data/traces/" + name);
}

boost::json::object stats_json(const std::string& path) {
  const ProcessResult run = run_ixbench({"trace", "stats", path, "--format", "json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(run.out, ec);
  EXPECT_FALSE(ec) << run.out;
  return ec || !value.is_object() ? boost::json::object{} : value.get_object();
}

TEST(TraceStatsCli, TablePrintsCountsDistributionsAndHit) {
  const ProcessResult run = run_ixbench({"trace", "stats", fixture("fanout_session.json")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("turns       8\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("subagents   3 (max depth 2, max fan-out 2)\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("prefix-cache hit (theoretical)  60.0 % (12 of 20 blocks)\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("think time (s)         4     227.000"), std::string::npos) << run.out;
}

TEST(TraceStatsCli, JsonHoldsEveryStatistic) {
  const boost::json::object stats = stats_json(fixture("fanout_session.json"));
  EXPECT_EQ(stats.at("format").as_string(), "session");
  EXPECT_EQ(stats.at("sessions").as_int64(), 1);
  EXPECT_EQ(stats.at("subagents").at("max_fan_out").as_int64(), 2);
  EXPECT_EQ(stats.at("gap_s").at("max").as_double(), 900.0);
  EXPECT_EQ(stats.at("prefix_cache_hit").at("ratio").as_double(), 0.6);
}

TEST(TraceStatsCli, BlockSizeOverrideAndForcedFormat) {
  const ProcessResult run = run_ixbench(
      {"trace", "stats", fixture("mooncake_small.jsonl"), "--block-size", "64", "--trace-format", "mooncake"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("block size  64\n"), std::string::npos) << run.out;
  const ProcessResult zero = run_ixbench({"trace", "stats", fixture("mooncake_small.jsonl"), "--block-size", "0"});
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
}

TEST(TraceStatsCli, MalformedTraceIsOneErrorNamingFileLineAndField) {
  const std::pair<const char*, const char*> cases[] = {
      {"bad_json_line3.jsonl", "bad_json_line3.jsonl:3:102: invalid JSON"},
      {"missing_field.json", "missing_field.json: requests[1].out: missing"},
      {"negative_length.jsonl", "negative_length.jsonl:2: input_length: must be an integer >= 0, not -5"},
      {"does_not_exist.jsonl", "does_not_exist.jsonl: file does not exist"},
  };
  for (const auto& [name, expected] : cases) {
    const ProcessResult run = run_ixbench({"trace", "stats", fixture(name)});
    EXPECT_EQ(run.exit_code, 1) << name;
    EXPECT_TRUE(run.out.empty()) << run.out;
    EXPECT_TRUE(run.err.starts_with("ixbench: error: ")) << run.err;
    EXPECT_NE(run.err.find(expected), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
  }
}

TEST(TraceStatsCli, RealMooncakeTraces) {
  const std::pair<const char*, double> files[] = {
      {"data/mooncake/conversation_trace.jsonl", 0.366},
      {"data/mooncake/synthetic_trace.jsonl", 0.640},
  };
  for (const auto& [relative, hit] : files) {
    const std::string path = shared_path(relative);
    if (path.empty()) GTEST_SKIP() << shared_missing_message(relative);
    const boost::json::object stats = stats_json(path);
    EXPECT_EQ(stats.at("format").as_string(), "mooncake");
    EXPECT_EQ(stats.at("sessions").as_int64(), stats.at("turns").as_int64());
    EXPECT_NEAR(stats.at("prefix_cache_hit").at("ratio").as_double(), hit, 0.0005) << relative;
  }
  const std::string conversation = shared_path("data/mooncake/conversation_trace.jsonl");
  EXPECT_EQ(stats_json(conversation).at("turns").as_int64(), 12031);
  EXPECT_EQ(stats_json(conversation).at("isl").at("max").as_double(), 126195.0);
}

}  // namespace
}  // namespace ix::testing
