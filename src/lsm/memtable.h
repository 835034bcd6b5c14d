// The memtable: rows a shard writer has made durable in the WAL but not yet sealed into a
// generation. Append-only batches plus an index from encoded key to the newest row.
//
// Thread safety: one writer thread appends (the shard writer serialises appends in WAL
// order); any number of readers take snapshots and look keys up concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lsm/lsm.pb.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"
#include "util/mutex.h"

namespace strata::lsm {

struct MemTableBatch {
  // Rows in the shard schema; for tombstones only the key column is meaningful (other
  // columns are null).
  RecordBatch batch;
  bool tombstone = false;
  std::vector<std::string> keys;  // encoded key per row
  // The WAL record the batch came from: the position just past it, and the offset of its
  // first byte in that segment (-1 when unknown: rows replayed from the WAL).
  pb::WalPosition wal_end;
  int64_t wal_record_offset = -1;
};

// Where a row lives: batch index and row within it.
struct MemRowRef {
  uint32_t batch = 0;
  uint32_t row = 0;
};

class MemTable;

// A consistent, immutable view of a memtable's first `batches().size()` batches.
class MemTableSnapshot {
 public:
  const SchemaPtr& schema() const;
  int key_column() const;
  // In append order (older first). Shared with the memtable; never modified.
  const std::vector<std::shared_ptr<const MemTableBatch>>& batches() const { return batches_; }
  int64_t rows() const { return rows_; }
  int64_t bytes() const { return bytes_; }  // as MemTable::bytes()
  // The newest row of `encoded_key` in this snapshot (a tombstone counts), if any.
  std::optional<MemRowRef> Lookup(std::string_view encoded_key) const;

 private:
  friend class MemTable;
  std::shared_ptr<const MemTable> table_;
  std::vector<std::shared_ptr<const MemTableBatch>> batches_;
  int64_t rows_ = 0;
  int64_t bytes_ = 0;
};

class MemTable : public std::enable_shared_from_this<MemTable> {
 public:
  // `schema` is the shard schema; `key_column` its primary key.
  static std::shared_ptr<MemTable> Make(SchemaPtr schema, int key_column);

  // Appends a batch whose WAL record ends at `wal_end` and starts at `wal_record_offset`
  // of the same segment (-1 when unknown). The batch must have the shard schema (the writer
  // aligns input first); InvalidArgument for a null key.
  Status Append(RecordBatch batch, bool tombstone, const pb::WalPosition& wal_end,
                int64_t wal_record_offset = -1);

  int64_t rows() const;
  // Bytes of the batches' buffers (what the memtable holds in memory).
  int64_t bytes() const;
  // The WAL position past the newest appended record (zero when empty).
  pb::WalPosition wal_end() const;
  bool empty() const { return rows() == 0; }

  std::shared_ptr<const MemTableSnapshot> Snapshot() const;

  const SchemaPtr& schema() const { return schema_; }
  int key_column() const { return key_column_; }

 private:
  friend class MemTableSnapshot;
  MemTable(SchemaPtr schema, int key_column);
  // The newest row of a key among the first `limit_batches` batches.
  std::optional<MemRowRef> LookupBefore(std::string_view encoded_key, size_t limit_batches) const;

  SchemaPtr schema_;
  int key_column_;
  mutable Mutex mutex_;
  std::vector<std::shared_ptr<const MemTableBatch>> batches_ STRATA_GUARDED_BY(mutex_);
  // key -> newest row over all batches.
  std::unordered_map<std::string, MemRowRef> index_ STRATA_GUARDED_BY(mutex_);
  int64_t rows_ STRATA_GUARDED_BY(mutex_) = 0;
  int64_t bytes_ STRATA_GUARDED_BY(mutex_) = 0;
  pb::WalPosition wal_end_ STRATA_GUARDED_BY(mutex_);
};

}  // namespace strata::lsm
