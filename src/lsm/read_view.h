// Consistent read views of an LSM tree: which sources one read sees (the base version, each
// shard's pending generations above the base's merge watermarks, the writer's own memtables)
// and the re-check that makes a read's result consistent while merges commit beside it.
//
// Generations of all shards are ordered newest first by their order stamp
// (pb::Generation.sealed_at_micros, a hybrid logical clock: docs/format/lsm.md §8), then
// generation number, then shard id.
//
// Consistency: a view pins a base version (its own read-only handle) and then reads the
// shard manifests. A merge that commits between the two drops generations from a manifest
// that the pinned version does not hold yet, so once the manifests are read the view is
// checked: it is consistent when the newest base version records the same watermarks as
// the view's; otherwise it is built again (kReadAttempts in all), and then the read fails
// with Busy. A consistent view is a snapshot: a merge that commits while it is read moves
// rows from a generation the view holds as pending into a base version the view does not
// read (the rows show once, from the generation), and can only make the read fail with
// NotFound when the generation's files are deleted (generation_delete_delay later) — then
// the read runs again on a fresh view (as when a sweep of generations another handle
// drained, or a cleanup of old base versions, removes files sooner). So a long read (an
// export, a full scan) finishes while merges keep committing, and a result from an
// inconsistent view is never returned.
//
// A merge drains a generation from its shard's manifest only after committing a base version
// whose watermarks cover it, and generation numbers are consecutive within a shard. So a view
// whose manifests (read after its base version was pinned) still list every generation from
// its watermark up to the shard's current one lost nothing to a merge: it is consistent
// without the re-check of the base chain (ReadView::covers_pending). Only a view that raced a
// drain pays for the re-check.
//
// Cost: a source keeps the newest base version and each shard's newest manifest it has read
// (decoded, with the base's watermarks), and a view re-checks them (io::IsLatestVersion: the
// next version is missing, the hint names none later, the cached one is still there) instead
// of reading and decoding them again; only what changed is read. The re-check answers as the
// latest-version discovery does, so a view misses no committed merge and no published
// generation that a fresh discovery would find; the shard registry is listed on every view.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lsm/generation.h"
#include "lsm/layout.h"
#include "lsm/lsm_read.h"
#include "lsm/memtable.h"
#include "strata/metrics.h"
#include "strata/object_store.h"
#include "strata/status.h"
#include "strata/table.h"
#include "util/mutex.h"

namespace strata::lsm {

// Which part of the tree a read covers.
enum class ReadScope {
  kAll,      // base + pending generations + own memtables
  kPending,  // pending generations + own memtables
  kBase,     // base table only
};

// The cap on pending generations a read accepts, and where to report it.
struct PendingGenerationLimits {
  // Warn at this many pending generations of one shard; refuse (Unavailable, starting with
  // kPendingGenerationsExceeded) past `max` in one shard or in total. 0 disables either.
  int warn = 256;
  int max = 4096;
  std::string store_label;                 // names the store in the warning
  Histogram* pending_per_shard = nullptr;  // observes each shard's count on each read
  Counter* reads_refused = nullptr;        // counts refusals
};

// Shared prefix of the Unavailable message of a read refused past the cap.
inline constexpr std::string_view kPendingGenerationsExceededPrefix =
    "too many pending generations";

// One read's sources and what is needed to re-check them.
struct ReadView {
  LsmView view;
  uint64_t base_version = 0;
  Watermarks watermarks;
  bool pinned = false;  // the caller's Checkout of a version: no generations, no memtables
  // Every shard manifest the view read (after pinning its base version) still lists every
  // generation above the view's watermarks: no merge drained one that the view's base
  // version lacks, so the view holds every row and needs no re-check of the base chain.
  bool covers_pending = false;
};

// Totals over every shard's latest manifest.
struct PendingSummary {
  int64_t generations = 0;  // listed in the shard manifests (merged-but-not-drained included)
  int64_t rows = 0;         // live rows (rows - tombstones) of generations above the watermarks
};

// Builds views of the store at `prefix` whose base table is `base`. Thread safe (the base
// table and the generation cache are).
class ReadViewSource {
 public:
  // The writer's own memtables, newest first; called once per view, before any shard
  // manifest is read, so a memtable published meanwhile is seen twice (harmless: newest
  // wins) rather than not at all.
  using MemTableSource = std::function<std::vector<std::shared_ptr<const MemTableSnapshot>>()>;

  static constexpr int kReadAttempts = 3;

  ReadViewSource(std::shared_ptr<ObjectStore> store, std::string prefix,
                 std::shared_ptr<table::Table> base, int key_column, GenerationCache* generations,
                 PendingGenerationLimits limits);

  // The sources a read of `scope` sees now. With `pinned` (a checked-out version), only it.
  // `memtables` may be empty (the view then has none).
  Result<ReadView> Build(ReadScope scope, const std::shared_ptr<table::Table>& pinned,
                         const MemTableSource& memtables) const;

  // True when the view holds every row: its manifests cover every generation above its
  // watermarks (ReadView::covers_pending), or no merge committed since its base version
  // (compactions and other commits do not matter to a view).
  Result<bool> StillConsistent(const ReadView& view) const;

  // Builds views until one is consistent, then runs `read` on it; a read that fails with
  // NotFound (files deleted under it) runs again on a fresh view (see the top of this file).
  template <typename T>
  Result<T> Read(ReadScope scope, const std::shared_ptr<table::Table>& pinned,
                 const MemTableSource& memtables,
                 const std::function<Result<T>(const LsmView&)>& read) const {
    Status last;
    for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
      Result<ReadView> view = Build(scope, pinned, memtables);
      if (!view.ok()) {
        if (view.status().IsNotFound() && attempt + 1 < kReadAttempts) {
          last = view.status();
          continue;
        }
        return view.status();
      }
      if (scope != ReadScope::kBase) {
        Result<bool> consistent = StillConsistent(*view);
        if (!consistent.ok()) return consistent.status();
        if (!*consistent) {
          last = Status::OK();  // a merge, not a missing file: Busy if the attempts run out
          continue;
        }
      }
      Result<T> result = read(view->view);
      if (!result.ok()) {
        if (result.status().IsNotFound() && !view->pinned && attempt + 1 < kReadAttempts) {
          last = result.status();
          continue;
        }
        return result.status();
      }
      return result;
    }
    return RetriesExhausted(last);
  }

  // Pending generations and rows over every shard's latest manifest; generations above
  // `watermarks` count towards `rows`.
  Result<PendingSummary> SummarizePending(const Watermarks& watermarks) const;

 private:
  Status RetriesExhausted(const Status& last) const;
  // The newest base version and its watermarks: the cached ones when still the newest.
  Status LatestBase(std::shared_ptr<table::Table>* base, Watermarks* watermarks) const;
  // The latest manifest of `shard` (null for a registered shard without one yet): the
  // cached one when still the newest.
  Result<std::shared_ptr<const pb::ShardManifest>> LatestShardManifest(const Uuid& shard) const;

  struct Cache {
    std::shared_ptr<table::Table> base;  // pinned at the newest version read
    Watermarks watermarks;               // base's
    std::map<Uuid, std::shared_ptr<const pb::ShardManifest>> manifests;
  };
  mutable Mutex cache_mutex_;
  mutable Cache cache_ STRATA_GUARDED_BY(cache_mutex_);

  const std::shared_ptr<ObjectStore> store_;
  const std::string prefix_;
  const std::shared_ptr<table::Table> base_;
  const int key_column_;
  GenerationCache* const generations_;
  const PendingGenerationLimits limits_;
};

// Orders `generations` newest first: by order stamp, then generation number, then shard.
void SortNewestFirst(std::vector<std::shared_ptr<Generation>>& generations);

}  // namespace strata::lsm
