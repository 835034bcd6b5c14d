// GenericStore (include/strata/generic_store.h): a store of a user-declared schema over
// StorageBase, keyed by `id`.
#include "strata/generic_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "strata/builder.h"
#include "strata/table.h"

namespace strata::store {
namespace {

// The most ids one GetMany takes (StorageBase's limit).
constexpr size_t kMaxGetIds = 1024;

std::string Location(const ObjectStore& store, std::string_view prefix) {
  return fmt::format("{}{}", store.Describe(), prefix.empty() ? "" : "/" + std::string(prefix));
}

// The columns a read returns: the non-blob columns when none are named, else the named ones
// with `id` first when it is not among them.
std::vector<std::string> ReadColumns(const SchemaSpec& spec,
                                     const std::vector<std::string>& columns) {
  if (columns.empty()) return spec.NonBlobColumns();
  std::vector<std::string> out;
  if (std::find(columns.begin(), columns.end(), "id") == columns.end()) out.emplace_back("id");
  out.insert(out.end(), columns.begin(), columns.end());
  return out;
}

Status CheckColumns(const Schema& schema, const std::vector<std::string>& columns) {
  for (const std::string& name : columns) {
    if (schema.GetFieldIndex(name) < 0) {
      return Status::InvalidArgument(
          fmt::format("column '{}' is not declared in the store schema", name));
    }
  }
  return Status::OK();
}

std::vector<expr::Scalar> IdScalars(const std::vector<std::string>& ids) {
  std::vector<expr::Scalar> out;
  out.reserve(ids.size());
  for (const std::string& id : ids) out.push_back(expr::Scalar::String(id));
  return out;
}

}  // namespace

GenericStore::GenericStore(std::unique_ptr<StorageBase> base, SchemaSpec spec, bool seal_on_add)
    : base_(std::move(base)), spec_(std::move(spec)), seal_on_add_(seal_on_add) {}

Result<std::unique_ptr<GenericStore>> GenericStore::Open(std::shared_ptr<ObjectStore> store,
                                                         std::string prefix,
                                                         std::optional<SchemaSpec> spec,
                                                         GenericStoreOptions options) {
  if (store == nullptr) return Status::InvalidArgument("GenericStore::Open: no object store");
  SchemaPtr requested;
  if (spec.has_value()) {
    STRATA_ASSIGN_OR_RETURN(requested, spec->ToArrowSchema());
  }
  STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*store, prefix));
  StorageBaseOptions base_options = std::move(options.base);
  base_options.key_column = "id";
  base_options.store_kind = std::string(kGenericStoreKind);
  base_options.latest_schema = nullptr;  // schemas are immutable after creation
  base_options.schema = nullptr;
  if (exists) {
    // The seal mode is the persisted one, so read the base schema before opening the store.
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                            table::Table::Open(store, prefix, base_options.table_options));
    SchemaPtr stored = table->schema();
    STRATA_ASSIGN_OR_RETURN(SchemaSpec persisted, SchemaSpec::FromStoredSchema(*stored));
    if (spec.has_value() && !(*spec == persisted)) {
      return Status::InvalidArgument(fmt::format(
          "store at '{}' was created with a different schema; open it without a schema to use "
          "the persisted one",
          Location(*store, prefix)));
    }
    std::optional<std::string_view> seal = stored->metadata().Get(kSealOnAddMetadata);
    base_options.seal_on_put = seal.has_value() ? *seal == "true" : options.seal_on_add;
  } else {
    if (!spec.has_value()) return Status::InvalidArgument("a schema is required to create a store");
    KeyValueMetadata metadata = requested->metadata();
    metadata.Set(std::string(kSealOnAddMetadata), options.seal_on_add ? "true" : "false");
    base_options.schema = requested->WithMetadata(std::move(metadata));
    base_options.seal_on_put = options.seal_on_add;
  }
  const bool seal_on_add = base_options.seal_on_put;
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<StorageBase> base,
      StorageBase::Open(store, prefix, std::move(base_options), /*create_if_missing=*/!exists));
  // Another process may have created the store between the check and the open: check the
  // spec it was created with.
  STRATA_ASSIGN_OR_RETURN(SchemaSpec persisted, SchemaSpec::FromStoredSchema(*base->schema()));
  if (spec.has_value() && !(*spec == persisted)) {
    return Status::InvalidArgument(fmt::format(
        "store at '{}' was created with a different schema; open it without a schema to use "
        "the persisted one",
        Location(*store, prefix)));
  }
  std::optional<std::string_view> seal = base->schema()->metadata().Get(kSealOnAddMetadata);
  if (seal.has_value() && (*seal == "true") != seal_on_add) {
    return Status::Busy(
        fmt::format("store at '{}' was created concurrently with another seal mode; open it again",
                    Location(*store, prefix)));
  }
  return std::unique_ptr<GenericStore>(
      new GenericStore(std::move(base), std::move(persisted), seal_on_add));
}

Result<std::unique_ptr<GenericStore>> GenericStore::OpenExisting(std::shared_ptr<ObjectStore> store,
                                                                 std::string prefix,
                                                                 GenericStoreOptions options) {
  if (store == nullptr) {
    return Status::InvalidArgument("GenericStore::OpenExisting: no object store");
  }
  STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*store, prefix));
  if (!exists) {
    return Status::NotFound(fmt::format("no generic store at '{}'", Location(*store, prefix)));
  }
  return Open(std::move(store), std::move(prefix), std::nullopt, std::move(options));
}

const SchemaSpec& GenericStore::spec() const { return spec_; }
SchemaPtr GenericStore::schema() const { return base_->schema(); }
bool GenericStore::seal_on_add() const { return seal_on_add_; }

Result<uint64_t> GenericStore::Add(std::string_view json_rows) {
  STRATA_ASSIGN_OR_RETURN(RecordBatch batch, EncodeJsonRows(base_->schema(), json_rows));
  // No early return for zero rows: Put checks the handle (deleted, pinned) either way.
  STRATA_RETURN_IF_ERROR(base_->Put({batch}));
  return base_->version();
}

Result<uint64_t> GenericStore::AddBatches(const std::vector<RecordBatch>& batches) {
  const SchemaPtr schema = base_->schema();
  for (const RecordBatch& batch : batches) {
    if (batch.schema() == nullptr || !batch.schema()->Equals(*schema, /*check_metadata=*/false)) {
      return Status::InvalidArgument("record batch schema does not match the store schema");
    }
  }
  STRATA_RETURN_IF_ERROR(base_->Put(batches));
  return base_->version();
}

Result<std::vector<RecordBatch>> GenericStore::List(const GenericListRequest& request) const {
  if (request.offset < 0 || (request.limit.has_value() && *request.limit < 0)) {
    return Status::InvalidArgument("limit and offset must not be negative");
  }
  const std::vector<std::string> wanted =
      request.columns.empty() ? spec_.NonBlobColumns() : request.columns;
  STRATA_RETURN_IF_ERROR(CheckColumns(*base_->schema(), wanted));
  // One consistent read of the matching rows (with `id` for the order), then the page.
  ScanRequest scan;
  scan.source = request.source;
  scan.columns = ReadColumns(spec_, wanted);
  scan.filter = request.filter;
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, base_->Scan(scan));
  std::vector<RecordBatch> nonempty;
  for (RecordBatch& b : batches) {
    if (b.num_rows() > 0) nonempty.push_back(std::move(b));
  }
  if (nonempty.empty()) return std::vector<RecordBatch>();
  STRATA_ASSIGN_OR_RETURN(RecordBatch all, ConcatenateBatches(nonempty));
  const int id_index = all.schema()->GetFieldIndex("id");
  const Array& ids = all.column(id_index);
  std::vector<int64_t> order(static_cast<size_t>(all.num_rows()));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&ids](int64_t a, int64_t b) { return ids.StringValue(a) < ids.StringValue(b); });
  const size_t begin = std::min(order.size(), static_cast<size_t>(request.offset));
  const size_t end = request.limit.has_value()
                         ? std::min(order.size(), begin + static_cast<size_t>(*request.limit))
                         : order.size();
  if (begin == end) return std::vector<RecordBatch>();
  const std::vector<int64_t> page(order.begin() + static_cast<std::ptrdiff_t>(begin),
                                  order.begin() + static_cast<std::ptrdiff_t>(end));
  std::vector<int> indices;
  std::vector<Array> columns;
  for (const std::string& name : wanted) {
    const int i = all.schema()->GetFieldIndex(name);
    indices.push_back(i);
    STRATA_ASSIGN_OR_RETURN(Array taken, Take(all.column(i), page));
    columns.push_back(std::move(taken));
  }
  STRATA_ASSIGN_OR_RETURN(SchemaPtr projected, all.schema()->Project(indices));
  STRATA_ASSIGN_OR_RETURN(
      RecordBatch out,
      RecordBatch::Make(std::move(projected), static_cast<int64_t>(page.size()), columns));
  std::vector<RecordBatch> result;
  result.push_back(std::move(out));
  return result;
}

Result<RecordBatch> GenericStore::Get(std::string_view id, const std::vector<std::string>& columns,
                                      ListSource source) const {
  return GetMany({std::string(id)}, columns, source);
}

Result<RecordBatch> GenericStore::GetMany(const std::vector<std::string>& ids,
                                          const std::vector<std::string>& columns,
                                          ListSource source) const {
  if (ids.size() > kMaxGetIds) {
    return Status::InvalidArgument(
        fmt::format("{} ids requested; at most {} per call", ids.size(), kMaxGetIds));
  }
  const std::vector<std::string> read = ReadColumns(spec_, columns);
  STRATA_RETURN_IF_ERROR(CheckColumns(*base_->schema(), read));
  return base_->GetMany(IdScalars(ids), read, source);
}

Result<int64_t> GenericStore::Count(ListSource source, std::string_view filter) const {
  return base_->Count(source, filter);
}

Result<StoreObservation> GenericStore::Observe() const { return base_->Observe(); }

Result<FlushOutcome> GenericStore::Flush() { return base_->Flush(); }
Status GenericStore::Close() { return base_->Close(); }
Result<MergeReport> GenericStore::MaybeMerge() { return base_->MaybeMerge(); }
Result<MergeReport> GenericStore::Cleanup() { return base_->Cleanup(); }
Result<bool> GenericStore::CountMergeDue() const { return base_->CountMergeDue(); }
Result<table::CompactionResult> GenericStore::Compact(const table::CompactionOptions& options) {
  return base_->Compact(options);
}
Result<int64_t> GenericStore::PendingGenerations() const { return base_->PendingGenerations(); }
uint64_t GenericStore::version() const { return base_->version(); }
Status GenericStore::Checkout(uint64_t version) { return base_->Checkout(version); }
Status GenericStore::RefreshLatest() { return base_->RefreshLatest(); }
Result<std::optional<PreparedMerge>> GenericStore::PrepareCountMerge() {
  return base_->PrepareCountMerge();
}
Result<std::optional<PreparedMerge>> GenericStore::PrepareCleanupMerge() {
  return base_->PrepareCleanupMerge();
}
Result<MergeReport> GenericStore::CommitPreparedMerge(PreparedMerge prepared) {
  return base_->CommitPreparedMerge(std::move(prepared));
}
Result<bool> GenericStore::ShouldCompact(int64_t min_fragments,
                                         const std::vector<QuietHours>& quiet_hours) const {
  return base_->ShouldCompact(min_fragments, quiet_hours);
}
Result<bool> GenericStore::ShouldCompact(const CompactionPolicy& policy) const {
  return base_->ShouldCompact(policy);
}
Result<CompactionStats> GenericStore::GetCompactionStats() const {
  return base_->GetCompactionStats();
}
Status GenericStore::DeleteData() { return base_->DeleteData(); }

}  // namespace strata::store
