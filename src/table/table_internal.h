// What Table's implementation files share: the per-table context and file cache, reading
// one fragment at one version, writing rows into new fragments, and the maintenance
// operations (compaction, cleanup, verify, repair) that Table's methods delegate to.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "strata/expr.h"
#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/table.h"
#include "table/data_file.h"
#include "table/deletion_file.h"
#include "table/format.h"
#include "table/key_index.h"
#include "table/manifest.pb.h"
#include "util/mutex.h"

namespace strata::table::internal {

// Decoded data-file footers, deletion vectors and key segments, keyed by object key
// (objects are immutable, so entries never go stale), evicted least-recently-used beyond
// a byte budget. Thread safe; loads happen outside the lock.
class FileCache {
 public:
  explicit FileCache(int64_t capacity_bytes);
  ~FileCache();
  Result<std::shared_ptr<DataFileReader>> DataFile(const std::shared_ptr<ObjectStore>& store,
                                                   const std::string& prefix,
                                                   const pb::DataFile& entry);
  Result<std::shared_ptr<const DeletionVector>> Deletions(ObjectStore& store,
                                                          const std::string& prefix,
                                                          const pb::DeletionFile& entry,
                                                          int64_t physical_rows);
  Result<std::shared_ptr<const KeySegment>> Segment(ObjectStore& store, const std::string& prefix,
                                                    const pb::KeySegment& entry);
  // Threads waiting now for another thread's load of the object they asked for: each object
  // is loaded by one thread at a time, and those asking meanwhile share its value or error.
  int64_t LoadsWaiting() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Everything a table's handles share (Checkout handles share their parent's).
struct TableContext {
  std::shared_ptr<ObjectStore> store;
  std::string prefix;  // "" or ending in '/'
  TableOptions options;
  FileCache cache;

  TableContext(std::shared_ptr<ObjectStore> s, std::string p, TableOptions o)
      : store(std::move(s)), prefix(std::move(p)), options(o), cache(o.cache_bytes) {}
};

// One fragment at one version: its data files (batch-aligned) and deletion vector.
class FragmentReader {
 public:
  static Result<FragmentReader> Open(TableContext& context, const Snapshot& snapshot,
                                     const pb::Fragment& fragment);
  const pb::Fragment& fragment() const { return *fragment_; }
  int num_batches() const { return static_cast<int>(layout_->batch_offsets.size()); }
  int64_t batch_offset(int i) const { return layout_->batch_offsets[static_cast<size_t>(i)]; }
  int64_t batch_rows(int i) const;
  // Statistics of schema column `column` in batch i, for pruning; a column no data file
  // holds is all null. Decoded from the manifest on first use and kept for the reader's
  // lifetime (so a reader is not shared between threads); nullptr when out of range.
  const expr::ColumnStatistics* Statistics(int batch, int column) const;
  // Batch i with every physical row (deleted ones included) and the schema columns
  // `columns`, in that order.
  Result<RecordBatch> ReadBatch(int i, const std::vector<int>& columns) const;
  // Asks the kernel to start reading, in the background, what ReadBatch(i, columns) will
  // read from memory-mapped data files (DataFileReader::Prefetch); returns the bytes asked
  // for. An out-of-range batch asks for nothing; out-of-range columns are ignored.
  int64_t Prefetch(int i, const std::vector<int>& columns) const;
  // Null when the fragment has no deletions.
  const DeletionVector* deletions() const { return deletions_.get(); }

 private:
  // The distinct columns of data file f among schema `columns`, in first-seen order; with
  // `wanted`, also (position in `columns`, position in the result) of each such column.
  std::vector<int> FileColumns(size_t f, const std::vector<int>& columns,
                               std::vector<std::pair<size_t, size_t>>* wanted) const;

  const Snapshot* snapshot_ = nullptr;
  const pb::Fragment* fragment_ = nullptr;
  std::shared_ptr<const FragmentLayout> layout_;  // the snapshot's (or the reader's own)
  std::vector<std::shared_ptr<DataFileReader>> files_;
  // Decoded statistics by batch * num_columns + schema column. Decoding every batch's
  // statistics of every column on Open cost more than most reads (a point lookup uses none),
  // so only those asked for are decoded. Nodes never move, so returned pointers stay valid.
  mutable std::unordered_map<int64_t, expr::ColumnStatistics> statistics_;
  std::shared_ptr<const DeletionVector> deletions_;
};

// Rows written into new fragments (ids not assigned yet: the commit assigns them).
struct WrittenFragments {
  std::vector<pb::Fragment> fragments;
  // Covers `fragments` (local fragment i = fragments[i]); set when the table has a key
  // column and at least one row was written.
  std::optional<pb::KeySegment> key_segment;
  int64_t rows = 0;
  int64_t bytes_written = 0;
};

// Commits fragments whose files already exist (data files, deletion files, the key
// segment) to `table` as one "append" version, exactly as Table::Append commits what its
// FragmentSetWriter wrote (Table::Append itself ends with this call): fragment ids are
// assigned by the commit, `key_segment` (if set) covers `fragments` in order. A fragment may
// carry a deletion file (rows of the file that are not part of the table); it may have been
// written with any fragment id in its name. The result's bytes_written is
// written.bytes_written and its rows written.rows, which must be the fragments' live rows
// (physical_rows less deleted rows). Nullable columns no file of a fragment holds read as
// null. InvalidArgument (nothing committed) when the entries do not fit the table: unknown
// or repeated field ids, a fragment without the key or a non-nullable column, files of one
// fragment with different batch rows or not adding up to physical_rows, a deletion count
// outside [1, physical_rows], a wrong `rows`, or a key segment without a key column or not
// listing one id per fragment.
Result<AppendResult> AppendWrittenFragments(Table& table, WrittenFragments written);

// Streams rows (the table schema or a subset of its columns, by name) into fragments cut by
// TableOptions limits, and builds their key segment.
class FragmentSetWriter {
 public:
  static Result<std::unique_ptr<FragmentSetWriter>> Make(TableContext& context,
                                                         const Snapshot& snapshot,
                                                         SchemaPtr input_schema);
  virtual ~FragmentSetWriter() = default;
  virtual Status Write(const RecordBatch& batch) = 0;
  virtual Result<WrittenFragments> Finish() = 0;
};

// Checks that `schema` (an input batch's) can be appended to the snapshot's table: every
// column exists with the same type, every non-nullable table column is present.
Status CheckAppendSchema(const Snapshot& snapshot, const Schema& schema);

// Checks every batch with CheckAppendSchema and pads batches whose column sets differ with
// nulls to the union of their columns, as Append writes them (defined in table.cc).
Result<std::vector<RecordBatch>> AlignAppendBatches(const Snapshot& snapshot,
                                                    const std::vector<RecordBatch>& batches);

// Adds the files of the table at `prefix` (keys relative to it) that its tags use and that its
// branches use, through every version, tag and branch of theirs (refs.cc).
Status CollectFilesKeptByRefs(ObjectStore& store, const std::string& prefix,
                              std::unordered_set<std::string>* out);

// Maintenance, each on top of `read`; `committed` receives the new version when one is made.
// A deletion file written while merging deletions into a fragment, kept across commit
// attempts: a retry whose base still has the same deletion file for that fragment reuses it
// (a fragment's rows never change, so neither does the merge) and a lost race costs no
// second write.
struct MergedDeletionFile {
  std::string base_path;  // the base's deletion file ("" when it had none)
  pb::DeletionFile file;
  int64_t added = 0;  // rows the merge newly deleted
};

// What merging deltas into the deletions of one base version changes.
struct DeletionMerge {
  int64_t deleted = 0;                            // rows newly deleted
  std::set<uint32_t> removed;                     // fragments with every row now deleted
  std::map<uint32_t, pb::DeletionFile> replaced;  // fragments with a new deletion file
};

// Merges `delta` (row offsets) into the deletions `fragment` has at `base`, adding to
// `merge`. Rows already deleted there (a concurrent delete) are not counted again. Writes a
// new deletion file unless `written` has one for the same base file or every row is now
// deleted; new files are recorded in `written` and their paths appended to `new_paths`.
Status MergeFragmentDeletions(TableContext& context, const Snapshot& base,
                              const pb::Fragment& fragment, const DeletionVector& delta,
                              std::map<uint32_t, MergedDeletionFile>& written, DeletionMerge& merge,
                              std::vector<std::string>* new_paths);

// Applies `merge` to `manifest` (built on the base version it was merged against): drops the
// fragments it removed, gives the others their new deletion files and records both in the
// transaction. Delete and Upsert (defined in table.cc).
void ApplyDeletionMerge(const DeletionMerge& merge, pb::Manifest* manifest);

// Sets each of `updates` in `manifest`'s metadata, replacing an existing value; an empty
// value removes the key. Table::UpdateMetadata and Upsert's metadata_updates (defined in
// table.cc).
void ApplyMetadataUpdates(const KeyValueMetadata& updates, pb::Manifest* manifest);

Result<CompactionResult> CompactTable(TableContext& context, const SnapshotPtr& read,
                                      const CompactionOptions& options, SnapshotPtr* committed);
Result<CleanupResult> CleanupTable(TableContext& context, const SnapshotPtr& latest,
                                   const CleanupOptions& options);
Result<VerifyReport> VerifyTable(TableContext& context, const SnapshotPtr& snapshot,
                                 const VerifyOptions& options);
Result<RepairReport> RepairTable(TableContext& context, const SnapshotPtr& read,
                                 SnapshotPtr* committed);
Result<RollbackReport> RollBackTable(ObjectStore& store, const std::string& prefix,
                                     const RollbackOptions& options, const TableOptions& table);
// The warning Open gives when the latest-version hint names `hint` but the newest manifest
// found is `latest`; nullopt when the hint is not ahead.
std::optional<std::string> HintAheadWarning(uint64_t hint, uint64_t latest);

}  // namespace strata::table::internal

namespace strata::table {

struct Table::Impl {
  std::shared_ptr<internal::TableContext> context;
  bool read_only = false;

  // Set once by Open, before the handle is shared.
  std::vector<std::string> warnings;

  mutable Mutex mu;
  internal::SnapshotPtr snapshot STRATA_GUARDED_BY(mu);

  internal::SnapshotPtr current() const {
    MutexLock lock(mu);
    return snapshot;
  }
  // Moves to `next` unless the handle is already at a newer version.
  void Advance(internal::SnapshotPtr next) {
    MutexLock lock(mu);
    if (!snapshot || next->version() > snapshot->version()) snapshot = std::move(next);
  }
};

}  // namespace strata::table
