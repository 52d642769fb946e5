// Cases built from InferenceX's real perf-changelog.yaml (../shared/data/inferencex/): the file
// cut at entry boundaries and mutated the ways real changes went wrong. A case directory under
// tests/data/changelog/ names its mutation in a file `real`; its expected.txt is committed.
#pragma once

#include <optional>
#include <string>

namespace ix::changelog::testing {

struct CaseFiles {
  std::string base;
  std::string head;
};

// The base and head of mutation `name` of the real file's text; nullopt for an unknown name.
std::optional<CaseFiles> build_real_case(const std::string& name, const std::string& real_text);

}  // namespace ix::changelog::testing
