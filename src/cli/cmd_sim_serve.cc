// `ixbench sim serve`: the OpenAI-compatible simulator server (src/serve/). Engine flags are the
// ones `sim predict` shares (engine_flags.h); this file adds the server, schedule-mode, tokenizer
// and fault-injection flags. See docs/sim-serve.md.
#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/engine_flags.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/sanitize.h"
#include "eval/model_family.h"
#include "serve/gsm8k_answers.h"
#include "serve/schedule_engines.h"
#include "serve/sim_server.h"
#include "serve/text_codec.h"

namespace ix::cli {
namespace {

constexpr int32_t kScheduleModeDefaultMaxModelLen = 131072;
// One day: larger delays are typos, and max_tokens x itl must stay far from int64 nanoseconds.
constexpr double kMaxFixedMs = 86'400'000.0;

struct SimServeFlags {
  EngineFlags engine;
  serve::SimServeOptions serve;
  std::vector<std::string> served_model_names;  // the first is reported; all are accepted
  bool no_delay = false;
  std::optional<double> fixed_ttft_ms;
  std::optional<double> fixed_itl_ms;
  std::string tokenizer = "auto";
  std::string fault_error_codes = "500";
  std::optional<std::string> gsm8k_answers;  // --gsm8k-answers DIR
  double gsm8k_accuracy = serve::kDefaultGsm8kAccuracy;
  double gsm8k_runaway_rate = 0.0;
  std::string gsm8k_model_family;  // empty = guessed from the served model name
};

// A probability flag's check: a number in [0, 1] (nan refused).
CLI::Validator probability() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        double value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && end == text.data() + text.size() && value >= 0.0 && value <= 1.0) return {};
        return "'" + text + "' is not a probability in [0, 1]";
      },
      "PROBABILITY");
}

// The --model-family names of eval/ (parse_model_family reads them, case-insensitively).
std::vector<std::string> model_family_names() {
  std::vector<std::string> names;
  for (auto family : {eval::ModelFamily::kDeepseek, eval::ModelFamily::kDeepseekV4, eval::ModelFamily::kQwen,
                      eval::ModelFamily::kLlama, eval::ModelFamily::kGptOss, eval::ModelFamily::kKimi,
                      eval::ModelFamily::kGlm, eval::ModelFamily::kMinimax, eval::ModelFamily::kNone})
    names.emplace_back(eval::model_family_name(family));
  return names;
}

// --gsm8k-answers and its companions (checked by CLI11: rates in [0, 1], a known family, and the
// companions only with --gsm8k-answers).
void add_gsm8k_flags(CLI::App& cmd, SimServeFlags& flags) {
  auto* answers =
      cmd.add_option("--gsm8k-answers", flags.gsm8k_answers,
                     "GSM8K answer mode: DIR holds GSM8K's test.jsonl; a request whose prompt ends with one "
                     "of its questions gets a worked answer (see docs/sim-serve.md)");
  answers->type_name("DIR");
  cmd.add_option("--gsm8k-accuracy", flags.gsm8k_accuracy,
                 "with --gsm8k-answers: fraction of problems answered correctly (seeded per problem)")
      ->capture_default_str()
      ->check(probability())
      ->needs(answers);
  cmd.add_option("--gsm8k-runaway-rate", flags.gsm8k_runaway_rate,
                 "with --gsm8k-answers: fraction of problems whose answer ignores the stop strings and runs on past "
                 "the end-of-turn marker into junk until max_tokens")
      ->capture_default_str()
      ->check(probability())
      ->needs(answers);
  cmd.add_option("--gsm8k-model-family", flags.gsm8k_model_family,
                 "with --gsm8k-answers: whose end-of-turn and role markers a runaway emits (default: guessed from "
                 "the served model name, else none: </s>)")
      ->check(CLI::IsMember(model_family_names(), CLI::ignore_case))
      ->needs(answers);
}

// The answer mode's options, when --gsm8k-answers is given.
std::optional<serve::Gsm8kAnswerOptions> gsm8k_options(const SimServeFlags& flags) {
  if (!flags.gsm8k_answers) return std::nullopt;
  serve::Gsm8kAnswerOptions options;
  options.dir = *flags.gsm8k_answers;
  options.accuracy = flags.gsm8k_accuracy;
  options.runaway_rate = flags.gsm8k_runaway_rate;
  if (!flags.gsm8k_model_family.empty()) {
    if (auto family = eval::parse_model_family(flags.gsm8k_model_family)) options.family = *family;
  }
  return options;
}

Result<std::unique_ptr<serve::TextCodec>> make_codec(const SimServeFlags& flags) {
  if (flags.tokenizer == "none") return serve::make_fallback_codec();
  if (flags.tokenizer == "auto") {
    auto codec = serve::make_tokenizer_codec(flags.engine.config.model);
    if (codec) return codec;
    log::info("sim serve: no tokenizer found for model '{}' ({}); using approximate token counts",
              printable(flags.engine.config.model), printable(codec.error().message()));
    return serve::make_fallback_codec();
  }
  auto codec = serve::make_tokenizer_codec(flags.tokenizer);
  if (!codec) return std::unexpected(codec.error().with_context("--tokenizer"));
  return codec;
}

// `value` with thousands separators, as Python's "{:,}" prints it ("1,234,567").
std::string with_thousands(int64_t value) {
  std::string digits = std::to_string(value);
  for (int pos = int(digits.size()) - 3; pos > (digits[0] == '-' ? 1 : 0); pos -= 3) digits.insert(size_t(pos), ",");
  return digits;
}

// vLLM's start-up line of every engine core, "(EngineCore_DP<i> pid=<pid>) ... GPU KV cache
// size: <N> tokens": log scrapers (InferenceX's agentic aggregation reads server.log) sum it
// over the engine cores for the deployment's KV capacity. One line per scheduler rank.
void log_kv_cache_size(const sim::EngineMetrics& metrics) {
  if (!metrics.cache_config) return;
  const sim::CacheConfigInfo& info = *metrics.cache_config;
  for (size_t rank = 0; rank < info.pool_blocks.size(); ++rank)
    log::info("(EngineCore_DP{} pid={}) GPU KV cache size: {} tokens", rank, getpid(),
              with_thousands(info.pool_blocks[rank] * info.block_size));
}

// --fault-seed defaults to --seed; an explicit --fault-seed wins.
int run(SimServeFlags& flags, bool explicit_fault_seed) {
  if (flags.fixed_ttft_ms.has_value() != flags.fixed_itl_ms.has_value()) {
    return report_error(Error(ErrorCode::kInvalidArgument, "--fixed-ttft-ms and --fixed-itl-ms go together"));
  }
  bool fixed = flags.fixed_ttft_ms.has_value();
  if (fixed && flags.no_delay) {
    return report_error(
        Error(ErrorCode::kInvalidArgument, "--no-delay and --fixed-ttft-ms/--fixed-itl-ms exclude each other"));
  }
  // !(x >= 0) also rejects nan; a finite upper bound keeps the schedule's nanosecond times in range.
  if (fixed && !(*flags.fixed_ttft_ms >= 0 && *flags.fixed_ttft_ms <= kMaxFixedMs && *flags.fixed_itl_ms >= 0 &&
                 *flags.fixed_itl_ms <= kMaxFixedMs)) {
    return report_error(
        Error(ErrorCode::kInvalidArgument,
              fmt::format("--fixed-ttft-ms and --fixed-itl-ms must be numbers in [0, {}], got {} and {}", kMaxFixedMs,
                          *flags.fixed_ttft_ms, *flags.fixed_itl_ms)));
  }
  auto codes = serve::parse_error_codes(flags.fault_error_codes);
  if (!codes) return report_error(codes.error());
  flags.serve.faults.error_codes = *codes;
  if (!explicit_fault_seed) flags.serve.faults.seed = flags.engine.config.seed;
  flags.serve.seed = flags.engine.config.seed;
  for (const auto& name : flags.served_model_names) {
    if (name.empty()) {
      return report_error(
          Error(ErrorCode::kInvalidArgument, "--served-model-name: a name must not be empty (give one or more names)"));
    }
  }
  if (flags.served_model_names.empty()) {
    flags.serve.model_name = flags.engine.config.model;
  } else {
    flags.serve.model_name = flags.served_model_names.front();
    flags.serve.model_aliases.assign(flags.served_model_names.begin() + 1, flags.served_model_names.end());
  }

  const Clock& clock = steady_clock_instance();
  std::unique_ptr<sim::LiveEngine> engine;
  if (flags.no_delay || fixed) {
    // The cost model's engine flags are not used in these modes, except the context window.
    if (flags.engine.config.max_model_len < 0)
      return report_error(Error(ErrorCode::kInvalidArgument, fmt::format("--max-model-len must be >= 0, got {}",
                                                                         flags.engine.config.max_model_len)));
    int32_t max_model_len =
        flags.engine.config.max_model_len > 0 ? flags.engine.config.max_model_len : kScheduleModeDefaultMaxModelLen;
    if (flags.no_delay) {
      engine = std::make_unique<serve::NoDelayEngine>(max_model_len, clock);
      flags.serve.engine_description =
          fmt::format("no-delay engine (all tokens at once), max_model_len {}", max_model_len);
    } else {
      engine =
          std::make_unique<serve::FixedScheduleEngine>(*flags.fixed_ttft_ms, *flags.fixed_itl_ms, max_model_len, clock);
      flags.serve.engine_description = fmt::format("fixed schedule: ttft {} ms, itl {} ms, max_model_len {}",
                                                   *flags.fixed_ttft_ms, *flags.fixed_itl_ms, max_model_len);
    }
  } else {
    auto config = engine_config_from_flags(flags.engine);
    if (!config) return report_error(config.error());
    auto made = sim::make_live_engine(*config, clock);
    if (!made) return report_error(made.error());
    engine = std::move(*made);
    log_kv_cache_size(engine->metrics());
    flags.serve.engine_description = fmt::format(
        "cost model: {} on {} tp{} ep{}{} ({}), spec {}", config->model, config->hardware, config->tp, config->ep,
        config->dp_attn ? " dp-attn" : "", config->framework, sim::spec_decoding_name(config->spec_decoding));
  }
  auto codec = make_codec(flags);
  if (!codec) return report_error(codec.error());
  flags.serve.gsm8k = gsm8k_options(flags);
  auto result = serve::run_until_signalled(flags.serve, std::move(engine), std::move(*codec));
  return result ? kExitOk : report_error(result.error());
}

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* group = find_or_add_group(root, "sim", "engine simulator");
  CLI::App* cmd = group->add_subcommand(
      "serve", "OpenAI-compatible server that streams tokens when the simulated engine produces them");
  auto flags = std::make_shared<SimServeFlags>();
  add_engine_flags(*cmd, flags->engine);
  auto& s = flags->serve;
  cmd->add_option("--host", s.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", s.port, "port to listen on (0 = a free port, printed on stdout)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            unsigned value = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec == std::errc() && end == text.data() + text.size() && value <= 65535) return {};
            return "'" + text + "' is not a port number in [0, 65535] (0 = a free port)";
          },
          ""));
  cmd->add_option("--threads", s.threads, "event-loop threads (0 = number of cores)")->capture_default_str();
  cmd->add_option("--served-model-name", flags->served_model_names,
                  "model name(s) clients send (default: --model); with several, as vLLM, every one is accepted "
                  "and the first is the one responses report");
  cmd->add_option("--tokenizer", flags->tokenizer,
                  "tokenizer.json path/dir or model name for exact token counts; 'auto' = from --model when "
                  "available, 'none' = approximate counts")
      ->capture_default_str();
  cmd->add_flag("--no-delay", flags->no_delay,
                "no cost model: every token is ready at once, streamed as fast as the client reads (capacity mode)");
  cmd->add_option("--fixed-ttft-ms", flags->fixed_ttft_ms, "no cost model: first token this many ms after receipt");
  cmd->add_option("--fixed-itl-ms", flags->fixed_itl_ms, "no cost model: then one token every this many ms");
  cmd->add_option("--request-timeout-ms", s.request_timeout_ms, "a started request must arrive within this")
      ->capture_default_str();
  cmd->add_option("--idle-timeout-ms", s.idle_timeout_ms, "close keep-alive connections idle this long")
      ->capture_default_str();
  cmd->add_option("--max-prompt-bytes", s.max_prompt_bytes,
                  "longest prompt text (chat: its messages) in bytes; longer is refused with 413 before tokenizing")
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", s.max_body_bytes, "largest request body in bytes; larger is refused with 413")
      ->capture_default_str();
  cmd->add_option("--tokenize-threads", s.tokenize_threads,
                  "threads that tokenize prompts of more than 1 KiB off the event loops (0 = as many as --threads)")
      ->capture_default_str();
  auto& f = s.faults;
  cmd->add_option("--fault-seed", f.seed, "seed of the fault draws (default: --seed)");
  cmd->add_option("--fault-error-rate", f.error_rate, "fraction of requests answered with an HTTP error");
  cmd->add_option("--fault-error-codes", flags->fault_error_codes, "statuses for --fault-error-rate, e.g. 429,500,503")
      ->capture_default_str();
  cmd->add_option("--fault-stall-rate", f.stall_rate, "fraction of streams that stall mid-stream");
  cmd->add_option("--fault-stall-ms", f.stall_ms, "stall length")->capture_default_str();
  cmd->add_option("--fault-drop-rate", f.drop_rate, "fraction of streams whose connection is dropped mid-stream");
  cmd->add_option("--fault-malformed-rate", f.malformed_rate, "fraction of streams with one malformed SSE event");
  cmd->add_option("--fault-health-delay-ms", f.health_delay_ms, "/health answers 503 for this long after start");
  cmd->add_option("--fault-short-rate", f.short_rate,
                  "fraction of requests finishing early (fewer tokens than asked, finish_reason stop)");
  add_gsm8k_flags(*cmd, *flags);
  registry.on_run(cmd, [flags, cmd] { return run(*flags, cmd->count("--fault-seed") > 0); });
}

}  // namespace

IX_REGISTER_COMMAND(sim_serve, setup);

}  // namespace ix::cli
