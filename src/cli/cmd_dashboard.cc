// `ixbench dashboard [--db DB] [--host H] [--port P]`: serves the dashboard from the results store
// until stopped (Ctrl-C, SIGTERM). See docs/dashboard.md.
#include <fmt/format.h>

#include <csignal>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/report_flags.h"
#include "common/log.h"
#include "common/stop_signal.h"
#include "http/client.h"
#include "report/dashboard_server.h"

namespace ix::cli {
namespace {

struct Flags {
  DashboardFlags dashboard;
  std::string host = "127.0.0.1";
  int port = 8765;
};

int run(const Flags& flags) {
  StopSignals stop_signals;
  std::signal(SIGPIPE, SIG_IGN);
  auto costs = gpu_hour_costs(flags.dashboard);
  if (!costs) return report_error(costs.error());
  auto store = store::open_store(flags.dashboard.db);
  if (!store) return report_error(store.error());
  const std::string described = (*store)->describe();
  report::DashboardServerOptions options{.host = flags.host,
                                         .port = static_cast<uint16_t>(flags.port),
                                         .title = flags.dashboard.title,
                                         .costs = std::move(*costs)};
  auto server = report::DashboardServer::start(options, std::move(*store));
  if (!server) return report_error(server.error());
  const http::Url url{.host = flags.host, .port = (*server)->port(), .path = {}};
  fmt::print("listening on {}\n", url.origin());
  std::fflush(stdout);
  log::info("dashboard: {} on {}/", described, url.origin());
  StopSignals::wait();
  (*server)->stop();
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* cmd = root.add_subcommand("dashboard", "serve the results dashboard from the store (127.0.0.1 by default)");
  auto flags = std::make_shared<Flags>();
  add_dashboard_flags(cmd, flags->dashboard);
  cmd->add_option("--host", flags->host, "address to listen on (0.0.0.0 shows it to the network)")
      ->capture_default_str();
  cmd->add_option("--port", flags->port, "port (0 = any free port, printed)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  registry.on_run(cmd, [flags] { return run(*flags); });
}

}  // namespace
IX_REGISTER_COMMAND(dashboard, setup);
}  // namespace ix::cli
