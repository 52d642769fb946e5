#include "run/progress_view.h"

#include <fmt/format.h>
#include <unistd.h>

#include "run/process.h"

namespace ix::run {

ProgressView::ProgressView(std::FILE* out, size_t total)
    : out_(out), tty_(out && ::isatty(::fileno(out)) == 1), total_(total) {}

std::string ProgressView::counts() const {
  return fmt::format("[{}/{} done, {} running, {} failed]", done_, total_, running_.size(), failed_);
}

void ProgressView::clear_live_line() {
  if (live_shown_) std::fputs("\r\033[K", out_);
  live_shown_ = false;
}

void ProgressView::say(const std::string& text) {
  if (!out_) return;
  clear_live_line();
  std::fprintf(out_, "run: %s\n", text.c_str());
  std::fflush(out_);
}

void ProgressView::started(const std::string& id, const std::filesystem::path& dir) {
  running_[id] = {dir, ""};
  say(fmt::format("{} started {}", counts(), id));
}

void ProgressView::finished(const std::string& id, std::string_view outcome, bool failed, const std::string& note) {
  running_.erase(id);
  ++done_;
  if (failed) ++failed_;
  say(fmt::format("{} {} {}{}", counts(), id, outcome, note.empty() ? "" : ": " + note));
}

void ProgressView::tick() {
  if (!out_) return;
  for (auto& [id, job] : running_) {
    std::string last = tail_file(job.dir / "steps.log", 1);
    while (!last.empty() && last.back() == '\n') last.pop_back();
    if (last.empty() || last == job.last_step) continue;
    job.last_step = last;
    if (!tty_) say(fmt::format("{} {}", id, last));
  }
  if (!tty_ || running_.empty()) return;
  const auto& [id, job] = *running_.begin();
  std::string line = fmt::format("{} {}: {}", counts(), id, job.last_step);
  if (line.size() > 160) line = line.substr(0, 157) + "...";
  clear_live_line();
  std::fputs(line.c_str(), out_);
  std::fflush(out_);
  live_shown_ = true;
}

}  // namespace ix::run
