// Agentic traces as data: recorded sessions (trees of turns and subagents) and Mooncake rows,
// their loaders, and what a trace holds (`ixbench trace stats`). SPEC §6.
//
// A trace is a list of session trees. A tree has an id, a block size (tokens per hash id) and an
// ordered list of entries; an entry is a turn (one request) or a subagent (a nested list of
// entries, which may hold subagents again). A Mooncake row {timestamp ms, input_length,
// output_length, hash_ids} becomes a tree of one turn at t = timestamp / 1000 s, block size 512.
//
// Formats (detected from content, or forced):
//   - Mooncake JSONL: one row per line; a file whose first non-blank line has `input_length`.
//   - Session traces: a .json file holding one trace object, a .jsonl file (any other name) with
//     one trace object per line, or a directory of .json files (read in name order).
// Required fields are checked strictly; optional ones (models, hash_id_scope, agent_id,
// input_types, stop, ...) are ignored. Every problem is an error naming the file, the line (JSONL)
// and the field (e.g. `t.jsonl:3: requests[1].requests[0].in: must be an integer >= 0, not -5`;
// a .json document: `t.json: requests[1].out: missing`), never a skip.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/error.h"
#include "common/file_io.h"

namespace ix::workload {

// Cap on one trace file (the public Mooncake files are 1-3 MiB; session corpora ~100 MiB).
inline constexpr size_t kMaxTraceFileBytes = 1024 * files::kMiB;
inline constexpr int64_t kMooncakeBlockSize = 512;

// A turn's recorded type: "n" and "s" as the session-trace corpora write them.
enum class TurnType { kN, kS };

struct TraceTurn {
  double t = 0.0;  // seconds from the trace's start
  TurnType type = TurnType::kN;
  int64_t in = 0;   // input tokens (ISL)
  int64_t out = 0;  // output tokens (OSL)
  std::vector<int64_t> hash_ids;
  std::optional<double> think_time;  // s, before this turn
  std::optional<double> api_time;    // s, the recorded request's duration
};

struct TraceEntry;

struct TraceSubagent {
  double t = 0.0;        // its entries' times are absolute too (a relative one in the file is moved)
  std::string agent_id;  // empty when the trace names none
  std::vector<TraceEntry> requests;
};

struct TraceEntry {
  std::variant<TraceTurn, TraceSubagent> value;
};

struct SessionTree {
  std::string id;
  int64_t block_size = 0;
  std::vector<TraceEntry> requests;
};

enum class TraceFormat { kAuto, kMooncake, kSession };

struct Trace {
  TraceFormat format = TraceFormat::kSession;  // kMooncake or kSession once loaded
  std::vector<SessionTree> trees;
};

struct TraceLoadOptions {
  TraceFormat format = TraceFormat::kAuto;
  // Replaces every tree's block size (a session trace's trees may then omit `block_size`).
  std::optional<int64_t> block_size;
};

// Loads a trace file or directory. Errors: kNotFound / kIo / kInvalidArgument from reading,
// kParse (bad JSON, with file:line:column), kInvalidArgument (a field: file[:line]: path: problem).
Result<Trace> load_trace(const std::filesystem::path& path, const TraceLoadOptions& options = {});
// The same, on the text of one file already read (`source` names it in errors).
// `json_document`: a session trace's text is one trace object (a .json file), not JSONL.
Result<Trace> parse_trace_text(std::string_view text, std::string_view source, const TraceLoadOptions& options,
                               bool json_document);

std::string_view trace_format_name(TraceFormat format);

// count, mean, p50, p90, p99 and max of one quantity (numpy semantics; all 0 when empty).
struct Distribution {
  int64_t count = 0;
  double mean = 0.0;
  double p50 = 0.0;
  double p90 = 0.0;
  double p99 = 0.0;
  double max = 0.0;
};

struct TraceStats {
  TraceFormat format = TraceFormat::kSession;
  int64_t sessions = 0;  // trees (Mooncake: rows)
  int64_t turns = 0;
  int64_t subagents = 0;
  int64_t max_subagent_depth = 0;    // 1: a subagent of a top-level list; 0: none
  int64_t max_fan_out = 0;           // most subagents in a row between two turns of one list
  std::vector<int64_t> block_sizes;  // distinct, ascending
  Distribution isl;                  // tokens per turn
  Distribution osl;
  // Session traces: start of an entry minus start of the entry before it in the same list (the
  // tree's top level or one subagent's). Mooncake: timestamp minus the previous row's.
  Distribution gap_s;
  Distribution think_time_s;  // turns that record think_time
  // Theoretical prefix-cache hit: Σ leading hash blocks already seen / Σ blocks, with a seen-set
  // shared within a tree (session traces) or across the whole file (Mooncake).
  int64_t hit_blocks = 0;
  int64_t total_blocks = 0;
  double prefix_hit() const {
    return total_blocks ? static_cast<double>(hit_blocks) / static_cast<double>(total_blocks) : 0.0;
  }
};

TraceStats trace_stats(const Trace& trace);

}  // namespace ix::workload
