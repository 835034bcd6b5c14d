// Merging a shard's pending generations into the base table, in two steps so appends keep
// running: Prepare reads and de-duplicates the oldest generations (no locks, no writes);
// Commit makes one base-table commit that deletes the base rows of those keys, appends the
// merged rows and records the shard's merge watermark (the highest merged generation),
// then drains exactly those generations from the shard manifest (relative edit, the
// prepared epoch — a merge never claims), then deletes their files in the background.
//
// Crash safety: readers skip generations at or below the watermark recorded in the base
// version they read, so a crash after the base commit and before the drain shows no row
// twice; the next merge sees the watermark, commits nothing and just drains.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lsm/generation.h"
#include "lsm/lsm.pb.h"
#include "lsm/read_view.h"
#include "lsm/shard_manifest.h"
#include "strata/merge_budget.h"
#include "strata/metrics.h"
#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/table.h"
#include "util/mutex.h"
#include "util/uuid.h"

namespace strata::lsm {

// The process-wide merge memory budget is public (include/strata/merge_budget.h) so that
// callers above the store can create the one StorageBaseOptions::merge_budget takes.
using MergeBudget = ::strata::MergeBudget;

struct MergeOptions {
  // At most this many generations per pass (0 = no bound) ...
  int max_generations = 8;
  // ... and stop adding generations once their rows reach this many bytes (0 = no bound).
  // Whole generations only: a pass may overshoot by one, and an oversized first
  // generation is merged alone, so every pass makes progress.
  int64_t max_bytes = int64_t{1} << 30;
  // Optional shared budget (reserve min(max_bytes, limit) up front; a generation that
  // does not fit without waiting ends the pass, or fails the pass with Busy "merge memory
  // budget busy" when it is the first).
  MergeBudget* budget = nullptr;
  // Observes the seconds spent waiting for the budget reservation (optional).
  Histogram* budget_wait_seconds = nullptr;
};

struct PreparedMerge {
  Uuid shard;
  uint64_t epoch = 0;                       // the shard manifest's writer_epoch when prepared
  std::vector<pb::Generation> generations;  // oldest first
  uint64_t max_generation = 0;
  uint64_t watermark_before = 0;  // the base watermark of this shard when prepared
  // Newest row per key over the generations, aligned to the base schema, tombstones
  // removed ...
  std::vector<RecordBatch> rows;
  // ... and the keys whose newest version is a tombstone.
  std::vector<expr::Scalar> deleted_keys;
  int64_t bytes = 0;  // of `rows` in memory
  MergeBudget::Reservation reservation;
};

// Reads the oldest pending generations of `shard` (at most options' bounds) when at least
// `min_generations` (>= 1) are pending; nullopt otherwise. Generations at or below the
// base's watermark are skipped (a crashed merge already committed them; Commit drains
// them). `base` is the store's base table (refreshed here).
Result<std::optional<PreparedMerge>> PrepareMerge(const std::shared_ptr<table::Table>& base,
                                                  ShardManifestStore& manifests,
                                                  GenerationCache& generations,
                                                  const MergeOptions& options,
                                                  int min_generations = 1);

struct MergeCommitResult {
  int generations_reclaimed = 0;  // drained from the shard manifest
  uint64_t base_version = 0;      // the base commit made (0 when none was needed)
  int64_t rows_merged = 0;
  int64_t keys_deleted = 0;
  // OK, or why the drain after this call's base commit failed (base_version != 0): the
  // merged rows are committed and read once (readers skip generations at or below the
  // watermark), and the shard's next merge drains the generations.
  Status drain_status;
};

// Commits a prepared merge: skipped (0 reclaimed) when none of its generations is still
// pending; base commit via Table::Upsert guarded on the watermark (a concurrent merge of
// the same generations makes it Aborted -> re-read: already merged -> no base commit,
// just drain); drain; then `delete_files` is called with the merged generations' paths
// (the caller deletes them in the background and Forgets them in its GenerationCache).
// An error is returned only when this call committed nothing; once its base commit is made,
// a failure of the drain (Fenced by a new writer of the shard, an I/O error) is returned
// in drain_status of an OK result, with base_version set.
Result<MergeCommitResult> CommitMerge(
    const std::shared_ptr<table::Table>& base, ShardManifestStore& manifests,
    PreparedMerge prepared,
    const std::function<void(const Uuid& shard, std::vector<std::string> paths)>& delete_files);

// Folds everything `view` holds pending into the base in one commit, for a snapshot or a fork
// of the store (docs/format/lsm.md §11): the newest row per key over the view's generations (in
// the view's newest-first order, across shards) replaces the base rows of those keys,
// tombstoned keys are deleted, and each shard's merge watermark rises to the highest
// generation of it the view holds. The commit is guarded on the view's watermarks: when a
// merge committed meanwhile it is Aborted (nothing committed; build a new view and retry).
// Shard manifests are not drained: readers skip what the watermarks cover, and each shard's
// next merge drains those generations, exactly as after a merge that stopped between its base
// commit and its drain. `base` is the store's writable base table; the view must hold no
// memtables. Returns the base version holding the view's content: the view's own base version
// when it has no generations (no commit).
Result<uint64_t> CommitPendingFold(const std::shared_ptr<table::Table>& base, const ReadView& view);

}  // namespace strata::lsm
