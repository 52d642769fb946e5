// Shared by the agentic_*.cc files: JSON values read as Python reads them, and the statistics
// objects of request_metrics.py. Not part of the metrics/ interface.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/agentic_aggregate.h"

namespace ix::metrics::agentic::detail {

// Python's int(text) (white space, sign, digits with single underscores); nullopt when it raises
// or the value does not fit 64 bits.
std::optional<int64_t> int_of_text(std::string_view text);
// Python's float(text): decimal numbers (underscores between digits), inf, infinity, nan.
std::optional<double> float_of_text(std::string_view text);

// to_float(): float(value) for numbers, booleans and numeric text; nullopt for None and what
// float() refuses.
std::optional<double> to_float(const boost::json::value& value);
// to_int(): int(value): integers, booleans, floats truncated (finite), integer text.
std::optional<int64_t> to_int(const boost::json::value& value);
// Python truthiness of a JSON value.
bool truthy(const boost::json::value& value);
// Python's str() of the value json.loads() made of it (repr for lists and dicts).
std::string py_str(const boost::json::value& value);
// str.strip() (Unicode white space).
std::string_view py_strip(std::string_view text);

// A number as Python holds it: an int, or a float.
inline boost::json::value number(double v) {
  return boost::json::value(v);
}

// stats_for(): {mean, p50, p75, p90, p95, std} of floats; empty for none.
boost::json::object float_stats(std::vector<double> values);
// _distribution(): the same of ints (mean an int when exact, percentiles of the floats).
boost::json::object int_stats(const std::vector<int64_t>& values);

// The value, or null.
inline boost::json::value or_null(const std::optional<double>& v) {
  return v ? boost::json::value(*v) : boost::json::value(nullptr);
}
inline boost::json::value or_null(const std::optional<int64_t>& v) {
  return v ? boost::json::value(*v) : boost::json::value(nullptr);
}

// compute_server_metrics(): the nested server_metrics object and the warnings. `records` give the
// profile totals.
struct ServerResult {
  boost::json::object nested;
  std::vector<std::string> warnings;
};
Result<ServerResult> server_metrics(const Artifacts& artifacts, const std::string& framework);

}  // namespace ix::metrics::agentic::detail
