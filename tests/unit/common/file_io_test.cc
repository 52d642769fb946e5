#include "common/file_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/temp_files.h"

namespace ix::files {
namespace {

namespace fs = std::filesystem;
using ix::testing::read_whole_file;
using ix::testing::scratch_dir;

TEST(FileIo, WritesARegularFileAtomicallyLeavingNoTmp) {
  const auto dir = scratch_dir("regular");
  ASSERT_TRUE(write_file(dir / "a.json", "one"));
  ASSERT_TRUE(write_file(dir / "a.json", "two"));
  EXPECT_EQ(read_whole_file(dir / "a.json"), "two");
  EXPECT_FALSE(fs::exists(dir / "a.json.tmp"));
  fs::remove_all(dir);
}

TEST(FileIo, ASymlinkIsFollowedTheTargetUpdatedAndTheLinkKept) {
  // The link used to be replaced by a regular file and its target never updated.
  const auto dir = scratch_dir("symlink");
  fs::create_directories(dir / "real");
  std::ofstream(dir / "real" / "t.json") << "old";
  fs::create_symlink("real/t.json", dir / "link.json");
  ASSERT_TRUE(write_file(dir / "link.json", "new"));
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read_whole_file(dir / "real" / "t.json"), "new");
  EXPECT_FALSE(fs::exists(dir / "link.json.tmp"));
  EXPECT_FALSE(fs::exists(dir / "real" / "t.json.tmp"));
  // A dangling link: its target is created.
  fs::create_symlink("real/new.json", dir / "dangling.json");
  ASSERT_TRUE(write_file(dir / "dangling.json", "made"));
  EXPECT_TRUE(fs::is_symlink(dir / "dangling.json"));
  EXPECT_EQ(read_whole_file(dir / "real" / "new.json"), "made");
  fs::remove_all(dir);
}

TEST(FileIo, AppendingThroughASymlinkAppendsToTheTarget) {
  const auto dir = scratch_dir("append");
  std::ofstream(dir / "t.jsonl") << R"({"a": 1})";
  fs::create_symlink(dir / "t.jsonl", dir / "link.jsonl");
  ASSERT_TRUE(append_line(dir / "link.jsonl", R"({"b": 2})"));
  EXPECT_TRUE(fs::is_symlink(dir / "link.jsonl"));
  EXPECT_EQ(read_whole_file(dir / "t.jsonl"), "{\"a\": 1}\n{\"b\": 2}");
  ASSERT_TRUE(append_line(dir / "fresh.jsonl", "x"));
  EXPECT_EQ(read_whole_file(dir / "fresh.jsonl"), "x");
  fs::remove_all(dir);
}

TEST(FileIo, AFifoIsStreamedToNotReplaced) {
  const auto dir = scratch_dir("fifo");
  const auto fifo = dir / "out";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read_whole_file(fifo); });
  ASSERT_TRUE(write_file(fifo, "streamed"));
  reader.join();
  EXPECT_EQ(received, "streamed");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  fs::remove_all(dir);
}

TEST(FileIo, AFullDeviceFailsWithTheReason) {
  auto written = write_file("/dev/full", "data");
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message().find("No space left on device"), std::string::npos) << written.error().message();
  EXPECT_NE(written.error().message().find("/dev/full"), std::string::npos) << written.error().message();
  // Before the run a device only has to be writable: its failure shows at the write.
  EXPECT_TRUE(check_writable("/dev/full"));
  EXPECT_TRUE(write_file("/dev/null", "gone"));
}

TEST(FileIo, DirectoriesAndMissingDirectoriesAreRefusedWithTheReason) {
  const auto dir = scratch_dir("refused");
  auto directory = write_file(dir, "x");
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message().find("is a directory"), std::string::npos) << directory.error().message();
  auto check = check_writable(dir);
  ASSERT_FALSE(check);
  EXPECT_NE(check.error().message().find("is a directory"), std::string::npos);
  auto missing = check_writable(dir / "no" / "such" / "r.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("No such file or directory"), std::string::npos)
      << missing.error().message();
  // The probe is removed again.
  ASSERT_TRUE(check_writable(dir / "r.json"));
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST(FileIo, StandardOutputNames) {
  for (const char* name : {"-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"}) EXPECT_TRUE(is_stdout(name)) << name;
  for (const char* name : {"/dev/stderr", "/dev/fd/10", "out.json", "/dev/fd/1x"})
    EXPECT_FALSE(is_stdout(name)) << name;
  EXPECT_EQ(temp_fallback_path("-").filename().string(), "ixbench-" + std::to_string(::getpid()) + "-result.json");
  EXPECT_EQ(temp_fallback_path("/x/r.json").filename().string(), "ixbench-" + std::to_string(::getpid()) + "-r.json");
}

TEST(FileIo, WritesToANamedDescriptorInPlace) {
  const auto dir = scratch_dir("descriptor");
  const int fd = ::open((dir / "f").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_file("/dev/fd/" + std::to_string(fd), "via fd"));
  ::close(fd);
  EXPECT_EQ(read_whole_file(dir / "f"), "via fd");
  fs::remove_all(dir);
}

TEST(FileIo, ReadsARegularFile) {
  const auto dir = scratch_dir("read");
  std::ofstream(dir / "a.yaml") << "key: value\n";
  auto text = read_text_file(dir / "a.yaml", 1024, "a test file");
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "key: value\n");
  fs::remove_all(dir);
}

TEST(FileIo, ReadRefusesMissingFilesDirectoriesAndBadPathsWithTheReason) {
  const auto dir = scratch_dir("read_refused");
  auto missing = read_text_file(dir / "nope.yaml", 1024, "a test file");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("nope.yaml: file does not exist"), std::string::npos);
  auto directory = read_text_file(dir, 1024, "a test file");
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message().find("is a directory; expected a test file"), std::string::npos)
      << directory.error().message();
  std::ofstream(dir / "plain") << "x";
  auto under_file = read_text_file(dir / "plain" / "x.yaml", 1024, "a test file");
  ASSERT_FALSE(under_file);
  EXPECT_NE(under_file.error().message().find("Not a directory"), std::string::npos) << under_file.error().message();
  fs::remove_all(dir);
}

TEST(FileIo, ARegularFileOverTheCapIsRefusedByItsSize) {
  const auto dir = scratch_dir("read_big");
  std::ofstream(dir / "big") << "x";
  fs::resize_file(dir / "big", 3 * kMiB);  // sparse: refused before any byte is read
  auto big = read_text_file(dir / "big", kMiB, "a test file");
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message().find("3145728 bytes is larger than 1 MiB, the limit for a test file"),
            std::string::npos)
      << big.error().message();
  fs::remove_all(dir);
}

TEST(FileIo, ADeviceIsReadOnlyUpToTheCap) {
  // /dev/zero used to be read until memory ran out.
  auto zero = read_text_file("/dev/zero", kMiB, "a test file");
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().message().find("/dev/zero: larger than 1 MiB, the limit for a test file"), std::string::npos)
      << zero.error().message();
  auto empty = read_text_file("/dev/null", kMiB, "a test file");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(FileIo, AFifoWithAWriterIsReadToItsEnd) {
  const auto dir = scratch_dir("read_fifo");
  const auto fifo = dir / "in";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << "from a writer"; });
  auto text = read_text_file(fifo, 1024, "a test file");
  writer.join();
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "from a writer");
  fs::remove_all(dir);
}

TEST(FileIo, AppendFileKeepsWhatWasAppended) {
  const auto dir = scratch_dir("append_file");
  const auto path = dir / "rows.jsonl";
  std::ofstream(path) << "old content\n";
  auto file = AppendFile::create(path);
  ASSERT_TRUE(file) << file.error().message();
  ASSERT_TRUE(file->append("a\n"));
  EXPECT_EQ(testing::read_whole_file(path), "a\n");  // truncated on create, written at once
  ASSERT_TRUE(file->append("b\n"));
  ASSERT_TRUE(file->close());
  EXPECT_TRUE(file->close());  // idempotent
  EXPECT_EQ(testing::read_whole_file(path), "a\nb\n");
  auto late = file->append("c\n");
  ASSERT_FALSE(late);
  EXPECT_NE(late.error().message().find("rows.jsonl"), std::string::npos);
  EXPECT_FALSE(AppendFile::create(dir));  // a directory
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ix::files
