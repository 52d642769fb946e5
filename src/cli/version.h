// Build identity, generated at build time by cmake/gen_version.cmake.
#pragma once

namespace ix::cli {
const char* version_string();
const char* git_hash();  // short hash, "-dirty" when built from a modified tree
}  // namespace ix::cli
