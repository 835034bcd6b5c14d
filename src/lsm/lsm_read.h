// Newest-wins reads over the sources of an LSM tree: the writer's own memtables, pending
// generations (every shard) and the base table.
//
// Precedence per key: memtable (newest snapshot first) > generations (newest first) >
// base. A tombstone hides its key from every older source. A row that fails the filter
// still hides every older row of its key: de-duplication happens before filtering, so a
// filter never resurrects an overwritten row. Projection, offset and limit apply after
// de-duplication and filtering.
//
// How: every newer source (memtables, generations) is read whole — only key column,
// tombstone column and the columns needed — and its keys collected; their surviving rows
// (newest per key, not tombstoned, passing the filter) come first in the output (memtables
// first, then generations newest first); then the base table is scanned with the filter
// pushed down (zone maps, key index) and every row whose key appeared in a newer source
// is dropped. Order: newer-source rows, then base rows in base scan order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lsm/generation.h"
#include "lsm/memtable.h"
#include "strata/expr.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/table.h"

namespace strata::lsm {

// What one read sees. Sources may be empty; base may be null (generations only).
struct LsmView {
  SchemaPtr schema;  // the store schema (base table schema)
  int key_column = 0;
  std::shared_ptr<table::Table> base;
  // Newest first. Generations at or below their shard's merge watermark are already
  // excluded by whoever built the view.
  std::vector<std::shared_ptr<Generation>> generations;
  std::vector<std::shared_ptr<const MemTableSnapshot>> memtables;  // newest first
};

struct LsmScanOptions {
  std::vector<std::string> columns;  // empty = every store column
  std::string filter;                // expression language; empty = all rows
  int64_t offset = 0;
  std::optional<int64_t> limit;
};

// Batches in the store schema projected to options.columns. InvalidArgument for an unknown
// column or a bad filter (before anything is read). NotFound when a generation's files
// vanished mid-read (a concurrent merge; the caller retries with a fresh view).
Result<std::vector<RecordBatch>> LsmScan(const LsmView& view, const LsmScanOptions& options);

// Live rows whose key is one of `keys` (at most kMaxGetKeys), newest version of each, in
// the order of `keys` (missing and duplicate keys skipped). Newest-first per key with bloom
// filters: memtables, then generations whose bloom may contain the key, then the base key
// index for keys still unresolved. One pass per source for all keys.
inline constexpr size_t kMaxGetKeys = 1024;
Result<RecordBatch> LsmGet(const LsmView& view, const std::vector<expr::Scalar>& keys,
                           const std::vector<std::string>& columns = {});

// Logical row count (live keys) of the view, optionally filtered. Reads the same data as
// LsmScan with only the key column projected.
Result<int64_t> LsmCount(const LsmView& view, const std::string& filter = {});

}  // namespace strata::lsm
