#include "http/client_retry.h"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <string>

namespace ix::http {
namespace {

// An HTTP-date in any of the three forms RFC 9110 §5.6.7 lets a recipient accept, as Unix seconds.
std::optional<double> parse_http_date(std::string_view value) {
  static constexpr const char* kForms[] = {
      "%a, %d %b %Y %H:%M:%S GMT",  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
      "%A, %d-%b-%y %H:%M:%S GMT",  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
      "%a %b %e %H:%M:%S %Y",       // asctime: Sun Nov  6 08:49:37 1994
  };
  const std::string text(value);
  for (const char* form : kForms) {
    std::tm tm{};
    const char* end = ::strptime(text.c_str(), form, &tm);
    if (end && *end == '\0') return static_cast<double>(::timegm(&tm));
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> parse_retry_after_ns(std::string_view value, double now_unix_s) {
  if (value.empty()) return std::nullopt;
  if (value.front() >= '0' && value.front() <= '9') {
    int64_t seconds = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (p != value.data() + value.size()) return std::nullopt;
    // Out of range: more seconds than int64 holds, longer than the cap in any case.
    if (ec == std::errc::result_out_of_range || seconds >= kRetryAfterCapNs / 1'000'000'000) return kRetryAfterCapNs;
    if (ec != std::errc()) return std::nullopt;
    return seconds * 1'000'000'000;
  }
  const auto date = parse_http_date(value);
  if (!date) return std::nullopt;
  const double wait_s = std::clamp(*date - now_unix_s, 0.0, static_cast<double>(kRetryAfterCapNs) / 1e9);
  return static_cast<int64_t>(std::llround(wait_s * 1e9));
}

int64_t full_jitter_backoff_ns(int attempt, double u01) {
  // base * 2^attempt reaches the cap by attempt 7; shifting further would overflow.
  const int64_t ceiling = attempt >= 20 ? kRetryMaxDelayNs : std::min(kRetryMaxDelayNs, kRetryBaseDelayNs << attempt);
  return static_cast<int64_t>(std::clamp(u01, 0.0, 1.0) * static_cast<double>(ceiling));
}

int64_t retry_delay_ns(int attempt, std::string_view retry_after, double now_unix_s, double u01) {
  if (auto wait = parse_retry_after_ns(retry_after, now_unix_s)) return *wait;
  return full_jitter_backoff_ns(std::max(attempt, 0), u01);
}

}  // namespace ix::http
