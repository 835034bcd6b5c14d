// The virtual table `records`: a store's LSM "all" view as an eponymous-only SQLite virtual
// table (it exists in every connection it is registered on, needs no CREATE and cannot be
// created or dropped).
//
// Planning (xBestIndex): every usable constraint that MayPush (pushdown.h) is requested with
// argvIndex, never with omit (SQLite checks each row again), IN lists all at once; an = or IN
// on the key column makes the plan a key lookup; the columns SQLite uses (colUsed) are the
// projection. The plan travels to xFilter as idxStr. Execution (xFilter, xNext): a key lookup
// reads its keys with StorageBase::GetMany (1,024 per call); anything else is a
// StorageBase::ScanEach on a BatchStream (batch_stream.h) with the pushed terms ANDed into its
// filter, so a cursor holds at most a few batches whatever the size of the store. Values reach
// SQLite through ColumnCells (column_values.h).
#pragma once

#include <sqlite3.h>

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "strata/record_batch.h"
#include "strata/sql.h"
#include "strata/status.h"
#include "strata/storage_base.h"

namespace strata::sql {

// What one query shares with the tables of its connection. Used on the connection's thread
// only.
struct QueryContext {
  // Reads the store as StorageBase::ScanEach does (tests stand in for it to make a scan start
  // over where they choose).
  using Scan = std::function<Result<uint64_t>(const store::ScanRequest& request,
                                              const std::function<Status(RecordBatch)>& consume,
                                              const std::function<Status()>& restart)>;

  const store::StorageBase* base = nullptr;
  Scan scan;                                         // empty: base->ScanEach
  QueryStats* stats = nullptr;                       // never null
  const std::function<bool()>* cancelled = nullptr;  // null or empty: never
  // The first error a cursor met: returned instead of SQLite's text for it, with its code.
  Status error;
  // A scan had to deliver its batches again after it had returned rows (ScanEach's restart):
  // the statement fails with Busy; the driver runs it again when it returned no row yet.
  bool restarted_after_rows = false;

  void NoteFilter(const std::string& filter);
  void NoteColumn(const std::string& column);

 private:
  std::set<std::string> filters_seen_;
  std::set<std::string> columns_seen_;
};

// Runs QueryEach with `context` (its base, stats and scan set; cancelled is taken from
// `options`). sql.cc.
Result<QuerySummary> RunQuery(QueryContext* context, std::string_view sql,
                              const QueryOptions& options, const ColumnsCallback& on_columns,
                              const RowCallback& on_row);

// Registers `records` on `db` over context->base. `context` must outlive the connection's use
// of the table (until sqlite3_close).
Status RegisterRecordsTable(sqlite3* db, QueryContext* context);

}  // namespace strata::sql
