// /api/v1/datagen: data-generation event logs — create / list / info / delete, event appends
// (plain or checkpoint), folded items, failures, the run overview, root statuses, raw events
// and blobs.
#include <fmt/format.h>

#include "server/router.h"

namespace strata::server {

namespace {

using store::DatagenEvent;
using store::DatagenStore;

constexpr StoreKind kKind = StoreKind::kDatagen;

Result<std::shared_ptr<DatagenStore>> Open(RouteContext& ctx) {
  return ctx.state.Datagen(ctx.Param("name"));
}

Json Info(ServerState& state, std::string_view name, std::optional<uint64_t> version) {
  Json info = {{"name", name}, {"uri", state.StoreUri(kKind, name)}};
  if (version) info["version"] = *version;
  return info;
}

// Reads again after refreshing the handle when `missing(result)` (and the handle is not
// pinned), so rows another instance merged are found.
template <typename T, typename Read, typename Missing>
Result<T> RefreshingOnMiss(DatagenStore& s, const Read& read, const Missing& missing) {
  STRATA_ASSIGN_OR_RETURN(T value, read());
  if (!missing(value) || s.base().pinned()) return value;
  STRATA_RETURN_IF_ERROR(s.RefreshLatest());
  return read();
}

Json EventsJson(const std::vector<DatagenEvent>& events) {
  Json out = Json::array();
  for (const DatagenEvent& e : events) out.push_back(DatagenEventToJson(e));
  return out;
}

Result<HttpResponse> Create(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> name, OptString(body, "name"));
  if (!name) return Status::InvalidArgument("name is required");
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DatagenStore> s, ctx.state.CreateDatagen(*name));
  return JsonResponse(201, Info(ctx.state, *name, s->base().version()));
}

Result<HttpResponse> List(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, ctx.state.registry().List(kKind));
  Json stores = Json::array();
  for (const std::string& n : names) stores.push_back(Info(ctx.state, n, std::nullopt));
  return JsonResponse(200, {{"stores", stores}});
}

Result<HttpResponse> Get(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DatagenStore> s, Open(ctx));
  return JsonResponse(200, Info(ctx.state, ctx.Param("name"), s->base().version()));
}

Result<HttpResponse> Delete(RouteContext& ctx) {
  STRATA_RETURN_IF_ERROR(ctx.state.Delete(kKind, ctx.Param("name")));
  return EmptyResponse(204);
}

Result<HttpResponse> AppendEvents(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(bool checkpoint, QueryBool(ctx, "checkpoint", false));
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  auto it = body.find("events");
  if (it == body.end() || it->is_null() || (it->is_array() && it->empty())) {
    return Status::InvalidArgument("events array must not be empty");
  }
  if (!it->is_array()) return Status::InvalidArgument("events: expected an array");
  const int64_t now = ctx.state.NowMicros();
  std::vector<DatagenEvent> events;
  events.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(DatagenEvent e,
                            DatagenEventFromJson((*it)[i], now, fmt::format("events[{}]", i)));
    events.push_back(std::move(e));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DatagenStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(uint64_t version,
                          checkpoint ? s->AppendCheckpoint(events) : s->Append(events));
  return JsonResponse(201, {{"version", version}, {"count", events.size()}});
}

Result<HttpResponse> Item(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(bool load_blobs, QueryBool(ctx, "load_blobs", false));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DatagenStore> s, Open(ctx));
  const std::string& id = ctx.Param("item_id");
  const store::DatagenFoldMode mode =
      load_blobs ? store::DatagenFoldMode::kEager : store::DatagenFoldMode::kLazy;
  using Folded = std::optional<store::DatagenFoldedItem>;
  STRATA_ASSIGN_OR_RETURN(Folded item, RefreshingOnMiss<Folded>(
                                           *s, [&] { return s->FoldItem(id, mode); },
                                           [](const Folded& f) { return !f.has_value(); }));
  return JsonResponse(200, {{"item", item ? DatagenFoldedItemToJson(*item) : Json(nullptr)}});
}

Result<HttpResponse> Failures(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DatagenStore> s, Open(ctx));
  const std::string& id = ctx.Param("item_id");
  using List = std::vector<store::DatagenItemFailure>;
  STRATA_ASSIGN_OR_RETURN(List failures, RefreshingOnMiss<List>(
                                             *s, [&] { return s->ItemFailures(id); },
                                             [](const List& l) { return l.empty(); }));
  Json out = Json::array();
  for (const store::DatagenItemFailure& f : failures) out.push_back(DatagenItemFailureToJson(f));
  return JsonResponse(200, {{"failures", out}});
}

Result<HttpResponse> Overview(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DatagenStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(store::DatagenOverview overview, s->Overview());
  return JsonResponse(200, DatagenOverviewToJson(overview));
}

Result<HttpResponse> RootStatus(RouteContext& ctx) {
  std::vector<std::string> ids;
  if (const QueryParam* p = ctx.Query("ids"); p != nullptr) ids = SplitCommaList(p->value);
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DatagenStore> s, Open(ctx));
  using Statuses = std::map<std::string, std::optional<store::DatagenItemStatus>>;
  STRATA_ASSIGN_OR_RETURN(Statuses statuses, RefreshingOnMiss<Statuses>(
                                                 *s, [&] { return s->RootItemStatuses(ids); },
                                                 [](const Statuses& m) {
                                                   for (const auto& [id, st] : m) {
                                                     if (!st) return true;
                                                   }
                                                   return false;
                                                 }));
  Json out = Json::object();
  for (const auto& [id, st] : statuses) {
    if (st) out[id] = std::string(store::DatagenItemStatusName(*st));
  }
  return JsonResponse(200, {{"statuses", out}});
}

Result<HttpResponse> RootEvents(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DatagenStore> s, Open(ctx));
  const std::string& root = ctx.Param("root_item_id");
  using Events = std::vector<DatagenEvent>;
  STRATA_ASSIGN_OR_RETURN(Events events, RefreshingOnMiss<Events>(
                                             *s, [&] { return s->EventsForRoot(root); },
                                             [](const Events& e) { return e.empty(); }));
  std::stable_sort(events.begin(), events.end(), [](const DatagenEvent& a, const DatagenEvent& b) {
    return a.event_ts_micros < b.event_ts_micros;
  });
  return JsonResponse(200, {{"events", EventsJson(events)}});
}

Result<HttpResponse> Blob(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DatagenStore> s, Open(ctx));
  const std::string& id = ctx.Param("event_id");
  using Bytes = std::optional<std::string>;
  STRATA_ASSIGN_OR_RETURN(Bytes blob, RefreshingOnMiss<Bytes>(
                                          *s, [&] { return s->GetBlob(id); },
                                          [](const Bytes& b) { return !b.has_value(); }));
  if (!blob) return Status::NotFound(fmt::format("Datagen event '{}' has no blob", id));
  HttpResponse r;
  r.content_type = "application/octet-stream";
  r.stream = std::make_shared<const std::string>(std::move(*blob));
  return r;
}

}  // namespace

void AddDatagenRoutes(Router& router) {
  const std::string base = "/api/v1/datagen";
  router.Add("POST", base, Create);
  router.Add("GET", base, List);
  router.Add("GET", base + "/{name}", Get);
  router.Add("DELETE", base + "/{name}", Delete);
  router.Add("POST", base + "/{name}/events", AppendEvents, kDatagenBodyLimit);
  router.Add("GET", base + "/{name}/items/{item_id}", Item);
  router.Add("GET", base + "/{name}/items/{item_id}/failures", Failures);
  router.Add("GET", base + "/{name}/overview", Overview);
  router.Add("GET", base + "/{name}/root-status", RootStatus);
  router.Add("GET", base + "/{name}/roots/{root_item_id}/events", RootEvents);
  router.Add("GET", base + "/{name}/blobs/{event_id}", Blob);
}

}  // namespace strata::server
