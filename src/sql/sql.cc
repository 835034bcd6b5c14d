// Runs one read-only SQL statement over a store (include/strata/sql.h): a fresh in-memory
// SQLite connection per query with the `records` table registered (records_table.h), an
// authorizer that lets through nothing but reads of `records` and function calls, a prepared
// statement checked to be a single read-only SELECT, and a step loop that streams rows to the
// caller up to the row cap.
#include "strata/sql.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <charconv>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sql/column_values.h"
#include "sql/records_table.h"
#include "strata/json.h"

namespace strata::sql {
namespace {

// How often (SQLite virtual machine steps) QueryOptions::cancelled is polled.
constexpr int kCancelPollSteps = 4096;
// A statement whose scan had to start over before it returned a row is run this many times.
constexpr int kStatementAttempts = 3;

struct CloseConnection {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct FinalizeStatement {
  void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
};
using Connection = std::unique_ptr<sqlite3, CloseConnection>;
using Statement = std::unique_ptr<sqlite3_stmt, FinalizeStatement>;

// What the authorizer refused first.
struct Authorization {
  std::string refusal;
};

std::string_view ActionName(int action) {
  switch (action) {
    case SQLITE_INSERT:
      return "INSERT";
    case SQLITE_UPDATE:
      return "UPDATE";
    case SQLITE_DELETE:
      return "DELETE";
    case SQLITE_PRAGMA:
      return "PRAGMA";
    case SQLITE_ATTACH:
      return "ATTACH";
    case SQLITE_DETACH:
      return "DETACH";
    case SQLITE_TRANSACTION:
      return "a transaction statement";
    case SQLITE_SAVEPOINT:
      return "SAVEPOINT";
    case SQLITE_ALTER_TABLE:
      return "ALTER TABLE";
    case SQLITE_ANALYZE:
      return "ANALYZE";
    case SQLITE_REINDEX:
      return "REINDEX";
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_TEMP_INDEX:
    case SQLITE_CREATE_TEMP_TABLE:
    case SQLITE_CREATE_TEMP_TRIGGER:
    case SQLITE_CREATE_TEMP_VIEW:
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_VTABLE:
      return "CREATE";
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_TEMP_INDEX:
    case SQLITE_DROP_TEMP_TABLE:
    case SQLITE_DROP_TEMP_TRIGGER:
    case SQLITE_DROP_TEMP_VIEW:
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_VIEW:
    case SQLITE_DROP_VTABLE:
      return "DROP";
    default:
      return "this statement";
  }
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// The tables a statement may read: the store, and SQLite's read-only table-valued JSON
// functions (to take list and struct columns apart).
constexpr std::string_view kReadableTables[] = {kRecordsTable, "json_each", "json_tree"};

// SQLite's authorizer: reads of kReadableTables, SELECT, function calls and recursive CTEs
// only.
int Authorize(void* data, int action, const char* arg1, const char* /*arg2*/, const char* database,
              const char* /*trigger*/) {
  auto& authorization = *static_cast<Authorization*>(data);
  std::string refusal;
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_READ: {
      const std::string_view table = arg1 == nullptr ? "" : arg1;
      const std::string_view schema = database == nullptr ? "main" : database;
      if (schema == "main") {
        for (std::string_view allowed : kReadableTables) {
          if (EqualsIgnoringCase(table, allowed)) return SQLITE_OK;
        }
      }
      refusal = fmt::format(
          "reading table '{}' is not allowed: a statement reads '{}' (and the table-valued "
          "functions json_each and json_tree) only",
          table, kRecordsTable);
      break;
    }
    default: {
      // The schema table is written while a table is declared: a CREATE, or the first use of
      // one of SQLite's own eponymous tables (pragma_table_info, json_each is a function).
      const std::string_view table = arg1 == nullptr ? "" : arg1;
      if (table == "sqlite_master" || table == "sqlite_temp_master") {
        refusal = fmt::format(
            "schema changes and tables other than '{}' are not allowed: strata runs one "
            "read-only SELECT over '{}'",
            kRecordsTable, kRecordsTable);
      } else {
        refusal = fmt::format("{} is not allowed: strata runs one read-only SELECT over '{}'",
                              ActionName(action), kRecordsTable);
      }
    }
  }
  if (authorization.refusal.empty()) authorization.refusal = std::move(refusal);
  return SQLITE_DENY;
}

int PollCancelled(void* data) {
  const auto& cancelled = *static_cast<const std::function<bool()>*>(data);
  return cancelled() ? 1 : 0;
}

Status Refused(std::string_view why) {
  return Status::InvalidArgument(fmt::format("SQL statement refused: {}", why));
}

// The Status for an SQLite error code `rc` of `db`.
Status SqliteError(sqlite3* db, int rc) {
  const std::string message = sqlite3_errmsg(db);
  switch (rc & 0xff) {
    case SQLITE_INTERRUPT:
      return Status::Aborted("the SQL query was cancelled");
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
      return Status::IOError(fmt::format("SQLite (temporary storage): {}", message));
    case SQLITE_NOMEM:
      return Status::Internal(fmt::format("SQLite: {}", message));
    default:
      return Status::InvalidArgument(fmt::format("SQL error: {}", message));
  }
}

// A connection with `records` over `context->base`, hardened for untrusted statements.
Result<Connection> OpenConnection(QueryContext* context, Authorization* authorization) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(
      ":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) {
    return Status::Internal(fmt::format("opening an SQLite connection failed: {}",
                                        raw == nullptr ? sqlite3_errstr(rc) : sqlite3_errmsg(raw)));
  }
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_limit(db.get(), SQLITE_LIMIT_ATTACHED, 0);
  STRATA_RETURN_IF_ERROR(RegisterRecordsTable(db.get(), context));
  // Connect the readable tables now: SQLite records an eponymous table in its schema the
  // first time a statement names it, which the authorizer below would refuse as a schema
  // change. Preparing a statement connects and plans it; it is never stepped, so nothing is
  // read.
  for (std::string_view table : kReadableTables) {
    sqlite3_stmt* connect = nullptr;
    const std::string connect_sql = table == kRecordsTable
                                        ? fmt::format("SELECT 0 FROM {}", table)
                                        : fmt::format("SELECT 0 FROM {}('[]')", table);
    const int prepared = sqlite3_prepare_v2(db.get(), connect_sql.c_str(), -1, &connect, nullptr);
    sqlite3_finalize(connect);
    if (prepared == SQLITE_OK) continue;
    if (!context->error.ok()) return context->error;
    // An SQLite built without JSON support simply lacks those functions.
    if (table != kRecordsTable) continue;
    return Status::InvalidArgument(
        fmt::format("the store cannot be read as an SQL table: {}", sqlite3_errmsg(db.get())));
  }
  sqlite3_set_authorizer(db.get(), Authorize, authorization);
  return db;
}

bool OnlySpace(std::string_view text) {
  return text.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos;
}

// Prepares `sql` as exactly one read-only SELECT; InvalidArgument otherwise.
Result<Statement> Prepare(sqlite3* db, std::string_view sql, Authorization* authorization) {
  if (sql.size() > static_cast<size_t>(sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, -1))) {
    return Status::InvalidArgument(fmt::format("the SQL text is too long ({} bytes, at most {})",
                                               sql.size(),
                                               sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, -1)));
  }
  if (OnlySpace(sql)) return Refused("no statement (the text is empty or a comment)");
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), 0, &raw, &tail);
  Statement statement(raw);
  if (rc != SQLITE_OK) {
    if (!authorization->refusal.empty()) return Refused(authorization->refusal);
    const std::string_view message = sqlite3_errmsg(db);
    // SQLite refuses writes to `records` (no xUpdate) before it asks the authorizer.
    if (message.ends_with("may not be modified")) {
      return Refused(fmt::format("writes are not allowed ({})", message));
    }
    return Status::InvalidArgument(fmt::format("SQL error: {}", message));
  }
  if (statement == nullptr) return Refused("no statement (the text is empty or a comment)");
  // What follows must be nothing but space, comments and semicolons: SQLite prepares no
  // statement from those.
  std::string_view rest(tail, static_cast<size_t>(sql.data() + sql.size() - tail));
  while (!OnlySpace(rest)) {
    sqlite3_stmt* next_raw = nullptr;
    const char* next_tail = nullptr;
    rc = sqlite3_prepare_v3(db, rest.data(), static_cast<int>(rest.size()), 0, &next_raw,
                            &next_tail);
    Statement next(next_raw);
    if (rc != SQLITE_OK || next != nullptr || next_tail == rest.data()) {
      return Refused("several statements: strata runs exactly one SELECT");
    }
    rest.remove_prefix(static_cast<size_t>(next_tail - rest.data()));
  }
  if (sqlite3_stmt_isexplain(statement.get()) != 0) {
    return Refused("EXPLAIN is not allowed: strata runs one read-only SELECT");
  }
  if (sqlite3_stmt_readonly(statement.get()) == 0 || sqlite3_column_count(statement.get()) == 0) {
    return Refused("not a read-only SELECT");
  }
  return statement;
}

Value ColumnValue(sqlite3_stmt* statement, int i) {
  switch (sqlite3_column_type(statement, i)) {
    case SQLITE_INTEGER:
      return static_cast<int64_t>(sqlite3_column_int64(statement, i));
    case SQLITE_FLOAT:
      return sqlite3_column_double(statement, i);
    case SQLITE_TEXT: {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, i));
      return std::string(text == nullptr ? "" : text,
                         static_cast<size_t>(sqlite3_column_bytes(statement, i)));
    }
    case SQLITE_BLOB: {
      const auto* bytes = static_cast<const char*>(sqlite3_column_blob(statement, i));
      return Blob{std::string(bytes == nullptr ? "" : bytes,
                              static_cast<size_t>(sqlite3_column_bytes(statement, i)))};
    }
    default:
      return std::monostate();
  }
}

}  // namespace

void AppendJson(const Value& value, std::string* out) {
  if (std::holds_alternative<std::monostate>(value)) {
    out->append("null");
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    char buffer[32];
    const auto written = std::to_chars(buffer, buffer + sizeof(buffer), *i);
    out->append(buffer, written.ptr);
  } else if (const auto* d = std::get_if<double>(&value)) {
    if (std::isnan(*d)) {
      out->append("\"NaN\"");
    } else if (std::isinf(*d)) {
      out->append(*d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    } else {
      char buffer[64];
      const auto written = std::to_chars(buffer, buffer + sizeof(buffer), *d);
      const std::string_view text(buffer, static_cast<size_t>(written.ptr - buffer));
      out->append(text);
      // Keep REAL results recognisable: 2.0, not 2.
      if (text.find_first_of(".e") == std::string_view::npos) out->append(".0");
    }
  } else if (const auto* text = std::get_if<std::string>(&value)) {
    out->append(
        nlohmann::json(*text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    out->push_back('"');
    out->append(json::Base64Encode(std::get<Blob>(value).bytes));
    out->push_back('"');
  }
}

Result<QuerySummary> QueryEach(const store::StorageBase& base, std::string_view sql,
                               const QueryOptions& options, const ColumnsCallback& on_columns,
                               const RowCallback& on_row, QueryStats* stats) {
  QueryStats own_stats;
  QueryContext context;
  context.base = &base;
  context.stats = stats != nullptr ? stats : &own_stats;
  return RunQuery(&context, sql, options, on_columns, on_row);
}

Result<QuerySummary> RunQuery(QueryContext* context_ptr, std::string_view sql,
                              const QueryOptions& options, const ColumnsCallback& on_columns,
                              const RowCallback& on_row) {
  QueryContext& context = *context_ptr;
  *context.stats = QueryStats();
  context.cancelled = &options.cancelled;
  if (options.max_rows < 0) {
    return Status::InvalidArgument(
        fmt::format("max_rows must be >= 0 (0 = no cap), got {}", options.max_rows));
  }
  Authorization authorization;
  STRATA_ASSIGN_OR_RETURN(Connection db, OpenConnection(&context, &authorization));
  STRATA_ASSIGN_OR_RETURN(Statement statement, Prepare(db.get(), sql, &authorization));
  if (options.cancelled) {
    sqlite3_progress_handler(db.get(), kCancelPollSteps, PollCancelled,
                             const_cast<std::function<bool()>*>(&options.cancelled));
  }

  const int columns = sqlite3_column_count(statement.get());
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(columns));
  for (int i = 0; i < columns; ++i) {
    const char* name = sqlite3_column_name(statement.get(), i);
    names.emplace_back(name == nullptr ? "" : name);
  }
  STRATA_RETURN_IF_ERROR(on_columns(names));

  QuerySummary summary;
  int attempt = 1;
  while (true) {
    const int rc = sqlite3_step(statement.get());
    if (rc == SQLITE_DONE) break;
    if (rc == SQLITE_ROW) {
      if (options.max_rows > 0 && summary.row_count == options.max_rows) {
        summary.truncated = true;
        break;
      }
      std::vector<Value> row;
      row.reserve(static_cast<size_t>(columns));
      for (int i = 0; i < columns; ++i) row.push_back(ColumnValue(statement.get(), i));
      STRATA_RETURN_IF_ERROR(on_row(std::move(row)));
      ++summary.row_count;
      continue;
    }
    // A scan that had to start over fails the statement; nothing was returned yet, so it can
    // simply run again.
    if (context.restarted_after_rows && summary.row_count == 0 && attempt < kStatementAttempts) {
      ++attempt;
      sqlite3_reset(statement.get());
      context.error = Status::OK();
      context.restarted_after_rows = false;
      continue;
    }
    if (!context.error.ok()) return context.error;
    return SqliteError(db.get(), rc);
  }
  return summary;
}

Result<QueryResult> Query(const store::StorageBase& base, std::string_view sql,
                          const QueryOptions& options, QueryStats* stats) {
  QueryResult result;
  STRATA_ASSIGN_OR_RETURN(QuerySummary summary, QueryEach(
                                                    base, sql, options,
                                                    [&](const std::vector<std::string>& columns) {
                                                      result.columns = columns;
                                                      return Status::OK();
                                                    },
                                                    [&](std::vector<Value> row) {
                                                      result.rows.push_back(std::move(row));
                                                      return Status::OK();
                                                    },
                                                    stats));
  result.row_count = summary.row_count;
  result.truncated = summary.truncated;
  return result;
}

std::string DescribeRecordsTable(const Schema& schema, std::string_view key_column) {
  return RecordsTableDeclaration(schema, schema.GetFieldIndex(key_column), kRecordsTable);
}

}  // namespace strata::sql
