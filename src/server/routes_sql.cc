// POST /api/v1/{kind}/{name}/sql: one read-only SELECT / WITH statement over the store's
// `records` view (include/strata/sql.h, docs/sql.md) -> {columns, rows, row_count, truncated}.
// The result is built as it streams out of SQLite, up to the caller's max_rows: a result that
// stays under kChunkBytes is answered whole (with a Content-Length, and an error status if the
// query fails), a larger one is sent chunked as it is produced, kChunkBytes at a time, so the
// server never holds a large result. A query that fails after the first chunk went out ends the
// connection without the last chunk: the client sees a truncated body, never a complete one.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/router.h"
#include "strata/sql.h"

namespace strata::server {

namespace {

// The most rows one response may carry (the request's max_rows is capped here).
constexpr int64_t kMaxSqlRows = 10'000'000;
constexpr size_t kChunkBytes = size_t{256} * 1024;

void AppendJsonString(std::string_view text, std::string* out) {
  out->append(Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace));
}

RouteHandler Sql(StoreKind kind) {
  return [kind](RouteContext& ctx) -> Result<HttpResponse> {
    STRATA_ASSIGN_OR_RETURN(Json body, ParseJsonBody(ctx.request));
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> sql, OptString(body, "sql"));
    if (!sql || sql->empty()) return Status::InvalidArgument("sql is required");
    STRATA_ASSIGN_OR_RETURN(std::optional<int64_t> max_rows, OptInt(body, "max_rows"));
    sql::QueryOptions options;
    options.max_rows = max_rows.value_or(ctx.state.options().default_sql_max_rows);
    if (options.max_rows < 1 || options.max_rows > kMaxSqlRows) {
      return Status::InvalidArgument(
          fmt::format("max_rows must be between 1 and {}, got {}", kMaxSqlRows, options.max_rows));
    }
    std::shared_ptr<void> keep;
    STRATA_ASSIGN_OR_RETURN(store::StorageBase * base,
                            ctx.state.Base(kind, ctx.Param("name"), &keep));
    std::string out = R"({"columns":[)";
    auto on_columns = [&out](const std::vector<std::string>& columns) -> Status {
      for (size_t i = 0; i < columns.size(); ++i) {
        if (i > 0) out.push_back(',');
        AppendJsonString(columns[i], &out);
      }
      out += R"(],"rows":[)";
      return Status::OK();
    };
    bool first = true;
    std::shared_ptr<ChunkWriter> chunked;  // set once the result outgrew kChunkBytes
    size_t sent = 0;
    auto on_row = [&](std::vector<sql::Value> row) -> Status {
      out += first ? "[" : ",[";
      first = false;
      for (size_t i = 0; i < row.size(); ++i) {
        if (i > 0) out.push_back(',');
        sql::AppendJson(row[i], &out);
      }
      out.push_back(']');
      if (out.size() < kChunkBytes) return Status::OK();
      if (!chunked) chunked = ctx.request.begin_chunked(JsonResponse(200, Json::object()));
      sent += out.size();
      Status s = chunked->Write(std::move(out));
      out.clear();
      out.reserve(kChunkBytes + kChunkBytes / 4);
      return s;
    };
    Result<sql::QuerySummary> summary = sql::QueryEach(*base, *sql, options, on_columns, on_row);
    if (!summary.ok()) {
      if (!chunked) return summary.status();
      if (summary.status().code() != StatusCode::kAborted) {
        spdlog::warn("{} {}: SQL failed after {} bytes of its result were sent: {}",
                     ctx.request.method, ctx.request.path, sent, summary.status().ToString());
      }
      chunked->Finish(summary.status());
      return HttpResponse{};
    }
    out += fmt::format(R"(],"row_count":{},"truncated":{}}})", summary->row_count,
                       summary->truncated ? "true" : "false");
    if (chunked) {
      Status s = chunked->Write(std::move(out));
      chunked->Finish(s);
      return HttpResponse{};
    }
    HttpResponse r;
    r.body = std::move(out);
    return r;
  };
}

}  // namespace

void AddSqlRoutes(Router& router) {
  for (const KindPath& k : kKindPaths) {
    router.Add("POST", fmt::format("/api/v1/{}/{{name}}/sql", k.segment), Sql(k.kind));
  }
}

}  // namespace strata::server
