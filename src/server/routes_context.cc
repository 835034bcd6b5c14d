// /api/v1/contexts: context stores — create / list / info / delete, record writes (add,
// upsert, update, delete), reads (list, by id, by external id, related, payload), vector search
// and hybrid retrieval.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <limits>

#include "server/clock.h"
#include "server/router.h"

namespace strata::server {

namespace {

using store::ContextRecord;
using store::ContextStore;

constexpr StoreKind kKind = StoreKind::kContext;

Result<std::shared_ptr<ContextStore>> Open(RouteContext& ctx) {
  return ctx.state.Context(ctx.Param("name"));
}

// Every context write seals a generation of its own: merging the own shard once the count
// trigger is due (ServerOptions::context_merge_after_generations; StorageBase::MergeIfDue)
// keeps the pending generations, and with them the cost of every read, bounded without
// waiting for the flush sweeper. The write is durable already: a failed merge is logged and
// left to the next write.
void MergeIfDue(ContextStore& s, std::string_view name) {
  Result<bool> merged = s.base().MergeIfDue();
  if (!merged.ok()) {
    spdlog::warn("context '{}': merge after write failed: {}", name, merged.status().ToString());
  }
}

Json Info(ServerState& state, std::string_view name, uint64_t version) {
  return {{"name", name}, {"uri", state.StoreUri(kKind, name)}, {"version", version}};
}

Result<store::LifecycleQueryOptions> LifecycleFromQuery(const RouteContext& ctx) {
  store::LifecycleQueryOptions o;
  STRATA_ASSIGN_OR_RETURN(o.include_expired, QueryBool(ctx, "include_expired", false));
  STRATA_ASSIGN_OR_RETURN(o.include_retired, QueryBool(ctx, "include_retired", false));
  return o;
}

Result<store::LifecycleQueryOptions> LifecycleFromBody(const Json& body) {
  store::LifecycleQueryOptions o;
  STRATA_ASSIGN_OR_RETURN(std::optional<bool> expired, OptBool(body, "include_expired"));
  STRATA_ASSIGN_OR_RETURN(std::optional<bool> retired, OptBool(body, "include_retired"));
  o.include_expired = expired.value_or(false);
  o.include_retired = retired.value_or(false);
  return o;
}

Result<store::RecordFilters> FiltersFromBody(const Json& body) {
  auto it = body.find("filters");
  if (it == body.end() || it->is_null()) return store::RecordFilters{};
  return store::RecordFilters::FromJson(it->dump());
}

Result<std::vector<float>> FloatArray(const Json& value, std::string_view what) {
  if (!value.is_array()) {
    return Status::InvalidArgument(fmt::format("{}: expected an array of numbers", what));
  }
  std::vector<float> out;
  out.reserve(value.size());
  for (const Json& v : value) {
    if (!v.is_number()) {
      return Status::InvalidArgument(fmt::format("{}: expected an array of numbers", what));
    }
    const double d = v.get<double>();
    if (!(std::abs(d) <= std::numeric_limits<float>::max())) {
      return Status::InvalidArgument(
          fmt::format("{}: {} is out of range for a 32-bit float", what, d));
    }
    out.push_back(static_cast<float>(d));
  }
  return out;
}

Json RecordsJson(const std::vector<ContextRecord>& records) {
  Json out = Json::array();
  for (const ContextRecord& r : records) out.push_back(ContextRecordToJson(r));
  return out;
}

Result<HttpResponse> Create(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> name, OptString(body, "name"));
  if (!name) return Status::InvalidArgument("name is required");
  STRATA_RETURN_IF_ERROR(ValidateStoreName(*name));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> index_type, OptString(body, "id_index_type"));
  if (index_type && *index_type != "none" && *index_type != "zonemap" && *index_type != "btree") {
    return Status::InvalidArgument(fmt::format(
        "Invalid id_index_type: '{}'. Must be 'none', 'zonemap', or 'btree'", *index_type));
  }
  store::ContextStoreOptions options;
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> dim, OptInt(body, "embedding_dim"));
  if (dim) {
    if (*dim <= 0 || *dim > 65536) {
      return Status::InvalidArgument(
          fmt::format("embedding_dim must be between 1 and 65536, got {}", *dim));
    }
    options.embedding_dim = static_cast<int32_t>(*dim);
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> metric, OptString(body, "distance_metric"));
  if (metric) {
    STRATA_ASSIGN_OR_RETURN(options.distance_metric, store::ParseDistanceMetric(*metric));
  }
  if (auto it = body.find("blob_columns"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return Status::InvalidArgument("blob_columns: expected an array");
    for (const Json& c : *it) {
      if (!c.is_string()) return Status::InvalidArgument("blob_columns: expected strings");
      options.blob_columns.insert(c.get<std::string>());
    }
  }
  Result<std::shared_ptr<ContextStore>> s = ctx.state.CreateContext(*name, std::move(options));
  if (s.status().IsAlreadyExists()) {
    return Status::AlreadyExists(fmt::format("Context '{}' already exists", *name));
  }
  STRATA_RETURN_IF_ERROR(s.status());
  return JsonResponse(201, Info(ctx.state, *name, (*s)->version()));
}

// Every registered context (the reference lists resident ones only); a context that is not
// open is opened for its version without being cached or claiming its shard.
Result<HttpResponse> List(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, ctx.state.registry().List(kKind));
  Json contexts = Json::array();
  for (const std::string& n : names) {
    Result<uint64_t> version = ctx.state.ContextVersion(n);
    if (!version.ok()) continue;  // deleted meanwhile
    contexts.push_back(Info(ctx.state, n, *version));
  }
  return JsonResponse(200, {{"contexts", contexts}});
}

Result<HttpResponse> Get(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  return JsonResponse(200, Info(ctx.state, ctx.Param("name"), s->version()));
}

Result<HttpResponse> Delete(RouteContext& ctx) {
  STRATA_RETURN_IF_ERROR(ctx.state.Delete(kKind, ctx.Param("name")));
  return EmptyResponse(204);
}

// The `records` array of a body, parsed as AddRecordRequests.
Result<std::vector<ContextRecord>> RecordsFromBody(const Json& body) {
  auto it = body.find("records");
  if (it == body.end() || it->is_null() || (it->is_array() && it->empty())) {
    return Status::InvalidArgument("records array must not be empty");
  }
  if (!it->is_array()) return Status::InvalidArgument("records: expected an array");
  std::vector<ContextRecord> records;
  records.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(ContextRecord r,
                            ContextRecordFromJson((*it)[i], fmt::format("records[{}]", i)));
    records.push_back(std::move(r));
  }
  return records;
}

Result<HttpResponse> AddRecords(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> records, RecordsFromBody(body));
  const std::string run_id = NewUuidV4();
  std::vector<std::string> ids;
  ids.reserve(records.size());
  for (ContextRecord& r : records) {
    r.id = NewUuidV4();
    r.run_id = run_id;
    ids.push_back(r.id);
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(uint64_t version, s->Add(std::move(records)));
  MergeIfDue(*s, ctx.Param("name"));
  return AddedResponse(version, std::vector<std::string_view>(ids.begin(), ids.end()));
}

Status CheckUpsertKey(const Json& body) {
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> key, OptString(body, "key"));
  if (key && *key != "external_id") {
    return Status::InvalidArgument(
        fmt::format("upsert key '{}' is not supported; use 'external_id'", *key));
  }
  return Status::OK();
}

Json UpsertJson(const store::UpsertResult& r) {
  return {{"inserted", r.inserted},
          {"replaced_id", r.replaced_id ? Json(*r.replaced_id) : Json(nullptr)},
          {"record", ContextRecordToJson(r.record)}};
}

Result<ContextRecord> UpsertRecord(const Json& value, std::string_view where,
                                   const std::string& run_id) {
  STRATA_ASSIGN_OR_RETURN(ContextRecord r, ContextRecordFromJson(value, where));
  if (!r.external_id || r.external_id->empty()) {
    return Status::InvalidArgument(
        where == "record" ? std::string("upsert requires record.external_id")
                          : fmt::format("upsert requires record.external_id ({})", where));
  }
  r.id = NewUuidV4();
  r.run_id = run_id;
  return r;
}

Result<HttpResponse> Upsert(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  STRATA_RETURN_IF_ERROR(CheckUpsertKey(body));
  auto it = body.find("record");
  if (it == body.end() || !it->is_object()) {
    return Status::InvalidArgument("record: expected an object");
  }
  STRATA_ASSIGN_OR_RETURN(ContextRecord record, UpsertRecord(*it, "record", NewUuidV4()));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(store::UpsertResult r, s->UpsertByExternalId(std::move(record)));
  MergeIfDue(*s, ctx.Param("name"));
  Json out = UpsertJson(r);
  out["version"] = r.version;
  return JsonResponse(r.inserted ? 201 : 200, out);
}

Result<HttpResponse> UpsertBatch(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  STRATA_RETURN_IF_ERROR(CheckUpsertKey(body));
  auto it = body.find("records");
  if (it == body.end() || !it->is_array() || it->empty()) {
    return Status::InvalidArgument("records array must not be empty");
  }
  const std::string run_id = NewUuidV4();
  std::vector<ContextRecord> records;
  for (size_t i = 0; i < it->size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(ContextRecord r,
                            UpsertRecord((*it)[i], fmt::format("records[{}]", i), run_id));
    records.push_back(std::move(r));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(std::vector<store::UpsertResult> results,
                          s->UpsertManyByExternalId(std::move(records)));
  MergeIfDue(*s, ctx.Param("name"));
  Json out = Json::array();
  uint64_t version = s->version();
  for (const store::UpsertResult& r : results) {
    out.push_back(UpsertJson(r));
    version = r.version;
  }
  return JsonResponse(200, {{"version", version}, {"results", out}});
}

Result<HttpResponse> Update(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> id, OptString(body, "id"));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> external_id, OptString(body, "external_id"));
  if (!id && !external_id) {
    return Status::InvalidArgument("update requires either id or external_id");
  }
  if (id && external_id) {
    return Status::InvalidArgument("update accepts only one of id or external_id");
  }
  auto it = body.find("patch");
  const Json patch_json = it == body.end() || it->is_null() ? Json::object() : *it;
  STRATA_ASSIGN_OR_RETURN(store::ContextPatch patch, ContextPatchFromJson(patch_json, "patch"));
  if (patch.empty()) return Status::InvalidArgument("update requires at least one patch field");
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(
      std::optional<store::UpdateResult> r,
      id ? s->UpdateById(*id, patch) : s->UpdateByExternalId(*external_id, patch));
  MergeIfDue(*s, ctx.Param("name"));
  if (!r) return JsonResponse(200, {{"version", s->version()}, {"updated", false}});
  return JsonResponse(200, {{"version", r->version},
                            {"updated", true},
                            {"replaced_id", r->replaced_id},
                            {"record", ContextRecordToJson(r->record)}});
}

Result<HttpResponse> ListRecords(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> limit, QueryInt(ctx, "limit"));
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> offset, QueryInt(ctx, "offset"));
  STRATA_ASSIGN_OR_RETURN(store::LifecycleQueryOptions lifecycle, LifecycleFromQuery(ctx));
  store::RecordFilters filters;
  if (const QueryParam* f = ctx.Query("filters"); f != nullptr && !f->value.empty()) {
    if (!Json::accept(f->value)) {
      return Status::InvalidArgument(fmt::format("invalid filters JSON: '{}'", f->value));
    }
    STRATA_ASSIGN_OR_RETURN(filters, store::RecordFilters::FromJson(f->value));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> records,
                          s->ListFiltered(filters, limit, offset.value_or(0), lifecycle));
  return JsonResponse(200, {{"records", RecordsJson(records)}});
}

Result<HttpResponse> GetByExternalId(RouteContext& ctx) {
  const QueryParam* p = ctx.Query("external_id");
  if (p == nullptr) return Status::InvalidArgument("external_id is required");
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(std::optional<ContextRecord> r, s->GetByExternalId(p->value));
  return JsonResponse(200, {{"record", r ? ContextRecordToJson(*r) : Json(nullptr)}});
}

Result<HttpResponse> Related(RouteContext& ctx) {
  const QueryParam* target = ctx.Query("target_id");
  if (target == nullptr) return Status::InvalidArgument("target_id is required");
  std::optional<std::string> relation;
  if (const QueryParam* r = ctx.Query("relation"); r != nullptr && !r->value.empty()) {
    relation = r->value;
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> limit, QueryInt(ctx, "limit"));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> records,
                          s->ListRelated(target->value, relation, limit));
  return JsonResponse(200, {{"records", RecordsJson(records)}});
}

Result<HttpResponse> GetRecord(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  const std::string& id = ctx.Param("id");
  STRATA_ASSIGN_OR_RETURN(std::optional<ContextRecord> r, s->GetById(id));
  if (!r && !s->base().pinned()) {
    STRATA_RETURN_IF_ERROR(s->RefreshLatest());
    STRATA_ASSIGN_OR_RETURN(r, s->GetById(id));
  }
  return JsonResponse(200, {{"record", r ? ContextRecordToJson(*r) : Json(nullptr)}});
}

Result<HttpResponse> GetPayload(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  const std::string& id = ctx.Param("id");
  STRATA_ASSIGN_OR_RETURN(std::optional<ContextRecord> record, s->GetById(id));
  if (!record) return Status::NotFound(fmt::format("Record '{}' does not exist", id));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> payload, s->FetchPayload(id));
  if (!payload) return Status::NotFound(fmt::format("Record '{}' does not exist", id));
  HttpResponse r;
  r.content_type = record->content_type.empty() ? "application/octet-stream" : record->content_type;
  r.stream = std::make_shared<const std::string>(std::move(*payload));
  return r;
}

Result<HttpResponse> DeleteRecord(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(bool deleted, s->DeleteById(ctx.Param("id")));
  MergeIfDue(*s, ctx.Param("name"));
  return JsonResponse(200, {{"deleted", deleted}, {"version", s->version()}});
}

Result<HttpResponse> DeleteByExternalId(RouteContext& ctx) {
  const QueryParam* p = ctx.Query("external_id");
  if (p == nullptr) return Status::InvalidArgument("external_id is required");
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(bool deleted, s->DeleteByExternalId(p->value));
  MergeIfDue(*s, ctx.Param("name"));
  return JsonResponse(200, {{"deleted", deleted}, {"version", s->version()}});
}

Result<std::optional<int64_t>> Limit(const Json& body) {
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> limit, OptInt(body, "limit"));
  if (limit && *limit < 0) return Status::InvalidArgument("limit must not be negative");
  return limit;
}

// Relationships are left out of search results unless asked for.
void MaybeClearRelationships(bool include, ContextRecord* record) {
  if (!include) record->relationships = std::vector<store::ContextRelationship>{};
}

Result<HttpResponse> Search(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  auto q = body.find("query");
  if (q == body.end()) return Status::InvalidArgument("query is required");
  STRATA_ASSIGN_OR_RETURN(std::vector<float> query, FloatArray(*q, "query"));
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> limit, Limit(body));
  STRATA_ASSIGN_OR_RETURN(store::RecordFilters filters, FiltersFromBody(body));
  STRATA_ASSIGN_OR_RETURN(store::LifecycleQueryOptions lifecycle, LifecycleFromBody(body));
  STRATA_ASSIGN_OR_RETURN(std::optional<bool> relationships,
                          OptBool(body, "include_relationships"));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(
      std::vector<store::SearchResult> results,
      s->Search(query, limit.value_or(store::kDefaultSearchLimit), filters, lifecycle));
  Json out = Json::array();
  for (store::SearchResult& r : results) {
    MaybeClearRelationships(relationships.value_or(false), &r.record);
    out.push_back({{"record", ContextRecordToJson(r.record)}, {"distance", r.distance}});
  }
  return JsonResponse(200, {{"results", out}});
}

Result<HttpResponse> Retrieve(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> fusion, OptString(body, "fusion"));
  if (fusion && *fusion != "rrf") {
    return Status::InvalidArgument("retrieve fusion currently supports only 'rrf'");
  }
  store::RetrieveOptions options;
  STRATA_ASSIGN_OR_RETURN(options.text, OptString(body, "text"));
  if (auto v = body.find("vector"); v != body.end() && !v->is_null()) {
    STRATA_ASSIGN_OR_RETURN(options.vector, FloatArray(*v, "vector"));
  }
  STRATA_ASSIGN_OR_RETURN(options.limit, Limit(body));
  STRATA_ASSIGN_OR_RETURN(options.filters, FiltersFromBody(body));
  STRATA_ASSIGN_OR_RETURN(options.lifecycle, LifecycleFromBody(body));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> scoring, OptString(body, "text_scoring"));
  if (scoring && *scoring == "overlap") {
    options.text_scoring = store::TextScoring::kOverlap;
  } else if (scoring && *scoring != "bm25") {
    return Status::InvalidArgument(
        fmt::format("invalid text_scoring '{}': expected 'bm25' or 'overlap'", *scoring));
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<bool> relationships,
                          OptBool(body, "include_relationships"));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ContextStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(std::vector<store::RetrieveResult> results, s->Retrieve(options));
  Json out = Json::array();
  for (store::RetrieveResult& r : results) {
    MaybeClearRelationships(relationships.value_or(false), &r.record);
    out.push_back(
        {{"record", ContextRecordToJson(r.record)},
         {"score", r.score},
         {"vector_distance", r.vector_distance ? Json(*r.vector_distance) : Json(nullptr)},
         {"text_score", r.text_score ? Json(*r.text_score) : Json(nullptr)},
         {"matched_channels", r.matched_channels}});
  }
  return JsonResponse(200, {{"results", out}});
}

}  // namespace

void AddContextRoutes(Router& router) {
  const std::string base = "/api/v1/contexts";
  router.Add("POST", base, Create);
  router.Add("GET", base, List);
  router.Add("GET", base + "/{name}", Get);
  router.Add("DELETE", base + "/{name}", Delete);
  router.Add("POST", base + "/{name}/records", AddRecords);
  router.Add("PUT", base + "/{name}/records", Upsert);
  router.Add("PUT", base + "/{name}/records/batch", UpsertBatch);
  router.Add("PATCH", base + "/{name}/records", Update);
  router.Add("GET", base + "/{name}/records", ListRecords);
  router.Add("DELETE", base + "/{name}/records", DeleteByExternalId);
  router.Add("GET", base + "/{name}/records/by-external-id", GetByExternalId);
  router.Add("GET", base + "/{name}/records/related", Related);
  router.Add("GET", base + "/{name}/records/{id}", GetRecord);
  router.Add("DELETE", base + "/{name}/records/{id}", DeleteRecord);
  router.Add("GET", base + "/{name}/records/{id}/payload", GetPayload);
  router.Add("POST", base + "/{name}/search", Search);
  router.Add("POST", base + "/{name}/retrieve", Retrieve);
}

}  // namespace strata::server
