// Routes: method + path pattern ("/api/v1/rollouts/{name}/records/{id}") -> handler, with the
// route's body limit; and the helpers every handler uses to read a request and answer it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/dto.h"
#include "server/errors.h"
#include "server/http_server.h"
#include "server/state.h"
#include "strata/status.h"

namespace strata::server {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kDefaultBodyLimit = 64 * kMiB;
inline constexpr uint64_t kRolloutBodyLimit = 1024 * kMiB;
inline constexpr uint64_t kGenericBodyLimit = 1024 * kMiB;
inline constexpr uint64_t kDatagenBodyLimit = 256 * kMiB;

// The path segment of each store kind under /api/v1.
struct KindPath {
  StoreKind kind;
  const char* segment;
};
inline constexpr KindPath kKindPaths[] = {{StoreKind::kContext, "contexts"},
                                          {StoreKind::kRollout, "rollouts"},
                                          {StoreKind::kDatagen, "datagen"},
                                          {StoreKind::kGeneric, "generic"}};

struct RouteContext {
  ServerState& state;
  HttpRequest& request;
  std::map<std::string, std::string> params;  // path parameters, percent-decoded
  std::vector<QueryParam> query;

  const std::string& Param(const std::string& name) const { return params.at(name); }
  // The last query parameter of that name.
  const QueryParam* Query(std::string_view name) const;
};

// An error Result is answered through ErrorFromStatus.
using RouteHandler = std::function<Result<HttpResponse>(RouteContext&)>;

struct Route {
  std::string method;
  std::string pattern;  // also the metrics label
  std::vector<std::string> segments;
  uint64_t body_limit = kDefaultBodyLimit;
  bool open = false;  // served without the auth token
  // The request's Content-Length is reserved in the blob budget before its body is read
  // (503 OVERLOADED when refused) and released after the handler.
  bool blob_admission = false;
  RouteHandler handler;
  size_t index = 0;  // its position in the router: 0 .. Router::size() - 1
};

class Router {
 public:
  void Add(std::string method, std::string pattern, RouteHandler handler,
           uint64_t body_limit = kDefaultBodyLimit, bool open = false, bool blob_admission = false);
  // The first route whose method and pattern match; literal segments are tried in the order
  // routes were added, so add "records/by-external-id" before "records/{id}". Sets
  // *other_method when only the method differs (405).
  const Route* Match(std::string_view method, std::string_view path,
                     std::map<std::string, std::string>* params, bool* other_method) const;
  size_t size() const { return routes_.size(); }

 private:
  std::vector<Route> routes_;
};

// --- Responses ---------------------------------------------------------------------------
HttpResponse JsonResponse(int status, const Json& body);
HttpResponse EmptyResponse(int status);
// 201 {"count": N, "ids": [...], "version": V}, the answer of the add routes, written without
// a JSON tree (the keys in the order, and the bytes, of JsonResponse).
HttpResponse AddedResponse(uint64_t version, std::span<const std::string_view> ids);
HttpResponse ErrorResponse(const HttpError& error);
HttpResponse StatusResponse(const Status& status);

// --- Requests ----------------------------------------------------------------------------
// The body as a JSON object: InvalidArgument "invalid JSON body: ..." otherwise.
Result<Json> ParseJsonBody(const HttpRequest& request);
// Query values: a bool is true/false/1/0 (any case); an integer is a decimal number >= 0.
// InvalidArgument naming the parameter otherwise. Absent -> `fallback`.
Result<bool> QueryBool(const RouteContext& ctx, std::string_view name, bool fallback);
Result<std::optional<int64_t>> QueryInt(const RouteContext& ctx, std::string_view name);

// "a,b,,c" -> {"a", "b", "c"} (query lists such as ?columns= and ?ids=; empty items dropped).
std::vector<std::string> SplitCommaList(std::string_view text);

// Optional typed members of a JSON object (absent or null -> nullopt); InvalidArgument naming
// the member for a wrong type.
Result<std::optional<std::string>> OptString(const Json& object, std::string_view key);
Result<std::optional<int64_t>> OptInt(const Json& object, std::string_view key);
Result<std::optional<bool>> OptBool(const Json& object, std::string_view key);

// Registration of each kind's routes (routes_*.cc).
void AddHealthRoutes(Router& router);
void AddContextRoutes(Router& router);
void AddRolloutRoutes(Router& router);
void AddDatagenRoutes(Router& router);
void AddGenericRoutes(Router& router);
void AddStoreAdminRoutes(Router& router);  // version, checkout, compaction, stats, merge-wal
void AddReplicationRoutes(Router& router);
void AddSqlRoutes(Router& router);

}  // namespace strata::server
