#include "changelog/source.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "common/file_io.h"
#include "common/subprocess.h"

namespace ix::changelog {
namespace {

constexpr size_t kMaxChangelogBytes = size_t{64} << 20;

Result<Source> read_git(const std::string& ref, const std::string& path_in_repo) {
  auto bytes = read_at_ref(ref, path_in_repo);
  if (!bytes) return std::unexpected(bytes.error());
  return Source{ref + ":" + path_in_repo, std::move(*bytes)};
}

}  // namespace

Result<std::string> read_at_ref(const std::string& ref, const std::string& path) {
  const std::string spec = ref + ":" + path;
  auto result = run_git({"show", spec}, kMaxChangelogBytes + 1);
  if (!result) return std::unexpected(result.error());
  if (result->size() > kMaxChangelogBytes)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("git show {}: more than {} MiB", spec, kMaxChangelogBytes >> 20));
  return result;
}

Result<Source> read_source(const std::string& value, const std::string& path_in_repo) {
  std::error_code error;
  if (std::filesystem::is_regular_file(value, error)) {
    auto bytes = files::read_text_file(value, kMaxChangelogBytes, "a perf-changelog.yaml file");
    if (!bytes) return std::unexpected(bytes.error());
    return Source{value, std::move(*bytes)};
  }
  auto from_git = read_git(value, path_in_repo);
  if (from_git) return from_git;
  return fail(ErrorCode::kNotFound,
              fmt::format("'{}' is neither a file (no regular file at that path) nor a git ref with {} in the current "
                          "directory's repository ({}); pass an existing file or a ref such as origin/main",
                          value, path_in_repo, from_git.error().message()));
}

}  // namespace ix::changelog
