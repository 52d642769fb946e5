#include "bench/serve_command.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include "bench/serve_runner.h"
#include "common/clock.h"
#include "common/json_io.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/strings.h"
#include "metrics/serve_result.h"
#include "metrics/statistics.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/prompt_synth.h"
#include "tokenizer/tokenizer.h"
#include "workload/arrivals.h"
#include "workload/random_dataset.h"

namespace ix::bench {

namespace {

// Bounds that keep a typo from exhausting memory (a request shape, record and prompt per
// request; a prompt string per token).
constexpr int64_t kMaxPrompts = 10'000'000;
constexpr int64_t kMaxTokensPerRequest = 2'000'000;  // above every model's context window
// ~31 years: far above any run, far below the int64 nanoseconds the timers hold.
constexpr double kMaxRequestTimeoutS = 1e9;
// Prompt tokens made ahead of the sends at most (~300 MB of text).
constexpr int64_t kPrefetchTokenBudget = int64_t{1} << 26;

std::atomic<bool> g_interrupted{false};

void on_stop_signal(int sig) {
  g_interrupted.store(true);
  // A second Ctrl-C (or SIGTERM) ends the process at once.
  ::signal(sig, SIG_DFL);
}

// Ctrl-C, and SIGTERM (what `timeout`, Slurm's time limit and container stops send first), stop
// the run and keep what was measured; before, SIGTERM killed the process and lost it all.
class StopSignalScope {
 public:
  StopSignalScope() {
    g_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// The non-empty items between separators, trimmed.
std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(sep, pos);
    if (end == std::string_view::npos) end = text.size();
    std::string item(strip(text.substr(pos, end - pos)));
    if (!item.empty()) out.push_back(item);
    pos = end + 1;
  }
  return out;
}

Result<double> parse_double(std::string_view text, std::string_view flag) {
  std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("{}: '{}' is not a number", flag, text));
  }
  return v;
}

// `t` in local time, as strftime(`format`) writes it (at most 63 characters).
std::string local_strftime(std::time_t t, const char* format) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), format, &tm);
  return std::string(buf, n);
}

std::string local_date_stamp() {
  return local_strftime(std::time(nullptr), "%Y%m%d-%H%M%S");
}

// One loop thread handles ~1.8 M events/s when fully busy; one per 1024 streams keeps each well
// below that at any realistic ITL, and at most a quarter of the cores stay with the client (the
// server under test often shares the host).
// More client loop threads than this is a typo, not a configuration (each holds an event loop,
// an eventfd and an epoll set).
constexpr int kMaxClientThreads = 1024;

int auto_threads(std::optional<int64_t> concurrency) {
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const int64_t c = concurrency.value_or(1024);
  return static_cast<int>(std::clamp<int64_t>((c + 1023) / 1024, 1, std::max<int64_t>(1, cores / 4)));
}

// The directory a result file named `filename` goes to (in `result_dir`, or beside the working
// directory): created when missing, and probed by creating and removing a file in it.
Result<std::filesystem::path> result_directory(const std::string& result_dir, const std::string& filename) {
  std::filesystem::path dir = result_dir;
  if (const auto sub = std::filesystem::path(filename).parent_path(); !sub.empty()) dir /= sub;
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!filename.empty()) {
    // "sub/" was taken for a directory to create before the run and failed at the write after it.
    if (const auto leaf = std::filesystem::path(filename).filename(); leaf.empty() || leaf == "." || leaf == "..") {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--result-filename: '{}' names a directory, not a file (e.g. '{}result.json')", filename,
                              leaf.empty() ? filename : filename + "/"));
    }
    const std::filesystem::path target = std::filesystem::path(result_dir) / filename;
    if (std::filesystem::is_directory(target, ec)) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--result-filename: '{}' is a directory; name a file", target.string()));
    }
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--result-dir: cannot create '{}': {}", dir.string(), ec.message()));
  }
  // The file name may be derived only after the run (vLLM's naming has the date): probe the
  // directory with a file of our own.
  if (auto ok = json::check_writable(dir / fmt::format(".ixbench-write-probe-{}", ::getpid())); !ok)
    return fail(ok.error().with_context("--result-dir"));
  return dir;
}

// `<result>.requests.jsonl` beside the result file.
std::filesystem::path detailed_path(std::filesystem::path result) {
  result.replace_extension(".requests.jsonl");
  return result;
}

// --request-rate / --burstiness / --ramp-up-* as one arrival process. vLLM's rules: a ramp-up
// needs both rates and no --request-rate, start <= end; its start of 0 is refused here for both
// strategies (vLLM refuses it for exponential and fails on the first request for linear), and
// rates without a strategy are refused instead of ignored.
Result<workload::ArrivalOptions> arrival_options_of(const BenchServeOptions& o, double request_rate) {
  workload::ArrivalOptions out{.request_rate = request_rate, .burstiness = o.burstiness, .seed = o.seed};
  if (o.ramp_up_strategy.empty()) {
    if (o.ramp_up_start_rps || o.ramp_up_end_rps)
      return fail(ErrorCode::kInvalidArgument,
                  "--ramp-up-start-rps / --ramp-up-end-rps need --ramp-up-strategy linear or exponential");
    return out;
  }
  if (o.ramp_up_strategy == "linear") {
    out.ramp_up = workload::RampUp::kLinear;
  } else if (o.ramp_up_strategy == "exponential") {
    out.ramp_up = workload::RampUp::kExponential;
  } else {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--ramp-up-strategy must be linear or exponential, got '{}'", o.ramp_up_strategy));
  }
  if (!std::isinf(request_rate))
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("--ramp-up-strategy sets the request rate over the run: remove --request-rate {}", o.request_rate));
  if (!o.ramp_up_start_rps || !o.ramp_up_end_rps)
    return fail(ErrorCode::kInvalidArgument,
                "--ramp-up-strategy needs --ramp-up-start-rps and --ramp-up-end-rps (requests/s)");
  if (*o.ramp_up_start_rps < 1)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--ramp-up-start-rps must be >= 1 request/s, got {}", *o.ramp_up_start_rps));
  if (*o.ramp_up_start_rps > *o.ramp_up_end_rps)
    return fail(ErrorCode::kInvalidArgument, fmt::format("--ramp-up-start-rps ({}) must be <= --ramp-up-end-rps ({})",
                                                         *o.ramp_up_start_rps, *o.ramp_up_end_rps));
  out.ramp_up_start_rps = static_cast<double>(*o.ramp_up_start_rps);
  out.ramp_up_end_rps = static_cast<double>(*o.ramp_up_end_rps);
  return out;
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

// --header KEY=VALUE (vLLM's --header): split at the first '=', surrounding spaces dropped. The
// name must be an HTTP token and the value free of control characters (a CR/LF would inject
// headers of its own); the headers that frame the message or the connection stay the client's;
// a name given twice is refused rather than one value silently dropped.
Result<std::vector<http::Header>> parse_headers(const std::vector<std::string>& items) {
  auto is_token_char = [](unsigned char c) {
    return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  };
  std::vector<http::Header> out;
  for (const auto& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--header '{}': expected KEY=VALUE (e.g. --header x-request-source=ixbench)", item));
    const std::string name(strip(std::string_view(item).substr(0, eq)));
    const std::string value(strip(std::string_view(item).substr(eq + 1)));
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char))
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--header '{}': '{}' is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)",
                              item, name));
    if (std::any_of(value.begin(), value.end(), [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }))
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--header {}: the value holds a control character (CR, LF, ...); HTTP header values "
                              "cannot",
                              name));
    for (const char* owned : {"host", "content-length", "transfer-encoding", "connection", "te", "upgrade", "expect"}) {
      if (ascii_iequals(name, owned))
        return fail(ErrorCode::kInvalidArgument,
                    fmt::format("--header {}: set by the client itself (it frames the request or keeps the "
                                "connection); remove it",
                                name));
    }
    for (const auto& earlier : out) {
      if (ascii_iequals(earlier.name, name))
        return fail(ErrorCode::kInvalidArgument,
                    fmt::format("--header {} is given twice; give each header once", name));
    }
    out.push_back({name, value});
  }
  return out;
}

// --ready-check-timeout-sec: one small request (the run's body with a short prompt and 1 output
// token) to the endpoint, retried every second until it answers 200, the time is up, the watched
// server exits or Ctrl-C / SIGTERM arrives (vLLM retries its first prompt every 5 s). Returns the
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
    last = reply ? fmt::format("HTTP {}: {}", reply->status, reply->body.substr(0, 200)) : reply.error().message();
    // The next attempt a second after this one began, in short sleeps that notice Ctrl-C.
    const int64_t next = std::min(now + kRetryNs, deadline);
    while (true) {
      if (g_interrupted.load()) {
        return fail(ErrorCode::kUnavailable,
                    fmt::format("interrupted while waiting for {} to answer (nothing was measured)", where));
      }
      if (run.server_pid > 0 && !process_alive(run.server_pid)) {
        return fail(ErrorCode::kUnavailable, fmt::format("server process {} exited while waiting for {} to answer "
                                                         "(last answer: {})",
                                                         run.server_pid, where, last));
      }
      const int64_t left = next - SteadyClock().now_ns();
      if (left <= 0) break;
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 50'000'000)));
    }
    if (SteadyClock().now_ns() >= deadline) {
      return fail(ErrorCode::kTimeout,
                  fmt::format("--ready-check-timeout-sec {}: {} did not answer 200 within {} s ({} attempts; last "
                              "answer: {}); is the server up and is --base-url / --endpoint right?",
                              timeout_s, where, timeout_s, attempt, last));
    }
  }
}

// The sampling flags given, as vLLM names them in request bodies.
struct SamplingFlag {
  const char* flag;
  const char* key;
  std::optional<double> value;
  double min;
  double max;
  bool min_open;  // (min, max] instead of [min, max]
  const char* range;
  bool integer = false;  // sent as a JSON integer (top_k)
};

}  // namespace

std::string python_float_str(double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (std::isnan(value)) return "nan";
  std::string s = fmt::format("{}", value);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

Result<int> run_bench_serve(const BenchServeOptions& o) {
  const int64_t launch_ns = SteadyClock().now_ns();
  // One socket per concurrent stream: use the whole hard limit of open files.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  if (o.max_concurrency && getrlimit(RLIMIT_NOFILE, &files) == 0 &&
      static_cast<rlim_t>(*o.max_concurrency) + 64 > files.rlim_cur) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--max-concurrency {} needs more open files than the limit {} (raise it: ulimit -n)",
                            *o.max_concurrency, files.rlim_cur));
  }
  if (o.dataset_name != "random") {
    return fail(ErrorCode::kUnsupported,
                fmt::format("--dataset-name {}: only 'random' is implemented by bench serve", o.dataset_name));
  }
  if (o.model.empty()) return fail(ErrorCode::kInvalidArgument, "--model is required");
  auto backend = openai::parse_backend(o.backend);
  if (!backend) return std::unexpected(backend.error());
  if (o.base_url.empty() && (o.port < 1 || o.port > 65535))
    return fail(ErrorCode::kInvalidArgument, fmt::format("--port must be in [1, 65535], got {}", o.port));
  if (o.base_url.empty() && o.host.empty())
    return fail(ErrorCode::kInvalidArgument, "--host must not be empty (or give --base-url)");
  if (!o.endpoint.empty() && o.endpoint.front() != '/') {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--endpoint '{}' must be a path starting with '/', e.g. /v1/completions", o.endpoint));
  }
  boost::json::object extra_body;
  if (!o.extra_body.empty()) {
    // Parsed once here: a bad object used to be found at the first send, after the tokenizer and
    // the first prompts were made (and every send parsed the text again).
    auto extra = json::parse(o.extra_body, "--extra-body");
    if (!extra) return std::unexpected(extra.error());
    if (!extra->is_object())
      return fail(ErrorCode::kInvalidArgument, "--extra-body must be a JSON object, e.g. '{\"top_p\": 0.95}'");
    extra_body = std::move(extra->as_object());
  }
  // Sampling flags, checked against vLLM's SamplingParams ranges (a typo would otherwise come
  // back as a 400 for every request). Given ones go into the body; an --extra-body entry of the
  // same name wins, as in vLLM ({**sampling_params, **extra_body}).
  const SamplingFlag sampling_flags[] = {
      {"--top-p", "top_p", o.top_p, 0.0, 1.0, true, "in (0, 1]"},
      {"--top-k", "top_k", o.top_k ? std::optional<double>(static_cast<double>(*o.top_k)) : std::nullopt, -1.0, 1e18,
       false, ">= -1 (0 or -1: all tokens)", true},
      {"--min-p", "min_p", o.min_p, 0.0, 1.0, false, "in [0, 1]"},
      {"--temperature", "temperature", o.temperature, 0.0, 1e18, false, ">= 0"},
      {"--frequency-penalty", "frequency_penalty", o.frequency_penalty, -2.0, 2.0, false, "in [-2, 2]"},
      {"--presence-penalty", "presence_penalty", o.presence_penalty, -2.0, 2.0, false, "in [-2, 2]"},
      {"--repetition-penalty", "repetition_penalty", o.repetition_penalty, 0.0, 1e18, true, "> 0"},
  };
  boost::json::object sampling;
  for (const SamplingFlag& f : sampling_flags) {
    if (!f.value) continue;
    const double v = *f.value;
    const bool ok = std::isfinite(v) && (f.min_open ? v > f.min : v >= f.min) && v <= f.max;
    if (!ok) return fail(ErrorCode::kInvalidArgument, fmt::format("{} must be {}, got {}", f.flag, f.range, v));
    if (f.integer) {
      sampling[f.key] = static_cast<int64_t>(v);
    } else {
      sampling[f.key] = v;
    }
  }
  boost::json::object body_fields = sampling;
  for (const auto& [key, value] : extra_body) body_fields[key] = value;
  for (auto& [key, value] : sampling) value = body_fields.at(key);  // recorded as sent
  if (!(o.ready_check_timeout_s >= 0 && o.ready_check_timeout_s <= kMaxRequestTimeoutS)) {
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("--ready-check-timeout-sec must be a number of seconds in [0, {:.0f}] (0 = no check), got {}",
                    kMaxRequestTimeoutS, o.ready_check_timeout_s));
  }
  const bool save = o.save_result || o.save_detailed || o.append_result;
  const std::string base_text = o.base_url.empty() ? fmt::format("http://{}:{}", o.host, o.port) : o.base_url;
  auto base = http::Url::parse(base_text);
  if (!base) return std::unexpected(base.error().with_context("--base-url"));

  double request_rate = std::numeric_limits<double>::infinity();
  if (o.request_rate != "inf") {
    auto r = parse_double(o.request_rate, "--request-rate");
    if (!r) return std::unexpected(r.error());
    if (!(*r > 0)) return fail(ErrorCode::kInvalidArgument, "--request-rate must be > 0 or inf");
    request_rate = *r;
  }
  if (!(o.burstiness > 0) || !std::isfinite(o.burstiness))
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--burstiness must be a finite number > 0, got {}", o.burstiness));
  auto arrivals = arrival_options_of(o, request_rate);
  if (!arrivals) return std::unexpected(arrivals.error());
  if (o.max_concurrency && *o.max_concurrency < 1)
    return fail(ErrorCode::kInvalidArgument, "--max-concurrency must be >= 1");
  // Above the bound the nanosecond timeout overflowed: every connect timed out at once.
  if (!(o.request_timeout_s > 0 && o.request_timeout_s <= kMaxRequestTimeoutS)) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--request-timeout must be a number of seconds in (0, {:.0f}], got {}", kMaxRequestTimeoutS,
                            o.request_timeout_s));
  }
  if (o.max_retries < 0) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("--max-retries must be >= 0, got {}", o.max_retries));
  }
  if (o.threads < 0 || o.threads > kMaxClientThreads) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--threads must be in [0, {}] (0 = auto), got {}", kMaxClientThreads, o.threads));
  }
  if (!(o.max_failed_fraction >= 0 && o.max_failed_fraction <= 1)) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--max-failed-fraction must be in [0, 1], got {}", o.max_failed_fraction));
  }
  if (!(o.loop_lag_threshold_ms >= 0) || !std::isfinite(o.loop_lag_threshold_ms)) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--client-lag-threshold-ms must be a finite number >= 0, got {}", o.loop_lag_threshold_ms));
  }
  if (o.spec_acceptance_length && !(*o.spec_acceptance_length >= 1 && std::isfinite(*o.spec_acceptance_length))) {
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("--spec-acceptance-length must be >= 1 (tokens per step), got {}", *o.spec_acceptance_length));
  }
  if (o.server_pid) {
    if (*o.server_pid <= 0) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--server-pid must be a process id >= 1, got {}", *o.server_pid));
    }
    if (::kill(*o.server_pid, 0) != 0 && errno != EPERM) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--server-pid {}: no such process (is the server running?)", *o.server_pid));
    }
  }

  metrics::ServeRunInfo info;
  info.percentile_metrics = split(o.percentile_metrics, ',');
  for (const auto& m : info.percentile_metrics) {
    if (m != "ttft" && m != "tpot" && m != "itl" && m != "e2el") {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--percentile-metrics: unknown metric '{}' (use ttft, tpot, itl, e2el)", m));
    }
  }
  auto percentiles = metrics::parse_metric_percentiles(o.metric_percentiles);
  if (!percentiles) return std::unexpected(percentiles.error());
  info.metric_percentiles = std::move(*percentiles);
  for (const auto& g : o.goodput) {
    const size_t colon = g.find(':');
    const std::string name = g.substr(0, colon);
    if (colon == std::string::npos || (name != "ttft" && name != "tpot" && name != "e2el")) {
      return fail(ErrorCode::kInvalidArgument, fmt::format("--goodput '{}': expected ttft:MS, tpot:MS or e2el:MS", g));
    }
    auto v = parse_double(std::string_view(g).substr(colon + 1), "--goodput");
    if (!v) return std::unexpected(v.error());
    if (!(*v >= 0) || !std::isfinite(*v)) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--goodput '{}': the SLO must be a finite number >= 0 ms", g));
    }
    info.goodput_slo_ms[name] = *v;
  }
  boost::json::object metadata;
  for (const auto& kv : o.metadata) {
    // As vLLM: split at the first '=', surrounding spaces dropped ("tp = 8" is key "tp").
    const size_t eq = kv.find('=');
    const std::string key = eq == std::string::npos ? std::string() : std::string(strip(kv.substr(0, eq)));
    if (key.empty()) {
      return fail(ErrorCode::kInvalidArgument, fmt::format("--metadata '{}': expected KEY=VALUE", kv));
    }
    metadata[key] = std::string(strip(kv.substr(eq + 1)));
  }

  auto extra_headers = parse_headers(o.headers);
  if (!extra_headers) return std::unexpected(extra_headers.error());
  if (o.logprobs) {
    if (*o.logprobs < 0)
      return fail(ErrorCode::kInvalidArgument, fmt::format("--logprobs must be >= 0, got {}", *o.logprobs));
    if (openai::uses_chat(*backend))
      return fail(ErrorCode::kInvalidArgument,
                  "--logprobs applies to the completions backends (vllm, sglang, openai, trt, atom); vLLM's "
                  "openai-chat client does not send it either");
  }
  for (const auto& module : o.lora_modules) {
    if (module.empty() || module.size() > 256)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--lora-modules: '{}' is not an adapter name (1-256 characters)", module));
  }
  if (o.lora_modules.size() > 65536)
    return fail(ErrorCode::kInvalidArgument, "--lora-modules: more than 65,536 adapters");
  if (o.request_id_prefix) {
    const std::string& prefix = *o.request_id_prefix;
    if (prefix.empty() ||
        std::any_of(prefix.begin(), prefix.end(), [](unsigned char c) { return c <= 0x20 || c >= 0x7f; }))
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("--request-id-prefix '{}' must be non-empty printable ASCII without spaces (it goes "
                              "into the x-request-id header), e.g. bench-run1-",
                              prefix));
    for (const auto& h : *extra_headers) {
      if (ascii_iequals(h.name, "x-request-id"))
        return fail(ErrorCode::kInvalidArgument,
                    "--request-id-prefix sets x-request-id on every measured request; remove --header x-request-id");
    }
  }

  const int64_t num_prompts = o.num_prompts.value_or(o.max_concurrency ? 10 * *o.max_concurrency : 1000);
  const int64_t num_warmups = o.num_warmups.value_or(o.max_concurrency ? 2 * *o.max_concurrency : 0);
  if (num_prompts < 1 || num_prompts > kMaxPrompts)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--num-prompts must be in [1, {}], got {}", kMaxPrompts, num_prompts));
  if (num_warmups < 0 || num_warmups > kMaxPrompts)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--num-warmups must be in [0, {}], got {}", kMaxPrompts, num_warmups));
  if (workload::open_loop(*arrivals)) {
    // The schedule itself is drawn after the warmups; a rate that cannot make one is refused now.
    auto schedule = workload::arrival_offsets_ns(static_cast<size_t>(num_prompts), *arrivals);
    if (!schedule) return std::unexpected(schedule.error());
  }
  for (const auto& [flag, value] :
       {std::pair{"--random-input-len", o.random_input_len}, std::pair{"--random-output-len", o.random_output_len}}) {
    if (value > kMaxTokensPerRequest)
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{} must be <= {} tokens, got {}", flag, kMaxTokensPerRequest, value));
  }

  // Tokenizer and prompt synthesis.
  const std::string tokenizer_name = o.tokenizer.empty() ? o.model : o.tokenizer;
  const int64_t tok_start = SteadyClock().now_ns();
  auto tokenizer = tok::load_tokenizer(tokenizer_name);
  if (!tokenizer) return std::unexpected(tokenizer.error().with_context("--tokenizer " + tokenizer_name));
  auto synth = tok::PromptSynth::create(**tokenizer);
  if (!synth) return std::unexpected(synth.error());
  const double tokenizer_load_s = static_cast<double>(SteadyClock().now_ns() - tok_start) / 1e9;
  workload::PromptFormat format = workload::PromptFormat::kPlain;
  std::optional<tok::ChatTemplate> chat;
  if (o.use_chat_template || openai::uses_chat(*backend)) {
    auto found = tok::ChatTemplate::for_tokenizer(**tokenizer);
    if (found) {
      chat = *found;
      format =
          openai::uses_chat(*backend) ? workload::PromptFormat::kChatContent : workload::PromptFormat::kChatRendered;
    } else if (o.use_chat_template) {
      return std::unexpected(found.error().with_context("--use-chat-template"));
    } else {
      log::warn(
          "bench serve: no chat template known for '{}': chat prompts carry the server's template overhead "
          "on top of --random-input-len",
          tokenizer_name);
    }
  }
  workload::RandomDatasetOptions dataset_options{.input_len = o.random_input_len,
                                                 .output_len = o.random_output_len,
                                                 .range_ratio = o.random_range_ratio,
                                                 .num_prompts = static_cast<size_t>(num_prompts),
                                                 .num_warmups = static_cast<size_t>(num_warmups),
                                                 .seed = o.seed};
  auto shapes = workload::random_shapes(dataset_options);
  if (!shapes) return std::unexpected(shapes.error());
  workload::RandomDataset dataset(*synth, format, chat, o.seed);
  // A drawn length the dataset cannot make would end the run at that request, discarding all
  // measured before it; refused here instead.
  auto min_tokens = dataset.min_prompt_tokens();
  if (!min_tokens) return std::unexpected(min_tokens.error());
  int64_t shortest = std::numeric_limits<int64_t>::max();
  for (const auto* list : {&shapes->measured, &shapes->warmups}) {
    for (const auto& s : *list) shortest = std::min(shortest, s.prompt_len);
  }
  if (shortest < *min_tokens) {
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("--random-input-len {} with --random-range-ratio {} draws {}-token prompts, shorter than "
                    "the chat template's own {} tokens + 1 ({}): raise them so that floor(r*L) >= {}",
                    o.random_input_len, o.random_range_ratio, shortest, *min_tokens - 1,
                    openai::uses_chat(*backend) ? "--backend openai-chat" : "--use-chat-template", *min_tokens));
  }
  std::vector<std::pair<size_t, int64_t>> order;
  order.reserve(shapes->warmups.size() + shapes->measured.size());
  for (size_t i = 0; i < shapes->warmups.size(); ++i)
    order.emplace_back(shapes->measured.size() + i, shapes->warmups[i].prompt_len);
  for (size_t i = 0; i < shapes->measured.size(); ++i) order.emplace_back(i, shapes->measured[i].prompt_len);
  const int threads = o.threads > 0 ? o.threads : auto_threads(o.max_concurrency);
  const int synth_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - threads);
  const size_t lookahead = static_cast<size_t>(
      std::clamp<int64_t>(kPrefetchTokenBudget / std::max<int64_t>(1, o.random_input_len), 16, 65536));
  workload::PromptPrefetcher prefetcher(dataset, order, synth_threads, lookahead);
  // What the first moment of the run needs (the first wave of sends, up to 1024 prompts: a few
  // hundred ms at most); the rest is made while it runs, warmups first.
  const int64_t first_wave = std::min<int64_t>(o.max_concurrency.value_or(1024), 1024);
  if (auto ok = prefetcher.wait_for_first(static_cast<size_t>(first_wave)); !ok) return std::unexpected(ok.error());

  // Where the result goes: checked before the run, so a long run is never lost to a typo.
  if (save) {
    if (auto dir = result_directory(o.result_dir, o.result_filename); !dir) return std::unexpected(dir.error());
  }

  ServeRunnerOptions run;
  run.base = *base;
  run.endpoint = o.endpoint.empty() ? std::string(openai::default_endpoint(*backend)) : o.endpoint;
  run.backend = *backend;
  run.model = o.served_model_name.empty() ? o.model : o.served_model_name;
  run.ignore_eos = o.ignore_eos;
  run.continuous_usage = o.continuous_usage;
  run.extra_body = std::move(body_fields);
  if (const char* key = std::getenv("OPENAI_API_KEY"); key && *key) run.api_key = key;
  run.extra_headers = *extra_headers;
  run.request_id_prefix = o.request_id_prefix.value_or("");
  run.logprobs = o.logprobs;
  if (!o.lora_modules.empty()) {
    run.lora_modules = o.lora_modules;
    Rng pick = Rng::stream(o.seed, "lora-modules");
    run.lora_choice.reserve(shapes->measured.size());
    for (size_t i = 0; i < shapes->measured.size(); ++i)
      run.lora_choice.push_back(
          static_cast<uint32_t>(pick.uniform_int(0, static_cast<int64_t>(o.lora_modules.size()) - 1)));
  }
  run.verify_tls = !o.insecure;
  run.warmups = shapes->warmups;
  run.measured = shapes->measured;
  run.prompt = [&prefetcher](size_t k, int64_t* waited) { return prefetcher.take(k, waited); };
  run.max_concurrency = o.max_concurrency;
  run.arrivals = *arrivals;
  run.request_timeout_ns = static_cast<int64_t>(o.request_timeout_s * 1e9);
  run.max_retries = o.max_retries;
  run.threads = threads;
  run.server_pid = o.server_pid.value_or(0);
  run.interrupt = &g_interrupted;
  run.loop_lag_threshold_ms = o.loop_lag_threshold_ms;
  run.scrape_server_metrics = o.scrape_metrics;
  run.configured_acceptance_length = o.spec_acceptance_length;
  run.profile = o.profile;
  const bool tty = o.progress && ::isatty(STDERR_FILENO);
  if (tty) {
    run.on_progress = [](const ServeProgress& p) {
      const int64_t done = p.completed + p.failed;
      const double rate = p.elapsed_s > 0 ? static_cast<double>(p.output_tokens) / p.elapsed_s : 0.0;
      const double eta = done > 0 ? p.elapsed_s / static_cast<double>(done) * static_cast<double>(p.total - done) : 0.0;
      if (p.warmup) {
        fmt::print(stderr, "\r\033[Kwarmup: {} requests, {:.1f} s", p.total, p.elapsed_s);
      } else {
        const std::string eta_text = done > 0 ? fmt::format("{:.0f} s", eta) : std::string("?");
        fmt::print(stderr, "\r\033[K{}/{} done, {} errors, {:.0f} tok/s, ETA {}", done, p.total, p.failed, rate,
                   eta_text);
      }
      std::fflush(stderr);
    };
  }

  log::info("bench serve: {} {} model {} | {} prompts + {} warmups | concurrency {} | rate {} | {} client threads",
            base->origin(), run.endpoint, run.model, num_prompts, num_warmups,
            o.max_concurrency ? std::to_string(*o.max_concurrency) : "unlimited",
            o.ramp_up_strategy.empty() ? o.request_rate
                                       : fmt::format("ramp-up {} {} -> {} req/s", o.ramp_up_strategy,
                                                     arrivals->ramp_up_start_rps, arrivals->ramp_up_end_rps),
            threads);
  StopSignalScope stop_signals;
  double ready_wait_s = 0;
  if (o.ready_check_timeout_s > 0) {
    auto waited = wait_until_ready(run, o.ready_check_timeout_s);
    if (!waited) return std::unexpected(waited.error());
    ready_wait_s = *waited;
  }
  // Launch to the first request, without the wait for the server (--ready-check-timeout-sec).
  const double startup_s = static_cast<double>(SteadyClock().now_ns() - launch_ns) / 1e9 - ready_wait_s;
  auto output = run_serve(run);
  if (tty) fmt::print(stderr, "\r\033[K");
  if (!output) return std::unexpected(output.error());

  // Client-side token counts: output_len where the server sent no usage, and the check of the
  // server's counts. Counting is parallel and off the measured path.
  if (o.count_client_tokens) {
    auto& recs = output->records;
    const size_t n = recs.size();
    const int workers = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    std::atomic<size_t> next{0};
    for (int t = 0; t < workers; ++t) {
      pool.emplace_back([&] {
        for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
          if (!recs[i].success) continue;
          recs[i].client_output_tokens = static_cast<int64_t>((*tokenizer)->count_tokens(output->generated_texts[i]));
        }
      });
    }
    for (auto& t : pool) t.join();
  }
  int64_t short_outputs = 0;
  for (auto& r : output->records) {
    if (!r.success) continue;
    if (r.output_len < 0) r.output_len = std::max<int64_t>(r.client_output_tokens, 0);
    if (o.ignore_eos && r.output_len < r.expected_output_len) ++short_outputs;
  }

  info.date = o.date.empty() ? local_date_stamp() : o.date;
  info.backend = o.backend;
  info.model_id = o.model;
  info.tokenizer_id = tokenizer_name;
  info.num_prompts = num_prompts;
  info.request_rate = request_rate;
  info.burstiness = o.burstiness;
  info.max_concurrency = o.max_concurrency;
  info.start_ns = output->start_ns;
  info.end_ns = output->end_ns;
  info.start_unix_s = output->start_unix_s;
  info.end_unix_s = output->end_unix_s;
  info.client = output->client;
  boost::json::array reasons;
  for (const auto& r : output->invalid_reasons) reasons.emplace_back(r);
  info.extra["invalid_reasons"] = std::move(reasons);
  info.extra["num_warmups"] = num_warmups;
  info.extra["short_output_requests"] = short_outputs;
  info.extra["startup_s"] = startup_s;
  info.extra["label"] = o.label.empty() ? boost::json::value(nullptr) : boost::json::value(o.label);
  if (o.ready_check_timeout_s > 0) info.extra["ready_check_wait_s"] = ready_wait_s;
  if (!sampling.empty()) info.extra["sampling_params"] = sampling;
  if (o.request_id_prefix) info.extra["request_id_prefix"] = *o.request_id_prefix;
  if (o.logprobs) info.extra["logprobs"] = *o.logprobs;
  if (!o.lora_modules.empty()) {
    boost::json::array modules;
    for (const auto& m : o.lora_modules) modules.emplace_back(m);
    info.extra["lora_modules"] = std::move(modules);
  }
  if (arrivals->ramp_up != workload::RampUp::kNone) {
    // vLLM's fields: the ramp, and when the rate passed each whole requests/s.
    info.extra["ramp_up_strategy"] = o.ramp_up_strategy;
    info.extra["ramp_up_start_rps"] = *o.ramp_up_start_rps;
    info.extra["ramp_up_end_rps"] = *o.ramp_up_end_rps;
    info.extra["rps_change_events"] = rps_change_events(*arrivals, run.measured.size(), output->start_unix_s);
  }
  if (!extra_headers->empty()) {
    // Names only: values may be credentials.
    boost::json::array names;
    for (const auto& h : *extra_headers) names.emplace_back(h.name);
    info.extra["extra_header_names"] = std::move(names);
  }
  info.extra["tokenizer_load_s"] = tokenizer_load_s;
  info.extra["random_input_len"] = o.random_input_len;
  info.extra["random_output_len"] = o.random_output_len;
  info.extra["random_range_ratio"] = o.random_range_ratio;
  info.extra["seed"] = o.seed;
  info.extra["endpoint"] = run.endpoint;
  info.extra["use_chat_template"] = o.use_chat_template;
  info.extra["continuous_usage_stats"] = o.continuous_usage && openai::supports_continuous_usage(*backend);
  for (const auto& [key, value] : output->extra) info.extra[key] = value;
  // The records hold measured requests only: the warmups the run excluded are counted here.
  info.extra["num_warmups_excluded"] = output->warmup_done;
  boost::json::object result = metrics::build_serve_result(output->records, info);
  // As vLLM: metadata is added beside the measurements and never replaces one of them.
  for (const auto& [key, value] : metadata) {
    if (result.contains(key)) {
      log::warn("bench serve: --metadata {}: the result already has a field '{}'; kept the measured value", key,
                std::string_view(key));
      continue;
    }
    result[key] = value;
  }

  std::optional<Error> write_error;
  if (save) {
    std::string name = o.result_filename;
    if (name.empty()) {
      std::string base_model = o.model.substr(o.model.rfind('/') == std::string::npos ? 0 : o.model.rfind('/') + 1);
      // vLLM's names: {label}-{rate}qps or {label}-ramp-up-{strategy}-{start}qps-{end}qps.
      const std::string traffic = o.ramp_up_strategy.empty() ? fmt::format("{}qps", python_float_str(request_rate))
                                                             : fmt::format("ramp-up-{}-{}qps-{}qps", o.ramp_up_strategy,
                                                                           *o.ramp_up_start_rps, *o.ramp_up_end_rps);
      name = fmt::format("{}-{}{}-{}-{}.json", o.label.empty() ? o.backend : o.label, traffic,
                         o.max_concurrency ? fmt::format("-concurrency{}", *o.max_concurrency) : "", base_model,
                         info.date);
    }
    std::filesystem::path path =
        o.result_dir.empty() ? std::filesystem::path(name) : std::filesystem::path(o.result_dir) / name;
    const std::string result_text = json::to_string(result);
    std::string detailed_text;
    if (o.save_detailed) {
      for (const auto& r : output->records) {
        detailed_text += json::to_string(metrics::request_record_to_json(r, output->start_ns));
        detailed_text += '\n';
      }
    }
    // --append-result adds one line to what the file holds (rewritten atomically, so a failed
    // write never loses the results already there); the detailed JSONL grows the same way.
    auto put = [&](const std::filesystem::path& target, std::string_view text) {
      if (!o.append_result) return json::write_file(target, text);
      if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
      return json::append_line(target, text);
    };
    auto write_to = [&](const std::filesystem::path& target) -> Result<void> {
      if (auto ok = put(target, result_text); !ok) return ok;
      log::info("bench serve: {} {}", o.append_result ? "appended to" : "wrote", target.string());
      if (!o.save_detailed) return {};
      const std::filesystem::path detailed = detailed_path(target);
      if (auto ok = put(detailed, detailed_text); !ok) return ok;
      log::info("bench serve: wrote {}", detailed.string());
      return {};
    };
    // The directory was checked before the run; it may have gone since (recreated), or be
    // unwritable now: then the measurements go to the temporary directory rather than nowhere.
    Result<void> written;
    if (auto dir = result_directory(o.result_dir, name); !dir) {
      written = std::unexpected(dir.error());
    } else {
      written = write_to(path);
    }
    if (!written) {
      write_error = written.error();
      const std::filesystem::path fallback = json::temp_fallback_path(path);
      if (!fallback.empty() && write_to(fallback)) {
        write_error = write_error->with_context(
            fmt::format("cannot write the result to {} (saved to {} instead)", path.string(), fallback.string()));
      } else {
        write_error = write_error->with_context(
            fmt::format("cannot write the result to {} (only the console summary is left)", path.string()));
      }
    }
  }
  // The summary is printed even when the file could not be written: it is all that is left.
  fmt::print("{}", metrics::format_serve_summary(result));
  std::fflush(stdout);
  if (write_error) return std::unexpected(*write_error);
  if (output->fatal) return std::unexpected(output->fatal->with_context("bench serve stopped early"));

  const int64_t completed = result.at("completed").as_int64();
  const int64_t failed = result.at("failed").as_int64();
  const int64_t measured = completed + failed;
  int status = 0;
  if (measured == 0) {
    log::error("bench serve: no request was sent");
    status = 1;
  } else if (completed == 0 || static_cast<double>(failed) > o.max_failed_fraction * static_cast<double>(measured)) {
    log::error("bench serve: {} of {} requests failed (more than {:.0f}%): {}", failed, measured,
               o.max_failed_fraction * 100, json::to_string(result.at("error_counts")));
    // What went wrong, not only how often (connection refused, TLS, HTTP status...).
    if (const auto* examples = result.if_contains("error_examples"); examples && examples->is_object()) {
      for (const auto& [kind, message] : examples->as_object()) {
        if (message.is_string()) {
          log::error("bench serve: e.g. {}: {}", std::string_view(kind), std::string_view(message.as_string()));
        }
      }
    }
    status = 1;
  }
  if (!result.at("run_valid").as_bool()) {
    log::error("bench serve: run invalid: {}", json::to_string(result.at("invalid_reasons")));
    status = 1;
  }
  return status;
}

}  // namespace ix::bench
