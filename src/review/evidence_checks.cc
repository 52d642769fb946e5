// Checks over what the submission hands in besides the change (review/submission.h): its evals
// against the head's thresholds, its Pareto coverage, and the CODEOWNER sign-off.
#include <fmt/format.h>

#include <boost/json.hpp>

#include "config/eval_thresholds.h"
#include "eval/check_command.h"
#include "metrics/pareto.h"
#include "review/review.h"
#include "review/text.h"

namespace ix::review {
namespace {

namespace bj = boost::json;

// InferenceX's thresholds (SPEC §8), read from head; without the file every task needs 0.85.
constexpr const char* kThresholdsFile = "utils/evals/thresholds.yaml";
constexpr double kDefaultMinScore = 0.85;

// Head's thresholds; none (every task at kDefaultMinScore) without the file.
Result<config::EvalThresholds> head_thresholds(const RepoTree& head) {
  const auto& text = head.read(kThresholdsFile);
  if (!text) return config::EvalThresholds{};
  return config::parse_eval_thresholds(*text, kThresholdsFile);
}

// The two kinds of curve (tests/data/review/README.md, `pareto`): the fields that make one curve
// (not spec method, TP or KV tier) and its axes, named as the agg record names them.
struct CurveKind {
  bool agentic = false;
  std::string x;  // E2EL: median, or the run's P90 for agentic
  std::string y;  // total throughput per GPU
  std::vector<std::string> group_by;
};

const std::vector<CurveKind>& curve_kinds() {
  static const std::vector<CurveKind> kinds = {
      {false,
       "median_e2el",
       "tput_per_gpu",
       {"infmax_model_prefix", "isl", "osl", "hw", "precision", "framework", "image"}},
      {true,
       "request_metrics.latency.e2el.p90",
       "request_metrics.throughput.per_gpu.total_tput_tps",
       {"infmax_model_prefix", "scenario", "hw", "precision", "framework", "image"}},
  };
  return kinds;
}

// A record as pareto_curves reads it: its curve identity, and the two axes where measured.
bj::object curve_point(const store::ResultRecord& r, const CurveKind& kind) {
  bj::object point{{"infmax_model_prefix", r.model_prefix.empty() ? r.model : r.model_prefix},
                   {"scenario", store::scenario_name(r.scenario)},
                   {"isl", r.isl},
                   {"osl", r.osl},
                   {"hw", r.hw},
                   {"precision", r.precision},
                   {"framework", r.framework},
                   {"image", r.image}};
  if (const auto x = kind.agentic ? r.p90_e2el : r.median_e2el) point[kind.x] = *x;
  if (r.tput_per_gpu) point[kind.y] = *r.tput_per_gpu;
  return point;
}

// One curve's coverage findings: the curve (fewer than 5 frontier points, or any dropped), and
// each dropped point at its record. `records[i]` is the submission record of the curve's point i.
void report_curve(const metrics::ParetoCurve& curve, const std::vector<const SubmittedRecord*>& records,
                  CheckResult& result) {
  const size_t first = curve.points.empty() ? curve.dropped.front().record : curve.points.front().record;
  result.evidence.push_back(
      {records[first]->origin, 0,
       fmt::format("curve {}: {}{}", curve.key, metrics::coverage_text(curve),
                   curve.frontier.size() < metrics::kMinFrontierPoints
                       ? fmt::format(" (fewer than {} on the frontier)", metrics::kMinFrontierPoints)
                       : "")});
  for (const auto& dropped : curve.dropped) {
    const SubmittedRecord& record = *records[dropped.record];
    result.evidence.push_back(
        {record.source, 0,
         fmt::format("conc {} dropped from curve {}: {}", record.record.conc, curve.key, dropped.why)});
  }
}

// The Additional detail section's placeholder line when the section holds nothing else (the
// section runs from its heading to the next heading or the `Signed:` line), else 0.
int placeholder_only_details(std::string_view body) {
  constexpr std::string_view kHeading = "Additional detail section";
  constexpr std::string_view kPlaceholder = "insert any additional info here";
  const int heading = line_holding(body, kHeading);
  if (heading == 0) return 0;
  int placeholder = 0;
  bool other = false, ended = false;
  for_each_line(body, [&](int number, std::string_view line) {
    if (ended || number <= heading) return;
    std::string_view text = line;
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '-' || text.front() == '*'))
      text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
    if (text.starts_with("#") || text.starts_with("Signed")) {
      ended = true;
    } else if (text == kPlaceholder) {
      placeholder = placeholder == 0 ? number : placeholder;
    } else if (!text.empty()) {
      other = true;
    }
  });
  return other ? 0 : placeholder;
}

}  // namespace

CheckResult check_evals(const ReviewInput& input) {
  CheckResult result = start_check("evals", "Evals pass their thresholds");
  const auto& sets = input.submission.eval_sets;
  if (sets.empty()) return not_applicable(std::move(result), "no eval set in --results or --db");
  auto thresholds = head_thresholds(input.head);
  if (!thresholds) {
    result.verdict = Verdict::kFail;
    result.summary = fmt::format("{} does not parse: no threshold to check against", kThresholdsFile);
    result.evidence.push_back({kThresholdsFile, 0, thresholds.error().message()});
    result.fix = "fix the thresholds file (default.<task>, models.<prefix>.<task> minimum scores)";
    return result;
  }
  eval::EvalCheckOptions options;
  options.min_score = kDefaultMinScore;
  int checked = 0;
  for (const auto& set : sets) {
    const auto report = eval::check_eval_results(set.results, *thresholds, options);
    checked += report.checked;
    for (const auto& line : report.lines) {
      if (!line.passed) result.evidence.push_back({line.file.empty() ? set.source : line.file, 0, line.text});
    }
  }
  const std::string against = input.head.has(kThresholdsFile)
                                  ? std::string(kThresholdsFile)
                                  : fmt::format("{} for every task: head has no {}", kDefaultMinScore, kThresholdsFile);
  if (result.evidence.empty()) {
    result.summary =
        fmt::format("{} score(s) of {} eval set(s) meet their thresholds ({})", checked, sets.size(), against);
    return result;
  }
  result.verdict = Verdict::kFail;
  result.summary = fmt::format("eval results below their thresholds or incomplete ({}; thresholds: {})",
                               result.evidence.size(), against);
  result.fix =
      "fix the config or rerun the evals until every exact_match score of every concurrency meets its threshold";
  return result;
}

CheckResult check_pareto(const ReviewInput& input) {
  CheckResult result = start_check("pareto", "Pareto curves have 5 frontier points");
  const auto& submitted = input.submission.records;
  if (submitted.empty()) return not_applicable(std::move(result), "no agg record in --results or --db");
  size_t curves = 0, short_curves = 0;
  std::vector<std::string> covered;
  for (const auto& kind : curve_kinds()) {
    std::vector<bj::object> points;
    std::vector<const SubmittedRecord*> records;
    for (const auto& s : submitted) {
      if ((s.record.scenario == store::Scenario::kAgentic) != kind.agentic) continue;
      points.push_back(curve_point(s.record, kind));
      records.push_back(&s);
    }
    for (const auto& curve : metrics::pareto_curves(points, kind.x, kind.y, kind.group_by)) {
      ++curves;
      if (curve.pass()) {
        covered.push_back(metrics::coverage_text(curve));
        continue;
      }
      ++short_curves;
      report_curve(curve, records, result);
    }
  }
  if (short_curves == 0) {
    result.summary = fmt::format("{} curve(s), each with >= {} frontier points and none dropped: {}", curves,
                                 metrics::kMinFrontierPoints, fmt::join(covered, "; "));
    return result;
  }
  result.verdict = Verdict::kWarn;
  result.summary = fmt::format("{} of {} curve(s) below coverage (>= {} frontier points, none dropped)", short_curves,
                               curves, metrics::kMinFrontierPoints);
  result.fix =
      "measure more concurrencies (and rerun failed points) until the curve has 5 frontier points; below 5, tag a core "
      "maintainer for the recorded admin bypass";
  return result;
}

CheckResult check_pr_template(const ReviewInput& input) {
  CheckResult result = start_check("pr-template", "The CODEOWNER sign-off is filled in");
  if (!input.submission.pr_body) return not_applicable(std::move(result), "no --pr-body given");
  constexpr std::string_view kOpening = "As a PR reviewer and CODEOWNER, I have reviewed this and have";
  constexpr std::string_view kUnsigned = "FILL_IN_GITHUB_USERNAME";
  const std::string& body = *input.submission.pr_body;
  const std::string& file = input.options.pr_body;
  if (line_holding(body, kOpening) == 0)
    result.evidence.push_back(
        {file, 1, fmt::format("the sign-off does not open with the checklist's '{}:'", kOpening)});
  if (const int line = placeholder_only_details(body); line > 0)
    result.evidence.push_back({file, line,
                               "the Additional detail section holds only the template's 'insert any additional info "
                               "here'"});
  for_each_line(body, [&](int number, std::string_view line) {
    if (line.find(kUnsigned) != std::string_view::npos)
      result.evidence.push_back({file, number, fmt::format("the sign-off is still signed {}", kUnsigned)});
  });
  if (result.evidence.empty()) {
    result.summary = "the sign-off opens with the checklist, fills in the additional details and is signed";
    return result;
  }
  result.verdict = Verdict::kFail;
  result.summary = fmt::format("the CODEOWNER sign-off is not filled in ({})", result.evidence.size());
  result.fix =
      "post PR_REVIEW_CHECKLIST.md's template filled in: its opening sentence, the additional details (draft "
      "precision, waivers, upstream recipe links), your GitHub user name";
  return result;
}

}  // namespace ix::review
