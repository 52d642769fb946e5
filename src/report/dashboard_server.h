// `ixbench dashboard`: the dashboard page served from the results store, with its data as JSON.
//
//   GET /                 the page (web/dashboard.html with everything inlined but the data)
//   GET /api/facets       the filter menus (dashboard_data.h facets_json)
//   GET /api/view?model=dsr1&scenario=fixed-seq-len&isl=1024&osl=1024&hw=h200&...
//                         one panel's points, curves and frontiers (view_json); filters as
//                         query_from_params; a bad filter is a 400 naming it
//   GET /artifact?path=P  a file some stored result lists as an artifact (404 for any other path)
//   GET /health           {"status":"ok"}
//
// The store is queried on one worker thread that owns it (a Store is used by one thread at a
// time); the HTTP loop only parses and answers, so a slow query never stalls other connections.
// Reads see what concurrent ingests committed (SQLite WAL, PostgreSQL snapshots).
//
// Thread-safety: start() and stop() from one thread; the server's threads are its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/error.h"
#include "report/gpu_cost.h"
#include "store/store.h"

namespace ix::report {

struct DashboardServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8765;  // 0 = any free port
  std::string title = "ixbench results";
  GpuHourCosts costs;
  size_t max_artifact_bytes = size_t{64} << 20;
};

class DashboardServer {
 public:
  static Result<std::unique_ptr<DashboardServer>> start(const DashboardServerOptions& options,
                                                        std::unique_ptr<store::Store> store);
  ~DashboardServer();  // stop()
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  uint16_t port() const;
  void stop();  // idempotent

 private:
  struct Impl;
  explicit DashboardServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ix::report
