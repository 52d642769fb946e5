#include "common/sanitize.h"

#include <gtest/gtest.h>

#include <string>

#include "common/utf8.h"

namespace ix {
namespace {

class Sanitize : public ::testing::Test {
 protected:
  void TearDown() override { clear_secrets(); }
};

TEST_F(Sanitize, PrintableEscapesControlCharactersSoNoLineCanBeForged) {
  const std::string forged = "key\x1b[31m\nfake.yaml:1:1: error: forged\r\x7f";
  const std::string out = printable(forged);
  EXPECT_EQ(out, "key\\x1b[31m\\nfake.yaml:1:1: error: forged\\r\\x7f");
  EXPECT_EQ(out.find('\n'), std::string::npos);
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
}

TEST_F(Sanitize, PrintableKeepsValidUtf8AndEscapesInvalidBytesAndC1Controls) {
  EXPECT_EQ(printable("DeepSeek \xEF\xBD\x9C ok"), "DeepSeek \xEF\xBD\x9C ok");
  EXPECT_EQ(printable("a\xff\xfe"
                      "b"),
            "a\\xff\\xfeb");
  EXPECT_EQ(printable("c1\xC2\x9B"
                      "31m"),
            "c1\\u009b31m");
  EXPECT_EQ(printable("tab\there"), "tab\\there");
}

TEST_F(Sanitize, PrintableLinesKeepsOnlyTheLineBreaks) {
  EXPECT_EQ(printable_lines("2 problem(s):\na.yaml:1:1: x\x1b[2J\r"), "2 problem(s):\na.yaml:1:1: x\\x1b[2J\\r");
}

TEST_F(Sanitize, StorableIsAlwaysValidUtf8) {
  const std::string out = storable("chunk \xff\xfe{\"x\": \xc3");
  EXPECT_TRUE(utf8::is_valid(out));
  EXPECT_EQ(out, "chunk \xEF\xBF\xBD\xEF\xBF\xBD{\"x\": \xEF\xBF\xBD");  // one U+FFFD per maximal subpart
  EXPECT_EQ(storable("line\nnext"), "line\nnext");                       // JSON escapes it
}

TEST_F(Sanitize, RegisteredSecretsAreRedactedFromBoth) {
  register_secret("sk-test-1234567890");
  register_secret("abc");  // too short to redact safely: ignored
  const std::string echoed = R"({"error": "invalid key sk-test-1234567890 for abc"})";
  EXPECT_EQ(printable(echoed), R"({"error": "invalid key <redacted> for abc"})");
  EXPECT_EQ(storable(echoed), R"({"error": "invalid key <redacted> for abc"})");
  EXPECT_EQ(redact("sk-test-1234567890sk-test-1234567890"), "<redacted><redacted>");
}

TEST_F(Sanitize, LongerSecretWinsOverOneItContains) {
  register_secret("token");
  register_secret("Bearer token-xyz");
  EXPECT_EQ(redact("Authorization: Bearer token-xyz"), "Authorization: <redacted>");
}

TEST_F(Sanitize, LongTextIsCappedAtACharacterBoundaryAndSaysSo) {
  const std::string text = std::string(10, 'a') + "\xEF\xBD\x9C" + std::string(10, 'b');
  EXPECT_EQ(storable(text, 11), std::string(10, 'a') + "...(13 more bytes)");
  EXPECT_EQ(printable(std::string(100, 'x'), 40).substr(40), "...(60 more bytes)");
}

}  // namespace
}  // namespace ix
