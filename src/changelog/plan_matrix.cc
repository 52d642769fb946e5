// A Plan's renderings (the CI matrix process_changelog.py prints, and text for people) and the
// matrix read back for `run --plan`.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <span>

#include "changelog/plan.h"
#include "common/json_io.h"
#include "sweep/row_parse.h"

namespace ix::changelog {
namespace {

namespace bj = boost::json;
using sweep::RowKind;
using sweep::SweepRow;

// One field of a pydantic model, in declaration order: printed when the row has it, else its
// default when the model has one that is not None (exclude_none drops the rest).
struct Field {
  std::string_view key;
  std::optional<bj::value> fallback = std::nullopt;
};

const bj::value kFalse(false);

std::vector<Field> single_node_fixed() {
  return {{"image"},
          {"model"},
          {"model-prefix"},
          {"precision"},
          {"framework"},
          {"spec-decoding"},
          {"runner"},
          {"isl"},
          {"osl"},
          {"tp"},
          {"pp"},
          {"dcp-size"},
          {"pcp-size"},
          {"ep"},
          {"dp-attn"},
          {"conc"},
          {"max-model-len"},
          {"exp-name"},
          {"disagg"},
          {"run-eval"},
          {"eval-only", kFalse},
          {"router"},
          {"recipe-fingerprint"}};
}

std::vector<Field> multi_node_fixed() {
  return {{"image"},
          {"model"},
          {"model-prefix"},
          {"precision"},
          {"framework"},
          {"spec-decoding"},
          {"runner"},
          {"isl"},
          {"osl"},
          {"prefill"},
          {"decode"},
          {"conc"},
          {"max-model-len"},
          {"exp-name"},
          {"disagg"},
          {"run-eval"},
          {"eval-only", kFalse},
          {"eval-conc"},
          {"eval-all-concs", kFalse},
          {"router"},
          {"kv-p2p-transfer"},
          {"recipe-fingerprint"}};
}

std::vector<Field> single_node_agentic() {
  return {{"image"},
          {"model"},
          {"model-prefix"},
          {"precision"},
          {"framework"},
          {"runner"},
          {"tp"},
          {"pp"},
          {"dcp-size"},
          {"pcp-size"},
          {"ep"},
          {"dp-attn"},
          {"spec-decoding", bj::value("none")},
          {"conc"},
          {"kv-offloading"},
          {"kv-offload-backend"},
          {"router"},
          {"total-cpu-dram-gb"},
          {"duration"},
          {"exp-name"},
          {"scenario-type"},
          {"run-eval"},
          {"eval-only"},
          {"recipe-fingerprint"}};
}

std::vector<Field> multi_node_agentic() {
  return {{"image"},
          {"model"},
          {"model-prefix"},
          {"precision"},
          {"framework"},
          {"spec-decoding"},
          {"runner"},
          {"prefill"},
          {"decode"},
          {"conc"},
          {"kv-offloading"},
          {"kv-offload-backend"},
          {"router"},
          {"kv-p2p-transfer"},
          {"total-cpu-dram-gb"},
          {"duration"},
          {"exp-name"},
          {"disagg"},
          {"scenario-type"},
          {"run-eval"},
          {"eval-only"},
          {"eval-conc"},
          {"recipe-fingerprint"}};
}

std::vector<Field> worker_fields() {
  return {{"num-worker"},
          {"tp"},
          {"pp", bj::value(1)},
          {"dcp-size", bj::value(1)},
          {"pcp-size", bj::value(1)},
          {"ep"},
          {"dp-attn"},
          {"hardware"},
          {"additional-settings", bj::array()}};
}

std::vector<Field> component_fields() {
  return {{"name"}, {"version"}};
}

bj::object in_model_order(const bj::object& from, const std::vector<Field>& fields);

bj::value nested(std::string_view key, const bj::value& value) {
  if (!value.is_object()) return value;
  if (key == "prefill" || key == "decode") return in_model_order(value.get_object(), worker_fields());
  if (key == "router" || key == "kv-offload-backend") return in_model_order(value.get_object(), component_fields());
  return value;
}

bj::object in_model_order(const bj::object& from, const std::vector<Field>& fields) {
  bj::object out;
  for (const auto& field : fields) {
    if (const bj::value* value = from.if_contains(field.key); value && !value->is_null()) {
      out[field.key] = nested(field.key, *value);
    } else if (field.fallback) {
      out[field.key] = *field.fallback;
    }
  }
  return out;
}

const std::vector<Field>& fields_of(RowKind kind) {
  static const auto kSingleFixed = single_node_fixed();
  static const auto kMultiFixed = multi_node_fixed();
  static const auto kSingleAgentic = single_node_agentic();
  static const auto kMultiAgentic = multi_node_agentic();
  switch (kind) {
    case RowKind::kSingleNodeFixed: return kSingleFixed;
    case RowKind::kMultiNodeFixed: return kMultiFixed;
    case RowKind::kSingleNodeAgentic: return kSingleAgentic;
    case RowKind::kMultiNodeAgentic: break;
  }
  return kMultiAgentic;
}

bj::value matrix_entry(const SweepRow& row) {
  return in_model_order(sweep::to_json(row), fields_of(row.kind));
}

bj::array matrix_entries(std::span<const SweepRow> rows) {
  bj::array out;
  for (const auto& row : rows) out.push_back(matrix_entry(row));
  return out;
}

bj::object buckets_json(const std::vector<PlanBucket>& buckets) {
  bj::object out;
  for (const auto& bucket : buckets) out[bucket.name] = matrix_entries(bucket.rows);
  return out;
}

bj::array strings(const std::vector<std::string>& values) {
  bj::array out;
  for (const auto& value : values) out.emplace_back(value);
  return out;
}

// ChangelogEntry's fields in order, as model_dump(by_alias, exclude_none) writes them.
bj::object entry_json(const Entry& entry) {
  bj::object out;
  out["config-keys"] = strings(entry.config_keys);
  out["description"] = strings(entry.description);
  out["pr-link"] = entry.pr_link;
  out["evals-only"] = entry.evals_only;
  out["all-evals"] = entry.all_evals;
  out["append-only"] = entry.append_only;
  if (entry.eval_min_prefill_ep) out["eval-min-prefill-ep"] = *entry.eval_min_prefill_ep;
  if (!entry.scenario_type.empty()) out["scenario-type"] = strings(entry.scenario_type);
  return out;
}

std::string conc_text(const SweepRow& row) {
  return row.conc.size() == 1 ? std::to_string(row.conc.front()) : fmt::format("[{}]", fmt::join(row.conc, ","));
}

std::string topology_text(const SweepRow& row) {
  if (row.is_multinode())
    return fmt::format("prefill {}x tp{} ep{} / decode {}x tp{} ep{}", row.prefill.num_worker, row.prefill.tp,
                       row.prefill.ep, row.decode.num_worker, row.decode.tp, row.decode.ep);
  return fmt::format("tp{} ep{}{}", row.tp, row.ep, row.dp_attn ? " dp-attn" : "");
}

void append_rows(std::string& out, std::string_view title, std::span<const SweepRow> rows) {
  if (rows.empty()) return;
  out += fmt::format("{} ({} row{})\n", title, rows.size(), rows.size() == 1 ? "" : "s");
  for (const auto& row : rows) {
    const std::string_view spec = config::spec_decoding_name(row.spec_decoding);
    out += fmt::format("  {:<40} conc {:<10} {:<16} {:<32} spec {:<6} {}\n", row.exp_name, conc_text(row), row.runner,
                       topology_text(row), spec,
                       row.stamped_fingerprint.empty() ? "" : "recipe " + row.stamped_fingerprint.substr(0, 16));
  }
}

Result<void> read_rows(const bj::value& value, std::string_view file, const std::string& where,
                       std::vector<SweepRow>& out) {
  if (!value.is_array())
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}: {} must be a list of rows", file, where));
  const auto& rows = value.get_array();
  for (size_t index = 0; index < rows.size(); ++index) {
    const std::string at = fmt::format("{}: {} row {}", file, where, index);
    if (!rows[index].is_object()) return fail(ErrorCode::kInvalidArgument, at + ": a row must be an object");
    auto row = sweep::row_from_json(rows[index].get_object(), at);
    if (!row) return std::unexpected(row.error());
    out.push_back(std::move(*row));
  }
  return {};
}

}  // namespace

std::string render_plan_matrix(const Plan& plan) {
  bj::object out;
  out["single_node"] = buckets_json(plan.single_node);
  out["multi_node"] = buckets_json(plan.multi_node);
  out["evals"] = matrix_entries(plan.evals);
  out["agentic_evals"] = matrix_entries(plan.agentic_evals);
  out["multinode_evals"] = matrix_entries(plan.multinode_evals);
  out["multinode_agentic_evals"] = matrix_entries(plan.multinode_agentic_evals);
  bj::array entries;
  for (const auto& entry : plan.entries) entries.push_back(entry_json(entry));
  out["changelog_metadata"] =
      bj::object{{"base_ref", plan.base_ref}, {"head_ref", plan.head_ref}, {"entries", entries}};
  return bj::serialize(out) + "\n";
}

std::string render_plan_text(const Plan& plan) {
  std::string out =
      fmt::format("plan {} -> {}: {} entr{} -> {} benchmark row{}, {} eval row{}\n", plan.base_ref, plan.head_ref,
                  plan.entries.size(), plan.entries.size() == 1 ? "y" : "ies", plan.benchmark_rows(),
                  plan.benchmark_rows() == 1 ? "" : "s", plan.eval_rows(), plan.eval_rows() == 1 ? "" : "s");
  for (const auto& bucket : plan.single_node) append_rows(out, "single_node/" + bucket.name, bucket.rows);
  for (const auto& bucket : plan.multi_node) append_rows(out, "multi_node/" + bucket.name, bucket.rows);
  append_rows(out, "evals", plan.evals);
  append_rows(out, "agentic_evals", plan.agentic_evals);
  append_rows(out, "multinode_evals", plan.multinode_evals);
  append_rows(out, "multinode_agentic_evals", plan.multinode_agentic_evals);
  return out;
}

Result<std::vector<SweepRow>> plan_rows_from_json(std::string_view text, std::string_view file_name) {
  auto parsed = json::parse(text, file_name);
  if (!parsed) return std::unexpected(parsed.error());
  if (!parsed->is_object() || !parsed->get_object().contains("single_node"))
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}: not a plan (an object with single_node, multi_node, evals, ...); write one with "
                            "`ixbench plan --format matrix`, or pass a row list with --jobs-from",
                            file_name));
  const auto& plan = parsed->get_object();
  std::vector<SweepRow> rows;
  for (std::string_view node : {"single_node", "multi_node"}) {
    const bj::value* buckets = plan.if_contains(node);
    if (!buckets) continue;
    if (!buckets->is_object())
      return fail(ErrorCode::kInvalidArgument, fmt::format("{}: {} must be an object of buckets", file_name, node));
    for (const auto& bucket : buckets->get_object()) {
      if (auto read =
              read_rows(bucket.value(), file_name, fmt::format("{}.{}", node, std::string_view(bucket.key())), rows);
          !read)
        return std::unexpected(read.error());
    }
  }
  for (std::string_view bucket : {"evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals"}) {
    const bj::value* value = plan.if_contains(bucket);
    if (!value) continue;
    if (auto read = read_rows(*value, file_name, std::string(bucket), rows); !read)
      return std::unexpected(read.error());
  }
  for (const auto& member : plan) {
    static constexpr std::string_view kKnown[] = {"single_node",       "multi_node",      "evals",
                                                  "agentic_evals",     "multinode_evals", "multinode_agentic_evals",
                                                  "changelog_metadata"};
    if (std::find(std::begin(kKnown), std::end(kKnown), std::string_view(member.key())) == std::end(kKnown))
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{}: unknown key \"{}\" in a plan (known: single_node, multi_node, evals, "
                              "agentic_evals, multinode_evals, multinode_agentic_evals, changelog_metadata)",
                              file_name, std::string_view(member.key())));
  }
  if (rows.empty())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{}: the plan has no rows, so there is nothing to run", file_name));
  return rows;
}

}  // namespace ix::changelog
