// Scratch directories and whole-file reads for tests.
#pragma once

#include <filesystem>
#include <string>

namespace ix::testing {

// A fresh empty directory <temp>/ixbench_<name>_<pid> (removed first if a crashed run left it).
std::filesystem::path scratch_dir(const std::string& name);

// The file's bytes; empty when it cannot be read.
std::string read_whole_file(const std::filesystem::path& path);

}  // namespace ix::testing
