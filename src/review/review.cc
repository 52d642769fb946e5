#include "review/review.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>

namespace ix::review {
namespace {

namespace bj = boost::json;

std::string where(const Evidence& evidence) {
  return evidence.line > 0 ? fmt::format("{}:{}", evidence.file, evidence.line) : evidence.file;
}

size_t count(const Review& review, Verdict verdict) {
  return static_cast<size_t>(std::count_if(review.checks.begin(), review.checks.end(),
                                           [&](const CheckResult& c) { return c.verdict == verdict; }));
}

std::string totals(const Review& review) {
  return fmt::format("{} FAIL, {} WARN, {} PASS, {} N/A", count(review, Verdict::kFail), count(review, Verdict::kWarn),
                     count(review, Verdict::kPass), count(review, Verdict::kNotApplicable));
}

}  // namespace

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass: return "PASS";
    case Verdict::kWarn: return "WARN";
    case Verdict::kFail: return "FAIL";
    case Verdict::kNotApplicable: break;
  }
  return "N/A";
}

CheckResult start_check(std::string id, std::string title) {
  CheckResult check;
  check.id = std::move(id);
  check.title = std::move(title);
  return check;
}

CheckResult not_applicable(CheckResult check, std::string why) {
  check.verdict = Verdict::kNotApplicable;
  check.summary = std::move(why);
  check.evidence.clear();
  check.fix.clear();
  return check;
}

CheckResult verdict_of(CheckResult result, Tally tally, std::string_view pass_summary, std::string_view fail_summary,
                       std::string fix) {
  if (result.evidence.empty()) {
    result.verdict = Verdict::kPass;
    result.summary = std::string(pass_summary);
    return result;
  }
  result.verdict = tally.fail ? Verdict::kFail : Verdict::kWarn;
  result.summary = fmt::format("{} ({})", fail_summary, result.evidence.size());
  result.fix = std::move(fix);
  return result;
}

bool Review::failed() const {
  return count(*this, Verdict::kFail) > 0;
}

Result<Review> run_review(const RepoTree& base, const RepoTree& head, const ReviewOptions& options) {
  auto scope = compute_scope(base, head, options);
  if (!scope) return std::unexpected(scope.error());
  auto submission = read_submission(options);
  if (!submission) return std::unexpected(submission.error());
  const ReviewInput input{base, head, *scope, options, *submission};
  using Check = CheckResult (*)(const ReviewInput&);
  // One check a line, in the order the review prints them.
  // clang-format off
  static constexpr Check kChecks[] = {
      check_changelog_gate,
      check_changelog_coverage,
      check_changelog_prose,
      check_dead_knobs,
      check_golden_al,
      check_engine_patches,
      check_precision_overrides,
      check_evals,
      check_pareto,
      check_deprecated,
      check_upstream_images,
      check_variant_lookup,
      check_pr_template,
  };
  // clang-format on
  Review review{base.label(), head.label(), scope->changed, {}};
  for (const Check check : kChecks) review.checks.push_back(check(input));
  return review;
}

std::string format_text(const Review& review) {
  std::string out =
      fmt::format("review {} -> {}: {} file(s) changed\n", review.base_label, review.head_label, review.changed.size());
  for (const auto& check : review.checks) {
    out += fmt::format("{:<4} {:<19} {}\n", verdict_name(check.verdict), check.id, check.summary);
    for (const auto& evidence : check.evidence)
      out += fmt::format("       {}: {}\n", where(evidence), evidence.message);
    if (!check.fix.empty()) out += fmt::format("       fix: {}\n", check.fix);
  }
  out += totals(review) + "\n";
  return out;
}

std::string format_markdown(const Review& review) {
  std::string out = fmt::format(
      "### ixbench review: {}\n\n`{}` → `{}`, {} file(s) changed\n\n| check | verdict | "
      "summary |\n|---|---|---|\n",
      totals(review), review.base_label, review.head_label, review.changed.size());
  for (const auto& check : review.checks)
    out += fmt::format("| {} | **{}** | {} |\n", check.title, verdict_name(check.verdict), check.summary);
  for (const auto& check : review.checks) {
    if (check.evidence.empty()) continue;
    out += fmt::format("\n**{}** ({})\n\n", check.title, verdict_name(check.verdict));
    for (const auto& evidence : check.evidence) out += fmt::format("- `{}`: {}\n", where(evidence), evidence.message);
    if (!check.fix.empty()) out += fmt::format("\nFix: {}\n", check.fix);
  }
  return out;
}

std::string format_json(const Review& review) {
  bj::array checks;
  for (const auto& check : review.checks) {
    bj::array evidence;
    for (const auto& e : check.evidence)
      evidence.push_back(bj::object{{"file", e.file}, {"line", e.line}, {"message", e.message}});
    checks.push_back(bj::object{{"id", check.id},
                                {"title", check.title},
                                {"verdict", verdict_name(check.verdict)},
                                {"summary", check.summary},
                                {"evidence", evidence},
                                {"fix", check.fix}});
  }
  bj::array changed;
  for (const auto& path : review.changed) changed.emplace_back(path);
  bj::object out{{"base", review.base_label},
                 {"head", review.head_label},
                 {"failed", review.failed()},
                 {"changed", changed},
                 {"checks", checks}};
  return bj::serialize(out) + "\n";
}

}  // namespace ix::review
