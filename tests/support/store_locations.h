// Fresh, empty results-store locations for tests that run on both backends: a SQLite file in a
// scratch folder, or a PostgreSQL schema of its own on the server named by
// IXBENCH_TEST_POSTGRES_URL (scripts/start-postgres.sh starts one and prints the variable).
// Header-only: only the test binaries that link ix_store include it.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "store/backend.h"
#include "support/temp_files.h"

namespace ix::testing {

inline constexpr const char* kPostgresUrlVariable = "IXBENCH_TEST_POSTGRES_URL";

// The backends a parameterized store test runs on.
inline std::vector<std::string> store_backends() {
  return {"sqlite", "postgresql"};
}

inline std::string postgres_test_url() {
  const char* url = std::getenv(kPostgresUrlVariable);
  return url ? url : "";
}

inline std::string postgres_skip_message() {
  return fmt::format(
      "{} is not set: run `eval \"$(scripts/start-postgres.sh)\"` (scripts/test.sh does) to test the "
      "PostgreSQL backend",
      kPostgresUrlVariable);
}

// A location with nothing in it yet, unique to `name` and this process; "" when the backend is
// PostgreSQL and no server is configured (the caller skips). Fails the test on a server error.
inline std::string fresh_store_location(const std::string& backend, const std::string& name) {
  if (backend == "sqlite") return (scratch_dir("store_" + name) / "results.db").string();
  const std::string base = postgres_test_url();
  if (base.empty()) return "";
  std::string schema = "ixt_";
  for (char c : name) schema += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
  schema = fmt::format("{}_{}", schema.substr(0, 48), ::getpid());
  auto connection = store::open_postgres(base);
  if (!connection) return "error:" + connection.error().message();
  auto made = (*connection)->exec(fmt::format("DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}", schema));
  if (!made) return "error:" + made.error().message();
  // libpq takes server options in the URL; the schema goes first on the search path.
  return fmt::format("{}{}options=-csearch_path%3D{}", base, base.find('?') == std::string::npos ? "?" : "&", schema);
}

}  // namespace ix::testing
