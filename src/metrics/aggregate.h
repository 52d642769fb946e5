// The aggregated record of one benchmark run (SPEC §5, `agg_<stem>.json`), exactly as InferenceX's
// utils/process_result.py builds it from a raw `bench serve` result and the recipe's environment:
//
//   hw conc image model infmax_model_prefix framework precision spec_decoding disagg
//   recipe_fingerprint isl osl [router] [kv_p2p_transfer], then
//   single node: is_multinode tp pp dcp_size pcp_size ep dp_attention, per-GPU throughputs over
//                tp * pp * pcp GPUs;
//   multi node:  is_multinode prefill_* decode_* num_prefill_gpu num_decode_gpu, total throughput
//                over all GPUs, output over decode GPUs (all when none), input over prefill GPUs,
//                [prefill_hw decode_hw];
//   then, in the raw result's key order, every key ending in "ms" as seconds without "_ms", and
//   every key holding "tpot" also as "*_intvty" = 1000 / value (std_tpot too, as the script does).
//
// Values are read as Python reads them (int() of ISL/OSL text, float() of numbers, booleans and
// numeric text); what Python would raise on is an error naming the key or variable.
//
// Thread-safety: plain functions.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/error.h"

namespace ix::metrics {

struct ComponentMeta {
  std::string name;
  std::string version;
};

struct SingleNodeLayout {
  int64_t tp = 1;
  int64_t ep = 1;
  std::string dp_attention = "false";  // as given (the script keeps the text)
  int64_t pp = 1;
  int64_t dcp_size = 1;
  int64_t pcp_size = 1;
};

struct WorkerLayout {
  int64_t gpus = 0;
  int64_t num_workers = 1;
  int64_t tp = 1;
  int64_t ep = 1;
  std::string dp_attention = "false";
  int64_t pp = 1;
  int64_t dcp_size = 1;
  int64_t pcp_size = 1;
};

struct MultiNodeLayout {
  WorkerLayout prefill;
  WorkerLayout decode;
  std::string prefill_hw;  // both or neither
  std::string decode_hw;
};

struct AggregateInputs {
  std::string hw;  // RUNNER_TYPE
  std::string framework;
  std::string precision;
  std::string spec_decoding;
  std::string model_prefix;
  std::string image;
  std::string recipe_fingerprint;
  bool disagg = false;
  int64_t isl = 0;
  int64_t osl = 0;
  std::optional<ComponentMeta> router;
  std::string kv_p2p_transfer;  // "" = absent
  std::optional<MultiNodeLayout> multinode;
  SingleNodeLayout single;
  std::string result_filename;  // RESULT_FILENAME: <stem> of <stem>.json and agg_<stem>.json
};

// process_result.py's environment: `get(name)` returns the variable or nullopt. Errors
// (kInvalidArgument): missing variables (all named at once, as the script does), values that are
// not integers, ROUTER_METADATA that is not {"name", "version"}, the multi-node sanity rules.
Result<AggregateInputs> aggregate_inputs_from_env(const std::function<std::optional<std::string>(const char*)>& get);

// The GPUs the per-GPU throughput divides by.
int64_t aggregate_num_gpus(const AggregateInputs& inputs);

// The record for a raw result. Errors (kInvalidArgument) name the raw key that Python's int() or
// float() would refuse.
Result<boost::json::object> aggregate_record(const boost::json::object& raw, const AggregateInputs& inputs);

// The power fields process_result.py's power step writes when there is no telemetry CSV:
// power_metric_schema_version 2, power_valid 0.
void add_power_unavailable(boost::json::object& record);

}  // namespace ix::metrics
