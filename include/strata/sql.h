// SQL over a store: one read-only SELECT (or WITH ... SELECT) statement, run by SQLite over
// the store's rows as the table `records`.
//
// `records` is the store's LSM "all" view (StorageBase::ScanEach with ListSource::kAll: base
// table plus pending generations, newest row per key, tombstones hidden), exposed to SQLite
// as a virtual table. It is never copied into SQLite: each scan of it streams batches from
// strata on a thread of its own through a queue of two batches, and a statement that stops
// early (LIMIT, the row cap, an error) stops the scan without reading the rest of the store.
// Filters that SQLite offers the table (=, !=, <, <=, >, >=, IN, IS [NOT] NULL, GLOB, and
// LIKE patterns without letters) become a strata filter when that is exactly equivalent or a
// superset (SQLite checks every row again), only the columns the statement names are read,
// and `id = 'x'` / `id IN (...)` on the store's key column are key lookups
// (StorageBase::GetMany) instead of scans. docs/sql.md lists the rules.
//
// Columns: every store column, named as in the store schema; blob columns (field metadata
// kBlobColumnMetadata, include/strata/generic_store.h) are HIDDEN: `SELECT *` leaves them out
// and naming them reads them. Types: integers and bool -> INTEGER (uint64 values past
// INT64_MAX -> REAL), float64 -> REAL, float32 -> REAL holding the shortest decimal that reads
// back as the float32 (0.92f is 0.92), NaN -> NULL (SQLite has no NaN), utf8 and
// dictionary<utf8> -> TEXT, binary -> BLOB, timestamp[us] -> TEXT in RFC 3339, UTC, with six
// fraction digits ("2026-01-05T09:30:00.000000Z", which sorts as time for years 0000-9999),
// lists, fixed-size lists and structs -> TEXT holding JSON (the JSON codec's form,
// include/strata/json.h).
//
// Refused with InvalidArgument, before anything is read: more or less than one statement;
// anything but a read-only SELECT / WITH / VALUES (DML, DDL, PRAGMA, ATTACH, transactions,
// EXPLAIN); reads of any table but `records` and SQLite's JSON table functions json_each and
// json_tree (sqlite_schema and pragma_* included). A statement SQLite cannot prepare (syntax,
// unknown column) is InvalidArgument with SQLite's message.
//
// Thread safety: the functions are reentrant; each call uses its own SQLite connection. The
// StorageBase must stay open for the whole call (it is read concurrently by the scan threads,
// which StorageBase allows). Errors from strata keep their code (Unavailable past the
// pending-generation cap, Corruption, IOError ...); a scan whose store changed under it in a
// way that needs its rows delivered again fails with Busy when rows were already returned
// (run the query again), and is re-run transparently otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "strata/status.h"
#include "strata/storage_base.h"

namespace strata::sql {

// The table name statements read.
inline constexpr std::string_view kRecordsTable = "records";
// QueryOptions::max_rows's default.
inline constexpr int64_t kDefaultMaxRows = 10000;

struct QueryOptions {
  // The most result rows returned; when the statement has more, the result is truncated (a
  // cap, never a refusal: the rows past it are not computed). 0 = no cap. Negative values are
  // InvalidArgument.
  int64_t max_rows = kDefaultMaxRows;
  // Polled while the statement runs (every few thousand SQLite steps and before each batch a
  // scan hands over); returning true stops the query with Aborted. Empty = never. Called on
  // the calling thread.
  std::function<bool()> cancelled;
};

// A BLOB value (bytes); TEXT values are std::string.
struct Blob {
  std::string bytes;
  friend bool operator==(const Blob&, const Blob&) = default;
};

// One result value: NULL, INTEGER, REAL, TEXT or BLOB, as SQLite typed it.
using Value = std::variant<std::monostate, int64_t, double, std::string, Blob>;

// Appends `value` as JSON: null, an integer, a number in its shortest round-trip form (NaN
// and the infinities as the strings "NaN", "Infinity", "-Infinity", as the JSON codec writes
// them), a string (invalid UTF-8 replaced by U+FFFD), or a BLOB as a padded base64 string.
void AppendJson(const Value& value, std::string* out);

// What a query read, for tests and observability.
struct QueryStats {
  // Streaming scans of the store started (SQLite may scan `records` several times: self
  // joins, correlated subqueries).
  int64_t scans = 0;
  // Keys looked up by id (StorageBase::GetMany) instead of scanned.
  int64_t key_lookups = 0;
  // Rows strata handed to SQLite, from scans and lookups.
  int64_t rows_scanned = 0;
  // The distinct filters the scans pushed to strata (expression language, docs/expressions.md),
  // in first-use order; "" for a scan without one.
  std::vector<std::string> pushed_filters;
  // The distinct store columns the scans and lookups read, in first-use order.
  std::vector<std::string> columns_read;
};

// How a QueryEach ended.
struct QuerySummary {
  int64_t row_count = 0;   // rows handed to on_row
  bool truncated = false;  // the statement had more rows than max_rows
};

// Called once, before any row, with the result's column names (as SQLite names them: they may
// repeat, e.g. `SELECT a.id, b.id`).
using ColumnsCallback = std::function<Status(const std::vector<std::string>& columns)>;
// Called for each result row, in order, with one value per column.
using RowCallback = std::function<Status(std::vector<Value> row)>;

// Runs `sql` over the store of `base`, streaming its result: on_columns once, then on_row per
// row, at most options.max_rows of them. An error from a callback stops the query and is
// returned. `stats`, when given, is filled in (also when the query fails).
Result<QuerySummary> QueryEach(const store::StorageBase& base, std::string_view sql,
                               const QueryOptions& options, const ColumnsCallback& on_columns,
                               const RowCallback& on_row, QueryStats* stats = nullptr);

// The whole (capped) result of a query.
struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<Value>> rows;
  int64_t row_count = 0;   // rows.size()
  bool truncated = false;  // more rows than options.max_rows
};

// QueryEach collected into memory (bounded by options.max_rows rows).
Result<QueryResult> Query(const store::StorageBase& base, std::string_view sql,
                          const QueryOptions& options = {}, QueryStats* stats = nullptr);

// The CREATE TABLE statement SQLite sees for `records` over a store of `schema` keyed by
// `key_column`: the column names, their SQLite types, which are HIDDEN (blobs) and the key as
// the PRIMARY KEY of a WITHOUT ROWID table (the view holds one row per key).
std::string DescribeRecordsTable(const Schema& schema, std::string_view key_column);

}  // namespace strata::sql
