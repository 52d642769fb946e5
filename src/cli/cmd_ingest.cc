// `ixbench ingest DIR... [--db DB] [--run-id ID] [--kind measured|predicted]`: loads result
// folders (agg_*.json, raw results, eval results, InferenceX agg files and collect lists) into the
// results store (src/store/ingest.h), one transaction per folder, and prints what changed.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "store/ingest.h"

namespace ix::cli {
namespace {

struct Flags {
  store::IngestOptions options;
  std::string kind = "measured";
};

int run(Flags& f) {
  f.options.kind = f.kind == "predicted" ? store::ResultKind::kPredicted : store::ResultKind::kMeasured;
  auto folders = store::ingest_folders(f.options);
  if (!folders) return report_error(folders.error());
  for (const auto& folder : *folders) {
    for (const auto& note : folder.notes) fmt::print(stderr, "ixbench: note: {}\n", note);
    fmt::print("{}: run {}: {} inserted, {} updated, {} unchanged\n", folder.dir, folder.run_id, folder.stats.inserted,
               folder.stats.updated, folder.stats.unchanged);
  }
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* cmd = root.add_subcommand("ingest", "load result folders into the results store (SQLite or PostgreSQL)");
  auto flags = std::make_shared<Flags>();
  cmd->add_option("dirs", flags->options.dirs, "result folders, one run each (read recursively)")->required();
  cmd->add_option("--db", flags->options.db, "results store: a file, sqlite:PATH or postgresql://...")
      ->capture_default_str();
  cmd->add_option("--run-id", flags->options.run_id,
                  "run id (one folder only; default: the folder's run_manifest.json, else derived from the folder)");
  cmd->add_option("--kind", flags->kind, "what the results are")
      ->check(CLI::IsMember({"measured", "predicted"}))
      ->capture_default_str();
  registry.on_run(cmd, [flags] { return run(*flags); });
}

}  // namespace
IX_REGISTER_COMMAND(ingest, setup);
}  // namespace ix::cli
