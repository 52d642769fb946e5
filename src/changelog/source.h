// Where a changelog comes from: `--base`/`--head` name a file or a git ref. An existing regular
// file wins; otherwise the value is a ref, read with `git show <ref>:<path>` in the current
// directory's repository; when neither works the error names both tries.
#pragma once

#include <string>

#include "changelog/check.h"
#include "common/error.h"

namespace ix::changelog {

inline constexpr const char* kDefaultChangelogPath = "perf-changelog.yaml";

// `value` as given on the command line; `path_in_repo` the file's path inside the repository (for
// refs). The Source's label is the file path, or "<ref>:<path_in_repo>".
Result<Source> read_source(const std::string& value, const std::string& path_in_repo);

// A file's bytes at a git ref (`git show <ref>:<path>` in the current directory's repository;
// `path` relative to the repository root, or "./..." relative to the current directory). Errors
// carry git's own words; files over 64 MiB are refused.
Result<std::string> read_at_ref(const std::string& ref, const std::string& path);

}  // namespace ix::changelog
