// `ixbench review`: mechanical checks over a benchmark repository's change (SPEC §11), each a
// verdict with file:line evidence and a one-line fix, printable as a pull-request comment.
//
// Checks (docs/review.md):
//   changelog-gate      the perf-changelog.yaml gate (SPEC §3) from base to head
//   changelog-coverage  every config key the change adds or edits is named by an appended entry
//   changelog-prose     new entries' image tags, digests and numbers agree with config and recipe
//   dead-knob           a variable a changed recipe exports that nothing in the repository reads
//                       (with the read variable whose name is closest, as a reviewer suggests)
//   golden-al           spec-decoding recipes force the golden acceptance length (SPEC §7)
//   engine-patch        recipes that patch the engine inside the image (git apply, patch, sed -i
//                       on site-packages, heredocs into site-packages, wheel / git installs)
//   precision-override  environment overrides that lower precision (a denylist kept as data)
//   evals               eval results in --results / --db above their thresholds (SPEC §8)
//   pareto              every curve in --results / --db has >= 5 frontier points (SPEC §10)
//   deprecated          no deprecated scenario or retired model comes back
//   upstream-image      vLLM / SGLang keys use upstream images
//   variant-lookup      multi-node model lookups resolve to the agentic entry
//   pr-template         the --pr-body sign-off is filled in
// Every check sees the same inputs (a ReviewInput); run_review composes them in this order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "review/repo_tree.h"
#include "review/scope.h"
#include "review/submission.h"

namespace ix::review {

enum class Verdict { kPass, kWarn, kFail, kNotApplicable };
std::string_view verdict_name(Verdict verdict);  // "PASS", "WARN", "FAIL", "N/A"

struct Evidence {
  std::string file;  // repository path (head unless the message says otherwise)
  int line = 0;      // 1-based; 0 = the file as a whole
  std::string message;
};

struct CheckResult {
  std::string id;
  std::string title;
  Verdict verdict = Verdict::kPass;
  std::string summary;  // one line: what was checked, or what is wrong
  std::vector<Evidence> evidence;
  std::string fix;  // one line; empty on PASS / N/A
};

// A check's result before its verdict (PASS, no evidence), and the N/A form with why.
CheckResult start_check(std::string id, std::string title);
CheckResult not_applicable(CheckResult check, std::string why);

// What a check's findings amount to: FAIL when one fails, else WARN when one warns.
struct Tally {
  bool fail = false;
  bool warn = false;
};
// The verdict of a check that gathered its evidence: PASS with `pass_summary` when there is none,
// else FAIL (or WARN) with "`fail_summary` (N)" and the fix.
CheckResult verdict_of(CheckResult result, Tally tally, std::string_view pass_summary, std::string_view fail_summary,
                       std::string fix);

struct ReviewOptions {
  std::string changelog_path = "perf-changelog.yaml";
  std::vector<std::string> config_files = {"configs/amd-master.yaml", "configs/nvidia-master.yaml"};
  std::optional<int64_t> pr_number;
  std::string results_dir;  // --results: agg_*.json records and eval_*/ sets ("" = none)
  std::string db;           // --db: a results store (SQLite path or postgresql:// URL; "" = none)
  std::string pr_body;      // --pr-body: the pull request's body / sign-off, a local file ("" = none)
};

// What every check reads: both revisions, what the change touches, the options, and what the
// submission hands in besides the change (--results, --db, --pr-body).
struct ReviewInput {
  const RepoTree& base;
  const RepoTree& head;
  const ChangeScope& scope;
  const ReviewOptions& options;
  const Submission& submission;
};

struct Review {
  std::string base_label;
  std::string head_label;
  std::vector<std::string> changed;
  std::vector<CheckResult> checks;
  bool failed() const;
};

Result<Review> run_review(const RepoTree& base, const RepoTree& head, const ReviewOptions& options);

// Each check over the change (review.cc composes them).
CheckResult check_changelog_gate(const ReviewInput& input);
CheckResult check_changelog_coverage(const ReviewInput& input);
CheckResult check_changelog_prose(const ReviewInput& input);
CheckResult check_dead_knobs(const ReviewInput& input);
CheckResult check_golden_al(const ReviewInput& input);
CheckResult check_engine_patches(const ReviewInput& input);
CheckResult check_precision_overrides(const ReviewInput& input);
CheckResult check_deprecated(const ReviewInput& input);
CheckResult check_upstream_images(const ReviewInput& input);
CheckResult check_variant_lookup(const ReviewInput& input);
CheckResult check_evals(const ReviewInput& input);
CheckResult check_pareto(const ReviewInput& input);
CheckResult check_pr_template(const ReviewInput& input);

std::string format_text(const Review& review);
std::string format_markdown(const Review& review);
std::string format_json(const Review& review);

}  // namespace ix::review
