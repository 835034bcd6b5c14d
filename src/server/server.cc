// Server: options from the environment, the admitter (auth, drain, routing, metrics, access
// log) in front of the routes, and the shutdown sequence.
#include "strata/server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <vector>

#include "server/clock.h"
#include "server/http_server.h"
#include "server/router.h"
#include "server/state.h"

namespace strata::server {

namespace {

bool ConstantTimeEquals(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned char>(g ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

bool IsLoopback(std::string_view host) {
  return host == "127.0.0.1" || host == "::1" || host == "localhost" || host.substr(0, 4) == "127.";
}

template <typename T>
Status ParseNumber(const char* name, const char* text, T* out) {
  std::string_view v(text);
  if constexpr (std::is_floating_point_v<T>) {
    char* end = nullptr;
    const double d = std::strtod(text, &end);
    if (v.empty() || end != text + v.size() || !(d >= 0)) {
      return Status::InvalidArgument(
          fmt::format("{}='{}': expected a non-negative number", name, text));
    }
    *out = static_cast<T>(d);
    return Status::OK();
  } else {
    T value{};
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || value < 0) {
      return Status::InvalidArgument(
          fmt::format("{}='{}': expected a non-negative integer", name, text));
    }
    *out = value;
    return Status::OK();
  }
}

}  // namespace

Status ApplyEnvironment(ServerOptions* o, const std::function<const char*(const char*)>& getenv) {
  auto str = [&](const char* name, std::string* out) {
    if (const char* v = getenv(name); v != nullptr && *v != '\0') *out = v;
  };
  auto num = [&](const char* name, auto* out) -> Status {
    if (const char* v = getenv(name); v != nullptr && *v != '\0') {
      return ParseNumber(name, v, out);
    }
    return Status::OK();
  };
  str("STRATA_DATA_DIR", &o->data_dir);
  str("STRATA_HOST", &o->host);
  STRATA_RETURN_IF_ERROR(num("STRATA_PORT", &o->port));
  str("HOSTNAME", &o->instance_id);
  str("INSTANCE_ID", &o->instance_id);
  str("STRATA_AUTH_TOKEN", &o->auth_token);
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_MERGE_AFTER_GENERATIONS", &o->merge_after_generations));
  STRATA_RETURN_IF_ERROR(
      num("STRATA_CONTEXT_MERGE_AFTER_GENERATIONS", &o->context_merge_after_generations));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_MERGE_MAX_GENERATIONS", &o->merge_max_generations));
  STRATA_RETURN_IF_ERROR(num("COMPACTION_INTERVAL_SECS", &o->compaction_interval_seconds));
  STRATA_RETURN_IF_ERROR(num("MIN_FRAGMENTS", &o->compaction_min_fragments));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_MERGE_MAX_BYTES", &o->merge_max_bytes));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_WAL_PENDING_WARN_GENERATIONS", &o->pending_generations_warn));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_WAL_PENDING_MAX_GENERATIONS", &o->pending_generations_max));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_MERGE_MEMORY_BYTES", &o->merge_memory_bytes));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_MERGE_CONCURRENCY", &o->merge_concurrency));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_CLEANUP_INTERVAL_SECS", &o->cleanup_interval_seconds));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_FLUSH_INTERVAL_SECS", &o->flush_interval_seconds));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_CACHE_CAPACITY", &o->cache_capacity));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_MAX_INFLIGHT_BLOB_BYTES", &o->max_inflight_blob_bytes));
  STRATA_RETURN_IF_ERROR(num("ROLLOUT_LARGE_BLOB_LOG_BYTES", &o->large_blob_log_bytes));
  STRATA_RETURN_IF_ERROR(num("REQUEST_BODY_IDLE_TIMEOUT_SECS", &o->body_idle_timeout_seconds));
  if (o->cache_capacity == 0) o->cache_capacity = 2000;
  return Status::OK();
}

namespace {

// strata_http_requests_total and strata_http_request_duration_seconds of each route, by
// the route's index, each series resolved once (a matched route's method label is its own
// method). Requests no route matched look theirs up each time: they are rare and their
// method label varies.
class RouteSeries {
 public:
  // `routes`: the router's size once every route is added.
  explicit RouteSeries(size_t routes) : routes_(routes) {}

  void Record(MetricsRegistry& m, const Route* route, std::string_view method, int status,
              double seconds) {
    const std::string_view label =
        route != nullptr ? std::string_view(route->pattern) : std::string_view("unmatched");
    auto counter = [&] {
      return m.GetCounter("strata_http_requests_total",
                          "HTTP requests answered, by method, route and status",
                          {{"method", std::string(method)},
                           {"route", std::string(label)},
                           {"status", std::to_string(status)}});
    };
    auto histogram = [&] {
      return m.GetHistogram(
          "strata_http_request_duration_seconds",
          "Wall time from a request's header to its response, by method and route",
          DefaultLatencyBuckets(),
          {{"method", std::string(method)}, {"route", std::string(label)}});
    };
    Counter* requests = nullptr;
    Histogram* duration = nullptr;
    if (route != nullptr && route->index < routes_.size() && status >= kMinStatus &&
        status <= kMaxStatus) {
      PerRoute& r = routes_[route->index];
      requests = r.requests[status - kMinStatus].Get(counter);
      duration = r.duration.Get(histogram);
    } else {
      Result<Counter*> c = counter();
      if (c.ok()) requests = *c;
      Result<Histogram*> h = histogram();
      if (h.ok()) duration = *h;
    }
    if (requests != nullptr) requests->Increment();
    if (duration != nullptr) duration->Observe(seconds);
  }

 private:
  static constexpr int kMinStatus = 100;
  static constexpr int kMaxStatus = 599;
  struct PerRoute {
    SeriesSlot<Counter> requests[kMaxStatus - kMinStatus + 1];
    SeriesSlot<Histogram> duration;
  };
  std::vector<PerRoute> routes_;  // never resized: PerRoute holds atomics
};

}  // namespace

struct Server::State {
  std::unique_ptr<ServerState> state;
  Router router;
  std::unique_ptr<RouteSeries> route_series;  // once every route is added
  std::unique_ptr<HttpServer> http;
  std::atomic<bool> draining{false};
  bool shut_down = false;
};

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  auto s = std::make_unique<State>();
  if (!IsLoopback(options.host) && options.auth_token.empty()) {
    spdlog::warn(
        "listening on {} without an auth token: anyone who can reach it can read and "
        "write every store (set --auth-token-file or STRATA_AUTH_TOKEN)",
        options.host);
  }
  if (options.flush_interval_seconds == 0 && options.cleanup_interval_seconds == 0) {
    spdlog::warn(
        "flush and cleanup sweepers are both off: deferred-seal appends (rollout and "
        "generic stores) stay durable but invisible to reads until flushed or until "
        "this process shuts down, and pending WAL generations are never merged");
  }
  STRATA_ASSIGN_OR_RETURN(s->state, ServerState::Open(std::move(options)));
  AddHealthRoutes(s->router);
  AddContextRoutes(s->router);
  AddRolloutRoutes(s->router);
  AddDatagenRoutes(s->router);
  AddGenericRoutes(s->router);
  AddStoreAdminRoutes(s->router);
  AddReplicationRoutes(s->router);
  AddSqlRoutes(s->router);
  s->route_series = std::make_unique<RouteSeries>(s->router.size());

  const ServerOptions& o = s->state->options();
  HttpServerOptions http;
  http.host = o.host;
  http.port = o.port;
  http.io_threads = o.io_threads;
  http.worker_threads = o.worker_threads;
  http.body_idle_timeout_seconds = o.body_idle_timeout_seconds;
  http.header_idle_timeout_seconds = std::max(o.body_idle_timeout_seconds, 5.0);
  http.write_idle_timeout_seconds = std::max(o.body_idle_timeout_seconds, 5.0);
  ServerState* state = s->state.get();
  http.on_body_timeout = [state] {
    Result<Counter*> c =
        state->metrics().GetCounter("strata_http_request_body_timeouts_total",
                                    "Requests whose body stalled past the idle timeout");
    if (c.ok()) (*c)->Increment();
  };
  State* self = s.get();
  Admitter admitter = [self, state](const HttpRequest& header) -> Admission {
    Admission a;
    std::map<std::string, std::string> params;
    bool other_method = false;
    const Route* route = self->router.Match(header.method, header.path, &params, &other_method);
    // The method label takes a closed set of values: any token is a method to the parser.
    static constexpr std::string_view kMethods[] = {"GET",    "POST", "PUT",    "PATCH",
                                                    "DELETE", "HEAD", "OPTIONS"};
    const auto* known = std::find(std::begin(kMethods), std::end(kMethods), header.method);
    const std::string_view method = known != std::end(kMethods) ? *known : "OTHER";
    // The access log's fields are copied only when it is on.
    const bool log = state->options().access_log;
    a.on_done = [state, series = self->route_series.get(), route, method,
                 target = log ? header.target : std::string(),
                 remote = log ? header.remote : std::string()](int status, double seconds) {
      series->Record(state->metrics(), route, method, status, seconds);
      if (state->options().access_log) {
        spdlog::info("{} {} {} {} {:.1f}ms", remote, method, target, status, seconds * 1000);
      }
    };
    if (route == nullptr) {
      a.reject =
          other_method
              ? ErrorResponse(
                    {405, "METHOD_NOT_ALLOWED",
                     fmt::format("method {} is not allowed on {}", header.method, header.path), 0})
              : ErrorResponse(NotFoundError(fmt::format("no route for {}", header.path)));
      return a;
    }
    if (!route->open && !state->options().auth_token.empty()) {
      std::string_view auth = header.Header("authorization");
      constexpr std::string_view kBearer = "Bearer ";
      const bool ok = auth.size() > kBearer.size() && auth.substr(0, kBearer.size()) == kBearer &&
                      ConstantTimeEquals(auth.substr(kBearer.size()), state->options().auth_token);
      if (!ok) {
        HttpResponse r = ErrorResponse({401, "UNAUTHORIZED", "unauthorized", 0});
        r.headers.emplace_back("WWW-Authenticate", "Bearer");
        a.reject = std::move(r);
        return a;
      }
    }
    if (self->draining.load()) {
      a.reject = ErrorResponse({503, "OVERLOADED", "worker is draining", 1});
      return a;
    }
    std::shared_ptr<void> hold;
    if (route->blob_admission && state->options().max_inflight_blob_bytes > 0) {
      const std::string_view length = header.Header("content-length");
      int64_t declared = 0;
      auto [ptr, ec] = std::from_chars(length.data(), length.data() + length.size(), declared);
      if (length.empty() || ec != std::errc() || ptr != length.data() + length.size()) {
        // A chunked upload would bypass the budget.
        a.reject = ErrorResponse({411, "LENGTH_REQUIRED",
                                  "uploads need a Content-Length while a blob budget is set", 0});
        return a;
      }
      // Past the route's limit: the HTTP layer answers 413 without reserving anything.
      if (static_cast<uint64_t>(declared) > route->body_limit) declared = 0;
      hold = state->blob_budget().TryAcquire(declared);
      if (hold == nullptr) {
        Result<Counter*> c =
            state->metrics().GetCounter("strata_rollout_blob_budget_rejections_total",
                                        "Blob requests refused by the in-flight blob budget");
        if (c.ok()) (*c)->Increment();
        a.reject = ErrorResponse(
            {503, "OVERLOADED", "server is at its in-flight blob memory limit; retry shortly", 1});
        return a;
      }
    }
    a.body_limit = route->body_limit;
    a.handler = [state, route, params = std::move(params),
                 hold = std::move(hold)](HttpRequest& request) mutable {
      Result<std::vector<QueryParam>> query = ParseQuery(request.query);
      if (!query.ok()) return StatusResponse(query.status());
      RouteContext ctx{*state, request, std::move(params), std::move(*query)};
      Result<HttpResponse> response = route->handler(ctx);
      if (!response.ok()) return StatusResponse(response.status());
      return std::move(*response);
    };
    return a;
  };
  STRATA_ASSIGN_OR_RETURN(s->http, HttpServer::Start(std::move(http), std::move(admitter)));
  spdlog::info("strata serve: listening on {}:{}, data in {}, instance '{}'", o.host,
               s->http->port(), o.data_dir, o.instance_id);
  return std::unique_ptr<Server>(new Server(std::move(s)));
}

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() {
  if (!state_->shut_down) {
    Status s = Shutdown();
    if (!s.ok()) spdlog::error("shutdown: {}", s.ToString());
  }
}

uint16_t Server::port() const { return state_->http->port(); }

void Server::BeginDrain() {
  state_->draining.store(true);
  state_->http->BeginDrain();
}

Status Server::Shutdown() {
  if (state_->shut_down) return Status::OK();
  state_->shut_down = true;
  const double start = MonotonicSeconds();
  BeginDrain();
  state_->http->WaitForInFlight();
  state_->http->Stop();
  if (store::Maintenance* m = state_->state->maintenance()) m->Stop();
  Status closed = state_->state->CloseAll();
  spdlog::info("strata serve: drained and closed every store in {:.2f}s",
               MonotonicSeconds() - start);
  return closed;
}

}  // namespace strata::server
