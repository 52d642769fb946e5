// Reading a YamlNode tree into typed structs, with errors that point into the source file:
// "<source>:<line>:<column>: <message>" (ErrorCode::kInvalidArgument). The recipe and lm-eval task
// readers derive from YamlReader and add their own typed reads; readers that need only the error
// call yaml_error().
#pragma once

#include <expected>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "config/yaml_tree.h"

namespace ix::config {

// "<source>:<line>:<column>: <message>" at `node`'s mark.
std::unexpected<Error> yaml_error(std::string_view source, const YamlNode& node, std::string_view message);

class YamlReader {
 public:
  // The message for a mapping key that no handler takes: `what` is each()'s name for the
  // mapping, `known` the handled keys in sorted order, ", "-separated.
  using UnknownKeyMessage = std::string (*)(std::string_view what, std::string_view key, std::string_view known);
  // Whether each() refuses a key that a mapping holds twice, or calls its handler again.
  enum class RepeatedKeys { kRefuse, kAllow };

  YamlReader(std::string source, UnknownKeyMessage unknown_key, RepeatedKeys repeated_keys)
      : source_(std::move(source)), unknown_key_(unknown_key), repeated_keys_(repeated_keys) {}

  std::unexpected<Error> error(const YamlNode& node, std::string_view message) const {
    return yaml_error(source_, node, message);
  }

  // Any scalar, as written; `key` names the value in the error.
  Result<std::string> string(const YamlNode& node, std::string_view key) const;

  // Calls handlers[key] for every entry of a mapping in document order; a key without a handler
  // is refused (listing the known ones), and so is a repeated key under RepeatedKeys::kRefuse.
  using Handler = std::function<Result<void>(const YamlNode&)>;
  Result<void> each(const YamlNode& map, std::string_view what, const std::map<std::string, Handler>& handlers) const;

 private:
  std::string source_;
  UnknownKeyMessage unknown_key_;
  RepeatedKeys repeated_keys_;
};

// Assigns the value of a Result-returning reader call to `target`, or returns its error.
#define IX_READ(target, expr)                                    \
  do {                                                           \
    auto read_value = (expr);                                    \
    if (!read_value) return std::unexpected(read_value.error()); \
    (target) = std::move(*read_value);                           \
  } while (false)

}  // namespace ix::config
