// PostgreSQL backend: libpq, one connection. Statements are prepared server-side (unnamed after
// the first use would re-plan; each gets its own name) and parameters travel as text. Writers
// run in READ COMMITTED transactions; upserts (ON CONFLICT) make two sweeps inserting the same
// keys meet on the row instead of failing, and serialization failures (40001), deadlocks (40P01)
// and unique violations of a racing insert (23505) roll back and retry.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "store/backend.h"

#ifdef IXBENCH_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

namespace ix::store {

#ifndef IXBENCH_HAVE_LIBPQ

Result<std::unique_ptr<Backend>> open_postgres(const std::string& url) {
  return fail(ErrorCode::kUnsupported,
              fmt::format("{}: this ixbench was built without PostgreSQL support (libpq); use a SQLite --db, or "
                          "build with Debian's libpq-dev installed",
                          url));
}

#else

namespace {

bool is_retryable_state(const char* state) {
  if (state == nullptr) return false;
  const std::string_view code(state);
  return code == "40001" || code == "40P01" || code == "23505";
}

// `?` outside quotes → $1, $2, ...
std::string numbered_placeholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int next = 1;
  bool quoted = false;
  for (char c : sql) {
    if (c == '\'') quoted = !quoted;
    if (c == '?' && !quoted)
      out += fmt::format("${}", next++);
    else
      out += c;
  }
  return out;
}

class PgStatement final : public Statement {
 public:
  PgStatement(PGconn* conn, std::string name, bool* retry_flag, std::string where)
      : conn_(conn), name_(std::move(name)), retry_flag_(retry_flag), where_(std::move(where)) {}
  ~PgStatement() override {
    if (result_) PQclear(result_);
    // Deallocation is best effort: the connection may already be failing.
    PGresult* r = PQexec(conn_, ("DEALLOCATE " + name_).c_str());
    if (r) PQclear(r);
  }

  Result<void> bind(const std::vector<Value>& params) override {
    params_.clear();
    nulls_.clear();
    for (const auto& value : params) {
      nulls_.push_back(std::holds_alternative<std::monostate>(value));
      if (const auto* n = std::get_if<int64_t>(&value))
        params_.push_back(std::to_string(*n));
      else if (const auto* d = std::get_if<double>(&value))
        params_.push_back(fmt::format("{}", *d));
      else if (const auto* s = std::get_if<std::string>(&value))
        params_.push_back(*s);
      else
        params_.emplace_back();
    }
    executed_ = false;
    return {};
  }

  Result<bool> step() override {
    if (!executed_) {
      if (auto ok = execute(); !ok) return fail(ok.error());
      executed_ = true;
      row_ = 0;
    } else {
      ++row_;
    }
    return row_ < PQntuples(result_);
  }

  bool is_null(int column) const override { return PQgetisnull(result_, row_, column) != 0; }
  int64_t column_int(int column) const override { return std::strtoll(PQgetvalue(result_, row_, column), nullptr, 10); }
  double column_double(int column) const override { return std::strtod(PQgetvalue(result_, row_, column), nullptr); }
  std::string column_text(int column) const override {
    return std::string(PQgetvalue(result_, row_, column), PQgetlength(result_, row_, column));
  }

 private:
  Result<void> execute() {
    if (result_) PQclear(result_);
    std::vector<const char*> values;
    for (size_t i = 0; i < params_.size(); ++i) values.push_back(nulls_[i] ? nullptr : params_[i].c_str());
    result_ = PQexecPrepared(conn_, name_.c_str(), static_cast<int>(values.size()), values.data(), nullptr, nullptr, 0);
    const auto status = PQresultStatus(result_);
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) return {};
    *retry_flag_ = is_retryable_state(PQresultErrorField(result_, PG_DIAG_SQLSTATE));
    return fail(ErrorCode::kIo, fmt::format("{}: {}", where_, PQresultErrorMessage(result_)));
  }

  PGconn* conn_;
  std::string name_;
  bool* retry_flag_;
  std::string where_;
  std::vector<std::string> params_;
  std::vector<bool> nulls_;
  PGresult* result_ = nullptr;
  bool executed_ = false;
  int row_ = 0;
};

class PgBackend final : public Backend {
 public:
  PgBackend(PGconn* conn, std::string url) : conn_(conn), url_(std::move(url)) {}
  ~PgBackend() override { PQfinish(conn_); }

  Dialect dialect() const override { return Dialect::kPostgres; }
  std::string describe() const override { return url_; }

  Result<void> exec(std::string_view sql) override {
    const std::string text = dialect_sql(sql, Dialect::kPostgres);
    PGresult* result = PQexec(conn_, text.c_str());
    const auto status = PQresultStatus(result);
    Result<void> outcome;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      retry_ = is_retryable_state(PQresultErrorField(result, PG_DIAG_SQLSTATE));
      outcome = fail(ErrorCode::kIo, fmt::format("{}: {}", url_, PQresultErrorMessage(result)));
    }
    PQclear(result);
    return outcome;
  }

  Result<std::unique_ptr<Statement>> prepare(std::string_view sql) override {
    const std::string text = numbered_placeholders(dialect_sql(sql, Dialect::kPostgres));
    std::string name = fmt::format("ix_stmt_{}", next_statement_++);
    PGresult* result = PQprepare(conn_, name.c_str(), text.c_str(), 0, nullptr);
    const bool ok = PQresultStatus(result) == PGRES_COMMAND_OK;
    std::string message = ok ? "" : PQresultErrorMessage(result);
    if (!ok) retry_ = is_retryable_state(PQresultErrorField(result, PG_DIAG_SQLSTATE));
    PQclear(result);
    if (!ok) return fail(ErrorCode::kIo, fmt::format("{}: {} (in: {})", url_, message, text.substr(0, 120)));
    return std::make_unique<PgStatement>(conn_, std::move(name), &retry_, url_);
  }

  Result<void> transaction(const std::function<Result<void>()>& body) override {
    for (int attempt = 0;; ++attempt) {
      retry_ = false;
      auto outcome = exec("BEGIN");
      if (outcome) outcome = body();
      if (outcome) outcome = exec("COMMIT");
      if (outcome) return {};
      const bool retry = retry_;
      (void)exec("ROLLBACK");
      if (!retry || !retry_after_pause(attempt)) return outcome;
    }
  }

 private:
  PGconn* conn_;
  std::string url_;
  bool retry_ = false;
  int next_statement_ = 0;
};

}  // namespace

Result<std::unique_ptr<Backend>> open_postgres(const std::string& url) {
  PGconn* conn = PQconnectdb(url.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string reason = PQerrorMessage(conn);
    PQfinish(conn);
    // libpq's message spans lines ("...failed: ...\n\tIs the server running...?\n"): one line.
    while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ')) reason.pop_back();
    std::string line;
    for (char c : reason) {
      const bool space = c == '\n' || c == '\t';
      if (!space || (!line.empty() && line.back() != ' ')) line += space ? ' ' : c;
    }
    reason = std::move(line);
    return fail(ErrorCode::kUnavailable,
                fmt::format("cannot connect to the results database {}: {} (is the server running? "
                            "scripts/start-postgres.sh starts a local one)",
                            url, reason));
  }
  auto backend = std::make_unique<PgBackend>(conn, url);
  // Notices ("relation already exists, skipping") would go to stderr.
  if (auto ok = backend->exec("SET client_min_messages = warning"); !ok) return fail(ok.error());
  return std::unique_ptr<Backend>(std::move(backend));
}

#endif

}  // namespace ix::store
