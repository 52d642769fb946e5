#include "config/yaml_reader.h"

#include <fmt/format.h>

#include <set>

namespace ix::config {

std::unexpected<Error> yaml_error(std::string_view source, const YamlNode& node, std::string_view message) {
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("{}:{}:{}: {}", source, node.mark.line, node.mark.column, message));
}

Result<std::string> YamlReader::string(const YamlNode& node, std::string_view key) const {
  if (!node.is_scalar()) return error(node, fmt::format("'{}' must be a string, got {}", key, node.describe()));
  return node.scalar;
}

Result<void> YamlReader::each(const YamlNode& map, std::string_view what,
                              const std::map<std::string, Handler>& handlers) const {
  if (!map.is_map()) return error(map, fmt::format("{} must be a mapping, got {}", what, map.describe()));
  std::set<std::string> seen;
  for (const auto& [key, value] : map.entries) {
    if (repeated_keys_ == RepeatedKeys::kRefuse && !seen.insert(key.scalar).second)
      return error(key, fmt::format("{}: '{}' is given twice", what, key.scalar));
    auto handler = handlers.find(key.scalar);
    if (handler == handlers.end()) {
      std::string known;
      for (const auto& [name, unused] : handlers) known += (known.empty() ? "" : ", ") + name;
      return error(key, unknown_key_(what, key.scalar, known));
    }
    if (auto ok = handler->second(value); !ok) return ok;
  }
  return {};
}

}  // namespace ix::config
