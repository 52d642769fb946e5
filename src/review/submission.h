// What a submission hands `ixbench review` besides the change (docs/review.md): its benchmark
// results (--results: a folder of agg_*.json records and eval sets; --db: a results store's
// measured results) and the pull request's body (--pr-body, the CODEOWNER sign-off).
//
// All of it is read before any check runs. Evidence that was given but cannot be read fails the
// review as a whole, as an unreadable --base does (exit 1, an error naming the flag and the path,
// for a JSON file also what is wrong with it), rather than leaving a check without its evidence.
// Not giving a flag is fine: its checks are N/A.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "eval/check_command.h"
#include "store/store.h"

namespace ix::review {

struct ReviewOptions;

struct SubmittedRecord {
  store::ResultRecord record;
  std::string source;  // its file as named from --results ("results/agg_x.json"), or "<store>: <result stem>"
  std::string origin;  // --results as given, or the store ("sqlite:results.db")
};

struct SubmittedEvalSet {
  std::string source;  // the set's folder as named from --results ("results/eval_x"), or "<store>: <result stem>"
  eval::EvalResultSet results;
};

struct Submission {
  std::vector<SubmittedRecord> records;     // --results' agg records (store ingest's reader), then the store's
  std::vector<SubmittedEvalSet> eval_sets;  // --results' folders holding meta_env.json or results*.json, then
                                            // each store result with eval scores
  std::optional<std::string> pr_body;       // --pr-body's text
};

// Errors: --results is not a directory or holds an agg / eval file that cannot be read or parsed;
// --db is neither an existing SQLite file nor a PostgreSQL URL, or cannot be opened or queried;
// --pr-body cannot be read.
Result<Submission> read_submission(const ReviewOptions& options);

}  // namespace ix::review
