// SQLite backend: the sqlite3 C API. Concurrent writers (two `ixbench ingest` processes) are
// serialized by SQLite's write lock: WAL lets readers go on while one writes, busy_timeout waits
// for the lock inside SQLite, and transaction() retries whatever still comes back SQLITE_BUSY.
#include <fmt/format.h>
#include <sqlite3.h>

#include <memory>
#include <string>

#include "store/backend.h"

namespace ix::store {
namespace {

constexpr int kBusyTimeoutMs = 10000;

bool is_busy(int rc) {
  const int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

class SqliteStatement final : public Statement {
 public:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt, bool* busy_flag, std::string where)
      : db_(db), stmt_(stmt), busy_flag_(busy_flag), where_(std::move(where)) {}
  ~SqliteStatement() override { sqlite3_finalize(stmt_); }

  Result<void> bind(const std::vector<Value>& params) override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    if (static_cast<int>(params.size()) != sqlite3_bind_parameter_count(stmt_))
      return fail(ErrorCode::kInternal, fmt::format("{}: {} parameters bound, the statement has {}", where_,
                                                    params.size(), sqlite3_bind_parameter_count(stmt_)));
    for (size_t i = 0; i < params.size(); ++i) {
      const int index = static_cast<int>(i) + 1;
      int rc = SQLITE_OK;
      if (const auto* n = std::get_if<int64_t>(&params[i]))
        rc = sqlite3_bind_int64(stmt_, index, *n);
      else if (const auto* d = std::get_if<double>(&params[i]))
        rc = sqlite3_bind_double(stmt_, index, *d);
      else if (const auto* s = std::get_if<std::string>(&params[i]))
        rc = sqlite3_bind_text(stmt_, index, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
      else
        rc = sqlite3_bind_null(stmt_, index);
      if (rc != SQLITE_OK) return fail(ErrorCode::kInternal, fmt::format("{}: {}", where_, sqlite3_errmsg(db_)));
    }
    return {};
  }

  Result<bool> step() override {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    *busy_flag_ = is_busy(rc);
    std::string message = sqlite3_errmsg(db_);
    sqlite3_reset(stmt_);
    return fail(ErrorCode::kIo, fmt::format("{}: {}", where_, message));
  }

  bool is_null(int column) const override { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  int64_t column_int(int column) const override { return sqlite3_column_int64(stmt_, column); }
  double column_double(int column) const override { return sqlite3_column_double(stmt_, column); }
  std::string column_text(int column) const override {
    const auto* text = sqlite3_column_text(stmt_, column);
    return text ? std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, column)) : "";
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  bool* busy_flag_;
  std::string where_;
};

class SqliteBackend final : public Backend {
 public:
  SqliteBackend(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteBackend() override { sqlite3_close_v2(db_); }

  Dialect dialect() const override { return Dialect::kSqlite; }
  std::string describe() const override { return "sqlite:" + path_; }

  Result<void> exec(std::string_view sql) override {
    const std::string text = dialect_sql(sql, Dialect::kSqlite);
    char* message = nullptr;
    const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
    if (rc == SQLITE_OK) return {};
    busy_ = is_busy(rc);
    std::string reason = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    return fail(ErrorCode::kIo, fmt::format("{}: {}", path_, reason));
  }

  Result<std::unique_ptr<Statement>> prepare(std::string_view sql) override {
    const std::string text = dialect_sql(sql, Dialect::kSqlite);
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v2(db_, text.c_str(), static_cast<int>(text.size()), &stmt, nullptr);
    if (rc != SQLITE_OK) {
      busy_ = is_busy(rc);
      return fail(ErrorCode::kIo, fmt::format("{}: {} (in: {})", path_, sqlite3_errmsg(db_), text.substr(0, 120)));
    }
    return std::make_unique<SqliteStatement>(db_, stmt, &busy_, path_);
  }

  Result<void> transaction(const std::function<Result<void>()>& body) override {
    for (int attempt = 0;; ++attempt) {
      busy_ = false;
      auto outcome = exec("BEGIN IMMEDIATE");
      if (outcome) outcome = body();
      if (outcome) outcome = exec("COMMIT");
      if (outcome) return {};
      const bool busy = busy_;
      if (sqlite3_get_autocommit(db_) == 0) (void)exec("ROLLBACK");
      if (!busy || !retry_after_pause(attempt))
        return busy ? fail(outcome.error().with_context("the database stayed locked by another writer")) : outcome;
    }
  }

 private:
  sqlite3* db_;
  std::string path_;
  bool busy_ = false;
};

}  // namespace

Result<std::unique_ptr<Backend>> open_sqlite(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string reason = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return fail(ErrorCode::kIo, fmt::format("cannot open the results database {}: {}", path, reason));
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  auto backend = std::make_unique<SqliteBackend>(db, path);
  // The first statement reads the file header: a file that is not a database fails here.
  for (int attempt = 0;; ++attempt) {
    auto ok = backend->exec("PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL");
    if (ok) break;
    if (ok.error().message().find("locked") != std::string::npos && retry_after_pause(attempt)) continue;
    return fail(ErrorCode::kParse, fmt::format("{} is not a usable SQLite database ({}): give another --db, or move "
                                               "the file away and ingest again",
                                               path, ok.error().message()));
  }
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace ix::store
