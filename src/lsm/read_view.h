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
// (decoded, with the base's watermarks), and the shard registry's listing, and a view re-checks
// them instead of reading and decoding them again; only what changed is read. Where the store
// can watch a directory (ObjectStore::Watch: a local file system), the re-check is a poll of
// the directory's change watch: the cached answer stands while nothing under the base's
// version chain, the registry or the shard's manifest chain changed since a request confirmed
// it. Elsewhere it is io::IsLatestVersion (the next version is missing, the hint names none
// later, the cached one is still there) and a listing of the registry. Both answer as the
// latest-version discovery does, so a view misses no committed merge and no published
// generation that a fresh discovery would find.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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
  // The registered shards: the cached listing while the registry's watch vouches for it.
  Result<std::shared_ptr<const std::vector<Uuid>>> Shards() const;

  // A cached answer about one directory of the store, and the change watch that vouches for
  // it: the answer stands while a poll of `watch` returns `count`, the watch's count before a
  // request last confirmed the answer (ChangeWatch::Poll).
  template <typename T>
  struct Watched {
    T answer{};                          // null or empty: none yet
    std::shared_ptr<ChangeWatch> watch;  // null: none yet, or the last one ended
    std::optional<uint64_t> count;
    bool unsupported = false;  // the store cannot watch here: re-check by requests only
  };
  // A watch and the count one poll of it returned.
  struct Polled {
    std::shared_ptr<ChangeWatch> watch;
    uint64_t count = 0;
  };
  using MakeWatch = std::function<Result<std::unique_ptr<ChangeWatch>>()>;

  // Polls `slot`'s watch, making it with `make` first when there is none; nullopt when there
  // is no watch (the caller re-checks by requests).
  template <typename T>
  std::optional<Polled> Poll(Watched<T>& slot, const MakeWatch& make) const
      STRATA_EXCLUDES(cache_mutex_);
  // Poll of cache_.base's watch (the base table's chain).
  std::optional<Polled> PollBase() const STRATA_EXCLUDES(cache_mutex_);
  // Whether `slot` (a part of cache_) holds an answer its watch vouches for at `polled`.
  template <typename T>
  bool Vouched(const Watched<T>& slot, const std::optional<Polled>& polled) const
      STRATA_REQUIRES(cache_mutex_);
  // Stores `answer` in `slot` (a part of cache_), confirmed by a request made after `polled`,
  // unless `slot` holds one at least as new (`newer(answer, slot.answer)` false) or one
  // confirmed after a later poll of the same watch; a confirmation of an answer as new as
  // the one `slot` holds raises its count.
  template <typename T, typename Newer>
  void Store(Watched<T>& slot, T answer, const std::optional<Polled>& polled, Newer newer) const
      STRATA_REQUIRES(cache_mutex_);

  struct Cache {
    // Pinned at the newest version read, with its watermarks.
    Watched<std::shared_ptr<table::Table>> base;
    Watermarks watermarks;
    Watched<std::shared_ptr<const std::vector<Uuid>>> shards;  // the registry's listing
    // Shared, so a read keeps its slot while a listing drops shards no longer registered.
    std::map<Uuid, std::shared_ptr<Watched<std::shared_ptr<const pb::ShardManifest>>>> manifests;
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
