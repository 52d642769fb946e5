#include "common/log.h"

#include <gtest/gtest.h>

namespace ix::log {
namespace {

TEST(Log, ParsesLevelsCaseInsensitively) {
  EXPECT_EQ(parse_level("debug").value(), Level::kDebug);
  EXPECT_EQ(parse_level("WARN").value(), Level::kWarn);
  EXPECT_EQ(parse_level("warning").value(), Level::kWarn);
  EXPECT_EQ(parse_level("off").value(), Level::kOff);
  auto bad = parse_level("loud");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("'loud'"), std::string::npos);
  EXPECT_NE(bad.error().message().find("trace, debug"), std::string::npos);
}

TEST(Log, LevelFiltersMessages) {
  Level saved = level();
  set_level(Level::kError);
  ::testing::internal::CaptureStderr();
  info("hidden {}", 1);
  error("shown {}", 2);
  std::string err = ::testing::internal::GetCapturedStderr();
  set_level(saved);
  EXPECT_EQ(err.find("hidden"), std::string::npos);
  EXPECT_NE(err.find("ERROR shown 2"), std::string::npos);
}

TEST(Log, ControlCharactersInAMessageAreEscaped) {
  ::testing::internal::CaptureStderr();
  warn("server said: {}", "\x1b[2Jgone\x07");
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
  EXPECT_NE(err.find("server said: \\x1b[2Jgone\\x07\n"), std::string::npos) << err;
}

}  // namespace
}  // namespace ix::log
