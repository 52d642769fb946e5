#include "common/csv.h"

#include <fmt/format.h>

#include <optional>

namespace ix::csv {
namespace {

// The states of CPython's Modules/_csv.c reader (the ones the excel dialect reaches).
enum class State { kStartRecord, kStartField, kInField, kInQuotedField, kQuoteInQuotedField, kEatNewline };

constexpr char kDelimiter = ',';
constexpr char kQuote = '"';

// One reader pass: CPython feeds each physical line's characters, then an end-of-line mark.
class Parser {
 public:
  explicit Parser(const ReadOptions& options) : options_(options) {}

  // Feeds one character (nullopt: the end of a physical line). False: a field over the limit.
  bool feed(std::optional<char> c);
  bool record_done() const { return state_ == State::kStartRecord; }
  bool has_partial() const { return !field_.empty() || state_ == State::kInQuotedField; }
  void save_field() {
    fields_.push_back(std::move(field_));
    field_.clear();
  }
  std::vector<std::string> take() {
    std::vector<std::string> out = std::move(fields_);
    fields_.clear();
    field_.clear();
    state_ = State::kStartRecord;
    return out;
  }

 private:
  bool add(char c) {
    field_ += c;
    return field_.size() <= kCsvFieldLimit;
  }
  void end_field_at(std::optional<char> c) {
    save_field();
    state_ = c ? State::kEatNewline : State::kStartRecord;
  }
  bool start_field(std::optional<char> c);

  ReadOptions options_;
  State state_ = State::kStartRecord;
  std::string field_;
  std::vector<std::string> fields_;
};

bool is_newline(std::optional<char> c) {
  return !c || *c == '\n' || *c == '\r';
}

bool Parser::start_field(std::optional<char> c) {
  if (is_newline(c)) {
    end_field_at(c);
  } else if (*c == kQuote) {
    state_ = State::kInQuotedField;
  } else if (*c == ' ' && options_.skip_initial_space) {
  } else if (*c == kDelimiter) {
    save_field();
  } else {
    state_ = State::kInField;
    return add(*c);
  }
  return true;
}

bool Parser::feed(std::optional<char> c) {
  switch (state_) {
    case State::kStartRecord:
      if (!c) return true;  // an empty line: an empty record
      if (*c == '\n' || *c == '\r') {
        state_ = State::kEatNewline;
        return true;
      }
      state_ = State::kStartField;
      return start_field(c);
    case State::kStartField: return start_field(c);
    case State::kInField:
      if (is_newline(c)) {
        end_field_at(c);
      } else if (*c == kDelimiter) {
        save_field();
        state_ = State::kStartField;
      } else {
        return add(*c);
      }
      return true;
    case State::kInQuotedField:
      if (!c) return true;
      if (*c == kQuote) {
        state_ = State::kQuoteInQuotedField;
        return true;
      }
      return add(*c);
    case State::kQuoteInQuotedField:
      if (c && *c == kQuote) {
        state_ = State::kInQuotedField;
        return add(*c);
      }
      if (c && *c == kDelimiter) {
        save_field();
        state_ = State::kStartField;
      } else if (is_newline(c)) {
        end_field_at(c);
      } else {
        state_ = State::kInField;
        return add(*c);
      }
      return true;
    case State::kEatNewline:
      if (!c) state_ = State::kStartRecord;
      return true;
  }
  return true;
}

// The length of the physical line starting at `begin`, its terminator included (\n, \r or \r\n,
// as a file opened with newline="" splits lines).
size_t line_length(std::string_view text, size_t begin) {
  size_t end = text.find_first_of("\r\n", begin);
  if (end == std::string_view::npos) return text.size() - begin;
  if (text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n') ++end;
  return end + 1 - begin;
}

}  // namespace

Result<std::vector<Record>> read_records(std::string_view text, const ReadOptions& options) {
  std::vector<Record> records;
  Parser parser(options);
  size_t line = 0;
  size_t record_line = 1;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = line_length(text, pos);
    ++line;
    if (parser.record_done()) record_line = line;
    for (char c : text.substr(pos, length)) {
      if (!parser.feed(c))
        return fail(ErrorCode::kParse, fmt::format("line {}: a field longer than {} characters (the CSV field limit)",
                                                   record_line, kCsvFieldLimit));
    }
    parser.feed(std::nullopt);
    pos += length;
    if (parser.record_done()) records.push_back({record_line, parser.take()});
  }
  // The text ended inside a quoted field: CPython's non-strict reader ends the field there (any
  // other unfinished record it drops, but the end-of-line mark leaves none).
  if (!parser.record_done() && parser.has_partial()) {
    parser.save_field();
    records.push_back({record_line, parser.take()});
  }
  return records;
}

}  // namespace ix::csv
