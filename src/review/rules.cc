#include "review/rules.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdlib>

#include "common/json_io.h"

namespace ix::review {
namespace {

namespace bj = boost::json;

Result<std::vector<std::string>> strings(const bj::object& object, std::string_view key, std::string_view source) {
  std::vector<std::string> out;
  const bj::value* value = object.if_contains(key);
  if (!value) return out;
  if (!value->is_array()) return fail(ErrorCode::kInvalidArgument, fmt::format("{}: {} must be a list", source, key));
  for (const auto& item : value->get_array()) {
    if (!item.is_string())
      return fail(ErrorCode::kInvalidArgument, fmt::format("{}: {} must hold strings", source, key));
    out.emplace_back(item.get_string());
  }
  return out;
}

Result<std::vector<NamedRule>> named(const bj::object& object, std::string_view key, std::string_view name_key,
                                     std::string_view source) {
  std::vector<NamedRule> out;
  const bj::value* value = object.if_contains(key);
  if (!value) return out;
  if (!value->is_array()) return fail(ErrorCode::kInvalidArgument, fmt::format("{}: {} must be a list", source, key));
  for (const auto& item : value->get_array()) {
    const bj::object* rule = item.if_object();
    const bj::value* name = rule ? rule->if_contains(name_key) : nullptr;
    const bj::value* why = rule ? rule->if_contains("why") : nullptr;
    if (!name || !name->is_string() || !why || !why->is_string())
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{}: each {} item needs string \"{}\" and \"why\"", source, key, name_key));
    auto only_with = strings(*rule, "only_with", source);
    if (!only_with) return std::unexpected(only_with.error());
    out.push_back({std::string(name->get_string()), std::string(why->get_string()), std::move(*only_with)});
  }
  return out;
}

Result<const bj::object*> section(const bj::object& object, std::string_view key, std::string_view source) {
  const bj::value* value = object.if_contains(key);
  if (!value || !value->is_object())
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}: {} must be an object", source, key));
  return &value->get_object();
}

Result<std::string> text(const bj::object& object, std::string_view key, std::string_view source) {
  const bj::value* value = object.if_contains(key);
  if (!value || !value->is_string() || value->get_string().empty())
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}: {} must be a non-empty string", source, key));
  return std::string(value->get_string());
}

Result<UpstreamImages> upstream_images(const bj::object& object, std::string_view source) {
  auto upstream = section(object, "upstream_images", source);
  if (!upstream) return std::unexpected(upstream.error());
  auto why = text(**upstream, "why", source);
  auto frameworks = strings(**upstream, "frameworks", source);
  auto registries = strings(**upstream, "registries", source);
  if (!why) return std::unexpected(why.error());
  if (!frameworks) return std::unexpected(frameworks.error());
  if (!registries) return std::unexpected(registries.error());
  return UpstreamImages{std::move(*why), std::move(*frameworks), std::move(*registries)};
}

Result<VariantLookup> variant_lookup(const bj::object& object, std::string_view source) {
  auto lookup = section(object, "variant_lookup", source);
  if (!lookup) return std::unexpected(lookup.error());
  auto why = text(**lookup, "why", source);
  auto dispatcher = text(**lookup, "dispatcher", source);
  auto suffix = text(**lookup, "agentic_suffix", source);
  if (!why) return std::unexpected(why.error());
  if (!dispatcher) return std::unexpected(dispatcher.error());
  if (!suffix) return std::unexpected(suffix.error());
  return VariantLookup{std::move(*why), std::move(*dispatcher), std::move(*suffix)};
}

}  // namespace

Result<Rules> parse_rules(std::string_view json_text, std::string_view source_name) {
  auto parsed = json::parse(json_text, source_name);
  if (!parsed) return std::unexpected(parsed.error());
  if (!parsed->is_object()) return fail(ErrorCode::kInvalidArgument, fmt::format("{}: not an object", source_name));
  const auto& object = parsed->get_object();
  Rules rules;
  auto prefixes = strings(object, "engine_env_prefixes", source_name);
  if (!prefixes) return std::unexpected(prefixes.error());
  rules.engine_env_prefixes = std::move(*prefixes);
  auto precision = named(object, "precision_lowering_env", "name", source_name);
  if (!precision) return std::unexpected(precision.error());
  rules.precision_lowering_env = std::move(*precision);
  auto patches = named(object, "engine_patch_patterns", "pattern", source_name);
  if (!patches) return std::unexpected(patches.error());
  rules.engine_patch_patterns = std::move(*patches);
  auto upstream = upstream_images(object, source_name);
  if (!upstream) return std::unexpected(upstream.error());
  rules.upstream_images = std::move(*upstream);
  auto lookup = variant_lookup(object, source_name);
  if (!lookup) return std::unexpected(lookup.error());
  rules.variant_lookup = std::move(*lookup);
  return rules;
}

const Rules& default_rules() {
  static const Rules rules = [] {
    auto parsed = parse_rules(embedded_rules_json(), "data/review/rules.json");
    if (!parsed) {
      fmt::print(stderr, "ixbench: internal error: {}\n", parsed.error().message());
      std::abort();
    }
    return std::move(*parsed);
  }();
  return rules;
}

}  // namespace ix::review
