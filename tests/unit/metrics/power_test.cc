// The cases of InferenceX's utils/test_aggregate_power.py (same inputs, same expected numbers),
// plus malformed telemetry. The script's legacy arithmetic-mean helper (aggregate_power()) is not
// ported: it publishes nothing.
#include "metrics/power.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <tuple>

#include "common/json_io.h"
#include "common/rng.h"

namespace ix::metrics::power {
namespace {

namespace bj = boost::json;
using Sample = std::tuple<double, int, double>;  // (unix s, GPU, W)
constexpr double kBase = 1'700'000'000.0;

// The script writes local time; the tests pin the zone.
class Utc : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};
const auto* const kUtc = ::testing::AddGlobalTestEnvironment(new Utc);

std::string nvidia_ts(double t) {
  const auto whole = static_cast<std::time_t>(std::floor(t));
  const auto micro = static_cast<int>(std::lround((t - std::floor(t)) * 1e6));
  std::tm tm{};
  gmtime_r(&whole, &tm);
  return fmt::format("{:04}/{:02}/{:02} {:02}:{:02}:{:02}.{:06}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, micro);
}

std::string nvidia_csv(const std::vector<Sample>& samples) {
  std::string out = "timestamp, index, power.draw [W], temperature.gpu\n";
  for (const auto& [t, gpu, w] : samples) out += fmt::format("{}, {}, {:.2f} W, 65\n", nvidia_ts(t), gpu, w);
  return out;
}

std::string amd_csv(const std::vector<Sample>& samples) {
  std::string out = "timestamp,gpu,socket_power,temperature\n";
  for (const auto& [t, gpu, w] : samples) {
    std::string iso = nvidia_ts(t).substr(0, 23);
    iso[4] = iso[7] = '-';
    iso[10] = 'T';
    out += fmt::format("{},{},{},65\n", iso, gpu, w);
  }
  return out;
}

// _write_constant_window_samples(): one sample a second before, through and after the window.
std::vector<Sample> constant_window(double start, double end, double watts, int gpus) {
  std::vector<double> times{start - 1.0};
  for (int offset = 0; offset <= static_cast<int>(end - start); ++offset) times.push_back(start + offset);
  times.push_back(end + 1.0);
  std::vector<Sample> out;
  for (double t : times)
    for (int gpu = 0; gpu < gpus; ++gpu) out.emplace_back(t, gpu, watts);
  return out;
}

std::string bench_json(double start, double end, double duration, int64_t completed, int64_t input, int64_t output) {
  return json::to_string(bj::object{{"benchmark_start_time_unix", start},
                                    {"benchmark_end_time_unix", end},
                                    {"duration", duration},
                                    {"completed", completed},
                                    {"total_output_tokens", output},
                                    {"total_input_tokens", input}});
}

PowerIntegration integrate(const std::string& csv, double start, double end, std::optional<int64_t> gpus) {
  return integrate_power(InputFile::read(csv), start, end, gpus);
}

// run(): the record and the sidecar for these texts.
struct RunOutput {
  PowerEvaluation evaluation;
  bj::object record;
  bj::object sidecar;
};
RunOutput run(const InputFile& csv, const std::string& bench, std::optional<int64_t> gpus,
              const bj::object& agg = {{"hw", "h200"}}) {
  RunOutput out;
  out.evaluation = evaluate_power(load_benchmark_data(InputFile::read(bench), std::nullopt), csv, gpus);
  out.record = *patch_power_record(agg, out.evaluation.power_valid(), out.evaluation.metrics);
  out.sidecar = validation_payload(out.evaluation, "gpu_metrics.csv", "bench.json", std::nullopt);
  return out;
}

double num(const bj::object& o, std::string_view key) {
  return o.at(key).to_number<double>();
}

const char* const kMetricKeys[] = {"avg_power_w",
                                   "avg_total_gpu_power_w",
                                   "total_gpu_energy_j",
                                   "joules_per_successful_query",
                                   "joules_per_input_token",
                                   "joules_per_output_token",
                                   "joules_per_total_token"};

TEST(PowerColumns, NvidiaAmdAndAmdWatchModeHeaders) {
  Columns nvidia = detect_columns({"timestamp", "index", "power.draw [W]", "utilization.gpu"});
  EXPECT_EQ(nvidia.timestamp, "timestamp");
  EXPECT_EQ(nvidia.power, "power.draw [W]");
  EXPECT_EQ(nvidia.gpu, "index");
  Columns amd = detect_columns({"timestamp", "gpu", "socket_power", "temperature"});
  EXPECT_EQ(amd.power, "socket_power");
  EXPECT_EQ(amd.gpu, "gpu");
  // AMDSMI 26.2.0 watch mode: socket_power wins over the later power_management.
  Columns watch = detect_columns({"timestamp", "gpu", "gfx_activity", "umc_activity", "socket_power", "gfx_voltage",
                                  "throttle_status", "power_management", "gfx_0_clk", "edge"});
  EXPECT_EQ(watch.power, "socket_power");
}

TEST(PowerColumns, PowerLimitIsNotThePowerColumn) {
  EXPECT_EQ(detect_columns({"timestamp", "index", "power.limit [W]", "power.draw [W]"}).power, "power.draw [W]");
  EXPECT_FALSE(detect_columns({"timestamp", "index", "temperature.gpu"}).power);
}

TEST(PowerCells, PowerWithUnitsBareAndNotAvailable) {
  EXPECT_DOUBLE_EQ(*parse_power("412.34 W"), 412.34);
  EXPECT_DOUBLE_EQ(*parse_power("412.34"), 412.34);
  EXPECT_FALSE(parse_power("[N/A]"));
  EXPECT_FALSE(parse_power(""));
  EXPECT_FALSE(parse_power("no number"));
  EXPECT_DOUBLE_EQ(*parse_power("-5 W"), -5.0);
}

TEST(PowerCells, TimestampFormats) {
  EXPECT_NEAR(*parse_timestamp("2025/01/15 12:34:56.789"), 1736944496.789, 0.01);
  EXPECT_NEAR(*parse_timestamp("2025-01-15T12:34:56.789"), 1736944496.789, 0.01);
  EXPECT_NEAR(*parse_timestamp("2025-01-15 12:34:56.789+01:00"), 1736940896.789, 0.01);
  EXPECT_NEAR(*parse_timestamp("2025-01-15T12:34:56Z"), 1736944496.0, 0.01);
  EXPECT_DOUBLE_EQ(*parse_timestamp("1736942096.789"), 1736942096.789);
  EXPECT_DOUBLE_EQ(*parse_timestamp("1736942096789"), 1736942096.789);  // above 1e12: milliseconds
  EXPECT_FALSE(parse_timestamp("not-a-date"));
  EXPECT_FALSE(parse_timestamp(""));
  EXPECT_FALSE(parse_timestamp("2025/02/30 10:00:00"));
  EXPECT_FALSE(parse_timestamp("2025/01/15 10:00:00.1234567"));
}

TEST(PowerIntegrate, PerDeviceTrapezoidalIntegration) {
  std::vector<Sample> samples;
  for (const auto& [t, w] : std::vector<std::pair<double, double>>{
           {-1, 100.0}, {1, 140.0}, {3.5, 190.0}, {6, 240.0}, {8.5, 290.0}, {11, 340.0}}) {
    samples.emplace_back(kBase + t, 0, w);
    samples.emplace_back(kBase + t, 1, w + 100.0);
  }
  auto result = integrate(nvidia_csv(samples), kBase, kBase + 10, 2);
  EXPECT_TRUE(result.power_valid());
  ASSERT_EQ(result.per_gpu_energy_j.size(), 2u);
  EXPECT_NEAR(result.per_gpu_energy_j[0].second, 2200.0, 1e-6);
  EXPECT_NEAR(result.per_gpu_energy_j[1].second, 3200.0, 1e-6);
  EXPECT_NEAR(*result.total_gpu_energy_j, 5400.0, 1e-6);
  EXPECT_NEAR(*result.avg_total_gpu_power_w, 540.0, 1e-6);
  EXPECT_NEAR(*result.avg_power_w, 270.0, 1e-6);
}

TEST(PowerIntegrate, ExpectedGpuCountMismatch) {
  auto result = integrate(nvidia_csv(constant_window(kBase, kBase + 10, 500.0, 2)), kBase, kBase + 10, 4);
  EXPECT_FALSE(result.power_valid());
  EXPECT_EQ(result.invalid_reasons, std::vector<std::string>{"expected_gpu_count_mismatch"});
  EXPECT_EQ(result.expected_num_gpus, 4);
  EXPECT_EQ(result.observed_gpu_ids.size(), 2u);
}

TEST(PowerIntegrate, EveryGpuMustBracketTheWindow) {
  std::vector<Sample> samples;
  for (double t : {-1.0, 1.0, 3.0, 5.0, 7.0, 9.0, 11.0}) samples.emplace_back(kBase + t, 0, 500.0);
  for (double t : {1.0, 3.0, 5.0, 7.0, 9.0, 11.0}) samples.emplace_back(kBase + t, 1, 500.0);  // starts late
  auto result = integrate(nvidia_csv(samples), kBase, kBase + 10, 2);
  EXPECT_EQ(result.invalid_reasons, std::vector<std::string>{"benchmark_window_not_bracketed"});
  ASSERT_EQ(result.device_issues.size(), 1u);
  EXPECT_EQ(result.device_issues[0].first, "1");
  EXPECT_EQ(result.device_issues[0].second, std::vector<std::string>{"benchmark_window_not_bracketed"});
}

TEST(PowerIntegrate, SamplingGapOverThreeSecondsInvalidates) {
  auto result = integrate(
      nvidia_csv({{kBase - 1, 0, 500.0}, {kBase + 1, 0, 500.0}, {kBase + 9, 0, 500.0}, {kBase + 11, 0, 500.0}}), kBase,
      kBase + 10, 1);
  EXPECT_EQ(result.invalid_reasons, std::vector<std::string>{"sampling_gap_exceeded"});
  ASSERT_EQ(result.device_issues.size(), 1u);
  EXPECT_EQ(result.device_issues[0].second, std::vector<std::string>{"sampling_gap_exceeded"});
  EXPECT_DOUBLE_EQ(result.per_gpu_max_sample_gap_s[0].second, 8.0);
}

TEST(PowerIntegrate, InvalidSamplesFarOutsideTheWindowAreIgnored) {
  std::vector<Sample> samples{{kBase - 100, 0, -1.0}, {kBase + 100, 0, 100.0}, {kBase + 100, 0, 200.0}};
  for (int offset = -1; offset < 12; ++offset) samples.emplace_back(kBase + offset, 0, 500.0);
  auto result = integrate(nvidia_csv(samples), kBase, kBase + 10, 1);
  EXPECT_TRUE(result.power_valid());
  EXPECT_NEAR(*result.total_gpu_energy_j, 5000.0, 1e-6);
}

TEST(PowerIntegrate, AmdSmiIsoTimestampsAndBareWatts) {
  auto result = integrate(amd_csv(constant_window(kBase, kBase + 10, 350.0, 2)), kBase, kBase + 10, 2);
  EXPECT_TRUE(result.power_valid());
  EXPECT_NEAR(*result.avg_power_w, 350.0, 1e-9);
}

TEST(PowerIntegrate, DuplicateTimestampReadingsAreAveraged) {
  std::vector<Sample> samples = constant_window(kBase, kBase + 10, 500.0, 1);
  samples.emplace_back(kBase + 5, 0, 700.0);  // the 500 W reading at +5 s and this one average to 600 W
  auto result = integrate(nvidia_csv(samples), kBase, kBase + 10, 1);
  EXPECT_TRUE(result.power_valid());
  EXPECT_NEAR(*result.total_gpu_energy_j, 5000.0 + 100.0, 1e-6);
  EXPECT_EQ(result.per_gpu_sample_counts[0].second, 13);
}

TEST(PowerIntegrate, FileProblemsAreReasonsWithNotes) {
  EXPECT_EQ(integrate_power(InputFile::missing(), kBase, kBase + 10, 1).invalid_reasons,
            std::vector<std::string>{"telemetry_file_missing"});
  auto empty = integrate("", kBase, kBase + 10, 1);
  EXPECT_EQ(empty.invalid_reasons, std::vector<std::string>{"telemetry_file_empty"});
  ASSERT_EQ(empty.notes.size(), 1u);
  EXPECT_NE(empty.notes[0].message.find("empty"), std::string::npos);
  auto headerless = integrate(nvidia_csv({{kBase, 0, 1.0}}).substr(52), kBase, kBase + 10, 1);
  EXPECT_EQ(headerless.invalid_reasons, (std::vector<std::string>{"timestamp_column_missing", "power_column_missing",
                                                                  "gpu_identity_column_missing"}));
  EXPECT_EQ(headerless.notes.at(0).line, 1u);
  EXPECT_EQ(integrate("timestamp, index, power.draw [W]\n", kBase, kBase + 10, 1).invalid_reasons,
            std::vector<std::string>{"no_usable_power_samples"});
  EXPECT_EQ(integrate_power(InputFile::read("x"), kBase, kBase, 1).invalid_reasons,
            std::vector<std::string>{"invalid_benchmark_window"});
}

// test_run_rejects_malformed_telemetry_inside_window, both variants: the reason, and the line.
TEST(PowerRun, MalformedRowInsideTheWindowInvalidatesAndIsNamed) {
  for (const auto& [row, reason] : std::vector<std::pair<std::string, std::string>>{
           {"not-a-timestamp, 0, 500 W", "invalid_timestamp_sample"}, {"{}, 0, [N/A]", "invalid_power_sample"}}) {
    std::string csv = "timestamp, index, power.draw [W]\n";
    for (int offset = -1; offset < 12; ++offset)
      csv += offset == 5 ? fmt::format(fmt::runtime(row), nvidia_ts(kBase + offset)) + "\n"
                         : fmt::format("{}, 0, 500 W\n", nvidia_ts(kBase + offset));
    auto out = run(InputFile::read(csv), bench_json(kBase, kBase + 10, 10.0, 1, 1000, 1000), 1);
    EXPECT_EQ(out.record.at("power_valid"), 0);
    for (const char* key : kMetricKeys) EXPECT_FALSE(out.record.contains(key)) << key;
    EXPECT_EQ(out.evaluation.reasons, std::vector<std::string>{reason});
    ASSERT_EQ(out.evaluation.integration.notes.size(), 1u);
    EXPECT_EQ(out.evaluation.integration.notes[0].line, 8u);  // header, then offsets -1..5
  }
}

TEST(PowerRun, PatchesTheRecordWithPowerAndJoules) {
  const std::string csv = nvidia_csv(constant_window(kBase, kBase + 10, 500.0, 8));
  auto out = run(InputFile::read(csv), bench_json(kBase, kBase + 10, 10.0, 1, 20'000, 20'000), std::nullopt,
                 {{"hw", "h200"}, {"conc", 64}});
  EXPECT_EQ(out.record.at("hw"), "h200");
  EXPECT_EQ(out.record.at("conc"), 64);
  EXPECT_DOUBLE_EQ(num(out.record, "avg_power_w"), 500.0);
  EXPECT_DOUBLE_EQ(num(out.record, "joules_per_output_token"), 2.0);
  EXPECT_DOUBLE_EQ(num(out.record, "joules_per_total_token"), 1.0);
  // 8k1k-like: J/total uses input + output tokens.
  auto long_prompts = run(InputFile::read(csv), bench_json(kBase, kBase + 10, 10.0, 1, 524'288, 65'536), std::nullopt);
  EXPECT_NEAR(num(long_prompts.record, "joules_per_output_token"), 40'000.0 / 65'536, 1e-5);
  EXPECT_NEAR(num(long_prompts.record, "joules_per_total_token"), 40'000.0 / (65'536 + 524'288), 1e-5);
}

TEST(PowerRun, NoBenchmarkWindowLeavesOnlyTheSchemaFields) {
  auto out = run(InputFile::read(nvidia_csv({{kBase, 0, 400.0}})), R"({"duration": 10.0, "total_output_tokens": 1000})",
                 std::nullopt);
  EXPECT_EQ(json::to_string(out.record), R"({"hw": "h200", "power_metric_schema_version": 2, "power_valid": 0})");
  EXPECT_EQ(out.evaluation.reasons, std::vector<std::string>{"invalid_benchmark_window"});
}

TEST(PowerRun, MissingCsvAndZeroOutputTokensWriteNoMetrics) {
  auto missing = run(InputFile::missing(), bench_json(0.0, 10.0, 10.0, 1, 0, 1000), std::nullopt);
  EXPECT_FALSE(missing.record.contains("avg_power_w"));
  auto zero =
      run(InputFile::read(nvidia_csv({{kBase, 0, 400.0}})), bench_json(kBase, kBase + 10, 10.0, 1, 0, 0), std::nullopt);
  EXPECT_FALSE(zero.record.contains("joules_per_output_token"));
}

TEST(PowerRun, CompleteWholeDeploymentMetricContract) {
  auto out = run(InputFile::read(nvidia_csv(constant_window(kBase, kBase + 10, 500.0, 8))),
                 bench_json(kBase, kBase + 10, 10.0, 10, 10'000, 2'000), 8);
  EXPECT_EQ(out.record.at("power_metric_schema_version"), 2);
  EXPECT_TRUE(out.record.at("power_valid").is_int64());
  EXPECT_EQ(out.record.at("power_valid"), 1);
  EXPECT_DOUBLE_EQ(num(out.record, "avg_total_gpu_power_w"), 4000.0);
  EXPECT_DOUBLE_EQ(num(out.record, "total_gpu_energy_j"), 40'000.0);
  EXPECT_DOUBLE_EQ(num(out.record, "joules_per_successful_query"), 4000.0);
  EXPECT_DOUBLE_EQ(num(out.record, "joules_per_input_token"), 4.0);
  EXPECT_DOUBLE_EQ(num(out.record, "joules_per_output_token"), 20.0);
  EXPECT_DOUBLE_EQ(num(out.record, "joules_per_total_token"), 3.333333);
  const bj::object& audit = out.sidecar;
  EXPECT_EQ(audit.at("schema_version"), 1);
  EXPECT_EQ(audit.at("power_valid"), true);
  EXPECT_TRUE(audit.at("reasons").as_array().empty());
  EXPECT_EQ(audit.at("expected_gpu_count"), 8);
  EXPECT_EQ(audit.at("observed_gpu_count"), 8);
  EXPECT_DOUBLE_EQ(num(audit.at("benchmark_window").as_object(), "integration_duration_s"), 10.0);
  EXPECT_EQ(audit.at("integration_method").as_string(), kIntegrationMethod);
  EXPECT_TRUE(audit.at("accumulator_check").is_null());
}

TEST(PowerRun, InvalidDenominatorIsAuditable) {
  auto out = run(InputFile::read(nvidia_csv(constant_window(kBase, kBase + 10, 500.0, 1))),
                 bench_json(kBase, kBase + 10, 10.0, 0, 10'000, 2'000), 1);
  EXPECT_EQ(out.record.at("power_valid"), 0);
  EXPECT_EQ(out.evaluation.reasons, std::vector<std::string>{"invalid_successful_query_count"});
  EXPECT_EQ(out.sidecar.at("reasons").as_array().size(), 1u);
}

TEST(PowerRun, ExistingPowerFieldsAreReplacedInPlace) {
  const bj::object agg{{"hw", "h200"},       {"power_metric_schema_version", 2}, {"power_valid", 0},
                       {"avg_power_w", 1.0}, {"power_invalid_reasons", "x"},     {"conc", 4}};
  auto out = run(InputFile::missing(), bench_json(kBase, kBase + 10, 10.0, 1, 1, 1), std::nullopt, agg);
  EXPECT_EQ(json::to_string(out.record),
            R"({"hw": "h200", "power_metric_schema_version": 2, "power_valid": 0, "conc": 4})");
}

TEST(PowerRun, HandGivenWindowNeedsNoRawResult) {
  const auto load = load_benchmark_data(std::nullopt, Window{kBase, kBase + 10});
  auto evaluation = evaluate_power(load, InputFile::read(nvidia_csv(constant_window(kBase, kBase + 10, 250.0, 2))), 2);
  EXPECT_TRUE(evaluation.power_valid());
  ASSERT_EQ(evaluation.metrics.size(), 3u);  // no counts: no per-token figures
  EXPECT_DOUBLE_EQ(evaluation.metrics[2].second, 5000.0);
}

// ---- the advisory energy-accumulator cross-check ----

const std::string kSnapshotHeader =
    "gpu,socket_power,gfx_voltage,soc_voltage,mem_voltage,throttle_status,power_management,total_energy_consumption\n";

InputFile snapshot(const std::vector<std::pair<std::string, double>>& energy) {
  std::string text = kSnapshotHeader;
  for (const auto& [gpu, joules] : energy) text += fmt::format("{},238,N/A,N/A,N/A,N/A,ENABLED,{}\n", gpu, joules);
  return InputFile::read(text);
}

InputFile flat_stream(const std::vector<std::pair<int, double>>& watts_by_gpu) {
  std::vector<Sample> samples;
  for (const auto& [gpu, watts] : watts_by_gpu)
    for (int offset = 0; offset < 11; ++offset) samples.emplace_back(kBase + offset, gpu, watts);
  return InputFile::read(amd_csv(samples));
}

TEST(PowerAccumulator, MatchesTheFullStreamIntegral) {
  auto check = *cross_check_accumulator(flat_stream({{0, 500.0}}), snapshot({{"0", 1'000'000.0}}),
                                        snapshot({{"0", 1'005'000.0}}));
  EXPECT_EQ(check.at("available"), true);
  EXPECT_DOUBLE_EQ(num(check, "accumulator_delta_j"), 5000.0);
  EXPECT_DOUBLE_EQ(num(check, "integrated_stream_j"), 5000.0);
  EXPECT_EQ(check.at("within_tolerance"), true);
  EXPECT_DOUBLE_EQ(num(check, "tolerance"), 0.05);
  EXPECT_EQ(json::to_string(check.at("integrated_gpu_ids")), R"(["0"])");
  EXPECT_TRUE(check.at("unmatched_gpus").as_array().empty());
  EXPECT_DOUBLE_EQ(num(check, "stream_span_s"), 10.0);
}

TEST(PowerAccumulator, DisagreementNegativeDeltaAndZeroDelta) {
  auto low =
      *cross_check_accumulator(flat_stream({{0, 400.0}}), snapshot({{"0", 1e6}}), snapshot({{"0", 1'005'000.0}}));
  EXPECT_NEAR(num(low, "relative_error"), 0.2, 1e-12);
  EXPECT_EQ(low.at("within_tolerance"), false);
  auto wrapped = *cross_check_accumulator(flat_stream({{0, 400.0}, {1, 0.0}}), snapshot({{"0", 1e6}, {"1", 2e6}}),
                                          snapshot({{"0", 1'005'000.0}, {"1", 1'999'000.0}}));
  EXPECT_EQ(json::to_string(wrapped.at("negative_delta_gpus")), R"(["1"])");
  EXPECT_DOUBLE_EQ(num(wrapped, "relative_error"), 0.0);
  EXPECT_EQ(wrapped.at("within_tolerance"), false);
  auto zero = *cross_check_accumulator(flat_stream({{0, 500.0}}), snapshot({{"0", 1e6}}), snapshot({{"0", 1e6}}));
  EXPECT_TRUE(zero.at("relative_error").is_null());
  EXPECT_EQ(zero.at("within_tolerance"), false);
}

TEST(PowerAccumulator, MissingUnparseableAndUnmatchedSnapshots) {
  EXPECT_FALSE(cross_check_accumulator(flat_stream({{0, 500.0}}), InputFile::missing(), InputFile::missing()));
  EXPECT_EQ(json::to_string(
                *cross_check_accumulator(flat_stream({{0, 500.0}}), snapshot({{"0", 1e6}}), InputFile::missing())),
            R"({"available": false, "reason": "missing_end_snapshot"})");
  EXPECT_EQ(json::to_string(*cross_check_accumulator(flat_stream({{0, 500.0}}), snapshot({{"0", 1e6}}),
                                                     InputFile::read("gpu,socket_power\n0,238\n"))),
            R"({"available": false, "reason": "unparseable_end_snapshot"})");
  auto unmatched = *cross_check_accumulator(flat_stream({{0, 500.0}, {1, 5000.0}}), snapshot({{"0", 1e6}, {"1", 3e6}}),
                                            snapshot({{"0", 1'005'000.0}}));
  EXPECT_EQ(json::to_string(unmatched.at("unmatched_gpus")), R"(["1"])");
  EXPECT_EQ(unmatched.at("within_tolerance"), true);
  // Verbatim AMDSMI 26.2.0 rows: an N/A accumulator reading leaves that GPU unmatched.
  auto real =
      *cross_check_accumulator(flat_stream({{0, 500.0}}),
                               InputFile::read(kSnapshotHeader + "0,238,N/A,N/A,N/A,N/A,ENABLED,178319501.682\n"
                                                                 "1,241,N/A,N/A,N/A,N/A,ENABLED,178400000.000\n"),
                               InputFile::read(kSnapshotHeader + "0,240,N/A,N/A,N/A,N/A,ENABLED,178324501.682\n"
                                                                 "1,239,N/A,N/A,N/A,N/A,ENABLED,N/A\n"));
  EXPECT_NEAR(num(real.at("per_gpu_delta_j").as_object(), "0"), 5000.0, 1e-6);
  EXPECT_EQ(json::to_string(real.at("unmatched_gpus")), R"(["1"])");
}

// ---- malformed telemetry: never a crash, always a verdict ----

TEST(PowerFuzz, RandomBytesAndCutsGiveAVerdictNeverACrash) {
  const std::string good = nvidia_csv(constant_window(kBase, kBase + 10, 500.0, 2));
  const std::string alphabet(
      "\",\n\r \0\xff"
      "9.-/:W",
      13);
  Rng rng(7);
  for (int round = 0; round < 400; ++round) {
    std::string text = good.substr(0, rng.uniform_int(0, static_cast<int64_t>(good.size())));
    for (int flips = static_cast<int>(rng.uniform_int(0, 6)); flips-- > 0 && !text.empty();)
      text[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(text.size()) - 1))] =
          alphabet[static_cast<size_t>(rng.uniform_int(0, 12))];
    auto result = integrate(text, kBase, kBase + 10, 2);
    if (result.power_valid()) {
      ASSERT_TRUE(result.total_gpu_energy_j);
      EXPECT_TRUE(std::isfinite(*result.total_gpu_energy_j));
    } else {
      EXPECT_FALSE(result.invalid_reasons.empty());
    }
  }
}

TEST(PowerRound, AsPythonRounds) {
  EXPECT_DOUBLE_EQ(python_round(2.675, 2), 2.67);  // 2.675 is 2.67499999...
  EXPECT_DOUBLE_EQ(python_round(0.0000005, 6), 0.0);
  EXPECT_DOUBLE_EQ(python_round(3.3333333333, 6), 3.333333);
  EXPECT_EQ(python_path_string("./a//b/./c.csv"), "a/b/c.csv");
  EXPECT_EQ(python_path_string("/x/"), "/x");
  EXPECT_EQ(python_path_string(""), ".");
}

}  // namespace
}  // namespace ix::metrics::power
