// JSON read/write helpers over Boost.JSON.
//
// Parsing returns Result with line:column of the first syntax error. Serialisation is
// deterministic (object keys keep insertion order; doubles are printed with the shortest
// round-trip form), so the same data always gives byte-identical output: golden tests and
// `sweep` output depend on it.
#pragma once

#include <boost/json/fwd.hpp>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/file_io.h"

namespace ix::json {

Result<boost::json::value> parse(std::string_view text, std::string_view source_name = "<json>");
// Parses a file read through files::read_text_file() (capped at `max_bytes`; "-" is stdin).
// Writing goes through common/file_io.h.
Result<boost::json::value> read_file(const std::filesystem::path& path, size_t max_bytes = files::kMaxResultFileBytes,
                                     std::string_view what = "a JSON file");

// A JSON file read in pieces, without the values of members named in `dropped_keys` (at any
// depth; the member is left out of its object), so a document can be larger than memory when the
// dropped parts are what makes it large. Numbers as parse() reads them. `what` names the input in
// errors: kNotFound (missing), kInvalidArgument (not a regular file), kIo, kParse (FILE:LINE:COL).
Result<boost::json::value> read_file_without(const std::filesystem::path& path,
                                             const std::vector<std::string>& dropped_keys, std::string_view what);

// Compact single-line form.
std::string to_string(const boost::json::value& value);
// Indented form (2 spaces), newline-terminated.
std::string to_pretty_string(const boost::json::value& value);
// Exactly what Python's json.dumps(value, indent=indent) writes (indent 0: as indent=None, one
// line with ", " and ": "): ensure_ascii escapes, NaN / Infinity / -Infinity for non-finite doubles, no
// final newline.
std::string to_python_json(const boost::json::value& value, int indent = 2);

// Typed field access with a clear error naming the field ("missing field 'model'" / "field
// 'max_tokens' must be an integer").
Result<const boost::json::value*> field(const boost::json::object& object, std::string_view key);
Result<int64_t> get_int(const boost::json::object& object, std::string_view key);
Result<double> get_number(const boost::json::object& object, std::string_view key);
Result<std::string> get_string(const boost::json::object& object, std::string_view key);
Result<bool> get_bool(const boost::json::object& object, std::string_view key);

}  // namespace ix::json
