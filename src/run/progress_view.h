// The run's progress on stderr: a line per job start and end with the counts (done, running,
// failed, of the total), and each running job's current step (the last line of its steps.log) when
// it changes. On a terminal the current step is one live line rewritten in place.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

namespace ix::run {

class ProgressView {
 public:
  ProgressView(std::FILE* out, size_t total);
  void started(const std::string& id, const std::filesystem::path& dir);
  void finished(const std::string& id, std::string_view outcome, bool failed, const std::string& note);
  void tick();
  void say(const std::string& text);

 private:
  struct Running {
    std::filesystem::path dir;
    std::string last_step;
  };
  std::string counts() const;
  void clear_live_line();
  std::FILE* out_;
  bool tty_;
  size_t total_, done_ = 0, failed_ = 0;
  std::map<std::string, Running> running_;
  bool live_shown_ = false;
};

}  // namespace ix::run
