#define PCRE2_CODE_UNIT_WIDTH 8
#include "eval/py_regex.h"

#include <fmt/format.h>
#include <pcre2.h>

namespace ix::eval {

struct PyRegex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

PyRegex::PyRegex(std::shared_ptr<const Code> code, std::string pattern, int groups)
    : code_(std::move(code)), pattern_(std::move(pattern)), groups_(groups) {}

Result<PyRegex> PyRegex::compile(std::string_view pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("regex '{}': {} at offset {}", pattern, reinterpret_cast<const char*>(message), offset));
  }
  uint32_t groups = 0;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &groups);
  auto owned = std::make_shared<Code>();
  owned->code = code;
  return PyRegex(std::move(owned), std::string(pattern), static_cast<int>(groups));
}

template <typename F>
void PyRegex::for_each_match(std::string_view subject, F&& on_match) const {
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  const auto* bytes = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t start = 0;
  while (start <= subject.size()) {
    const int rc = pcre2_match(code_->code, bytes, subject.size(), start, 0, data, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data);
    on_match(ov);
    if (ov[1] > ov[0]) {
      start = ov[1];
    } else {
      // An empty match: the next search starts one character later.
      if (ov[1] >= subject.size()) break;
      start = ov[1] + 1;
      while (start < subject.size() && (static_cast<unsigned char>(subject[start]) & 0xC0) == 0x80) ++start;
    }
  }
  pcre2_match_data_free(data);
}

std::vector<std::vector<std::string>> PyRegex::findall(std::string_view subject) const {
  std::vector<std::vector<std::string>> out;
  for_each_match(subject, [&](const PCRE2_SIZE* ov) {
    std::vector<std::string> groups;
    const int first = groups_ == 0 ? 0 : 1;
    for (int g = first; g <= groups_; ++g) {
      const PCRE2_SIZE a = ov[2 * g];
      const PCRE2_SIZE b = ov[2 * g + 1];
      groups.emplace_back(a == PCRE2_UNSET ? std::string_view{} : subject.substr(a, b - a));
    }
    out.push_back(std::move(groups));
  });
  return out;
}

std::string PyRegex::sub(std::string_view subject, std::string_view replacement) const {
  std::string out;
  size_t copied = 0;
  for_each_match(subject, [&](const PCRE2_SIZE* ov) {
    out.append(subject.substr(copied, ov[0] - copied));
    out.append(replacement);
    copied = ov[1];
  });
  out.append(subject.substr(copied));
  return out;
}

}  // namespace ix::eval
