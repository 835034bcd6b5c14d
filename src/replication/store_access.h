// How replication opens the stores it reads and writes, and reads their logical rows with
// their hashes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "strata/bundle.h"
#include "strata/replication.h"
#include "strata/storage_base.h"

namespace strata {
class Clock;
}  // namespace strata

namespace strata::replication::internal {

// A handle on the existing store at `location` (its key column is the base table's primary
// key). It never writes: replication commits through its own table handle.
Result<std::unique_ptr<store::StorageBase>> OpenStore(const StoreLocation& location);

// The kind the store records (kUnrecordedStoreKind when none).
std::string StoreKindOf(const store::StorageBase& store);

// SchemaHash of the store.
Hash256 SchemaHashOf(const store::StorageBase& store);

// One batch of a consistent scan of every logical row, with each row's encoded key and hash.
struct HashedBatch {
  const RecordBatch* rows;  // in the store schema
  const std::vector<std::string_view>* keys;
  const std::vector<RowHash>* hashes;
};

// Scans the store (ListSource::kAll) and hands each batch to `consume`; `restart` as in
// StorageBase::ScanEach. Returns the base version read.
Result<uint64_t> ScanHashed(const store::StorageBase& store,
                            const std::function<Status(const HashedBatch&)>& consume,
                            const std::function<Status()>& restart);

// A consistent read of every logical row: the index of (encoded key, row hash) pairs
// (source_state.h IndexSchema) and the content checksum.
struct FullScan {
  std::vector<RecordBatch> index;
  ContentChecksum content;
  uint64_t version = 0;
  int64_t rows = 0;
};
Result<FullScan> ScanAll(const store::StorageBase& store);

// Seconds on `clock`'s monotonic time since `start_nanos` (Clock::MonotonicNanos).
double SecondsSince(Clock& clock, int64_t start_nanos);

}  // namespace strata::replication::internal
