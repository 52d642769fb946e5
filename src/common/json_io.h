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

#include "common/error.h"

namespace ix::json {

Result<boost::json::value> parse(std::string_view text, std::string_view source_name = "<json>");
Result<boost::json::value> read_file(const std::filesystem::path& path);

// Compact single-line form.
std::string to_string(const boost::json::value& value);
// Indented form (2 spaces), newline-terminated.
std::string to_pretty_string(const boost::json::value& value);

// Writes atomically: to `path.tmp`, then rename, so a crash never leaves half a result file.
Result<void> write_file(const std::filesystem::path& path, std::string_view content);

// Appends `content` to the file (created when missing), after a newline when the file is not
// empty: vLLM's --append-result layout (one JSON document per line). The whole file is rewritten
// through write_file, so a crash mid-write never damages the results already in it. Errors:
// kIo (unreadable or unwritable file).
Result<void> append_line(const std::filesystem::path& path, std::string_view content);

// Whether write_file(path, ...) can succeed: `path` is not a directory and its `path.tmp` can be
// created (it is removed again). For commands that write only after a long computation, so a bad
// path fails at once instead of after the work.
Result<void> check_writable(const std::filesystem::path& path);

// Where a file meant for `intended` goes when that cannot be written, so measured or fitted data
// is kept: <temporary directory>/ixbench-<pid>-<file name>; empty when there is no temporary
// directory.
std::filesystem::path temp_fallback_path(const std::filesystem::path& intended);

// Typed field access with a clear error naming the field ("missing field 'model'" / "field
// 'max_tokens' must be an integer").
Result<const boost::json::value*> field(const boost::json::object& object, std::string_view key);
Result<int64_t> get_int(const boost::json::object& object, std::string_view key);
Result<double> get_number(const boost::json::object& object, std::string_view key);
Result<std::string> get_string(const boost::json::object& object, std::string_view key);
Result<bool> get_bool(const boost::json::object& object, std::string_view key);

}  // namespace ix::json
