// `ixbench review`: mechanical review of a benchmark repository's change (SPEC §11,
// docs/review.md): each check PASS / WARN / FAIL / N/A with file:line evidence and a fix.
#include <fmt/format.h>

#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include "cli/command.h"
#include "review/review.h"

namespace ix::cli {
namespace {

struct ReviewFlags {
  std::string base;
  std::string head;
  std::string changelog = "perf-changelog.yaml";
  std::vector<std::string> config_files = {"configs/amd-master.yaml", "configs/nvidia-master.yaml"};
  int64_t pr = 0;
  std::string results;
  std::string db;
  std::string pr_body;
  std::string format = "text";
};

int run_review_command(const ReviewFlags& flags) {
  auto base = review::RepoTree::open(flags.base);
  if (!base) return report_error(Error(base.error().code(), "--base: " + base.error().message()));
  auto head = review::RepoTree::open(flags.head);
  if (!head) return report_error(Error(head.error().code(), "--head: " + head.error().message()));
  review::ReviewOptions options;
  options.changelog_path = flags.changelog;
  options.config_files = flags.config_files;
  if (flags.pr > 0) options.pr_number = flags.pr;
  options.results_dir = flags.results;
  options.db = flags.db;
  options.pr_body = flags.pr_body;
  auto result = review::run_review(*base, *head, options);
  if (!result) return report_error(result.error());
  const std::string text = flags.format == "json"       ? review::format_json(*result)
                           : flags.format == "markdown" ? review::format_markdown(*result)
                                                        : review::format_text(*result);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (!result->failed()) return kExitOk;
  return report_error(Error(ErrorCode::kInvalidArgument, "review found FAIL verdicts (above)"));
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* cmd = root.add_subcommand("review", "Mechanical review of a benchmark repository change (SPEC §11)");
  auto flags = std::make_shared<ReviewFlags>();
  cmd->add_option("--base", flags->base, "The repository before the change: a directory, or a git ref")->required();
  cmd->add_option("--head", flags->head, "The repository after the change: a directory, or a git ref")->required();
  cmd->add_option("--changelog", flags->changelog, "perf-changelog.yaml's path in the repository")
      ->capture_default_str();
  cmd->add_option("--config-files", flags->config_files, "Master configs' paths in the repository")
      ->expected(1, -1)
      ->capture_default_str();
  cmd->add_option("--pr", flags->pr, "The pull request the change is (new changelog entries may link it or use XXX)")
      ->check(CLI::Range(int64_t{1}, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--results", flags->results,
                  "A results folder (agg_*.json records, eval_*/ sets) for the evals and pareto checks");
  cmd->add_option("--db", flags->db,
                  "A results store (SQLite file or postgresql:// URL) for the evals and pareto checks");
  cmd->add_option("--pr-body", flags->pr_body, "The pull request's body (the CODEOWNER sign-off) for pr-template");
  cmd->add_option("--format", flags->format, "text, markdown (a PR comment) or json")
      ->check(CLI::IsMember({"text", "markdown", "json"}))
      ->capture_default_str();
  registry.on_run(cmd, [flags] { return run_review_command(*flags); });
}

}  // namespace

IX_REGISTER_COMMAND(review, setup);

}  // namespace ix::cli
