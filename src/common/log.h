// Leveled logging to stderr. Results go to stdout or files, never through the log.
// Thread-safe: each message is formatted first and written with one write(2).
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "common/error.h"

namespace ix::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError, kOff };

void set_level(Level level);
Level level();
// Accepts trace|debug|info|warn|error|off (case-insensitive).
Result<Level> parse_level(std::string_view name);

void write(Level level, std::string_view message);

template <typename... Args>
void logf(Level lvl, fmt::format_string<Args...> format, Args&&... args) {
  if (lvl < level()) return;
  write(lvl, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... a) {
  logf(Level::kDebug, f, std::forward<Args>(a)...);
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... a) {
  logf(Level::kInfo, f, std::forward<Args>(a)...);
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... a) {
  logf(Level::kWarn, f, std::forward<Args>(a)...);
}
template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... a) {
  logf(Level::kError, f, std::forward<Args>(a)...);
}

}  // namespace ix::log
