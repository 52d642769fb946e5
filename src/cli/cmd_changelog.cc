// `ixbench changelog check`: the perf-changelog.yaml gate (SPEC §3) between a base and a head,
// each a file or a git ref (docs/changelog.md).
#include <fmt/format.h>

#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "changelog/check.h"
#include "changelog/pr_link.h"
#include "changelog/source.h"
#include "cli/command.h"

namespace ix::cli {
namespace {

struct ChangelogCheckFlags {
  std::string base;
  std::string head;
  std::string path = changelog::kDefaultChangelogPath;
  int64_t pr = 0;
  std::string repo_url;
  std::string format = "text";
};

int run_changelog_check(const ChangelogCheckFlags& flags) {
  changelog::CheckOptions options;
  if (flags.pr > 0) options.pr_number = flags.pr;
  if (!flags.repo_url.empty()) options.repo_url = changelog::normalize_repo_url(flags.repo_url).value_or("");
  auto base = changelog::read_source(flags.base, flags.path);
  if (!base) return report_error(Error(base.error().code(), "--base: " + base.error().message()));
  auto head = changelog::read_source(flags.head, flags.path);
  if (!head) return report_error(Error(head.error().code(), "--head: " + head.error().message()));
  const auto report = changelog::check_change(*base, *head, options);
  const std::string text = flags.format == "json" ? changelog::format_json(report) : changelog::format_text(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (report.ok()) return kExitOk;
  return report_error(
      Error(ErrorCode::kInvalidArgument, fmt::format("perf-changelog check failed: {} problem(s) in {} -> {}",
                                                     report.findings.size(), base->label, head->label)));
}

CLI::Validator repo_url_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (changelog::normalize_repo_url(value)) return "";
        return "'" + value + "' is not a GitHub repository URL (https://github.com/<org>/<repo>)";
      },
      "URL");
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* group = find_or_add_group(root, "changelog", "perf-changelog.yaml tools");
  auto* cmd = group->add_subcommand("check", "Check a perf-changelog.yaml change against every gate rule (SPEC §3)");
  auto flags = std::make_shared<ChangelogCheckFlags>();
  cmd->add_option("--base", flags->base, "The changelog before the change: a file, or a git ref (read with git show)")
      ->required();
  cmd->add_option("--head", flags->head, "The changelog after the change: a file, or a git ref")->required();
  cmd->add_option("--path", flags->path, "The changelog's path inside the repository, for git refs")
      ->capture_default_str();
  cmd->add_option("--pr", flags->pr,
                  "The pull request the change belongs to (new entries may use its URL or XXX); absent: main")
      ->check(CLI::Range(int64_t{1}, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--repo-url", flags->repo_url,
                  "https://github.com/<org>/<repo>: pr-links must point at this repository (default: any GitHub "
                  "repository)")
      ->check(repo_url_validator());
  cmd->add_option("--format", flags->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  registry.on_run(cmd, [flags] { return run_changelog_check(*flags); });
}

}  // namespace

IX_REGISTER_COMMAND(changelog, setup);

}  // namespace ix::cli
