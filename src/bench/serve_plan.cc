#include "bench/serve_plan.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <thread>

#include "bench/serve_runner.h"
#include "common/json_io.h"
#include "common/strings.h"
#include "http/client_retry.h"
#include "metrics/statistics.h"

namespace ix::bench {
namespace {

// Bounds that keep a typo from exhausting memory (a request shape, record and prompt per
// request; a prompt string per token).
constexpr int64_t kMaxPrompts = 10'000'000;
constexpr int64_t kMaxTokensPerRequest = 2'000'000;  // above every model's context window
// ~31 years: far above any run, far below the int64 nanoseconds the timers hold.
constexpr double kMaxRequestTimeoutS = 1e9;
// More client loop threads than this is a typo, not a configuration (each holds an event loop,
// an eventfd and an epoll set).
constexpr int kMaxClientThreads = 1024;

Error invalid(std::string message) {
  return Error(ErrorCode::kInvalidArgument, std::move(message));
}

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
  if (s.empty() || end != s.c_str() + s.size())
    return std::unexpected(invalid(fmt::format("{}: '{}' is not a number", flag, text)));
  return v;
}

// One socket per concurrent stream: the whole hard limit of open files is taken.
Result<void> raise_open_files(const BenchServeOptions& o, ServePlan&) {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  if (o.max_concurrency && getrlimit(RLIMIT_NOFILE, &files) == 0 &&
      static_cast<rlim_t>(*o.max_concurrency) + 64 > files.rlim_cur)
    return std::unexpected(
        invalid(fmt::format("--max-concurrency {} needs more open files than the limit {} (raise it: ulimit -n)",
                            *o.max_concurrency, files.rlim_cur)));
  return {};
}

// Where the requests go: dataset, backend, server address, endpoint.
Result<void> plan_target(const BenchServeOptions& o, ServePlan& plan) {
  if (o.dataset_name != "random")
    return fail(ErrorCode::kUnsupported,
                fmt::format("--dataset-name {}: only 'random' is implemented by bench serve", o.dataset_name));
  if (o.model.empty()) return std::unexpected(invalid("--model is required"));
  auto backend = openai::parse_backend(o.backend);
  if (!backend) return std::unexpected(backend.error());
  plan.backend = *backend;
  if (o.base_url.empty() && (o.port < 1 || o.port > 65535))
    return std::unexpected(invalid(fmt::format("--port must be in [1, 65535], got {}", o.port)));
  if (o.base_url.empty() && o.host.empty())
    return std::unexpected(invalid("--host must not be empty (or give --base-url)"));
  if (!o.endpoint.empty() && o.endpoint.front() != '/')
    return std::unexpected(
        invalid(fmt::format("--endpoint '{}' must be a path starting with '/', e.g. /v1/completions", o.endpoint)));
  plan.endpoint = o.endpoint.empty() ? std::string(openai::default_endpoint(plan.backend)) : o.endpoint;
  const std::string base_text = o.base_url.empty() ? fmt::format("http://{}:{}", o.host, o.port) : o.base_url;
  auto base = http::Url::parse(base_text);
  if (!base) return std::unexpected(base.error().with_context("--base-url"));
  plan.base = *base;
  return {};
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

// --extra-body and the sampling flags, checked against vLLM's SamplingParams ranges (a typo would
// otherwise come back as a 400 for every request). Given ones go into the body; an --extra-body
// entry of the same name wins, as in vLLM ({**sampling_params, **extra_body}).
Result<void> plan_body(const BenchServeOptions& o, ServePlan& plan) {
  boost::json::object extra_body;
  if (!o.extra_body.empty()) {
    auto extra = json::parse(o.extra_body, "--extra-body");
    if (!extra) return std::unexpected(extra.error());
    if (!extra->is_object())
      return std::unexpected(invalid("--extra-body must be a JSON object, e.g. '{\"top_p\": 0.95}'"));
    extra_body = std::move(extra->as_object());
  }
  const SamplingFlag flags[] = {
      {"--top-p", "top_p", o.top_p, 0.0, 1.0, true, "in (0, 1]"},
      {"--top-k", "top_k", o.top_k ? std::optional<double>(static_cast<double>(*o.top_k)) : std::nullopt, -1.0, 1e18,
       false, ">= -1 (0 or -1: all tokens)", true},
      {"--min-p", "min_p", o.min_p, 0.0, 1.0, false, "in [0, 1]"},
      {"--temperature", "temperature", o.temperature, 0.0, 1e18, false, ">= 0"},
      {"--frequency-penalty", "frequency_penalty", o.frequency_penalty, -2.0, 2.0, false, "in [-2, 2]"},
      {"--presence-penalty", "presence_penalty", o.presence_penalty, -2.0, 2.0, false, "in [-2, 2]"},
      {"--repetition-penalty", "repetition_penalty", o.repetition_penalty, 0.0, 1e18, true, "> 0"},
  };
  for (const SamplingFlag& f : flags) {
    if (!f.value) continue;
    const double v = *f.value;
    const bool ok = std::isfinite(v) && (f.min_open ? v > f.min : v >= f.min) && v <= f.max;
    if (!ok) return std::unexpected(invalid(fmt::format("{} must be {}, got {}", f.flag, f.range, v)));
    if (f.integer) {
      plan.sampling[f.key] = static_cast<int64_t>(v);
    } else {
      plan.sampling[f.key] = v;
    }
  }
  plan.body_fields = plan.sampling;
  for (const auto& [key, value] : extra_body) plan.body_fields[key] = value;
  for (auto& [key, value] : plan.sampling) value = plan.body_fields.at(key);  // recorded as sent
  return {};
}

// --request-rate / --burstiness / --ramp-up-* as one arrival process. vLLM's rules: a ramp-up
// needs both rates and no --request-rate, start <= end; its start of 0 is refused here for both
// strategies (vLLM refuses it for exponential and fails on the first request for linear), and
// rates without a strategy are refused instead of ignored.
Result<workload::ArrivalOptions> arrival_options_of(const BenchServeOptions& o, double request_rate) {
  workload::ArrivalOptions out{.request_rate = request_rate, .burstiness = o.burstiness, .seed = o.seed};
  if (o.ramp_up_strategy.empty()) {
    if (o.ramp_up_start_rps || o.ramp_up_end_rps)
      return std::unexpected(
          invalid("--ramp-up-start-rps / --ramp-up-end-rps need --ramp-up-strategy linear or exponential"));
    return out;
  }
  if (o.ramp_up_strategy == "linear") {
    out.ramp_up = workload::RampUp::kLinear;
  } else if (o.ramp_up_strategy == "exponential") {
    out.ramp_up = workload::RampUp::kExponential;
  } else {
    return std::unexpected(
        invalid(fmt::format("--ramp-up-strategy must be linear or exponential, got '{}'", o.ramp_up_strategy)));
  }
  if (!std::isinf(request_rate))
    return std::unexpected(invalid(fmt::format(
        "--ramp-up-strategy sets the request rate over the run: remove --request-rate {}", o.request_rate)));
  if (!o.ramp_up_start_rps || !o.ramp_up_end_rps)
    return std::unexpected(invalid("--ramp-up-strategy needs --ramp-up-start-rps and --ramp-up-end-rps (requests/s)"));
  if (*o.ramp_up_start_rps < 1)
    return std::unexpected(
        invalid(fmt::format("--ramp-up-start-rps must be >= 1 request/s, got {}", *o.ramp_up_start_rps)));
  if (*o.ramp_up_start_rps > *o.ramp_up_end_rps)
    return std::unexpected(invalid(fmt::format("--ramp-up-start-rps ({}) must be <= --ramp-up-end-rps ({})",
                                               *o.ramp_up_start_rps, *o.ramp_up_end_rps)));
  out.ramp_up_start_rps = static_cast<double>(*o.ramp_up_start_rps);
  out.ramp_up_end_rps = static_cast<double>(*o.ramp_up_end_rps);
  return out;
}

// When requests are sent and how long they may take.
Result<void> plan_pacing(const BenchServeOptions& o, ServePlan& plan) {
  if (!(o.ready_check_timeout_s >= 0 && o.ready_check_timeout_s <= kMaxRequestTimeoutS))
    return std::unexpected(invalid(
        fmt::format("--ready-check-timeout-sec must be a number of seconds in [0, {:.0f}] (0 = no check), got {}",
                    kMaxRequestTimeoutS, o.ready_check_timeout_s)));
  plan.request_rate = std::numeric_limits<double>::infinity();
  if (o.request_rate != "inf") {
    auto r = parse_double(o.request_rate, "--request-rate");
    if (!r) return std::unexpected(r.error());
    if (!(*r > 0)) return std::unexpected(invalid("--request-rate must be > 0 or inf"));
    plan.request_rate = *r;
  }
  if (!(o.burstiness > 0) || !std::isfinite(o.burstiness))
    return std::unexpected(invalid(fmt::format("--burstiness must be a finite number > 0, got {}", o.burstiness)));
  auto arrivals = arrival_options_of(o, plan.request_rate);
  if (!arrivals) return std::unexpected(arrivals.error());
  plan.arrivals = *arrivals;
  if (o.max_concurrency && *o.max_concurrency < 1) return std::unexpected(invalid("--max-concurrency must be >= 1"));
  // Above the bound the nanosecond timeout overflowed: every connect timed out at once.
  if (!(o.request_timeout_s > 0 && o.request_timeout_s <= kMaxRequestTimeoutS))
    return std::unexpected(invalid(fmt::format("--request-timeout must be a number of seconds in (0, {:.0f}], got {}",
                                               kMaxRequestTimeoutS, o.request_timeout_s)));
  if (o.max_retries < 0 || o.max_retries > kMaxRetriesPerRequest)
    return std::unexpected(invalid(fmt::format(
        "--max-retries must be between 0 and {} (each retry backs off up to {} s, and a run's retries stop at {}% "
        "of its requests + {}), got {}",
        kMaxRetriesPerRequest, http::kRetryMaxDelayNs / 1'000'000'000, kRetryBudgetShare * 100, kRetryBudgetFloor,
        o.max_retries)));
  if (o.threads < 0 || o.threads > kMaxClientThreads)
    return std::unexpected(
        invalid(fmt::format("--threads must be in [0, {}] (0 = auto), got {}", kMaxClientThreads, o.threads)));
  plan.threads = o.threads > 0 ? o.threads : auto_threads(o.max_concurrency, std::thread::hardware_concurrency());
  return {};
}

// The run's own checks: failure fraction, client self-check, configured AL, watched server.
Result<void> check_run_guards(const BenchServeOptions& o, ServePlan&) {
  if (!(o.max_failed_fraction >= 0 && o.max_failed_fraction <= 1))
    return std::unexpected(
        invalid(fmt::format("--max-failed-fraction must be in [0, 1], got {}", o.max_failed_fraction)));
  if (!(o.loop_lag_threshold_ms >= 0) || !std::isfinite(o.loop_lag_threshold_ms))
    return std::unexpected(invalid(
        fmt::format("--client-lag-threshold-ms must be a finite number >= 0, got {}", o.loop_lag_threshold_ms)));
  if (o.spec_acceptance_length && !(*o.spec_acceptance_length >= 1 && std::isfinite(*o.spec_acceptance_length)))
    return std::unexpected(invalid(
        fmt::format("--spec-acceptance-length must be >= 1 (tokens per step), got {}", *o.spec_acceptance_length)));
  if (o.server_pid) {
    if (*o.server_pid <= 0)
      return std::unexpected(invalid(fmt::format("--server-pid must be a process id >= 1, got {}", *o.server_pid)));
    if (::kill(*o.server_pid, 0) != 0 && errno != EPERM)
      return std::unexpected(
          invalid(fmt::format("--server-pid {}: no such process (is the server running?)", *o.server_pid)));
  }
  return {};
}

// A top-level result key InferenceX's process_result.py would turn into a number: it applies
// float() to every key ending in "ms" and 1000/float() to every key containing "tpot".
bool consumed_as_number(std::string_view key) {
  return key.ends_with("ms") || key.find("tpot") != std::string_view::npos;
}

// What the result reports: metrics, percentiles, goodput SLOs, metadata.
Result<void> plan_reporting(const BenchServeOptions& o, ServePlan& plan) {
  plan.percentile_metrics = split(o.percentile_metrics, ',');
  for (const auto& m : plan.percentile_metrics) {
    if (m != "ttft" && m != "tpot" && m != "itl" && m != "e2el")
      return std::unexpected(
          invalid(fmt::format("--percentile-metrics: unknown metric '{}' (use ttft, tpot, itl, e2el)", m)));
  }
  auto percentiles = metrics::parse_metric_percentiles(o.metric_percentiles);
  if (!percentiles) return std::unexpected(percentiles.error());
  plan.metric_percentiles = std::move(*percentiles);
  for (const auto& g : o.goodput) {
    const size_t colon = g.find(':');
    const std::string name = g.substr(0, colon);
    if (colon == std::string::npos || (name != "ttft" && name != "tpot" && name != "e2el"))
      return std::unexpected(invalid(fmt::format("--goodput '{}': expected ttft:MS, tpot:MS or e2el:MS", g)));
    auto v = parse_double(std::string_view(g).substr(colon + 1), "--goodput");
    if (!v) return std::unexpected(v.error());
    if (!(*v >= 0) || !std::isfinite(*v))
      return std::unexpected(invalid(fmt::format("--goodput '{}': the SLO must be a finite number >= 0 ms", g)));
    plan.goodput_slo_ms[name] = *v;
  }
  for (const auto& kv : o.metadata) {
    // As vLLM: split at the first '=', surrounding spaces dropped ("tp = 8" is key "tp").
    const size_t eq = kv.find('=');
    const std::string key = eq == std::string::npos ? std::string() : std::string(strip(kv.substr(0, eq)));
    if (key.empty()) return std::unexpected(invalid(fmt::format("--metadata '{}': expected KEY=VALUE", kv)));
    if (consumed_as_number(key))
      return std::unexpected(invalid(fmt::format(
          "--metadata '{}': a top-level key ending in 'ms' or containing 'tpot' is read as a number by InferenceX's "
          "process_result.py (the value is text); rename the key",
          kv)));
    plan.metadata[key] = std::string(strip(kv.substr(eq + 1)));
  }
  return {};
}

// What each request carries beyond the prompt: headers, logprobs, LoRA adapters, request ids.
Result<void> plan_request_extras(const BenchServeOptions& o, ServePlan& plan) {
  auto headers = parse_headers(o.headers);
  if (!headers) return std::unexpected(headers.error());
  plan.headers = std::move(*headers);
  if (o.logprobs) {
    if (*o.logprobs < 0) return std::unexpected(invalid(fmt::format("--logprobs must be >= 0, got {}", *o.logprobs)));
    if (openai::uses_chat(plan.backend))
      return std::unexpected(invalid(
          "--logprobs applies to the completions backends (vllm, sglang, openai, trt, atom); vLLM's openai-chat client "
          "does not send it either"));
  }
  for (const auto& module : o.lora_modules) {
    if (module.empty() || module.size() > 256)
      return std::unexpected(
          invalid(fmt::format("--lora-modules: '{}' is not an adapter name (1-256 characters)", module)));
  }
  if (o.lora_modules.size() > 65536) return std::unexpected(invalid("--lora-modules: more than 65,536 adapters"));
  if (o.request_id_prefix) {
    const std::string& prefix = *o.request_id_prefix;
    if (prefix.empty() ||
        std::any_of(prefix.begin(), prefix.end(), [](unsigned char c) { return c <= 0x20 || c >= 0x7f; }))
      return std::unexpected(invalid(fmt::format(
          "--request-id-prefix '{}' must be non-empty printable ASCII without spaces (it goes into the x-request-id "
          "header), e.g. bench-run1-",
          prefix)));
    for (const auto& h : plan.headers) {
      if (ascii_iequals(h.name, "x-request-id"))
        return std::unexpected(
            invalid("--request-id-prefix sets x-request-id on every measured request; remove --header x-request-id"));
    }
  }
  return {};
}

// How many requests of which lengths.
Result<void> plan_counts(const BenchServeOptions& o, ServePlan& plan) {
  plan.num_prompts = o.num_prompts.value_or(o.max_concurrency ? 10 * *o.max_concurrency : 1000);
  plan.num_warmups = o.num_warmups.value_or(o.max_concurrency ? 2 * *o.max_concurrency : 0);
  if (plan.num_prompts < 1 || plan.num_prompts > kMaxPrompts)
    return std::unexpected(
        invalid(fmt::format("--num-prompts must be in [1, {}], got {}", kMaxPrompts, plan.num_prompts)));
  if (plan.num_warmups < 0 || plan.num_warmups > kMaxPrompts)
    return std::unexpected(
        invalid(fmt::format("--num-warmups must be in [0, {}], got {}", kMaxPrompts, plan.num_warmups)));
  if (workload::open_loop(plan.arrivals)) {
    // The schedule itself is drawn after the warmups; a rate that cannot make one is refused now.
    auto schedule = workload::arrival_offsets_ns(static_cast<size_t>(plan.num_prompts), plan.arrivals);
    if (!schedule) return std::unexpected(schedule.error());
  }
  for (const auto& [flag, value] :
       {std::pair{"--random-input-len", o.random_input_len}, std::pair{"--random-output-len", o.random_output_len}}) {
    if (value > kMaxTokensPerRequest)
      return std::unexpected(
          invalid(fmt::format("{} must be <= {} tokens, got {}", flag, kMaxTokensPerRequest, value)));
  }
  return {};
}

// --tokenizer-mode takes vLLM's values; deepseek_v4 also selects DeepSeek-V4's encoding, as
// InferenceX's client loads that tokenizer for it. mistral needs mistral_common's tokenizer.
Result<void> plan_prompts(const BenchServeOptions& o, ServePlan& plan) {
  plan.tokenizer_name = o.tokenizer.empty() ? o.model : o.tokenizer;
  const std::string& mode = o.tokenizer_mode;
  if (mode != "auto" && mode != "hf" && mode != "slow" && mode != "custom" && mode != "mistral" &&
      mode != "deepseek_v4")
    return std::unexpected(invalid(fmt::format(
        "--tokenizer-mode '{}': use one of auto, hf, slow, custom, mistral, deepseek_v4 (vLLM's values)", mode)));
  if (mode == "mistral" && !o.tokenizer_from_server)
    return fail(
        ErrorCode::kUnsupported,
        "--tokenizer-mode mistral: mistral_common's tokenizer is not built in; use --tokenizer-from-server (the "
        "server counts and renders the prompts) or a tokenizer.json with --tokenizer");
  const bool dsv4 = o.dsv4 || mode == "deepseek_v4";
  if (dsv4) {
    plan.framing = PromptFraming::kDeepSeekV4;
  } else if (o.use_chat_template || openai::uses_chat(plan.backend)) {
    plan.framing = PromptFraming::kModelTemplate;
  }
  if (o.tokenizer_from_server && !o.tokenizer.empty())
    return std::unexpected(
        invalid("--tokenizer-from-server counts tokens with the server's tokenizer: remove --tokenizer"));
  if (o.tokenizer_from_server && (o.use_chat_template || dsv4) && !openai::uses_chat(plan.backend))
    return std::unexpected(invalid(
        "--tokenizer-from-server with --use-chat-template/--dsv4 on a completions backend would need the chat template "
        "client-side; use --backend openai-chat (the server renders it) or a local --tokenizer"));
  return {};
}

}  // namespace

int auto_threads(std::optional<int64_t> concurrency, unsigned cores) {
  const int64_t usable = std::max<int64_t>(1, static_cast<int64_t>(cores) / 4);
  const int64_t c = concurrency.value_or(1024);
  return static_cast<int>(std::clamp<int64_t>((c + 63) / 64, 1, usable));
}

Result<ServePlan> plan_serve(const BenchServeOptions& o) {
  ServePlan plan;
  for (auto step : {raise_open_files, plan_target, plan_body, plan_pacing, check_run_guards, plan_reporting,
                    plan_request_extras, plan_counts, plan_prompts}) {
    if (auto ok = step(o, plan); !ok) return std::unexpected(ok.error());
  }
  plan.save = o.save_result || o.save_detailed || o.append_result;
  return plan;
}

}  // namespace ix::bench
