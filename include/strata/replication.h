// Incremental replication of a store (docs/replication.md): mark a base on a source store,
// export the net change since a chain state as verified bundles (include/strata/bundle.h),
// apply them in order to a replica, prove a replica's content, trim what the source keeps.
//
// Change tracking costs writers nothing: the source keeps, per chain state it may still be
// asked to export from, one index object of (key, row hash) pairs under
// "<prefix>_replication/". An export reads one consistent view of the store (base table and
// pending generations, as any reader sees it), hashes every row and compares with the
// index of the state it starts from: new or changed rows go into bundles, keys that are gone
// become deletions, and the scan's pairs become the new state's index. Compaction, merges and
// cleanup move rows without changing them, so they add nothing to a bundle; what the source
// keeps is bounded by the table size times the number of kept states, never by history.
//
// Chain states are numbered by the source (cursor 1, 2, ... in export order; the base is
// cursor 0) and identified by a hash over the previous state and the bundle's digest, so a
// replica accepts exactly the bundles that continue its own state. Several replicas may
// follow one source, each exporting from its own state.
//
// A replica is an ordinary store of the same kind whose base-table metadata holds its chain
// state; its writers are refused (storage_base.h kReplicaMetadata) until it is promoted.
// ApplyChanges installs one bundle as one base-table commit guarded by that state.
//
// Thread safety: free functions; calls on one source or replica may run concurrently (an
// export takes no lock; concurrent applies to one replica: one wins, the others are refused
// as Busy or Cursor).
//
// Errors: every refusal is an error whose message starts with "refused (<Kind>): " and whose
// kind RefusalOf returns; nothing was installed or published then. Other errors: the
// object store's, InvalidArgument for bad options.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/bundle.h"
#include "strata/metrics.h"
#include "strata/object_store.h"
#include "strata/status.h"

namespace strata {
class Clock;
class RandomSource;
}  // namespace strata

namespace strata::replication {

enum class Refusal {
  kCursor,     // out of order or replayed: the bundle does not start at the replica's cursor
  kDiverged,   // another chain, a re-marked base, or the replica was changed outside apply
  kDigest,     // the bundle's bytes were altered or damaged
  kSchema,     // the bundle's schema hash differs from the replica's
  kTooOld,     // the cursor is below the source's trim floor: re-seed from a full export
  kExists,     // a bundle of that name is already published
  kBusy,       // another apply advanced the replica while this one ran
  kNotMarked,  // the source has no replication chain (mark a base first)
};
std::string_view RefusalName(Refusal refusal);
// The refusal `status` reports, if it is one.
std::optional<Refusal> RefusalOf(const Status& status);

// Where a store lives.
struct StoreLocation {
  std::shared_ptr<ObjectStore> store;
  std::string prefix;  // "" or ending in '/'
};

// The objects a source keeps for replication (trimmed by Trim, removed by Unmark).
inline constexpr std::string_view kReplicationDirectory = "_replication/";

// --- Source ------------------------------------------------------------------------------

struct MarkOptions {
  // A store that is already marked: false refuses (AlreadyExists); true starts a new chain,
  // whose states no replica of the old chain accepts (they are re-seeded with a full export).
  bool replace = false;
  Clock* clock = nullptr;          // null = the system clock
  RandomSource* random = nullptr;  // draws the chain id; null = SystemRandom()
};

struct MarkReport {
  std::string chain_id;  // drawn at mark time; a re-mark draws another
  std::string token;
  std::string store_kind;
  Hash256 schema_hash{};
  ChainState base;  // cursor 0: the store's content now
  uint64_t source_version = 0;
  double seconds = 0;
};

// Fixes the base state S0 of a new chain on the store at `source`: its content checksum and
// index are the store's logical rows now. Takes no lock; writers keep running (rows they
// commit after the read go into the first export).
Result<MarkReport> MarkBase(const StoreLocation& source, std::string_view token,
                            const MarkOptions& options = {});

struct ExportOptions {
  // The chain state to export from: a cursor the source still keeps (Status lists them);
  // nullopt = the newest. Refusals: Cursor for a cursor the source never made, TooOld for
  // one below the trim floor.
  std::optional<uint64_t> since;
  // Export every row, from the chain's empty state: seeds a new (empty) replica, or
  // re-seeds one refused as TooOld or Diverged.
  bool full = false;
  // Registers (or updates) this consumer in the source's registry with `since` as its
  // acknowledged cursor: Trim keeps what it still needs. "" = none.
  std::string consumer;
  // A change larger than either bound is split into a chain of bundles; at most one
  // bundle's rows are held in memory.
  int64_t max_rows = 100000;
  int64_t max_bytes = int64_t{64} << 20;
  // Non-empty: bundles are keyed (HMAC-SHA-256) with this shared secret.
  std::string hmac_secret;
  // Where parts are staged until the scan is complete (local directory; "" = the system's
  // temporary directory). Staging left by a killed export is removed by the next one.
  std::string staging_dir;
  Clock* clock = nullptr;
  // Called after each bundle is published.
  std::function<void(int part, int parts)> progress;
};

struct PublishedBundle {
  std::string key;  // its key in the destination
  BundleHeader header;
  Hash256 digest{};
  int64_t bytes = 0;
};

struct ExportReport {
  std::string chain_id;
  ChainState from;
  ChainState to;  // == from when nothing changed (then nothing is published)
  std::vector<PublishedBundle> bundles;
  int64_t rows = 0;       // rows exported
  int64_t deletions = 0;  // keys exported as deleted
  int64_t bytes = 0;      // bundle bytes published
  int64_t rows_scanned = 0;
  uint64_t source_version = 0;  // the base version the export read
  double scan_seconds = 0;
  double publish_seconds = 0;
  double seconds = 0;
};

// Exports the net change between state `since` and a consistent read of the store now to
// `destination` under `destination_prefix`: bundles named by BundleKey, each created with
// PutIfAbsent (a local object store writes a temporary file, syncs it and links it into
// place, never overwriting). A refusal as Exists leaves the existing object untouched. Parts
// are published last part first, so a replica never sees the start of an export whose end is
// missing. Takes no lock and blocks no writer.
Result<ExportReport> ExportChanges(const StoreLocation& source, ObjectStore& destination,
                                   std::string_view destination_prefix,
                                   const ExportOptions& options = {});

// The name of a bundle: "<from cursor>.<from part>-<to cursor>.<to part>.bundle" with
// cursors as 20 digits, prefixed "full-" for a bundle from the empty state.
std::string BundleKey(const BundleHeader& header, bool full);

struct Consumer {
  std::string id;
  uint64_t cursor = 0;
  int64_t last_seen_micros = 0;
};

struct SourceStatus {
  bool marked = false;
  std::string chain_id;
  std::string token;
  std::string store_kind;
  Hash256 schema_hash{};
  ChainState base;
  std::vector<ChainState> states;  // kept states, by cursor (the base first when kept)
  uint64_t trim_floor = 0;         // exports from below it are refused (TooOld)
  int64_t kept_bytes = 0;          // bytes of every kept index object
  std::vector<Consumer> consumers;
};

Result<SourceStatus> GetSourceStatus(const StoreLocation& source);

struct TrimReport {
  uint64_t floor = 0;
  std::vector<uint64_t> removed;  // cursors whose index was removed
  int64_t bytes_removed = 0;
};

// Keeps exactly the states the slowest registered consumer still needs: every kept state
// with a cursor below the smallest acknowledged cursor is removed (a strict floor: the
// consumer's own state stays). Without consumers, everything but the newest state goes.
Result<TrimReport> Trim(const StoreLocation& source);

// Removes the chain: the registry and every index. Replicas keep their rows and state, and
// refuse bundles of a later chain (Diverged).
Status Unmark(const StoreLocation& source);

// --- Replica -----------------------------------------------------------------------------

struct ApplyOptions {
  // The shared secret of keyed bundles (then unkeyed ones are refused).
  std::string hmac_secret;
  // A replica that does not exist is created from the bundle (its schema and kind) when the
  // bundle starts at the chain's empty state.
  bool create_if_missing = true;
  Clock* clock = nullptr;
};

struct ApplyReport {
  ChainState from;
  ChainState to;
  int64_t rows = 0;
  int64_t deletions = 0;
  int64_t bytes = 0;
  uint64_t replica_version = 0;  // the base version the apply committed
  double seconds = 0;
};

// Installs one bundle (its bytes) on the replica at `replica`, as one base-table commit:
// every row of the bundle replaces its key's row, every deletion removes its key, and the
// replica's chain state moves to the bundle's to-state. Before anything is installed it
// checks, and refuses with: Digest (the digest does not verify), Schema (the schema hash
// differs from the replica's), Cursor (the bundle does not start at the replica's cursor:
// out of order or replayed), TooOld (the replica's cursor is below the trim floor the
// bundle carries), Diverged (another chain or base, the replica holds rows written outside
// apply, or its content does not lead to the bundle's to-state content), Busy (another apply
// committed first). Readers of the replica see the old or the new state, never a mix; a
// process killed at any point leaves the replica at one of them.
Result<ApplyReport> ApplyChanges(const StoreLocation& replica, std::string_view bundle,
                                 const ApplyOptions& options = {});

struct ApplyPublishedReport {
  std::vector<ApplyReport> applied;  // in chain order
  int64_t rows = 0;
  int64_t deletions = 0;
  int64_t bytes = 0;
  std::optional<ChainState> state;  // the replica's state afterwards (nullopt: no replica)
};

// Applies, one after the other, the bundles under `prefix` of `bundles` that continue the
// replica's state (the newest full export when the replica does not exist yet or is empty
// without a state), until none does: catching up through a directory of published bundles.
// Stops at the first refusal or error, which is returned (bundles applied before it stay
// applied: each is a commit of its own).
Result<ApplyPublishedReport> ApplyPublished(const StoreLocation& replica, ObjectStore& bundles,
                                            std::string_view prefix,
                                            const ApplyOptions& options = {});

struct FollowOptions {
  // The source's registry knows the replica by this id ("" = "follower").
  std::string consumer = "follower";
  // Trim the source after each round (its other consumers keep what they need).
  bool trim = true;
  ExportOptions export_options;  // since, full and consumer are set by the round
  ApplyOptions apply_options;
  MetricsRegistry* metrics = nullptr;  // null = DefaultMetrics()
};

struct FollowReport {
  ExportReport exported;  // empty (to == from) when nothing changed
  ApplyPublishedReport applied;
  // How far behind the replica was, and is: rows + deletions this round carried, and the
  // time from the export's read of the source to the end of the apply.
  int64_t rows_behind = 0;
  double lag_seconds = 0;
  double seconds = 0;
};

// One round of continuous replication: export from the replica's state (a full export when
// the replica does not exist yet), publish, apply what was published, acknowledge. Safe to
// kill at any point and run again: the replica is always at a bundle boundary and the next
// round continues from it. Sets the gauges strata_replication_lag_seconds and
// strata_replication_lag_rows (label replica=<consumer>).
Result<FollowReport> FollowOnce(const StoreLocation& source, const StoreLocation& replica,
                                ObjectStore& bundles, std::string_view prefix,
                                const FollowOptions& options = {});

struct ReplicaStatus {
  bool replica = false;  // false: no chain state (a plain store, or promoted)
  std::string chain_id;
  std::string token;
  std::string store_kind;
  ChainState state;
  uint64_t version = 0;  // base version
  int64_t applied_at_micros = 0;
};

Result<ReplicaStatus> GetReplicaStatus(const StoreLocation& replica);

// Makes a replica a normal writable store: removes its chain state (it no longer accepts
// bundles).
Status Promote(const StoreLocation& replica);

struct VerifyResult {
  ContentChecksum computed;  // over the store's logical rows now
  // The checksum the store's chain state records (a replica's state, or a source's newest
  // kept state); nullopt when it records none.
  std::optional<ContentChecksum> recorded;
  std::optional<ChainState> state;
  bool matches() const { return recorded && *recorded == computed; }
  uint64_t version = 0;
  int64_t rows = 0;
  double seconds = 0;
};

// Recomputes the content checksum of the store at `location` from a consistent read and
// compares it with the one its chain state records. On a source, the newest state's
// checksum equals the store's only while nothing was written since that export.
Result<VerifyResult> Verify(const StoreLocation& location);

}  // namespace strata::replication
