// The last steps of `bench serve`: where the result goes, writing it, and the exit status.
//
// Thread-safety: plain functions; save_result writes files.
#pragma once

#include <boost/json/object.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bench/serve_command.h"
#include "bench/serve_plan.h"
#include "common/error.h"
#include "metrics/serve_result.h"

namespace ix::bench {

// Where the result named `name` goes: `name` in --result-dir (or the working directory); "-"
// (standard output) stays "-".
std::filesystem::path result_path(const BenchServeOptions& options, const std::string& name);

// Whether --result-filename names standard output ("-", /dev/stdout): then the console summary
// goes to stderr, so stdout holds the JSON only.
bool result_on_stdout(const BenchServeOptions& options);

// Checked before the run, so a long run is never lost to a typo or a full disk: the result's
// directory is created when missing and takes a probe file (files::check_writable); a FIFO or
// device is writable; --save-detailed with the result on standard output is refused.
Result<void> check_result_target(const BenchServeOptions& options);

// --result-filename, else vLLM's name: {label}-{rate}qps[-concurrency{N}]-{model}-{date}.json
// (a ramp-up: {label}-ramp-up-{strategy}-{start}qps-{end}qps...).
std::string result_file_name(const BenchServeOptions& options, const ServePlan& plan, const std::string& date);

// Writes the result (and with --save-detailed the per-request JSONL beside it), or appends one
// line with --append-result. When the target cannot be written the measurements go to the
// temporary directory instead; the error says where they went.
Result<void> save_result(const BenchServeOptions& options, const ServePlan& plan, const boost::json::object& result,
                         const std::vector<metrics::RequestRecord>& records, int64_t origin_ns);

// What decides the exit status.
struct RunVerdict {
  int64_t completed = 0;
  int64_t failed = 0;
  bool run_valid = true;
  int stop_signal = 0;       // the signal that stopped the run; 0 when none did
  bool server_lost = false;  // the watched server (--server-pid) exited or refused connections
};

// The exit status of a written run (serve_command.h): 128 + stop_signal, 1 on too many failures,
// none completed or a lost server, 1 on an invalid mark only with options.fail_on_invalid, else 0.
// Logs why.
int exit_status(const BenchServeOptions& options, const RunVerdict& verdict, const boost::json::object& result);

}  // namespace ix::bench
