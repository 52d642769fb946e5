#include "common/error.h"

#include <gtest/gtest.h>

namespace ix {
namespace {

Result<int> parse_positive(int value) {
  if (value <= 0) return fail(ErrorCode::kInvalidArgument, "value must be > 0");
  return value;
}

TEST(Error, ResultCarriesValueOrError) {
  auto ok = parse_positive(3);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, 3);
  auto bad = parse_positive(-1);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message(), "value must be > 0");
}

TEST(Error, WithContextPrefixesLocation) {
  Error error(ErrorCode::kParse, "unknown field 'tpp'");
  Error located = error.with_context("configs/a.yaml:12:5");
  EXPECT_EQ(located.message(), "configs/a.yaml:12:5: unknown field 'tpp'");
  EXPECT_EQ(located.code(), ErrorCode::kParse);
  EXPECT_EQ(error.message(), "unknown field 'tpp'");  // the original is untouched
  EXPECT_EQ(located.to_string(), "parse error: configs/a.yaml:12:5: unknown field 'tpp'");
}

TEST(Error, VoidResult) {
  Result<void> ok;
  EXPECT_TRUE(ok.has_value());
  Result<void> bad = fail(ErrorCode::kIo, "disk full");
  EXPECT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), ErrorCode::kIo);
}

}  // namespace
}  // namespace ix
