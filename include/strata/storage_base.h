// StorageBase: the schema-agnostic store every typed store is built on — an LSM tree over
// one versioned base table (include/strata/table.h) at an ObjectStore prefix.
//
// Writes go to this handle's shard (one shard per writer identity, shard id =
// UUIDv5(NAMESPACE_OID, shard_id or "default")) through a resident shard writer: Put is
// durable on return (the WAL is synced; with a local store opened with sync == false,
// "process" durability), and visible to readers after the next seal (Flush, Close, a full
// memtable, Cleanup) — or on return with seal_on_put. With read_own_writes the handle's
// own reads also include its unsealed memtable, so read-your-writes needs no generation per
// put.
//
// Reads union the base table, every shard's pending generations (each read re-checks the shard
// manifests and base version the handle last read, docs/format/lsm.md §3.4) and, with
// read_own_writes, the own memtable; newest wins per key, and tombstones (DeleteKeys) hide a
// key until a newer row. A read retries (3 attempts) when a concurrent merge moved rows
// between the base and the generations while it read, and never returns a partial or
// duplicated result.
//
// Merges fold a shard's oldest pending generations into the base table (Prepare reads,
// appends keep running; Commit is one base commit + a relative drain of the shard manifest;
// only the owner of a shard merges it). Compaction of the base runs beside merges and
// appends; one compactor at a time per handle (a second one is refused, not queued).
//
// Thread safety: one handle may be shared by any number of threads, and every method but the
// destructor may be called concurrently. Puts and DeleteKeys from many threads share WAL
// appends and syncs (group commit) and enter the memtable in WAL order; full memtables are
// sealed, and merged generations deleted, on background threads. Reads (Scan, GetMany, Count,
// Observe, PendingGenerations) hold no lock while they do I/O and do not wait for puts,
// merges, compactions or a writer being opened (which replays the WAL; with read_own_writes a
// read during the open sees no memtable of it yet); each builds its own view (base version,
// shard manifests, own memtable snapshot). On one handle, merge commits are serialised
// (MaybeMerge, Cleanup and CommitPreparedMerge wait for each other's commits, and MaybeMerge
// and Cleanup for each other; Prepare*Merge waits for nobody); a second Compact fails at once
// (IsCompactionInProgress) and Repair waits for a Compact; a merge and a compaction may run at
// the same time, and a merge whose base commit conflicts with the compaction prepares again (3
// attempts, then Busy). Checkout pins the handle for every later call: reads already running
// finish on the view they built (one that must retry builds its next view at the pinned
// version), later reads see the pinned base version only, and Put, DeleteKeys, OpenWriter,
// MaybeMerge, Cleanup, Compact and Repair fail with InvalidArgument until RefreshLatest (a
// write that passed that check before the pin completes normally); Flush and Close still seal
// what was written. RefreshLatest unpins and moves the handle to the newest base version. A
// write that races with Close may fail with InvalidArgument ("writer closed"); a write after
// Close opens a new writer, claiming the shard again.
//
// Several handles, in one process or many, may share a store. They hold no locks on each
// other: their base commits (merges, compactions) race optimistically as table.h describes,
// and handles with different shard_ids write independently. Handles with the same shard_id
// fence each other: opening a writer claims a new epoch, so the previous owner's next Put
// or DeleteKeys sees Fenced, reopens its writer once (claiming again, which fences the
// other handle in turn) and retries once, returning Fenced if that fails too. A fenced
// writer never acknowledges a write that the new owner's replay did not see. A merge that
// overlaps a change of its shard's owner fails with Fenced; of two merges of the same
// generations, one commits to the base and the other only drains.
//
// Maintenance (docs/maintenance.md): the prepare/commit merge split, ShouldCompact and
// GetCompactionStats, DeleteData; a handle opened with StorageBaseOptions::maintenance is
// swept by that component (include/strata/maintenance.h) until it is closed or dropped.
//
// Errors: InvalidArgument for bad input (nothing written), Fenced when another writer
// claimed this shard (Put reopens the writer and retries once first), Unavailable for
// reads refused past the pending-generation cap (retry after merges catch up), Busy for
// retryable conflicts, NotFound for a missing store with create_if_missing == false and for
// every call on a handle whose store DeleteData removed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/expr.h"
#include "strata/merge_budget.h"
#include "strata/metrics.h"
#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/table.h"
#include "strata/type.h"

namespace strata::store {

class Maintenance;  // strata/maintenance.h

// Schema metadata key of a store's base table: the kind of store that created it.
inline constexpr std::string_view kStoreKindMetadata = "strata:store:kind";
// The kind a StorageBase records when its options name none.
inline constexpr std::string_view kGenericStoreKind = "generic";
// The kind OwningStoreKind reports for a store created before kinds were recorded.
inline constexpr std::string_view kUnrecordedStoreKind = "lsm";

// Base-table metadata key that makes a store a replica (include/strata/replication.h): while
// its value is non-empty, opening a writer (Put, DeleteKeys, OpenWriter) fails with
// InvalidArgument; replication installs rows by committing to the base table directly, and
// promoting the replica removes the key.
inline constexpr std::string_view kReplicaMetadata = "strata:replica:chain";

// Which part of the LSM tree a read covers.
enum class ListSource {
  kAll,        // base table + pending generations (+ own memtable with read_own_writes)
  kWal,        // pending generations (+ own memtable) only
  kFragments,  // base table only: merged rows
};

struct StorageBaseOptions {
  // Schema used to create the store when it does not exist; the key column must be in it,
  // non-nullable, of a primary-key type (table.h).
  SchemaPtr schema;
  std::string key_column;
  // Stable writer identity; "" = "default".
  std::string shard_id;
  // The kind of typed store ("rollout", ...), recorded in the base schema's metadata
  // (kStoreKindMetadata) when the store is created, so that table-level tools know that a
  // store owns the table (OwningStoreKind). Ignored when the store exists.
  std::string store_kind = std::string(kGenericStoreKind);
  // Additive evolution: columns of latest_schema missing from the base table are added
  // (all null) at open and before merges. Null = off.
  SchemaPtr latest_schema;
  // true: Put seals and waits for publication (visible on return).
  bool seal_on_put = false;
  // false: Close (and destruction) release the writer without sealing; rows not yet
  // published stay durable in the WAL, invisible until the shard's next writer replays them
  // (OpenWriter, the next write, Cleanup through a writing handle).
  bool seal_on_close = true;
  // true: this handle's reads include its own unsealed memtable.
  bool read_own_writes = false;

  // Memtable bounds (a full memtable is sealed in the background) and backpressure.
  int64_t max_memtable_rows = 100000;
  int64_t max_memtable_bytes = int64_t{256} << 20;
  int64_t max_unflushed_bytes = int64_t{1} << 30;
  // A WAL segment is ended and the next one started past this size.
  int64_t max_wal_segment_bytes = int64_t{64} << 20;

  // Merge: count trigger (0 = off): after a seal, merge when at least this many
  // generations are pending in the own shard.
  int merge_after_generations = 0;
  int merge_max_generations = 8;               // 0 = no bound
  int64_t merge_max_bytes = int64_t{1} << 30;  // 0 = no bound
  std::shared_ptr<MergeBudget> merge_budget;   // process-wide, optional (merge_budget.h)

  // Concurrent puts share a WAL write and sync (group commit). A group's leader waits up to
  // this long for the writers of the group before it to come back before it writes, so that
  // N writers putting back to back share one sync instead of alternating between two
  // half-full groups; the wait ends as soon as they are back, and a writer alone never
  // waits. 0 = never wait.
  int64_t group_commit_wait_micros = 200;

  // Merged generations' files are deleted this long after their drain, so readers that
  // listed them just before still find them (a read that loses a generation retries).
  // Directories of merged generations left behind by a process that died meanwhile are
  // swept by the shard's next merge.
  double generation_delete_delay_seconds = 5.0;

  // Reads warn at this many pending generations per shard and refuse (Unavailable) past
  // pending_generations_max per shard or in total. 0 disables either.
  int pending_generations_warn = 256;
  int pending_generations_max = 4096;

  // Base table and generation tables.
  table::TableOptions table_options;
  // Body compression of generation data files (table_options.compression applies to the
  // base). Generations live only until a merge folds them into the base, and every seal
  // writes one on the ingest path: lz4 costs about half zstd's CPU there, which keeps seals
  // abreast of the puts, and reads of pending generations decompress faster too.
  ipc::Compression generation_compression = ipc::Compression::kLz4Frame;
  // Seal large memtables (at least 8 MiB, without deletes) by linking the WAL segments that
  // hold their rows into the generation instead of writing every row a second time
  // (docs/format/lsm.md §6.3); such generations are uncompressed. Off: every seal rewrites.
  bool link_wal_segments = true;
  // Recode each linked generation in the background into table_options' compression and
  // batch sizes (docs/format/lsm.md §6.4), on a thread in the idle scheduling class so that
  // puts and reads never wait for it for CPU, and only once no put or delete came in for
  // recode_quiet_seconds (or the generation waited recode_max_delay_seconds) so that its
  // writes do not share the disk with the WAL's during ingest. Pending generations then take
  // less than half the disk (the linked WAL bytes are freed generation_delete_delay_seconds
  // after each recode); docs/benchmarks.md has the measurements. Off: linked generations
  // keep the WAL's bytes until merged.
  bool recode_linked_generations = true;
  double recode_quiet_seconds = 1.0;
  double recode_max_delay_seconds = 60.0;
  // Metrics go here (null = DefaultMetrics()).
  MetricsRegistry* metrics = nullptr;
  // Time source of the writer (seal stamps, manifest times), merges, deletions and
  // compaction bookkeeping (ShouldCompact's hour, CompactionStats' time); must outlive the
  // handle. Null = the system clock.
  Clock* clock = nullptr;

  // The process's maintenance component (strata/maintenance.h), or null for none. Open
  // registers the handle with it; Close, DeleteData and the destructor unregister it (a
  // write after Close registers it again). The component holds no handle alive.
  std::shared_ptr<Maintenance> maintenance;
  // The store's name in maintenance logs; "" = the last component of the prefix.
  std::string display_name;
};

// UTC hours [start_hour, end_hour) during which the compaction policy does not compact.
// start_hour in 0..23, end_hour in 0..24; start_hour > end_hour wraps past midnight
// ({22, 6} is 22:00-06:00); start_hour == end_hour is an empty range.
struct QuietHours {
  int start_hour = 0;
  int end_hour = 0;
};

// When and how the maintenance component compacts a store (reference defaults).
struct CompactionPolicy {
  bool enabled = false;
  // Compact only when the base table has at least this many fragments ...
  int64_t min_fragments = 5;
  // ... and the current UTC hour is in none of these ranges.
  std::vector<QuietHours> quiet_hours;
  // How often the maintenance component checks (0 = never).
  double check_interval_seconds = 300;
  // What a compaction does.
  table::CompactionOptions options;
};

// The compaction bookkeeping of one handle (compactions through other handles are not
// counted; total_fragments is the base table's, whoever compacted it).
struct CompactionStats {
  int64_t total_fragments = 0;
  bool is_compacting = false;  // a Compact of this handle is running now
  // Wall time (µs since the Unix epoch, on the handle's clock) of the last successful
  // Compact of this handle; nullopt when none succeeded yet.
  std::optional<int64_t> last_compaction_micros;
  // Why the last Compact of this handle failed; OK when it succeeded (or none ran yet).
  // A Compact refused because another one was running does not change it.
  Status last_error;
  int64_t total_compactions = 0;  // successful Compacts of this handle
};

struct ScanRequest {
  ListSource source = ListSource::kAll;
  std::vector<std::string> columns;  // empty = all
  std::string filter;                // expression language; empty = all rows
  int64_t offset = 0;
  std::optional<int64_t> limit;
};

enum class FlushOutcome { kSealed, kNoop, kFenced };

// The keys a read's pending rows hold (ReadLayered). Keys are compared encoded: for a utf8 or
// large_utf8 key column the encoding is the key's own bytes.
class PendingKeys {
 public:
  virtual ~PendingKeys() = default;
  virtual bool Contains(std::string_view encoded_key) const = 0;
  virtual size_t size() const = 0;
};

// One consistent read split by source (ReadLayered), for readers that search the base table
// through their own indexes.
struct LayeredRead {
  // Read-only, pinned to the read's base version (null when the store has no base table).
  std::shared_ptr<table::Table> base;
  // The newest live row of every key the pending generations (and, with read_own_writes, the
  // own memtables) hold, in the requested columns.
  std::vector<RecordBatch> pending;
  // Every key those sources hold, tombstones included: a base row with one of these keys is
  // not part of the read.
  std::shared_ptr<const PendingKeys> pending_keys;
};

// What a merge did. A merge fails (an error Result) only when it changed nothing. Once its
// base commit is made the merge returns OK with base_version set, and a failure of a step
// after that commit — the drain of the shard manifest, fenced by a new writer of the shard
// or failed by an I/O error — is in follow_up: the merged rows are committed and read
// exactly once (readers skip generations the base's watermark covers), and the shard's next
// merge (or its next writer's merge) drains those generations without committing again.
struct MergeReport {
  int generations_reclaimed = 0;  // drained from the shard manifest
  int64_t rows_merged = 0;
  uint64_t base_version = 0;  // 0 when no base commit was made
  Status follow_up;           // OK, or why a step after the base commit failed
  // Whether the merge did everything it set out to do.
  bool complete() const { return follow_up.ok(); }
};

struct StoreObservation {
  int64_t base_rows = 0;            // live rows in the base table
  int64_t generation_rows = 0;      // rows in pending generations (may repeat base keys)
  int64_t fragments = 0;            // base fragments
  uint64_t version = 0;             // base version
  int64_t last_updated_micros = 0;  // base version's commit time
  int64_t pending_generations = 0;  // all shards
  int64_t unflushed_rows = 0;       // this handle's memtables
};

// A merge read by Prepare*Merge and not yet committed: the de-duplicated rows of the
// own shard's oldest pending generations (in memory, with their merge-budget reservation,
// released when the handle is committed or dropped). Opaque and move-only; commit it with
// CommitPreparedMerge of the handle that prepared it. It must not outlive that handle's
// merge budget.
class PreparedMerge {
 public:
  PreparedMerge(PreparedMerge&&) noexcept;
  PreparedMerge& operator=(PreparedMerge&&) noexcept;
  ~PreparedMerge();
  // Generations the merge folds in, and the newest-per-key rows they hold.
  int generations() const;
  int64_t rows() const;

  struct State;

 private:
  friend class StorageBase;
  explicit PreparedMerge(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class StorageBase {
 public:
  // Opens the store at `prefix` ("" or ending in '/'); creates it from options.schema when
  // missing and `create_if_missing`. Validates the key column against the stored schema.
  static Result<std::unique_ptr<StorageBase>> Open(std::shared_ptr<ObjectStore> store,
                                                   std::string prefix, StorageBaseOptions options,
                                                   bool create_if_missing = true);
  // Closes (as Close); errors are logged, not lost silently.
  ~StorageBase();
  StorageBase(const StorageBase&) = delete;
  StorageBase& operator=(const StorageBase&) = delete;

  // --- Writes ----------------------------------------------------------------------
  // Durable on return. Batches are aligned to the store schema (missing nullable columns
  // become null; a missing required column or a type mismatch is InvalidArgument naming
  // the column). On Fenced the resident writer is reopened once (one reopen for any number
  // of concurrent puts that saw the same fence) and the put retried once.
  Status Put(const std::vector<RecordBatch>& batches);
  // Tombstones: the keys read as absent until a newer Put.
  Status DeleteKeys(const std::vector<expr::Scalar>& keys);
  // Claims this handle's shard now instead of at the first write: opens the resident
  // writer, which replays the shard's WAL and publishes what it replayed (rows a crashed
  // writer acknowledged become visible). A no-op when the writer is open.
  Status OpenWriter();
  // Additive schema evolution of a live store: adds those of `fields` the base table lacks
  // as all-null columns (each must be nullable; a column already there must have the same
  // type), in one base commit. Then this handle's writer, opened with the old schema, is
  // closed (sealing as Close does), so the next write opens one with the new schema. Returns
  // whether a column was added (false when all were there, e.g. added by another handle; the
  // handle still moves to the new schema). Rows written before read the new columns as null.
  // Other open handles keep the schema they opened with (their writes leave the new columns
  // null) until reopened. InvalidArgument on a pinned handle or a replica, and for a
  // non-nullable column or a type mismatch; a write of this handle racing with it may fail
  // with InvalidArgument ("writer closed"), as one racing with Close.
  Result<bool> AddColumns(const std::vector<FieldPtr>& fields);
  // Seal + wait for publication.
  Result<FlushOutcome> Flush();
  // Seals (unless seal_on_close is false) and releases the writer. Idempotent; a later Put
  // opens a new writer.
  Status Close();

  // --- Reads -----------------------------------------------------------------------
  Result<std::vector<RecordBatch>> Scan(const ScanRequest& request) const;
  // Scan without holding the result: its batches (the same rows in the same order) go to
  // `consume` one at a time as they are read. When the read must run again on a fresh view
  // (a merge committed while it read; see the top of this file), `restart` is called and
  // every batch is delivered again from the first, so a consumer that keeps state resets it
  // there. An error from either callback stops the scan and is returned. Returns the base
  // version the delivered rows were read at.
  Result<uint64_t> ScanEach(const ScanRequest& request,
                            const std::function<Status(RecordBatch)>& consume,
                            const std::function<Status()>& restart) const;
  // Newest live rows for `keys` (<= 1,024), in the order given, missing keys skipped.
  Result<RecordBatch> GetMany(const std::vector<expr::Scalar>& keys,
                              const std::vector<std::string>& columns = {},
                              ListSource source = ListSource::kAll) const;
  // The read split into its base version and its pending rows (`columns`; empty = all), from
  // one consistent view: base rows are those of `base` whose key is not in pending_keys.
  Result<LayeredRead> ReadLayered(const std::vector<std::string>& columns = {}) const;
  // Live keys (logical rows), optionally filtered.
  Result<int64_t> Count(ListSource source = ListSource::kAll, std::string_view filter = {}) const;
  // Counts of the base version and every shard's latest manifest. Reads each shard manifest
  // chain's head as reads do, so a damaged one fails with the same Corruption naming it.
  Result<StoreObservation> Observe() const;
  Result<int64_t> PendingGenerations() const;

  // --- Merge, compaction -------------------------------------------------------------
  // Count trigger: merge the own shard when merge_after_generations (> 0) are pending.
  // A merge reads only the own shard's manifest and the base table: another shard's damage
  // does not fail it. See MergeReport for a merge that committed and then failed a step.
  Result<MergeReport> MaybeMerge();
  // Time trigger: seal first, then merge whatever is pending in the own shard (one pass).
  Result<MergeReport> Cleanup();
  // MaybeMerge and Cleanup are PrepareCountMerge / PrepareCleanupMerge followed by
  // CommitPreparedMerge, one MaybeMerge or Cleanup of a handle at a time (and a prepare again
  // when the commit loses a race with a compaction). With a shared merge_budget, a thread
  // holding a PreparedMerge must commit or drop it before it prepares again (MergeBudget). A caller
  // that wants appends to keep running while a merge reads (a server: prepare under a shared lock,
  // commit under an exclusive one) calls the two steps itself:
  //
  // Prepare reads and de-duplicates the own shard's oldest pending generations (bounded
  // by merge_max_generations / merge_max_bytes, with a merge_budget reservation) and writes
  // nothing; nullopt when there is nothing to merge: fewer than merge_after_generations
  // pending (count variant; always nullopt when merge_after_generations is 0) or none
  // (cleanup variant, which seals the own memtable first). Prepares do not wait for each
  // other, nor for commits; several may read the same generations.
  Result<std::optional<PreparedMerge>> PrepareCountMerge();
  Result<std::optional<PreparedMerge>> PrepareCleanupMerge();
  // Commits a prepared merge (serialised with the handle's other merges). A stale prepare —
  // another merge already drained all of its generations — commits nothing and reports 0
  // generations (base_version 0); generations sealed after the prepare stay pending.
  // InvalidArgument for a merge another handle prepared; Busy, committing nothing, when
  // another merge committed some but not all of its generations since the prepare (or its
  // base commit lost a race): prepare again. One attempt (MaybeMerge and Cleanup prepare
  // again themselves, 3 attempts). Otherwise as MaybeMerge.
  Result<MergeReport> CommitPreparedMerge(PreparedMerge prepared);
  // Metadata only: whether MaybeMerge would merge now.
  Result<bool> CountMergeDue() const;
  // After a write: MaybeMerge when the count trigger is due, unless a MergeIfDue of this
  // handle is running already — then it returns at once, so concurrent writers never queue
  // behind a merge of the same generations. Returns whether it merged. Stores that seal
  // on every write (a context store, a Python handle's flush) call it to keep their pending
  // generations, and the cost of every read, bounded without a maintenance component.
  Result<bool> MergeIfDue();
  // Compacts the base table. One compaction per handle at a time: a Compact while another
  // runs on the same handle fails at once with Busy (IsCompactionInProgress) instead of
  // waiting. Success and failure are recorded for CompactionStats.
  Result<table::CompactionResult> Compact(const table::CompactionOptions& options = {});
  // Whether the compaction policy would compact now: the base table has at least
  // `min_fragments` fragments and the current UTC hour (the handle's clock) is in none of
  // `quiet_hours`. False for a pinned handle. InvalidArgument for an hour out of range.
  Result<bool> ShouldCompact(int64_t min_fragments,
                             const std::vector<QuietHours>& quiet_hours = {}) const;
  Result<bool> ShouldCompact(const CompactionPolicy& policy) const;
  Result<CompactionStats> GetCompactionStats() const;
  // Drops base fragments whose files are missing (table::Table::Repair); commits nothing
  // when nothing is missing.
  Result<table::RepairReport> Repair();
  // Called on the calling thread, with no lock held, after each merge commit (MaybeMerge,
  // Cleanup, CommitPreparedMerge) and compaction of this handle that changed the base table
  // (the context store builds its vector index there). Replaces any earlier listener; an
  // empty function removes it.
  void SetBaseChangeListener(std::function<void()> listener);
  // Blocks until the files of generations this handle's merges drained are deleted (each
  // waits generation_delete_delay_seconds first). Merges already running are not waited for.
  void WaitForPendingDeletions() const;
  // Blocks until this handle's writer has recoded every linked generation it published so
  // far (recode_linked_generations), or gave up on one (logged) — after the writes pause for
  // recode_quiet_seconds, as the recodes wait for that. Returns at once when no writer is
  // open. The old directories are then waiting for deletion (WaitForPendingDeletions).
  void WaitForRecodes() const;

  // --- Deletion ------------------------------------------------------------------------
  // Deletes the whole store: every object under the prefix (base table, shard manifests,
  // WAL segments, generations). The own writer is released without sealing, merges and
  // compactions of this handle are waited for, the handle leaves its maintenance
  // component. Afterwards the handle is "deleted": every call but Close, the accessors and
  // the destructor fails with NotFound "store at '<prefix>' was deleted". Other handles of
  // the store find no base table on their next read and fail with NotFound; they must not
  // write (a write of another handle may recreate WAL objects under the prefix). Calls of
  // this handle racing with DeleteData may fail or succeed; none started after it returns
  // succeeds. Errors: the object store's (the handle is deleted even then; call again to
  // remove what is left).
  Status DeleteData();
  bool deleted() const;

  // --- Versions ------------------------------------------------------------------------
  uint64_t version() const;
  // Pins reads to base version `version` (no generations, no memtable); writes refused.
  Status Checkout(uint64_t version);
  // Unpins and moves to the newest base version.
  Status RefreshLatest();
  bool pinned() const;

  // --- Snapshots and branches (docs/format/lsm.md §11) ---------------------------------
  // Names follow table::Table's rules for tag labels and branch names.
  //
  // Tags what a reader of the store sees now as `label`: this handle's unsealed rows are
  // sealed first, then every pending generation (of every shard) is folded into the base in
  // one commit (lsm::CommitPendingFold), and the base version holding it all is tagged. A
  // pinned handle tags the version it reads. The snapshot stays readable (CheckoutSnapshot)
  // until DeleteSnapshot, whatever merges, compactions and cleanups run meanwhile.
  // AlreadyExists for a label in use.
  Result<table::TagInfo> CreateSnapshot(std::string_view label);
  Result<std::vector<table::TagInfo>> ListSnapshots() const;
  Status DeleteSnapshot(std::string_view label);
  // Pins reads to the snapshot, as Checkout pins a version.
  Status CheckoutSnapshot(std::string_view label);
  // Creates branch `name`: a store of its own at BranchPrefix(prefix, name) holding exactly
  // what a reader of this store sees now (pending generations folded in, as for a snapshot;
  // a pinned handle forks its version), sharing this store's files. Open it with Open(...,
  // BranchPrefix(...), ...); writes to either store never show in the other. The branch
  // starts without this store's merge watermarks and replication markers (it is a new,
  // writable store). Returns the branch's prefix.
  Result<std::string> Fork(std::string_view name);
  Result<std::vector<table::BranchInfo>> ListBranches() const;
  // Deletes the branch's store (every object under its prefix) and the files of this store
  // only it used. Handles open on the branch fail afterwards.
  Status DeleteBranch(std::string_view name);
  static std::string BranchPrefix(std::string_view prefix, std::string_view name);

  SchemaPtr schema() const;
  const std::string& key_column() const;
  std::string shard_id() const;  // the shard UUID, canonical text
  const std::string& prefix() const;
  const std::shared_ptr<ObjectStore>& object_store() const;
  // The base table, for layers that keep secondary indexes of it (table.h "Secondary
  // indexes"). Never append or delete rows through it: the store keeps one live row per key.
  const std::shared_ptr<table::Table>& base_table() const;

  struct Impl;

 private:
  explicit StorageBase(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Checks the store at `prefix` end to end without opening a writer or changing anything:
// the base table (table::Table::Verify with `options`) and its merge watermarks, then every
// shard's manifest chain (each retained version decodes, versions are consecutive, the
// latest-version hint is not ahead of the newest version), WAL segments (records read end
// to end with their checksums; no segment that replay needs is missing; positions the
// manifest records lie within their segments) and pending generations (each generation
// table verifies, its bloom filter decodes). docs/format/lsm.md §10. Problems go into the
// report, one line each in table::Table::Verify's format ("shard <uuid>: <key>: <what>"
// for the LSM side); errors that stop the check (no table at `prefix`, a base table that
// cannot be opened, a failing listing) are returned.
Result<table::VerifyReport> VerifyStore(std::shared_ptr<ObjectStore> store, std::string prefix,
                                        const table::VerifyOptions& options = {});

// --- Ownership of the base table ----------------------------------------------------------
// A store's base table is an ordinary table (table.h), so table-level tools can open it. The
// store keeps invariants the table does not know about (one live base row per key, rows
// pending in its shards, a schema its kind understands, files written before they are
// committed), so a change made to the base table directly must follow the store's rules.

// Which store owns the table at `prefix` of `store`, whose latest schema is `base_schema`:
// the kind recorded at create (kStoreKindMetadata), kUnrecordedStoreKind for a store made
// before kinds were recorded (it has objects under "<prefix>_lsm/"), nullopt for a table
// that no store owns. Errors: the listing's.
Result<std::optional<std::string>> OwningStoreKind(ObjectStore& store, std::string_view prefix,
                                                   const Schema& base_schema);

// A change made directly to a base table, bypassing its store.
enum class BaseTableChange {
  kAppend,                   // append rows
  kAddColumns,               // add columns
  kDeleteRows,               // delete rows by key or predicate
  kCompact,                  // compact fragments as StorageBase::Compact does
  kCompactKeepingDeletions,  // compact without rewriting rows deleted from fragments
  kRepair,                   // drop fragments whose files are missing (StorageBase::Repair)
  kRemoveOldVersions,        // remove old versions and the files only they use
  kDeleteUnreferencedFiles,  // delete data files that no version references
  kRollBackCorruptVersions,  // commit the newest intact version over corrupt newer ones
};

// OK when a store of kind `store_kind` stays consistent after `change` is made to its base
// table directly; otherwise InvalidArgument whose message is the reason alone (the caller
// names the store and the command to use instead). Compaction, repair, removing old versions
// and rolling back corrupt newest versions (the only way to open it again; rows its merges
// committed in the dropped versions are lost with them, and the caller must say so) are
// allowed; appends, added columns, deleted rows, a compaction that keeps deleted rows and
// deleting unreferenced files (a running merge's files are unreferenced until it commits)
// are refused. The rules are the same
// for every kind today; a kind with other rules decides here.
Status CheckBaseTableChange(std::string_view store_kind, BaseTableChange change);

// The text every refused read's message starts with (servers map it to 503).
inline constexpr std::string_view kPendingGenerationsExceeded = "too many pending generations";

// The text of the Busy error a Compact returns while another Compact of the same handle runs.
inline constexpr std::string_view kCompactionInProgress = "compaction already in progress";
// True for exactly that error (a server maps it to 409 COMPACTION_IN_PROGRESS). Busy is
// retryable, as the condition is; the predicate tells it apart from the other Busy errors
// (lost commit races) without the caller matching text.
bool IsCompactionInProgress(const Status& status);

}  // namespace strata::store
