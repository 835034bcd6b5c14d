// Table: a versioned columnar table on an ObjectStore prefix (the LSM tree's base table).
//
// Every change commits a new immutable version (a manifest created with put-if-absent), so
// readers never block writers and any kept version can be read again. Data lives in
// fragments (Arrow IPC data files plus an optional deletion vector); a primary-key column,
// when the schema declares one, gets a key index that is extended with every append. The
// layout and every file type are described in docs/format/table.md.
//
// Concurrency: any number of Table handles, in any number of processes, may commit to one
// table. A commit that loses the race for version N+1 is rebased on the newer versions and
// retried (TableOptions::commit_retries times): appends never conflict; deletes merge their
// deletion vectors; a delete of a fragment that a concurrent compaction rewrote (and a
// compaction of a fragment a concurrent delete changed) fails with Status::Busy, which the
// caller may retry. Under sustained contention (many writers committing back to back) a
// commit can also lose the race more than commit_retries times in a row and return Busy;
// nothing was committed then, so retrying is always safe. A Table handle is safe to use from many
// threads; each call reads the version the handle was at when the call started, and a successful
// commit moves the handle to the version it created.
//
// Errors: InvalidArgument for bad input (nothing is written), NotFound for a missing table
// or version, Corruption when a file fails its checksum or structural checks, Busy for a
// retryable commit conflict, IOError from storage.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/expr.h"
#include "strata/ipc.h"
#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata {
class Clock;         // src/util/clock.h
class RandomSource;  // src/util/clock.h
}  // namespace strata

namespace strata::table {

// Field metadata marking the primary-key column ("true", "1" or "yes", case-insensitive).
// The key is "unenforced": appends do not check uniqueness. At most one column; it must be
// non-nullable and of type utf8, large_utf8, int8..int64, uint8..uint32 or timestamp.
inline constexpr std::string_view kPrimaryKeyMetadata = "strata:primary-key";
// Whether a column of `type` can be the primary key (the types listed above).
bool IsPrimaryKeyType(const DataType& type);

// Name of the column Scan() adds when ScanOptions::with_row_address is set (uint64).
inline constexpr std::string_view kRowAddressColumn = "_rowaddr";

// A row address is (fragment id << 32) | offset of the row in its fragment. Addresses
// change when compaction rewrites a fragment.
inline constexpr uint64_t MakeRowAddress(uint32_t fragment_id, uint32_t offset) {
  return (uint64_t{fragment_id} << 32) | offset;
}
inline constexpr uint32_t RowAddressFragment(uint64_t address) {
  return static_cast<uint32_t>(address >> 32);
}
inline constexpr uint32_t RowAddressOffset(uint64_t address) {
  return static_cast<uint32_t>(address);
}

// Reports progress of long operations: units done out of total (rows, for append and
// compaction). Called from the calling thread.
using ProgressCallback = std::function<void(int64_t done, int64_t total)>;

struct TableOptions {
  // Data file body compression.
  ipc::Compression compression = ipc::Compression::kZstd;
  // Column buffers smaller than this are stored uncompressed
  // (ipc::WriteOptions::min_compressed_buffer_bytes; 0 = compress every buffer that shrinks).
  int64_t min_compressed_buffer_bytes = 0;
  // An append starts a new fragment after this many rows or (uncompressed) bytes.
  int64_t max_rows_per_fragment = int64_t{1} << 20;
  int64_t max_bytes_per_fragment = int64_t{256} << 20;
  // Record batches in data files are cut at this many rows or uncompressed bytes, whichever
  // comes first, so a point read decompresses little.
  int64_t max_rows_per_batch = 8192;
  int64_t max_bytes_per_batch = int64_t{1} << 20;
  // How often a commit that lost the race for its version is rebased and retried.
  int commit_retries = 20;
  // Bytes of decoded data-file footers and key-index segments a handle keeps cached.
  int64_t cache_bytes = int64_t{256} << 20;
  // Time (manifest timestamps, the cleanup cutoff) and randomness (table and transaction
  // UUIDs); null = the system clock and SystemRandom(). Not owned: must outlive the handle.
  Clock* clock = nullptr;
  RandomSource* random = nullptr;
};

struct ScanOptions {
  // Columns to return, in this order; empty = every column of the schema.
  std::vector<std::string> columns;
  // A predicate in strata's expression language (docs/expressions.md); empty = all rows.
  std::string filter;
  // Rows to skip, then the most rows to return (after filtering).
  int64_t offset = 0;
  std::optional<int64_t> limit;
  // Append the kRowAddressColumn column.
  bool with_row_address = false;
  // Only the fragments with these ids (an id the version lacks selects nothing); empty = all.
  std::vector<uint32_t> fragment_ids;
};

// Batches of a scan, in fragment order and row order within a fragment. Batches are never
// empty. Reads happen as Next() is called; the iterator keeps the version it started at.
class BatchIterator {
 public:
  virtual ~BatchIterator() = default;
  // The schema of every batch (projection plus the row-address column when asked).
  virtual const SchemaPtr& schema() const = 0;
  // The next batch, or std::nullopt at the end.
  virtual Result<std::optional<RecordBatch>> Next() = 0;
  // Every remaining batch.
  Result<std::vector<RecordBatch>> ToBatches();
};

struct AppendResult {
  uint64_t version = 0;
  int64_t rows = 0;
  int fragments = 0;
  int64_t bytes_written = 0;  // data and index files
};

struct UpsertOptions {
  std::vector<expr::Scalar> delete_keys;
  KeyValueMetadata metadata_updates;   // as UpdateMetadata: an empty value removes the key
  KeyValueMetadata expected_metadata;  // guard, checked against the version committed on
};

struct UpsertResult {
  uint64_t version = 0;
  int64_t rows_appended = 0;
  int64_t rows_deleted = 0;
  int fragments = 0;
};

struct DeleteResult {
  // Unchanged when nothing matched (no commit is made).
  uint64_t version = 0;
  int64_t rows_deleted = 0;
};

struct VersionInfo {
  uint64_t version = 0;
  int64_t timestamp_micros = 0;  // when it was committed
  std::string operation;         // "create", "append", "delete", "compact", ...
  uint64_t read_version = 0;     // the version the change was computed against
  int64_t num_rows = 0;          // live rows
  int64_t num_fragments = 0;
};

struct TableStats {
  uint64_t version = 0;
  int64_t num_rows = 0;  // live rows
  int64_t num_deleted_rows = 0;
  int64_t num_fragments = 0;
  int64_t num_data_files = 0;
  int64_t num_deletion_files = 0;
  int64_t data_bytes = 0;  // data files as stored
  int64_t num_index_segments = 0;
  int64_t unindexed_fragments = 0;  // fragments the key index does not cover
};

// What one version is made of (for inspection tools).
struct DataFileInfo {
  std::string path;  // relative to the table prefix
  int64_t size = 0;
  int num_batches = 0;
  std::vector<std::string> columns;
};
struct FragmentInfo {
  uint32_t id = 0;
  int64_t physical_rows = 0;  // including deleted rows
  int64_t deleted_rows = 0;
  std::vector<DataFileInfo> data_files;
  std::string deletion_file;  // empty when no row is deleted
  int64_t deletion_file_size = 0;
};
struct IndexSegmentInfo {
  std::string path;
  int64_t size = 0;
  int64_t num_entries = 0;
  std::vector<uint32_t> fragment_ids;
};
struct IndexInfo {
  std::string name;
  std::string type;
  std::string column;
  std::vector<IndexSegmentInfo> segments;
};
struct TableDescription {
  VersionInfo version;
  std::vector<FragmentInfo> fragments;  // scan order
  std::vector<IndexInfo> indexes;
};

struct CompactionOptions {
  // A fragment is small, and merged with its small neighbours, while it has fewer live rows
  // than target_rows_per_fragment and fewer (uncompressed) bytes than
  // target_bytes_per_fragment. A fragment that reached the table's max_rows_per_fragment or
  // max_bytes_per_fragment is full whatever the targets: an append or a compaction cut it
  // there and would cut it there again. A merge takes neighbours up to the targets; a target
  // above the table's limit bounds nothing, as the writer cuts the output into full fragments
  // at the limit anyway. So a rewrite leaves at most one small fragment per group, fragments
  // cut at a limit are not rewritten again, and a Compact right after a Compact with the same
  // options has nothing to do (unless max_source_fragments stopped the first one early).
  int64_t target_rows_per_fragment = int64_t{1} << 20;
  // Default: the default TableOptions::max_bytes_per_fragment. A fragment's bytes are known
  // when its data files record them (docs/format/table.md §5.2); fragments written before
  // they were recorded are judged by their rows alone.
  int64_t target_bytes_per_fragment = int64_t{256} << 20;
  // Fragments with more than this fraction of deleted rows are rewritten without them.
  bool materialize_deletions = true;
  double materialize_deletions_threshold = 0.1;
  // At most this many source fragments are rewritten in one call (0 = no bound).
  int max_source_fragments = 32;
  ProgressCallback progress;
};

struct CompactionResult {
  // 0 when there was nothing to do (no commit is made).
  uint64_t version = 0;
  int fragments_removed = 0;
  int fragments_added = 0;
  int files_removed = 0;  // data and deletion files no longer referenced by the new version
  int files_added = 0;
  int64_t rows_written = 0;
  int64_t bytes_read = 0;     // data files as stored
  int64_t bytes_written = 0;  // data files as stored
};

struct CleanupOptions {
  // Versions committed more than this long before `now_micros` may be removed...
  int64_t older_than_micros = int64_t{14} * 24 * 3600 * 1000000;
  // ...but the newest `keep_at_least` versions (at least 1: the latest) always stay.
  int keep_at_least = 1;
  // The reference time; 0 = the table's clock (TableOptions::clock).
  int64_t now_micros = 0;
  // Also delete files under data/, _deletions/ and _indices/ that no manifest references.
  // Only safe when no commit is in flight: an uncommitted append's files look the same.
  bool delete_unreferenced = false;
};

struct CleanupResult {
  int64_t versions_removed = 0;
  int64_t files_removed = 0;
  int64_t bytes_removed = 0;
};

// InvalidArgument unless `name` is a valid tag label or branch name (`what` names it in the
// message, e.g. "tag label"): 1 to 128 characters of [A-Za-z0-9._-], not starting with '.'.
Status CheckRefName(std::string_view what, std::string_view name);

// A tag: a name for one version that keeps it readable (docs/format/table.md §13).
struct TagInfo {
  std::string label;
  uint64_t version = 0;
  int64_t timestamp_micros = 0;  // when the tagged version was committed
};

// A branch: a table of its own that started as a copy of one version of its parent.
struct BranchInfo {
  std::string name;
  uint64_t forked_from = 0;  // the parent's version it started from
  std::string prefix;        // where its table lives (Table::BranchPrefix)
};

struct VerifyOptions {
  // Check every kept version's manifest and files, not only the handle's version.
  bool all_versions = false;
};

struct VerifyReport {
  int64_t manifests_checked = 0;
  int64_t files_checked = 0;
  int64_t bytes_checked = 0;
  // One line per problem: "version 7: data/ab.arrow: batch 3 checksum mismatch".
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
};

struct RepairReport {
  uint64_t read_version = 0;
  // Set when fragments were dropped; no commit is made when nothing was missing.
  std::optional<uint64_t> committed_version;
  struct DroppedFragment {
    uint32_t fragment_id = 0;
    int64_t physical_rows = 0;
    std::vector<std::string> missing_files;  // keys relative to the table prefix
  };
  std::vector<DroppedFragment> dropped;
};

struct RollbackOptions {
  // Commit the rollback. False (the default) only reports what would be done.
  bool apply = false;
};

struct RollbackReport {
  uint64_t newest_version = 0;  // the newest version listed
  uint64_t intact_version = 0;  // the newest version whose manifest passes every check
  struct CorruptVersion {
    uint64_t version = 0;
    std::string problem;  // why its manifest was rejected
  };
  // Every listed version above intact_version, ascending; empty when the newest is intact.
  std::vector<CorruptVersion> corrupt;
  // Set when the rollback was committed (options.apply and corrupt versions found).
  std::optional<uint64_t> committed_version;
};

class Table;
namespace internal {
struct WrittenFragments;
Result<AppendResult> AppendWrittenFragments(Table& table, WrittenFragments written);
}  // namespace internal

class Table {
 public:
  // Creates version 1 (an empty table) under `prefix` ("" or ending in '/'). AlreadyExists
  // when a table is there; InvalidArgument for a bad schema or primary key.
  static Result<std::shared_ptr<Table>> Create(std::shared_ptr<ObjectStore> store,
                                               std::string prefix, SchemaPtr schema,
                                               TableOptions options = {});
  // Opens the latest version. NotFound when there is no table.
  static Result<std::shared_ptr<Table>> Open(std::shared_ptr<ObjectStore> store, std::string prefix,
                                             TableOptions options = {});
  // Whether a table exists under `prefix`.
  static Result<bool> Exists(ObjectStore& store, std::string_view prefix);
  // For a table whose newest manifests are corrupt (Open fails with Corruption): finds the
  // newest version whose manifest passes every check and, with options.apply, commits a new
  // version (operation "rollback") with that version's content, so the table opens again.
  // The corrupt manifests stay where they are (the version chain keeps no gaps and no
  // version number is reused); readers that walk the history skip them. No data file is
  // deleted. Nothing to do (no corrupt versions) is not an error. Corruption when no version
  // is intact; Busy when a concurrent commit took the new version first (nothing committed).
  // Only a manifest that fails its checks (Corruption) counts as corrupt: an I/O error or a
  // manifest of a newer format is returned as the error, never rolled back.
  static Result<RollbackReport> RollBackCorruptVersions(std::shared_ptr<ObjectStore> store,
                                                        std::string prefix,
                                                        const RollbackOptions& options = {},
                                                        TableOptions table_options = {});

  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // --- The handle's version ---------------------------------------------------------
  uint64_t version() const;
  SchemaPtr schema() const;
  // Index of the primary-key column in schema(), if declared.
  std::optional<int> primary_key_column() const;
  // Table metadata (string map) of this version.
  KeyValueMetadata metadata() const;
  // True for handles made by Checkout(): they read one version and refuse changes.
  bool read_only() const;
  // What Open noticed that does not stop the handle from working but that someone should
  // look at, one line each: a latest-version hint that names a version whose manifest is
  // missing (the handle reads an older version than the last one committed).
  std::vector<std::string> warnings() const;
  Result<TableStats> Stats() const;
  // The version's fragments, files and index segments, from its manifest (no other reads).
  Result<TableDescription> Describe() const;

  // Moves the handle to the newest version (not allowed on read-only handles).
  Status Refresh();
  // The newest committed version, found without listing the whole history.
  Result<uint64_t> LatestVersion() const;
  // Whether `version` is still the newest committed version (the next version is missing,
  // the latest-version hint names none later, `version` is still there): a reader's
  // re-check of a version it holds, without loading anything. false when a newer version
  // exists or `version` was cleaned up.
  Result<bool> IsLatestVersion(uint64_t version) const;
  // A change watch on the table's chain of versions (ObjectStore::Watch): while a poll
  // returns the count it returned before IsLatestVersion(v) answered true, v is still the
  // newest version. NotSupported when the store cannot watch; the caller then asks
  // IsLatestVersion each time.
  Result<std::unique_ptr<ChangeWatch>> WatchVersions() const;
  // A read-only handle on `version` (time travel). NotFound when it does not exist or was
  // cleaned up.
  Result<std::shared_ptr<Table>> Checkout(uint64_t version) const;
  // A read-only handle on this handle's current version, without I/O: what a reader holds
  // so that a Refresh of this handle by another thread does not move it mid-read.
  std::shared_ptr<Table> Pin() const;
  // Every kept version, oldest first.
  Result<std::vector<VersionInfo>> ListVersions() const;

  // --- Reads ------------------------------------------------------------------------
  Result<std::unique_ptr<BatchIterator>> Scan(const ScanOptions& options = {}) const;
  // Rows by address, in the order given; `columns` as in ScanOptions. NotFound for an
  // address that does not exist or whose row is deleted.
  Result<RecordBatch> Take(std::span<const uint64_t> row_addresses,
                           const std::vector<std::string>& columns = {}) const;
  // Live rows, or those matching `filter`. Without a filter this reads only the manifest.
  Result<int64_t> CountRows(std::string_view filter = {}) const;
  // Live rows whose primary key is one of `keys`, in row-address order; uses the key index.
  // InvalidArgument when the table has no primary key.
  Result<RecordBatch> LookupKeys(const std::vector<expr::Scalar>& keys,
                                 const std::vector<std::string>& columns = {},
                                 bool with_row_address = false) const;
  // For each of `keys`, 1 when the table holds a live row with that primary key. Answered
  // from the key index alone (no row is read) for the fragments it covers; keys not found
  // there are looked up in the fragments it does not cover, if any, by reading them.
  // InvalidArgument when the table has no primary key.
  Result<std::vector<uint8_t>> KeysPresent(const std::vector<expr::Scalar>& keys) const;

  // --- Changes (each commits one version and moves the handle to it) ------------------
  // Batches must have the table's columns (names and types; field metadata is ignored) or
  // a subset that includes every non-nullable column. Fragments are cut by
  // TableOptions::max_rows_per_fragment / max_bytes_per_fragment.
  Result<AppendResult> Append(const std::vector<RecordBatch>& batches,
                              const ProgressCallback& progress = {});
  // Append for more rows than should be in memory at once: `next` is called until it
  // yields nullopt, and each batch is written as it comes, all in one version. Every batch
  // must have the columns of the first, in the same order (InvalidArgument otherwise). An
  // error from `next` (a caller cancelling) stops the append: nothing is committed, and the
  // data files already written stay behind as unreferenced files (CleanupOldVersions
  // removes them).
  Result<AppendResult> AppendStream(
      const std::function<Result<std::optional<RecordBatch>>()>& next);
  // Deletes the live rows matching `filter` (required; "true" deletes everything).
  Result<DeleteResult> Delete(std::string_view filter);
  // Deletes the live rows whose primary key is one of `keys`.
  Result<DeleteResult> DeleteKeys(const std::vector<expr::Scalar>& keys);
  // Replaces rows by primary key in one commit (the LSM merge's base commit): deletes every
  // live row whose key is the key of a row in `batches` or one of options.delete_keys,
  // appends `batches`, and applies options.metadata_updates. When rebased on concurrent
  // commits, rows they appended with one of these keys are deleted too, so the table never
  // holds two live rows of one key that this call wrote or replaced. InvalidArgument when
  // the table has no primary key or `batches` repeat a key. Aborted (nothing committed)
  // when a key of options.expected_metadata does not have the expected value (absent =
  // "") in the version the commit lands on.
  Result<UpsertResult> Upsert(const std::vector<RecordBatch>& batches,
                              const UpsertOptions& options = {});
  // Adds nullable columns; existing rows read them as null without any data rewrite.
  // InvalidArgument for a non-nullable field or a name already in use.
  Result<uint64_t> AddColumns(const std::vector<FieldPtr>& fields);
  // Sets (or, for an empty value, removes) table metadata keys.
  Result<uint64_t> UpdateMetadata(const KeyValueMetadata& updates);
  Result<CompactionResult> Compact(const CompactionOptions& options = {});
  // Removes old versions and the files only they use. Never removes a file a kept version,
  // a tag or a branch (docs/format/table.md §13) uses, nor a file of an ancestor table.
  Result<CleanupResult> CleanupOldVersions(const CleanupOptions& options = {});

  // --- Secondary indexes (docs/format/table.md §14) ----------------------------------
  // Indexes other than the key index are built by the layers above (a vector index of the
  // context store) as immutable files, one segment per set of fragments; the table stores
  // the files, records the segments in the manifest, carries them through every commit and
  // keeps their files through cleanup like any file a kept version references.
  //
  // Stores `bytes` as a new index file "_indices/<uuid>.<extension>" and returns its path
  // (relative to the table). Not referenced by any version until AddIndexSegments commits
  // it. InvalidArgument for an extension that is not 1-16 of [a-z0-9].
  Result<std::string> WriteIndexFile(std::string_view extension, std::string_view bytes);
  // The bytes of an index file a segment of this version references.
  Result<Buffer> ReadIndexFile(std::string_view path) const;
  // Adds `segments` (files from WriteIndexFile) to index `name` of `type` over `column`
  // (created when missing) in one commit ("create_index"). Segments of the index that cover
  // no fragment of the newest version any more (compacted away) are dropped from it; a new
  // segment covering a fragment that a concurrent commit removed is dropped too (it would
  // describe rows that no longer exist). InvalidArgument for the key index's name, a name
  // used with another type or column, an unknown column or a segment without fragments.
  Result<uint64_t> AddIndexSegments(std::string_view name, std::string_view type,
                                    std::string_view column,
                                    const std::vector<IndexSegmentInfo>& segments);

  // --- Tags and branches (docs/format/table.md §13) ----------------------------------
  // Labels and branch names: 1 to 128 characters of [A-Za-z0-9._-], not starting with '.'.
  //
  // Tags `version` (0 = the handle's version) as `label`. A tag is immutable and keeps the
  // version readable through CheckoutTag even after cleanup removed it from the history
  // (cleanup never deletes a file a tag uses). AlreadyExists for a label in use, NotFound
  // for a version that does not exist. Allowed on read-only handles (it changes no version).
  Result<TagInfo> CreateTag(std::string_view label, uint64_t version = 0);
  // Every tag, by label.
  Result<std::vector<TagInfo>> ListTags() const;
  // Removes the tag, then the files only it kept. NotFound for an unknown label.
  Status DeleteTag(std::string_view label);
  // A read-only handle on the tagged version. NotFound for an unknown label.
  Result<std::shared_ptr<Table>> CheckoutTag(std::string_view label) const;

  // Where branch `name` of the table at `prefix` lives: "<prefix>_branches/<name>/".
  static std::string BranchPrefix(std::string_view prefix, std::string_view name);
  // Creates branch `name` from `version` (0 = the handle's version): a table at BranchPrefix
  // whose first version holds exactly that version's rows, schema, indexes and metadata,
  // reading the parent's files in place (none is copied). Returns a writable handle on it;
  // Open(store, BranchPrefix(...)) opens it later. Changes to either table never show in
  // the other; cleanup of either never deletes a file the other still uses. AlreadyExists
  // for a name in use, NotFound for a version that does not exist.
  Result<std::shared_ptr<Table>> CreateBranch(std::string_view name, uint64_t version = 0);
  // Every branch of this table (not of its branches), by name.
  Result<std::vector<BranchInfo>> ListBranches() const;
  // Deletes branch `name`: every object under its prefix (its own branches and tags too),
  // then its entry, then the files of this table that only the branch still used.
  // NotFound for an unknown name.
  Status DeleteBranch(std::string_view name);

  // --- Integrity --------------------------------------------------------------------
  // Checks that every manifest, data, deletion and index file the version references
  // exists, has the recorded size and passes its checksums, and that no manifest is missing
  // from the chain: the one the latest-version hint names and, with all_versions, any
  // between the oldest and the newest (versions a rollback replaced are not problems).
  Result<VerifyReport> Verify(const VerifyOptions& options = {}) const;
  // Commits a version without the fragments whose data or deletion files are missing.
  // (A table whose newest manifest is corrupt cannot be opened: RollBackCorruptVersions.)
  Result<RepairReport> Repair();

  struct Impl;  // src/table/table_internal.h

 private:
  // Commits fragments written outside Append (the LSM links files into tables).
  friend Result<AppendResult> internal::AppendWrittenFragments(Table&, internal::WrittenFragments);

  explicit Table(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::table
