#include "common/strings.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(Strings, AsciiLowerLeavesNonAsciiBytesAlone) {
  EXPECT_EQ(ascii_lower("DeepSeek-R1 H200"), "deepseek-r1 h200");
  EXPECT_EQ(ascii_lower("ÄÖ-X"), "ÄÖ-x");  // UTF-8 bytes are not letters here
  EXPECT_EQ(ascii_lower(""), "");
}

TEST(Strings, AsciiIequals) {
  EXPECT_TRUE(ascii_iequals("Content-Length", "content-length"));
  EXPECT_FALSE(ascii_iequals("chunked", "chunke"));
  EXPECT_FALSE(ascii_iequals("a[", "A{"));  // '[' and '{' differ by 32 but are not letters
}

}  // namespace
}  // namespace ix
