#include "eval/gsm8k_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <set>

#include "bench/exchange.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "common/log.h"
#include "common/stop_signal.h"
#include "eval/builtin_task.h"
#include "eval/eval_results.h"
#include "eval/model_family.h"
#include "eval/prompts.h"
#include "http/client.h"

namespace ix::eval {

namespace bj = boost::json;

namespace {

// Everything resolved before a request is sent.
struct EvalSetup {
  config::LmEvalTask task;
  Gsm8kDataset dataset;
  std::vector<Gsm8kProblem> docs;  // the problems evaluated (--limit)
  ModelFamily family = ModelFamily::kNone;
  http::Url base;
  std::string endpoint_path;
  std::vector<std::string> stops;
  std::vector<std::string> prompts;
  std::vector<std::string> targets;
  std::vector<std::string> bodies;
  EvalRunInfo info;
};

Result<void> check_options(const EvalGsm8kOptions& o) {
  if (o.model.empty()) return fail(ErrorCode::kInvalidArgument, "--model is required");
  if (o.concurrency.empty()) return fail(ErrorCode::kInvalidArgument, "--concurrency needs at least one value");
  std::set<int64_t> seen;
  for (int64_t c : o.concurrency) {
    if (c < 1) return fail(ErrorCode::kInvalidArgument, fmt::format("--concurrency {}: must be at least 1", c));
    if (!seen.insert(c).second)
      return fail(ErrorCode::kInvalidArgument, fmt::format("--concurrency {} is given twice", c));
  }
  if (o.limit && *o.limit < 1) return fail(ErrorCode::kInvalidArgument, "--limit must be at least 1");
  if (o.max_tokens && *o.max_tokens < 1) return fail(ErrorCode::kInvalidArgument, "--max-tokens must be at least 1");
  if (o.max_model_len < 2) return fail(ErrorCode::kInvalidArgument, "--max-model-len must be at least 2");
  if (o.num_fewshot && *o.num_fewshot < 0) return fail(ErrorCode::kInvalidArgument, "--num-fewshot must be 0 or more");
  if (!(o.request_timeout_s > 0)) return fail(ErrorCode::kInvalidArgument, "--request-timeout must be > 0 seconds");
  if (o.max_retries < 0) return fail(ErrorCode::kInvalidArgument, "--max-retries must be 0 or more");
  if (o.endpoint != "chat" && o.endpoint != "completions")
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--endpoint '{}': choose chat (/v1/chat/completions) or completions (/v1/completions)",
                            o.endpoint));
  return {};
}

// The server URL and endpoint path: a --base-url that ends in the endpoint (as lm-eval's
// base_url does) or in /v1 is cut back to the server.
Result<void> resolve_target(const EvalGsm8kOptions& o, EvalSetup& s) {
  auto base = http::Url::parse(o.base_url);
  if (!base) return std::unexpected(base.error().with_context("--base-url"));
  std::string endpoint = o.endpoint == "chat" ? "/v1/chat/completions" : "/v1/completions";
  for (std::string_view suffix : {"/v1/chat/completions", "/v1/completions", "/v1"}) {
    if (base->path.ends_with(suffix)) {
      if (suffix != "/v1" && suffix != endpoint)
        return fail(ErrorCode::kInvalidArgument,
                    fmt::format("--base-url ends in {} but --endpoint is {}; give the server's URL (http://host:port) "
                                "or make them agree",
                                suffix, o.endpoint));
      base->path.resize(base->path.size() - suffix.size());
      break;
    }
  }
  s.base = std::move(*base);
  s.endpoint_path = std::move(endpoint);
  return {};
}

Result<void> resolve_task(const EvalGsm8kOptions& o, EvalSetup& s) {
  if (o.task_file.empty()) {
    s.task = builtin_gsm8k_task();
  } else {
    auto task = config::load_lm_eval_task(o.task_file);
    if (!task) return std::unexpected(task.error());
    s.task = std::move(*task);
  }
  auto dir = gsm8k_dir(o.dataset_dir);
  if (!dir) return std::unexpected(dir.error());
  auto dataset = load_gsm8k(*dir);
  if (!dataset) return std::unexpected(dataset.error());
  s.dataset = std::move(*dataset);
  const auto& test = s.dataset.test.problems;
  const size_t n = o.limit ? std::min<size_t>(static_cast<size_t>(*o.limit), test.size()) : test.size();
  s.docs.assign(test.begin(), test.begin() + static_cast<std::ptrdiff_t>(n));
  s.info.dataset_dir = dir->string();
  s.info.original_docs = static_cast<int64_t>(test.size());
  return {};
}

Result<void> resolve_family(const EvalGsm8kOptions& o, EvalSetup& s) {
  if (!o.model_family.empty()) {
    auto family = parse_model_family(o.model_family);
    if (!family) return std::unexpected(family.error());
    s.family = *family;
  } else {
    s.family = guess_model_family(o.model).value_or(ModelFamily::kNone);
  }
  s.stops = stop_strings(s.task.until, s.family);
  return {};
}

std::string request_body(const EvalGsm8kOptions& o, const EvalSetup& s, const std::string& prompt, int64_t max_tokens) {
  bj::object body;
  body["model"] = o.model;
  if (o.endpoint == "chat") {
    body["messages"] = bj::array{bj::object{{"role", "user"}, {"content", prompt}}};
  } else {
    body["prompt"] = prompt;
  }
  body["max_tokens"] = max_tokens;
  body["temperature"] = 0.0;
  body["top_p"] = 1.0;
  bj::array stops;
  for (const auto& stop : s.stops) stops.emplace_back(stop);
  body["stop"] = std::move(stops);
  body["seed"] = o.seed;
  body["stream"] = true;
  body["stream_options"] = bj::object{{"include_usage", true}};
  return json::to_string(body);
}

Result<void> build_requests(const EvalGsm8kOptions& o, EvalSetup& s) {
  auto builder = PromptBuilder::create(s.task);
  if (!builder) return std::unexpected(builder.error());
  const int shots = o.num_fewshot.value_or(s.task.num_fewshot);
  auto prompts = builder->build(s.docs, s.dataset.train.problems, shots, o.seed);
  if (!prompts) return std::unexpected(prompts.error());
  const int64_t max_tokens = eval_max_tokens(o, family_default_max_tokens(s.family));
  for (size_t i = 0; i < s.docs.size(); ++i) {
    auto target = builder->target(s.docs[i]);
    if (!target) return std::unexpected(target.error());
    s.targets.push_back(std::move(*target));
    s.prompts.push_back(std::move((*prompts)[i].text));
    s.bodies.push_back(request_body(o, s, s.prompts.back(), max_tokens));
  }
  s.info.num_fewshot = shots;
  s.info.max_tokens = max_tokens;
  return {};
}

Result<void> make_output_dir(const std::filesystem::path& output) {
  const std::filesystem::path dir = output.parent_path();
  if (dir.empty()) return {};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return fail(ErrorCode::kIo,
                fmt::format("--output: cannot create the directory {}: {}", dir.string(), ec.message()));
  return {};
}

Result<EvalSetup> prepare(const EvalGsm8kOptions& o) {
  if (auto ok = check_options(o); !ok) return std::unexpected(ok.error());
  EvalSetup s;
  for (auto step : {resolve_target, resolve_task, resolve_family, build_requests}) {
    if (auto ok = step(o, s); !ok) return std::unexpected(ok.error());
  }
  if (auto ok = make_output_dir(o.output); !ok) return std::unexpected(ok.error());
  if (auto ok = files::check_writable(o.output); !ok) return std::unexpected(ok.error().with_context("--output"));
  EvalRunInfo& info = s.info;
  info.tool_version = o.tool_version;
  info.model = o.model;
  info.model_prefix = o.model_prefix;
  info.model_family = std::string(model_family_name(s.family));
  info.base_url = s.base.origin() + s.base.path;
  info.endpoint = o.endpoint;
  info.stops = s.stops;
  info.max_retries = o.max_retries;
  info.seed = o.seed;
  info.limit = o.limit;
  info.started_unix_s = bench::unix_now_s();
  return s;
}

// One request before the run, so a port that was never forwarded fails in seconds, not after
// every problem has timed out.
Result<void> check_server(const EvalSetup& s, const EvalGsm8kOptions& o, const std::vector<http::Header>& headers) {
  auto reply = http::fetch(s.base, "GET", "/v1/models", {}, headers, 10'000'000'000, !o.insecure);
  if (!reply)
    return fail(ErrorCode::kUnavailable,
                fmt::format("cannot reach the server at {} ({}); is it up, and is its port forwarded to this host?",
                            s.info.base_url, reply.error().message()));
  if (reply->status == 401 || reply->status == 403)
    return fail(ErrorCode::kUnavailable, fmt::format("the server at {} refused the credentials (HTTP {}); give "
                                                     "--api-key or set OPENAI_API_KEY",
                                                     s.info.base_url, reply->status));
  return {};
}

EvalCell score_cell(const EvalSetup& s, const TaskScorer& scorer, int64_t concurrency, EvalRunOutput run) {
  EvalCell cell;
  cell.concurrency = concurrency;
  std::vector<std::vector<double>> correct(scorer.filter_names().size());
  for (size_t i = 0; i < s.docs.size(); ++i) {
    const EvalReply& reply = run.replies[i];
    ScoredSample sample;
    sample.doc_id = i;
    sample.target = s.targets[i];
    sample.completion = reply.text;
    sample.scored = reply.text;
    if (auto cut = find_cut(reply.text, s.stops)) {
      sample.marker = *cut->marker;
      sample.scored.resize(cut->at);
      ++cell.truncated;
    }
    sample.verdicts = scorer.score(sample.scored, sample.target);
    for (size_t f = 0; f < sample.verdicts.size(); ++f) correct[f].push_back(sample.verdicts[f].correct ? 1.0 : 0.0);
    cell.samples.push_back(std::move(sample));
  }
  for (size_t f = 0; f < correct.size(); ++f)
    cell.scores.push_back({scorer.filter_names()[f], mean_with_stderr(correct[f])});
  cell.run = std::move(run);
  return cell;
}

void print_progress(int64_t concurrency, const EvalProgress& p) {
  log::info("gsm8k c={}: {}/{} answered, {} failed, {} in flight, {} retries, {} timeouts, {:.1f} s", concurrency,
            p.answered, p.total, p.failed, p.in_flight, p.retries, p.timeouts, p.elapsed_s);
}

void print_cell(const EvalCell& cell, const std::filesystem::path& file) {
  std::string scores;
  for (const auto& f : cell.scores)
    scores += fmt::format("{}{} {:.4f} ± {:.4f}", scores.empty() ? "" : ", ", f.name, f.score.mean, f.score.stderr_);
  fmt::print("gsm8k c={}: exact_match {} ({} problems, {} retries, {} timeouts, {} truncated at a marker{}) -> {}\n",
             cell.concurrency, scores, cell.samples.size(), cell.run.retries, cell.run.timeouts, cell.truncated,
             cell.run.complete ? "" : "; INCOMPLETE: " + cell.run.stop_reason, file.string());
  std::fflush(stdout);
}

}  // namespace

int64_t eval_max_tokens(const EvalGsm8kOptions& o, std::optional<int64_t> family_cap) {
  if (o.max_tokens) return *o.max_tokens;
  int64_t budget = o.max_model_len > 4096 ? o.max_model_len - 4096 : o.max_model_len / 2;
  budget = std::min<int64_t>(budget, 16384);
  if (family_cap) budget = std::min(budget, *family_cap);
  return budget;
}

Result<int> run_eval_gsm8k(const EvalGsm8kOptions& o) {
  auto setup = prepare(o);
  if (!setup) return std::unexpected(setup.error());
  EvalSetup& s = *setup;
  s.info.task = &s.task;
  auto scorer = TaskScorer::create(s.task);
  if (!scorer) return std::unexpected(scorer.error());
  std::string api_key = o.api_key;
  if (api_key.empty())
    if (const char* env = std::getenv("OPENAI_API_KEY"); env != nullptr && std::string_view(env) != "EMPTY")
      api_key = env;
  auto extra_headers = bench::parse_headers(o.headers);
  if (!extra_headers) return std::unexpected(extra_headers.error());
  const auto headers = bench::request_headers(api_key, *extra_headers, {});
  log::info("gsm8k: {} problems, {}-shot, model {} (family {}), max_tokens {}, stops [{}], {} {}", s.docs.size(),
            s.info.num_fewshot, o.model, s.info.model_family, s.info.max_tokens, fmt::join(s.stops, " "),
            s.info.base_url, s.endpoint_path);
  std::vector<int64_t> completed;
  std::vector<int64_t> failed;
  if (auto ok = check_server(s, o, headers); !ok) {
    failed = o.concurrency;
    if (auto written = write_manifest(o.output, s.info, o.concurrency, completed, failed); !written)
      log::error("{}", written.error().message());
    return std::unexpected(ok.error());
  }
  StopSignals stop_signals;
  for (int64_t concurrency : o.concurrency) {
    EvalRunOptions r;
    r.base = s.base;
    r.endpoint = s.endpoint_path;
    r.api_key = api_key;
    r.extra_headers = *extra_headers;
    r.verify_tls = !o.insecure;
    r.concurrency = concurrency;
    r.request_timeout_ns = static_cast<int64_t>(o.request_timeout_s * 1e9);
    r.max_retries = o.max_retries;
    r.max_tokens = s.info.max_tokens;
    r.server_pid = static_cast<pid_t>(o.server_pid.value_or(0));
    r.interrupt = &StopSignals::flag();
    if (o.progress) r.on_progress = [concurrency](const EvalProgress& p) { print_progress(concurrency, p); };
    auto run = run_eval_requests(r, s.bodies);
    if (!run) return std::unexpected(run.error());
    EvalCell cell = score_cell(s, *scorer, concurrency, std::move(*run));
    (cell.run.complete ? completed : failed).push_back(concurrency);
    if (auto ok = write_cell(o.output, s.info, cell, s.docs, s.prompts); !ok) return std::unexpected(ok.error());
    if (auto ok = write_manifest(o.output, s.info, o.concurrency, completed, failed); !ok)
      return std::unexpected(ok.error());
    print_cell(cell, results_path(o.output, concurrency));
    if (StopSignals::stopped() || !cell.run.complete) break;
  }
  if (const int sig = StopSignals::signal()) return 128 + sig;
  return failed.empty() && completed.size() == o.concurrency.size() ? 0 : 1;
}

}  // namespace ix::eval
