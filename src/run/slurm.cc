#include "run/slurm.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "common/log.h"
#include "common/strings.h"

namespace ix::run {

namespace {

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  for (auto line : split(text, '\n')) {
    line = strip(line);
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// "None" and "(null)" are Slurm's words for no value.
std::string slurm_value(std::string_view text) {
  return text == "None" || text == "(null)" ? std::string() : std::string(text);
}

// One state per task of `id` (or the one job): the record as the parsers build it.
void add_tasks(const ParsedJobId& id, SlurmTaskState state, std::vector<SlurmTaskState>& out) {
  state.job_id = id.job_id;
  if (!id.tasks) {
    out.push_back(std::move(state));
    return;
  }
  for (std::uint32_t task : *id.tasks) {
    state.array_task = task;
    out.push_back(state);
  }
}

// Sets state, slurm_state, and the exit status when the state is terminal.
Result<void> set_state(SlurmTaskState& state, std::string_view state_text, std::string_view exit_text) {
  state.slurm_state = std::string(state_text.substr(0, state_text.find(' ')));
  state.state = slurm_state_from_text(state_text);
  if (exit_text.empty() || !is_terminal(state.state)) return {};
  auto exit = parse_exit_code(exit_text);
  if (!exit) return fail(exit.error());
  state.exit_code = exit->first;
  state.signal = exit->second;
  return {};
}

Error parse_error(std::string_view tool, std::string_view line, const Error& error) {
  return Error(ErrorCode::kParse,
               fmt::format("{} printed a line this client cannot read: '{}': {}", tool, line, error.message()));
}

}  // namespace

std::string_view slurm_state_name(SlurmState state) {
  switch (state) {
    case SlurmState::kPending: return "PENDING";
    case SlurmState::kRunning: return "RUNNING";
    case SlurmState::kCompleted: return "COMPLETED";
    case SlurmState::kFailed: return "FAILED";
    case SlurmState::kCancelled: return "CANCELLED";
    case SlurmState::kTimeout: return "TIMEOUT";
    case SlurmState::kNodeFail: return "NODE_FAIL";
    case SlurmState::kOutOfMemory: return "OUT_OF_MEMORY";
    case SlurmState::kUnknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

SlurmState slurm_state_from_text(std::string_view text) {
  std::string_view word = text.substr(0, text.find(' '));
  while (!word.empty() && word.back() == '+') word.remove_suffix(1);
  static const std::map<std::string_view, SlurmState, std::less<>> kStates = {
      {"PENDING", SlurmState::kPending},      {"CONFIGURING", SlurmState::kPending},
      {"REQUEUED", SlurmState::kPending},     {"REQUEUE_FED", SlurmState::kPending},
      {"REQUEUE_HOLD", SlurmState::kPending}, {"RESV_DEL_HOLD", SlurmState::kPending},
      {"RUNNING", SlurmState::kRunning},      {"COMPLETING", SlurmState::kRunning},
      {"SUSPENDED", SlurmState::kRunning},    {"STOPPED", SlurmState::kRunning},
      {"SIGNALING", SlurmState::kRunning},    {"STAGE_OUT", SlurmState::kRunning},
      {"RESIZING", SlurmState::kRunning},     {"COMPLETED", SlurmState::kCompleted},
      {"FAILED", SlurmState::kFailed},        {"BOOT_FAIL", SlurmState::kFailed},
      {"SPECIAL_EXIT", SlurmState::kFailed},  {"PREEMPTED", SlurmState::kFailed},
      {"CANCELLED", SlurmState::kCancelled},  {"REVOKED", SlurmState::kCancelled},
      {"TIMEOUT", SlurmState::kTimeout},      {"DEADLINE", SlurmState::kTimeout},
      {"NODE_FAIL", SlurmState::kNodeFail},   {"OUT_OF_MEMORY", SlurmState::kOutOfMemory},
  };
  const auto found = kStates.find(word);
  return found == kStates.end() ? SlurmState::kUnknown : found->second;
}

bool is_terminal(SlurmState state) {
  return state != SlurmState::kPending && state != SlurmState::kRunning && state != SlurmState::kUnknown;
}

std::string_view slurm_source_name(SlurmSource source) {
  switch (source) {
    case SlurmSource::kNone: return "none";
    case SlurmSource::kSqueue: return "squeue";
    case SlurmSource::kSacct: return "sacct";
    case SlurmSource::kScontrol: return "scontrol";
  }
  return "none";
}

// ---- Submission ----

std::string slurm_time_limit(std::chrono::seconds limit) {
  const long long total = limit.count();
  return fmt::format("{}-{:02}:{:02}:{:02}", total / 86400, total / 3600 % 24, total / 60 % 60, total % 60);
}

namespace {

Result<void> check_submission(const BatchSubmission& job) {
  auto invalid = [&](std::string what) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("Slurm job '{}': {}", job.job_name, what));
  };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(job.script, ec)) {
    return invalid(fmt::format("the batch script {} is not a file", job.script.string()));
  }
  if (job.job_name.empty() || job.job_name.find_first_of("\n\r") != std::string::npos) {
    return invalid("the job name must be one line and not empty");
  }
  if (job.nodes == 0 || job.ntasks == 0 || job.cpus_per_task == 0) {
    return invalid("nodes, ntasks and cpus_per_task must each be at least 1");
  }
  if (job.ntasks < job.nodes) return invalid(fmt::format("ntasks {} is below nodes {}", job.ntasks, job.nodes));
  if (job.array_size > kMaxArrayTasks)
    return invalid(fmt::format("array size {} is over {}", job.array_size, kMaxArrayTasks));
  if (job.time_limit.count() < 0) return invalid("the time limit is negative");
  if (!job.working_dir.empty() && !std::filesystem::is_directory(job.working_dir, ec)) {
    return invalid(fmt::format("the working directory {} does not exist", job.working_dir.string()));
  }
  for (const auto& [name, value] : job.environment) {
    const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    });
    if (!word || (name[0] >= '0' && name[0] <= '9')) {
      return invalid(fmt::format("'{}' is not an environment variable name (letters, digits, _)", name));
    }
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> sbatch_arguments(const BatchSubmission& job) {
  if (auto checked = check_submission(job); !checked) return fail(checked.error());
  std::vector<std::string> args = {"--parsable",
                                   "--job-name=" + job.job_name,
                                   "--export=ALL",
                                   fmt::format("--nodes={}", job.nodes),
                                   fmt::format("--ntasks={}", job.ntasks),
                                   fmt::format("--cpus-per-task={}", job.cpus_per_task)};
  if (job.array_size > 0) {
    std::string array = fmt::format("--array=0-{}", job.array_size - 1);
    if (job.array_max_running > 0) array += fmt::format("%{}", job.array_max_running);
    args.push_back(array);
  }
  if (job.partition) args.push_back("--partition=" + *job.partition);
  if (!job.output_pattern.empty()) args.push_back("--output=" + job.output_pattern);
  if (!job.error_pattern.empty()) args.push_back("--error=" + job.error_pattern);
  if (!job.working_dir.empty()) args.push_back("--chdir=" + job.working_dir.string());
  if (job.time_limit.count() > 0) args.push_back("--time=" + slurm_time_limit(job.time_limit));
  args.push_back(job.script.string());
  args.insert(args.end(), job.script_args.begin(), job.script_args.end());
  return args;
}

Result<std::uint64_t> parse_sbatch_parsable(std::string_view out) {
  const std::string_view line = strip(out);
  const auto id = parse_number<std::uint64_t>(line.substr(0, line.find(';')));
  if (!id || *id == 0) {
    return fail(ErrorCode::kParse, fmt::format("sbatch --parsable printed '{}', not a job id", line));
  }
  return *id;
}

// ---- Ids, tasks, exit codes ----

Result<std::vector<std::uint32_t>> parse_array_tasks(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return fail(ErrorCode::kParse, fmt::format("array task list '{}': {}", text, why));
  };
  std::string_view list = text.substr(0, text.find('%'));
  std::vector<std::uint32_t> tasks;
  for (std::string_view item : split(list, ',')) {
    const size_t colon = item.find(':');
    const auto step = colon == std::string_view::npos ? std::optional<std::uint32_t>(1)
                                                      : parse_number<std::uint32_t>(item.substr(colon + 1));
    const std::string_view range = item.substr(0, colon);
    const size_t dash = range.find('-');
    const auto first = parse_number<std::uint32_t>(range.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : parse_number<std::uint32_t>(range.substr(dash + 1));
    if (!first || !last || !step || *step == 0 || *last < *first) return bad(fmt::format("'{}' is not a range", item));
    if ((*last - *first) / *step + tasks.size() >= kMaxArrayTasks) return bad("too many tasks");
    for (std::uint64_t task = *first; task <= *last; task += *step) tasks.push_back(static_cast<std::uint32_t>(task));
  }
  return tasks;
}

Result<ParsedJobId> parse_job_id(std::string_view text) {
  ParsedJobId parsed;
  const size_t underscore = text.find('_');
  const auto id = parse_number<std::uint64_t>(text.substr(0, underscore));
  if (!id) return fail(ErrorCode::kParse, fmt::format("'{}' is not a Slurm job id", text));
  parsed.job_id = *id;
  if (underscore == std::string_view::npos) return parsed;
  std::string_view tasks = text.substr(underscore + 1);
  if (tasks.size() >= 2 && tasks.front() == '[' && tasks.back() == ']') tasks = tasks.substr(1, tasks.size() - 2);
  auto list = parse_array_tasks(tasks);
  if (!list) return fail(list.error());
  parsed.tasks = std::move(*list);
  return parsed;
}

Result<std::pair<int, int>> parse_exit_code(std::string_view text) {
  const size_t colon = text.find(':');
  const auto status = parse_number<int>(text.substr(0, colon));
  const auto signal =
      colon == std::string_view::npos ? std::optional<int>(0) : parse_number<int>(text.substr(colon + 1));
  if (!status || !signal) return fail(ErrorCode::kParse, fmt::format("'{}' is not an exit code (status:signal)", text));
  return std::pair{*status, *signal};
}

// ---- The three sources ----

Result<std::vector<SlurmTaskState>> parse_squeue(std::string_view out) {
  std::vector<SlurmTaskState> states;
  for (std::string_view line : lines(out)) {
    const auto fields = split(line, '|');
    if (fields.size() != 3) return fail(parse_error("squeue", line, Error(ErrorCode::kParse, "want id|state|reason")));
    auto id = parse_job_id(fields[0]);
    if (!id) return fail(parse_error("squeue", line, id.error()));
    SlurmTaskState state{.reason = slurm_value(fields[2]), .source = SlurmSource::kSqueue};
    if (auto set = set_state(state, fields[1], ""); !set) return fail(parse_error("squeue", line, set.error()));
    add_tasks(*id, std::move(state), states);
  }
  return states;
}

Result<std::vector<SlurmTaskState>> parse_sacct(std::string_view out) {
  std::vector<SlurmTaskState> states;
  for (std::string_view line : lines(out)) {
    const auto fields = split(line, '|');
    if (fields.size() != 3)
      return fail(parse_error("sacct", line, Error(ErrorCode::kParse, "want JobID|State|ExitCode")));
    if (fields[0].find_first_of(".+") != std::string_view::npos) continue;  // a step, or a heterogeneous job
    auto id = parse_job_id(fields[0]);
    if (!id) return fail(parse_error("sacct", line, id.error()));
    SlurmTaskState state{.source = SlurmSource::kSacct};
    if (auto set = set_state(state, fields[1], fields[2]); !set) return fail(parse_error("sacct", line, set.error()));
    add_tasks(*id, std::move(state), states);
  }
  return states;
}

namespace {

// One `scontrol show job` record (Key=Value words) -> states.
Result<void> add_scontrol_record(const std::map<std::string_view, std::string_view>& fields,
                                 std::vector<SlurmTaskState>& states) {
  const auto field = [&](std::string_view key) {
    const auto found = fields.find(key);
    return found == fields.end() ? std::string_view() : found->second;
  };
  const std::string_view array_job = field("ArrayJobId");
  auto id = parse_job_id(array_job.empty() ? field("JobId") : array_job);
  if (!id) return fail(id.error());
  if (!array_job.empty()) {
    auto tasks = parse_array_tasks(field("ArrayTaskId"));
    if (!tasks) return fail(tasks.error());
    id->tasks = std::move(*tasks);
  }
  SlurmTaskState state{.reason = slurm_value(field("Reason")), .source = SlurmSource::kScontrol};
  if (auto set = set_state(state, field("JobState"), field("ExitCode")); !set) return fail(set.error());
  add_tasks(*id, std::move(state), states);
  return {};
}

}  // namespace

Result<std::vector<SlurmTaskState>> parse_scontrol_jobs(std::string_view out) {
  // Records start at each JobId= word: the one-line (-o) form and the multi-line form alike. The
  // first occurrence of a key in a record counts (a job name with spaces leaves stray words).
  std::vector<SlurmTaskState> states;
  std::map<std::string_view, std::string_view> fields;
  std::string_view first_word;
  const auto flush = [&]() -> Result<void> {
    if (fields.empty()) return {};
    if (auto added = add_scontrol_record(fields, states); !added)
      return fail(parse_error("scontrol", first_word, added.error()));
    fields.clear();
    return {};
  };
  for (std::string_view line : lines(out)) {
    for (std::string_view word : split(line, ' ')) {
      const size_t equals = word.find('=');
      if (equals == std::string_view::npos) continue;
      const std::string_view key = word.substr(0, equals);
      if (key == "JobId") {
        if (auto flushed = flush(); !flushed) return fail(flushed.error());
        first_word = word;
      }
      if (!first_word.empty()) fields.emplace(key, word.substr(equals + 1));
    }
  }
  if (auto flushed = flush(); !flushed) return fail(flushed.error());
  return states;
}

// ---- The poll rule ----

std::vector<SlurmTaskState> merge_task_states(const SlurmJobId& job,
                                              const std::vector<std::vector<SlurmTaskState>>& sources) {
  std::vector<std::optional<std::uint32_t>> expected;
  if (job.array_size > 0) {
    for (std::uint32_t task = 0; task < job.array_size; ++task) expected.emplace_back(task);
  } else {
    std::set<std::optional<std::uint32_t>> listed;
    for (const auto& source : sources) {
      for (const auto& state : source) {
        if (state.job_id == job.id) listed.insert(state.array_task);
      }
    }
    if (listed.size() > 1) listed.erase(std::nullopt);
    expected.assign(listed.begin(), listed.end());
    if (expected.empty()) expected.emplace_back(std::nullopt);
  }
  std::vector<SlurmTaskState> merged;
  for (const auto& task : expected) {
    const SlurmTaskState* chosen = nullptr;
    for (size_t index = 0; index < sources.size(); ++index) {
      for (const auto& state : sources[index]) {
        if (state.job_id != job.id || state.array_task != task) continue;
        if (chosen == nullptr || (is_terminal(state.state) && !is_terminal(chosen->state))) chosen = &state;
        if (index == 0) break;
      }
      if (chosen != nullptr && (index == 0 || is_terminal(chosen->state))) break;
    }
    merged.push_back(chosen != nullptr ? *chosen : SlurmTaskState{.job_id = job.id, .array_task = task});
  }
  return merged;
}

// ---- The client ----

Result<SubprocessResult> SlurmClient::tool(const std::string& name, const std::vector<std::string>& args,
                                           const std::vector<std::pair<std::string, std::string>>& environment) const {
  std::vector<std::string> argv = {options_.bin_dir.empty() ? name : (options_.bin_dir / name).string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto ran = run_subprocess(argv, {.timeout = options_.command_timeout, .environment = environment});
  if (!ran) {
    return fail(ran.error().code(),
                fmt::format("{} (Slurm's client tools: install slurm-client, or start a local cluster with "
                            "scripts/start-slurm.sh)",
                            ran.error().message()));
  }
  if (ran->timed_out) {
    return fail(ErrorCode::kTimeout, fmt::format("{} did not answer within {} ms (is slurmctld overloaded or down?)",
                                                 name, options_.command_timeout.count()));
  }
  return ran;
}

namespace {

Error tool_failed(std::string_view what, const SubprocessResult& ran) {
  return Error(ErrorCode::kUnavailable,
               fmt::format("{} failed ({}): {}", what, ran.describe_end(), strip(ran.err.empty() ? ran.out : ran.err)));
}

bool invalid_job_id(const SubprocessResult& ran) {
  return ran.err.find("Invalid job id") != std::string::npos;
}

}  // namespace

Result<void> SlurmClient::check() const {
  auto ping = tool("scontrol", {"ping"});
  if (!ping) return fail(ping.error());
  if (!ping->succeeded() || ping->out.find("is UP") == std::string::npos) {
    return fail(ErrorCode::kUnavailable, fmt::format("the Slurm controller does not answer: scontrol ping ({}): {}",
                                                     ping->describe_end(), strip(ping->out + ping->err)));
  }
  const std::string sbatch = options_.bin_dir.empty() ? "sbatch" : (options_.bin_dir / "sbatch").string();
  if (find_program(sbatch).empty()) return fail(ErrorCode::kNotFound, fmt::format("{} is not on PATH", sbatch));
  return {};
}

Result<SlurmJobId> SlurmClient::submit(const BatchSubmission& submission) const {
  auto args = sbatch_arguments(submission);
  if (!args) return fail(args.error());
  auto ran = tool("sbatch", *args, submission.environment);
  if (!ran) return fail(ran.error());
  if (!ran->succeeded()) return fail(tool_failed(fmt::format("sbatch of job '{}'", submission.job_name), *ran));
  auto id = parse_sbatch_parsable(ran->out);
  if (!id) return fail(id.error());
  log::debug("slurm: submitted job {} ('{}', {} array tasks)", *id, submission.job_name, submission.array_size);
  return SlurmJobId{.id = *id, .array_size = submission.array_size};
}

Result<std::vector<SlurmTaskState>> SlurmClient::from_squeue(const SlurmJobId& job) const {
  auto ran = tool(
      "squeue", {"--noheader", "--array", fmt::format("--jobs={}", job.id), fmt::format("--format={}", kSqueueFormat)});
  if (!ran) return fail(ran.error());
  if (!ran->succeeded()) {
    if (invalid_job_id(*ran)) return std::vector<SlurmTaskState>{};
    return fail(tool_failed(fmt::format("squeue of job {}", job.id), *ran));
  }
  return parse_squeue(ran->out);
}

Result<std::vector<SlurmTaskState>> SlurmClient::from_sacct(const SlurmJobId& job) const {
  auto ran = tool("sacct", {"--noheader", "--parsable2", "--allocations", fmt::format("--jobs={}", job.id),
                            fmt::format("--format={}", kSacctFields)});
  if (!ran) return fail(ran.error());
  if (!ran->succeeded()) {
    if ((ran->err + ran->out).find("accounting storage is disabled") != std::string::npos) {
      sacct_disabled_->store(true);
      log::debug("slurm: this cluster keeps no accounting (sacct); job states come from scontrol");
    }
    return fail(tool_failed(fmt::format("sacct of job {}", job.id), *ran));
  }
  return parse_sacct(ran->out);
}

Result<std::vector<SlurmTaskState>> SlurmClient::from_scontrol(const SlurmJobId& job) const {
  auto ran = tool("scontrol", {"--oneliner", "show", "job", std::to_string(job.id)});
  if (!ran) return fail(ran.error());
  if (!ran->succeeded()) {
    if (invalid_job_id(*ran)) return std::vector<SlurmTaskState>{};
    return fail(tool_failed(fmt::format("scontrol show job {}", job.id), *ran));
  }
  return parse_scontrol_jobs(ran->out);
}

Result<std::vector<SlurmTaskState>> SlurmClient::poll(const SlurmJobId& job) const {
  std::vector<std::vector<SlurmTaskState>> sources;
  const auto settled = [&] {
    auto merged = merge_task_states(job, sources);
    return std::all_of(merged.begin(), merged.end(), [](const SlurmTaskState& state) {
      return state.source == SlurmSource::kSqueue || is_terminal(state.state);
    });
  };
  auto live = from_squeue(job);
  if (!live) return fail(live.error());
  sources.push_back(std::move(*live));
  if (!settled() && !sacct_disabled_->load()) {
    auto accounted = from_sacct(job);
    if (accounted) {
      sources.push_back(std::move(*accounted));
    } else if (!sacct_disabled_->load()) {
      log::warn("slurm: {}; asking scontrol instead", accounted.error().message());
    }
  }
  if (!settled()) {
    auto shown = from_scontrol(job);
    if (!shown) return fail(shown.error());
    sources.push_back(std::move(*shown));
  }
  return merge_task_states(job, sources);
}

Result<void> SlurmClient::cancel(const SlurmJobId& job) const {
  auto ran = tool("scancel", {std::to_string(job.id)});
  if (!ran) return fail(ran.error());
  if (!ran->succeeded() && !invalid_job_id(*ran) &&
      ran->err.find("already completing or completed") == std::string::npos) {
    return fail(tool_failed(fmt::format("scancel of job {}", job.id), *ran));
  }
  return {};
}

bool slurm_available() {
  return SlurmClient().check().has_value();
}

}  // namespace ix::run
