#include <fmt/format.h>

#include <boost/json.hpp>

#include "changelog/check.h"

namespace ix::changelog {

std::string format_text(const CheckReport& report) {
  std::string out;
  for (const auto& finding : report.findings) {
    const std::string where =
        finding.line > 0 ? fmt::format("{}:{}:{}", finding.file, finding.line, finding.column) : finding.file;
    out += fmt::format("{}: {}: {}\n  fix: {}\n", where, finding.rule, finding.message, finding.fix);
  }
  if (!report.ok()) {
    out += fmt::format("failed: {} problem(s)\n", report.findings.size());
  } else if (report.corrections > 0) {
    out += fmt::format("ok: {} entries ({} appended, {} pr-link correction(s))\n", report.head_entries, report.appended,
                       report.corrections);
  } else {
    out += fmt::format("ok: {} entries ({} appended)\n", report.head_entries, report.appended);
  }
  return out;
}

std::string format_json(const CheckReport& report) {
  boost::json::array findings;
  for (const auto& finding : report.findings) {
    findings.push_back(boost::json::object{{"rule", finding.rule},
                                           {"severity", finding.severity},
                                           {"file", finding.file},
                                           {"line", finding.line},
                                           {"column", finding.column},
                                           {"message", finding.message},
                                           {"fix", finding.fix}});
  }
  boost::json::object root{
      {"ok", report.ok()},           {"base_entries", report.base_entries}, {"head_entries", report.head_entries},
      {"appended", report.appended}, {"corrections", report.corrections},   {"findings", std::move(findings)}};
  return boost::json::serialize(root) + "\n";
}

}  // namespace ix::changelog
