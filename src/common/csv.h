// CSV records as Python's csv module reads them (excel dialect: ',' delimiter, '"' quotes with ""
// for a quote inside, non-strict), so tools that mirror a Python script read the same fields from
// the same bytes:
//   - a record ends at \n, \r or \r\n outside quotes; a quoted field may span lines;
//   - an empty line is an empty record (callers skip it, as csv.DictReader does);
//   - text after a closing quote is kept (`"a"b` is `ab`); a quote inside an unquoted field is a
//     plain character; an unterminated quote at the end of the text ends the last field there;
//   - `skip_initial_space` drops spaces that open a field (skipinitialspace=True).
// A field longer than kCsvFieldLimit characters is an error, as csv.field_size_limit() makes it.
//
// Thread-safety: plain functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::csv {

inline constexpr size_t kCsvFieldLimit = 131072;  // Python's default csv.field_size_limit()

struct Record {
  size_t line = 0;  // 1-based line the record starts on
  std::vector<std::string> fields;
};

struct ReadOptions {
  bool skip_initial_space = false;
};

// Every record of `text`, empty ones included. Errors (kParse): a field over kCsvFieldLimit,
// naming its line.
Result<std::vector<Record>> read_records(std::string_view text, const ReadOptions& options = {});

}  // namespace ix::csv
