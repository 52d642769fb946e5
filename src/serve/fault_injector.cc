#include "serve/fault_injector.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace ix::serve {

Result<void> validate(const FaultOptions& options) {
  auto check_rate = [](double rate, const char* flag) -> Result<void> {
    if (!(rate >= 0.0 && rate <= 1.0)) {
      return fail(ErrorCode::kInvalidArgument, fmt::format("{} must be in [0, 1], got {}", flag, rate));
    }
    return {};
  };
  for (auto [rate, flag] :
       {std::pair{options.error_rate, "--fault-error-rate"}, std::pair{options.stall_rate, "--fault-stall-rate"},
        std::pair{options.drop_rate, "--fault-drop-rate"}, std::pair{options.malformed_rate, "--fault-malformed-rate"},
        std::pair{options.short_rate, "--fault-short-rate"}}) {
    if (auto ok = check_rate(rate, flag); !ok) return ok;
  }
  if (options.error_codes.empty()) return fail(ErrorCode::kInvalidArgument, "--fault-error-codes must not be empty");
  for (int code : options.error_codes) {
    if (code < 400 || code > 599) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--fault-error-codes: {} is not an HTTP error status (400..599)", code));
    }
  }
  for (auto [ms, flag] : {std::pair{options.stall_ms, "--fault-stall-ms"},
                          std::pair{options.health_delay_ms, "--fault-health-delay-ms"}}) {
    if (ms < 0 || ms > kMaxFaultDelayMs) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{} must be in [0, {}] (one day), got {}", flag, kMaxFaultDelayMs, ms));
    }
  }
  return {};
}

Result<std::vector<int>> parse_error_codes(const std::string& text) {
  std::vector<int> codes;
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int code = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), code);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--fault-error-codes: '{}' is not a status code (expected e.g. 429,500,503)", item));
    }
    codes.push_back(code);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return codes;
}

FaultInjector::FaultInjector(FaultOptions options, int64_t start_ns)
    : options_(std::move(options)), start_ns_(start_ns), rng_(Rng::stream(options_.seed, "sim-serve-faults")) {}

FaultPlan FaultInjector::plan(int32_t max_tokens) {
  FaultPlan plan;
  if (!options_.any_request_fault()) return plan;
  std::lock_guard lock(mutex_);
  // Always the same number of draws per request, so one fault kind's rate never shifts another's.
  double u_error = rng_.uniform01();
  double u_stall = rng_.uniform01();
  double u_drop = rng_.uniform01();
  double u_malformed = rng_.uniform01();
  double u_short = rng_.uniform01();
  auto position = [&] {
    return static_cast<int32_t>(rng_.uniform_int(1, std::max<int64_t>(1, static_cast<int64_t>(max_tokens) - 1)));
  };
  int32_t stall_at = position();
  int32_t drop_at = position();
  int32_t malformed_at = position();
  int32_t short_at = position();
  auto code_index = rng_.uniform_int(0, static_cast<int64_t>(options_.error_codes.size()) - 1);
  if (u_error < options_.error_rate) {
    plan.error_status = options_.error_codes[static_cast<size_t>(code_index)];
    return plan;
  }
  if (u_stall < options_.stall_rate) {
    plan.stall_after = stall_at;
    plan.stall_ms = options_.stall_ms;
  }
  if (u_drop < options_.drop_rate) plan.drop_after = drop_at;
  if (u_malformed < options_.malformed_rate) plan.malformed_after = malformed_at;
  if (u_short < options_.short_rate && max_tokens > 1) plan.short_tokens = short_at;
  return plan;
}

bool FaultInjector::health_ready(int64_t now_ns) const {
  return now_ns - start_ns_ >= options_.health_delay_ms * 1'000'000;
}

}  // namespace ix::serve
