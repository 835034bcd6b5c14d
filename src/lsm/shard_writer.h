// The writer of one shard: claims the shard's epoch, replays its WAL, then appends rows
// durably (WAL with group commit) into a memtable, seals memtables into generations on a
// background thread and publishes them in the shard manifest.
//
// Fencing: a writer acts only while its epoch is the stored one. Every WAL group is
// followed by a fence check before it is acknowledged (WalWriterOptions::check_fence:
// Head the next manifest version; if it exists, read it and compare epochs), and every
// manifest update checks the epoch, so a writer that was fenced never acknowledges a write
// that the new owner's replay did not see. After a fence every call fails with Fenced.
//
// Lifecycle: Open (claim + replay; replayed rows are sealed into a generation at once so
// the new epoch starts clean) -> Put / PutTombstones / Seal ... -> Close (seal, wait for
// publication, stop the flusher, close the WAL). Destruction closes, dropping errors.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lsm/memtable.h"
#include "lsm/shard_manifest.h"
#include "lsm/wal.h"
#include "strata/metrics.h"
#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/table.h"
#include "util/clock.h"
#include "util/uuid.h"

namespace strata::lsm {

struct ShardWriterOptions {
  // The active memtable is sealed (asynchronously) when it reaches either bound.
  int64_t max_memtable_rows = 100000;
  int64_t max_memtable_bytes = int64_t{256} << 20;
  // Puts wait (never fail) while the active and sealed-but-unpublished memtables hold more
  // than this many bytes.
  int64_t max_unflushed_bytes = int64_t{1} << 30;
  int64_t max_wal_segment_bytes = int64_t{64} << 20;
  // How long a WAL group's leader may wait for the writers of the last group to come back
  // (WalWriterOptions::group_commit_wait). Zero: never wait.
  std::chrono::microseconds group_commit_wait{0};
  // Seal large memtables without rewriting their rows: the WAL segments (written as Arrow
  // IPC files, format 2) are linked into the generation table. Applies to memtables of at
  // least max_wal_segment_bytes / 8 bytes without tombstones and to schemas without
  // dictionary columns; other seals, and every seal with this off, rewrite the rows.
  bool link_wal_segments = true;
  // Options of generation tables (compression, batch sizes).
  table::TableOptions generation_options;
  // Recode each linked generation this writer publishes, and the linked generations it finds
  // pending when it opens, into `recode_options`' compression and batch sizes, one at a time
  // on a background thread in the idle scheduling class (docs/format/lsm.md §6.4).
  bool recode_linked_generations = false;
  // Its `random`, when set, must be thread safe: the recoder draws from it beside the flusher.
  table::TableOptions recode_options;
  // While writes arrive the recoder waits: it starts a recode, and goes on between the
  // batches of one, only when no put or delete is under way and none returned within
  // `recode_quiet_period` of `clock` time, or when the generation has waited
  // `recode_max_delay` since it was queued (sustained ingest then shares the disk with the
  // recode). Zero quiet period: no waiting.
  std::chrono::milliseconds recode_quiet_period{0};
  std::chrono::milliseconds recode_max_delay{std::chrono::seconds(60)};
  // Receives generation directories of this shard that the manifest no longer lists — the
  // old directory of each published recode, and a copy a recode could not publish — for the
  // caller to delete after a delay (readers that listed an old one may still read it) on a
  // thread of ordinary priority. Null: the writer deletes an unpublished copy itself, and
  // an old directory stays until the shard's first merge after the generation's sweeps it.
  std::function<void(const Uuid& shard, std::vector<std::string> paths)> retire_generations;
  // Counts published recodes (optional).
  Counter* generations_recoded = nullptr;
  Clock* clock = SystemClock();
};

enum class SealOutcome { kSealed, kNoop, kFenced };
const char* SealOutcomeName(SealOutcome outcome);  // "sealed", "noop", "fenced"

struct ShardWriterStats {
  uint64_t epoch = 0;
  int64_t active_rows = 0;
  int64_t unflushed_rows = 0;  // active + sealed, not yet published
  int64_t unflushed_bytes = 0;
  int64_t replayed_records = 0;  // at open
  int64_t generations_published = 0;
  int64_t generations_recoded = 0;        // recodes published
  int64_t recodes_queued = 0;             // waiting or running
  bool recode_waiting_for_quiet = false;  // the recoder waits while writes arrive
};

class ShardWriter {
 public:
  // `schema` is the store schema, `key_column` its primary key. Claims the epoch (Fenced
  // when another claimer wins the race for it), replays the WAL after the manifest's
  // replay position (records of epochs <= the claimed one), seals what was replayed as a
  // generation and publishes it with replay_after = (epoch, 0, 0) — or, with nothing to
  // replay, only moves replay_after there — so records a fenced predecessor writes after
  // this point are never replayed (they were never acknowledged). Then starts WAL segment
  // (epoch, 0).
  static Result<std::shared_ptr<ShardWriter>> Open(std::shared_ptr<ObjectStore> store,
                                                   std::string store_prefix, Uuid shard,
                                                   SchemaPtr schema, int key_column,
                                                   ShardWriterOptions options = {});
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends rows (batches already aligned to the store schema; every key non-null) as one
  // WAL record. Returns when they are durable and in the memtable. Thread safe; concurrent
  // calls share WAL syncs. May seal the memtable when it is full (asynchronously).
  Status Put(const std::vector<RecordBatch>& batches);
  // Deletes keys: `keys` is an array of the key column's type; writes tombstones.
  Status PutTombstones(const Array& keys);
  // Seals the active memtable (a no-op when empty). With `wait`, returns after every
  // memtable sealed so far is published as a generation. kFenced when the writer has been
  // fenced (nothing to publish against a dead epoch; the next owner replays the WAL).
  Result<SealOutcome> Seal(bool wait);
  // Blocks until every generation queued for recoding before the call is recoded, or given
  // up on (a recode that fails is logged and left to the shard's next writer), or the writer
  // closes; the recodes themselves wait for the writes to pause (recode_quiet_period). Close
  // cancels a recode under way between batches and before it publishes; the
  // rest of a step (finishing a data file, the manifest write) runs to its end at the
  // recoder's idle priority, which Close waits for.
  void WaitForRecodes() const;
  // Seal(wait) then stops the flusher and closes the WAL; a recode under way is cancelled.
  // Idempotent. After Close every call fails with InvalidArgument ("writer closed").
  Status Close();
  // Stops the writer without sealing: rows not yet published stay durable in the WAL,
  // invisible until the shard's next writer replays them. Idempotent, as Close.
  Status CloseWithoutSeal();

  uint64_t epoch() const;
  const Uuid& shard() const;
  bool fenced() const;
  ShardWriterStats stats() const;
  // The unpublished memtables (active first, then sealed ones newest first), for
  // read-your-writes.
  std::vector<std::shared_ptr<const MemTableSnapshot>> MemTables() const;

  struct Impl;

 private:
  explicit ShardWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::lsm
