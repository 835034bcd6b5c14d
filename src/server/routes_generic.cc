// /api/v1/generic: stores with a user-declared schema — create / list / info / delete, row
// appends, lists, point and batch reads, flush and merge.
#include <fmt/format.h>

#include "server/router.h"

namespace strata::server {

namespace {

using store::GenericStore;

constexpr StoreKind kKind = StoreKind::kGeneric;
constexpr size_t kMaxGetRowsIds = 1024;

Result<std::shared_ptr<GenericStore>> Open(RouteContext& ctx) {
  return ctx.state.Generic(ctx.Param("name"));
}

Result<Json> SpecJson(const store::SchemaSpec& spec) {
  try {
    return Json::parse(spec.ToJson());
  } catch (const Json::exception& e) {
    return Status::Internal(fmt::format("schema spec JSON: {}", e.what()));
  }
}

// Batches as the JSON text of an array of row objects.
Result<std::string> RowsText(const std::vector<RecordBatch>& batches) {
  std::string lines;
  for (const RecordBatch& b : batches) STRATA_RETURN_IF_ERROR(store::AppendRowsAsJson(b, &lines));
  std::string out = "[";
  size_t start = 0;
  bool first = true;
  while (start < lines.size()) {
    size_t end = lines.find('\n', start);
    if (end == std::string::npos) end = lines.size();
    if (end > start) {
      if (!first) out.push_back(',');
      out.append(lines, start, end - start);
      first = false;
    }
    start = end + 1;
  }
  out.push_back(']');
  return out;
}

HttpResponse RawJson(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Result<HttpResponse> Create(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> name, OptString(body, "name"));
  if (!name) return Status::InvalidArgument("name is required");
  STRATA_RETURN_IF_ERROR(ValidateStoreName(*name));
  auto schema = body.find("schema");
  if (schema == body.end() || schema->is_null())
    return Status::InvalidArgument("schema is required");
  STRATA_ASSIGN_OR_RETURN(store::SchemaSpec spec, store::SchemaSpec::FromJson(schema->dump()));
  STRATA_RETURN_IF_ERROR(spec.Validate());
  STRATA_ASSIGN_OR_RETURN(std::optional<bool> seal, OptBool(body, "seal_on_add"));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<GenericStore> s,
                          ctx.state.CreateGeneric(*name, spec, seal.value_or(false)));
  STRATA_ASSIGN_OR_RETURN(Json spec_json, SpecJson(s->spec()));
  return JsonResponse(201, {{"name", *name},
                            {"uri", ctx.state.StoreUri(kKind, *name)},
                            {"version", s->base().version()},
                            {"schema", spec_json}});
}

Result<HttpResponse> List(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, ctx.state.registry().List(kKind));
  Json stores = Json::array();
  for (const std::string& n : names) {
    stores.push_back({{"name", n}, {"uri", ctx.state.StoreUri(kKind, n)}});
  }
  return JsonResponse(200, {{"stores", stores}});
}

Result<HttpResponse> Info(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<GenericStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(Json spec_json, SpecJson(s->spec()));
  const std::string& name = ctx.Param("name");
  return JsonResponse(200, {{"name", name},
                            {"uri", ctx.state.StoreUri(kKind, name)},
                            {"version", s->base().version()},
                            {"schema", spec_json}});
}

Result<HttpResponse> Delete(RouteContext& ctx) {
  STRATA_RETURN_IF_ERROR(ctx.state.Delete(kKind, ctx.Param("name")));
  return EmptyResponse(204);
}

Result<HttpResponse> AddRows(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  auto rows = body.find("rows");
  if (rows == body.end() || !rows->is_array())
    return Status::InvalidArgument("rows: expected an array");
  if (rows->empty()) return Status::InvalidArgument("rows array must not be empty");
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<GenericStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(uint64_t version, s->Add(rows->dump()));
  return JsonResponse(201, {{"version", version}, {"count", rows->size()}});
}

Result<HttpResponse> ListRows(RouteContext& ctx) {
  store::GenericListRequest request;
  STRATA_ASSIGN_OR_RETURN(request.limit, QueryInt(ctx, "limit"));
  STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> offset, QueryInt(ctx, "offset"));
  request.offset = offset.value_or(0);
  if (const QueryParam* f = ctx.Query("filter"); f != nullptr) request.filter = f->value;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<GenericStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, s->List(request));
  STRATA_ASSIGN_OR_RETURN(std::string rows, RowsText(batches));
  return RawJson(200, fmt::format(R"({{"rows":{}}})", rows));
}

Result<HttpResponse> GetRow(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<GenericStore> s, Open(ctx));
  const std::string& id = ctx.Param("id");
  std::vector<std::string> columns;
  if (const QueryParam* c = ctx.Query("columns"); c != nullptr) columns = SplitCommaList(c->value);
  STRATA_ASSIGN_OR_RETURN(RecordBatch row, s->Get(id, columns));
  if (row.num_rows() == 0 && !s->base().pinned()) {
    STRATA_RETURN_IF_ERROR(s->RefreshLatest());
    STRATA_ASSIGN_OR_RETURN(row, s->Get(id, columns));
  }
  if (row.num_rows() == 0) return Status::NotFound(fmt::format("Row '{}' does not exist", id));
  std::string text;
  STRATA_RETURN_IF_ERROR(store::AppendRowsAsJson(row, &text));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return RawJson(200, std::move(text));
}

Result<HttpResponse> GetRows(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
  auto ids_json = body.find("ids");
  if (ids_json == body.end() || !ids_json->is_array()) {
    return Status::InvalidArgument("ids: expected an array of strings");
  }
  if (ids_json->size() > kMaxGetRowsIds) {
    return Status::InvalidArgument(
        fmt::format("get-rows takes at most {} ids, got {}", kMaxGetRowsIds, ids_json->size()));
  }
  std::vector<std::string> ids;
  for (const Json& id : *ids_json) {
    if (!id.is_string()) return Status::InvalidArgument("ids: expected an array of strings");
    ids.push_back(id.get<std::string>());
  }
  std::vector<std::string> columns;
  bool projected = false;
  if (auto c = body.find("columns"); c != body.end() && !c->is_null()) {
    if (!c->is_array()) return Status::InvalidArgument("columns: expected an array of strings");
    projected = true;
    for (const Json& name : *c) {
      if (!name.is_string())
        return Status::InvalidArgument("columns: expected an array of strings");
      columns.push_back(name.get<std::string>());
    }
    if (columns.empty()) columns.push_back("id");  // an existence check
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<GenericStore> s, Open(ctx));
  if (ids.empty()) return RawJson(200, R"({"rows":[]})");
  STRATA_ASSIGN_OR_RETURN(RecordBatch rows,
                          s->GetMany(ids, projected ? columns : std::vector<std::string>{}));
  STRATA_ASSIGN_OR_RETURN(std::string text, RowsText({rows}));
  return RawJson(200, fmt::format(R"({{"rows":{}}})", text));
}

Result<HttpResponse> Flush(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<GenericStore> s, Open(ctx));
  STRATA_RETURN_IF_ERROR(s->Flush().status());
  return EmptyResponse(204);
}

Result<HttpResponse> MergeWal(RouteContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<GenericStore> s, Open(ctx));
  STRATA_ASSIGN_OR_RETURN(store::MergeReport report, s->Cleanup());
  return JsonResponse(200, {{"reclaimed", report.generations_reclaimed}});
}

}  // namespace

void AddGenericRoutes(Router& router) {
  const std::string base = "/api/v1/generic";
  router.Add("POST", base, Create);
  router.Add("GET", base, List);
  router.Add("GET", base + "/{name}", Info);
  router.Add("DELETE", base + "/{name}", Delete);
  router.Add("POST", base + "/{name}/rows", AddRows, kGenericBodyLimit);
  router.Add("GET", base + "/{name}/rows", ListRows);
  router.Add("GET", base + "/{name}/rows/{id}", GetRow);
  router.Add("POST", base + "/{name}/get-rows", GetRows);
  router.Add("POST", base + "/{name}/flush", Flush);
  router.Add("POST", base + "/{name}/merge-wal", MergeWal);
}

}  // namespace strata::server
