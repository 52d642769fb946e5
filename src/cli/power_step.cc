#include "cli/power_step.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <system_error>

#include "cli/command.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "common/log.h"

namespace ix::cli {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;
using metrics::power::InputFile;
using metrics::power::PowerEvaluation;

// At most this many per-row notes are printed; the rest are counted.
constexpr size_t kMaxNotes = 10;

InputFile read_input(const fs::path& path, std::string_view what) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return InputFile::missing();
  auto text = files::read_text_file(path, files::kMaxResultFileBytes, what);
  if (!text) return InputFile::unreadable(text.error().message());
  return InputFile::read(std::move(*text));
}

// <stem><suffix> beside `file` (Path.with_name(f"{stem}...")).
fs::path sibling(const fs::path& file, const std::string& name) {
  return file.has_parent_path() ? file.parent_path() / name : fs::path(name);
}

// json.dumps(indent=2): the pretty form without the final newline.
std::string python_dump(const bj::object& value) {
  std::string text = json::to_pretty_string(value);
  text.pop_back();
  return text;
}

void print_notes(const PowerEvaluation& evaluation, const PowerStepOptions& options) {
  const auto& notes = evaluation.integration.notes;
  for (size_t index = 0; index < notes.size() && index < kMaxNotes; ++index) {
    const auto& note = notes[index];
    const std::string where = note.line ? fmt::format("{}:{}", options.csv.string(), note.line) : options.csv.string();
    log::warn("{}: {}: {}", options.command, where, note.message);
  }
  if (notes.size() > kMaxNotes)
    log::warn("{}: {}: {} more rows like these", options.command, options.csv.string(), notes.size() - kMaxNotes);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

fs::path default_validation_path(const fs::path& file) {
  return sibling(file, "power_validation_" + file.stem().string() + ".json");
}

PowerEvaluation measure_power(const PowerStepOptions& options) {
  std::optional<InputFile> raw;
  if (options.bench_result) raw = read_input(*options.bench_result, "a raw benchmark result");
  const auto benchmark = metrics::power::load_benchmark_data(raw, options.window);
  if (raw && raw->state != InputFile::State::kRead)
    log::warn("{}: {}: {}", options.command, options.bench_result->string(),
              raw->state == InputFile::State::kMissing ? std::string("no such file") : raw->error);
  return metrics::power::evaluate_power(benchmark, read_input(options.csv, "a GPU telemetry CSV"),
                                        options.expected_num_gpus);
}

std::optional<bj::object> patch_record(PowerEvaluation& evaluation, const bj::object& record) {
  auto patched = metrics::power::patch_power_record(record, evaluation.power_valid(), evaluation.metrics);
  if (patched) return patched;
  evaluation.invalidate("aggregate_result_unwritable");
  return metrics::power::patch_power_record(record, false, {});
}

void patch_record_file(PowerEvaluation& evaluation, const fs::path& record_path, const std::string& command) {
  const InputFile file = read_input(record_path, "an aggregated record");
  if (file.state == InputFile::State::kMissing) {
    evaluation.invalidate("aggregate_result_missing");
    log::warn("{}: {}: no such record; nothing patched", command, record_path.string());
    return;
  }
  auto value = file.state == InputFile::State::kRead ? json::parse(file.text, record_path.string())
                                                     : Result<bj::value>(fail(ErrorCode::kIo, file.error));
  std::optional<bj::object> patched;
  if (value && value->is_object())
    patched = metrics::power::patch_power_record(value->as_object(), evaluation.power_valid(), evaluation.metrics);
  Result<void> written = patched
                             ? files::write_file(record_path, python_dump(*patched))
                             : Result<void>(fail(ErrorCode::kInvalidArgument, "not a JSON object with finite metrics"));
  if (written) return;
  evaluation.invalidate("aggregate_result_unwritable");
  log::warn("{}: failed to patch {}: {}", command, record_path.string(),
            value ? written.error().message() : value.error().message());
}

int finish_power_step(const PowerEvaluation& evaluation, const PowerStepOptions& options) {
  const std::string stem = options.csv.stem().string();
  const auto check = metrics::power::cross_check_accumulator(
      read_input(options.csv, "a GPU telemetry CSV"),
      read_input(sibling(options.csv, stem + "_energy_start.csv"), "an energy snapshot"),
      read_input(sibling(options.csv, stem + "_energy_end.csv"), "an energy snapshot"));
  const std::optional<std::string> bench =
      options.bench_result ? std::optional(metrics::power::python_path_string(options.bench_result->string()))
                           : std::nullopt;
  const bj::object payload = metrics::power::validation_payload(
      evaluation, metrics::power::python_path_string(options.csv.string()), bench, check);
  const int failed = options.require_power ? kExitFailure : kExitOk;
  std::error_code ec;
  if (options.validation_result.has_parent_path()) fs::create_directories(options.validation_result.parent_path(), ec);
  if (auto ok = files::write_file(options.validation_result, python_dump(payload)); !ok) {
    log::error("{}: failed to write validation artifact {}: {}", options.command, options.validation_result.string(),
               ok.error().message());
    return failed;
  }
  print_notes(evaluation, options);
  if (!evaluation.power_valid()) {
    log::warn("{}: power validation failed: {} (details: {})", options.command, joined(evaluation.reasons),
              options.validation_result.string());
    return failed;
  }
  const auto& m = evaluation.integration;
  log::info("{}: avg_power_w={:.2f} avg_total_gpu_power_w={:.2f} total_gpu_energy_j={:.2f} (n={})", options.command,
            *m.avg_power_w, *m.avg_total_gpu_power_w, *m.total_gpu_energy_j, m.observed_gpu_ids.size());
  return kExitOk;
}

}  // namespace ix::cli
