// Opening stores and hashed scans for replication (store_access.h).
#include "replication/store_access.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "lsm/lsm_read.h"
#include "replication/source_state.h"
#include "strata/table.h"
#include "util/clock.h"

namespace strata::replication::internal {

Result<std::unique_ptr<store::StorageBase>> OpenStore(const StoreLocation& location) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                          table::Table::Open(location.store, location.prefix));
  std::optional<int> key = table->primary_key_column();
  if (!key) {
    return Status::InvalidArgument(
        fmt::format("the table at '{}' has no primary key: it is not a store", location.prefix));
  }
  store::StorageBaseOptions options;
  options.key_column = table->schema()->field(*key)->name();
  options.seal_on_close = false;
  return store::StorageBase::Open(location.store, location.prefix, std::move(options),
                                  /*create_if_missing=*/false);
}

std::string StoreKindOf(const store::StorageBase& store) {
  std::optional<std::string_view> kind = store.schema()->metadata().Get(store::kStoreKindMetadata);
  return kind ? std::string(*kind) : std::string(store::kUnrecordedStoreKind);
}

Hash256 SchemaHashOf(const store::StorageBase& store) {
  return SchemaHash(*store.schema(), store.key_column(), StoreKindOf(store));
}

Result<uint64_t> ScanHashed(const store::StorageBase& store,
                            const std::function<Status(const HashedBatch&)>& consume,
                            const std::function<Status()>& restart) {
  const SchemaPtr schema = store.schema();
  const int key_index = schema->GetFieldIndex(store.key_column());
  std::vector<std::string_view> keys;
  store::ScanRequest request;
  return store.ScanEach(
      request,
      [&](RecordBatch batch) -> Status {
        // Rows in the store schema, so hashes and bundles see the same columns.
        STRATA_ASSIGN_OR_RETURN(RecordBatch rows,
                                RecordBatch::Make(schema, batch.num_rows(), batch.columns()));
        STRATA_ASSIGN_OR_RETURN(std::vector<RowHash> hashes, HashRows(rows));
        STRATA_ASSIGN_OR_RETURN(
            lsm::internal::KeyColumnView view,
            lsm::internal::KeyColumnView::Make(rows.column(key_index), store.key_column()));
        keys.resize(static_cast<size_t>(view.size()));
        for (int64_t r = 0; r < view.size(); ++r) keys[static_cast<size_t>(r)] = view[r];
        return consume(HashedBatch{.rows = &rows, .keys = &keys, .hashes = &hashes});
      },
      restart);
}

double SecondsSince(Clock& clock, int64_t start_nanos) {
  return static_cast<double>(clock.MonotonicNanos() - start_nanos) / 1e9;
}

Result<FullScan> ScanAll(const store::StorageBase& store) {
  FullScan out;
  IndexBuilder index;
  ContentChecksum content;
  int64_t rows = 0;
  STRATA_ASSIGN_OR_RETURN(out.version,
                          ScanHashed(
                              store,
                              [&](const HashedBatch& b) -> Status {
                                for (size_t r = 0; r < b.hashes->size(); ++r) {
                                  STRATA_RETURN_IF_ERROR(index.Add((*b.keys)[r], (*b.hashes)[r]));
                                  content.Add((*b.hashes)[r]);
                                }
                                rows += static_cast<int64_t>(b.hashes->size());
                                return Status::OK();
                              },
                              [&]() -> Status {
                                index.Reset();
                                content = ContentChecksum{};
                                rows = 0;
                                return Status::OK();
                              }));
  STRATA_ASSIGN_OR_RETURN(out.index, index.Finish());
  out.content = content;
  out.rows = rows;
  return out;
}

}  // namespace strata::replication::internal
