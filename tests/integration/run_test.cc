// `ixbench run` end to end through the real binary, on the simulator: tiny master configs
// (gpt-oss-120b fp4 on h200, tp 1, 256/32, concurrencies 1 and 2) written by each test, the run
// folder and the results store in the test's scratch folder. It checks what a sweep leaves (store,
// run folder, summary, report), that a failing job (a server that never answers /health, one that
// dies mid-run, a benchmark over its failure threshold, an eval under its threshold, a job folder
// taken away) fails alone with its reason, that a `kill -9` or Ctrl-C of ixbench leaves no server
// behind and `--resume` completes the run, the matrix and dry-run inputs, the refused inputs, and
// the local executor's parallelism and GPU shares.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;
using testing::read_whole_file;
using testing::run_ixbench;

// --- inputs -------------------------------------------------------------------------------------

// One master-config entry: gpt-oss-120b fp4 on h200, one fixed-seq-len shape.
std::string config_entry(const std::string& key, const std::string& framework, const std::string& concs, int tp = 1,
                         int osl = 32) {
  return fmt::format(R"({}:
  image: ixbench-sim
  model: openai/gpt-oss-120b
  model-prefix: gptoss
  runner: h200
  precision: fp4
  framework: {}
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 256
      osl: {}
      search-space:
      - {{ tp: {}, conc-list: [{}] }}
)",
                     key, framework, osl, tp, concs);
}

constexpr const char* kRunners = "labels:\n  h200:\n    - h200-sim_00\n";

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// A sweep's inputs and outputs in one scratch folder.
struct Sweep {
  fs::path dir, configs, runners, out, recipes;
  std::string db;

  // `ixbench run` over the configs, into this sweep's run folder and store, then `extra`.
  std::vector<std::string> run_args(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {
        "run", "--config-files", configs.string(), "--runner-config", runners.string(), "--out", out.string(), "--db",
        db};
    if (!recipes.empty()) args.insert(args.end(), {"--recipes", recipes.string()});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

Sweep make_sweep(const std::string& name, const std::string& configs) {
  Sweep sweep;
  sweep.dir = testing::scratch_dir("run_" + name);
  sweep.configs = sweep.dir / "master.yaml";
  sweep.runners = sweep.dir / "runners.yaml";
  sweep.out = sweep.dir / "runs";
  sweep.db = (sweep.dir / "results.db").string();
  write_file(sweep.configs, configs);
  write_file(sweep.runners, kRunners);
  return sweep;
}

// A recipes folder holding the built-in sim recipe and `extra` recipes (file name -> text).
fs::path make_recipes(const fs::path& dir, const std::map<std::string, std::string>& extra) {
  fs::create_directories(dir);
  fs::copy_file(testing::source_path("recipes/sim.yaml"), dir / "sim.yaml", fs::copy_options::overwrite_existing);
  for (const auto& [name, text] : extra) write_file(dir / name, text);
  return dir;
}

// sim.yaml serving rows of `framework` instead (simulating vLLM), with `flags` added to `ixbench sim serve`.
std::string sim_recipe_variant(const std::string& framework, const std::string& flags) {
  std::string text = read_whole_file(testing::source_path("recipes/sim.yaml"));
  const std::string frameworks = "frameworks: [sim]";
  const std::string serve = "' sim serve";
  EXPECT_NE(text.find(frameworks), std::string::npos);
  EXPECT_NE(text.find(serve), std::string::npos);
  text.replace(text.find(frameworks), frameworks.size(), "frameworks: [" + framework + "]");
  text.replace(text.find(serve), serve.size(), serve + " " + flags);
  // The framework it simulates: vLLM, as for `framework: sim` rows.
  const std::string simulated = "{{ 'vllm' if framework == 'sim' else framework }}";
  EXPECT_NE(text.find(simulated), std::string::npos);
  text.replace(text.find(simulated), simulated.size(), "vllm");
  return text;
}

// A shell-script recipe starting the simulator (InferenceX's environment contract: $MODEL, $PORT, ...):
// `before` runs first, then the server starts in the background and `after` runs while it serves.
std::string sim_script(const std::string& before, const std::string& after = "wait \"$server\"\n") {
  return fmt::format(
      "{}'{}' sim serve --model \"$MODEL\" --served-model-name \"$MODEL\" --hardware h200 --precision \"$PRECISION\" "
      "--framework vllm --tp \"$TP\" --max-model-len \"$MAX_MODEL_LEN\" --port \"$PORT\" &\nserver=$!\n{}",
      before, testing::ixbench_binary(), after);
}

// --- what a run prints and leaves -----------------------------------------------------------------

struct SummaryJob {
  std::string outcome, id;
  std::string tput_per_gpu;  // as printed ("-" when none)
  std::string details;       // the failure lines printed under it
};

// The job table `ixbench run` prints at the end.
std::map<std::string, SummaryJob> summary_jobs(const std::string& out) {
  static const std::set<std::string> kOutcomes = {"succeeded", "failed", "interrupted", "stored", "not-run"};
  std::map<std::string, SummaryJob> jobs;
  std::istringstream lines(out);
  SummaryJob* last = nullptr;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.size() == 5 && kOutcomes.count(w[0]) && !line.starts_with(" ")) {
      last = &jobs[w[4]];
      *last = {w[0], w[4], w[1], {}};
    } else if (last && line.starts_with("   ")) {
      last->details += line + "\n";
    } else {
      last = nullptr;
    }
  }
  return jobs;
}

std::map<std::string, std::string> outcomes(const std::map<std::string, SummaryJob>& jobs) {
  std::map<std::string, std::string> out;
  for (const auto& [id, job] : jobs) out[id] = job.outcome;
  return out;
}

// "run <id> in <folder>" of the summary.
std::string printed_run_id(const std::string& out) {
  std::smatch match;
  static const std::regex kLine(R"(\nrun (\S+) in (\S+)\n)");
  return std::regex_search(out, match, kLine) ? match[1].str() : std::string();
}

// The one run folder under `out` (a run started in the background prints its id only at the end).
fs::path only_run_dir(const fs::path& out) {
  std::vector<fs::path> dirs;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(out, error)) {
    if (entry.is_directory()) dirs.push_back(entry.path());
  }
  return dirs.size() == 1 ? dirs.front() : fs::path();
}

bj::object read_object(const fs::path& path) {
  boost::system::error_code error;
  bj::value value = bj::parse(read_whole_file(path), error);
  return !error && value.is_object() ? value.get_object() : bj::object();
}

std::string text_field(const bj::object& object, const char* key) {
  const bj::value* value = object.if_contains(key);
  return value && value->is_string() ? std::string(value->get_string()) : std::string();
}

std::string job_state(const fs::path& job_dir) {
  return text_field(read_object(job_dir / "status.json"), "state");
}

std::unique_ptr<store::Store> open_db(const std::string& db) {
  auto opened = store::open_store(db);
  return opened ? std::move(*opened) : nullptr;
}

// The result stems the store holds for `run_id`, sorted (empty when the store cannot be read).
std::vector<std::string> stored_stems(const std::string& db, const std::string& run_id) {
  if (!fs::exists(db)) return {};
  auto store = open_db(db);
  if (!store) return {};
  auto stems = store->result_stems(run_id, store::ResultKind::kMeasured);
  if (!stems) return {};
  std::vector<std::string> out = *stems;
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> ids_with(const std::map<std::string, SummaryJob>& jobs, const std::string& outcome) {
  std::vector<std::string> out;
  for (const auto& [id, job] : jobs) {
    if (job.outcome == outcome) out.push_back(id);
  }
  return out;
}

std::vector<std::string> keys(const std::map<std::string, SummaryJob>& jobs) {
  std::vector<std::string> out;
  for (const auto& [id, job] : jobs) out.push_back(id);
  return out;
}

// Polls `done` every 100 ms until it holds or `timeout_s` passes.
bool eventually(const std::function<bool()>& done, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

// --- processes ------------------------------------------------------------------------------------

// ixbench started in the background, stdout and stderr to files, for tests that signal it.
struct Background {
  pid_t pid = -1;
  fs::path out, err;
};

Background start_ixbench(const std::vector<std::string>& args, const fs::path& dir) {
  Background run{-1, dir / "ixbench.out", dir / "ixbench.err"};
  std::vector<std::string> argv = {testing::ixbench_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  run.pid = fork();
  if (run.pid == 0) {
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(run.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(run.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    std::vector<char*> pointers;
    for (auto& arg : argv) pointers.push_back(arg.data());
    pointers.push_back(nullptr);
    execv(pointers[0], pointers.data());
    _exit(127);
  }
  return run;
}

// The exit as a shell reports it (128 + the signal), or -1 when it did not end within `timeout_s`
// (it is then killed).
int wait_exit(pid_t pid, double timeout_s) {
  int status = 0;
  bool ended = eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, timeout_s);
  if (!ended) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// Live (not zombie) processes whose command line holds `needle`.
std::vector<std::string> live_processes_with(const std::string& needle) {
  std::vector<std::string> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::stoi(name) == ::getpid()) continue;
    std::string cmdline = read_whole_file(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) == std::string::npos) continue;
    const std::string stat = read_whole_file(entry.path() / "stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
    found.push_back(name + ": " + cmdline);
  }
  return found;
}

// The ports the servers of a run's jobs were told to listen on (from each server_command.sh).
std::vector<int> server_ports(const fs::path& run_dir) {
  std::vector<int> ports;
  static const std::regex kPort(R"(--port (\d+))");
  for (const auto& entry : fs::directory_iterator(run_dir)) {
    const std::string text = read_whole_file(entry.path() / "server_command.sh");
    for (std::sregex_iterator it(text.begin(), text.end(), kPort), end; it != end; ++it) {
      ports.push_back(std::stoi((*it)[1].str()));
    }
  }
  return ports;
}

bool port_accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

// What is still running of a run: its job processes (their command lines name the run folder) and
// servers (sim serve on a job's port, or anything accepting connections there).
std::vector<std::string> leftovers(const fs::path& run_dir) {
  std::vector<std::string> left = live_processes_with(run_dir.string());
  for (int port : server_ports(run_dir)) {
    for (auto& process : live_processes_with(fmt::format("--port {}", port))) left.push_back(process);
    if (port_accepts(port)) left.push_back(fmt::format("port {} still accepts connections", port));
  }
  return left;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

// A job of the run whose benchmark is under way (steps.log says so, no status.json yet), or "".
std::string job_benchmarking(const fs::path& run_dir) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(run_dir, error)) {
    if (!entry.is_directory() || fs::exists(entry.path() / "status.json")) continue;
    if (read_whole_file(entry.path() / "steps.log").find(" bench conc=") != std::string::npos)
      return entry.path().filename().string();
  }
  return {};
}

std::string sha256_of(const fs::path& path) {
  const std::string tool = testing::find_on_path("sha256sum");
  if (tool.empty()) return {};
  auto run = testing::run_process({tool, path.string()});
  return run.out.substr(0, run.out.find(' '));
}

// --- 1. a sweep end to end ------------------------------------------------------------------------

TEST(Run, TwoConfigSweepEndToEnd) {
  // Two configs: tp 1 at concurrencies 1 and 2, tp 2 at concurrency 1: three jobs.
  Sweep sweep = make_sweep("e2e", config_entry("tiny-tp1", "sim", "1, 2") + config_entry("tiny-tp2", "sim", "1", 2));
  auto run = run_ixbench(sweep.run_args(), "", 240);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;

  // The summary: every job succeeded, with its numbers; the run and the report.
  auto jobs = summary_jobs(run.out);
  ASSERT_EQ(jobs.size(), 3u) << run.out;
  EXPECT_EQ(ids_with(jobs, "succeeded").size(), 3u) << run.out;
  EXPECT_NE(run.out.find("3 jobs: 3 succeeded, 0 already stored, 0 failed, 0 interrupted, 0 not run"),
            std::string::npos)
      << run.out;
  const std::string run_id = printed_run_id(run.out);
  ASSERT_FALSE(run_id.empty()) << run.out;
  const fs::path run_dir = sweep.out / run_id;
  EXPECT_NE(run.out.find("run " + run_id + " in " + run_dir.string() + "\n"), std::string::npos) << run.out;
  std::smatch report;
  ASSERT_TRUE(std::regex_search(run.out, report, std::regex(R"(\nreport: (\S+)\n)"))) << run.out;
  EXPECT_TRUE(fs::is_regular_file(report[1].str())) << report[1].str();
  EXPECT_EQ(fs::path(report[1].str()).parent_path().parent_path(), run_dir);

  // The manifest: version, host, the command, each input's SHA-256.
  const bj::object manifest = read_object(run_dir / "run_manifest.json");
  EXPECT_EQ(text_field(manifest, "run_id"), run_id);
  auto version = run_ixbench({"--version"});
  std::istringstream version_words(version.out);
  std::string program, number;
  version_words >> program >> number;
  ASSERT_FALSE(number.empty()) << version.out;
  EXPECT_NE(text_field(manifest, "ixbench_version").find(number), std::string::npos) << bj::serialize(manifest);
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(text_field(manifest, "host"), host);
  EXPECT_NE(text_field(manifest, "command").find(sweep.configs.string()), std::string::npos);
  EXPECT_FALSE(text_field(manifest, "finished_at").empty());
  ASSERT_TRUE(manifest.contains("inputs") && manifest.at("inputs").is_array()) << bj::serialize(manifest);
  std::map<std::string, std::string> hashes;
  for (const auto& input : manifest.at("inputs").get_array()) {
    hashes[text_field(input.as_object(), "path")] = text_field(input.as_object(), "sha256");
  }
  ASSERT_EQ(hashes.size(), 2u) << bj::serialize(manifest);
  for (const fs::path& input : {sweep.configs, sweep.runners}) {
    ASSERT_TRUE(hashes.count(input.string())) << input << " " << bj::serialize(manifest);
    EXPECT_EQ(hashes[input.string()].size(), 64u);
    if (std::string expected = sha256_of(input); !expected.empty()) {
      EXPECT_EQ(hashes[input.string()], expected);
    }
  }

  // Each job's folder.
  for (const auto& [id, job] : jobs) {
    const fs::path dir = run_dir / id;
    for (const std::string file : {"job.json", "server_command.sh", "server.log", "steps.log", "commands.sh"}) {
      EXPECT_TRUE(fs::is_regular_file(dir / file)) << dir / file;
    }
    EXPECT_TRUE(fs::is_regular_file(dir / (id + ".json"))) << "raw result of " << id;
    EXPECT_TRUE(fs::is_regular_file(dir / ("agg_" + id + ".json"))) << "aggregated result of " << id;
    EXPECT_EQ(job_state(dir), "succeeded") << read_whole_file(dir / "status.json");
    EXPECT_NE(read_whole_file(dir / "server_command.sh").find(" sim serve "), std::string::npos);
    EXPECT_NE(read_whole_file(dir / "server.log").find("listening on http://127.0.0.1:"), std::string::npos);
  }

  // The store: the run, and each job's result once, under the run id, as the summary shows it.
  EXPECT_EQ(stored_stems(sweep.db, run_id), keys(jobs));
  auto store = open_db(sweep.db);
  ASSERT_TRUE(store);
  auto runs = store->runs();
  ASSERT_TRUE(runs && runs->size() == 1u);
  EXPECT_EQ(runs->front().run_id, run_id);
  EXPECT_EQ(runs->front().source, "ixbench run");
  auto latest = store->latest({});
  ASSERT_TRUE(latest) << latest.error().message();
  ASSERT_EQ(latest->size(), 3u);
  std::multiset<std::pair<int64_t, int64_t>> tp_conc;
  for (const auto& record : *latest) {
    EXPECT_EQ(record.run_id, run_id);
    ASSERT_TRUE(jobs.count(record.result_stem)) << record.result_stem;
    tp_conc.insert({record.tp, record.conc});
    EXPECT_EQ(record.num_gpus, record.tp);
    EXPECT_EQ(record.hw, "h200");
    EXPECT_EQ(record.isl, 256);
    EXPECT_EQ(record.osl, 32);
    ASSERT_TRUE(record.tput_per_gpu.has_value());
    EXPECT_GT(*record.tput_per_gpu, 0);
    EXPECT_EQ(jobs[record.result_stem].tput_per_gpu, fmt::format("{:.1f}", *record.tput_per_gpu));
    EXPECT_FALSE(record.raw_json.empty());
    EXPECT_FALSE(record.row_json.empty());
    std::set<std::string> artifacts;
    for (const auto& artifact : record.artifacts) artifacts.insert(artifact.kind);
    for (const char* kind : {"server_log", "command", "status", "steps"}) EXPECT_TRUE(artifacts.count(kind)) << kind;
  }
  EXPECT_EQ(tp_conc, (std::multiset<std::pair<int64_t, int64_t>>{{1, 1}, {1, 2}, {2, 1}}));
}

// --- 2. failures: each fails alone, with its reason -----------------------------------------------

// The summary entry of the job whose framework is `framework`.
const SummaryJob& job_of(const std::map<std::string, SummaryJob>& jobs, const std::string& framework) {
  for (const auto& [id, job] : jobs) {
    if (id.find("_fp4_" + framework + "_") != std::string::npos) return job;
  }
  static const SummaryJob kNone;
  ADD_FAILURE() << "no job of framework " << framework;
  return kNone;
}

// The failed job's summary entry, checking that it and its status.json say it failed at `step`.
const SummaryJob& failed_at(const std::map<std::string, SummaryJob>& jobs, const fs::path& run_dir,
                            const std::string& framework, const std::string& step) {
  const SummaryJob& entry = job_of(jobs, framework);
  EXPECT_EQ(entry.outcome, "failed") << framework;
  const bj::object status = read_object(run_dir / entry.id / "status.json");
  EXPECT_EQ(text_field(status, "state"), "failed") << framework;
  EXPECT_EQ(text_field(status, "failed_step"), step) << bj::serialize(status);
  EXPECT_TRUE(entry.details.starts_with(fmt::format("{:<12} {}: ", "", step))) << entry.details;
  return entry;
}

// One sweep (one test: CTest runs each test in its own process) of a good job and four failing
// ones, each failing its own way:
//   neverready: `sim serve --fault-health-delay-ms` far past `--health-timeout 3`;
//   dies:       a shell recipe killing its server once the benchmark is under way;
//   faulty:     `sim serve --fault-error-rate 0.3`, over bench serve's 5 % failure threshold;
//   lowacc:     an eval row against `sim serve --gsm8k-accuracy 0.1`, under the 0.5 threshold.
// The matrix comes from `ixbench sweep full-sweep` (--jobs-from); the eval row is marked there,
// with an ISL leaving room for GSM8K's 5-shot prompts.
TEST(Run, FailingJobsFailAloneWithTheirReasons) {
  const std::string gsm8k = testing::shared_path("data/gsm8k");
  if (gsm8k.empty()) GTEST_SKIP() << testing::shared_missing_message("data/gsm8k");
  Sweep sweep =
      make_sweep("failures", config_entry("good", "sim", "1") + config_entry("neverready", "neverready", "1") +
                                 config_entry("dies", "dies", "1", 1, 256) + config_entry("faulty", "faulty", "1") +
                                 config_entry("lowacc", "lowacc", "2"));
  sweep.recipes = make_recipes(
      sweep.dir / "recipes",
      {{"neverready.yaml", sim_recipe_variant("neverready", "--fault-health-delay-ms 600000")},
       {"faulty.yaml", sim_recipe_variant("faulty", "--fault-error-rate 0.3 --fault-seed 7")},
       {"lowacc.yaml", sim_recipe_variant("lowacc", "--gsm8k-accuracy 0.1")},
       // Kills its server two seconds into the benchmark (256 output tokens a request: it runs ~15 s).
       {"dies.sh", sim_script("",
                              "until [ -e \"$RESULT_DIR/bench_conc$CONC.log\" ]; do sleep 0.1; done\nsleep 2\n"
                              "echo \"killing the server (pid $server) on purpose\"\nkill -9 \"$server\"\nexit 3\n")}});
  auto plan = run_ixbench(
      {"sweep", "full-sweep", "--config-files", sweep.configs.string(), "--runner-config", sweep.runners.string()});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  bj::array rows = bj::parse(plan.out).as_array();
  ASSERT_EQ(rows.size(), 5u) << plan.out;
  for (auto& row : rows) {
    auto& object = row.as_object();
    if (object.at("framework").as_string() != "lowacc") continue;
    object["run-eval"] = true;
    object["isl"] = 2048;
    object["max-model-len"] = 2048 + 32 + 256;
  }
  const fs::path matrix = sweep.dir / "matrix.json";
  write_file(matrix, bj::serialize(rows));
  const fs::path thresholds = sweep.dir / "thresholds.yaml";
  write_file(thresholds, "default:\n  gsm8k: 0.5\n");
  auto run = run_ixbench({"run",
                          "--jobs-from",
                          matrix.string(),
                          "--runner-config",
                          sweep.runners.string(),
                          "--recipes",
                          sweep.recipes.string(),
                          "--out",
                          sweep.out.string(),
                          "--db",
                          sweep.db,
                          "--health-timeout",
                          "3",
                          "--gsm8k-dir",
                          gsm8k,
                          "--eval-limit",
                          "10",
                          "--thresholds",
                          thresholds.string(),
                          "--no-report"},
                         "", 300);
  auto jobs = summary_jobs(run.out);
  ASSERT_EQ(jobs.size(), 5u) << run.out << run.err;
  const std::string run_id = printed_run_id(run.out);
  const fs::path run_dir = sweep.out / run_id;

  // The run fails; the good job's result is stored and its files are there.
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("5 jobs: 1 succeeded, 0 already stored, 4 failed, 0 interrupted, 0 not run"),
            std::string::npos)
      << run.out;
  const SummaryJob& good = job_of(jobs, "sim");
  EXPECT_EQ(good.outcome, "succeeded");
  EXPECT_EQ(good.details, "");
  EXPECT_EQ(stored_stems(sweep.db, run_id), std::vector<std::string>{good.id});
  EXPECT_EQ(job_state(run_dir / good.id), "succeeded");
  EXPECT_TRUE(fs::is_regular_file(run_dir / good.id / ("agg_" + good.id + ".json")));
  EXPECT_TRUE(fs::is_regular_file(run_dir / good.id / (good.id + ".json")));
  // No failed job left a server running.
  EXPECT_EQ(joined(leftovers(run_dir)), "");

  {
    SCOPED_TRACE("a server that never answers /health");
    const SummaryJob& entry = failed_at(jobs, run_dir, "neverready", "server");
    std::smatch url;
    ASSERT_TRUE(std::regex_search(
        entry.details, url, std::regex(R"(the server did not answer http://(127\.0\.0\.1:\d+)/health within 3 s)")))
        << entry.details;
    // The log's last lines are quoted: where the simulator listened, then that it was stopped.
    EXPECT_NE(entry.details.find("listening on http://" + url[1].str()), std::string::npos) << entry.details;
    EXPECT_NE(entry.details.find("signal 15 received"), std::string::npos) << entry.details;
    EXPECT_NE(read_whole_file(run_dir / entry.id / "server_command.sh").find("--fault-health-delay-ms 600000"),
              std::string::npos);
  }
  {
    SCOPED_TRACE("a server that dies mid-run");
    const SummaryJob& entry = failed_at(jobs, run_dir, "dies", "bench conc=1");
    EXPECT_NE(entry.details.find("the server died (exit 3); the last lines of " +
                                 (run_dir / entry.id / "server.log").string()),
              std::string::npos)
        << entry.details;
    EXPECT_NE(entry.details.find("killing the server (pid "), std::string::npos) << entry.details;
  }
  {
    SCOPED_TRACE("a benchmark over its failure threshold");
    const SummaryJob& entry = failed_at(jobs, run_dir, "faulty", "bench conc=1");
    EXPECT_NE(entry.details.find("exit 1; the last lines of bench_conc1.log:"), std::string::npos) << entry.details;
    std::smatch count;
    ASSERT_TRUE(std::regex_search(entry.details, count, std::regex(R"((\d+) of 10 requests failed \(more than 5%\))")))
        << entry.details;
    EXPECT_GT(std::stoi(count[1].str()), 0);
    EXPECT_NE(entry.details.find("injected fault: HTTP 500"), std::string::npos) << entry.details;
  }
  {
    SCOPED_TRACE("an eval under its threshold");
    const SummaryJob& entry = failed_at(jobs, run_dir, "lowacc", "eval check conc=2");
    EXPECT_NE(entry.details.find("exit 1; the last lines of eval_check_conc2.log:"), std::string::npos)
        << entry.details;
    EXPECT_TRUE(std::regex_search(entry.details,
                                  std::regex(R"(FAIL: \[conc=2\] gsm8k exact_match,strict-match = 0\.\d+ \(< 0\.5)")))
        << entry.details;
    // The benchmark and the eval itself ran.
    const bj::object status = read_object(run_dir / entry.id / "status.json");
    std::map<std::string, bool> steps;
    for (const auto& step : status.at("steps").as_array()) {
      steps[text_field(step.as_object(), "name")] = step.as_object().at("ok").as_bool();
    }
    EXPECT_TRUE(steps["bench conc=2"]) << bj::serialize(status);
    EXPECT_TRUE(steps["eval conc=2"]) << bj::serialize(status);
    EXPECT_TRUE(fs::is_regular_file(run_dir / entry.id / "eval" / "results_conc2.json"));
  }
}

// Tests run as root in CI, so permissions stop no write: a regular file takes a folder's place.
TEST(Run, AnOutFolderThatIsAFileIsAClearError) {
  Sweep sweep = make_sweep("out_is_file", config_entry("tiny", "sim", "1"));
  write_file(sweep.out, "not a folder\n");
  auto run = run_ixbench(sweep.run_args({"--no-report"}), "", 60);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE(run.err.find("ixbench: error: cannot create the run folder " + sweep.out.string() + "/run-"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("Not a directory"), std::string::npos) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(read_whole_file(sweep.out), "not a folder\n");
}

TEST(Run, AJobFolderTakenByAFileFailsThatJobAlone) {
  // The first job's recipe puts a regular file where every job folder not yet run should be.
  Sweep sweep = make_sweep("job_dir_is_file", config_entry("taker", "taker", "1") + config_entry("tiny", "sim", "1"));
  sweep.recipes =
      make_recipes(sweep.dir / "recipes", {{"taker.sh", sim_script("for d in \"$(dirname \"$RESULT_DIR\")\"/*/; do\n"
                                                                   "  d=${d%/}\n"
                                                                   "  [ \"$d\" = \"$RESULT_DIR\" ] && continue\n"
                                                                   "  [ -e \"$d/status.json\" ] && continue\n"
                                                                   "  rm -rf \"$d\" && echo taken > \"$d\"\n"
                                                                   "done\n")}});
  auto run = run_ixbench(sweep.run_args({"--no-report"}), "", 120);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  auto jobs = summary_jobs(run.out);
  ASSERT_EQ(jobs.size(), 2u) << run.out;
  const std::string run_id = printed_run_id(run.out);
  std::string taker, other;
  for (const auto& [id, job] : jobs) (id.find("_taker_") != std::string::npos ? taker : other) = id;
  ASSERT_FALSE(taker.empty() || other.empty()) << run.out;
  EXPECT_EQ(jobs[taker].outcome, "succeeded") << run.out;
  EXPECT_EQ(jobs[other].outcome, "failed") << run.out;
  EXPECT_NE(jobs[other].details.find("job: the job folder " + (sweep.out / run_id / other).string() +
                                     " is gone or not a folder"),
            std::string::npos)
      << jobs[other].details;
  EXPECT_EQ(stored_stems(sweep.db, run_id), std::vector<std::string>{taker});
}

// --- 3, 4. kill -9 and Ctrl-C, then --resume --------------------------------------------------------

TEST(Run, KillNineMidSweepLeavesNoServerAndResumeCompletes) {
  Sweep sweep = make_sweep("kill9", config_entry("tiny", "sim", "1, 2, 4"));
  auto background = start_ixbench(sweep.run_args({"--no-report"}), sweep.dir);
  ASSERT_GT(background.pid, 0);
  fs::path run_dir;
  std::string benchmarking;
  // The first job stored, the next one benchmarking against its server.
  bool ready = eventually(
      [&] {
        if (run_dir.empty()) run_dir = only_run_dir(sweep.out);
        if (run_dir.empty() || stored_stems(sweep.db, run_dir.filename().string()).size() != 1) return false;
        benchmarking = job_benchmarking(run_dir);
        return !benchmarking.empty();
      },
      90);
  ASSERT_TRUE(ready) << read_whole_file(background.err);
  const std::string run_id = run_dir.filename().string();
  // What must go: the job process and the server it benchmarks.
  const std::string running = joined(leftovers(run_dir));
  EXPECT_NE(running.find(" run job --spec "), std::string::npos) << running;
  EXPECT_NE(running.find(" sim serve "), std::string::npos) << running;
  ASSERT_EQ(kill(background.pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(background.pid, 10), 128 + SIGKILL);

  // The job process and its server go (SIGTERM through PR_SET_PDEATHSIG): nothing of the run stays.
  std::vector<std::string> left;
  EXPECT_TRUE(eventually([&] { return (left = leftovers(run_dir)).empty(); }, 20)) << joined(left);
  EXPECT_EQ(job_state(run_dir / benchmarking), "interrupted") << read_whole_file(run_dir / benchmarking / "steps.log");
  const std::vector<std::string> stored_before = stored_stems(sweep.db, run_id);
  ASSERT_EQ(stored_before.size(), 1u);

  auto resumed = run_ixbench(sweep.run_args({"--no-report", "--resume", run_id}), "", 240);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  auto jobs = summary_jobs(resumed.out);
  ASSERT_EQ(jobs.size(), 3u) << resumed.out;
  EXPECT_EQ(ids_with(jobs, "stored"), stored_before) << resumed.out;
  EXPECT_EQ(ids_with(jobs, "succeeded").size(), 2u) << resumed.out;
  EXPECT_EQ(jobs[benchmarking].outcome, "succeeded");
  EXPECT_EQ(printed_run_id(resumed.out), run_id);
  EXPECT_NE(resumed.out.find("3 jobs: 2 succeeded, 1 already stored, 0 failed"), std::string::npos) << resumed.out;
  // Every job once in the store; the interrupted attempt's folder kept beside the new one.
  EXPECT_EQ(stored_stems(sweep.db, run_id), keys(jobs));
  auto store = open_db(sweep.db);
  ASSERT_TRUE(store);
  auto latest = store->latest({});
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->size(), 3u);
  EXPECT_EQ(job_state(run_dir / (benchmarking + ".attempt-1")), "interrupted");
  EXPECT_EQ(job_state(run_dir / benchmarking), "succeeded");
}

TEST(Run, CtrlCStopsTheCurrentJobAndResumeCompletes) {
  Sweep sweep = make_sweep("ctrl_c", config_entry("tiny", "sim", "1, 2"));
  auto background = start_ixbench(sweep.run_args({"--no-report"}), sweep.dir);
  ASSERT_GT(background.pid, 0);
  fs::path run_dir;
  std::string benchmarking;
  bool ready = eventually(
      [&] {
        if (run_dir.empty()) run_dir = only_run_dir(sweep.out);
        if (run_dir.empty() || stored_stems(sweep.db, run_dir.filename().string()).size() != 1) return false;
        benchmarking = job_benchmarking(run_dir);
        return !benchmarking.empty();
      },
      90);
  ASSERT_TRUE(ready) << read_whole_file(background.err);
  EXPECT_NE(joined(leftovers(run_dir)).find(" sim serve "), std::string::npos);
  ASSERT_EQ(kill(background.pid, SIGINT), 0);
  EXPECT_EQ(wait_exit(background.pid, 60), 130) << read_whole_file(background.err);
  EXPECT_EQ(joined(leftovers(run_dir)), "");

  const std::string out = read_whole_file(background.out);
  auto jobs = summary_jobs(out);
  ASSERT_EQ(jobs.size(), 2u) << out;
  EXPECT_EQ(jobs[benchmarking].outcome, "interrupted") << out;
  const std::vector<std::string> finished = ids_with(jobs, "succeeded");
  ASSERT_EQ(finished.size(), 1u) << out;
  const std::string run_id = run_dir.filename().string();
  EXPECT_EQ(printed_run_id(out), run_id);
  EXPECT_EQ(stored_stems(sweep.db, run_id), finished);
  EXPECT_EQ(job_state(run_dir / benchmarking), "interrupted");

  auto resumed = run_ixbench(sweep.run_args({"--no-report", "--resume", run_id}), "", 240);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  auto after = summary_jobs(resumed.out);
  EXPECT_EQ(outcomes(after),
            (std::map<std::string, std::string>{{finished.front(), "stored"}, {benchmarking, "succeeded"}}))
      << resumed.out;
  EXPECT_EQ(stored_stems(sweep.db, run_id), keys(after));
}

// --- 5. inputs: a matrix, a dry run, refused inputs -----------------------------------------------

TEST(Run, DryRunPrintsEachJobAndItsServerAndRunsNothing) {
  Sweep sweep = make_sweep("dry_run", config_entry("tiny", "sim", "1, 2"));
  auto run = run_ixbench(sweep.run_args({"--dry-run"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> ids;
  std::istringstream lines(run.out);
  std::string previous;
  for (std::string line; std::getline(lines, line); previous = line) {
    if (line.starts_with("  server: ")) {
      EXPECT_NE(line.find(testing::ixbench_binary() + " sim serve --model openai/gpt-oss-120b"), std::string::npos)
          << line;
      EXPECT_NE(line.find("--tp 1"), std::string::npos) << line;
    }
    if (line.starts_with("gptoss_")) ids.push_back(line);
  }
  ASSERT_EQ(ids.size(), 2u) << run.out;
  EXPECT_NE(ids[0].find("_conc1_"), std::string::npos);
  EXPECT_NE(ids[1].find("_conc2_"), std::string::npos);
  EXPECT_NE(run.out.find("\n2 jobs\n"), std::string::npos) << run.out;
  EXPECT_FALSE(fs::exists(sweep.db)) << "a dry run wrote the store";
  EXPECT_FALSE(fs::exists(sweep.out)) << "a dry run made a run folder";
}

TEST(Run, JobsFromAMatrixRunsTheSameJobs) {
  Sweep sweep = make_sweep("jobs_from", config_entry("tiny", "sim", "1, 2"));
  auto plan = run_ixbench(
      {"sweep", "full-sweep", "--config-files", sweep.configs.string(), "--runner-config", sweep.runners.string()});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const fs::path matrix = sweep.dir / "matrix.json";
  write_file(matrix, plan.out);
  auto dry = run_ixbench(sweep.run_args({"--dry-run"}));
  ASSERT_EQ(dry.exit_code, 0) << dry.err;

  auto run = run_ixbench({"run", "--jobs-from", matrix.string(), "--runner-config", sweep.runners.string(), "--out",
                          sweep.out.string(), "--db", sweep.db, "--no-report"},
                         "", 240);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto jobs = summary_jobs(run.out);
  ASSERT_EQ(jobs.size(), 2u) << run.out;
  for (const auto& id : keys(jobs)) EXPECT_NE(dry.out.find(id + "\n"), std::string::npos) << id << "\n" << dry.out;
  EXPECT_EQ(ids_with(jobs, "succeeded").size(), 2u);
  const std::string run_id = printed_run_id(run.out);
  EXPECT_EQ(stored_stems(sweep.db, run_id), keys(jobs));
  // The matrix is the run's input.
  const bj::object manifest = read_object(sweep.out / run_id / "run_manifest.json");
  EXPECT_NE(bj::serialize(manifest).find(matrix.string()), std::string::npos) << bj::serialize(manifest);
}

TEST(Run, BadInputsAreRefused) {
  Sweep sweep = make_sweep("bad_inputs", config_entry("tiny", "sim", "1"));

  auto unknown = run_ixbench(sweep.run_args({"--resume", "run-19990101-000000"}));
  EXPECT_EQ(unknown.exit_code, 1) << unknown.err;
  EXPECT_NE(unknown.err.find("--resume run-19990101-000000: "), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("with the same --out"), std::string::npos) << unknown.err;
  EXPECT_FALSE(fs::exists(sweep.out / "run-19990101-000000"));

  // A run folder already there (run ids are the start time to the second): refused, never reused.
  const auto now = std::chrono::system_clock::now();
  for (int second = -2; second <= 30; ++second) {
    std::time_t t = std::chrono::system_clock::to_time_t(now + std::chrono::seconds(second));
    std::tm utc{};
    gmtime_r(&t, &utc);
    char name[64];
    std::strftime(name, sizeof name, "run-%Y%m%d-%H%M%S", &utc);
    fs::create_directories(sweep.out / name);
  }
  auto existing = run_ixbench(sweep.run_args({"--no-report"}));
  EXPECT_EQ(existing.exit_code, 1) << existing.err;
  EXPECT_TRUE(std::regex_search(
      existing.err, std::regex(R"(/run-\d{8}-\d{6} already exists: resume it with --resume run-\d{8}-\d{6})")))
      << existing.err;
  fs::remove_all(sweep.out);

  const fs::path malformed = sweep.dir / "malformed.json";
  write_file(malformed, "[\n  {\"model\": \"openai/gpt-oss-120b\",\n   \"conc\": 1,,\n  }\n]\n");
  auto bad_matrix =
      run_ixbench({"run", "--jobs-from", malformed.string(), "--out", sweep.out.string(), "--db", sweep.db});
  EXPECT_EQ(bad_matrix.exit_code, 1) << bad_matrix.err;
  EXPECT_TRUE(std::regex_search(bad_matrix.err, std::regex(malformed.string() + R"(:3:\d+)"))) << bad_matrix.err;

  auto conc = run_ixbench(sweep.run_args({"--conc", "1"}));
  EXPECT_EQ(conc.exit_code, 2) << conc.err;
  EXPECT_EQ(conc.err, "ixbench: error: --conc needs --config-keys (as `sweep test-config`)\n");

  auto parallel = run_ixbench(sweep.run_args({"--parallel", "0"}));
  EXPECT_EQ(parallel.exit_code, 2) << parallel.err;
  EXPECT_EQ(parallel.err, "ixbench: error: --parallel must be at least 1, got 0\n");

  // None of them ran a job or stored a result.
  EXPECT_FALSE(fs::exists(sweep.out));
  EXPECT_EQ(stored_stems(sweep.db, "run-19990101-000000"), std::vector<std::string>{});
}

// --- 6. the local executor: parallel jobs and GPU shares ------------------------------------------

// A sweep of two tp-1 jobs whose recipe records the GPUs each server was given.
Sweep gpu_sweep(const std::string& name) {
  Sweep sweep = make_sweep(name, config_entry("tiny", "gpus", "1, 2"));
  sweep.recipes = make_recipes(
      sweep.dir / "recipes",
      {{"gpus.sh", sim_script("echo \"${CUDA_VISIBLE_DEVICES-unset}\" > \"$RESULT_DIR/cuda_visible_devices.txt\"\n")}});
  return sweep;
}

struct JobTimes {
  std::string id, started, finished;           // ISO-8601 UTC to the second: they order as text
  size_t started_line = 0, finished_line = 0;  // where the progress log says so
};

// The two jobs' times from status.json, and the order of their start and end in the progress log.
std::vector<JobTimes> job_times(const fs::path& run_dir, const std::map<std::string, SummaryJob>& jobs,
                                const std::string& progress) {
  std::vector<JobTimes> out;
  std::vector<std::string> lines;
  std::istringstream in(progress);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (const auto& [id, job] : jobs) {
    const bj::object status = read_object(run_dir / id / "status.json");
    JobTimes times{id, text_field(status, "started_at"), text_field(status, "finished_at")};
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].ends_with("started " + id)) times.started_line = i + 1;
      if (lines[i].ends_with(id + " succeeded")) times.finished_line = i + 1;
    }
    out.push_back(times);
  }
  std::sort(out.begin(), out.end(),
            [](const JobTimes& a, const JobTimes& b) { return a.started_line < b.started_line; });
  return out;
}

TEST(Run, ParallelTwoRunsTwoJobsAtOnce) {
  Sweep sweep = gpu_sweep("parallel");
  auto run = run_ixbench(sweep.run_args({"--no-report", "--parallel", "2"}), "", 240);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.err.find("on local (2 at a time)"), std::string::npos) << run.err;
  auto jobs = summary_jobs(run.out);
  ASSERT_EQ(ids_with(jobs, "succeeded").size(), 2u) << run.out;
  auto times = job_times(sweep.out / printed_run_id(run.out), jobs, run.err);
  ASSERT_EQ(times.size(), 2u);
  // Both started before either finished.
  EXPECT_GT(times[0].started_line, 0u) << run.err;
  EXPECT_LT(times[1].started_line, std::min(times[0].finished_line, times[1].finished_line)) << run.err;
  EXPECT_LT(times[1].started, times[0].finished);
  EXPECT_LT(times[0].started, times[1].finished);
}

TEST(Run, ParallelTwoWithOneGpuRunsTpOneJobsOneAfterTheOther) {
  Sweep sweep = gpu_sweep("gpus");
  auto run = run_ixbench(sweep.run_args({"--no-report", "--parallel", "2", "--gpus", "1"}), "", 240);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.err.find("on local (2 at a time, 1 GPUs)"), std::string::npos) << run.err;
  auto jobs = summary_jobs(run.out);
  ASSERT_EQ(ids_with(jobs, "succeeded").size(), 2u) << run.out;
  const fs::path run_dir = sweep.out / printed_run_id(run.out);
  auto times = job_times(run_dir, jobs, run.err);
  ASSERT_EQ(times.size(), 2u);
  // The second started after the first finished, and each server saw the one GPU.
  EXPECT_GT(times[1].started_line, times[0].finished_line) << run.err;
  EXPECT_GE(times[1].started, times[0].finished);
  for (const auto& [id, job] : jobs) EXPECT_EQ(read_whole_file(run_dir / id / "cuda_visible_devices.txt"), "0\n") << id;
}

}  // namespace
}  // namespace ix
