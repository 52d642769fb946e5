#include "sim/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>

#include "common/rng.h"
#include "metrics/serve_summary.h"
#include "metrics/statistics.h"

namespace ix::sim {

namespace {

double number_or_zero(const boost::json::object& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || !it->value().is_number()) return 0.0;
  return it->value().to_number<double>();
}

// SPEC §5: tput_per_gpu and friends, and interactivity = 1000 / tpot_ms for every tpot statistic,
// added beside the raw keys.
void add_aggregates(boost::json::object& result, const EngineConfig& config, int32_t num_gpus) {
  const double total = number_or_zero(result, "total_token_throughput");
  const double output = number_or_zero(result, "output_throughput");
  const double input = total - output;
  int32_t decode_gpus = num_gpus;
  int32_t prefill_gpus = num_gpus;
  if (config.disagg) {
    decode_gpus = config.decode.num_workers * std::max({1, config.decode.tp, config.decode.ep});
    prefill_gpus = config.prefill.num_workers * std::max({1, config.prefill.tp, config.prefill.ep});
  }
  result["num_gpus"] = num_gpus;
  result["tput_per_gpu"] = total / num_gpus;
  result["output_tput_per_gpu"] = output / decode_gpus;
  result["input_tput_per_gpu"] = input / prefill_gpus;
  std::vector<std::pair<std::string, double>> intvty;
  for (const auto& [key, value] : result) {
    std::string_view name = key;
    if (!name.ends_with("_tpot_ms") || !value.is_number()) continue;
    const double tpot_ms = value.to_number<double>();
    std::string stem(name.substr(0, name.size() - std::string_view("_tpot_ms").size()));
    intvty.emplace_back(stem + "_intvty", tpot_ms > 0 ? 1000.0 / tpot_ms : 0.0);
  }
  for (auto& [key, value] : intvty) result[key] = value;
}

// Median of weighted values (the smallest value whose cumulative weight reaches half; the mean
// of the two middle values when the halves split exactly, as metrics::median does unweighted).
double weighted_median(std::vector<std::pair<double, double>> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  double total = 0;
  for (const auto& [value, weight] : values) total += weight;
  double cumulative = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    cumulative += values[i].second;
    if (cumulative >= 0.5 * total) {
      if (std::abs(cumulative - 0.5 * total) < 1e-9 * total && i + 1 < values.size())
        return 0.5 * (values[i].first + values[i + 1].first);
      return values[i].first;
    }
  }
  return values.back().first;
}

}  // namespace

boost::json::object describe_engine(const ResolvedEngine& engine) {
  const auto& c = engine.config;
  const auto& e = engine.efficiency;
  boost::json::object out;
  out["model"] = engine.model.name;
  out["model_source"] = engine.model.source;
  out["hardware"] = engine.hardware.name;
  out["hardware_source"] = engine.hardware.source;
  out["precision"] = c.precision;
  out["framework"] = c.framework;
  out["framework_family"] = framework_family_name(engine.family);
  if (c.disagg) {
    auto side = [](const WorkerTopology& t) {
      return boost::json::object{{"num-worker", t.num_workers},
                                 {"tp", t.tp},
                                 {"ep", t.ep},
                                 {"dp-attn", t.dp_attn},
                                 {"max_num_seqs", t.max_num_seqs},
                                 {"max_num_batched_tokens", t.max_num_batched_tokens},
                                 {"max_kv_tokens", t.max_kv_tokens},
                                 {"reserved_decode_tokens", t.reserved_decode_tokens}};
    };
    out["prefill"] = side(c.prefill);
    out["decode"] = side(c.decode);
  } else {
    out["tp"] = c.tp;
    out["ep"] = c.ep;
    out["dp-attn"] = c.dp_attn;
    out["replicas"] = c.num_replicas;
  }
  out["spec_decoding"] = spec_decoding_name(c.spec_decoding);
  out["num_spec_tokens"] = engine.num_spec_tokens;
  out["acceptance_length"] = engine.num_spec_tokens > 0 ? engine.acceptance_length : 1.0;
  if (!engine.spec_draft.empty()) out["spec_draft"] = engine.spec_draft;
  out["max_num_seqs"] = c.max_num_seqs;
  out["max_num_batched_tokens"] = c.max_num_batched_tokens;
  if (attention_dp_balancing(c, engine.family)) {
    out["attention_dp_balance"] = boost::json::object{{"timeout_iters", c.attention_dp_timeout_iters},
                                                      {"batching_wait_iters", c.attention_dp_batching_wait_iters}};
  } else {
    out["attention_dp_balance"] = nullptr;
  }
  out["block_size"] = c.block_size;
  out["enable_prefix_caching"] = c.enable_prefix_caching;
  out["gpu_memory_utilization"] = c.gpu_memory_utilization;
  out["max_model_len"] = engine.max_model_len;
  out["seed"] = c.seed;
  out["calibration_group"] = engine.calibration_group;
  out["calibration_source"] = engine.calibration_source;
  out["efficiency"] = boost::json::object{{"mem_efficiency", e.mem_efficiency},
                                          {"gemm_mfu_min", e.gemm_mfu_min},
                                          {"gemm_mfu_max", e.gemm_mfu_max},
                                          {"attention_mfu", e.attention_mfu},
                                          {"link_efficiency", e.link_efficiency},
                                          {"comm_overlap", e.comm_overlap},
                                          {"step_overhead_s", e.step_overhead_s},
                                          {"layer_overhead_s", e.layer_overhead_s},
                                          {"request_overhead_s", e.request_overhead_s},
                                          {"api_overhead_s", e.api_overhead_s},
                                          {"frontend_delay_s2", e.frontend_delay_s2},
                                          {"kv_transfer_setup_s", e.kv_transfer_setup_s},
                                          {"draft_cost_fraction", e.draft_cost_fraction},
                                          {"expert_routing_exponent", e.expert_routing_exponent},
                                          {"fixed_scale", e.fixed_scale},
                                          {"memory_scale", e.memory_scale},
                                          {"compute_scale", e.compute_scale},
                                          {"prefill_scale", e.prefill_scale},
                                          {"request_scale", e.request_scale},
                                          {"attention_scale", e.attention_scale}};
  return out;
}

namespace {

Result<void> check_point_options(const ResolvedEngine& engine, const PredictOptions& options, int32_t conc) {
  if (conc < 1) return fail(ErrorCode::kInvalidArgument, fmt::format("--conc values must be >= 1, got {}", conc));
  if (conc > kMaxPredictConcurrency)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--conc values must be <= {}, got {}", kMaxPredictConcurrency, conc));
  if (options.num_prompts < 0 || options.num_prompts > kMaxPredictPrompts)
    return fail(ErrorCode::kInvalidArgument, fmt::format("--num-prompts must be in [1, {}] (0 = 10 x conc), got {}",
                                                         kMaxPredictPrompts, options.num_prompts));
  if (options.isl < 1 || options.osl < 1)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--isl and --osl must be >= 1, got {} and {}", options.isl, options.osl));
  if (!(options.random_range_ratio > 0 && options.random_range_ratio <= 1))
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--random-range-ratio must be in (0, 1], got {}", options.random_range_ratio));
  // The longest drawn request is isl + osl (the engine refused it only when first drawn, naming a
  // drawn length rather than the flags).
  if (engine.max_model_len > 0 && int64_t{options.isl} + options.osl > engine.max_model_len)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--isl {} + --osl {} = {} tokens exceed {}'s context window of {} tokens (--max-model-len)",
                            options.isl, options.osl, int64_t{options.isl} + options.osl, engine.model.name,
                            engine.max_model_len));
  if (!(options.shared_prefix_fraction >= 0 && options.shared_prefix_fraction < 1))
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--shared-prefix-fraction must be in [0, 1), got {}", options.shared_prefix_fraction));
  return {};
}

// The server as the recipes launch it for one concurrency (scheduler-recv-interval, batch caps).
ResolvedEngine launched_for(const ResolvedEngine& engine, const PredictOptions& options, int32_t conc) {
  ResolvedEngine launched = engine;
  launched.config.scheduler_recv_interval = recipe_scheduler_recv_interval(engine.config, conc);
  launched.config.max_num_seqs = recipe_max_num_seqs(engine.config, engine.family, conc);
  launched.config.max_num_batched_tokens =
      recipe_max_num_batched_tokens(engine.config, engine.family, engine.num_spec_tokens, conc, options.isl);
  return launched;
}

// The benchmark's requests: lengths drawn before the run (as the client does), prompt block
// hashes drawn as each request is sent.
class Dataset {
 public:
  Dataset(const ResolvedEngine& engine, const PredictOptions& options, int32_t num_prompts)
      : prompt_rng_(Rng::stream(engine.config.seed, "sim.predict.prompts")),
        block_size_(engine.config.block_size),
        input_lens_(num_prompts),
        output_lens_(num_prompts) {
    Rng length_rng = Rng::stream(engine.config.seed, "sim.predict.lengths");
    const auto low = [&](int32_t length) {
      return std::max(1, int32_t(std::floor(options.random_range_ratio * length)));
    };
    for (int32_t i = 0; i < num_prompts; ++i) {
      input_lens_[i] = int32_t(length_rng.uniform_int(low(options.isl), options.isl));
      output_lens_[i] = int32_t(length_rng.uniform_int(low(options.osl), options.osl));
    }
    shared_blocks_ = int32_t(options.shared_prefix_fraction * low(options.isl)) / block_size_;
    for (int32_t b = 0; b < shared_blocks_; ++b) shared_prefix_.push_back(prompt_rng_.next());
  }
  int32_t size() const { return int32_t(input_lens_.size()); }
  int32_t input_len(int32_t index) const { return input_lens_[index]; }
  int32_t output_len(int32_t index) const { return output_lens_[index]; }
  CoreRequest request(int32_t index, int64_t send_ns) {
    CoreRequest request;
    request.prompt_tokens = input_lens_[index];
    request.max_tokens = output_lens_[index];
    request.output_tokens = output_lens_[index];
    const int32_t full_blocks = input_lens_[index] / block_size_;
    request.block_hashes.reserve(full_blocks);
    for (int32_t b = 0; b < full_blocks; ++b)
      request.block_hashes.push_back(b < shared_blocks_ ? shared_prefix_[b] : prompt_rng_.next());
    request.shared_blocks = shared_blocks_;  // the rest are random draws no other prompt has
    request.arrival_ns = send_ns;
    return request;
  }

 private:
  Rng prompt_rng_;
  int32_t block_size_;
  int32_t shared_blocks_ = 0;
  std::vector<int32_t> input_lens_, output_lens_;
  std::vector<uint64_t> shared_prefix_;
};

// What one closed-loop run leaves: per-request records without content events (the events are
// summarised as the engine emits them; the first wave is sent at t = 0, where the busiest
// second's buckets start).
struct ClosedLoopRun {
  std::vector<metrics::RequestRecord> records;
  metrics::ServeSummary summary{metrics::TokenSamples::kCounted, 0};
  std::vector<uint64_t> request_ids;
  std::vector<int64_t> engine_scheduled_ns;  // the core's first admission, -1 if never
  int64_t end_ns = 0;
};

// Closed loop at max concurrency: `conc` requests at t = 0, each completion sends the next.
Result<void> run_closed_loop(EngineCore& core, Dataset& dataset, const PredictOptions& options, int32_t conc,
                             ClosedLoopRun& run) {
  const int32_t num_prompts = dataset.size();
  run.records.resize(num_prompts);
  run.request_ids.assign(num_prompts, 0);
  run.engine_scheduled_ns.assign(num_prompts, -1);
  std::vector<int32_t> index_of;  // request id - 1 -> dataset index
  index_of.reserve(num_prompts);
  int32_t next_index = 0;
  std::optional<Error> submit_error;
  auto send = [&](int64_t send_ns) {
    const int32_t index = next_index++;
    auto& record = run.records[index];
    record.index = index;
    record.prompt_len = dataset.input_len(index);
    record.expected_output_len = dataset.output_len(index);
    record.scheduled_ns = send_ns;
    record.send_ns = send_ns;
    auto id = core.submit(dataset.request(index, send_ns));
    if (!id) {
      if (!submit_error) submit_error = id.error();
      record.success = false;
      record.error_kind = metrics::ErrorKind::kHttpStatus;
      record.http_status = 400;
      record.error_message = id.error().message();
      record.end_ns = send_ns;
      return;
    }
    run.request_ids[index] = *id;
    if (index_of.size() < *id) index_of.resize(*id, -1);
    index_of[*id - 1] = index;
  };
  for (int32_t i = 0; i < std::min(conc, num_prompts); ++i) send(0);
  core.run_until(kNever, [&](const TokenEvent& event) {
    // Most events are a running request's next tokens: only the summary takes them.
    if (!options.summary_only) run.summary.add_content_event(event.previous_ns, event.time_ns, event.new_tokens);
    if (event.previous_ns != 0 && event.finish == FinishReason::kNone) return;
    const int32_t index = index_of[event.request_id - 1];
    auto& record = run.records[index];
    if (event.previous_ns == 0) {
      record.first_token_ns = event.time_ns;
      record.first_byte_ns = event.time_ns;
      run.engine_scheduled_ns[index] = event.scheduled_ns;
    }
    if (event.finish != FinishReason::kNone) {
      record.success = true;
      record.end_ns = event.time_ns;
      record.output_len = event.total_output_tokens;
      record.server_output_tokens = event.total_output_tokens;
      if (next_index < num_prompts) send(event.time_ns);
    }
  });
  if (submit_error) return fail(submit_error->with_context(fmt::format("conc {}", conc)));
  for (const auto& record : run.records) run.end_ns = std::max(run.end_ns, record.end_ns);
  return {};
}

// Weight of request i in the summary statistics (see PredictOptions::represented_prompts).
struct RequestWeights {
  int32_t burst = 0;
  double later = 1.0;
  double operator()(int64_t index) const { return index < burst ? 1.0 : later; }
};

RequestWeights weights_for(const PredictOptions& options, int32_t conc, int32_t num_prompts) {
  RequestWeights weights{std::min(conc, num_prompts), 1.0};
  if (options.summary_only && options.represented_prompts > num_prompts && num_prompts > weights.burst)
    weights.later = double(options.represented_prompts - weights.burst) / double(num_prompts - weights.burst);
  return weights;
}

double ttft_queue_share(const ClosedLoopRun& run, const RequestWeights& weight_of) {
  double queued_s = 0, to_first_token_s = 0;
  for (const auto& record : run.records) {
    const int64_t scheduled_ns = run.engine_scheduled_ns[record.index];
    if (!record.success || scheduled_ns < 0) continue;
    const double w = weight_of(record.index);
    queued_s += w * std::max<int64_t>(0, scheduled_ns - record.send_ns) / 1e9;
    to_first_token_s += w * (record.first_token_ns - record.send_ns) / 1e9;
  }
  return to_first_token_s > 0 ? std::min(1.0, queued_s / to_first_token_s) : 0.0;
}

// summary_only: weighted medians and throughputs, no result JSON.
void summarise_medians(const ClosedLoopRun& run, const RequestWeights& weight_of, PredictPoint& point) {
  std::vector<std::pair<double, double>> ttfts, tpots, e2els;  // (value, weight)
  double tokens = 0, output_tokens = 0;
  for (const auto& record : run.records) {
    if (!record.success) continue;
    const double w = weight_of(record.index);
    ttfts.emplace_back((record.first_token_ns - record.send_ns) / 1e9, w);
    e2els.emplace_back((record.end_ns - record.send_ns) / 1e9, w);
    if (record.output_len > 1)
      tpots.emplace_back((record.end_ns - record.first_token_ns) / 1e9 / double(record.output_len - 1), w);
    tokens += record.prompt_len + record.output_len;
    output_tokens += record.output_len;
  }
  const double duration_s = std::max(run.end_ns, int64_t(1)) / 1e9;
  point.median_ttft_s = weighted_median(ttfts);
  point.median_tpot_s = weighted_median(tpots);
  point.median_e2el_s = weighted_median(e2els);
  point.tput_per_gpu = tokens / duration_s / point.num_gpus;
  point.output_tput_per_gpu = output_tokens / duration_s / point.num_gpus;
}

// The SPEC §4 raw result + SPEC §5 aggregates, and the point's headline numbers read from it.
void build_result(ClosedLoopRun& run, const ResolvedEngine& launched, const PredictOptions& options, int32_t conc,
                  PredictPoint& point) {
  metrics::ServeRunInfo info;
  info.date = options.date;
  info.backend = framework_family_name(launched.family);
  info.model_id = options.model_id.empty() ? launched.model.name : options.model_id;
  info.tokenizer_id = info.model_id;
  info.num_prompts = int32_t(run.records.size());
  info.request_rate = std::numeric_limits<double>::infinity();
  info.max_concurrency = conc;
  info.start_ns = 0;
  info.end_ns = run.end_ns;
  info.metric_percentiles = options.metric_percentiles;
  for (const auto& record : run.records) run.summary.add_request(record);
  point.result = std::move(run.summary).result(info);
  add_aggregates(point.result, launched.config, point.num_gpus);
  point.result["scheduler_recv_interval"] = launched.config.scheduler_recv_interval;
  point.result["max_num_seqs"] = launched.config.max_num_seqs;
  point.result["max_num_batched_tokens"] = launched.config.max_num_batched_tokens;
  point.result["sim_ttft_queue_share"] = point.ttft_queue_share;
  point.median_ttft_s = number_or_zero(point.result, "median_ttft_ms") / 1000.0;
  point.median_tpot_s = number_or_zero(point.result, "median_tpot_ms") / 1000.0;
  point.median_e2el_s = number_or_zero(point.result, "median_e2el_ms") / 1000.0;
  point.tput_per_gpu = number_or_zero(point.result, "tput_per_gpu");
  point.output_tput_per_gpu = number_or_zero(point.result, "output_tput_per_gpu");
}

// Mean seconds per cost bucket to the first token, and per output token after it.
void attribute_costs(const EngineCore& core, const ClosedLoopRun& run, const RequestWeights& weight_of,
                     PredictPoint& point) {
  double counted = 0;
  for (size_t i = 0; i < run.records.size(); ++i) {
    auto cost = core.request_cost(run.request_ids[i]);
    if (!cost || run.records[i].output_len < 2) continue;
    const double w = weight_of(int64_t(i));
    for (size_t b = 0; b < cost->to_first_token.size(); ++b) {
      point.ttft_cost[b] += w * cost->to_first_token[b];
      point.tpot_cost[b] += w * cost->after_first_token[b] / double(run.records[i].output_len - 1);
    }
    counted += w;
  }
  if (counted > 0)
    for (size_t b = 0; b < point.ttft_cost.size(); ++b) {
      point.ttft_cost[b] /= counted;
      point.tpot_cost[b] /= counted;
    }
}

}  // namespace

Result<PredictPoint> predict_point(const ResolvedEngine& engine, const PredictOptions& options, int32_t conc) {
  if (auto ok = check_point_options(engine, options, conc); !ok) return fail(ok.error());
  const int32_t num_prompts = options.num_prompts > 0 ? options.num_prompts : 10 * conc;
  const ResolvedEngine launched = launched_for(engine, options, conc);
  auto created = EngineCore::create(launched);
  if (!created) return fail(created.error());
  EngineCore& core = **created;
  core.record_costs(options.record_costs);
  Dataset dataset(engine, options, num_prompts);
  ClosedLoopRun run;
  if (auto ok = run_closed_loop(core, dataset, options, conc, run); !ok) return fail(ok.error());

  PredictPoint point;
  point.conc = conc;
  point.num_gpus = total_gpus(engine.config);
  const RequestWeights weights = weights_for(options, conc, num_prompts);
  point.ttft_queue_share = ttft_queue_share(run, weights);
  if (options.summary_only) {
    summarise_medians(run, weights, point);
  } else {
    build_result(run, launched, options, conc, point);
  }
  point.duration_s = run.end_ns / 1e9;
  point.num_preemptions = core.metrics().num_preemptions;
  point.kv_blocks_per_rank = core.kv_blocks_per_rank(true);
  if (options.record_costs) attribute_costs(core, run, weights, point);
  return point;
}

Result<std::vector<PredictPoint>> predict(const PredictOptions& options) {
  if (options.concurrencies.empty()) return fail(ErrorCode::kInvalidArgument, "--conc needs at least one concurrency");
  for (double percentile : options.metric_percentiles)
    if (!(percentile >= 0 && percentile <= 100))
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--metric-percentiles values must be in [0, 100], got {}", percentile));
  if (auto ok = validate(options.engine); !ok) return fail(ok.error());
  auto engine = resolve_engine(options.engine);
  if (!engine) return fail(engine.error());
  std::vector<PredictPoint> points;
  for (int32_t conc : options.concurrencies) {
    auto point = predict_point(*engine, options, conc);
    if (!point) return fail(point.error());
    points.push_back(std::move(*point));
  }
  return points;
}

}  // namespace ix::sim
