#include "eval/eval_results.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <map>

#include "common/file_io.h"
#include "common/json_io.h"
#include "common/sanitize.h"

namespace ix::eval {

namespace bj = boost::json;

namespace {

// Completions are stored whole for audit (a runaway one fills its token cap: tens of kB).
constexpr size_t kMaxSampleTextBytes = size_t{1} << 20;

bj::array string_array(const std::vector<std::string>& items) {
  bj::array out;
  for (const auto& item : items) out.emplace_back(item);
  return out;
}

// The task's config as lm-eval writes it under "configs", with the stops and cap actually sent.
bj::object task_config_json(const EvalRunInfo& info) {
  const config::LmEvalTask& t = *info.task;
  bj::object c;
  c["task"] = t.task;
  c["tag"] = string_array(t.tags);
  c["dataset_path"] = t.dataset_path;
  c["dataset_name"] = t.dataset_name;
  c["training_split"] = t.training_split;
  c["test_split"] = t.test_split;
  c["fewshot_split"] = t.fewshot_split;
  c["doc_to_text"] = t.doc_to_text;
  c["doc_to_target"] = t.doc_to_target;
  c["target_delimiter"] = t.target_delimiter;
  c["fewshot_delimiter"] = t.fewshot_delimiter;
  c["num_fewshot"] = info.num_fewshot;
  bj::array metrics;
  for (const auto& m : t.metrics) {
    metrics.push_back(bj::object{{"metric", m.metric},
                                 {"aggregation", m.aggregation},
                                 {"higher_is_better", m.higher_is_better},
                                 {"ignore_case", m.ignore_case},
                                 {"ignore_punctuation", m.ignore_punctuation},
                                 {"regexes_to_ignore", string_array(m.regexes_to_ignore)}});
  }
  c["metric_list"] = std::move(metrics);
  c["output_type"] = t.output_type;
  c["generation_kwargs"] = bj::object{
      {"until", string_array(info.stops)}, {"do_sample", false}, {"temperature", 0.0}, {"max_tokens", info.max_tokens}};
  c["repeats"] = t.repeats;
  bj::array filters;
  for (const auto& f : t.filters) {
    bj::array steps;
    steps.push_back(bj::object{{"function", "regex"},
                               {"group_select", f.group_select},
                               {"regex_pattern", f.regex_pattern},
                               {"fallback", f.fallback}});
    steps.push_back(bj::object{{"function", "take_first"}});
    filters.push_back(bj::object{{"name", f.name}, {"filter", std::move(steps)}});
  }
  c["filter_list"] = std::move(filters);
  c["metadata"] = bj::object{{"version", t.version}, {"model", info.model}};
  return c;
}

bj::object ixbench_block(const EvalRunInfo& info, const EvalCell& cell) {
  int64_t answered = 0;
  int64_t failed = 0;
  int64_t unsent = 0;
  std::map<std::string, int64_t> finish;
  for (const auto& reply : cell.run.replies) {
    if (!reply.sent) {
      ++unsent;
    } else if (reply.ok) {
      ++answered;
      ++finish[reply.finish_reason.empty() ? "none" : reply.finish_reason];
    } else {
      ++failed;
    }
  }
  bj::object reasons;
  for (const auto& [reason, count] : finish) reasons[reason] = count;
  bj::object b;
  b["version"] = info.tool_version;
  b["complete"] = cell.run.complete;
  b["stop_reason"] = cell.run.stop_reason;
  b["concurrency"] = cell.concurrency;
  b["requests"] = static_cast<int64_t>(cell.run.replies.size());
  b["answered"] = answered;
  b["failed"] = failed;
  b["not_sent"] = unsent;
  b["retries"] = cell.run.retries;
  b["timeouts"] = cell.run.timeouts;
  b["truncated_at_marker"] = cell.truncated;
  b["finish_reasons"] = std::move(reasons);
  b["base_url"] = info.base_url;
  b["endpoint"] = info.endpoint;
  b["model_family"] = info.model_family;
  b["stop_strings"] = string_array(info.stops);
  b["max_tokens"] = info.max_tokens;
  b["fewshot_seed"] = info.seed;
  b["dataset_dir"] = info.dataset_dir;
  b["task_source"] = info.task->source;
  b["duration_s"] = cell.run.duration_s;
  return b;
}

bj::object sample_json(const ScoredSample& s, const Gsm8kProblem& doc, const std::string& prompt,
                       const EvalReply& reply, const std::vector<std::string>& filter_names) {
  bj::object o;
  o["doc_id"] = s.doc_id;
  o["doc"] = bj::object{{"question", doc.question}, {"answer", doc.answer}};
  o["target"] = s.target;
  o["prompt"] = prompt;
  o["resps"] = bj::array{bj::array{bj::string(ix::storable(s.completion, kMaxSampleTextBytes))}};
  o["scored_text"] = ix::storable(s.scored, kMaxSampleTextBytes);
  o["truncated_at_marker"] = s.marker.has_value();
  o["marker"] = s.marker ? bj::value(*s.marker) : bj::value(nullptr);
  bj::object filtered;
  bj::object correct;
  for (size_t i = 0; i < s.verdicts.size() && i < filter_names.size(); ++i) {
    filtered[filter_names[i]] = ix::storable(s.verdicts[i].extracted, kMaxSampleTextBytes);
    correct[filter_names[i]] = s.verdicts[i].correct ? 1.0 : 0.0;
  }
  o["filtered_resps"] = std::move(filtered);
  o["exact_match"] = std::move(correct);
  o["finish_reason"] = reply.finish_reason;
  o["completion_tokens"] = reply.completion_tokens;
  o["answered"] = reply.ok;
  o["retries"] = reply.retries;
  o["timeouts"] = reply.timeouts;
  o["error"] = reply.error.empty() ? bj::value(nullptr) : bj::value(reply.error);
  o["latency_s"] = reply.latency_s;
  return o;
}

}  // namespace

std::filesystem::path results_path(const std::filesystem::path& output, int64_t concurrency) {
  const std::string ext = output.has_extension() ? output.extension().string() : ".json";
  return output.parent_path() / fmt::format("{}_conc{}{}", output.stem().string(), concurrency, ext);
}

std::filesystem::path samples_path(const std::filesystem::path& output, std::string_view task, int64_t concurrency) {
  return output.parent_path() / fmt::format("samples_{}_conc{}.jsonl", task, concurrency);
}

std::filesystem::path manifest_path(const std::filesystem::path& output) {
  return output.parent_path() / "meta_env.json";
}

bj::object results_json(const EvalRunInfo& info, const EvalCell& cell) {
  const std::string& task = info.task->task;
  bj::object scores{{"alias", task}};
  for (const auto& f : cell.scores) {
    scores[fmt::format("{},{}", "exact_match", f.name)] = f.score.mean;
    scores[fmt::format("{}_stderr,{}", "exact_match", f.name)] = f.score.stderr_;
  }
  bj::object out;
  out["results"] = bj::object{{task, std::move(scores)}};
  out["group_subtasks"] = bj::object{{task, bj::array{}}};
  out["configs"] = bj::object{{task, task_config_json(info)}};
  out["versions"] = bj::object{{task, info.task->version}};
  out["n-shot"] = bj::object{{task, info.num_fewshot}};
  out["higher_is_better"] = bj::object{{task, bj::object{{"exact_match", true}}}};
  out["n-samples"] = bj::object{
      {task, bj::object{{"original", info.original_docs}, {"effective", static_cast<int64_t>(cell.samples.size())}}}};
  out["config"] = bj::object{
      {"model", "ixbench-" + info.endpoint},
      {"model_args", fmt::format("model={},base_url={},num_concurrent={},max_retries={},tokenized_requests=False",
                                 info.model, info.base_url, cell.concurrency, info.max_retries)},
      {"limit", info.limit ? bj::value(*info.limit) : bj::value(nullptr)},
      {"fewshot_seed", info.seed},
      {"gen_kwargs", bj::object{{"max_tokens", info.max_tokens}, {"temperature", 0.0}, {"top_p", 1.0}}}};
  out["date"] = info.started_unix_s;
  out["lm_eval_version"] = info.tool_version;
  out["model_name"] = info.model;
  out["total_evaluation_time_seconds"] = fmt::format("{:.3f}", cell.run.duration_s);
  out["ixbench"] = ixbench_block(info, cell);
  return out;
}

Result<void> write_cell(const std::filesystem::path& output, const EvalRunInfo& info, const EvalCell& cell,
                        const std::vector<Gsm8kProblem>& docs, const std::vector<std::string>& prompts) {
  std::vector<std::string> names;
  for (const auto& f : cell.scores) names.push_back(f.name);
  std::string lines;
  for (const auto& s : cell.samples)
    lines +=
        json::to_string(sample_json(s, docs[s.doc_id], prompts[s.doc_id], cell.run.replies[s.doc_id], names)) + "\n";
  if (auto ok = files::write_file(samples_path(output, info.task->task, cell.concurrency), lines); !ok) return ok;
  return files::write_file(results_path(output, cell.concurrency), json::to_pretty_string(results_json(info, cell)));
}

Result<void> write_manifest(const std::filesystem::path& output, const EvalRunInfo& info,
                            const std::vector<int64_t>& requested, const std::vector<int64_t>& completed,
                            const std::vector<int64_t>& failed) {
  auto ints = [](const std::vector<int64_t>& values) {
    bj::array out;
    for (int64_t v : values) out.emplace_back(v);
    return out;
  };
  bj::object m;
  m["infmax_model_prefix"] = info.model_prefix.empty() ? "unknown" : info.model_prefix;
  m["model"] = info.model;
  m["conc"] = requested.empty() ? 0 : requested.front();
  m["eval_concs"] = ints(requested);
  m["completed_eval_concs"] = ints(completed);
  m["failed_eval_concs"] = ints(failed);
  m["task"] = info.task->task;
  m["num_fewshot"] = info.num_fewshot;
  m["limit"] = info.limit ? bj::value(*info.limit) : bj::value(nullptr);
  m["base_url"] = info.base_url;
  m["tool"] = info.tool_version;
  return files::write_file(manifest_path(output), json::to_pretty_string(m));
}

}  // namespace ix::eval
