#include "common/error.h"

namespace ix {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kParse: return "parse error";
    case ErrorCode::kIo: return "I/O error";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown";
}

Error Error::with_context(std::string_view context) const& {
  return Error(code_, std::string(context) + ": " + message_);
}

Error Error::with_context(std::string_view context) && {
  message_.insert(0, std::string(context) + ": ");
  return std::move(*this);
}

std::string Error::to_string() const {
  return std::string(error_code_name(code_)) + ": " + message_;
}

}  // namespace ix
