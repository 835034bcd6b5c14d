// Table: handles, versions and every change (append, delete, schema and metadata updates,
// maintenance). Reads live in scan.cc. Each change builds its manifest on the newest
// version inside CommitWithRetry, so a lost race is rebased rather than failed.
#include "strata/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "table/commit.h"
#include "table/scan.h"
#include "table/table_internal.h"
#include "util/clock.h"
#include "util/uuid.h"

namespace strata::table {

using internal::SnapshotPtr;

namespace {

VersionInfo DescribeVersion(const internal::Snapshot& snapshot) {
  const pb::Manifest& manifest = snapshot.manifest;
  VersionInfo info;
  info.version = manifest.version();
  info.timestamp_micros = manifest.timestamp_micros();
  info.operation = manifest.transaction().operation();
  info.read_version = manifest.transaction().read_version();
  info.num_rows = snapshot.live_rows();
  info.num_fragments = manifest.fragments_size();
  return info;
}

Status CheckPrefix(std::string_view prefix) {
  if (!prefix.empty() && prefix.back() != '/') {
    return Status::InvalidArgument(
        fmt::format("table prefix '{}' must be empty or end with '/'", prefix));
  }
  return ValidateObjectPrefix(prefix);
}

Status CheckWritable(const Table::Impl& impl) {
  if (!impl.read_only) return Status::OK();
  return Status::InvalidArgument(
      fmt::format("table is checked out at version {} (read-only)", impl.current()->version()));
}

// The next manifest starts as a copy of `base` without its transaction.
pb::Manifest NextManifest(const internal::Snapshot& base) {
  pb::Manifest manifest = base.manifest;
  manifest.clear_transaction();
  return manifest;
}

Result<SnapshotPtr> Commit(Table::Impl& impl, const SnapshotPtr& read, std::string operation,
                           std::string detail, internal::ManifestBuilder build) {
  internal::CommitRequest request;
  request.operation = std::move(operation);
  request.detail = std::move(detail);
  request.max_retries = impl.context->options.commit_retries;
  request.build = std::move(build);
  request.clock = impl.context->options.clock;
  request.random = impl.context->options.random;
  STRATA_ASSIGN_OR_RETURN(
      internal::CommitOutcome outcome,
      internal::CommitWithRetry(*impl.context->store, impl.context->prefix, read, request));
  impl.Advance(outcome.snapshot);
  return outcome.snapshot;
}

bool Contains(const google::protobuf::RepeatedField<uint32_t>& ids, uint32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

namespace internal {

Status MergeFragmentDeletions(TableContext& context, const Snapshot& base,
                              const pb::Fragment& fragment, const DeletionVector& delta,
                              std::map<uint32_t, MergedDeletionFile>& written, DeletionMerge& merge,
                              std::vector<std::string>* new_paths) {
  const uint32_t id = fragment.id();
  const std::string base_path = fragment.has_deletion() ? fragment.deletion().path() : "";
  if (auto it = written.find(id); it != written.end() && it->second.base_path == base_path) {
    merge.deleted += it->second.added;
    merge.replaced.emplace(id, it->second.file);
    return Status::OK();
  }
  DeletionVector merged;
  int64_t before = 0;
  if (fragment.has_deletion()) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const DeletionVector> existing,
                            context.cache.Deletions(*context.store, context.prefix,
                                                    fragment.deletion(), fragment.physical_rows()));
    merged = *existing;
    before = merged.Cardinality();
  }
  merged.UnionWith(delta);
  const int64_t added = merged.Cardinality() - before;
  if (added == 0) return Status::OK();  // a concurrent delete got there first
  merge.deleted += added;
  if (merged.Cardinality() >= fragment.physical_rows()) {
    merge.removed.insert(id);
    return Status::OK();
  }
  STRATA_ASSIGN_OR_RETURN(
      pb::DeletionFile file,
      WriteDeletionFile(*context.store, context.prefix, id, base.version(),
                        fragment.physical_rows(), merged, context.options.random));
  if (new_paths != nullptr) new_paths->push_back(file.path());
  written[id] = MergedDeletionFile{base_path, file, added};
  merge.replaced.emplace(id, std::move(file));
  return Status::OK();
}

void ApplyDeletionMerge(const DeletionMerge& merge, pb::Manifest* manifest) {
  google::protobuf::RepeatedPtrField<pb::Fragment> kept;
  for (pb::Fragment& fragment : *manifest->mutable_fragments()) {
    if (merge.removed.contains(fragment.id())) continue;
    auto it = merge.replaced.find(fragment.id());
    if (it != merge.replaced.end()) *fragment.mutable_deletion() = it->second;
    *kept.Add() = std::move(fragment);
  }
  manifest->mutable_fragments()->Swap(&kept);
  pb::Transaction* transaction = manifest->mutable_transaction();
  for (const auto& [id, file] : merge.replaced) transaction->add_modified_fragments(id);
  for (uint32_t id : merge.removed) transaction->add_removed_fragments(id);
}

void ApplyMetadataUpdates(const KeyValueMetadata& updates, pb::Manifest* manifest) {
  auto* entries = manifest->mutable_metadata();
  for (const auto& entry : updates.entries()) {
    const std::string& key = entry.first;
    const std::string& value = entry.second;
    auto it = std::find_if(entries->begin(), entries->end(),
                           [&](const pb::KeyValue& kv) { return kv.key() == key; });
    if (value.empty()) {
      if (it != entries->end()) entries->erase(it);
    } else if (it != entries->end()) {
      it->set_value(value);
    } else {
      pb::KeyValue* kv = entries->Add();
      kv->set_key(key);
      kv->set_value(value);
    }
  }
}

}  // namespace internal

namespace {

// Deletes the rows at `addresses` (live rows of `read`), merging with deletions committed
// concurrently.
Result<DeleteResult> DeleteAddresses(Table::Impl& impl, const SnapshotPtr& read,
                                     const std::vector<uint64_t>& addresses, std::string detail) {
  DeleteResult result;
  result.version = read->version();
  if (addresses.empty()) return result;
  std::map<uint32_t, internal::DeletionVector> deltas;
  for (uint64_t address : addresses) {
    deltas[RowAddressFragment(address)].Add(RowAddressOffset(address));
  }
  internal::TableContext& context = *impl.context;
  bool nothing_to_delete = false;
  int64_t rows_deleted = 0;
  std::map<uint32_t, internal::MergedDeletionFile> written;  // reused across attempts
  auto build = [&](const internal::Snapshot& base,
                   const std::vector<pb::Transaction>& intervening) -> Result<pb::Manifest> {
    pb::Manifest manifest = NextManifest(base);
    internal::DeletionMerge merge;
    for (const auto& [id, delta] : deltas) {
      const pb::Fragment* fragment = base.FindFragment(id);
      if (fragment == nullptr) {
        // Gone: fine when a concurrent delete removed every row, a conflict when compaction
        // or repair rewrote or dropped it.
        for (const pb::Transaction& t : intervening) {
          // Deletes and upserts remove a fragment only when every row of it is deleted.
          const bool deletes_rows = t.operation() == "delete" || t.operation() == "upsert";
          if (!deletes_rows && Contains(t.removed_fragments(), id)) {
            std::optional<std::string> conflict = internal::FindConflict(intervening, {id}, false);
            return Status::Busy(
                fmt::format("commit conflict: {}; retry the delete",
                            conflict ? *conflict
                                     : fmt::format("fragment {} was removed by a concurrent {}", id,
                                                   t.operation())));
          }
        }
        continue;
      }
      STRATA_RETURN_IF_ERROR(internal::MergeFragmentDeletions(context, base, *fragment, delta,
                                                              written, merge, nullptr));
    }
    nothing_to_delete = merge.deleted == 0;
    if (nothing_to_delete) return Status::Aborted("nothing left to delete");
    internal::ApplyDeletionMerge(merge, &manifest);
    rows_deleted = merge.deleted;
    return manifest;
  };
  Result<SnapshotPtr> committed = Commit(impl, read, "delete", std::move(detail), build);
  if (!committed.ok()) {
    if (nothing_to_delete) return result;
    return committed.status();
  }
  result.version = (*committed)->version();
  result.rows_deleted = rows_deleted;
  return result;
}

// Whether `a` and `b` name the same columns in the same order.
bool SameColumnNames(const Schema& a, const Schema& b) {
  if (a.num_fields() != b.num_fields()) return false;
  for (int i = 0; i < a.num_fields(); ++i) {
    if (a.field(i)->name() != b.field(i)->name()) return false;
  }
  return true;
}

std::string ColumnNames(const Schema& schema) {
  std::string names;
  for (int i = 0; i < schema.num_fields(); ++i) {
    if (i > 0) names += ", ";
    names += schema.field(i)->name();
  }
  return names;
}

// Batches whose column sets differ are padded with nulls to the union of their columns.
Result<std::vector<RecordBatch>> AlignBatches(const internal::Snapshot& snapshot,
                                              const std::vector<RecordBatch>& batches) {
  bool same = true;
  for (const RecordBatch& batch : batches) {
    STRATA_RETURN_IF_ERROR(internal::CheckAppendSchema(snapshot, *batch.schema()));
    same = same && SameColumnNames(*batch.schema(), *batches.front().schema());
  }
  if (same) return batches;
  const Schema& table = *snapshot.schema;
  std::vector<int> columns;
  for (int i = 0; i < table.num_fields(); ++i) {
    for (const RecordBatch& batch : batches) {
      if (batch.schema()->GetFieldIndex(table.field(i)->name()) >= 0) {
        columns.push_back(i);
        break;
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(SchemaPtr aligned_schema, table.Project(columns));
  std::vector<RecordBatch> aligned;
  for (const RecordBatch& batch : batches) {
    std::vector<Array> arrays;
    for (int column : columns) {
      Array array = batch.GetColumnByName(table.field(column)->name());
      if (!array.is_valid_handle())
        array = Array::MakeNull(table.field(column)->type(), batch.num_rows());
      arrays.push_back(std::move(array));
    }
    STRATA_ASSIGN_OR_RETURN(RecordBatch b,
                            RecordBatch::Make(aligned_schema, batch.num_rows(), std::move(arrays)));
    aligned.push_back(std::move(b));
  }
  return aligned;
}

// Why `written` cannot be committed on `base`, or OK: each fragment's files hold columns of
// the table (each at most once, together every non-nullable column and the key), have the
// same batch row counts adding up to physical_rows, and its deletion file (if any) deletes
// some of those rows; `rows` is the fragments' live rows; the key segment lists one fragment
// each and comes with a key column. A column no file holds reads as null, which reads
// refuse for a non-nullable column: such a fragment would make the table unreadable.
Status CheckWrittenFragments(const internal::Snapshot& base,
                             const internal::WrittenFragments& written) {
  int64_t rows = 0;
  for (size_t f = 0; f < written.fragments.size(); ++f) {
    const pb::Fragment& fragment = written.fragments[f];
    auto bad = [&](const std::string& what) {
      return Status::InvalidArgument(fmt::format("appended fragment {}: {}", f, what));
    };
    if (fragment.files_size() == 0) return bad("it has no data files");
    if (fragment.physical_rows() <= 0 || fragment.physical_rows() > int64_t{UINT32_MAX}) {
      return bad(fmt::format("{} physical rows", fragment.physical_rows()));
    }
    std::set<int32_t> fields;
    for (const pb::DataFile& file : fragment.files()) {
      if (file.path().empty()) return bad("a data file has no path");
      for (int32_t id : file.field_ids()) {
        if (!base.column_of_field.contains(id)) {
          return bad(fmt::format("data file {} holds field {}, which the table does not have",
                                 file.path(), id));
        }
        if (!fields.insert(id).second) {
          return bad(fmt::format("field {} is in more than one data file", id));
        }
      }
      if (file.batches_size() != fragment.files(0).batches_size()) {
        return bad(fmt::format("data files {} and {} have different numbers of batches",
                               fragment.files(0).path(), file.path()));
      }
      int64_t file_rows = 0;
      for (int b = 0; b < file.batches_size(); ++b) {
        const int64_t batch_rows = file.batches(b).num_rows();
        if (batch_rows != fragment.files(0).batches(b).num_rows()) {
          return bad(fmt::format("data files {} and {} differ in the rows of batch {}",
                                 fragment.files(0).path(), file.path(), b));
        }
        file_rows += batch_rows;
      }
      if (file_rows != fragment.physical_rows()) {
        return bad(fmt::format("data file {} has {} rows, the fragment {}", file.path(), file_rows,
                               fragment.physical_rows()));
      }
    }
    for (int column = 0; column < base.schema->num_fields(); ++column) {
      const bool is_key = base.key_column && *base.key_column == column;
      if ((is_key || !base.schema->field(column)->nullable()) &&
          !fields.contains(base.field_ids[column])) {
        return bad(fmt::format("no data file holds the {} column '{}'",
                               is_key ? "key" : "non-nullable",
                               base.schema->field(column)->name()));
      }
    }
    if (fragment.has_deletion()) {
      const pb::DeletionFile& deletion = fragment.deletion();
      if (deletion.path().empty() || deletion.num_deleted() <= 0 ||
          deletion.num_deleted() > fragment.physical_rows()) {
        return bad(fmt::format("deletion file '{}' deletes {} of {} rows", deletion.path(),
                               deletion.num_deleted(), fragment.physical_rows()));
      }
    }
    rows += fragment.physical_rows() -
            (fragment.has_deletion() ? fragment.deletion().num_deleted() : 0);
  }
  if (rows != written.rows) {
    return Status::InvalidArgument(
        fmt::format("appended fragments hold {} live rows, WrittenFragments::rows says {}", rows,
                    written.rows));
  }
  if (written.key_segment) {
    if (!base.key_column) {
      return Status::InvalidArgument(
          "appended fragments come with a key segment, but the table has no primary-key column");
    }
    if (written.key_segment->fragment_ids_size() != static_cast<int>(written.fragments.size())) {
      return Status::InvalidArgument(
          fmt::format("the appended key segment lists {} fragments, {} are appended",
                      written.key_segment->fragment_ids_size(), written.fragments.size()));
    }
  }
  return Status::OK();
}

}  // namespace

namespace internal {

Result<AppendResult> AppendWrittenFragments(Table& table, WrittenFragments written) {
  Table::Impl& impl = *table.impl_;
  STRATA_RETURN_IF_ERROR(CheckWritable(impl));
  SnapshotPtr read = impl.current();
  AppendResult result;
  result.version = read->version();
  if (written.fragments.empty() && !written.key_segment && written.rows == 0) return result;
  STRATA_RETURN_IF_ERROR(CheckWrittenFragments(*read, written));

  auto build = [&](const Snapshot& base,
                   const std::vector<pb::Transaction>&) -> Result<pb::Manifest> {
    // Columns are only ever added, but check against the version actually committed on.
    if (base.version() != read->version()) {
      STRATA_RETURN_IF_ERROR(CheckWrittenFragments(base, written));
    }
    pb::Manifest manifest = NextManifest(base);
    uint32_t next_id = base.manifest.next_fragment_id();
    std::vector<uint32_t> ids;
    for (const pb::Fragment& fragment : written.fragments) {
      pb::Fragment* added = manifest.add_fragments();
      *added = fragment;
      added->set_id(next_id);
      ids.push_back(next_id++);
    }
    manifest.set_next_fragment_id(next_id);
    if (written.key_segment) {
      pb::Index* index = nullptr;
      for (pb::Index& candidate : *manifest.mutable_indexes()) {
        if (candidate.name() == kKeyIndexName) index = &candidate;
      }
      if (index == nullptr) {
        return Status::Internal(
            fmt::format("version {} lacks the key index '{}'", base.version(), kKeyIndexName));
      }
      pb::KeySegment* segment = index->add_segments();
      *segment = *written.key_segment;
      segment->clear_fragment_ids();
      for (uint32_t id : ids) segment->add_fragment_ids(id);
    }
    for (uint32_t id : ids) manifest.mutable_transaction()->add_added_fragments(id);
    return manifest;
  };
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr committed, Commit(impl, read, "append", "", build));
  result.version = committed->version();
  result.rows = written.rows;
  result.fragments = static_cast<int>(written.fragments.size());
  result.bytes_written = written.bytes_written;
  return result;
}

Result<std::vector<RecordBatch>> AlignAppendBatches(const Snapshot& snapshot,
                                                    const std::vector<RecordBatch>& batches) {
  if (batches.empty()) return batches;
  return AlignBatches(snapshot, batches);
}

}  // namespace internal

Table::Table(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Table::~Table() = default;

Result<std::shared_ptr<Table>> Table::Create(std::shared_ptr<ObjectStore> store, std::string prefix,
                                             SchemaPtr schema, TableOptions options) {
  STRATA_RETURN_IF_ERROR(CheckPrefix(prefix));
  if (schema == nullptr) return Status::InvalidArgument("Table::Create: schema is null");
  pb::Manifest manifest;
  STRATA_ASSIGN_OR_RETURN(*manifest.mutable_schema(), internal::SchemaToProto(*schema));
  STRATA_ASSIGN_OR_RETURN(std::optional<int> key, internal::FindPrimaryKey(*schema));
  if (key) {
    pb::Index* index = manifest.add_indexes();
    index->set_name(std::string(internal::kKeyIndexName));
    index->set_type("key");
    index->set_field_id(manifest.schema().fields(*key).id());
  }
  manifest.set_version(1);
  manifest.set_next_fragment_id(0);
  manifest.set_next_field_id(schema->num_fields());
  Clock& clock = options.clock != nullptr ? *options.clock : *SystemClock();
  RandomSource& random = options.random != nullptr ? *options.random : *SystemRandom();
  manifest.set_timestamp_micros(clock.NowMicros());
  manifest.set_table_uuid(UuidV4(random).ToString());
  pb::Transaction* transaction = manifest.mutable_transaction();
  transaction->set_operation("create");
  transaction->set_uuid(UuidV4(random).ToString());
  STRATA_ASSIGN_OR_RETURN(
      SnapshotPtr snapshot,
      internal::CommitCreate(*store, prefix, std::move(manifest), options.clock, options.random));
  auto impl = std::make_unique<Impl>();
  impl->context =
      std::make_shared<internal::TableContext>(std::move(store), std::move(prefix), options);
  impl->Advance(std::move(snapshot));
  return std::shared_ptr<Table>(new Table(std::move(impl)));
}

Result<std::shared_ptr<Table>> Table::Open(std::shared_ptr<ObjectStore> store, std::string prefix,
                                           TableOptions options) {
  STRATA_RETURN_IF_ERROR(CheckPrefix(prefix));
  uint64_t hint = 0;
  STRATA_ASSIGN_OR_RETURN(uint64_t latest, internal::FindLatestVersion(*store, prefix, 0, &hint));
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr snapshot, internal::LoadVersion(*store, prefix, latest));
  auto impl = std::make_unique<Impl>();
  if (std::optional<std::string> warning = internal::HintAheadWarning(hint, latest)) {
    impl->warnings.push_back(std::move(*warning));
  }
  impl->context =
      std::make_shared<internal::TableContext>(std::move(store), std::move(prefix), options);
  impl->Advance(std::move(snapshot));
  return std::shared_ptr<Table>(new Table(std::move(impl)));
}

Result<RollbackReport> Table::RollBackCorruptVersions(std::shared_ptr<ObjectStore> store,
                                                      std::string prefix,
                                                      const RollbackOptions& options,
                                                      TableOptions table_options) {
  STRATA_RETURN_IF_ERROR(CheckPrefix(prefix));
  if (!store) return Status::InvalidArgument("rollback: no object store");
  return internal::RollBackTable(*store, prefix, options, table_options);
}

Result<bool> Table::Exists(ObjectStore& store, std::string_view prefix) {
  STRATA_RETURN_IF_ERROR(CheckPrefix(prefix));
  Result<uint64_t> latest = internal::FindLatestVersion(store, std::string(prefix));
  if (latest.ok()) return true;
  if (latest.status().IsNotFound()) return false;
  return latest.status();
}

uint64_t Table::version() const { return impl_->current()->version(); }
SchemaPtr Table::schema() const { return impl_->current()->schema; }
std::optional<int> Table::primary_key_column() const { return impl_->current()->key_column; }
bool Table::read_only() const { return impl_->read_only; }
std::vector<std::string> Table::warnings() const { return impl_->warnings; }

KeyValueMetadata Table::metadata() const {
  SnapshotPtr snapshot = impl_->current();
  std::vector<std::pair<std::string, std::string>> entries;
  for (const pb::KeyValue& kv : snapshot->manifest.metadata()) {
    entries.emplace_back(kv.key(), kv.value());
  }
  return KeyValueMetadata(std::move(entries));
}

Result<TableStats> Table::Stats() const {
  SnapshotPtr snapshot = impl_->current();
  TableStats stats;
  stats.version = snapshot->version();
  stats.num_rows = snapshot->live_rows();
  stats.num_fragments = snapshot->manifest.fragments_size();
  std::set<uint32_t> covered;
  const pb::Index* index = snapshot->key_index();
  if (index != nullptr) {
    stats.num_index_segments = index->segments_size();
    for (const pb::KeySegment& segment : index->segments()) {
      covered.insert(segment.fragment_ids().begin(), segment.fragment_ids().end());
    }
  }
  for (const pb::Fragment& fragment : snapshot->manifest.fragments()) {
    stats.num_data_files += fragment.files_size();
    for (const pb::DataFile& file : fragment.files()) stats.data_bytes += file.size();
    if (fragment.has_deletion()) {
      ++stats.num_deletion_files;
      stats.num_deleted_rows += fragment.deletion().num_deleted();
    }
    if (index != nullptr && !covered.contains(fragment.id())) ++stats.unindexed_fragments;
  }
  return stats;
}

Status Table::Refresh() {
  STRATA_RETURN_IF_ERROR(CheckWritable(*impl_));
  SnapshotPtr current = impl_->current();
  const std::string& prefix = impl_->context->prefix;
  ObjectStore& store = *impl_->context->store;
  STRATA_ASSIGN_OR_RETURN(uint64_t latest,
                          internal::FindLatestVersion(store, prefix, current->version()));
  if (latest <= current->version()) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr snapshot, internal::LoadVersion(store, prefix, latest));
  impl_->Advance(std::move(snapshot));
  return Status::OK();
}

Result<uint64_t> Table::LatestVersion() const {
  return internal::FindLatestVersion(*impl_->context->store, impl_->context->prefix,
                                     impl_->current()->version());
}

Result<bool> Table::IsLatestVersion(uint64_t version) const {
  return internal::IsLatestVersion(*impl_->context->store, impl_->context->prefix, version);
}

Result<std::unique_ptr<ChangeWatch>> Table::WatchVersions() const {
  return internal::WatchVersions(*impl_->context->store, impl_->context->prefix);
}

Result<std::shared_ptr<Table>> Table::Checkout(uint64_t version) const {
  STRATA_ASSIGN_OR_RETURN(
      SnapshotPtr snapshot,
      internal::LoadVersion(*impl_->context->store, impl_->context->prefix, version));
  auto impl = std::make_unique<Impl>();
  impl->context = impl_->context;
  impl->read_only = true;
  impl->Advance(std::move(snapshot));
  return std::shared_ptr<Table>(new Table(std::move(impl)));
}

std::shared_ptr<Table> Table::Pin() const {
  auto impl = std::make_unique<Impl>();
  impl->context = impl_->context;
  impl->read_only = true;
  impl->Advance(impl_->current());
  return std::shared_ptr<Table>(new Table(std::move(impl)));
}

Result<std::vector<VersionInfo>> Table::ListVersions() const {
  ObjectStore& store = *impl_->context->store;
  const std::string& prefix = impl_->context->prefix;
  STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> versions,
                          internal::ListVersionNumbers(store, prefix));
  std::vector<VersionInfo> infos;
  std::optional<std::vector<internal::RolledBackRange>> rolled_back;  // read when needed
  for (uint64_t version : versions) {
    Result<SnapshotPtr> snapshot = internal::LoadVersion(store, prefix, version);
    if (!snapshot.ok()) {
      if (snapshot.status().IsNotFound()) continue;  // cleaned up after the listing
      if (snapshot.status().IsCorruption()) {
        // A corrupt version a later rollback replaced is no longer part of the history.
        if (!rolled_back) rolled_back = internal::RolledBackRanges(store, prefix, versions);
        if (internal::FindRolledBack(*rolled_back, version) != nullptr) continue;
      }
      return snapshot.status();
    }
    infos.push_back(DescribeVersion(**snapshot));
  }
  return infos;
}

Result<TableDescription> Table::Describe() const {
  SnapshotPtr snapshot = impl_->current();
  const pb::Manifest& manifest = snapshot->manifest;
  auto column_name = [&](int32_t field_id) {
    auto it = snapshot->column_of_field.find(field_id);
    return it == snapshot->column_of_field.end() ? fmt::format("field {}", field_id)
                                                 : snapshot->schema->field(it->second)->name();
  };
  TableDescription description;
  description.version = DescribeVersion(*snapshot);
  for (const pb::Fragment& fragment : manifest.fragments()) {
    FragmentInfo info;
    info.id = fragment.id();
    info.physical_rows = fragment.physical_rows();
    for (const pb::DataFile& file : fragment.files()) {
      DataFileInfo data;
      data.path = file.path();
      data.size = file.size();
      data.num_batches = file.batches_size();
      for (int32_t id : file.field_ids()) data.columns.push_back(column_name(id));
      info.data_files.push_back(std::move(data));
    }
    if (fragment.has_deletion()) {
      info.deleted_rows = fragment.deletion().num_deleted();
      info.deletion_file = fragment.deletion().path();
      info.deletion_file_size = fragment.deletion().size();
    }
    description.fragments.push_back(std::move(info));
  }
  for (const pb::Index& index : manifest.indexes()) {
    IndexInfo info;
    info.name = index.name();
    info.type = index.type();
    info.column = column_name(index.field_id());
    for (const pb::KeySegment& segment : index.segments()) {
      info.segments.push_back(IndexSegmentInfo{
          segment.path(), segment.size(), segment.num_entries(),
          std::vector<uint32_t>(segment.fragment_ids().begin(), segment.fragment_ids().end())});
    }
    description.indexes.push_back(std::move(info));
  }
  return description;
}

Result<AppendResult> Table::Append(const std::vector<RecordBatch>& batches,
                                   const ProgressCallback& progress) {
  STRATA_RETURN_IF_ERROR(CheckWritable(*impl_));
  SnapshotPtr read = impl_->current();
  AppendResult result;
  result.version = read->version();
  if (batches.empty()) return result;
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> aligned, AlignBatches(*read, batches));
  int64_t total = 0;
  for (const RecordBatch& batch : aligned) total += batch.num_rows();
  if (total == 0) return result;

  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<internal::FragmentSetWriter> writer,
      internal::FragmentSetWriter::Make(*impl_->context, *read, aligned.front().schema()));
  int64_t done = 0;
  for (const RecordBatch& batch : aligned) {
    if (batch.num_rows() == 0) continue;
    STRATA_RETURN_IF_ERROR(writer->Write(batch));
    done += batch.num_rows();
    if (progress) progress(done, total);
  }
  STRATA_ASSIGN_OR_RETURN(internal::WrittenFragments written, writer->Finish());
  return internal::AppendWrittenFragments(*this, std::move(written));
}

Result<AppendResult> Table::AppendStream(
    const std::function<Result<std::optional<RecordBatch>>()>& next) {
  STRATA_RETURN_IF_ERROR(CheckWritable(*impl_));
  SnapshotPtr read = impl_->current();
  AppendResult result;
  result.version = read->version();
  std::unique_ptr<internal::FragmentSetWriter> writer;
  SchemaPtr first;
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, next());
    if (!batch.has_value()) break;
    STRATA_RETURN_IF_ERROR(internal::CheckAppendSchema(*read, *batch->schema()));
    if (first == nullptr) {
      first = batch->schema();
    } else if (!SameColumnNames(*first, *batch->schema())) {
      return Status::InvalidArgument(
          fmt::format("AppendStream: a batch has the columns ({}) where the first had ({})",
                      ColumnNames(*batch->schema()), ColumnNames(*first)));
    }
    if (batch->num_rows() == 0) continue;
    if (writer == nullptr) {
      STRATA_ASSIGN_OR_RETURN(writer,
                              internal::FragmentSetWriter::Make(*impl_->context, *read, first));
    }
    STRATA_RETURN_IF_ERROR(writer->Write(*batch));
  }
  if (writer == nullptr) return result;
  STRATA_ASSIGN_OR_RETURN(internal::WrittenFragments written, writer->Finish());
  return internal::AppendWrittenFragments(*this, std::move(written));
}

Result<DeleteResult> Table::Delete(std::string_view filter) {
  STRATA_RETURN_IF_ERROR(CheckWritable(*impl_));
  if (filter.empty()) {
    return Status::InvalidArgument("Delete needs a filter (use \"true\" to delete every row)");
  }
  SnapshotPtr read = impl_->current();
  internal::RowSelectionSpec spec;
  STRATA_ASSIGN_OR_RETURN(spec.filter, expr::Parse(filter));
  STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> addresses,
                          internal::SelectRowAddresses(impl_->context, read, std::move(spec)));
  return DeleteAddresses(*impl_, read, addresses, std::string(filter));
}

Result<DeleteResult> Table::DeleteKeys(const std::vector<expr::Scalar>& keys) {
  STRATA_RETURN_IF_ERROR(CheckWritable(*impl_));
  SnapshotPtr read = impl_->current();
  if (!read->key_column) {
    return Status::InvalidArgument("DeleteKeys: the table has no primary-key column");
  }
  internal::RowSelectionSpec spec;
  spec.keys = keys;
  STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> addresses,
                          internal::SelectRowAddresses(impl_->context, read, std::move(spec)));
  std::string detail = fmt::format("{} IN (", read->schema->field(*read->key_column)->name());
  for (size_t i = 0; i < keys.size() && i < 16; ++i) {
    detail += (i == 0 ? "" : ", ") + keys[i].ToString();
  }
  detail += keys.size() > 16 ? ", ...)" : ")";
  return DeleteAddresses(*impl_, read, addresses, std::move(detail));
}

Result<uint64_t> Table::AddColumns(const std::vector<FieldPtr>& fields) {
  STRATA_RETURN_IF_ERROR(CheckWritable(*impl_));
  if (fields.empty()) return Status::InvalidArgument("AddColumns: no columns given");
  SnapshotPtr read = impl_->current();
  for (const FieldPtr& field : fields) {
    if (!field->nullable()) {
      return Status::InvalidArgument(
          fmt::format("cannot add non-nullable column '{}' ({}): existing rows would have no value",
                      field->name(), field->type()->ToString()));
    }
  }
  // Validates names (non-empty, unique, not reserved) and types.
  STRATA_ASSIGN_OR_RETURN(pb::Schema added, internal::SchemaToProto(Schema(fields)));
  auto build = [&](const internal::Snapshot& base,
                   const std::vector<pb::Transaction>&) -> Result<pb::Manifest> {
    pb::Manifest manifest = NextManifest(base);
    int32_t next_id = base.manifest.next_field_id();
    for (const pb::Field& field : added.fields()) {
      if (base.schema->GetFieldIndex(field.name()) >= 0) {
        return Status::InvalidArgument(fmt::format(
            "cannot add column '{}': the table already has a column of that name", field.name()));
      }
      pb::Field* f = manifest.mutable_schema()->add_fields();
      *f = field;
      f->set_id(next_id++);
    }
    manifest.set_next_field_id(next_id);
    return manifest;
  };
  std::string detail;
  for (const FieldPtr& field : fields) detail += (detail.empty() ? "" : ", ") + field->ToString();
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr committed,
                          Commit(*impl_, read, "add_columns", std::move(detail), build));
  return committed->version();
}

Result<uint64_t> Table::UpdateMetadata(const KeyValueMetadata& updates) {
  STRATA_RETURN_IF_ERROR(CheckWritable(*impl_));
  SnapshotPtr read = impl_->current();
  if (updates.empty()) return read->version();
  auto build = [&](const internal::Snapshot& base,
                   const std::vector<pb::Transaction>&) -> Result<pb::Manifest> {
    pb::Manifest manifest = NextManifest(base);
    internal::ApplyMetadataUpdates(updates, &manifest);
    return manifest;
  };
  std::string detail;
  for (const auto& [key, value] : updates.entries()) detail += (detail.empty() ? "" : ", ") + key;
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr committed,
                          Commit(*impl_, read, "update_metadata", std::move(detail), build));
  return committed->version();
}

Result<CompactionResult> Table::Compact(const CompactionOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckWritable(*impl_));
  SnapshotPtr committed;
  STRATA_ASSIGN_OR_RETURN(
      CompactionResult result,
      internal::CompactTable(*impl_->context, impl_->current(), options, &committed));
  if (committed) impl_->Advance(std::move(committed));
  return result;
}

Result<CleanupResult> Table::CleanupOldVersions(const CleanupOptions& options) {
  STRATA_RETURN_IF_ERROR(CheckWritable(*impl_));
  ObjectStore& store = *impl_->context->store;
  const std::string& prefix = impl_->context->prefix;
  STRATA_ASSIGN_OR_RETURN(uint64_t latest,
                          internal::FindLatestVersion(store, prefix, impl_->current()->version()));
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr snapshot, internal::LoadVersion(store, prefix, latest));
  STRATA_ASSIGN_OR_RETURN(CleanupResult result,
                          internal::CleanupTable(*impl_->context, snapshot, options));
  impl_->Advance(std::move(snapshot));
  return result;
}

Result<VerifyReport> Table::Verify(const VerifyOptions& options) const {
  return internal::VerifyTable(*impl_->context, impl_->current(), options);
}

Result<RepairReport> Table::Repair() {
  STRATA_RETURN_IF_ERROR(CheckWritable(*impl_));
  SnapshotPtr committed;
  STRATA_ASSIGN_OR_RETURN(RepairReport report,
                          internal::RepairTable(*impl_->context, impl_->current(), &committed));
  if (committed) impl_->Advance(std::move(committed));
  return report;
}

}  // namespace strata::table
