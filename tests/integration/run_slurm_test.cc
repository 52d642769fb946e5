// `ixbench run --executor slurm` on a real one-node Slurm cluster (scripts/start-slurm.sh, which
// scripts/test.sh runs as root): a small sweep on the simulator goes through sbatch arrays and
// srun, its results land in the store, a resumed run finds them there, and an interrupted run
// cancels its jobs. Skips, saying how to start a cluster, when IXBENCH_TEST_SLURM is not set.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kRunners = R"(labels:
  h200:
    - h200-slurm_00
hardware:
  h200:
    available-cpu-dram-mib: 1_998_848
    gpus-per-node: 8
)";

// Two rows (conc 1 and 2) of a small fixed-length load; `osl` sets how long each runs.
std::string master_config(int osl, const std::string& concs) {
  return "gptoss-fp4-h200-slurm:\n  image: ixbench-sim\n  model: openai/gpt-oss-120b\n  model-prefix: gptoss\n"
         "  runner: h200\n  precision: fp4\n  framework: sim\n  multinode: false\n  scenarios:\n"
         "    fixed-seq-len:\n    - isl: 256\n      osl: " +
         std::to_string(osl) + "\n      search-space:\n      - { tp: 1, conc-list: [" + concs + "] }\n";
}

class RunSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* flag = std::getenv("IXBENCH_TEST_SLURM");
    if (flag == nullptr || *flag == '\0') {
      GTEST_SKIP() << "Slurm is not running for the tests (IXBENCH_TEST_SLURM is not set): start a one-node "
                      "cluster with `eval \"$(scripts/start-slurm.sh)\"` as root (scripts/test.sh does)";
    }
    dir_ = scratch_dir("run_slurm_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::ofstream(dir_ / "runners.yaml") << kRunners;
  }

  std::vector<std::string> run_args(const std::string& config) {
    return {"run",
            "--config-files",
            config,
            "--runner-config",
            (dir_ / "runners.yaml").string(),
            "--executor",
            "slurm",
            "--out",
            (dir_ / "runs").string(),
            "--db",
            (dir_ / "results.db").string(),
            "--no-report"};
  }

  fs::path dir_;
};

std::string run_id_of(const std::string& summary) {
  std::smatch match;
  std::regex pattern(R"(run (run-[0-9-]+) in )");
  return std::regex_search(summary, match, pattern) ? match[1].str() : std::string();
}

TEST_F(RunSlurm, ASweepRunsThroughSbatchArraysAndIsStored) {
  const fs::path config = dir_ / "master.yaml";
  std::ofstream(config) << master_config(16, "1, 2");
  auto result = run_ixbench(run_args(config.string()), "", 300);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("2 jobs: 2 succeeded"), std::string::npos) << result.out;
  const std::string run_id = run_id_of(result.out);
  ASSERT_FALSE(run_id.empty()) << result.out;
  const fs::path run_dir = dir_ / "runs" / run_id;
  // One array for the two single-GPU jobs: its script, its list of job folders, one output per task.
  EXPECT_TRUE(fs::exists(run_dir / "slurm" / "gpus1.sh"));
  std::string list = read_whole_file(run_dir / "slurm" / "gpus1.list");
  EXPECT_EQ(std::count(list.begin(), list.end(), '\n'), 2) << list;
  for (const auto& entry : fs::directory_iterator(run_dir)) {
    if (!entry.is_directory() || entry.path().filename() == "slurm") continue;
    std::string status = read_whole_file(entry.path() / "status.json");
    EXPECT_NE(status.find("\"state\": \"succeeded\""), std::string::npos) << entry.path() << status;
    bool has_agg = false;
    for (const auto& file : fs::directory_iterator(entry.path()))
      has_agg |= file.path().filename().string().starts_with("agg_");
    EXPECT_TRUE(has_agg) << entry.path();
  }
  // The store holds both: resuming the run submits nothing.
  auto args = run_args(config.string());
  args.insert(args.end(), {"--resume", run_id});
  auto resumed = run_ixbench(args, "", 120);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("2 already stored"), std::string::npos) << resumed.out;
}

TEST_F(RunSlurm, AnInterruptedRunCancelsItsJobs) {
  const fs::path config = dir_ / "master.yaml";
  std::ofstream(config) << master_config(4096, "1");  // one job that runs for minutes
  std::vector<std::string> argv = {ixbench_binary()};
  auto args = run_args(config.string());
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = spawn_quiet(argv);
  // Wait until the job's benchmark runs on the cluster.
  bool running = false;
  for (auto until = std::chrono::steady_clock::now() + 120s; !running && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(500ms);
    if (!fs::exists(dir_ / "runs")) continue;
    for (const auto& entry : fs::recursive_directory_iterator(dir_ / "runs")) {
      if (entry.path().filename() == "steps.log" &&
          read_whole_file(entry.path()).find("bench conc=1 running") != std::string::npos)
        running = true;
    }
  }
  ASSERT_TRUE(running) << "the job never started its benchmark";
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  // scancel ended the job: squeue stops listing it once Slurm has cleaned it up.
  std::string queue;
  for (auto until = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < until;) {
    queue = run_process({find_on_path("squeue"), "-h", "-o", "%j"}, "", 30).out;
    if (queue.find("ixbench-gpus1") == std::string::npos) break;
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_EQ(queue.find("ixbench-gpus1"), std::string::npos) << queue;
}

}  // namespace
}  // namespace ix::testing
