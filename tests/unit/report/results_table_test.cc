#include "report/results_table.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "common/json_io.h"
#include "support/subprocess.h"

namespace ix::report {
namespace {

boost::json::object sample(int conc, double tpot_ms) {
  return boost::json::object{
      {"max_concurrency", conc},   {"completed", 10 * conc},      {"failed", 0},
      {"request_throughput", 2.5}, {"output_throughput", 1000.0}, {"total_token_throughput", 2000.0},
      {"median_ttft_ms", 120.0},   {"median_tpot_ms", tpot_ms},   {"p99_itl_ms", 30.0},
      {"median_e2el_ms", 4500.0}};
}

TEST(ResultsTable, ReadsHeadlineFields) {
  auto row = row_from_result(sample(8, 20.0), "run8", 4);
  ASSERT_TRUE(row.has_value()) << row.error().message();
  EXPECT_EQ(row->max_concurrency, 8);
  EXPECT_EQ(row->completed, 80);
  EXPECT_DOUBLE_EQ(*row->tput_per_gpu, 500.0);
  EXPECT_DOUBLE_EQ(*row->interactivity, 50.0);
  auto no_gpus = row_from_result(sample(8, 20.0), "run8", std::nullopt);
  EXPECT_FALSE(no_gpus->tput_per_gpu.has_value());
}

TEST(ResultsTable, MissingKeyIsNamed) {
  auto object = sample(1, 10.0);
  object.erase("median_tpot_ms");
  auto row = row_from_result(object, "x", std::nullopt);
  ASSERT_FALSE(row.has_value());
  EXPECT_EQ(row.error().message(), "missing key 'median_tpot_ms'");
  object = sample(1, 10.0);
  object["completed"] = "ten";
  EXPECT_EQ(row_from_result(object, "x", std::nullopt).error().message(), "key 'completed' must be a number");
}

TEST(ResultsTable, SortsByConcurrencyAndMarksInvalidRuns) {
  auto invalid = sample(64, 40.0);
  invalid["valid"] = false;
  invalid["invalid_reason"] = "client saturated";
  std::vector<ResultRow> rows{*row_from_result(invalid, "c64", 8), *row_from_result(sample(4, 10.0), "c4", 8)};
  std::string table = render_table(rows);
  auto c4 = table.find("c4");
  auto c64 = table.find("c64");
  ASSERT_NE(c4, std::string::npos);
  ASSERT_NE(c64, std::string::npos);
  EXPECT_LT(c4, c64);
  EXPECT_NE(table.find("INVALID: client saturated"), std::string::npos);
  EXPECT_NE(table.find("250.0"), std::string::npos);  // 2000 tok/s over 8 GPUs
  EXPECT_NE(table.find("100.0"), std::string::npos);  // 1000 / 10 ms
}

TEST(ResultsTable, ReadsTheReferenceRawResult) {
  std::string path = ix::testing::shared_path("data/inferencex/examples/aggregate/raw.json");
  if (path.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/inferencex/examples/aggregate/raw.json");
  auto value = json::read_file(path);
  ASSERT_TRUE(value.has_value());
  auto row = row_from_result(value->as_object(), "raw", 8);
  ASSERT_TRUE(row.has_value()) << row.error().message();
  EXPECT_EQ(row->max_concurrency, 64);
  // The reference aggregation of this file reports tput_per_gpu 715.617 and median_intvty 46.734.
  EXPECT_NEAR(*row->tput_per_gpu, 715.6170000370615, 1e-9);
  EXPECT_NEAR(*row->interactivity, 46.73405931554633, 1e-9);
}

}  // namespace
}  // namespace ix::report
