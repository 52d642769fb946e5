// The CSV reader against what Python's csv module (excel dialect) yields for the same bytes.
#include "common/csv.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ix::csv {
namespace {

using Rows = std::vector<std::vector<std::string>>;

Rows fields_of(std::string_view text, bool skip_space = true) {
  auto records = read_records(text, {.skip_initial_space = skip_space});
  EXPECT_TRUE(records) << (records ? "" : records.error().message());
  Rows out;
  if (records)
    for (auto& record : *records) out.push_back(record.fields);
  return out;
}

TEST(CsvReader, FieldsQuotesAndLineEndingsAsPythonReadsThem) {
  EXPECT_EQ(fields_of("a, b,c\r\n1,  2 ,3\n"), (Rows{{"a", "b", "c"}, {"1", "2 ", "3"}}));
  EXPECT_EQ(fields_of("a, b", false), (Rows{{"a", " b"}}));
  EXPECT_EQ(fields_of("\"x, y\",\"say \"\"hi\"\"\"\n"), (Rows{{"x, y", "say \"hi\""}}));
  EXPECT_EQ(fields_of("\"a\"b,c\n"), (Rows{{"ab", "c"}}));  // text after the closing quote is kept
  EXPECT_EQ(fields_of("a\"b,c\n"), (Rows{{"a\"b", "c"}}));  // a quote inside a field is plain
  EXPECT_EQ(fields_of("\"two\nlines\",x\n"), (Rows{{"two\nlines", "x"}}));
  EXPECT_EQ(fields_of("a\n\nb\rc"), (Rows{{"a"}, {}, {"b"}, {"c"}}));  // an empty line: an empty record
  EXPECT_EQ(fields_of("a,\n"), (Rows{{"a", ""}}));
  EXPECT_EQ(fields_of("\"open to the end"), (Rows{{"open to the end"}}));
  EXPECT_EQ(fields_of(""), Rows{});
}

TEST(CsvReader, RecordsKnowTheirLine) {
  auto records = read_records("h\n\"a\nb\"\nc\n");
  ASSERT_TRUE(records);
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[1].line, 2u);
  EXPECT_EQ((*records)[2].line, 4u);
}

TEST(CsvReader, AFieldOverTheLimitIsAnErrorNamingItsLine) {
  const std::string text = "h\n" + std::string(kCsvFieldLimit + 1, 'x') + "\n";
  auto records = read_records(text);
  ASSERT_FALSE(records);
  EXPECT_NE(records.error().message().find("line 2"), std::string::npos) << records.error().message();
}

}  // namespace
}  // namespace ix::csv
