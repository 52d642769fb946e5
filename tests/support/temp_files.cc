#include "support/temp_files.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace ix::testing {

std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("ixbench_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace ix::testing
