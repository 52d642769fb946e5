#include "store/backend.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

namespace ix::store {
namespace {

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

}  // namespace

std::string dialect_sql(std::string_view sql, Dialect dialect) {
  std::string text(sql);
  const bool sqlite = dialect == Dialect::kSqlite;
  replace_all(text, "{autoid}", sqlite ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGSERIAL PRIMARY KEY");
  replace_all(text, "{double}", sqlite ? "REAL" : "DOUBLE PRECISION");
  return text;
}

bool retry_after_pause(int attempt) {
  // About a minute in all: pauses grow from 2 ms to 200 ms, jittered so two writers that
  // collided do not collide again in step.
  constexpr int kMaxAttempts = 320;
  if (attempt >= kMaxAttempts) return false;
  thread_local std::minstd_rand jitter(static_cast<unsigned>(::getpid()) ^ static_cast<unsigned>(attempt));
  const int base_ms = std::min(200, 2 << std::min(attempt, 7));
  const int pause_ms = base_ms / 2 + static_cast<int>(jitter() % static_cast<unsigned>(base_ms / 2 + 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  return true;
}

}  // namespace ix::store
