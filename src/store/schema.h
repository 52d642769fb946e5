// The results store's schema and its migrations (SPEC §13). One DDL text for both backends (see
// backend.h for the dialect tokens). Version 1 is kept as data so a database created by it can
// be made in tests and migrated; each migration takes version N to N+1 inside one transaction.
#pragma once

#include <string_view>

#include "common/error.h"
#include "store/backend.h"

namespace ix::store {

// Version 1: runs, results (identity + headline numbers + JSON documents), evals, artifacts.
extern const std::string_view kSchemaV1;
// 1 → 2: scenario, power columns, the content digest, the filter indexes and the latest view.
extern const std::string_view kMigrationV1ToV2;

// The version recorded in the database; 0 for an empty database.
Result<int> read_schema_version(Backend& backend);

// Brings the database to `target` (≤ kSchemaVersion), creating it when empty; refuses a database
// newer than this ixbench with a message naming both versions. Safe when several processes open
// the same new database at once. Returns the version the database now has.
Result<int> migrate(Backend& backend, int target);

}  // namespace ix::store
