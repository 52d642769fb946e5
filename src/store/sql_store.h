// The Store over a Backend (the one implementation both databases share), and the parsing of
// store locations. Exposed for tests that prepare a database through the backend (an old schema
// version, a newer one) before opening it as a store.
#pragma once

#include <memory>
#include <string>

#include "store/backend.h"
#include "store/store.h"

namespace ix::store {

// "./file.db" or "sqlite:PATH" → SQLite; "postgresql://..." or "postgres://..." → PostgreSQL.
Result<std::unique_ptr<Backend>> open_backend(const std::string& location);

// Migrates the backend's database to kSchemaVersion and wraps it.
Result<std::unique_ptr<Store>> make_sql_store(std::unique_ptr<Backend> backend);

}  // namespace ix::store
