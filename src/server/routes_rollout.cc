// /api/v1/rollouts: rollout stores — create / list / info / delete, appends (JSON or multipart
// with the blobs as parts), lists, point reads and blob downloads.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>

#include "server/clock.h"
#include "server/multipart.h"
#include "server/router.h"

namespace strata::server {

namespace {

using store::RolloutRecord;
using store::RolloutStore;

constexpr StoreKind kKind = StoreKind::kRollout;

// The reference's ?flush parsing: true for `flush`, `flush=1`, `flush=true` (any case);
// anything else (`flush=0`, `flush=false`, `flush=yes`, other names) is false.
bool FlushRequested(const RouteContext& ctx) {
  const QueryParam* p = ctx.Query("flush");
  if (p == nullptr) return false;
  if (!p->has_value) return true;
  std::string v = p->value;
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "true" || v == "1";
}

void Count(ServerState& state, std::string_view name, std::string_view help, uint64_t n,
           const MetricLabels& labels = {}) {
  Result<Counter*> c = state.metrics().GetCounter(name, help, labels);
  if (c.ok()) (*c)->Increment(n);
}

void Increment(Counter* counter, uint64_t n = 1) {
  if (counter != nullptr) counter->Increment(n);
}

// The records of an AddRolloutsRequest body.
Result<std::vector<RolloutRecord>> RecordsFromJson(const Json& body, int64_t now) {
  auto it = body.find("records");
  if (it == body.end() || it->is_null()) {
    return Status::InvalidArgument("records array must not be empty");
  }
  if (!it->is_array()) return Status::InvalidArgument("records: expected an array");
  if (it->empty()) return Status::InvalidArgument("records array must not be empty");
  std::vector<RolloutRecord> records;
  records.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(RolloutRecord r,
                            RolloutRecordFromJson((*it)[i], now, fmt::format("records[{}]", i)));
    records.push_back(std::move(r));
  }
  return records;
}

// multipart/form-data: a `metadata` part (AddRolloutsRequest), then one part per record
// carrying its binary_payload, named by the record's zero-based index.
Result<std::vector<RolloutRecord>> RecordsFromMultipart(const HttpRequest& request,
                                                        std::string_view content_type,
                                                        int64_t now) {
  STRATA_ASSIGN_OR_RETURN(std::string boundary, MultipartBoundary(content_type));
  STRATA_ASSIGN_OR_RETURN(std::vector<MultipartPart> parts, ParseMultipart(request.body, boundary));
  if (parts.empty()) return Status::InvalidArgument("multipart body has no parts");
  if (!parts[0].has_name) return Status::InvalidArgument("multipart part has no name");
  if (parts[0].name != "metadata") {
    return Status::InvalidArgument(
        fmt::format("first multipart part must be named 'metadata', found '{}'", parts[0].name));
  }
  Json body;
  try {
    body = Json::parse(parts[0].data);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(fmt::format("invalid metadata part: {}", e.what()));
  }
  if (!body.is_object())
    return Status::InvalidArgument("invalid metadata part: expected an object");
  STRATA_ASSIGN_OR_RETURN(std::vector<RolloutRecord> records, RecordsFromJson(body, now));
  std::vector<bool> attached(records.size(), false);
  for (size_t p = 1; p < parts.size(); ++p) {
    const MultipartPart& part = parts[p];
    if (!part.has_name) return Status::InvalidArgument("multipart part has no name");
    size_t index = 0;
    const char* end = part.name.data() + part.name.size();
    auto [ptr, ec] = std::from_chars(part.name.data(), end, index);
    if (part.name.empty() || ec != std::errc() || ptr != end) {
      return Status::InvalidArgument(
          fmt::format("unexpected multipart part '{}': expected a record index", part.name));
    }
    if (index >= records.size()) {
      return Status::InvalidArgument(
          fmt::format("multipart part '{}' has no matching record ({} records supplied)", part.name,
                      records.size()));
    }
    if (attached[index]) {
      return Status::InvalidArgument(
          fmt::format("duplicate multipart part for record index {}", index));
    }
    attached[index] = true;
    RolloutRecord& r = records[index];
    if (r.payload_size && *r.payload_size != static_cast<int64_t>(part.data.size())) {
      return Status::InvalidArgument(
          fmt::format("record index {}: payload_size {} does not match received {} bytes", index,
                      *r.payload_size, part.data.size()));
    }
    r.binary_payload = std::string(part.data);
    if (!r.payload_size) r.payload_size = static_cast<int64_t>(part.data.size());
  }
  for (size_t i = 0; i < records.size(); ++i) {
    if (!attached[i] && records[i].payload_size && !records[i].binary_payload) {
      return Status::InvalidArgument(
          fmt::format("record index {} declares payload_size but no binary part was supplied", i));
    }
  }
  return records;
}

Json StoreInfo(ServerState& state, std::string_view name, std::optional<uint64_t> version) {
  Json info = {{"name", name}, {"uri", state.StoreUri(kKind, name)}};
  if (version) info["version"] = *version;
  return info;
}

Result<HttpResponse> Create(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> name, OptString(body, "name"));
  if (!name) return Status::InvalidArgument("name is required");
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RolloutStore> s, ctx.state.CreateRollout(*name));
  return JsonResponse(201, StoreInfo(ctx.state, *name, s->version()));
}

Result<HttpResponse> List(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, ctx.state.registry().List(kKind));
  Json stores = Json::array();
  for (const std::string& n : names) stores.push_back(StoreInfo(ctx.state, n, std::nullopt));
  return JsonResponse(200, {{"stores", stores}});
}

Result<HttpResponse> Info(RouteContext& ctx) {
  const std::string& name = ctx.Param("name");
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RolloutStore> s, ctx.state.Rollout(name));
  return JsonResponse(200, StoreInfo(ctx.state, name, s->version()));
}

Result<HttpResponse> Delete(RouteContext& ctx) {
  STRATA_RETURN_IF_ERROR(ctx.state.Delete(kKind, ctx.Param("name")));
  return EmptyResponse(204);
}

Result<HttpResponse> Append(RouteContext& ctx) {
  const bool flush = FlushRequested(ctx);
  const double start = MonotonicSeconds();
  std::string content_type(ctx.request.Header("content-type"));
  std::string lower = content_type;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const int64_t now = ctx.state.NowMicros();
  std::vector<RolloutRecord> records;
  if (lower.rfind("application/json", 0) == 0 || lower.empty()) {
    // Most bodies are read straight into records; the rest (and every error) as a tree.
    std::optional<std::vector<RolloutRecord>> fast = FastRolloutRecords(ctx.request.body, now);
    if (fast) {
      records = std::move(*fast);
    } else {
      STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
      STRATA_ASSIGN_OR_RETURN(records, RecordsFromJson(body, now));
    }
  } else if (lower.rfind("multipart/form-data", 0) == 0) {
    STRATA_ASSIGN_OR_RETURN(records, RecordsFromMultipart(ctx.request, content_type, now));
  } else {
    return Status::InvalidArgument(fmt::format(
        "unsupported Content-Type '{}': expected application/json or multipart/form-data",
        content_type));
  }
  for (const RolloutRecord& r : records) {
    if (r.binary_payload && static_cast<int64_t>(r.binary_payload->size()) >=
                                ctx.state.options().large_blob_log_bytes) {
      spdlog::warn("rollout store '{}': record '{}' carries a {}-byte blob", ctx.Param("name"),
                   r.id, r.binary_payload->size());
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RolloutStore> s, ctx.state.Rollout(ctx.Param("name")));
  STRATA_ASSIGN_OR_RETURN(uint64_t version, s->Add(records));
  HotSeries& hot = ctx.state.hot_series();
  MetricsRegistry& metrics = ctx.state.metrics();
  auto labels = [flush] { return MetricLabels{{"flush", flush ? "true" : "false"}}; };
  if (flush) {
    STRATA_RETURN_IF_ERROR(s->Flush().status());
    Increment(hot.rollout_appends_flushed.Get([&] {
      return metrics.GetCounter("strata_rollout_appends_flushed_total",
                                "Rollout appends that asked for flush");
    }));
  }
  Increment(hot.rollout_appends[flush].Get([&] {
    return metrics.GetCounter("strata_rollout_appends_total", "Rollout append requests", labels());
  }));
  Increment(hot.rollout_records_appended.Get([&] {
    return metrics.GetCounter("strata_rollout_records_appended_total", "Rollout records appended");
  }),
            records.size());
  Histogram* seconds = hot.rollout_append_seconds[flush].Get([&] {
    return metrics.GetHistogram("strata_rollout_add_request_duration_seconds",
                                "Rollout append request time", DefaultLatencyBuckets(), labels());
  });
  if (seconds != nullptr) seconds->Observe(MonotonicSeconds() - start);
  std::vector<std::string_view> ids;
  ids.reserve(records.size());
  for (const RolloutRecord& r : records) ids.emplace_back(r.id);
  return AddedResponse(version, ids);
}

Result<HttpResponse> ListRecords(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> limit, QueryInt(ctx, "limit"));
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> offset, QueryInt(ctx, "offset"));
  store::RolloutFilters filters;
  if (const QueryParam* f = ctx.Query("filters"); f != nullptr && !f->value.empty()) {
    Result<store::RolloutFilters> parsed = store::RolloutFilters::FromJson(f->value);
    if (!parsed.ok()) {
      return Status::InvalidArgument(
          fmt::format("invalid rollout filters: {}", parsed.status().message()));
    }
    filters = std::move(*parsed);
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RolloutStore> s, ctx.state.Rollout(ctx.Param("name")));
  STRATA_ASSIGN_OR_RETURN(std::vector<RolloutRecord> records,
                          s->List(limit, offset.value_or(0), filters));
  Json out = Json::array();
  for (const RolloutRecord& r : records) out.push_back(RolloutRecordToJson(r));
  return JsonResponse(200, {{"records", out}});
}

// A point read that refreshes the handle once after a miss (unless it is pinned by a
// checkout), so rows another instance merged into the base are found.
template <typename T, typename Read>
Result<std::optional<T>> ReadRefreshingOnMiss(RolloutStore& s, const Read& read) {
  STRATA_ASSIGN_OR_RETURN(std::optional<T> found, read());
  if (found || s.pinned()) return found;
  STRATA_RETURN_IF_ERROR(s.RefreshLatest());
  return read();
}

Result<HttpResponse> GetRecord(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RolloutStore> s, ctx.state.Rollout(ctx.Param("name")));
  const std::string& id = ctx.Param("id");
  STRATA_ASSIGN_OR_RETURN(std::optional<RolloutRecord> r,
                          ReadRefreshingOnMiss<RolloutRecord>(*s, [&] { return s->GetById(id); }));
  return JsonResponse(200, {{"record", r ? RolloutRecordToJson(*r) : Json(nullptr)}});
}

Result<HttpResponse> GetBlob(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RolloutStore> s, ctx.state.Rollout(ctx.Param("name")));
  const std::string& id = ctx.Param("id");
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> blob,
                          ReadRefreshingOnMiss<std::string>(*s, [&] { return s->GetBlob(id); }));
  if (!blob) return Status::NotFound(fmt::format("Rollout '{}' has no payload", id));
  std::shared_ptr<void> hold = ctx.state.blob_budget().TryAcquire(blob->size());
  if (hold == nullptr) {
    Count(ctx.state, "strata_rollout_blob_budget_rejections_total",
          "Blob requests refused by the in-flight blob budget", 1);
    return Status::Unavailable("server is at its in-flight blob memory limit; retry shortly");
  }
  HttpResponse r;
  r.content_type = "application/octet-stream";
  r.stream = std::make_shared<const std::string>(std::move(*blob));
  r.hold = std::move(hold);
  return r;
}

}  // namespace

void AddRolloutRoutes(Router& router) {
  const std::string base = "/api/v1/rollouts";
  router.Add("POST", base, Create);
  router.Add("GET", base, List);
  router.Add("GET", base + "/{name}", Info);
  router.Add("DELETE", base + "/{name}", Delete);
  router.Add("POST", base + "/{name}/records", Append, kRolloutBodyLimit, false,
             /*blob_admission=*/true);
  router.Add("GET", base + "/{name}/records", ListRecords);
  router.Add("GET", base + "/{name}/records/{id}", GetRecord);
  router.Add("GET", base + "/{name}/records/{id}/blob", GetBlob);
}

}  // namespace strata::server
