// Loading existing result folders into the store (`ixbench ingest`, SPEC §13).
//
// A folder is one run. What is read (recursively):
//   agg_*.json              an aggregated record (SPEC §5, `ixbench aggregate` / process_result.py /
//                           process_agentic_result.py) or a JSON list of them (`ixbench collect`)
//   <stem>.json             the raw result beside agg_<stem>.json, stored with it
//   *_conc<N>.json          lm-eval results (`ixbench eval gsm8k`), attached to the results of the
//                           same model prefix (meta_env.json's infmax_model_prefix) and conc
//   run_manifest.json       the run: run_id, created_at, host, ixbench_version (all optional)
// Other files are left alone. A record is agentic when its scenario_type says so ("agentic-coding").
//
// The run id is the caller's, else the manifest's, else "<folder name>-<hash of its absolute
// path>"; created_at is the manifest's, else the newest modification time of the files read —
// so re-reading an untouched folder gives the same records.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "store/store.h"

namespace ix::store {

// Every agg record in `text` (one object or a list), converted. `source_name` names the file in
// errors; `stem` is the result stem of a single record (list items get one from their identity).
Result<std::vector<ResultRecord>> results_from_agg_json(std::string_view text, std::string_view source_name,
                                                        std::string_view stem);

struct FolderRun {
  RunRecord run;
  std::vector<ResultRecord> results;
  std::vector<std::string> notes;  // what was read but not stored (an eval matching no result)
};

// Reads one folder as described above. Errors name the file (and the JSON line:column).
Result<FolderRun> read_result_folder(const std::filesystem::path& dir, const std::string& run_id, ResultKind kind);

struct IngestOptions {
  std::vector<std::string> dirs;
  std::string db = kDefaultStoreLocation;
  std::string run_id;  // only with one folder
  ResultKind kind = ResultKind::kMeasured;
};

struct FolderIngest {
  std::string dir;
  std::string run_id;
  IngestStats stats;
  std::vector<std::string> notes;
};

// Reads every folder first (a bad file fails before anything is written), then stores each as
// one transaction.
Result<std::vector<FolderIngest>> ingest_folders(const IngestOptions& options);

}  // namespace ix::store
