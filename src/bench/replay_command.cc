#include "bench/replay_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "bench/aiperf_export.h"
#include "bench/exchange.h"
#include "bench/replay_output.h"
#include "bench/replay_runner.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "common/log.h"
#include "common/sanitize.h"
#include "common/stop_signal.h"
#include "metrics/replay_result.h"
#include "tokenizer/tokenizer.h"
#include "workload/trace.h"

namespace ix::bench {
namespace {

Error invalid(std::string message) {
  return Error(ErrorCode::kInvalidArgument, std::move(message));
}

// --extra-inputs: aiperf's `key:value` items (the value read as JSON when it is, else as text),
// or one JSON object.
Result<boost::json::object> parse_extra_inputs(const std::vector<std::string>& items) {
  boost::json::object out;
  for (const auto& item : items) {
    if (!item.empty() && item.front() == '{') {
      auto parsed = json::parse(item, "--extra-inputs");
      if (!parsed || !parsed->is_object())
        return fail(invalid(fmt::format("--extra-inputs '{}': not a JSON object (use {{\"key\": value}} or key:value)",
                                        ix::printable(item, 200))));
      for (const auto& [k, v] : parsed->as_object()) out[k] = v;
      continue;
    }
    const size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0)
      return fail(invalid(fmt::format("--extra-inputs '{}': expected key:value (e.g. --extra-inputs temperature:0.6)",
                                      ix::printable(item, 200))));
    const std::string key = item.substr(0, colon), text = item.substr(colon + 1);
    boost::system::error_code ec;
    boost::json::value value = boost::json::parse(text, ec);
    out[key] = ec ? boost::json::value(text) : std::move(value);
  }
  return out;
}

workload::TraceFormat trace_format_of(std::string_view name) {
  if (name == "mooncake" || name == "mooncake_trace") return workload::TraceFormat::kMooncake;
  if (name == "session" || name == "weka_trace") return workload::TraceFormat::kSession;
  return workload::TraceFormat::kAuto;
}

Result<void> check_target(const BenchReplayOptions& o) {
  if (o.model.empty()) return fail(invalid("--model is required (the \"model\" field of every request)"));
  if (o.endpoint_type != "chat")
    return fail(
        invalid(fmt::format("--endpoint-type {}: bench replay sends chat requests; use chat", o.endpoint_type)));
  if (!(o.request_timeout_s > 0 && std::isfinite(o.request_timeout_s)))
    return fail(invalid("--request-timeout must be a number of seconds > 0"));
  if (o.server_pid && *o.server_pid <= 0) return fail(invalid("--server-pid must be a process id >= 1"));
  if (!(o.slice_duration_s > 0 && std::isfinite(o.slice_duration_s)))
    return fail(invalid("--slice-duration must be a number of seconds > 0"));
  return {};
}

// The Hugging Face hub cache, as InferenceX's aggregation finds it.
std::filesystem::path hf_hub_cache() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
    if (const char* v = std::getenv(name); v && *v) return v;
  if (const char* home = std::getenv("HF_HOME"); home && *home) return std::filesystem::path(home) / "hub";
  const char* user_home = std::getenv("HOME");
  return std::filesystem::path(user_home ? user_home : "/root") / ".cache/huggingface/hub";
}

// --public-dataset: the agentic trace corpus already in the hub cache (nothing is downloaded):
// the newest snapshot of a datasets--semianalysisai--cc-traces-weka* repository. --trace wins.
Result<std::string> trace_path(const BenchReplayOptions& o) {
  if (!o.trace.empty()) {
    if (!o.public_dataset.empty())
      log::info("bench replay: --public-dataset {} not used: the trace is --trace {}", o.public_dataset, o.trace);
    return o.trace;
  }
  const std::filesystem::path hub = hf_hub_cache();
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& repo : std::filesystem::directory_iterator(hub, ec)) {
    if (!repo.path().filename().string().starts_with("datasets--semianalysisai--cc-traces-weka")) continue;
    for (const auto& snap : std::filesystem::directory_iterator(repo.path() / "snapshots", ec))
      found.push_back(snap.path());
  }
  if (found.empty())
    return fail(Error(ErrorCode::kNotFound,
                      fmt::format("--public-dataset {}: no datasets--semianalysisai--cc-traces-weka* snapshot in the "
                                  "Hugging Face cache {} (HF_HUB_CACHE / HF_HOME); nothing is downloaded: pass the "
                                  "trace with --trace FILE|DIR",
                                  o.public_dataset, hub.string())));
  std::sort(found.begin(), found.end());
  return found.back().string();
}

// What the run needs, loaded: the trace, the tokenizer and its prompt synthesizer.
struct ReplayInputs {
  workload::Trace trace;
  std::unique_ptr<tok::Tokenizer> tokenizer;
  std::optional<tok::PromptSynth> synth;
  boost::json::object extra_body;
  std::vector<http::Header> headers;
  http::Url base;
};

Result<ReplayInputs> load_inputs(const BenchReplayOptions& o) {
  ReplayInputs in;
  auto base = http::Url::parse(o.url);
  if (!base) return fail(base.error().with_context("--url"));
  in.base = *base;
  auto extra = parse_extra_inputs(o.extra_inputs);
  if (!extra) return fail(extra.error());
  in.extra_body = std::move(*extra);
  auto headers = parse_headers(o.headers);
  if (!headers) return fail(headers.error());
  in.headers = std::move(*headers);
  auto trace = load_replay_trace(o);
  if (!trace) return fail(trace.error());
  in.trace = std::move(*trace);
  const std::string tokenizer_name = o.tokenizer.empty() ? o.model : o.tokenizer;
  auto tokenizer = tok::load_tokenizer(tokenizer_name);
  if (!tokenizer) return fail(tokenizer.error().with_context(fmt::format("--tokenizer {}", tokenizer_name)));
  in.tokenizer = std::move(*tokenizer);
  auto synth = tok::PromptSynth::create(*in.tokenizer);
  if (!synth) return fail(synth.error());
  in.synth.emplace(std::move(*synth));
  return in;
}

// Scrapes the Prometheus endpoints every `interval` on its own thread (aiperf scrapes every
// 0.333 s) into a ServerMetricsCollector, from construction to stop(), plus once more from any
// thread at scrape_now() (the profiling window's start) and at stop() (its end).
class MetricsScraper {
 public:
  MetricsScraper(std::vector<std::string> urls, double interval_s) : urls_(std::move(urls)), interval_s_(interval_s) {
    if (!urls_.empty()) thread_ = std::thread([this] { loop(); });
  }
  ~MetricsScraper() { stop(); }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  const ServerMetricsCollector& collector() const { return collector_; }
  bool any() const { return scrapes_ > 0; }
  void scrape_now() {
    if (!urls_.empty()) scrape_once();
  }
  // When the last scrape was read (wall-clock ns; 0 before the first).
  int64_t last_unix_ns() const { return last_unix_ns_; }

 private:
  void scrape_once() {
    std::lock_guard lock(scrape_mutex_);
    for (const auto& url : urls_) {
      auto target = http::Url::parse(url);
      if (!target) continue;
      const auto t0 = std::chrono::steady_clock::now();
      auto r = http::fetch(*target, "GET", target->path.empty() ? "/metrics" : "", "", {}, 5'000'000'000);
      if (!r || r->status != 200) continue;
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const int64_t unix_ns = static_cast<int64_t>(unix_now_s() * 1e9);
      collector_.add({.endpoint_url = url, .unix_ns = unix_ns, .text = r->body, .fetch_latency_ms = ms});
      last_unix_ns_ = std::max(last_unix_ns_, unix_ns);
      ++scrapes_;
    }
  }
  void loop() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      scrape_once();
      lock.lock();
      wake_.wait_for(lock, std::chrono::duration<double>(interval_s_), [this] { return stopping_; });
    }
    lock.unlock();
    scrape_once();  // the window's end
  }

  std::vector<std::string> urls_;
  double interval_s_;
  std::mutex scrape_mutex_;  // one scrape at a time (the thread's, scrape_now's)
  ServerMetricsCollector collector_;
  int64_t scrapes_ = 0;
  int64_t last_unix_ns_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

std::vector<std::string> scrape_urls(const BenchReplayOptions& o, const http::Url& base) {
  if (!o.server_metrics.empty()) return o.server_metrics;
  if (o.no_server_metrics) return {};
  return {base.origin() + base.path + "/metrics"};
}

ReplayRunnerOptions runner_options(const BenchReplayOptions& o, const ReplayInputs& in) {
  ReplayRunnerOptions r;
  r.base = in.base;
  r.endpoint = o.endpoint;
  r.model = o.model;
  if (const char* key = std::getenv("OPENAI_API_KEY"); key && *key) r.api_key = key;
  r.extra_headers = in.headers;
  r.extra_body = in.extra_body;
  r.verify_tls = !o.insecure;
  r.request_timeout_ns = static_cast<int64_t>(o.request_timeout_s * 1e9);
  r.trace = &in.trace;
  r.synth = &*in.synth;
  r.schedule = schedule_options(o);
  r.session_id_header = o.session_id_header;
  r.server_pid = o.server_pid.value_or(0);
  r.interrupt = &StopSignals::flag();
  return r;
}

void print_progress(const ReplayProgress& p) {
  fmt::print(stderr, "\r\033[K{} sent {} | ok {} failed {} | in flight {} | {:.0f} s",
             p.warmup ? "warmup" : "profiling", p.sent, p.completed, p.failed, p.in_flight, p.elapsed_s);
  std::fflush(stderr);
}

metrics::ReplayRunInfo run_info(const BenchReplayOptions& o, const ReplayRunnerOutput& out,
                                const boost::json::object* server_export) {
  metrics::ReplayRunInfo info;
  info.num_gpus = o.num_gpus;
  info.failed_request_threshold = o.failed_request_threshold;
  info.benchmark_duration_s = o.benchmark_duration_s;
  info.open_loop = o.fixed_schedule;
  if (server_export) info.server_prefix_cache = realized_prefix_cache(*server_export);
  info.client_invalid_reasons = out.invalid_reasons;
  return info;
}

// The server's counters over the profiling window, when it was scraped. The window closes with
// the scrape stop() took after the last request, so the counters cover every profiled request.
std::optional<boost::json::object> server_export_of(const BenchReplayOptions& o, const ReplayRunnerOutput& out,
                                                    const MetricsScraper& scraper) {
  if (!scraper.any()) return std::nullopt;
  const int64_t end_unix_ns = std::max(out.profile_end_ns + out.steady_to_unix_ns, scraper.last_unix_ns());
  return scraper.collector().build({.start_unix_ns = out.profile_start_ns + out.steady_to_unix_ns,
                                    .end_unix_ns = end_unix_ns,
                                    .slice_duration_s = o.slice_duration_s,
                                    .endpoints_configured = o.server_metrics});
}

Result<boost::json::object> write_outputs(const BenchReplayOptions& o, const ReplayInputs& in,
                                          const ReplayRunnerOutput& out, const ReplayRecordSink& sink,
                                          const MetricsScraper& scraper) {
  const std::optional<boost::json::object> server_export = server_export_of(o, out, scraper);
  return write_replay_outputs(sink.samples(), run_info(o, out, server_export ? &*server_export : nullptr),
                              {.dir = o.artifact_dir,
                               .steady_to_unix_ns = out.steady_to_unix_ns,
                               .scenario = o.scenario,
                               .run = replay_run_section(o, in.trace, out, "ixbench bench replay"),
                               .server_export = server_export ? &*server_export : nullptr});
}

}  // namespace

Result<void> check_schedule_flags(const BenchReplayOptions& o) {
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  auto non_negative = [](double v) { return std::isfinite(v) && v >= 0; };
  if (o.trace.empty() && o.public_dataset.empty())
    return fail(invalid("no trace: pass --trace FILE (Mooncake JSONL, a session-trace .json/.jsonl, or a directory)"));
  if (o.concurrency < 1) return fail(invalid(fmt::format("--concurrency must be >= 1, got {}", o.concurrency)));
  if (!positive(o.benchmark_duration_s)) return fail(invalid("--benchmark-duration must be a number of seconds > 0"));
  if (!non_negative(o.benchmark_grace_s) || !non_negative(o.warmup_grace_s) || !non_negative(o.idle_cap_s) ||
      !non_negative(o.system_idle_cap_s))
    return fail(invalid("grace periods and idle-gap caps must be numbers of seconds >= 0"));
  if (!(o.failed_request_threshold >= 0 && o.failed_request_threshold <= 1))
    return fail(
        invalid(fmt::format("--failed-request-threshold must be in [0, 1], got {}", o.failed_request_threshold)));
  if (!(o.start_min_ratio >= 0 && o.start_min_ratio <= o.start_max_ratio && o.start_max_ratio <= 1))
    return fail(invalid(
        fmt::format("--trajectory-start-min-ratio {} / --trajectory-start-max-ratio {}: need 0 <= min <= max <= 1",
                    o.start_min_ratio, o.start_max_ratio)));
  if (o.warmup_per_lane < 0) return fail(invalid("--warmup-requests-per-lane must be >= 0"));
  if (o.max_context_length && *o.max_context_length < 1) return fail(invalid("--max-context-length must be >= 1"));
  if (!positive(o.fixed_schedule_speedup)) return fail(invalid("--fixed-schedule-speedup must be > 0"));
  if (o.num_dataset_entries && *o.num_dataset_entries < 1) return fail(invalid("--num-dataset-entries must be >= 1"));
  if (o.seed < 0) return fail(invalid("--random-seed must be >= 0"));
  return {};
}

workload::ReplayScheduleOptions schedule_options(const BenchReplayOptions& o) {
  workload::ReplayScheduleOptions r;
  r.mode = o.fixed_schedule ? workload::ReplayMode::kFixedSchedule : workload::ReplayMode::kLanes;
  r.concurrency = o.concurrency;
  r.duration_s = o.benchmark_duration_s;
  r.grace_s = o.benchmark_grace_s;
  r.seed = static_cast<uint64_t>(o.seed);
  r.start_min_ratio = o.start_min_ratio;
  r.start_max_ratio = o.start_max_ratio;
  r.warmup_per_lane = o.warmup_per_lane;
  r.warmup_grace_s = o.warmup_grace_s;
  r.idle_cap_s = o.idle_cap_s;
  r.system_idle_cap_s = o.system_idle_cap_s;
  r.single_pass = o.single_pass;
  r.schedule_speedup = o.fixed_schedule_speedup;
  r.max_context_length = o.max_context_length;
  r.live_assistant = o.live_assistant;
  r.cache_bust = !o.no_cache_bust;
  r.abort_error_rate = o.failed_request_threshold;
  return r;
}

Result<workload::Trace> load_replay_trace(const BenchReplayOptions& o) {
  auto path = trace_path(o);
  if (!path) return fail(path.error());
  auto trace = workload::load_trace(*path, {.format = trace_format_of(o.trace_format), .block_size = o.block_size});
  if (!trace) return fail(trace.error().with_context("--trace"));
  if (o.num_dataset_entries && static_cast<size_t>(*o.num_dataset_entries) < trace->trees.size())
    trace->trees.resize(static_cast<size_t>(*o.num_dataset_entries));
  if (trace->trees.empty()) return fail(invalid(fmt::format("--trace {}: holds no session or row", *path)));
  return trace;
}

boost::json::object replay_run_section(const BenchReplayOptions& o, const workload::Trace& trace,
                                       const workload::ReplayScheduleOutput& out, std::string_view tool) {
  const workload::TraceStats stats = workload::trace_stats(trace);
  return {{"tool", tool},
          {"scenario", o.scenario},
          {"url", o.url},
          {"endpoint", o.endpoint},
          {"model", o.model},
          {"trace", o.trace},
          {"trace_format", workload::trace_format_name(trace.format)},
          {"trace_sessions", stats.sessions},
          {"trace_turns", stats.turns},
          {"trace_theoretical_prefix_hit", stats.prefix_hit()},
          {"mode", o.fixed_schedule ? "fixed_schedule" : "lanes"},
          {"concurrency", o.concurrency},
          {"benchmark_duration_s", o.benchmark_duration_s},
          {"random_seed", o.seed},
          {"warmup_requests_per_lane", o.warmup_per_lane},
          {"sent", out.sent},
          {"warmup_sent", out.warmup_sent},
          {"primers", out.primers},
          {"skipped_context", out.skipped_context},
          {"dropped_subagents", out.dropped_subagents},
          {"tree_plays", out.tree_plays},
          {"warmup_grace_expired", out.warmup_grace_expired},
          {"stopped_early", out.stopped_early}};
}

Result<int> run_bench_replay(const BenchReplayOptions& o) {
  StopSignals stop_signals;
  if (auto ok = check_schedule_flags(o); !ok) return fail(ok.error());
  if (auto ok = check_target(o); !ok) return fail(ok.error());
  auto inputs = load_inputs(o);
  if (!inputs) return fail(inputs.error());
  if (auto ok = files::check_directory_writable(o.artifact_dir.empty() ? "." : o.artifact_dir); !ok) {
    std::error_code ec;
    std::filesystem::create_directories(o.artifact_dir, ec);
    if (auto again = files::check_directory_writable(o.artifact_dir); !again)
      return fail(again.error().with_context("--artifact-dir"));
  }
  auto opened = ReplayRecordSink::open(o.artifact_dir);
  if (!opened) return fail(opened.error().with_context("--artifact-dir"));
  ReplayRecordSink& sink = *opened;
  ReplayRunnerOptions run = runner_options(o, *inputs);
  int64_t steady_to_unix = 0;
  run.on_record = [&sink, &steady_to_unix](metrics::ReplayRecord&& r) { sink.add(std::move(r), steady_to_unix); };
  if (o.progress && ::isatty(STDERR_FILENO)) run.on_progress = print_progress;
  steady_to_unix =
      static_cast<int64_t>(unix_now_s() * 1e9) -
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  log::info("bench replay: {} ({} sessions) against {}{}, concurrency {}, {} s", o.trace, inputs->trace.trees.size(),
            o.url, o.endpoint, o.concurrency, o.benchmark_duration_s);
  MetricsScraper scraper(scrape_urls(o, inputs->base), std::min(0.333, o.slice_duration_s));
  run.on_profile_start = [&scraper] { scraper.scrape_now(); };
  auto output = run_replay(run);
  scraper.stop();
  if (run.on_progress) fmt::print(stderr, "\r\033[K");
  if (!output) return fail(output.error());
  output->steady_to_unix_ns = steady_to_unix;  // the offset the records were exported with
  auto closed = sink.close();
  auto result = write_outputs(o, *inputs, *output, sink, scraper);
  if (result) print_replay_summary(*result, o.artifact_dir);
  if (!closed) return fail(closed.error());
  if (!result) return fail(result.error());
  return replay_exit_status(*result);
}

}  // namespace ix::bench
