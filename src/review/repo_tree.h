// One revision of a benchmark repository for `ixbench review`: a directory, or a git ref of the
// current directory's repository. Files are read on demand (git: `git show`, once each), so a
// review of a small change in a large repository reads the few files the change touches.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace ix::review {

class RepoTree {
 public:
  // `value`: an existing directory, else a git ref (checked with `git rev-parse --verify`).
  static Result<RepoTree> open(const std::string& value);

  const std::string& label() const { return label_; }
  bool is_git() const { return !ref_.empty(); }
  const std::string& ref() const { return ref_; }
  // Every file path (repository-relative, '/'-separated, sorted).
  const std::vector<std::string>& files() const { return files_; }
  bool has(const std::string& path) const;
  // The file's bytes; nullopt when the revision has no such file (or it cannot be read).
  const std::optional<std::string>& read(const std::string& path) const;
  // Lines holding any of `words` as a whole word (one search for all of them; git: `git grep`):
  // path, 1-based line, the line's text. Binary files are skipped.
  struct Hit {
    std::string path;
    int line = 0;
    std::string text;
  };
  std::vector<Hit> grep_words(const std::vector<std::string>& words) const;

 private:
  std::string label_;
  std::string dir_;  // for a directory
  std::string ref_;  // for a git ref
  std::vector<std::string> files_;
  mutable std::map<std::string, std::optional<std::string>> cache_;
};

// Paths added, deleted or changed from base to head, sorted (git: `git diff --name-only`).
Result<std::vector<std::string>> changed_files(const RepoTree& base, const RepoTree& head);

}  // namespace ix::review
