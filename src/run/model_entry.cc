// A row's model entry (the variant rule) and the speculative-decoding settings it gives: draft
// length, thinking mode and the golden acceptance length forced on throughput runs (SPEC §7).
#include <fmt/format.h>

#include <boost/json.hpp>
#include <charconv>
#include <cmath>

#include "common/strings.h"
#include "config/golden_al.h"
#include "run/recipe.h"
#include "run/recipe_internal.h"

namespace ix::run {
namespace {

namespace bj = boost::json;

std::unexpected<Error> invalid(std::string message) {
  return fail(ErrorCode::kInvalidArgument, std::move(message));
}

std::string variant_suffix(const sweep::SweepRow& row) {
  if (row.is_multinode()) return row.is_agentic() ? "-agentic-disagg" : "-disagg";
  return row.is_agentic() ? "-agentic" : "";
}

std::string row_text(const sweep::SweepRow& row, std::string_view hardware) {
  return fmt::format("model-prefix {}, precision {}, hardware {}, {} {}", row.model_prefix, row.precision, hardware,
                     row.is_multinode() ? "multi-node" : "single-node", scenario_name(row));
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "'" : ", '") + item + "'";
  return out;
}

// Entries of the row's model-prefix that serve other row kinds: named in the error, never used.
std::string other_variants(const YamlRecipe& recipe, const std::string& prefix) {
  std::string out;
  for (const auto& entry : recipe.file.models) {
    if (entry.key != prefix && !entry.key.starts_with(prefix + "-")) continue;
    out += fmt::format("{}'{}' ({}:{})", out.empty() ? "" : ", ", entry.key, recipe.file.path.filename().string(),
                       entry.mark.line);
  }
  return out;
}

// The row's entry by model_entry_keys(); nullptr when the recipe allows none and holds nothing for
// the model-prefix.
Result<const CompiledModelEntry*> find_entry(const YamlRecipe& recipe, const RecipeInputs& in) {
  const sweep::SweepRow& row = *in.row;
  const std::string hardware = ascii_lower(in.hardware);
  const auto keys = model_entry_keys(row, hardware);
  for (const auto& key : keys) {
    for (const auto& entry : recipe.models) {
      if (recipe.file.models[entry.index].key == key) return &entry;
    }
  }
  const std::string others = other_variants(recipe, row.model_prefix);
  const bool spec = row.spec_decoding != config::SpecDecoding::kNone;
  if (!recipe.file.model_entry_required && others.empty() && !spec) return nullptr;
  std::string why = recipe.file.model_entry_required ? "this recipe needs a model entry for every row"
                    : spec                           ? "a spec-decoding row needs one (num-spec-tokens, golden-al)"
                                                     : "entries for this model-prefix exist";
  return invalid(fmt::format(
      "{}: no model entry for this row ({}); {}. Tried, in order: {}.{} Add one of those keys under 'models:' "
      "(an entry for another row kind is never used in its place; docs/recipes.md, the variant rule)",
      recipe.file.path.string(), row_text(row, hardware), why, quoted_list(keys),
      others.empty() ? std::string()
                     : fmt::format(" Entries for {} that serve other row kinds: {}.", row.model_prefix, others)));
}

// A KEY=value of the row's additional-settings (multi-node rows; decode side first).
std::optional<std::string> row_setting(const sweep::SweepRow& row, std::string_view key) {
  const std::string prefix = std::string(key) + "=";
  for (const auto* worker : {&row.decode, &row.prefill}) {
    for (const auto& setting : worker->additional_settings) {
      if (setting.starts_with(prefix)) return setting.substr(prefix.size());
    }
  }
  return std::nullopt;
}

// The draft length: the row's DECODE_MTP_SIZE setting (multi-node), else the entry's
// num-spec-tokens.
Result<int64_t> draft_length(const YamlRecipe& recipe, const RecipeInputs& in, const config::RecipeModelEntry& entry) {
  if (auto text = row_setting(*in.row, "DECODE_MTP_SIZE")) {
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc() || ptr != text->data() + text->size() || value < 1)
      return invalid(
          fmt::format("the row's additional-settings DECODE_MTP_SIZE={} is not a positive draft length", *text));
    return value;
  }
  if (entry.num_spec_tokens > 0) return entry.num_spec_tokens;
  return invalid(fmt::format(
      "{}:{}: model entry '{}' gives no 'num-spec-tokens', which a spec-decoding row ({}) needs "
      "as its draft length",
      recipe.file.path.string(), entry.mark.line, entry.key, config::spec_decoding_name(in.row->spec_decoding)));
}

// The golden curve's thinking mode: the row's THINKING_MODE setting, else the entry's `thinking`,
// else on (InferenceX's default THINKING_MODE, and what AgentX measures).
Result<bool> thinking_mode(const RecipeInputs& in, const config::RecipeModelEntry& entry) {
  if (auto text = row_setting(*in.row, "THINKING_MODE")) {
    if (*text != "thinking_on" && *text != "thinking_off")
      return invalid(
          fmt::format("the row's additional-settings THINKING_MODE={} is not thinking_on or thinking_off", *text));
    return *text == "thinking_on";
  }
  return entry.thinking.value_or(true);
}

// A row that names its own AL (SYNTHETIC_ACCEPTANCE_LENGTH=...) must name the golden one.
Result<void> check_row_al(const RecipeInputs& in, double golden) {
  auto text = row_setting(*in.row, "SYNTHETIC_ACCEPTANCE_LENGTH");
  if (!text) return {};
  double value = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec == std::errc() && ptr == text->data() + text->size() && std::abs(value - golden) < 1e-9) return {};
  return invalid(
      fmt::format("the row's additional-settings SYNTHETIC_ACCEPTANCE_LENGTH={} differs from the golden "
                  "acceptance length {}: remove it or set it to the golden value (SPEC §7)",
                  *text, decimal(golden)));
}

Result<double> golden_al(const YamlRecipe& recipe, const RecipeInputs& in, const config::RecipeModelEntry& entry,
                         bool thinking, int64_t draft) {
  const std::string what = fmt::format("golden acceptance length for row model {} (thinking {}, draft length {})",
                                       in.row->model, thinking ? "on" : "off", draft);
  if (!entry.golden_al)
    return invalid(
        fmt::format("{}:{}: model entry '{}' names no golden-al {{file, model}}; the {} is forced on every "
                    "throughput run (SPEC §7)",
                    recipe.file.path.string(), entry.mark.line, entry.key, what));
  if (in.golden_al_dir.empty())
    return invalid(
        fmt::format("{}: no golden_al_distribution folder given (--golden-al-dir), so {} cannot be read "
                    "from {} ({}:{})",
                    recipe.file.path.string(), what, entry.golden_al->file, recipe.file.path.filename().string(),
                    entry.golden_al->mark.line));
  auto file = config::load_golden_al(in.golden_al_dir / entry.golden_al->file);
  if (!file)
    return fail(file.error().with_context(
        fmt::format("{} (named by {}:{})", what, recipe.file.path.string(), entry.golden_al->mark.line)));
  auto al = config::find_golden_al(*file, entry.golden_al->model, thinking, draft);
  if (!al)
    return invalid(fmt::format("{}: {} (looked up by {}:{})", what, al.error().message(), recipe.file.path.string(),
                               entry.golden_al->mark.line));
  return al;
}

bj::object vars_json(const config::RecipeModelEntry& entry) {
  bj::object out;
  for (const auto& var : entry.vars) {
    switch (var.kind) {
      case config::RecipeVar::Kind::kBool: out[var.name] = var.bool_value; break;
      case config::RecipeVar::Kind::kInt: out[var.name] = var.int_value; break;
      case config::RecipeVar::Kind::kFloat: out[var.name] = var.float_value; break;
      case config::RecipeVar::Kind::kString: out[var.name] = var.text; break;
    }
  }
  return out;
}

Result<void> add_spec(const YamlRecipe& recipe, const RecipeInputs& in, const config::RecipeModelEntry& entry,
                      EntryContext& out) {
  auto draft = draft_length(recipe, in, entry);
  if (!draft) return std::unexpected(draft.error());
  auto thinking = thinking_mode(in, entry);
  if (!thinking) return std::unexpected(thinking.error());
  out.variables["num_spec_tokens"] = *draft;
  out.variables["thinking"] = *thinking;
  if (in.eval_run) return {};
  auto al = golden_al(recipe, in, entry, *thinking, *draft);
  if (!al) return std::unexpected(al.error());
  if (auto ok = check_row_al(in, *al); !ok) return std::unexpected(ok.error());
  out.forced_al = *al;
  out.variables["golden_al"] = decimal(*al);
  out.variables["golden_al_minus_one"] = decimal(*al - 1.0);
  return {};
}

}  // namespace

std::string decimal(double value) {
  return fmt::format("{}", std::round(value * 1e9) / 1e9);
}

std::string scenario_name(const sweep::SweepRow& row) {
  return row.is_agentic() ? "agentic-coding" : "fixed-seq-len";
}

std::vector<std::string> model_entry_keys(const sweep::SweepRow& row, std::string_view hardware) {
  const std::string suffix = variant_suffix(row);
  const std::string hw = ascii_lower(hardware);
  std::vector<std::string> keys;
  if (!hw.empty()) keys.push_back(fmt::format("{}-{}-{}{}", row.model_prefix, row.precision, hw, suffix));
  keys.push_back(fmt::format("{}-{}{}", row.model_prefix, row.precision, suffix));
  keys.push_back(row.model_prefix + suffix);
  return keys;
}

Result<EntryContext> entry_context(const Recipe& recipe, const RecipeInputs& in) {
  EntryContext out;
  out.variables = bj::object{{"model_key", ""},  {"model_vars", bj::object{}}, {"num_spec_tokens", 0},
                             {"thinking", true}, {"golden_al", nullptr},       {"golden_al_minus_one", nullptr}};
  auto entry = find_entry(*recipe.yaml, in);
  if (!entry) return std::unexpected(entry.error());
  out.entry = *entry;
  if (out.entry == nullptr) return out;
  const config::RecipeModelEntry& source = recipe.yaml->file.models[out.entry->index];
  out.variables["model_key"] = source.key;
  out.variables["model_vars"] = vars_json(source);
  if (in.row->spec_decoding == config::SpecDecoding::kNone) return out;
  if (auto ok = add_spec(*recipe.yaml, in, source, out); !ok) return std::unexpected(ok.error());
  return out;
}

}  // namespace ix::run
