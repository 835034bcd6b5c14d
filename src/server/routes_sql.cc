// POST /api/v1/{kind}/{name}/sql: one read-only SELECT / WITH statement over the store's
// `records` view (include/strata/sql.h, docs/sql.md) -> {columns, rows, row_count, truncated}.
// The result is written as it streams out of SQLite, up to the caller's max_rows.
#include <fmt/format.h>

#include "server/router.h"
#include "strata/sql.h"

namespace strata::server {

namespace {

// The most rows one response may carry (the request's max_rows is capped here).
constexpr int64_t kMaxSqlRows = 10'000'000;

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
    auto on_row = [&out, &first](std::vector<sql::Value> row) -> Status {
      out += first ? "[" : ",[";
      first = false;
      for (size_t i = 0; i < row.size(); ++i) {
        if (i > 0) out.push_back(',');
        sql::AppendJson(row[i], &out);
      }
      out.push_back(']');
      return Status::OK();
    };
    STRATA_ASSIGN_OR_RETURN(sql::QuerySummary summary,
                            sql::QueryEach(*base, *sql, options, on_columns, on_row));
    out += fmt::format(R"(],"row_count":{},"truncated":{}}})", summary.row_count,
                       summary.truncated ? "true" : "false");
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
