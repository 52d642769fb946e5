#include "report/dashboard_server.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "common/file_io.h"
#include "common/json_io.h"
#include "http/server.h"
#include "report/dashboard_data.h"
#include "report/dashboard_page.h"

namespace ix::report {
namespace {

struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

Reply json_reply(const boost::json::value& value) {
  return {.body = json::to_string(value)};
}

Reply error_reply(int status, std::string_view message) {
  return {.status = status,
          .body = http::openai_error_json(status, message, status < 500 ? "invalid_request_error" : "server_error")};
}

http::ServerResponse to_response(const Reply& reply) {
  http::ServerResponse response;
  response.status = reply.status;
  response.content_type = reply.content_type;
  response.body = reply.body;
  response.headers = {{"cache-control", "no-store"}, {"x-content-type-options", "nosniff"}};
  return response;
}

// The one thread that uses the store: jobs run in submission order.
class StoreWorker {
 public:
  explicit StoreWorker(std::unique_ptr<store::Store> store) : store_(std::move(store)), thread_([this] { work(); }) {}
  ~StoreWorker() { stop(); }
  StoreWorker(const StoreWorker&) = delete;
  StoreWorker& operator=(const StoreWorker&) = delete;

  void submit(std::function<void(store::Store&)> job) {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    jobs_.push_back(std::move(job));
    ready_.notify_one();
  }
  // Drops the jobs not started, waits for the running one.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      jobs_.clear();
      ready_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void work() {
    while (true) {
      std::function<void(store::Store&)> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job(*store_);
    }
  }

  std::unique_ptr<store::Store> store_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void(store::Store&)>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

Reply facets_reply(store::Store& store) {
  auto facets = store.facets();
  if (!facets) return error_reply(500, facets.error().message());
  return json_reply(facets_json(*facets));
}

Reply view_reply(store::Store& store, const store::ResultQuery& query, const GpuHourCosts& costs) {
  auto results = store.latest(query);
  if (!results) return error_reply(500, results.error().message());
  return json_reply(view_json(*results, costs));
}

std::string_view artifact_content_type(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".json") return "application/json";
  if (extension == ".csv") return "text/csv; charset=utf-8";
  return "text/plain; charset=utf-8";  // never text/html: an artifact is shown, not run
}

Reply artifact_reply(store::Store& store, const std::string& path, size_t max_bytes) {
  auto listed = store.has_artifact(path);
  if (!listed) return error_reply(500, listed.error().message());
  if (!*listed) return error_reply(404, fmt::format("'{}' is not an artifact of any stored result", path));
  auto text = files::read_text_file(path, max_bytes, "artifact");
  if (!text) return error_reply(404, text.error().message());
  return {.content_type = std::string(artifact_content_type(path)), .body = std::move(*text)};
}

std::string query_param(const std::vector<std::pair<std::string, std::string>>& params, std::string_view name) {
  for (const auto& [key, value] : params) {
    if (key == name) return value;
  }
  return {};
}

}  // namespace

struct DashboardServer::Impl {
  DashboardServerOptions options;
  std::string page;
  StoreWorker worker;
  std::unique_ptr<http::HttpServer> http;

  Impl(const DashboardServerOptions& opts, std::unique_ptr<store::Store> store)
      : options(opts), page(render_dashboard_page({.title = opts.title, .data_json = {}})), worker(std::move(store)) {}

  // Answers later, from the store's thread.
  http::ServerResponse on_store(http::RequestContext& context, std::function<Reply(store::Store&)> work) {
    auto responder = context.defer();
    worker.submit([responder, work = std::move(work)](store::Store& store) {
      if (responder->abandoned()) return;
      Reply reply = work(store);
      responder->respond([reply = std::move(reply)](http::RequestContext&) { return to_response(reply); });
    });
    return http::ServerResponse::later();
  }

  http::ServerResponse handle(http::ServerRequest& request, http::RequestContext& context) {
    if (request.method != "GET") return to_response(error_reply(405, "the dashboard answers GET only"));
    if (request.path == "/" || request.path == "/index.html") {
      return to_response({.content_type = "text/html; charset=utf-8", .body = page});
    }
    if (request.path == "/health") return to_response({.body = R"({"status":"ok"})"});
    auto params = http::parse_query_string(request.query);
    if (!params) return to_response(error_reply(400, params.error().message()));
    if (request.path == "/api/facets") return on_store(context, facets_reply);
    if (request.path == "/api/view") {
      auto query = query_from_params(*params);
      if (!query) return to_response(error_reply(400, query.error().message()));
      return on_store(context,
                      [query = *query, this](store::Store& store) { return view_reply(store, query, options.costs); });
    }
    if (request.path == "/artifact") {
      std::string path = query_param(*params, "path");
      if (path.empty()) return to_response(error_reply(400, "/artifact needs ?path=<an artifact path>"));
      return on_store(context, [path = std::move(path), this](store::Store& store) {
        return artifact_reply(store, path, options.max_artifact_bytes);
      });
    }
    return to_response(error_reply(404, fmt::format("no page '{}' (pages: /, /api/facets, /api/view, /artifact, "
                                                    "/health)",
                                                    request.path)));
  }
};

Result<std::unique_ptr<DashboardServer>> DashboardServer::start(const DashboardServerOptions& options,
                                                                std::unique_ptr<store::Store> store) {
  auto impl = std::make_unique<Impl>(options, std::move(store));
  http::ServerOptions server_options;
  server_options.host = options.host;
  server_options.port = options.port;
  server_options.threads = 1;
  Impl* self = impl.get();
  auto http = http::HttpServer::start(
      server_options,
      [self](http::ServerRequest& request, http::RequestContext& context) { return self->handle(request, context); });
  if (!http) return fail(http.error().with_context(fmt::format("dashboard on {}:{}", options.host, options.port)));
  impl->http = std::move(*http);
  return std::unique_ptr<DashboardServer>(new DashboardServer(std::move(impl)));
}

DashboardServer::DashboardServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DashboardServer::~DashboardServer() {
  stop();
}

uint16_t DashboardServer::port() const {
  return impl_->http->port();
}

void DashboardServer::stop() {
  if (impl_->http) impl_->http->stop();
  impl_->worker.stop();
}

}  // namespace ix::report
