// `ixbench plan`: the sweep a perf-changelog.yaml change triggers (SPEC §3, docs/changelog.md):
// the appended entries' config keys through the sweep planner, bucketed as InferenceX's
// process_changelog.py buckets them, with recipe fingerprints. `--format matrix` prints exactly
// what that script prints (what run-sweep.yml's matrix consumes; `ixbench run --plan` runs it).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "changelog/check.h"
#include "changelog/plan.h"
#include "changelog/source.h"
#include "cli/command.h"
#include "common/file_io.h"

namespace ix::cli {
namespace {

namespace fs = std::filesystem;

struct PlanFlags {
  std::string base;
  std::string head;
  std::string path = changelog::kDefaultChangelogPath;
  std::vector<std::string> config_files;
  std::string runner_config = "configs/runners.yaml";
  bool trim_conc = false;
  bool all_evals = false;
  bool evals_only = false;
  std::string format = "text";
};

// The appended entries, once the change passes the gate's rules (pr-links aside: planning happens
// before a pull request has its number).
Result<std::vector<changelog::Entry>> appended_entries(const PlanFlags& flags, std::string& label) {
  auto base = changelog::read_source(flags.base, flags.path);
  if (!base) return fail(base.error().code(), "--base: " + base.error().message());
  auto head = changelog::read_source(flags.head, flags.path);
  if (!head) return fail(head.error().code(), "--head: " + head.error().message());
  label = head->label;
  auto report = changelog::check_change(*base, *head, {});
  std::erase_if(report.findings, [](const changelog::Finding& f) { return f.rule == "pr-link"; });
  if (!report.ok()) {
    const std::string text = changelog::format_text(report);
    std::fwrite(text.data(), 1, text.size(), stderr);
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("{} -> {} does not pass the changelog gate (above); fix it first (`ixbench changelog "
                            "check` explains each rule)",
                            base->label, head->label));
  }
  return std::move(report.appended_entries);
}

Result<changelog::NamedText> read_named(const std::string& path, std::string_view what) {
  auto text = files::read_text_file(path, files::kMaxResultFileBytes, what);
  if (!text) return std::unexpected(text.error());
  return changelog::NamedText{path, std::move(*text)};
}

// A working-tree path as `git show REF:./path` names it.
std::string ref_path(const std::string& path) {
  fs::path p(path);
  if (p.is_absolute()) p = p.lexically_relative(fs::current_path());
  return "./" + p.lexically_normal().string();
}

Result<changelog::NamedText> read_at(const std::string& ref, const std::string& path) {
  auto text = changelog::read_at_ref(ref, ref_path(path));
  if (!text) return std::unexpected(text.error());
  return changelog::NamedText{ref + ":" + path, std::move(*text)};
}

// The master configs and runners.yaml of the working tree, or (for append-only entries) at --base.
Result<changelog::ConfigSnapshot> snapshot(const PlanFlags& flags, const std::string* ref, bool with_trees) {
  std::vector<changelog::NamedText> configs;
  for (const auto& file : flags.config_files) {
    auto text = ref ? read_at(*ref, file) : read_named(file, "a master config");
    if (!text) return std::unexpected(text.error());
    configs.push_back(std::move(*text));
  }
  auto runners = ref ? read_at(*ref, flags.runner_config) : read_named(flags.runner_config, "runners.yaml");
  if (!runners) return std::unexpected(runners.error());
  return changelog::load_snapshot(ref ? "the base (" + *ref + ")" : std::string("the head"), configs, *runners,
                                  with_trees);
}

int run_plan(const PlanFlags& flags) {
  std::string label;
  auto entries = appended_entries(flags, label);
  if (!entries) return report_error(entries.error());
  // Append-only entries compare the configs at --base with the working tree's: --base must be a ref.
  const bool append_only = changelog::needs_base_configs(*entries) && !fs::is_regular_file(flags.base);
  auto head = snapshot(flags, nullptr, append_only);
  if (!head) return report_error(head.error());
  std::optional<changelog::ConfigSnapshot> base;
  if (append_only) {
    auto read = snapshot(flags, &flags.base, true);
    if (!read) return report_error(read.error());
    base = std::move(*read);
  }
  changelog::PlanOptions options{flags.trim_conc, flags.all_evals, flags.evals_only, label, flags.base, flags.head};
  auto plan = changelog::plan_entries(*entries, *head, base ? &*base : nullptr, options);
  if (!plan) return report_error(plan.error());
  const std::string text =
      flags.format == "matrix" ? changelog::render_plan_matrix(*plan) : changelog::render_plan_text(*plan);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* cmd = root.add_subcommand("plan", "The sweep rows a perf-changelog.yaml change triggers (SPEC §3)");
  auto flags = std::make_shared<PlanFlags>();
  cmd->add_option("--base,--base-ref", flags->base, "The changelog before the change: a file, or a git ref")
      ->required();
  cmd->add_option("--head,--head-ref", flags->head, "The changelog after the change: a file, or a git ref")->required();
  cmd->add_option("--path,--changelog-file", flags->path, "The changelog's path inside the repository, for git refs")
      ->capture_default_str();
  cmd->add_option("--config-files", flags->config_files, "Master config YAML files (the working tree's)")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--runner-config", flags->runner_config, "runners.yaml")->capture_default_str();
  cmd->add_flag("--trim-conc", flags->trim_conc, "One concurrency per recipe (the lowest), as for a PR's quick check");
  cmd->add_flag("--all-evals", flags->all_evals, "Every entry expands its eval selection (as all-evals: true)");
  cmd->add_flag("--evals-only", flags->evals_only, "Eval rows only, for every entry (as evals-only: true)");
  cmd->add_option("--format", flags->format, "text (for people) or matrix (process_changelog.py's JSON)")
      ->check(CLI::IsMember({"text", "matrix"}))
      ->capture_default_str();
  registry.on_run(cmd, [flags] { return run_plan(*flags); });
}

}  // namespace

IX_REGISTER_COMMAND(plan, setup);

}  // namespace ix::cli
