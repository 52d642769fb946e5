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
  EXPECT_DOUBLE_EQ(*row->median_tpot_ms, 20.0);
  EXPECT_EQ(row->completed, 80);
  EXPECT_DOUBLE_EQ(*row->tput_per_gpu, 500.0);
  EXPECT_DOUBLE_EQ(*row->interactivity, 50.0);
  auto no_gpus = row_from_result(sample(8, 20.0), "run8", std::nullopt);
  EXPECT_FALSE(no_gpus->tput_per_gpu.has_value());
}

TEST(ResultsTable, MissingKeyIsNamed) {
  auto object = sample(1, 10.0);
  object.erase("total_token_throughput");
  auto row = row_from_result(object, "x", std::nullopt);
  ASSERT_FALSE(row.has_value());
  EXPECT_EQ(row.error().message(), "missing key 'total_token_throughput'");
  object = sample(1, 10.0);
  object["completed"] = "ten";
  EXPECT_EQ(row_from_result(object, "x", std::nullopt).error().message(), "key 'completed' must be a number");
  // Counts are whole numbers in range (a double cast to int64 out of range printed garbage).
  object = sample(1, 10.0);
  object["max_concurrency"] = 1e300;
  EXPECT_NE(row_from_result(object, "x", std::nullopt).error().message().find("'max_concurrency' must be a whole"),
            std::string::npos);
}

TEST(ResultsTable, StatisticsTheResultLeftOutShowAsDashes) {
  // bench serve --metric-percentiles 50,90 writes no p99_itl_ms; --percentile-metrics ttft,e2el no
  // TPOT: the row is printed with "-" (it was "missing key").
  auto object = sample(4, 10.0);
  object.erase("p99_itl_ms");
  object.erase("median_tpot_ms");
  auto row = row_from_result(object, "partial", 8);
  ASSERT_TRUE(row.has_value()) << row.error().message();
  EXPECT_FALSE(row->p99_itl_ms.has_value());
  EXPECT_FALSE(row->interactivity.has_value());
  std::vector<ResultRow> rows{*row};
  const std::string table = render_table(rows);
  EXPECT_NE(table.find("      120.0          -          -       4.50          -  partial"), std::string::npos) << table;
}

TEST(ResultsTable, ARunWithoutCompletedRequestsShowsNoLatencies) {
  // Every request failed: the writer's 0.0 statistics were shown as perfect latencies.
  auto object = sample(4, 10.0);
  object["completed"] = 0;
  object["failed"] = 20;
  for (const char* key : {"median_ttft_ms", "median_tpot_ms", "p99_itl_ms", "median_e2el_ms"}) object[key] = 0.0;
  auto row = row_from_result(object, "allfailed", 8);
  ASSERT_TRUE(row.has_value());
  EXPECT_FALSE(row->median_ttft_ms.has_value());
  EXPECT_FALSE(row->median_e2el_ms.has_value());
  EXPECT_EQ(row->note, "NO REQUEST COMPLETED");
  // More than 5 % failed (bench serve's exit-1 threshold) is said too.
  object = sample(4, 10.0);
  object["completed"] = 18;
  object["failed"] = 2;
  EXPECT_EQ(row_from_result(object, "some", 8)->note, "FAILED: 2 of 20 requests");
}

TEST(ResultsTable, SortsByConcurrencyAndMarksInvalidRuns) {
  // The result writer's keys: run_valid and the list invalid_reasons (the table looked for other
  // names and never marked a run).
  auto invalid = sample(64, 40.0);
  invalid["run_valid"] = false;
  invalid["invalid_reasons"] = boost::json::array{"client saturated", "server process 7 exited during the run"};
  auto rate = sample(1, 10.0);
  rate["max_concurrency"] = nullptr;
  rate["request_rate"] = 10.0;
  std::vector<ResultRow> rows{*row_from_result(rate, "r10", 8), *row_from_result(invalid, "c64", 8),
                              *row_from_result(sample(4, 10.0), "c4", 8)};
  std::string table = render_table(rows);
  auto c4 = table.find("c4");
  auto c64 = table.find("c64");
  auto r10 = table.find("r10 (rate 10 req/s)");
  ASSERT_NE(c4, std::string::npos);
  ASSERT_NE(c64, std::string::npos);
  ASSERT_NE(r10, std::string::npos) << table;
  EXPECT_LT(c4, c64);
  EXPECT_LT(c64, r10);  // rate runs after the concurrency runs, their conc shown as "-"
  EXPECT_NE(table.find("INVALID: client saturated; server process 7 exited during the run"), std::string::npos);
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
  EXPECT_EQ(*row->max_concurrency, 64);
  // The reference aggregation of this file reports tput_per_gpu 715.617 and median_intvty 46.734.
  EXPECT_NEAR(*row->tput_per_gpu, 715.6170000370615, 1e-9);
  EXPECT_NEAR(*row->interactivity, 46.73405931554633, 1e-9);
}

}  // namespace
}  // namespace ix::report
