#include "sweep/sweep_row.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <boost/json.hpp>

namespace ix::sweep {
namespace {

using config::Component;
using config::Worker;
using config::WorkerKey;

// Python json.dumps string escaping with ensure_ascii=True: non-ASCII becomes \uXXXX (surrogate
// pairs above the BMP); invalid UTF-8 bytes are escaped as their Latin-1 code point.
void append_string(std::string& out, std::string_view text) {
  out += '"';
  for (size_t index = 0; index < text.size(); ++index) {
    unsigned char c = static_cast<unsigned char>(text[index]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    uint32_t code = c;
    size_t extra = 0;
    if ((c & 0xE0) == 0xC0) {
      code = c & 0x1F;
      extra = 1;
    } else if ((c & 0xF0) == 0xE0) {
      code = c & 0x0F;
      extra = 2;
    } else if ((c & 0xF8) == 0xF0) {
      code = c & 0x07;
      extra = 3;
    }
    bool valid = extra > 0;
    for (size_t k = 1; valid && k <= extra; ++k) {
      if (index + k >= text.size() || (static_cast<unsigned char>(text[index + k]) & 0xC0) != 0x80) valid = false;
    }
    if (!valid) {
      out += fmt::format("\\u{:04x}", c);
      continue;
    }
    for (size_t k = 1; k <= extra; ++k) code = (code << 6) | (static_cast<unsigned char>(text[index + k]) & 0x3F);
    index += extra;
    if (code >= 0x10000) {
      code -= 0x10000;
      out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF));
    } else {
      out += fmt::format("\\u{:04x}", code);
    }
  }
  out += '"';
}

void append_int(std::string& out, int64_t value) {
  char buffer[24];
  auto end = fmt::format_to(buffer, "{}", value);
  out.append(buffer, end);
}

// Writes Python-json text directly (the fast path for printing whole matrices).
class TextSink {
 public:
  explicit TextSink(std::string& out) : out_(out) {}

  void begin_object() {
    out_ += '{';
    first_.push_back(true);
  }
  void end_object() {
    out_ += '}';
    first_.pop_back();
  }
  void key(std::string_view name) {
    if (!first_.back()) out_ += ", ";
    first_.back() = false;
    append_string(out_, name);
    out_ += ": ";
  }
  void value(int64_t number) { append_int(out_, number); }
  void value(bool flag) { out_ += flag ? "true" : "false"; }
  void value(std::string_view text) { append_string(out_, text); }
  void value(const std::vector<int64_t>& numbers) {
    out_ += '[';
    for (size_t index = 0; index < numbers.size(); ++index) {
      if (index) out_ += ", ";
      append_int(out_, numbers[index]);
    }
    out_ += ']';
  }
  void value(const std::vector<std::string>& texts) {
    out_ += '[';
    for (size_t index = 0; index < texts.size(); ++index) {
      if (index) out_ += ", ";
      append_string(out_, texts[index]);
    }
    out_ += ']';
  }

 private:
  std::string& out_;
  std::vector<bool> first_;
};

// Builds a boost::json::object with the same keys and order.
class JsonSink {
 public:
  boost::json::object take() { return std::move(stack_.front()); }

  void begin_object() {
    if (stack_.empty()) {
      stack_.emplace_back();
      return;
    }
    stack_.emplace_back();
    keys_.push_back(std::move(pending_));
  }
  void end_object() {
    if (stack_.size() == 1) return;
    boost::json::object done = std::move(stack_.back());
    stack_.pop_back();
    std::string name = std::move(keys_.back());
    keys_.pop_back();
    stack_.back()[name] = std::move(done);
  }
  void key(std::string_view name) { pending_ = std::string(name); }
  void value(int64_t number) { stack_.back()[pending_] = number; }
  void value(bool flag) { stack_.back()[pending_] = flag; }
  void value(std::string_view text) { stack_.back()[pending_] = boost::json::string(text); }
  void value(const std::vector<int64_t>& numbers) {
    boost::json::array array;
    for (auto number : numbers) array.emplace_back(number);
    stack_.back()[pending_] = std::move(array);
  }
  void value(const std::vector<std::string>& texts) {
    boost::json::array array;
    for (const auto& text : texts) array.emplace_back(boost::json::string(text));
    stack_.back()[pending_] = std::move(array);
  }

 private:
  std::vector<boost::json::object> stack_;
  std::vector<std::string> keys_;
  std::string pending_;
};

template <typename Sink, typename T>
void field(Sink& sink, std::string_view name, const T& value) {
  sink.key(name);
  sink.value(value);
}

template <typename Sink>
void component(Sink& sink, std::string_view name, const Component& value) {
  sink.key(name);
  sink.begin_object();
  if (value.version && value.version_first) field(sink, "version", std::string_view(*value.version));
  field(sink, "name", std::string_view(value.name));
  if (value.version && !value.version_first) field(sink, "version", std::string_view(*value.version));
  sink.end_object();
}

template <typename Sink>
void worker_key(Sink& sink, const Worker& worker, WorkerKey key) {
  switch (key) {
    case WorkerKey::kNumWorker: field(sink, "num-worker", worker.num_worker); break;
    case WorkerKey::kTp: field(sink, "tp", worker.tp); break;
    case WorkerKey::kPp: field(sink, "pp", worker.pp); break;
    case WorkerKey::kDcpSize: field(sink, "dcp-size", worker.dcp_size); break;
    case WorkerKey::kPcpSize: field(sink, "pcp-size", worker.pcp_size); break;
    case WorkerKey::kEp: field(sink, "ep", worker.ep); break;
    case WorkerKey::kDpAttn: field(sink, "dp-attn", worker.dp_attn); break;
    case WorkerKey::kHardware:
      if (worker.hardware) field(sink, "hardware", std::string_view(*worker.hardware));
      break;
    case WorkerKey::kAdditionalSettings: field(sink, "additional-settings", worker.additional_settings); break;
  }
}

template <typename Sink>
void worker(Sink& sink, std::string_view name, const Worker& value) {
  sink.key(name);
  sink.begin_object();
  bool has_pp = false;
  bool has_dcp = false;
  bool has_pcp = false;
  for (WorkerKey key : value.key_order) {
    has_pp |= key == WorkerKey::kPp;
    has_dcp |= key == WorkerKey::kDcpSize;
    has_pcp |= key == WorkerKey::kPcpSize;
    worker_key(sink, value, key);
  }
  if (!has_pp) field(sink, "pp", value.pp);
  if (!has_dcp) field(sink, "dcp-size", value.dcp_size);
  if (!has_pcp) field(sink, "pcp-size", value.pcp_size);
  sink.end_object();
}

template <typename Sink>
void visit_row(Sink& sink, const SweepRow& row) {
  sink.begin_object();
  field(sink, "image", std::string_view(row.image));
  field(sink, "model", std::string_view(row.model));
  field(sink, "model-prefix", std::string_view(row.model_prefix));
  field(sink, "precision", std::string_view(row.precision));
  field(sink, "framework", std::string_view(row.framework));
  field(sink, "runner", std::string_view(row.runner));
  std::string_view spec = config::spec_decoding_name(row.spec_decoding);
  switch (row.kind) {
    case RowKind::kSingleNodeFixed:
      field(sink, "isl", row.isl);
      field(sink, "osl", row.osl);
      field(sink, "tp", row.tp);
      field(sink, "pp", row.pp);
      field(sink, "dcp-size", row.dcp_size);
      field(sink, "pcp-size", row.pcp_size);
      field(sink, "conc", row.conc.empty() ? int64_t{0} : row.conc.front());
      field(sink, "max-model-len", row.max_model_len());
      field(sink, "ep", row.ep);
      field(sink, "dp-attn", row.dp_attn);
      field(sink, "spec-decoding", spec);
      field(sink, "exp-name", std::string_view(row.exp_name));
      field(sink, "disagg", row.disagg);
      field(sink, "run-eval", row.run_eval.value_or(false));
      if (row.router) component(sink, "router", *row.router);
      break;
    case RowKind::kMultiNodeFixed:
      field(sink, "isl", row.isl);
      field(sink, "osl", row.osl);
      field(sink, "spec-decoding", spec);
      worker(sink, "prefill", row.prefill);
      worker(sink, "decode", row.decode);
      field(sink, "conc", row.conc);
      field(sink, "max-model-len", row.max_model_len());
      field(sink, "exp-name", std::string_view(row.exp_name));
      field(sink, "disagg", row.disagg);
      field(sink, "run-eval", row.run_eval.value_or(false));
      if (row.router) component(sink, "router", *row.router);
      if (row.kv_p2p_transfer) field(sink, "kv-p2p-transfer", std::string_view(*row.kv_p2p_transfer));
      if (row.eval_conc) field(sink, "eval-conc", *row.eval_conc);
      if (row.eval_all_concs) field(sink, "eval-all-concs", true);
      break;
    case RowKind::kSingleNodeAgentic:
      field(sink, "tp", row.tp);
      field(sink, "pp", row.pp);
      field(sink, "dcp-size", row.dcp_size);
      field(sink, "pcp-size", row.pcp_size);
      field(sink, "ep", row.ep);
      field(sink, "dp-attn", row.dp_attn);
      field(sink, "spec-decoding", spec);
      field(sink, "conc", row.conc.empty() ? int64_t{0} : row.conc.front());
      field(sink, "kv-offloading", config::kv_offloading_name(row.kv_offloading));
      field(sink, "total-cpu-dram-gb", row.total_cpu_dram_gb);
      field(sink, "duration", row.duration_s);
      field(sink, "exp-name", std::string_view(row.exp_name));
      field(sink, "scenario-type", std::string_view("agentic-coding"));
      if (row.kv_offload_backend) component(sink, "kv-offload-backend", *row.kv_offload_backend);
      if (row.router) component(sink, "router", *row.router);
      if (row.run_eval) field(sink, "run-eval", *row.run_eval);
      break;
    case RowKind::kMultiNodeAgentic:
      field(sink, "spec-decoding", spec);
      worker(sink, "prefill", row.prefill);
      worker(sink, "decode", row.decode);
      field(sink, "conc", row.conc);
      field(sink, "kv-offloading", config::kv_offloading_name(row.kv_offloading));
      field(sink, "total-cpu-dram-gb", row.total_cpu_dram_gb);
      field(sink, "duration", row.duration_s);
      field(sink, "exp-name", std::string_view(row.exp_name));
      field(sink, "disagg", row.disagg);
      field(sink, "scenario-type", std::string_view("agentic-coding"));
      if (row.kv_offload_backend) component(sink, "kv-offload-backend", *row.kv_offload_backend);
      if (row.router) component(sink, "router", *row.router);
      if (row.kv_p2p_transfer) field(sink, "kv-p2p-transfer", std::string_view(*row.kv_p2p_transfer));
      if (row.run_eval) field(sink, "run-eval", *row.run_eval);
      if (row.eval_conc) field(sink, "eval-conc", *row.eval_conc);
      break;
  }
  if (row.eval_only) field(sink, "eval-only", true);
  if (!row.stamped_fingerprint.empty()) field(sink, "recipe-fingerprint", std::string_view(row.stamped_fingerprint));
  sink.end_object();
}

// Python-json text of a JSON value with keys sorted and compact separators.
void append_canonical(std::string& out, const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::null: out += "null"; break;
    case boost::json::kind::bool_: out += value.get_bool() ? "true" : "false"; break;
    case boost::json::kind::int64: append_int(out, value.get_int64()); break;
    case boost::json::kind::uint64: out += fmt::format("{}", value.get_uint64()); break;
    case boost::json::kind::double_: out += fmt::format("{}", value.get_double()); break;
    case boost::json::kind::string: append_string(out, value.get_string()); break;
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& element : value.get_array()) {
        if (!first) out += ',';
        first = false;
        append_canonical(out, element);
      }
      out += ']';
      break;
    }
    case boost::json::kind::object: {
      const auto& object = value.get_object();
      std::vector<const boost::json::key_value_pair*> entries;
      for (const auto& entry : object) entries.push_back(&entry);
      std::sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->key() < b->key(); });
      out += '{';
      bool first = true;
      for (const auto* entry : entries) {
        if (!first) out += ',';
        first = false;
        append_string(out, entry->key());
        out += ':';
        append_canonical(out, entry->value());
      }
      out += '}';
      break;
    }
  }
}

std::string bool_text(bool value) {
  return value ? "true" : "false";
}

std::string worker_stem(const Worker& worker) {
  return fmt::format("nw{}-tp{}-pp{}-dcp{}-pcp{}-ep{}-dpa{}", worker.num_worker, worker.tp, worker.pp, worker.dcp_size,
                     worker.pcp_size, worker.ep, bool_text(worker.dp_attn));
}

}  // namespace

boost::json::object to_json(const SweepRow& row) {
  JsonSink sink;
  visit_row(sink, row);
  return sink.take();
}

void append_row_json(std::string& out, const SweepRow& row) {
  TextSink sink(out);
  visit_row(sink, row);
}

std::string render_matrix(std::span<const SweepRow> rows) {
  std::string out;
  out.reserve(rows.size() * 560 + 2);
  out += '[';
  for (size_t index = 0; index < rows.size(); ++index) {
    if (index) out += ", ";
    append_row_json(out, rows[index]);
  }
  out += ']';
  return out;
}

std::string canonical_json(const SweepRow& row, std::span<const std::string_view> excluded) {
  boost::json::object object = to_json(row);
  for (auto name : excluded) object.erase(name);
  std::string out;
  append_canonical(out, object);
  return out;
}

std::string recipe_fingerprint(const SweepRow& row) {
  static constexpr std::string_view kExcluded[] = {"conc", "exp-name", "recipe-fingerprint"};
  return sha256_hex(canonical_json(row, kExcluded));
}

std::string sha256_hex(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string hex;
  hex.reserve(2 * SHA256_DIGEST_LENGTH);
  for (unsigned char byte : digest) hex += fmt::format("{:02x}", byte);
  return hex;
}

std::string result_file_stem(const SweepRow& row, int64_t conc, std::string_view runner, std::string_view fingerprint) {
  std::string topology;
  if (row.is_multinode()) {
    topology = fmt::format("prefill-{}_decode-{}", worker_stem(row.prefill), worker_stem(row.decode));
  } else {
    topology = fmt::format("tp{}-pp{}-dcp{}-pcp{}-ep{}-dpa{}", row.tp, row.pp, row.dcp_size, row.pcp_size, row.ep,
                           bool_text(row.dp_attn));
  }
  std::string stem =
      fmt::format("{}_{}_{}_{}_disagg-{}_spec-{}_conc{}_{}", row.exp_name, row.precision, row.framework, topology,
                  bool_text(row.disagg), config::spec_decoding_name(row.spec_decoding), conc, runner);
  if (!fingerprint.empty()) stem += fmt::format("_recipe-{}", fingerprint.substr(0, 16));
  return stem;
}

std::vector<int64_t> expand_concurrency(int64_t start, int64_t end, int64_t step) {
  std::vector<int64_t> values;
  if (start <= 0 || start > end || step <= 1) return values;
  int64_t conc = start;
  while (conc <= end) {
    values.push_back(conc);
    if (conc == end) break;
    conc = conc > end / step ? end : conc * step;
    if (conc > end) conc = end;
  }
  return values;
}

std::string seq_len_name(int64_t isl, int64_t osl) {
  if (isl == 1024 && osl == 1024) return "1k1k";
  if (isl == 8192 && osl == 1024) return "8k1k";
  return fmt::format("{}_{}", isl, osl);
}

}  // namespace ix::sweep
