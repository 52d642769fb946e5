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

Result<GoldenAlRules> golden_al_rules(const bj::object& object, std::string_view source) {
  GoldenAlRules rules;
  const bj::value* value = object.if_contains("golden_al");
  if (!value) return rules;
  const bj::object* golden = value->if_object();
  if (!golden) return fail(ErrorCode::kInvalidArgument, fmt::format("{}: golden_al must be an object", source));
  auto drafts = strings(*golden, "draft_length_settings", source);
  if (!drafts) return std::unexpected(drafts.error());
  rules.draft_length_settings = std::move(*drafts);
  auto forced = named(*golden, "forced_settings", "name", source);  // each an object with name and why
  if (!forced) return std::unexpected(forced.error());
  for (size_t i = 0; i < forced->size(); ++i) {
    const auto& setting = golden->at("forced_settings").as_array()[i].as_object();
    auto frameworks = strings(setting, "frameworks", source);
    if (!frameworks) return std::unexpected(frameworks.error());
    const bj::value* minus_one = setting.if_contains("minus_one");
    if (minus_one && !minus_one->is_bool())
      return fail(ErrorCode::kInvalidArgument, fmt::format("{}: forced_settings minus_one must be a boolean", source));
    rules.forced_settings.push_back(
        {(*forced)[i].name, std::move(*frameworks), minus_one && minus_one->get_bool(), (*forced)[i].why});
  }
  return rules;
}

Result<std::vector<ProseSetting>> prose_settings(const bj::object& object, std::string_view source) {
  std::vector<ProseSetting> out;
  const bj::value* value = object.if_contains("prose_settings");
  if (!value) return out;
  if (!value->is_array())
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}: prose_settings must be a list", source));
  for (const auto& item : value->get_array()) {
    const bj::object* setting = item.if_object();
    const bj::value* name = setting ? setting->if_contains("name") : nullptr;
    if (!name || !name->is_string())
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{}: each prose_settings item needs a string \"name\"", source));
    auto phrases = strings(*setting, "phrases", source);
    if (!phrases) return std::unexpected(phrases.error());
    auto recipe = strings(*setting, "recipe", source);
    if (!recipe) return std::unexpected(recipe.error());
    const bj::value* config = setting->if_contains("config");
    if (config && !config->is_string())
      return fail(ErrorCode::kInvalidArgument, fmt::format("{}: prose_settings config must be a string", source));
    out.push_back({std::string(name->get_string()), std::move(*phrases), std::move(*recipe),
                   config ? std::string(config->get_string()) : std::string()});
  }
  return out;
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
  auto golden = golden_al_rules(object, source_name);
  if (!golden) return std::unexpected(golden.error());
  rules.golden_al = std::move(*golden);
  auto prose = prose_settings(object, source_name);
  if (!prose) return std::unexpected(prose.error());
  rules.prose_settings = std::move(*prose);
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
