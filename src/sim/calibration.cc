#include "sim/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <initializer_list>
#include <utility>

#include "common/json_io.h"
#include "sim/catalog.h"

namespace ix::sim {

namespace {

// Every field of Efficiency by its JSON name: one table drives both reading and writing, so a new
// factor cannot be forgotten in one direction.
struct Field {
  const char* name;
  double Efficiency::*member;
};
constexpr Field kFields[] = {
    {"mem_efficiency", &Efficiency::mem_efficiency},
    {"gemm_mfu_min", &Efficiency::gemm_mfu_min},
    {"gemm_mfu_max", &Efficiency::gemm_mfu_max},
    {"attention_mfu", &Efficiency::attention_mfu},
    {"link_efficiency", &Efficiency::link_efficiency},
    {"comm_overlap", &Efficiency::comm_overlap},
    {"step_overhead_s", &Efficiency::step_overhead_s},
    {"layer_overhead_s", &Efficiency::layer_overhead_s},
    {"request_overhead_s", &Efficiency::request_overhead_s},
    {"api_overhead_s", &Efficiency::api_overhead_s},
    {"frontend_delay_s2", &Efficiency::frontend_delay_s2},
    {"kv_transfer_setup_s", &Efficiency::kv_transfer_setup_s},
    {"draft_cost_fraction", &Efficiency::draft_cost_fraction},
    {"expert_routing_exponent", &Efficiency::expert_routing_exponent},
    {"fixed_scale", &Efficiency::fixed_scale},
    {"memory_scale", &Efficiency::memory_scale},
    {"compute_scale", &Efficiency::compute_scale},
    {"prefill_scale", &Efficiency::prefill_scale},
    {"request_scale", &Efficiency::request_scale},
    {"attention_scale", &Efficiency::attention_scale},
};

// Reads the factors of `object`; any other key must be one of `descriptive` (a misspelt factor
// would otherwise be ignored and its default used without a word).
Result<Efficiency> read_efficiency(const boost::json::object& object, Efficiency base, std::string_view origin,
                                   std::string_view where, std::initializer_list<std::string_view> descriptive) {
  for (const auto& [key, value] : object) {
    const Field* field = nullptr;
    for (const auto& candidate : kFields)
      if (key == candidate.name) field = &candidate;
    if (field == nullptr) {
      if (std::find(descriptive.begin(), descriptive.end(), std::string_view(key)) != descriptive.end()) continue;
      std::string known;
      for (const auto& candidate : kFields) known += fmt::format("{}{}", known.empty() ? "" : ", ", candidate.name);
      return fail(ErrorCode::kParse,
                  fmt::format("{}: {}: unknown key '{}' (factors: {})", origin, where, std::string(key), known));
    }
    if (!value.is_number())
      return fail(ErrorCode::kParse, fmt::format("{}: {}: '{}' must be a number", origin, where, std::string(key)));
    double number = value.to_number<double>();
    if (!(number >= 0))
      return fail(ErrorCode::kParse, fmt::format("{}: {}: '{}' must be >= 0", origin, where, std::string(key)));
    base.*(field->member) = number;
  }
  return base;
}

boost::json::object write_efficiency(const Efficiency& efficiency) {
  boost::json::object out;
  for (const auto& field : kFields) out[field.name] = efficiency.*(field.member);
  return out;
}

}  // namespace

Result<CalibrationTable> CalibrationTable::parse(const std::string& text, const std::string& origin) {
  auto root = json::parse(text, origin);
  if (!root) return fail(root.error());
  if (!root->is_object()) return fail(ErrorCode::kParse, fmt::format("{}: top level must be an object", origin));
  const auto& object = root->as_object();
  for (const auto& [key, value] : object)
    if (key != "schema_version" && key != "source" && key != "defaults" && key != "groups")
      return fail(ErrorCode::kParse, fmt::format("{}: unknown top-level key '{}' (expected schema_version, source, "
                                                 "defaults, groups)",
                                                 origin, std::string(key)));
  CalibrationTable table;
  if (auto it = object.find("source"); it != object.end() && it->value().is_string())
    table.source_ = std::string(it->value().as_string());
  if (auto it = object.find("defaults"); it != object.end()) {
    if (!it->value().is_object())
      return fail(ErrorCode::kParse, fmt::format("{}: 'defaults' must be an object", origin));
    auto defaults = read_efficiency(it->value().as_object(), Efficiency{}, origin, "defaults", {});
    if (!defaults) return fail(defaults.error());
    table.defaults_ = *defaults;
  }
  if (auto it = object.find("groups"); it != object.end()) {
    if (!it->value().is_array()) return fail(ErrorCode::kParse, fmt::format("{}: 'groups' must be an array", origin));
    size_t index = 0;
    for (const auto& entry : it->value().as_array()) {
      std::string where = fmt::format("groups[{}]", index++);
      if (!entry.is_object()) return fail(ErrorCode::kParse, fmt::format("{}: {} must be an object", origin, where));
      const auto& group_object = entry.as_object();
      CalibrationGroup group;
      auto hardware = json::get_string(group_object, "hardware");
      auto framework = json::get_string(group_object, "framework");
      auto precision = json::get_string(group_object, "precision");
      if (!hardware || !framework || !precision)
        return fail(ErrorCode::kParse, fmt::format("{}: {} needs hardware, framework and precision", origin, where));
      group.hardware = *hardware;
      group.framework = *framework;
      group.precision = *precision;
      if (auto spec = json::get_string(group_object, "spec")) group.spec = *spec;
      if (auto rows = json::get_int(group_object, "fit_rows")) group.fit_rows = static_cast<int32_t>(*rows);
      if (group_object.contains("single_node_rows")) {
        auto rows = json::get_int(group_object, "single_node_rows");
        if (!rows || *rows < 0 || *rows > group.fit_rows)
          return fail(ErrorCode::kParse,
                      fmt::format("{}: {}: 'single_node_rows' must be an integer in [0, fit_rows]", origin, where));
        group.single_node_rows = static_cast<int32_t>(*rows);
      }
      auto efficiency = read_efficiency(group_object, table.defaults_, origin, where,
                                        {"hardware", "framework", "precision", "spec", "fit_rows", "single_node_rows"});
      if (!efficiency) return fail(efficiency.error());
      group.efficiency = *efficiency;
      table.groups_.push_back(std::move(group));
    }
  }
  return table;
}

Result<CalibrationTable> CalibrationTable::builtin() {
  return parse(embedded_calibration_json());
}

Efficiency CalibrationTable::lookup(const std::string& hardware, const std::string& framework,
                                    const std::string& precision, const std::string& spec, std::string* used) const {
  const CalibrationGroup* group = find(hardware, framework, precision, spec);
  if (used) *used = describe(group);
  return efficiency_of(group);
}

std::string CalibrationTable::describe(const CalibrationGroup* group) {
  if (!group) return "defaults (no calibration group for this hardware)";
  return fmt::format("{}/{}/{}/{} ({} fitted rows)", group->hardware, group->framework, group->precision, group->spec,
                     group->fit_rows);
}

const CalibrationGroup* CalibrationTable::find(const std::string& hardware, const std::string& framework,
                                               const std::string& precision, const std::string& spec) const {
  struct Key {
    std::string framework, precision, spec;
  };
  const Key order[] = {{framework, precision, spec},
                       {framework, precision, "*"},
                       {framework, "*", "*"},
                       {"*", precision, "*"},
                       {"*", "*", spec},
                       {"*", "*", "*"}};
  for (const auto& key : order) {
    for (const auto& group : groups_) {
      if (group.hardware == hardware && group.framework == key.framework && group.precision == key.precision &&
          group.spec == key.spec)
        return &group;
    }
  }
  return nullptr;
}

std::string CalibrationTable::to_json() const {
  boost::json::object root;
  root["schema_version"] = 1;
  root["source"] = source_;
  root["defaults"] = write_efficiency(defaults_);
  boost::json::array groups;
  for (const auto& group : groups_) {
    boost::json::object entry;
    entry["hardware"] = group.hardware;
    entry["framework"] = group.framework;
    entry["precision"] = group.precision;
    entry["spec"] = group.spec;
    entry["fit_rows"] = group.fit_rows;
    if (group.single_node_rows >= 0) entry["single_node_rows"] = group.single_node_rows;
    for (const auto& [key, value] : write_efficiency(group.efficiency)) entry[key] = value;
    groups.push_back(std::move(entry));
  }
  root["groups"] = std::move(groups);
  return json::to_pretty_string(root);
}

}  // namespace ix::sim
