#include "sweep/row_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "common/json_io.h"

namespace ix::sweep {
namespace {

namespace bj = boost::json;
using config::Component;
using config::Worker;
using config::WorkerKey;

// The keys of a row: those every kind has, then each kind's own (sweep_row.h's table).
constexpr std::string_view kCommonKeys[] = {"image",     "model",     "model-prefix",      "precision",
                                            "framework", "runner",    "spec-decoding",     "exp-name",
                                            "router",    "eval-only", "recipe-fingerprint"};
constexpr std::string_view kSingleNodeFixedKeys[] = {"isl",  "osl",           "tp", "pp",      "dcp-size", "pcp-size",
                                                     "conc", "max-model-len", "ep", "dp-attn", "disagg",   "run-eval"};
constexpr std::string_view kMultiNodeFixedKeys[] = {
    "isl",    "osl",      "prefill",         "decode",    "conc",          "max-model-len",
    "disagg", "run-eval", "kv-p2p-transfer", "eval-conc", "eval-all-concs"};
constexpr std::string_view kSingleNodeAgenticKeys[] = {"tp",
                                                       "pp",
                                                       "dcp-size",
                                                       "pcp-size",
                                                       "ep",
                                                       "dp-attn",
                                                       "conc",
                                                       "kv-offloading",
                                                       "total-cpu-dram-gb",
                                                       "duration",
                                                       "scenario-type",
                                                       "kv-offload-backend",
                                                       "run-eval"};
constexpr std::string_view kMultiNodeAgenticKeys[] = {
    "prefill",  "decode",   "conc",          "kv-offloading",      "total-cpu-dram-gb",
    "duration", "disagg",   "scenario-type", "kv-offload-backend", "kv-p2p-transfer",
    "run-eval", "eval-conc"};
// A worker's keys, in WorkerKey's order.
constexpr std::string_view kWorkerKeys[] = {"num-worker", "tp",      "pp",       "dcp-size",           "pcp-size",
                                            "ep",         "dp-attn", "hardware", "additional-settings"};
constexpr std::string_view kComponentKeys[] = {"name", "version"};

// A value as the text shows it, cut short when long (errors quote it).
std::string shown(const bj::value& value) {
  std::string text = json::to_string(value);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

// The JSON types a row holds: their name in errors and the conversion (nullopt: wrong type).
template <typename T>
struct Type;
template <>
struct Type<int64_t> {
  static constexpr std::string_view name = "an integer";
  static std::optional<int64_t> from(const bj::value& value) {
    if (!value.is_int64()) return std::nullopt;
    return value.get_int64();
  }
};
template <>
struct Type<bool> {
  static constexpr std::string_view name = "a boolean";
  static std::optional<bool> from(const bj::value& value) {
    if (!value.is_bool()) return std::nullopt;
    return value.get_bool();
  }
};
template <>
struct Type<std::string> {
  static constexpr std::string_view name = "a string";
  static std::optional<std::string> from(const bj::value& value) {
    if (!value.is_string()) return std::nullopt;
    return std::string(value.get_string());
  }
};
template <typename T>
struct Type<std::vector<T>> {
  static constexpr std::string_view name =
      std::is_same_v<T, int64_t> ? std::string_view("a list of integers") : std::string_view("a list of strings");
  static std::optional<std::vector<T>> from(const bj::value& value) {
    if (!value.is_array()) return std::nullopt;
    std::vector<T> out;
    for (const auto& element : value.get_array()) {
      auto item = Type<T>::from(element);
      if (!item) return std::nullopt;
      out.push_back(std::move(*item));
    }
    return out;
  }
};
template <>
struct Type<const bj::object*> {
  static constexpr std::string_view name = "an object";
  static std::optional<const bj::object*> from(const bj::value& value) {
    if (!value.is_object()) return std::nullopt;
    return &value.get_object();
  }
};

// The first problem found in a row; later reads go on but keep it.
struct Problem {
  std::optional<std::string> message;
  void note(std::string text) {
    if (!message) message = std::move(text);
  }
};

// Typed reads of one object's members; nested objects name their keys "prefill.tp".
class Reader {
 public:
  Reader(const bj::object& object, std::string prefix, Problem& problem)
      : object_(object), prefix_(std::move(prefix)), problem_(problem) {}

  std::string path(std::string_view key) const { return prefix_ + std::string(key); }
  void note(std::string text) { problem_.note(std::move(text)); }
  Problem& problem() { return problem_; }
  const bj::object& object() const { return object_; }

  template <typename T>
  std::optional<T> maybe(std::string_view key) {
    const bj::value* value = object_.if_contains(key);
    if (!value) return std::nullopt;
    std::optional<T> read = Type<T>::from(*value);
    if (!read) note(fmt::format("\"{}\" must be {}, got {}", path(key), Type<T>::name, shown(*value)));
    return read;
  }
  template <typename T>
  std::optional<T> required(std::string_view key) {
    if (!object_.contains(key)) {
      note(fmt::format("missing \"{}\" ({})", path(key), Type<T>::name));
      return std::nullopt;
    }
    return maybe<T>(key);
  }
  template <typename T>
  T need(std::string_view key) {
    return required<T>(key).value_or(T{});
  }

  // Every member must be one of `keys` or `more`; `what` names the object ("a worker").
  void only(std::span<const std::string_view> keys, std::string_view what,
            std::span<const std::string_view> more = {}) {
    auto known = [&](std::string_view key) {
      return std::find(keys.begin(), keys.end(), key) != keys.end() ||
             std::find(more.begin(), more.end(), key) != more.end();
    };
    for (const auto& entry : object_) {
      if (known(entry.key())) continue;
      std::string names;
      for (auto list : {keys, more}) {
        for (auto key : list) names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", key);
      }
      note(fmt::format("unknown key \"{}\" ({} has {})", path(entry.key()), what, names));
      return;
    }
  }

 private:
  const bj::object& object_;
  std::string prefix_;
  Problem& problem_;
};

// One of an enum's names (spec-decoding, kv-offloading).
template <typename E, size_t N>
E read_choice(Reader& reader, std::string_view key, const E (&values)[N], std::string_view (*name)(E)) {
  auto text = reader.required<std::string>(key);
  if (!text) return values[0];
  for (E value : values) {
    if (name(value) == *text) return value;
  }
  std::string names;
  for (E value : values) names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", name(value));
  reader.note(fmt::format("\"{}\" must be one of {}, got {}", reader.path(key), names, shown(reader.object().at(key))));
  return values[0];
}

// router / kv-offload-backend: {name, version?} in either order.
std::optional<Component> read_component(Reader& parent, std::string_view key) {
  const bj::object* object = parent.maybe<const bj::object*>(key).value_or(nullptr);
  if (!object) return std::nullopt;
  Reader reader(*object, parent.path(key) + ".", parent.problem());
  reader.only(kComponentKeys, "a component");
  Component component;
  component.name = reader.need<std::string>("name");
  component.version = reader.maybe<std::string>("version");
  component.version_first = component.version && object->begin()->key() == "version";
  return component;
}

// prefill / decode, with its key order as written.
Worker read_worker(Reader& parent, std::string_view key) {
  Worker worker;
  const bj::object* object = parent.need<const bj::object*>(key);
  if (!object) return worker;
  Reader reader(*object, parent.path(key) + ".", parent.problem());
  reader.only(kWorkerKeys, "a worker");
  for (const auto& entry : *object) {
    auto found = std::find(std::begin(kWorkerKeys), std::end(kWorkerKeys), std::string_view(entry.key()));
    if (found != std::end(kWorkerKeys)) worker.key_order.push_back(WorkerKey(found - std::begin(kWorkerKeys)));
  }
  worker.num_worker = reader.need<int64_t>("num-worker");
  worker.tp = reader.need<int64_t>("tp");
  worker.pp = reader.need<int64_t>("pp");
  worker.dcp_size = reader.need<int64_t>("dcp-size");
  worker.pcp_size = reader.need<int64_t>("pcp-size");
  worker.ep = reader.need<int64_t>("ep");
  worker.dp_attn = reader.need<bool>("dp-attn");
  worker.hardware = reader.maybe<std::string>("hardware");
  worker.additional_settings =
      reader.maybe<std::vector<std::string>>("additional-settings").value_or(std::vector<std::string>{});
  return worker;
}

// Keys every kind has.
void read_common(Reader& reader, SweepRow& row) {
  static constexpr config::SpecDecoding kSpecs[] = {config::SpecDecoding::kNone, config::SpecDecoding::kMtp,
                                                    config::SpecDecoding::kDraftModel};
  row.image = reader.need<std::string>("image");
  row.model = reader.need<std::string>("model");
  row.model_prefix = reader.need<std::string>("model-prefix");
  row.precision = reader.need<std::string>("precision");
  row.framework = reader.need<std::string>("framework");
  row.runner = reader.need<std::string>("runner");
  row.spec_decoding = read_choice(reader, "spec-decoding", kSpecs, config::spec_decoding_name);
  row.exp_name = reader.need<std::string>("exp-name");
  row.router = read_component(reader, "router");
  row.eval_only = reader.maybe<bool>("eval-only").value_or(false);
  row.stamped_fingerprint = reader.maybe<std::string>("recipe-fingerprint").value_or("");
  const auto& stamp = row.stamped_fingerprint;
  if (reader.object().contains("recipe-fingerprint") &&
      (stamp.size() != 64 || stamp.find_first_not_of("0123456789abcdef") != std::string::npos))
    reader.note(fmt::format("\"recipe-fingerprint\" must be 64 lowercase hex digits (a SHA-256), got \"{}\"", stamp));
}

// isl, osl and the derived max-model-len of fixed-seq-len rows.
void read_lengths(Reader& reader, SweepRow& row) {
  row.isl = reader.need<int64_t>("isl");
  row.osl = reader.need<int64_t>("osl");
  auto max_model_len = reader.required<int64_t>("max-model-len");
  if (!max_model_len) return;
  int64_t expected = 0;
  bool overflow = __builtin_add_overflow(row.isl, row.osl, &expected) ||
                  __builtin_add_overflow(expected, kMaxModelLenMargin, &expected);
  if (overflow || *max_model_len != expected)
    reader.note(fmt::format("\"max-model-len\" is {}, but isl + osl + {} is {}", *max_model_len, kMaxModelLenMargin,
                            overflow ? std::string("out of range") : std::to_string(expected)));
}

void read_single_node(Reader& reader, SweepRow& row) {
  row.tp = reader.need<int64_t>("tp");
  row.pp = reader.need<int64_t>("pp");
  row.dcp_size = reader.need<int64_t>("dcp-size");
  row.pcp_size = reader.need<int64_t>("pcp-size");
  row.ep = reader.need<int64_t>("ep");
  row.dp_attn = reader.need<bool>("dp-attn");
  row.conc = {reader.need<int64_t>("conc")};
}

void read_multi_node(Reader& reader, SweepRow& row) {
  row.prefill = read_worker(reader, "prefill");
  row.decode = read_worker(reader, "decode");
  row.conc = reader.need<std::vector<int64_t>>("conc");
  if (row.conc.empty() && reader.object().contains("conc"))
    reader.note("\"conc\" must be a non-empty list of integers, got []");
  row.kv_p2p_transfer = reader.maybe<std::string>("kv-p2p-transfer");
  row.eval_conc = reader.maybe<int64_t>("eval-conc");
}

void read_agentic(Reader& reader, SweepRow& row) {
  static constexpr config::KvOffloading kOffloading[] = {config::KvOffloading::kNone, config::KvOffloading::kDram};
  row.kv_offloading = read_choice(reader, "kv-offloading", kOffloading, config::kv_offloading_name);
  row.total_cpu_dram_gb = reader.need<int64_t>("total-cpu-dram-gb");
  row.duration_s = reader.need<int64_t>("duration");
  row.kv_offload_backend = read_component(reader, "kv-offload-backend");
  row.run_eval = reader.maybe<bool>("run-eval");
}

// The kind, told apart as the generator does; nullopt after noting a bad scenario-type.
std::optional<RowKind> row_kind(const bj::object& object, Problem& problem) {
  bool agentic = false;
  if (const bj::value* scenario = object.if_contains("scenario-type")) {
    if (!scenario->is_string() || scenario->get_string() != "agentic-coding") {
      problem.note(
          fmt::format("\"scenario-type\" must be \"agentic-coding\" (fixed-seq-len rows have no scenario-type), got {}",
                      shown(*scenario)));
      return std::nullopt;
    }
    agentic = true;
  }
  if (object.contains("prefill")) return agentic ? RowKind::kMultiNodeAgentic : RowKind::kMultiNodeFixed;
  return agentic ? RowKind::kSingleNodeAgentic : RowKind::kSingleNodeFixed;
}

void read_row(Reader& reader, SweepRow& row) {
  switch (row.kind) {
    case RowKind::kSingleNodeFixed:
      reader.only(kCommonKeys, "a single-node fixed-seq-len row", kSingleNodeFixedKeys);
      break;
    case RowKind::kMultiNodeFixed:
      reader.only(kCommonKeys, "a multi-node fixed-seq-len row", kMultiNodeFixedKeys);
      break;
    case RowKind::kSingleNodeAgentic:
      reader.only(kCommonKeys, "a single-node agentic row", kSingleNodeAgenticKeys);
      break;
    case RowKind::kMultiNodeAgentic: reader.only(kCommonKeys, "a multi-node agentic row", kMultiNodeAgenticKeys); break;
  }
  read_common(reader, row);
  if (row.is_multinode()) {
    read_multi_node(reader, row);
  } else {
    read_single_node(reader, row);
  }
  if (row.is_agentic()) {
    read_agentic(reader, row);
  } else {
    read_lengths(reader, row);
    row.run_eval = reader.need<bool>("run-eval");
  }
  if (row.kind != RowKind::kSingleNodeAgentic) row.disagg = reader.need<bool>("disagg");
  if (row.kind == RowKind::kMultiNodeFixed) row.eval_all_concs = reader.maybe<bool>("eval-all-concs").value_or(false);
}

}  // namespace

Result<SweepRow> row_from_json(const bj::object& object, std::string_view where) {
  Problem problem;
  SweepRow row;
  if (auto kind = row_kind(object, problem)) {
    row.kind = *kind;
    Reader reader(object, "", problem);
    read_row(reader, row);
  }
  if (problem.message) {
    return fail(ErrorCode::kInvalidArgument,
                where.empty() ? *problem.message : fmt::format("{}: {}", where, *problem.message));
  }
  return row;
}

Result<std::vector<SweepRow>> matrix_from_json(std::string_view text, std::string_view file_name) {
  auto document = json::parse(text, file_name);
  if (!document) return std::unexpected(document.error());
  const bj::array* rows = document->if_array();
  if (!rows) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}: a job matrix must be a JSON array of row objects, got {}",
                                                         file_name, shown(*document)));
  }
  if (rows->empty()) return fail(ErrorCode::kInvalidArgument, fmt::format("{}: no jobs (an empty array)", file_name));
  std::vector<SweepRow> out;
  out.reserve(rows->size());
  for (size_t index = 0; index < rows->size(); ++index) {
    std::string where = fmt::format("{}: row {}", file_name, index);
    const bj::object* object = (*rows)[index].if_object();
    if (!object) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{}: must be an object, got {}", where, shown((*rows)[index])));
    }
    auto row = row_from_json(*object, where);
    if (!row) return std::unexpected(row.error());
    out.push_back(std::move(*row));
  }
  return out;
}

}  // namespace ix::sweep
