// `ixbench sim predict --jobs-from matrix.json`: every row of a sweep matrix (`ixbench sweep`'s
// JSON array) predicted at each of its concurrencies, on a pool of worker threads, each
// point written as it completes in the layout `ixbench run --predict` gives a job, and a table of
// every point at the end:
//   <out>/<stem>.json + <out>/agg_<stem>.json    a fixed-length point: SPEC §4 raw result and its
//                                                aggregated record (process_result.py's)
//   <out>/agentic/<stem>/ + <out>/agg_<stem>.json  an agentic point: `bench replay`'s artifacts
//                                                and the record process_agentic_result.py makes
// so `ixbench ingest <out> --kind predicted` (or --db here) loads them into the results store.
// Agentic rows replay --trace; a matrix with agentic rows and no trace is refused. A row the
// simulator cannot take (pipeline parallelism, an unknown model) fails its points alone.
#pragma once

#include <string>

#include "bench/replay_command.h"
#include "common/error.h"
#include "sim/engine_config.h"

namespace ix::cli {

struct JobsPredictOptions {
  std::string matrix;                // the matrix file
  std::string out_dir;               // where every point's files go
  std::string db;                    // also store the records as predicted (empty: do not)
  int jobs = 0;                      // worker threads; 0 = the machine's cores
  sim::EngineConfig base;            // what the rows do not say (limits, seed, catalog dir)
  bench::BenchReplayOptions replay;  // --trace and the schedule of agentic rows
  bool duration_given = false;       // --benchmark-duration wins over the rows' duration
};

// Predicts every point; returns the exit status: 0, or 1 when a point failed (the others are
// written; the table names the failure).
Result<int> run_jobs_prediction(const JobsPredictOptions& options);

}  // namespace ix::cli
