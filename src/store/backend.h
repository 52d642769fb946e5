// The thin SQL backend under the results store: exec / prepare / bind / step / transaction, the
// same SQL text for SQLite and PostgreSQL. SQL is written once with `?` placeholders and the
// tokens below; the backend turns them into its dialect:
//   ?           a parameter (PostgreSQL: $1, $2, ... in order)
//   {autoid}    an auto-increment primary key column type (INTEGER PRIMARY KEY AUTOINCREMENT |
//               BIGSERIAL PRIMARY KEY)
//   {double}    a double column type (REAL | DOUBLE PRECISION)
// Upserts use `INSERT ... ON CONFLICT (...) DO UPDATE SET ... = excluded.…`, which both accept.
//
// Thread-safety: one Backend (one connection) per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/error.h"

namespace ix::store {

// A bound parameter or a column value: NULL, integer, double or text.
using Value = std::variant<std::monostate, int64_t, double, std::string>;

inline Value optional_value(const std::optional<double>& value) {
  return value ? Value(*value) : Value(std::monostate{});
}

// A prepared statement. bind() replaces every parameter; step() runs it (first call) and moves
// to the next row: true while a row is available. Columns are read from the current row.
class Statement {
 public:
  virtual ~Statement() = default;
  virtual Result<void> bind(const std::vector<Value>& params) = 0;
  virtual Result<bool> step() = 0;
  virtual bool is_null(int column) const = 0;
  virtual int64_t column_int(int column) const = 0;
  virtual double column_double(int column) const = 0;
  virtual std::string column_text(int column) const = 0;
};

enum class Dialect { kSqlite, kPostgres };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Dialect dialect() const = 0;
  // Runs SQL without parameters or rows (DDL, several statements separated by ';').
  virtual Result<void> exec(std::string_view sql) = 0;
  virtual Result<std::unique_ptr<Statement>> prepare(std::string_view sql) = 0;
  // Runs `body` inside BEGIN (SQLite: BEGIN IMMEDIATE) ... COMMIT; on an error it rolls back.
  // A busy database, a serialization failure or a deadlock rolls back and runs `body` again
  // (with a growing, jittered pause, for up to about a minute); any other error is returned.
  virtual Result<void> transaction(const std::function<Result<void>()>& body) = 0;
  virtual std::string describe() const = 0;
};

// The SQL with the dialect tokens above replaced (placeholders are left to prepare()).
std::string dialect_sql(std::string_view sql, Dialect dialect);

// Opens (creating when missing) a SQLite database file: WAL journal, busy timeout, foreign keys.
// A file that is not a SQLite database is an error naming it.
Result<std::unique_ptr<Backend>> open_sqlite(const std::string& path);
// Connects to a PostgreSQL server ("postgresql://user@host:port/db?host=/socket/dir").
// kUnsupported when ixbench was built without libpq.
Result<std::unique_ptr<Backend>> open_postgres(const std::string& url);

// Retry policy shared by the backends: whether another attempt is allowed after `attempt`
// failures, sleeping first.
bool retry_after_pause(int attempt);

}  // namespace ix::store
