// `ixbench aggregate` as a step other commands run in-process (`sim predict --jobs-from`): a raw
// result (or an agentic replay's artifact folder) and its row's variables -> the aggregated record
// InferenceX's scripts write (cli/cmd_aggregate.cc).
#pragma once

#include <string>

namespace ix::cli {

struct AggregateFlags {
  std::string env_file;   // a JSON object of the variables instead of the environment
  std::string raw;        // default: <RESULT_FILENAME>.json
  std::string out;        // default: agg_<RESULT_FILENAME>.json
  bool quiet = false;     // print the path written instead of the record
  bool silent = false;    // print neither
  std::string power_csv;  // default: process_result.py's candidates
  bool require_power = false;
  std::string scenario;  // fixed-seq-len | agentic-coding | agentic; empty: from the input
  std::string row;       // a matrix row (JSON object) supplying the variables
};

// Writes the record; returns the exit status (errors are reported on stderr, as the command does).
int run_aggregate(const AggregateFlags& flags);

}  // namespace ix::cli
