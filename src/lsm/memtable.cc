// The memtable: append-only batches with their encoded keys, a live index from key to the
// newest row, and snapshots that share the batches (see memtable.h).
#include "lsm/memtable.h"

#include <algorithm>
#include <utility>

#include "fmt/format.h"
#include "lsm/key.h"

namespace strata::lsm {

namespace {

// The newest row of `key` in batches [0, limit), searched newest first. Batches are
// immutable, so no lock is needed.
std::optional<MemRowRef> ScanBackwards(
    const std::vector<std::shared_ptr<const MemTableBatch>>& batches, size_t limit,
    std::string_view key) {
  for (size_t b = limit; b-- > 0;) {
    const std::vector<std::string>& keys = batches[b]->keys;
    for (size_t r = keys.size(); r-- > 0;) {
      if (keys[r] == key) return MemRowRef{static_cast<uint32_t>(b), static_cast<uint32_t>(r)};
    }
  }
  return std::nullopt;
}

// Checks that `batch` has the shard schema's columns (names and types; nullability is not
// compared, tombstone batches carry nulls in non-key columns).
Status CheckBatchSchema(const Schema& expected, const RecordBatch& batch) {
  const SchemaPtr& actual = batch.schema();
  if (actual == nullptr || actual->num_fields() != expected.num_fields()) {
    return Status::InvalidArgument(fmt::format("memtable batch has {} columns, the shard schema {}",
                                               actual == nullptr ? 0 : actual->num_fields(),
                                               expected.num_fields()));
  }
  for (int i = 0; i < expected.num_fields(); ++i) {
    const Field& want = *expected.field(i);
    const Field& got = *actual->field(i);
    if (want.name() != got.name() || !want.type()->Equals(*got.type())) {
      return Status::InvalidArgument(
          fmt::format("memtable batch column {} is '{}', the shard schema has '{}'", i,
                      got.ToString(), want.ToString()));
    }
  }
  return Status::OK();
}

}  // namespace

// --- MemTableSnapshot ------------------------------------------------------------------

const SchemaPtr& MemTableSnapshot::schema() const {
  static const SchemaPtr kNoSchema;
  return table_ != nullptr ? table_->schema() : kNoSchema;
}

int MemTableSnapshot::key_column() const { return table_ != nullptr ? table_->key_column() : -1; }

std::optional<MemRowRef> MemTableSnapshot::Lookup(std::string_view encoded_key) const {
  if (table_ == nullptr || batches_.empty()) return std::nullopt;
  std::optional<MemRowRef> live;
  {
    MutexLock lock(table_->mutex_);
    auto it = table_->index_.find(std::string(encoded_key));
    if (it == table_->index_.end()) return std::nullopt;  // the key is in no batch at all
    live = it->second;
  }
  if (live->batch < batches_.size()) return live;
  // The newest row came after this snapshot: find the newest row the snapshot holds.
  return ScanBackwards(batches_, batches_.size(), encoded_key);
}

// --- MemTable --------------------------------------------------------------------------

MemTable::MemTable(SchemaPtr schema, int key_column)
    : schema_(std::move(schema)), key_column_(key_column) {}

std::shared_ptr<MemTable> MemTable::Make(SchemaPtr schema, int key_column) {
  return std::shared_ptr<MemTable>(new MemTable(std::move(schema), key_column));
}

Status MemTable::Append(RecordBatch batch, bool tombstone, const pb::WalPosition& wal_end,
                        int64_t wal_record_offset) {
  // Everything that can fail happens before the memtable changes.
  STRATA_RETURN_IF_ERROR(CheckBatchSchema(*schema_, batch));
  if (key_column_ < 0 || key_column_ >= batch.num_columns()) {
    return Status::InvalidArgument(
        fmt::format("memtable key column {} is out of range", key_column_));
  }
  auto entry = std::make_shared<MemTableBatch>();
  STRATA_ASSIGN_OR_RETURN(
      entry->keys, EncodeKeys(batch.column(key_column_), schema_->field(key_column_)->name()));
  const int64_t num_rows = batch.num_rows();
  const int64_t bytes = batch.BufferBytes();
  entry->batch = std::move(batch);
  entry->tombstone = tombstone;
  entry->wal_end = wal_end;
  entry->wal_record_offset = wal_record_offset;

  MutexLock lock(mutex_);
  wal_end_ = wal_end;
  if (num_rows == 0) return Status::OK();
  const auto batch_index = static_cast<uint32_t>(batches_.size());
  for (size_t r = 0; r < entry->keys.size(); ++r) {
    index_.insert_or_assign(entry->keys[r], MemRowRef{batch_index, static_cast<uint32_t>(r)});
  }
  batches_.push_back(std::move(entry));
  rows_ += num_rows;
  bytes_ += bytes;
  return Status::OK();
}

int64_t MemTable::rows() const {
  MutexLock lock(mutex_);
  return rows_;
}

int64_t MemTable::bytes() const {
  MutexLock lock(mutex_);
  return bytes_;
}

pb::WalPosition MemTable::wal_end() const {
  MutexLock lock(mutex_);
  return wal_end_;
}

std::shared_ptr<const MemTableSnapshot> MemTable::Snapshot() const {
  auto snapshot = std::make_shared<MemTableSnapshot>();
  snapshot->table_ = shared_from_this();
  MutexLock lock(mutex_);
  snapshot->batches_ = batches_;
  snapshot->rows_ = rows_;
  snapshot->bytes_ = bytes_;
  return snapshot;
}

std::optional<MemRowRef> MemTable::LookupBefore(std::string_view encoded_key,
                                                size_t limit_batches) const {
  std::vector<std::shared_ptr<const MemTableBatch>> older;
  {
    MutexLock lock(mutex_);
    auto it = index_.find(std::string(encoded_key));
    if (it == index_.end()) return std::nullopt;
    if (it->second.batch < limit_batches) return it->second;
    limit_batches = std::min(limit_batches, batches_.size());
    older.assign(batches_.begin(), batches_.begin() + static_cast<ptrdiff_t>(limit_batches));
  }
  return ScanBackwards(older, older.size(), encoded_key);
}

}  // namespace strata::lsm
