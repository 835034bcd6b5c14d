// Table::Upsert: the LSM merge's single base-table commit. Deletes the live rows whose key the
// call writes or names, appends the new rows and updates metadata in one version, and on a
// lost race re-resolves its keys in whatever fragments were committed meanwhile.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/table.h"
#include "table/commit.h"
#include "table/scan.h"
#include "table/table_internal.h"

namespace strata::table {

using internal::SnapshotPtr;

namespace {

// Orders normalized keys (all Int64 or all String scalars, see NormalizeKey).
struct KeyLess {
  bool operator()(const expr::Scalar& a, const expr::Scalar& b) const {
    if (a.kind() != b.kind()) return a.kind() < b.kind();
    if (a.kind() == expr::Scalar::Kind::kString) return a.string_value() < b.string_value();
    return a.int64_value() < b.int64_value();
  }
};

// The key at `row` of key column `keys` as a scalar the key index compares; nullopt for a
// null or a type that cannot be a key.
std::optional<expr::Scalar> KeyOfRow(const Array& keys, int64_t row, internal::KeyKind kind) {
  if (keys.IsNull(row)) return std::nullopt;
  expr::Scalar value;
  switch (keys.type_id()) {
    case TypeId::kInt8:
      value = expr::Scalar::Int64(keys.Value<int8_t>(row));
      break;
    case TypeId::kInt16:
      value = expr::Scalar::Int64(keys.Value<int16_t>(row));
      break;
    case TypeId::kInt32:
      value = expr::Scalar::Int64(keys.Value<int32_t>(row));
      break;
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      value = expr::Scalar::Int64(keys.Value<int64_t>(row));
      break;
    case TypeId::kUInt8:
      value = expr::Scalar::Int64(keys.Value<uint8_t>(row));
      break;
    case TypeId::kUInt16:
      value = expr::Scalar::Int64(keys.Value<uint16_t>(row));
      break;
    case TypeId::kUInt32:
      value = expr::Scalar::Int64(keys.Value<uint32_t>(row));
      break;
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
      value = expr::Scalar::String(std::string(keys.StringValue(row)));
      break;
    default:
      return std::nullopt;
  }
  return internal::NormalizeKey(value, kind);
}

// The metadata value of `key` in `manifest` ("" when absent).
std::string MetadataValue(const pb::Manifest& manifest, const std::string& key) {
  for (const pb::KeyValue& kv : manifest.metadata()) {
    if (kv.key() == key) return kv.value();
  }
  return "";
}

bool Contains(const google::protobuf::RepeatedField<uint32_t>& ids, uint32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Live rows of `base`'s fragments with ids >= `first_new_id` (committed after the read
// version) whose key is one of `keys`. Runs the ordinary key selection on a snapshot that
// holds only those fragments, so index segments and unindexed fragments are handled alike.
Result<std::vector<uint64_t>> SelectInNewFragments(
    const std::shared_ptr<internal::TableContext>& context, const internal::Snapshot& base,
    uint32_t first_new_id, const std::vector<expr::Scalar>& keys) {
  pb::Manifest trimmed = base.manifest;
  google::protobuf::RepeatedPtrField<pb::Fragment> kept;
  for (const pb::Fragment& fragment : base.manifest.fragments()) {
    if (fragment.id() >= first_new_id) *kept.Add() = fragment;
  }
  if (kept.empty()) return std::vector<uint64_t>();
  trimmed.mutable_fragments()->Swap(&kept);
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr snapshot, internal::MakeSnapshot(std::move(trimmed)));
  internal::RowSelectionSpec spec;
  spec.keys = keys;
  return internal::SelectRowAddresses(context, std::move(snapshot), std::move(spec));
}

// Files an attempt wrote that no manifest references when the upsert commits nothing.
void DeleteQuietly(ObjectStore& store, const std::string& prefix,
                   const std::vector<std::string>& paths) {
  // Best effort: a file left behind is unreferenced, and cleanup removes it later.
  for (const std::string& path : paths) store.Delete(prefix + path).IgnoreError();
}

}  // namespace

Result<UpsertResult> Table::Upsert(const std::vector<RecordBatch>& batches,
                                   const UpsertOptions& options) {
  if (impl_->read_only) {
    return Status::InvalidArgument(
        fmt::format("table is checked out at version {} (read-only)", impl_->current()->version()));
  }
  const SnapshotPtr read = impl_->current();
  internal::TableContext& context = *impl_->context;
  UpsertResult result;
  result.version = read->version();
  if (!read->key_column) {
    return Status::InvalidArgument("Upsert: the table has no primary-key column");
  }
  const Field& key_field = *read->schema->field(*read->key_column);
  STRATA_ASSIGN_OR_RETURN(internal::KeyKind kind, internal::KeyKindForType(*key_field.type()));

  // --- Validate everything before writing anything -------------------------------------
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> aligned,
                          internal::AlignAppendBatches(*read, batches));
  // Every key the call writes or deletes, sorted. The batches' keys are sorted as plain
  // values (views into the batches for strings) before they become scalars: a merge hands
  // over a million keys, and sorting or tree-inserting scalars cost it seconds.
  std::vector<expr::Scalar> key_list;
  int64_t total_rows = 0;
  {
    std::vector<std::string_view> string_keys;
    std::vector<int64_t> integer_keys;
    for (const RecordBatch& batch : aligned) total_rows += batch.num_rows();
    if (kind == internal::KeyKind::kString) {
      string_keys.reserve(static_cast<size_t>(total_rows));
    } else {
      integer_keys.reserve(static_cast<size_t>(total_rows));
    }
    for (const RecordBatch& batch : aligned) {
      const Array column = batch.GetColumnByName(key_field.name());
      if (!column.is_valid_handle()) {
        return Status::InvalidArgument(
            fmt::format("Upsert: a batch lacks the primary-key column '{}'", key_field.name()));
      }
      for (int64_t row = 0; row < batch.num_rows(); ++row) {
        std::optional<expr::Scalar> key;
        if (!column.IsNull(row)) {
          if (kind == internal::KeyKind::kString) {
            string_keys.push_back(column.StringValue(row));
            continue;
          }
          key = KeyOfRow(column, row, kind);
        }
        if (!key) {
          return Status::InvalidArgument(fmt::format(
              "Upsert: row {} of a batch has a null primary key '{}'", row, key_field.name()));
        }
        integer_keys.push_back(key->int64_value());
      }
    }
    std::optional<expr::Scalar> repeated;
    std::sort(string_keys.begin(), string_keys.end());
    if (auto it = std::adjacent_find(string_keys.begin(), string_keys.end());
        it != string_keys.end()) {
      repeated = expr::Scalar::String(std::string(*it));
    }
    std::sort(integer_keys.begin(), integer_keys.end());
    if (auto it = std::adjacent_find(integer_keys.begin(), integer_keys.end());
        it != integer_keys.end()) {
      repeated = expr::Scalar::Int64(*it);
    }
    if (repeated) {
      return Status::InvalidArgument(
          fmt::format("Upsert: key {} appears more than once in the batches (column '{}')",
                      repeated->ToString(), key_field.name()));
    }
    key_list.reserve(string_keys.size() + integer_keys.size() + options.delete_keys.size());
    for (std::string_view key : string_keys)
      key_list.push_back(expr::Scalar::String(std::string(key)));
    for (int64_t key : integer_keys) key_list.push_back(expr::Scalar::Int64(key));
  }
  if (!options.delete_keys.empty()) {
    const auto batch_keys_end = static_cast<std::ptrdiff_t>(key_list.size());
    for (const expr::Scalar& key : options.delete_keys) {
      std::optional<expr::Scalar> normalized = internal::NormalizeKey(key, kind);
      if (!normalized) {
        return Status::InvalidArgument(
            fmt::format("Upsert: delete key {} is not a value of primary-key column '{}' ({})",
                        key.ToString(), key_field.name(), key_field.type()->ToString()));
      }
      key_list.push_back(std::move(*normalized));
    }
    // A delete key may repeat, or name a key the batches write.
    std::sort(key_list.begin() + batch_keys_end, key_list.end(), KeyLess());
    std::inplace_merge(key_list.begin(), key_list.begin() + batch_keys_end, key_list.end(),
                       KeyLess());
    key_list.erase(
        std::unique(key_list.begin(), key_list.end(),
                    [](const expr::Scalar& a, const expr::Scalar& b) { return !KeyLess()(a, b); }),
        key_list.end());
  }
  if (total_rows == 0 && key_list.empty() && options.metadata_updates.empty()) return result;

  // --- Rows to delete as of the read version, then the new rows ------------------------
  std::map<uint32_t, internal::DeletionVector> read_deltas;
  if (!key_list.empty() && read->manifest.fragments_size() > 0) {
    internal::RowSelectionSpec spec;
    spec.keys = key_list;
    STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> addresses,
                            internal::SelectRowAddresses(impl_->context, read, std::move(spec)));
    for (uint64_t address : addresses) {
      read_deltas[RowAddressFragment(address)].Add(RowAddressOffset(address));
    }
  }
  internal::WrittenFragments written;
  if (total_rows > 0) {
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<internal::FragmentSetWriter> writer,
        internal::FragmentSetWriter::Make(context, *read, aligned.front().schema()));
    for (const RecordBatch& batch : aligned) {
      if (batch.num_rows() > 0) STRATA_RETURN_IF_ERROR(writer->Write(batch));
    }
    STRATA_ASSIGN_OR_RETURN(written, writer->Finish());
  }

  // --- Commit --------------------------------------------------------------------------
  const uint32_t first_new_id = read->manifest.next_fragment_id();
  // Merged deletion files written by earlier attempts (reused across attempts).
  std::map<uint32_t, internal::MergedDeletionFile> merged_files;
  std::vector<std::string> deletion_paths;  // every deletion file written
  bool guard_failed = false;
  bool nothing_to_do = false;
  int64_t rows_deleted = 0;
  auto build = [&](const internal::Snapshot& base,
                   const std::vector<pb::Transaction>& intervening) -> Result<pb::Manifest> {
    for (const auto& [key, expected] : options.expected_metadata.entries()) {
      const std::string actual = MetadataValue(base.manifest, key);
      if (actual != expected) {
        guard_failed = true;
        return Status::Aborted(fmt::format(
            "Upsert: metadata '{}' is '{}' in version {}, expected '{}'; nothing committed", key,
            actual, base.version(), expected));
      }
    }
    std::map<uint32_t, internal::DeletionVector> deltas;
    for (const auto& [id, delta] : read_deltas) {
      if (base.FindFragment(id) != nullptr) {
        deltas[id] = delta;
        continue;
      }
      // Gone: fine when concurrent deletes removed every row of it, a conflict when a
      // compaction or repair rewrote or dropped it.
      for (const pb::Transaction& t : intervening) {
        const bool deletes_rows = t.operation() == "delete" || t.operation() == "upsert";
        if (!deletes_rows && Contains(t.removed_fragments(), id)) {
          std::optional<std::string> conflict = internal::FindConflict(intervening, {id}, false);
          return Status::Busy(fmt::format(
              "commit conflict: {}; retry the upsert",
              conflict
                  ? *conflict
                  : fmt::format("fragment {} was removed by a concurrent {}", id, t.operation())));
        }
      }
    }
    // Rows with these keys that commits after the read version appended.
    if (!key_list.empty() && base.manifest.next_fragment_id() > first_new_id) {
      STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> addresses,
                              SelectInNewFragments(impl_->context, base, first_new_id, key_list));
      for (uint64_t address : addresses) {
        deltas[RowAddressFragment(address)].Add(RowAddressOffset(address));
      }
    }

    pb::Manifest manifest = base.manifest;
    manifest.clear_transaction();
    internal::DeletionMerge merge;
    for (const auto& [id, delta] : deltas) {
      STRATA_RETURN_IF_ERROR(internal::MergeFragmentDeletions(
          context, base, *base.FindFragment(id), delta, merged_files, merge, &deletion_paths));
    }
    if (merge.deleted == 0 && written.fragments.empty() && options.metadata_updates.empty()) {
      nothing_to_do = true;
      return Status::Aborted("Upsert: nothing to commit");
    }

    internal::ApplyDeletionMerge(merge, &manifest);

    pb::Transaction* transaction = manifest.mutable_transaction();
    uint32_t next_id = base.manifest.next_fragment_id();
    std::vector<uint32_t> ids;
    for (const pb::Fragment& fragment : written.fragments) {
      pb::Fragment* added = manifest.add_fragments();
      *added = fragment;
      added->set_id(next_id);
      transaction->add_added_fragments(next_id);
      ids.push_back(next_id++);
    }
    manifest.set_next_fragment_id(next_id);
    if (written.key_segment) {
      pb::Index* index = nullptr;
      for (pb::Index& candidate : *manifest.mutable_indexes()) {
        if (candidate.name() == internal::kKeyIndexName) index = &candidate;
      }
      if (index == nullptr) {
        return Status::Internal(fmt::format("version {} lacks the key index '{}'", base.version(),
                                            internal::kKeyIndexName));
      }
      pb::KeySegment* segment = index->add_segments();
      *segment = *written.key_segment;
      segment->clear_fragment_ids();
      for (uint32_t id : ids) segment->add_fragment_ids(id);
    }
    internal::ApplyMetadataUpdates(options.metadata_updates, &manifest);
    rows_deleted = merge.deleted;
    return manifest;
  };

  internal::CommitRequest request;
  request.operation = "upsert";
  request.detail = fmt::format("{}: {} rows, {} delete keys", key_field.name(), written.rows,
                               options.delete_keys.size());
  request.max_retries = context.options.commit_retries;
  request.clock = context.options.clock;
  request.random = context.options.random;
  request.build = build;
  Result<internal::CommitOutcome> outcome =
      internal::CommitWithRetry(*context.store, context.prefix, read, request);
  if (!outcome.ok()) {
    if (guard_failed || nothing_to_do) {
      // No attempt was committed (a builder error ends the loop before any put), so what this
      // call wrote is referenced by nothing.
      std::vector<std::string> paths = deletion_paths;
      for (const pb::Fragment& fragment : written.fragments) {
        for (const pb::DataFile& file : fragment.files()) paths.push_back(file.path());
      }
      if (written.key_segment) paths.push_back(written.key_segment->path());
      DeleteQuietly(*context.store, context.prefix, paths);
      if (nothing_to_do && !guard_failed) return result;
    }
    return outcome.status();
  }
  impl_->Advance(outcome->snapshot);
  result.version = outcome->snapshot->version();
  result.rows_appended = written.rows;
  result.rows_deleted = rows_deleted;
  result.fragments = static_cast<int>(written.fragments.size());
  return result;
}

}  // namespace strata::table
