#include "common/log.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <string>

#include "common/sanitize.h"
#include "common/strings.h"

namespace ix::log {
namespace {

std::atomic<Level> g_level{Level::kInfo};

std::string_view level_tag(Level level) {
  switch (level) {
    case Level::kTrace: return "TRACE";
    case Level::kDebug: return "DEBUG";
    case Level::kInfo: return "INFO";
    case Level::kWarn: return "WARN";
    case Level::kError: return "ERROR";
    case Level::kOff: return "OFF";
  }
  return "?";
}

}  // namespace

void set_level(Level level) {
  g_level.store(level, std::memory_order_relaxed);
}
Level level() {
  return g_level.load(std::memory_order_relaxed);
}

Result<Level> parse_level(std::string_view name) {
  const std::string lower = ascii_lower(name);
  if (lower == "trace") return Level::kTrace;
  if (lower == "debug") return Level::kDebug;
  if (lower == "info") return Level::kInfo;
  if (lower == "warn" || lower == "warning") return Level::kWarn;
  if (lower == "error") return Level::kError;
  if (lower == "off") return Level::kOff;
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("unknown log level '{}' (expected trace, debug, info, warn, error or off)", name));
}

void write(Level lvl, std::string_view message) {
  if (lvl < level() || lvl == Level::kOff) return;
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  // Messages quote servers, files and flags: no control character reaches the terminal.
  constexpr size_t kMaxMessage = size_t{1} << 16;
  std::string line = fmt::format("[{}.{:03d}] {:5} {}\n", ms / 1000, static_cast<int>(ms % 1000), level_tag(lvl),
                                 printable_lines(message, kMaxMessage));
  // One write so concurrent lines never interleave; a failed log write has nowhere to go.
  [[maybe_unused]] auto written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace ix::log
