#include "bench/serve_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <thread>

#include "bench/serve_output.h"
#include "bench/serve_plan.h"
#include "bench/serve_runner.h"
#include "bench/server_prompts.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/sanitize.h"
#include "common/stop_signal.h"
#include "metrics/serve_result.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/prompt_synth.h"
#include "tokenizer/tokenizer.h"
#include "workload/arrivals.h"
#include "workload/random_dataset.h"

namespace ix::bench {

namespace {

// Prompt tokens made ahead of the sends at most (~300 MB of text).
constexpr int64_t kPrefetchTokenBudget = int64_t{1} << 26;

// `t` in local time, as strftime(`format`) writes it (at most 63 characters).
std::string local_strftime(std::time_t t, const char* format) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), format, &tm);
  return std::string(buf, n);
}

// A local time as Python's datetime.now().isoformat(): 2026-12-01T08:10:03.123456.
std::string local_iso_time(double unix_s) {
  const double whole = std::floor(unix_s);
  const int micros = std::min(999'999, static_cast<int>(std::llround((unix_s - whole) * 1e6)));
  return fmt::format("{}.{:06d}", local_strftime(static_cast<std::time_t>(whole), "%Y-%m-%dT%H:%M:%S"), micros);
}

// vLLM's rps_change_events of a ramp-up: {"rps": start, the run's start}, then one event per whole
// requests/s the rate passes, stamped with the (scheduled) dispatch time of the request that
// passed it.
boost::json::array rps_change_events(const workload::ArrivalOptions& arrivals, size_t count, double start_unix_s) {
  boost::json::array events;
  auto offsets = workload::arrival_offsets_ns(count, arrivals);
  if (!offsets) return events;  // validated before the run
  int64_t last = static_cast<int64_t>(arrivals.ramp_up_start_rps);
  events.push_back({{"rps", last}, {"timestamp", local_iso_time(start_unix_s)}});
  for (size_t i = 0; i < count; ++i) {
    const auto now = static_cast<int64_t>(workload::arrival_rate(i, count, arrivals));
    if (now <= last) continue;
    const std::string stamp = local_iso_time(start_unix_s + static_cast<double>((*offsets)[i]) / 1e9);
    for (int64_t rps = last + 1; rps <= now; ++rps) events.push_back({{"rps", rps}, {"timestamp", stamp}});
    last = now;
  }
  return events;
}

// --ready-check-timeout-sec: one small request (the run's body with a short prompt and 1 output
// token) to the endpoint, retried every second until it answers 200, the time is up, the watched
// server exits or a stop signal arrives (vLLM retries its first prompt every 5 s). Returns the
// seconds waited. Errors: kUnavailable / kTimeout naming the last answer.
Result<double> wait_until_ready(const ServeRunnerOptions& run, double timeout_s) {
  openai::CompletionRequest probe;
  probe.model = run.model;
  probe.prompt = "Hello";
  probe.max_tokens = 1;
  probe.ignore_eos = run.ignore_eos;
  probe.extra_body = &run.extra_body;
  probe.logprobs = run.logprobs;
  const std::string body = openai::build_request_body(run.backend, probe);
  const std::vector<http::Header> headers = server_headers(run);
  constexpr int64_t kRetryNs = 1'000'000'000;
  const int64_t start = SteadyClock().now_ns();
  const int64_t deadline = start + static_cast<int64_t>(timeout_s * 1e9);
  const std::string where = run.base.origin() + run.endpoint;
  std::string last;
  for (int attempt = 1;; ++attempt) {
    const int64_t now = SteadyClock().now_ns();
    auto reply = http::fetch(run.base, "POST", run.endpoint, body, headers, std::max<int64_t>(deadline - now, kRetryNs),
                             run.verify_tls);
    if (reply && reply->status == 200) {
      const double waited = static_cast<double>(SteadyClock().now_ns() - start) / 1e9;
      if (attempt > 1) log::info("bench serve: {} answered after {:.1f} s ({} attempts)", where, waited, attempt);
      return waited;
    }
    last = ix::printable(reply ? fmt::format("HTTP {}: {}", reply->status, reply->body.substr(0, 200))
                               : reply.error().message());
    // The next attempt a second after this one began, in short sleeps that notice a stop signal.
    const int64_t next = std::min(now + kRetryNs, deadline);
    while (true) {
      if (StopSignals::stopped())
        return fail(ErrorCode::kUnavailable,
                    fmt::format("interrupted while waiting for {} to answer (nothing was measured)", where));
      if (run.server_pid > 0 && !process_alive(run.server_pid))
        return fail(ErrorCode::kUnavailable,
                    fmt::format("server process {} exited while waiting for {} to answer (last answer: {})",
                                run.server_pid, where, last));
      const int64_t left = next - SteadyClock().now_ns();
      if (left <= 0) break;
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 50'000'000)));
    }
    if (SteadyClock().now_ns() >= deadline)
      return fail(ErrorCode::kTimeout,
                  fmt::format("--ready-check-timeout-sec {}: {} did not answer 200 within {} s ({} attempts; last "
                              "answer: {}); is the server up and is --base-url / --endpoint right?",
                              timeout_s, where, timeout_s, attempt, last));
  }
}

// The tokenizer, lengths and prompt source of a run. Not movable: the dataset points into the
// synthesizer, the synthesizer into the tokenizer, the prefetcher into the dataset.
struct Workload {
  std::unique_ptr<tok::Tokenizer> tokenizer;
  std::optional<tok::PromptSynth> synth;
  std::optional<workload::RandomDataset> dataset;
  workload::DatasetShapes shapes;
  std::unique_ptr<workload::PromptPrefetcher> prefetcher;
  // --tokenizer-from-server: every prompt, made before the run, by send position (no tokenizer,
  // synthesizer, dataset or prefetcher then).
  std::vector<std::string> server_prompts;
  double tokenizer_load_s = 0;  // the tokenizer's load, or the time the server took to make the prompts
};

// The chat template prompts are framed with, or nullopt for plain completions text: the model's
// own (its tokenizer files' chat_template), or DeepSeek-V4's encoding.
Result<std::optional<tok::ChatTemplate>> chat_template_of(const BenchServeOptions& o, const ServePlan& plan,
                                                          const tok::Tokenizer& tokenizer) {
  switch (plan.framing) {
    case PromptFraming::kPlain: return std::optional<tok::ChatTemplate>();
    case PromptFraming::kDeepSeekV4: return std::optional<tok::ChatTemplate>(tok::ChatTemplate::deepseek_v4());
    case PromptFraming::kModelTemplate: break;
  }
  auto found = tok::ChatTemplate::for_tokenizer(tokenizer);
  if (found) return std::optional<tok::ChatTemplate>(std::move(*found));
  if (o.use_chat_template) return std::unexpected(found.error().with_context("--use-chat-template"));
  log::warn("bench serve: {}: chat prompts carry the server's template overhead on top of --random-input-len",
            found.error().message());
  return std::optional<tok::ChatTemplate>();
}

// A drawn length the prompt source cannot make would end the run at that request, discarding all
// measured before it; refused before the run instead.
Result<void> check_shortest_prompt(const BenchServeOptions& o, const ServePlan& plan,
                                   const workload::DatasetShapes& shapes, int64_t min_tokens) {
  int64_t shortest = std::numeric_limits<int64_t>::max();
  for (const auto* list : {&shapes.measured, &shapes.warmups}) {
    for (const auto& s : *list) shortest = std::min(shortest, s.prompt_len);
  }
  if (shortest >= min_tokens) return {};
  return fail(
      ErrorCode::kInvalidArgument,
      fmt::format("--random-input-len {} with --random-range-ratio {} draws {}-token prompts, shorter than the "
                  "chat template's own {} tokens + 1 ({}): raise them so that floor(r*L) >= {}",
                  o.random_input_len, o.random_range_ratio, shortest, min_tokens - 1,
                  openai::uses_chat(plan.backend) ? "--backend openai-chat" : "--use-chat-template", min_tokens));
}

Result<workload::DatasetShapes> draw_shapes(const BenchServeOptions& o, const ServePlan& plan) {
  return workload::random_shapes({.input_len = o.random_input_len,
                                  .output_len = o.random_output_len,
                                  .range_ratio = o.random_range_ratio,
                                  .num_prompts = static_cast<size_t>(plan.num_prompts),
                                  .num_warmups = static_cast<size_t>(plan.num_warmups),
                                  .seed = o.seed});
}

// (global index, tokens) of each prompt in send order: the warmups, then the measured requests.
std::vector<std::pair<size_t, int64_t>> send_order(const workload::DatasetShapes& shapes) {
  std::vector<std::pair<size_t, int64_t>> order;
  order.reserve(shapes.warmups.size() + shapes.measured.size());
  for (size_t i = 0; i < shapes.warmups.size(); ++i)
    order.emplace_back(shapes.measured.size() + i, shapes.warmups[i].prompt_len);
  for (size_t i = 0; i < shapes.measured.size(); ++i) order.emplace_back(i, shapes.measured[i].prompt_len);
  return order;
}

// --tokenizer-from-server: draws the lengths and has the server's /tokenize and /detokenize make
// every prompt before the run.
Result<std::unique_ptr<Workload>> prepare_server_workload(const BenchServeOptions& o, const ServePlan& plan) {
  auto w = std::make_unique<Workload>();
  auto shapes = draw_shapes(o, plan);
  if (!shapes) return std::unexpected(shapes.error());
  w->shapes = std::move(*shapes);
  const int64_t start = SteadyClock().now_ns();
  ServerPromptOptions server{
      .base_url = plan.base,
      .model = o.served_model_name.empty() ? o.model : o.served_model_name,
      .headers = plan.headers,
      .verify_tls = !o.insecure,
      .seed = o.seed,
      .format = openai::uses_chat(plan.backend) ? workload::PromptFormat::kChatContent : workload::PromptFormat::kPlain,
      .request_timeout_ns = static_cast<int64_t>(std::min(o.request_timeout_s, 600.0) * 1e9)};
  if (const char* key = std::getenv("OPENAI_API_KEY"); key && *key)
    server.headers.insert(server.headers.begin(), {"Authorization", fmt::format("Bearer {}", key)});
  auto maker = ServerPromptMaker::create(std::move(server));
  if (!maker) return std::unexpected(maker.error().with_context("--tokenizer-from-server"));
  if (auto ok = check_shortest_prompt(o, plan, w->shapes, maker->min_prompt_tokens()); !ok)
    return std::unexpected(ok.error());
  auto prompts = maker->make(send_order(w->shapes));
  if (!prompts) return std::unexpected(prompts.error().with_context("--tokenizer-from-server"));
  w->server_prompts = std::move(*prompts);
  w->tokenizer_load_s = static_cast<double>(SteadyClock().now_ns() - start) / 1e9;
  log::info("bench serve: the server made {} prompts in {:.2f} s", w->server_prompts.size(), w->tokenizer_load_s);
  return w;
}

// Loads the tokenizer, draws the lengths and starts prompt synthesis ahead of the sends; returns
// once the first wave of prompts is ready.
Result<std::unique_ptr<Workload>> prepare_workload(const BenchServeOptions& o, const ServePlan& plan) {
  if (o.tokenizer_from_server) return prepare_server_workload(o, plan);
  auto w = std::make_unique<Workload>();
  const int64_t tok_start = SteadyClock().now_ns();
  auto tokenizer = tok::load_tokenizer(plan.tokenizer_name);
  if (!tokenizer)
    return std::unexpected(tokenizer.error().with_context(
        fmt::format("--tokenizer {} (or --tokenizer-from-server: the server makes the prompts)", plan.tokenizer_name)));
  w->tokenizer = std::move(*tokenizer);
  auto synth = tok::PromptSynth::create(*w->tokenizer);
  if (!synth) return std::unexpected(synth.error());
  w->synth.emplace(std::move(*synth));
  w->tokenizer_load_s = static_cast<double>(SteadyClock().now_ns() - tok_start) / 1e9;

  auto chat = chat_template_of(o, plan, *w->tokenizer);
  if (!chat) return std::unexpected(chat.error());
  const workload::PromptFormat format = !*chat                            ? workload::PromptFormat::kPlain
                                        : openai::uses_chat(plan.backend) ? workload::PromptFormat::kChatContent
                                                                          : workload::PromptFormat::kChatRendered;
  const tok::Thinking thinking =
      plan.framing == PromptFraming::kDeepSeekV4 ? tok::Thinking::kOn : tok::Thinking::kDefault;
  auto shapes = draw_shapes(o, plan);
  if (!shapes) return std::unexpected(shapes.error());
  w->shapes = std::move(*shapes);
  w->dataset.emplace(*w->synth, format, *chat, o.seed, thinking);
  auto min_tokens = w->dataset->min_prompt_tokens();
  if (!min_tokens) return std::unexpected(min_tokens.error());
  if (auto ok = check_shortest_prompt(o, plan, w->shapes, *min_tokens); !ok) return std::unexpected(ok.error());

  const int synth_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - plan.threads);
  const size_t lookahead = static_cast<size_t>(
      std::clamp<int64_t>(kPrefetchTokenBudget / std::max<int64_t>(1, o.random_input_len), 16, 65536));
  w->prefetcher =
      std::make_unique<workload::PromptPrefetcher>(*w->dataset, send_order(w->shapes), synth_threads, lookahead);
  // What the first moment of the run needs (the first wave of sends, up to 1024 prompts: a few
  // hundred ms at most); the rest is made while it runs, warmups first.
  const int64_t first_wave = std::min<int64_t>(o.max_concurrency.value_or(1024), 1024);
  if (auto ok = w->prefetcher->wait_for_first(static_cast<size_t>(first_wave)); !ok) return std::unexpected(ok.error());
  return w;
}

void print_progress(const ServeProgress& p) {
  const int64_t done = p.completed + p.failed;
  const double rate = p.elapsed_s > 0 ? static_cast<double>(p.output_tokens) / p.elapsed_s : 0.0;
  const double eta = done > 0 ? p.elapsed_s / static_cast<double>(done) * static_cast<double>(p.total - done) : 0.0;
  if (p.warmup) {
    fmt::print(stderr, "\r\033[Kwarmup: {} requests, {:.1f} s", p.total, p.elapsed_s);
  } else {
    const std::string eta_text = done > 0 ? fmt::format("{:.0f} s", eta) : std::string("?");
    fmt::print(stderr, "\r\033[K{}/{} done, {} errors, {:.0f} tok/s, ETA {}", done, p.total, p.failed, rate, eta_text);
  }
  std::fflush(stderr);
}

ServeRunnerOptions runner_options(const BenchServeOptions& o, const ServePlan& plan, Workload& w) {
  ServeRunnerOptions run;
  run.base = plan.base;
  run.endpoint = plan.endpoint;
  run.backend = plan.backend;
  run.model = o.served_model_name.empty() ? o.model : o.served_model_name;
  run.ignore_eos = o.ignore_eos;
  run.continuous_usage = o.continuous_usage;
  run.extra_body = plan.body_fields;
  if (const char* key = std::getenv("OPENAI_API_KEY"); key && *key) run.api_key = key;
  run.extra_headers = plan.headers;
  run.request_id_prefix = o.request_id_prefix.value_or("");
  run.logprobs = o.logprobs;
  if (!o.lora_modules.empty()) {
    run.lora_modules = o.lora_modules;
    Rng pick = Rng::stream(o.seed, "lora-modules");
    run.lora_choice.reserve(w.shapes.measured.size());
    for (size_t i = 0; i < w.shapes.measured.size(); ++i)
      run.lora_choice.push_back(
          static_cast<uint32_t>(pick.uniform_int(0, static_cast<int64_t>(o.lora_modules.size()) - 1)));
  }
  run.verify_tls = !o.insecure;
  run.warmups = w.shapes.warmups;
  run.measured = w.shapes.measured;
  if (workload::PromptPrefetcher* prefetcher = w.prefetcher.get()) {
    run.prompt = [prefetcher](size_t k, int64_t* waited) { return prefetcher->take(k, waited); };
  } else {
    std::vector<std::string>* prompts = &w.server_prompts;
    run.prompt = [prompts](size_t k, int64_t* waited) -> Result<std::string> {
      if (waited) *waited = 0;
      return std::move((*prompts)[k]);
    };
  }
  run.max_concurrency = o.max_concurrency;
  run.arrivals = plan.arrivals;
  run.request_timeout_ns = static_cast<int64_t>(o.request_timeout_s * 1e9);
  run.max_retries = o.max_retries;
  run.threads = plan.threads;
  run.server_pid = o.server_pid.value_or(0);
  run.interrupt = &StopSignals::flag();
  run.loop_lag_threshold_ms = o.loop_lag_threshold_ms;
  run.scrape_server_metrics = o.scrape_metrics;
  run.configured_acceptance_length = o.spec_acceptance_length;
  run.profile = o.profile;
  if (o.progress && ::isatty(STDERR_FILENO)) run.on_progress = print_progress;
  return run;
}

// Client-side token counts: output_len where the server sent no usage, and the check of the
// server's counts. Parallel, off the measured path. Returns the requests that came back shorter
// than asked for although --ignore-eos was on.
int64_t count_output_tokens(const BenchServeOptions& o, const tok::Tokenizer* tokenizer, ServeRunnerOutput& output) {
  if (o.count_client_tokens && tokenizer) {
    auto& recs = output.records;
    const size_t n = recs.size();
    std::vector<std::thread> pool;
    std::atomic<size_t> next{0};
    for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) {
      pool.emplace_back([&] {
        for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
          if (recs[i].success)
            recs[i].client_output_tokens = static_cast<int64_t>(tokenizer->count_tokens(output.generated_texts[i]));
        }
      });
    }
    for (auto& t : pool) t.join();
  }
  int64_t short_outputs = 0, uncounted = 0;
  for (auto& r : output.records) {
    if (!r.success) continue;
    if (r.output_len < 0 && r.client_output_tokens < 0) ++uncounted;
    if (r.output_len < 0) r.output_len = std::max<int64_t>(r.client_output_tokens, 0);
    if (o.ignore_eos && r.output_len < r.expected_output_len) ++short_outputs;
  }
  if (uncounted > 0)
    log::warn(
        "bench serve: {} requests came back without usage.completion_tokens and no local tokenizer counts them "
        "(--tokenizer-from-server): their output length is 0",
        uncounted);
  return short_outputs;
}

// What the run was asked to do, recorded in the result's "ixbench" object.
void record_settings(const BenchServeOptions& o, const ServePlan& plan, boost::json::object& extra) {
  extra["num_warmups"] = plan.num_warmups;
  extra["label"] = o.label.empty() ? boost::json::value(nullptr) : boost::json::value(o.label);
  if (!plan.sampling.empty()) extra["sampling_params"] = plan.sampling;
  if (o.request_id_prefix) extra["request_id_prefix"] = *o.request_id_prefix;
  if (o.logprobs) extra["logprobs"] = *o.logprobs;
  if (!o.lora_modules.empty()) {
    boost::json::array modules;
    for (const auto& m : o.lora_modules) modules.emplace_back(m);
    extra["lora_modules"] = std::move(modules);
  }
  if (!plan.headers.empty()) {
    // Names only: values may be credentials.
    boost::json::array names;
    for (const auto& h : plan.headers) names.emplace_back(h.name);
    extra["extra_header_names"] = std::move(names);
  }
  extra["random_input_len"] = o.random_input_len;
  extra["random_output_len"] = o.random_output_len;
  extra["random_range_ratio"] = o.random_range_ratio;
  extra["seed"] = o.seed;
  extra["endpoint"] = plan.endpoint;
  extra["use_chat_template"] = plan.framing != PromptFraming::kPlain;
  extra["chat_encoding"] = plan.framing == PromptFraming::kDeepSeekV4      ? "deepseek_v4"
                           : plan.framing == PromptFraming::kModelTemplate ? "model"
                                                                           : "none";
  extra["tokenizer_mode"] = o.tokenizer_mode;
  extra["tokenizer_from_server"] = o.tokenizer_from_server;
  extra["trust_remote_code"] = o.trust_remote_code;
  extra["continuous_usage_stats"] = o.continuous_usage && openai::supports_continuous_usage(plan.backend);
}

struct RunTimings {
  double startup_s = 0;
  double ready_wait_s = 0;
  double tokenizer_load_s = 0;
  bool ready_checked = false;
};

boost::json::object assemble_result(const BenchServeOptions& o, const ServePlan& plan, const ServeRunnerOutput& output,
                                    int64_t short_outputs, const RunTimings& timings) {
  metrics::ServeRunInfo info;
  info.date = o.date.empty() ? local_strftime(std::time(nullptr), "%Y%m%d-%H%M%S") : o.date;
  info.backend = o.backend;
  info.model_id = o.model;
  info.tokenizer_id = plan.tokenizer_name;
  info.num_prompts = plan.num_prompts;
  info.request_rate = plan.request_rate;
  info.burstiness = o.burstiness;
  info.max_concurrency = o.max_concurrency;
  info.start_ns = output.start_ns;
  info.end_ns = output.end_ns;
  info.start_unix_s = output.start_unix_s;
  info.end_unix_s = output.end_unix_s;
  info.client = output.client;
  info.percentile_metrics = plan.percentile_metrics;
  info.metric_percentiles = plan.metric_percentiles;
  info.goodput_slo_ms = plan.goodput_slo_ms;
  boost::json::array reasons;
  for (const auto& r : output.invalid_reasons) reasons.emplace_back(r);
  info.extra["invalid_reasons"] = std::move(reasons);
  record_settings(o, plan, info.extra);
  info.extra["short_output_requests"] = short_outputs;
  info.extra["startup_s"] = timings.startup_s;
  if (timings.ready_checked) info.extra["ready_check_wait_s"] = timings.ready_wait_s;
  info.extra["tokenizer_load_s"] = timings.tokenizer_load_s;
  if (plan.arrivals.ramp_up != workload::RampUp::kNone) {
    // vLLM's fields: the ramp, and when the rate passed each whole requests/s.
    info.extra["ramp_up_strategy"] = o.ramp_up_strategy;
    info.extra["ramp_up_start_rps"] = *o.ramp_up_start_rps;
    info.extra["ramp_up_end_rps"] = *o.ramp_up_end_rps;
    info.extra["rps_change_events"] = rps_change_events(plan.arrivals, output.records.size(), output.start_unix_s);
  }
  for (const auto& [key, value] : output.extra) info.extra[key] = value;
  // The records hold measured requests only: the warmups the run excluded are counted here.
  info.extra["num_warmups_excluded"] = output.warmup_done;
  boost::json::object result = metrics::build_serve_result(output.records, info);
  // As vLLM: metadata is added beside the measurements and never replaces one of them.
  for (const auto& [key, value] : plan.metadata) {
    if (result.contains(key)) {
      log::warn("bench serve: --metadata {}: the result already has a field '{}'; kept the measured value", key,
                std::string_view(key));
      continue;
    }
    result[key] = value;
  }
  return result;
}

void log_start(const BenchServeOptions& o, const ServePlan& plan, const ServeRunnerOptions& run) {
  log::info("bench serve: {} {} model {} | {} prompts + {} warmups | concurrency {} | rate {} | {} client threads",
            plan.base.origin(), run.endpoint, run.model, plan.num_prompts, plan.num_warmups,
            o.max_concurrency ? std::to_string(*o.max_concurrency) : "unlimited",
            o.ramp_up_strategy.empty() ? o.request_rate
                                       : fmt::format("ramp-up {} {} -> {} req/s", o.ramp_up_strategy,
                                                     plan.arrivals.ramp_up_start_rps, plan.arrivals.ramp_up_end_rps),
            plan.threads);
}

// The credentials of a run (OPENAI_API_KEY, with its "Bearer" form, and every --header value:
// Authorization among them) are redacted from everything stored or printed from here on, so a
// server that echoes them in an error body never gets them into a result, the JSONL or stderr.
void register_run_secrets(const ServePlan& plan) {
  if (const char* key = std::getenv("OPENAI_API_KEY"); key && *key) {
    ix::register_secret(fmt::format("Bearer {}", key));
    ix::register_secret(key);
  }
  for (const auto& header : plan.headers) ix::register_secret(header.value);
}

// Exit status for a stop signal that arrived before anything was measured (nothing to write).
std::optional<int> stopped_before_run() {
  const int sig = StopSignals::signal();
  if (sig == 0) return std::nullopt;
  log::error("bench serve: stopped by signal {} before the run started (nothing was measured)", sig);
  return 128 + sig;
}

}  // namespace

Result<int> run_bench_serve(const BenchServeOptions& o) {
  const int64_t launch_ns = SteadyClock().now_ns();
  // From the start: a signal while the tokenizer loads or the server is awaited ends the command
  // with 128 + the signal, like one during the run.
  StopSignals stop_signals;
  auto plan = plan_serve(o);
  if (!plan) return std::unexpected(plan.error());
  register_run_secrets(*plan);
  auto workload = prepare_workload(o, *plan);
  if (auto stopped = stopped_before_run()) return *stopped;
  if (!workload) return std::unexpected(workload.error());
  if (plan->save) {
    if (auto ok = check_result_target(o); !ok) return std::unexpected(ok.error());
  }
  ServeRunnerOptions run = runner_options(o, *plan, **workload);
  log_start(o, *plan, run);

  RunTimings timings{.tokenizer_load_s = (*workload)->tokenizer_load_s, .ready_checked = o.ready_check_timeout_s > 0};
  if (timings.ready_checked) {
    auto waited = wait_until_ready(run, o.ready_check_timeout_s);
    if (auto stopped = stopped_before_run()) return *stopped;
    if (!waited) return std::unexpected(waited.error());
    timings.ready_wait_s = *waited;
  }
  if (auto stopped = stopped_before_run()) return *stopped;
  // Launch to the first request, without the wait for the server (--ready-check-timeout-sec).
  timings.startup_s = static_cast<double>(SteadyClock().now_ns() - launch_ns) / 1e9 - timings.ready_wait_s;
  auto output = run_serve(run);
  if (run.on_progress) fmt::print(stderr, "\r\033[K");
  if (!output) return std::unexpected(output.error());

  const int64_t short_outputs = count_output_tokens(o, (*workload)->tokenizer.get(), *output);
  const boost::json::object result = assemble_result(o, *plan, *output, short_outputs, timings);
  Result<void> saved;
  if (plan->save) saved = save_result(o, *plan, result, output->records, output->start_ns);
  // The summary is printed even when the file could not be written: it is all that is left.
  // With the result on stdout the summary goes to stderr, so stdout is the JSON alone.
  std::FILE* summary = plan->save && result_on_stdout(o) ? stderr : stdout;
  fmt::print(summary, "{}", metrics::format_serve_summary(result));
  std::fflush(summary);
  if (!saved) return std::unexpected(saved.error());
  if (output->fatal) return std::unexpected(output->fatal->with_context("bench serve stopped early"));
  const boost::json::object& own = result.at("ixbench").as_object();
  return exit_status(o,
                     {.completed = result.at("completed").as_int64(),
                      .failed = result.at("failed").as_int64(),
                      .run_valid = own.at("run_valid").as_bool(),
                      .stop_signal = StopSignals::signal()},
                     result);
}

}  // namespace ix::bench
