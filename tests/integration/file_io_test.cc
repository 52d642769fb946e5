// Where ixbench's files go and what it reads, through the real binary: results to symlinks,
// FIFOs, standard output, full devices and full filesystems; inputs that are devices or FIFOs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/json_io.h"
#include "support/server_process.h"
#include "support/subprocess.h"
#include "support/temp_files.h"

namespace ix {
namespace {

namespace fs = std::filesystem;
using ix::testing::ProcessResult;
using ix::testing::read_whole_file;
using ix::testing::run_ixbench;
using ix::testing::scratch_dir;
using ix::testing::ServerProcess;

int64_t completed(const std::string& json_text) {
  auto value = json::parse(json_text);
  if (!value || !value->is_object() || !value->as_object().contains("completed")) return -1;
  return value->as_object().at("completed").as_int64();
}

class ResultFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = ServerProcess::start({"--model", "deepseek-r1", "--tokenizer", "deepseek_v3", "--no-delay"});
    ASSERT_TRUE(started) << started.error().to_string();
    server_ = std::move(*started);
  }
  static void TearDownTestSuite() { server_.reset(); }

  // bench serve, 3 tiny requests, with `args` (where the result goes).
  static ProcessResult bench(std::vector<std::string> args, int prompts = 3) {
    std::vector<std::string> all = {"bench",
                                    "serve",
                                    "--base-url",
                                    server_->base_url(),
                                    "--model",
                                    "deepseek-r1",
                                    "--tokenizer",
                                    "deepseek_v3",
                                    "--no-progress",
                                    "--num-prompts",
                                    std::to_string(prompts),
                                    "--random-input-len",
                                    "16",
                                    "--random-output-len",
                                    "4",
                                    "--seed",
                                    "1",
                                    "--client-lag-threshold-ms",
                                    "1000",
                                    "--save-result"};
    all.insert(all.end(), args.begin(), args.end());
    return run_ixbench(all, "", 120.0);
  }

  static inline std::unique_ptr<ServerProcess> server_;
};

TEST_F(ResultFiles, ASymlinkKeepsItsLinkAndItsTargetGetsTheResult) {
  // The link was replaced by a regular file and its target never updated.
  const auto dir = scratch_dir("symlink");
  fs::create_directories(dir / "real");
  std::ofstream(dir / "real" / "t.json") << "old";
  fs::create_symlink("real/t.json", dir / "link.json");
  auto r = bench({"--result-filename", (dir / "link.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(completed(read_whole_file(dir / "real" / "t.json")), 3);
  // --append-result through the link appends to the target (it read through the link and then
  // replaced it).
  auto appended = bench({"--result-filename", (dir / "link.json").string(), "--append-result"});
  ASSERT_EQ(appended.exit_code, 0) << appended.err;
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  std::istringstream lines(read_whole_file(dir / "real" / "t.json"));
  std::vector<std::string> docs;
  for (std::string line; std::getline(lines, line);) docs.push_back(line);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(completed(docs[0]), 3);
  EXPECT_EQ(completed(docs[1]), 3);
  EXPECT_FALSE(fs::exists(dir / "real" / "t.json.tmp"));
  fs::remove_all(dir);
}

TEST_F(ResultFiles, AFifoIsWrittenToItsReader) {
  // Its reader used to get 0 bytes: the FIFO was replaced by a regular file.
  const auto dir = scratch_dir("fifo");
  const auto fifo = dir / "result";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader end is open before the run and read after it (the result fits the pipe buffer):
  // a binary that replaces the FIFO leaves it with nothing instead of leaving the test hanging.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  auto r = bench({"--result-filename", fifo.string()});
  std::string received;
  char chunk[4096];
  for (ssize_t n; (n = ::read(reader, chunk, sizeof(chunk))) > 0;) received.append(chunk, static_cast<size_t>(n));
  ::close(reader);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(completed(received), 3) << received.substr(0, 200);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  fs::remove_all(dir);
}

TEST_F(ResultFiles, StandardOutputGetsTheJsonAloneAndTheSummaryGoesToStderr) {
  // /dev/stdout used to become a regular file named /dev/stdout: nothing printed, exit 0.
  for (const std::string name : {"-", "/dev/stdout"}) {
    auto r = bench({"--result-filename", name});
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(completed(r.out), 3) << name << ": " << r.out.substr(0, 300);
    EXPECT_NE(r.err.find("Serving Benchmark Result"), std::string::npos) << name << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists("-"));
  EXPECT_TRUE(fs::is_symlink("/dev/stdout")) << "the run replaced /dev/stdout";
  // The per-request JSONL goes beside a result file; with stdout there is none: refused before the run.
  auto detailed = bench({"--result-filename", "-", "--save-detailed"});
  EXPECT_EQ(detailed.exit_code, 1);
  EXPECT_NE(detailed.err.find("--save-detailed writes <result>.requests.jsonl"), std::string::npos) << detailed.err;
  EXPECT_EQ(detailed.err.find("Serving Benchmark Result"), std::string::npos) << detailed.err;
}

TEST_F(ResultFiles, AFullDeviceFailsWithTheReasonAndTheResultIsKeptInTheFallbackFile) {
  auto r = bench({"--result-filename", "/dev/full"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  const std::string marker = "saved to ";
  const size_t at = r.err.find(marker);
  ASSERT_NE(at, std::string::npos) << r.err;
  const fs::path saved = r.err.substr(at + marker.size(), r.err.find(" instead", at) - at - marker.size());
  EXPECT_EQ(saved.parent_path(), fs::temp_directory_path());
  EXPECT_EQ(completed(read_whole_file(saved)), 3) << saved;
  EXPECT_TRUE(fs::is_character_file("/dev/full")) << "the run replaced /dev/full";
  fs::remove(saved);
}

// A 64 KiB tmpfs (root only); the test skips when it cannot mount one.
class SmallFilesystem {
 public:
  explicit SmallFilesystem(const fs::path& at) : at_(at) {
    fs::create_directories(at);
    mounted_ =
        ix::testing::run_process({"/bin/mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", at.string()}).exit_code == 0;
  }
  ~SmallFilesystem() {
    if (mounted_) ix::testing::run_process({"/bin/umount", at_.string()});
  }
  bool mounted() const { return mounted_; }
  // Fills all but `free_kib` KiB (tmpfs counts whole 4 KiB pages).
  void fill_leaving(int free_kib) const { std::ofstream(at_ / "filler") << std::string((64 - free_kib) * 1024, 'x'); }

 private:
  fs::path at_;
  bool mounted_ = false;
};

TEST_F(ResultFiles, AFullFilesystemNamesTheFileThatFailedAndLeavesNoTmp) {
  const auto dir = scratch_dir("tmpfs");
  SmallFilesystem small(dir / "mnt");
  if (!small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  // Room for the probe and the result (~4 KiB), not for 200 requests' JSONL (~60 KiB).
  small.fill_leaving(20);
  const auto result = dir / "mnt" / "r.json";
  auto r = bench({"--save-detailed", "--result-filename", result.string()}, 200);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("wrote the result to " + result.string() + ", but cannot write the per-request records to " +
                       (dir / "mnt" / "r.requests.jsonl").string()),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_EQ(completed(read_whole_file(result)), 200);
  for (const auto& entry : fs::directory_iterator(dir / "mnt"))
    EXPECT_NE(entry.path().extension(), ".tmp") << entry.path();
  const std::string marker = "saved to ";
  const size_t at = r.err.find(marker);
  ASSERT_NE(at, std::string::npos) << r.err;
  const fs::path saved = r.err.substr(at + marker.size(), r.err.find(" instead", at) - at - marker.size());
  EXPECT_NE(read_whole_file(saved).find("\"output_len\""), std::string::npos) << saved;
  fs::remove(saved);

  // A filesystem too full for the probe is refused before the run, with the reason.
  std::ofstream(dir / "mnt" / "more") << std::string(16 * 1024, 'x');
  auto full = bench({"--result-filename", (dir / "mnt" / "s.json").string()});
  EXPECT_EQ(full.exit_code, 1) << full.err;
  EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << full.err;
  EXPECT_EQ(full.err.find("Serving Benchmark Result"), std::string::npos) << "ran first: " << full.err;
}

TEST(InputFiles, ValidateRefusesADeviceAndAFifoWithoutAWriterInsteadOfHanging) {
  auto zero = run_ixbench({"validate", "--config-files", "/dev/zero"}, "", 60.0);
  EXPECT_EQ(zero.exit_code, 1) << zero.err;
  EXPECT_NE(zero.err.find("/dev/zero: larger than 64 MiB, the limit for a master config YAML file"), std::string::npos)
      << zero.err;
  const auto dir = scratch_dir("input_fifo");
  const auto fifo = dir / "configs.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto hung = run_ixbench({"validate", "--config-files", fifo.string()}, "", 30.0);
  EXPECT_FALSE(hung.timed_out);
  EXPECT_EQ(hung.exit_code, 1) << hung.err;
  EXPECT_NE(hung.err.find("a FIFO that gave no data for 5 s"), std::string::npos) << hung.err;
  // With a writer, a FIFO is read like a file.
  std::thread writer(
      [&] { std::ofstream(fifo) << read_whole_file(ix::testing::source_path("tests/data/config/valid-master.yaml")); });
  auto fed = run_ixbench({"validate", "--config-files", fifo.string()}, "", 30.0);
  writer.join();
  EXPECT_EQ(fed.exit_code, 0) << fed.err;
  fs::remove_all(dir);
}

TEST(InputFiles, SimPredictReadsABoundedRowFile) {
  // /dev/zero grew to 23.6 GB and was killed.
  auto zero = run_ixbench({"sim", "predict", "--row-file", "/dev/zero"}, "", 20.0);
  EXPECT_EQ(zero.exit_code, 1) << zero.err;
  EXPECT_NE(zero.err.find("--row-file: /dev/zero: larger than 64 MiB"), std::string::npos) << zero.err;
  auto directory = run_ixbench({"sim", "predict", "--row-file", fs::temp_directory_path().string()}, "", 60.0);
  EXPECT_EQ(directory.exit_code, 1);
  EXPECT_NE(directory.err.find("is a directory"), std::string::npos) << directory.err;
}

TEST(OutputFiles, SimCalibrateWritesToStandardOutputWithTheTablesOnStderr) {
  const std::string csv = ix::testing::shared_path("data/calibration/measured_dsr1.csv");
  if (csv.empty()) GTEST_SKIP() << ix::testing::shared_missing_message("data/calibration/measured_dsr1.csv");
  const auto dir = scratch_dir("calibrate_stdout");
  std::istringstream all(read_whole_file(csv));
  std::ofstream six(dir / "six.csv");
  std::string line;
  for (int i = 0; i < 7 && std::getline(all, line); ++i) six << line << "\n";
  six.close();
  auto r = run_ixbench(
      {"sim", "calibrate", "--csv", (dir / "six.csv").string(), "--out", "-", "--iterations", "1", "--quiet"}, "",
      120.0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto fitted = json::parse(r.out);
  ASSERT_TRUE(fitted && fitted->is_object()) << r.out.substr(0, 300);
  EXPECT_TRUE(fitted->as_object().contains("schema_version"));
  EXPECT_NE(r.err.find("points: 6 simulated"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists("-"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ix
