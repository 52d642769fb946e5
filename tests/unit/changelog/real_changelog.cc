#include "real_changelog.h"

#include <functional>
#include <map>
#include <stdexcept>
#include <vector>

namespace ix::changelog::testing {
namespace {

// The entry a change appends (the seed: an AgentX entry, first inserted mid-file).
std::string new_entry(const std::string& pr_link) {
  return "- config-keys:\n"
         "    - dsv4-fp4-mi355x-atom-agentic-mtp\n"
         "  scenario-type:\n"
         "    - agentic-coding\n"
         "  description:\n"
         "    - \"Add the DeepSeek-V4-Pro FP4 MI355X ATOM AgentX MTP config\"\n"
         "  pr-link: " +
         pr_link + "\n";
}

const std::string kRepo = "https://github.com/SemiAnalysisAI/InferenceX";
const std::string kNew = new_entry(kRepo + "/pull/2700");
const std::string kSecond =
    "- config-keys:\n    - dsv4-fp4-mi355x-sglang-agentic-mtp\n  description:\n"
    "    - \"Second new entry\"\n  pr-link: " +
    kRepo + "/pull/2700\n";

struct Real {
  const std::string& text;
  std::vector<size_t> starts;  // offsets of the `- config-keys:` lines

  explicit Real(const std::string& real_text) : text(real_text) {
    if (text.starts_with("- config-keys:")) starts.push_back(0);
    for (size_t at = text.find("\n- config-keys:"); at != std::string::npos;
         at = text.find("\n- config-keys:", at + 1)) {
      starts.push_back(at + 1);
    }
  }
  // The first n entries, ending with the last one's final line and one '\n'.
  std::string first(size_t n) const {
    std::string cut = n < starts.size() ? text.substr(0, starts[n]) : text;
    while (cut.ends_with("\n\n")) cut.pop_back();
    return cut;
  }
  size_t line_offset(const std::string& needle) const {
    const size_t at = text.find(needle);
    if (at == std::string::npos) throw std::runtime_error("the real changelog lacks " + needle);
    return text.rfind('\n', at) + 1;
  }
};

std::string replace_line(const std::string& text, size_t line_start, const std::string& line) {
  const size_t end = text.find('\n', line_start);
  return text.substr(0, line_start) + line + text.substr(end);
}

std::string crlf(std::string text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return out;
}

// Line 5598 of the real file: an entry merged with the placeholder link.
std::string corrected(const Real& r, const std::string& link) {
  return replace_line(r.text, r.line_offset("/pull/XXX\n"), "  pr-link: " + link);
}

// A byte inside the description of entry 100.
std::string history_edited(const Real& r) {
  std::string text = r.text;
  const size_t description = text.find("  description:\n", r.starts[99]);
  text[description + 16 + 7] = 'X';
  return text;
}

using Builder = std::function<CaseFiles(const Real&)>;

const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> all = {
      {"append",
       [](const Real& r) {
         return CaseFiles{r.first(r.starts.size() - 1), r.text};
       }},
      {"self",
       [](const Real& r) {
         return CaseFiles{r.text, r.text};
       }},
      {"append-two",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + kNew + "\n" + kSecond};
       }},
      {"insert-mid",
       [](const Real& r) {
         const size_t at = r.starts[r.starts.size() - 6];
         return CaseFiles{r.text, r.text.substr(0, at) + kNew + "\n" + r.text.substr(at)};
       }},
      {"byte-changed",
       [](const Real& r) {
         return CaseFiles{r.text, history_edited(r) + "\n" + kNew};
       }},
      {"history-edit-only",
       [](const Real& r) {
         return CaseFiles{r.text, history_edited(r)};
       }},
      {"tbd-link",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + new_entry(kRepo + "/pull/TBD")};
       }},
      {"tbd-link-other-host",
       [](const Real& r) {
         return CaseFiles{
             r.text,
             r.text + "\n" + new_entry("https://github.meowingcats01.workers.dev/SemiAnalysisAI/InferenceX/pull/TBD")};
       }},
      {"tbd-bare",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + new_entry("TBD")};
       }},
      {"placeholder",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + new_entry("XXX")};
       }},
      {"placeholder-url",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + new_entry(kRepo + "/pull/XXX")};
       }},
      {"other-pr",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + new_entry(kRepo + "/pull/2699")};
       }},
      {"other-repo",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + new_entry("https://github.com/someone/InferenceX/pull/12")};
       }},
      {"two-blank-lines",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n\n" + kNew};
       }},
      {"missing-blank-line",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + kNew};
       }},
      {"two-appended-no-blank",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + kNew + kSecond};
       }},
      {"two-appended-two-blanks",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + kNew + "\n\n" + kSecond};
       }},
      {"crlf",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + crlf("\n" + kNew)};
       }},
      {"tab",
       [](const Real& r) {
         std::string entry = kNew;
         entry.replace(entry.find("Add the"), 3, "Add\tthe");
         return CaseFiles{r.text, r.text + "\n" + entry};
       }},
      {"no-final-newline",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + kNew.substr(0, kNew.size() - 1)};
       }},
      {"double-final-newline",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + kNew + "\n"};
       }},
      {"duplicate-key",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n" + kNew + "  pr-link: XXX\n"};
       }},
      {"trailing-text",
       [](const Real& r) {
         return CaseFiles{r.text, r.text + "\n# more to come\n"};
       }},
      {"deleted-entry",
       [](const Real& r) {
         return CaseFiles{r.text, r.text.substr(0, r.starts[9]) + r.text.substr(r.starts[10])};
       }},
      {"correction",
       [](const Real& r) {
         return CaseFiles{r.text, corrected(r, kRepo + "/pull/2290")};
       }},
      {"correction-mixed",
       [](const Real& r) {
         return CaseFiles{r.text, corrected(r, kRepo + "/pull/2290") + "\n" + kNew};
       }},
      {"correction-not-canonical",
       [](const Real& r) {
         return CaseFiles{r.text, corrected(r, "TBD")};
       }},
      {"correction-formatting-only",
       [](const Real& r) {
         return CaseFiles{r.text,
                          replace_line(r.text, r.line_offset("/pull/1311  \n"), "  pr-link: " + kRepo + "/pull/1311")};
       }},
      {"correction-adds-line",
       [](const Real& r) {
         return CaseFiles{
             r.text, replace_line(r.text, r.line_offset("/pull/XXX\n"), "  pr-link:\n    " + kRepo + "/pull/2290")};
       }},
  };
  return all;
}

}  // namespace

std::optional<CaseFiles> build_real_case(const std::string& name, const std::string& real_text) {
  const auto found = builders().find(name);
  if (found == builders().end()) return std::nullopt;
  return found->second(Real(real_text));
}

}  // namespace ix::changelog::testing
