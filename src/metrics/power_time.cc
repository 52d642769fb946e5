// Timestamp cells as aggregate_power.py's _parse_timestamp() reads them: a plain number, then
// nvidia-smi's strptime formats, then Python 3.11's datetime.fromisoformat(). Naive times are
// local (mktime), and the seconds are formed as CPython forms them: for a naive time
// float(whole seconds) + microseconds / 1e6, for an aware one microseconds / 1e6 in one division.
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

#include "common/strings.h"
#include "metrics/power.h"

namespace ix::metrics::power {
namespace {

struct Civil {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  int64_t microsecond = 0;
  std::optional<int64_t> offset_s;  // aware: seconds east of UTC
};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A cursor over the cell with the small readers the formats need.
struct Cursor {
  std::string_view text;
  size_t pos = 0;
  bool done() const { return pos == text.size(); }
  bool eat(char c) {
    if (pos < text.size() && text[pos] == c) return ++pos, true;
    return false;
  }
  // Between `min` and `max` digits (greedy).
  std::optional<int> digits(size_t min, size_t max) {
    size_t n = 0;
    int value = 0;
    while (n < max && pos < text.size() && is_digit(text[pos])) value = value * 10 + (text[pos++] - '0'), ++n;
    if (n < min) return std::nullopt;
    return value;
  }
  // A fraction of a second: 1+ digits, the first six kept (as microseconds).
  std::optional<int64_t> fraction(bool allow_more) {
    size_t n = 0;
    int64_t micro = 0;
    while (pos < text.size() && is_digit(text[pos]) && (n < 6 || allow_more)) {
      if (n < 6) micro = micro * 10 + (text[pos] - '0');
      ++pos, ++n;
    }
    if (n == 0) return std::nullopt;
    for (size_t k = std::min<size_t>(n, 6); k < 6; ++k) micro *= 10;
    return micro;
  }
};

bool is_leap(int year) {
  return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

bool valid(const Civil& c) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (c.year < 1 || c.month < 1 || c.month > 12 || c.day < 1) return false;
  const int days = kDays[c.month - 1] + (c.month == 2 && is_leap(c.year) ? 1 : 0);
  return c.day <= days && c.hour <= 23 && c.minute <= 59 && c.second <= 59;
}

// "%Y/%m/%d %H:%M:%S.%f" or "%Y/%m/%d %H:%M:%S" (a format space matches 1+ white space).
std::optional<Civil> parse_nvidia(std::string_view text) {
  Cursor in{text};
  Civil c;
  auto year = in.digits(4, 4);
  if (!year || !in.eat('/')) return std::nullopt;
  auto month = in.digits(1, 2);
  if (!month || !in.eat('/')) return std::nullopt;
  auto day = in.digits(1, 2);
  if (!day) return std::nullopt;
  size_t spaces = 0;
  while (!in.done() && std::string_view(" \t\n\r\f\v").find(text[in.pos]) != std::string_view::npos) ++in.pos, ++spaces;
  auto hour = spaces ? in.digits(1, 2) : std::nullopt;
  if (!hour || !in.eat(':')) return std::nullopt;
  auto minute = in.digits(1, 2);
  if (!minute || !in.eat(':')) return std::nullopt;
  auto second = in.digits(1, 2);
  if (!second) return std::nullopt;
  c = {*year, *month, *day, *hour, *minute, *second, 0, std::nullopt};
  if (in.eat('.')) {
    auto micro = in.fraction(false);
    if (!micro) return std::nullopt;
    c.microsecond = *micro;
  }
  return in.done() && valid(c) ? std::optional<Civil>(c) : std::nullopt;
}

// HH[:MM[:SS[.f+]]] or HH[MM[SS[.f+]]] (fromisoformat's parse_hh_mm_ss_ff).
bool parse_clock(Cursor& in, Civil& c) {
  auto hour = in.digits(2, 2);
  if (!hour) return false;
  c.hour = *hour;
  if (in.done()) return true;
  const bool extended = in.eat(':');
  auto minute = in.digits(2, 2);
  if (!minute) return false;
  c.minute = *minute;
  if (in.done()) return true;
  if (extended && !in.eat(':')) return false;
  auto second = in.digits(2, 2);
  if (!second) return false;
  c.second = *second;
  if (in.done()) return true;
  if (!in.eat('.') && !in.eat(',')) return false;
  auto micro = in.fraction(true);
  if (!micro) return false;
  c.microsecond = *micro;
  return in.done();
}

// "Z" or +HH[:MM[:SS[.f]]] after the time.
bool parse_offset(std::string_view text, Civil& c) {
  if (text == "Z") {
    c.offset_s = 0;
    return true;
  }
  Civil offset;
  Cursor in{text.substr(1)};
  if (!parse_clock(in, offset) || offset.hour > 23 || offset.minute > 59 || offset.second > 59) return false;
  const int64_t seconds = offset.hour * 3600 + offset.minute * 60 + offset.second;
  c.offset_s = text[0] == '-' ? -seconds : seconds;
  return true;
}

std::optional<Civil> parse_iso(std::string_view text) {
  Cursor in{text};
  Civil c;
  auto year = in.digits(4, 4);
  if (!year) return std::nullopt;
  const bool extended = in.eat('-');
  auto month = in.digits(2, 2);
  if (!month || (extended && !in.eat('-'))) return std::nullopt;
  auto day = in.digits(2, 2);
  if (!day) return std::nullopt;
  c.year = *year, c.month = *month, c.day = *day;
  if (!in.done()) {
    ++in.pos;  // any one separator character
    std::string_view rest = text.substr(in.pos);
    const size_t tz = rest.find_first_of("+-Z");
    Cursor clock{rest.substr(0, tz)};
    if (!parse_clock(clock, c)) return std::nullopt;
    if (tz != std::string_view::npos && !parse_offset(rest.substr(tz), c)) return std::nullopt;
  }
  return valid(c) ? std::optional<Civil>(c) : std::nullopt;
}

std::optional<double> to_unix(const Civil& c) {
  std::tm tm{};
  tm.tm_year = c.year - 1900;
  tm.tm_mon = c.month - 1;
  tm.tm_mday = c.day;
  tm.tm_hour = c.hour;
  tm.tm_min = c.minute;
  tm.tm_sec = c.second;
  if (c.offset_s) {
    const int64_t utc = static_cast<int64_t>(timegm(&tm)) - *c.offset_s;
    return static_cast<double>(utc * 1000000 + c.microsecond) / 1e6;
  }
  tm.tm_isdst = -1;
  const std::time_t local = std::mktime(&tm);
  return static_cast<double>(local) + static_cast<double>(c.microsecond) / 1e6;
}

// _NUMBER_RE.fullmatch: -?\d+(?:\.\d+)?
bool is_plain_number(std::string_view text) {
  size_t i = text.starts_with('-') ? 1 : 0;
  const size_t first = i;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i == first) return false;
  if (i == text.size()) return true;
  if (text[i] != '.' || i + 1 == text.size()) return false;
  for (++i; i < text.size(); ++i)
    if (!is_digit(text[i])) return false;
  return true;
}

}  // namespace

std::optional<double> parse_timestamp(std::string_view cell) {
  const std::string_view text = strip(cell);
  if (text.empty()) return std::nullopt;
  if (is_plain_number(text)) {
    const double n = std::strtod(std::string(text).c_str(), nullptr);
    return n > 1e12 ? n / 1000.0 : n;
  }
  if (auto civil = parse_nvidia(text)) return to_unix(*civil);
  std::string iso(text);
  if (iso.find(' ') != std::string::npos && iso.find('T') == std::string::npos) iso[iso.find(' ')] = 'T';
  if (auto civil = parse_iso(iso)) return to_unix(*civil);
  return std::nullopt;
}

std::optional<double> iso_to_unix(std::string_view text, std::optional<int64_t> naive_offset_s, bool* naive) {
  auto civil = parse_iso(text);
  if (naive) *naive = civil && !civil->offset_s;
  if (!civil) return std::nullopt;
  if (!civil->offset_s) {
    if (!naive_offset_s) return std::nullopt;
    civil->offset_s = naive_offset_s;
  }
  return to_unix(*civil);
}

}  // namespace ix::metrics::power
