// The shard writer: claim + WAL replay at open, durable puts through the group-committed
// WAL into the active memtable, and a single flusher thread that seals memtables into
// generations and publishes them in the shard manifest (see shard_writer.h).
#include "lsm/shard_writer.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <deque>
#include <limits>
#include <thread>
#include <utility>

#include "io/watch_batch.h"
#include "lsm/dictionary_canon.h"
#include "lsm/generation.h"
#include "lsm/key.h"
#include "lsm/layout.h"
#include "strata/ipc.h"
#include "util/log.h"
#include "util/mutex.h"
#include "util/thread.h"

namespace strata::lsm {

const char* SealOutcomeName(SealOutcome outcome) {
  switch (outcome) {
    case SealOutcome::kSealed:
      return "sealed";
    case SealOutcome::kNoop:
      return "noop";
    case SealOutcome::kFenced:
      return "fenced";
  }
  return "unknown";
}

namespace {

std::string PositionString(const pb::WalPosition& p) {
  return "(" + std::to_string(p.epoch()) + ", " + std::to_string(p.segment()) + ", " +
         std::to_string(p.offset()) + ")";
}

// The store schema with every non-key column nullable: tombstone rows carry only the key.
SchemaPtr TombstoneSchema(const SchemaPtr& schema, int key_column) {
  bool all_nullable = true;
  std::vector<FieldPtr> fields;
  for (int i = 0; i < schema->num_fields(); ++i) {
    const FieldPtr& f = schema->field(i);
    if (i != key_column && !f->nullable()) {
      all_nullable = false;
      fields.push_back(f->WithNullable(true));
    } else {
      fields.push_back(f);
    }
  }
  if (all_nullable) return schema;
  return strata::schema(std::move(fields), schema->metadata());
}

Result<Buffer> SerializeStream(const SchemaPtr& schema, const std::vector<RecordBatch>& batches) {
  return ipc::WriteStreamToBuffer(schema, batches);
}

}  // namespace

struct ShardWriter::Impl {
  Impl(std::shared_ptr<ObjectStore> store_in, std::string prefix_in, Uuid shard_in,
       SchemaPtr schema_in, int key_column_in, ShardWriterOptions options_in)
      : store(std::move(store_in)),
        prefix(std::move(prefix_in)),
        shard(shard_in),
        schema(std::move(schema_in)),
        key_column(key_column_in),
        options(options_in),
        manifests(store, prefix, shard, options.clock) {
    tombstone_schema = TombstoneSchema(schema, key_column);
    key_schema = strata::schema({schema->field(key_column)});
    key_name = schema->field(key_column)->name();
    // The writer keeps its shard's manifest chain short (lsm.md §3.2); CheckFence copes.
    manifests.set_retained_versions(kRetainedShardManifestVersions);
  }

  const std::shared_ptr<ObjectStore> store;
  const std::string prefix;
  const Uuid shard;
  const SchemaPtr schema;
  const int key_column;
  const ShardWriterOptions options;
  ShardManifestStore manifests;
  SchemaPtr tombstone_schema;  // store schema, non-key columns nullable
  SchemaPtr key_schema;        // the key column alone (tombstone WAL records)
  std::string key_name;

  uint64_t epoch = 0;
  int64_t replayed_records = 0;
  std::unique_ptr<WalWriter> wal;  // set once at open
  bool wal_files = false;          // the WAL writes format 2 segments (set once at open)
  // With wal_files: puts' dictionary columns re-indexed onto one dictionary per column, so
  // one dictionary per column serves a whole segment as an IPC file.
  std::unique_ptr<DictionaryCanon> canon;

  // The newest manifest version this writer has seen (fence probes start after it).
  std::atomic<uint64_t> known_version{0};
  // A change watch on the shard's manifests (ObjectStore::Watch), and its count before the
  // last fence check that passed: while a poll returns it, nothing was published since, so
  // the check passes without its probes.
  Mutex fence_mu;
  std::unique_ptr<ChangeWatch> fence_watch STRATA_GUARDED_BY(fence_mu);
  bool fence_watch_unsupported STRATA_GUARDED_BY(fence_mu) = false;
  std::optional<uint64_t> fence_passed_count STRATA_GUARDED_BY(fence_mu);
  std::atomic<bool> fenced{false};
  std::atomic<bool> closed{false};

  mutable Mutex mu;
  std::shared_ptr<MemTable> active STRATA_GUARDED_BY(mu);
  // Sealed, not yet published; oldest first. The flusher publishes the front.
  std::deque<std::shared_ptr<MemTable>> sealed STRATA_GUARDED_BY(mu);
  uint64_t queued_count STRATA_GUARDED_BY(mu) = 0;     // memtables ever queued
  uint64_t published_count STRATA_GUARDED_BY(mu) = 0;  // of those, published
  int64_t generations_published STRATA_GUARDED_BY(mu) = 0;
  // The flusher's last error; it pauses until the next seal asks it to retry.
  Status flush_error STRATA_GUARDED_BY(mu);
  bool flush_paused STRATA_GUARDED_BY(mu) = false;
  uint64_t error_count STRATA_GUARDED_BY(mu) = 0;
  // A memtable append in on_durable failed (cannot happen for validated input).
  Status append_error STRATA_GUARDED_BY(mu);
  int inflight STRATA_GUARDED_BY(mu) = 0;  // public calls in progress
  bool closing STRATA_GUARDED_BY(mu) = false;
  bool stop STRATA_GUARDED_BY(mu) = false;
  CondVar flusher_cv;   // work for the flusher
  CondVar progress_cv;  // publication, errors, fencing, calls finishing

  std::thread flusher;

  // Recoding linked generations (§6.4): numbers waiting, oldest first, for the recoder
  // thread (started with the first one).
  mutable Mutex recode_mu;
  mutable CondVar recode_cv;  // queue, running or stop changed
  struct QueuedRecode {
    uint64_t generation;
    int64_t queued_nanos;  // options.clock's monotonic time
  };
  std::deque<QueuedRecode> recode_queue STRATA_GUARDED_BY(recode_mu);
  uint64_t recodes_queued_total STRATA_GUARDED_BY(recode_mu) = 0;  // ever queued
  uint64_t recodes_done_total STRATA_GUARDED_BY(recode_mu) = 0;    // of those, finished
  bool recode_running STRATA_GUARDED_BY(recode_mu) = false;
  bool recode_waiting STRATA_GUARDED_BY(recode_mu) = false;  // for writes to pause
  bool recode_stop STRATA_GUARDED_BY(recode_mu) = false;
  int64_t generations_recoded STRATA_GUARDED_BY(recode_mu) = 0;
  std::thread recoder STRATA_GUARDED_BY(recode_mu);
  std::atomic<bool> cancel_recode{false};  // set by Close: the recode under way stops
  // Puts and deletes under way, and when the last one returned (options.clock's monotonic
  // time; none yet: min), for the recoder's quiet period.
  std::atomic<int> writes_in_flight{0};
  std::atomic<int64_t> last_write_nanos{std::numeric_limits<int64_t>::min()};

  Mutex close_mu;
  bool close_done STRATA_GUARDED_BY(close_mu) = false;
  Status close_status STRATA_GUARDED_BY(close_mu);

  Status FencedStatus() const {
    return Status::Fenced("shard " + shard.ToString() + ": writer epoch " + std::to_string(epoch) +
                          " has been fenced by a newer writer");
  }

  // Marks the writer fenced and wakes everyone waiting on progress (under `mu`, so a waiter
  // that just checked the flag cannot miss the wake-up).
  void MarkFenced() {
    MutexLock lock(mu);
    fenced = true;
    progress_cv.SignalAll();
    flusher_cv.SignalAll();
  }

  // Remembers `manifest` as the newest version known to belong to this epoch. Versions of
  // another epoch are never remembered: a probe must always start at or before the claim
  // that fenced us, or it would miss it.
  void NoteVersion(const pb::ShardManifest& manifest) {
    if (manifest.writer_epoch() != epoch) return;
    const uint64_t version = manifest.version();
    uint64_t known = known_version.load();
    while (version > known && !known_version.compare_exchange_weak(known, version)) {
    }
  }

  // The WAL's fence check: cheap (two Heads) unless the manifest moved since we last looked.
  // "Version known+1 is missing" alone does not prove the chain has not moved: cleanup may
  // have deleted it after newer versions were written. Cleanup deletes oldest first, so
  // version `known` still existing after known+1 was seen missing proves known+1 was never
  // written; when `known` is gone too, the chain moved on and the latest version decides.
  Status CheckFence() {
    assert(io::ChangeWatchBatch::Current() == 0);  // the poll below must look afresh
    if (fenced) return FencedStatus();
    MutexLock lock(fence_mu);  // one check at a time: the group leader's
    std::optional<uint64_t> count = PollFenceWatch();
    if (count.has_value() && fence_passed_count == count) return Status::OK();
    STRATA_RETURN_IF_ERROR(ProbeFence());
    fence_passed_count = count;
    return Status::OK();
  }

  // The fence watch's count now (made on first use); nullopt without one.
  std::optional<uint64_t> PollFenceWatch() STRATA_REQUIRES(fence_mu) {
    if (fence_watch == nullptr && !fence_watch_unsupported) {
      Result<std::unique_ptr<ChangeWatch>> made = manifests.Watch();
      if (made.ok()) {
        fence_watch = std::move(*made);
        fence_passed_count.reset();
      } else if (made.status().IsNotSupported()) {
        fence_watch_unsupported = true;
      }
    }
    if (fence_watch == nullptr) return std::nullopt;
    Result<uint64_t> count = fence_watch->Poll();
    if (count.ok()) return *count;
    fence_watch.reset();  // ended: a new one next time
    fence_passed_count.reset();
    return std::nullopt;
  }

  // The fence check by requests: no manifest past the newest this writer knows, or else the
  // newest one still names this writer's epoch.
  Status ProbeFence() {
    const uint64_t known = known_version.load();
    auto missing = [&](uint64_t version) -> Result<bool> {
      Result<ObjectMeta> head = store->Head(ShardManifestKey(prefix, shard, version));
      if (head.ok()) return false;
      if (head.status().IsNotFound()) return true;
      return head.status().WithContext("fence check");
    };
    STRATA_ASSIGN_OR_RETURN(bool next_missing, missing(known + 1));
    if (next_missing) {
      if (known == 0) return Status::OK();
      STRATA_ASSIGN_OR_RETURN(bool known_missing, missing(known));
      if (!known_missing) return Status::OK();
    }
    STRATA_ASSIGN_OR_RETURN(pb::ShardManifest latest, manifests.ReadLatest());
    NoteVersion(latest);
    if (latest.writer_epoch() != epoch) {
      MarkFenced();
      return Status::Fenced("shard " + shard.ToString() + ": writer epoch " +
                            std::to_string(epoch) + " fenced by epoch " +
                            std::to_string(latest.writer_epoch()) + " (manifest version " +
                            std::to_string(latest.version()) + ")");
    }
    return Status::OK();
  }

  // Rejects calls on a closed or fenced writer and counts the call as in flight.
  Status Enter() {
    MutexLock lock(mu);
    if (closing || closed) return Status::InvalidArgument("writer closed");
    if (fenced) return FencedStatus();
    ++inflight;
    return Status::OK();
  }
  void Leave() {
    MutexLock lock(mu);
    --inflight;
    progress_cv.SignalAll();
  }

  int64_t UnflushedBytesLocked() const STRATA_REQUIRES(mu) {
    int64_t bytes = active->bytes();
    for (const auto& m : sealed) bytes += m->bytes();
    return bytes;
  }

  // Queues the active memtable for the flusher (when it holds rows) and starts a new one.
  bool QueueActiveLocked() STRATA_REQUIRES(mu) {
    if (active->empty()) return false;
    sealed.push_back(std::move(active));
    active = MemTable::Make(schema, key_column);
    ++queued_count;
    flush_paused = false;  // a new seal retries after an earlier error
    flusher_cv.Signal();
    return true;
  }

  // Waits while the unflushed bytes are over the limit. Fails only when the flusher reports
  // an error meanwhile (it cannot drain) or the writer is fenced.
  Status WaitForRoom() {
    MutexLock lock(mu);
    const uint64_t errors_at_start = error_count;
    while (UnflushedBytesLocked() > options.max_unflushed_bytes) {
      if (fenced) return FencedStatus();
      if (error_count != errors_at_start) return flush_error;
      if (flush_paused) {
        flush_paused = false;
        flusher_cv.Signal();
      }
      if (sealed.empty()) QueueActiveLocked();  // the active memtable alone is over the limit
      progress_cv.Wait(mu);
    }
    return Status::OK();
  }

  void MaybeSealFull() {
    MutexLock lock(mu);
    if (active->rows() >= options.max_memtable_rows ||
        active->bytes() >= options.max_memtable_bytes) {
      QueueActiveLocked();
    }
  }

  // Appends one WAL record whose on_durable inserts `batches` into the active memtable.
  Status AppendDurable(WalRecordKind kind, const Buffer& payload,
                       const std::vector<RecordBatch>& batches, bool tombstone) {
    const WriteInFlight in_flight(*this);
    STRATA_RETURN_IF_ERROR(WaitForRoom());
    Result<pb::WalPosition> appended =
        wal->AppendView(kind, payload.view(), [&](const pb::WalPosition& end) {
          const auto record_offset =
              static_cast<int64_t>(end.offset()) -
              static_cast<int64_t>(kWalHeaderSize + payload.size() + kWalTrailerSize);
          MutexLock lock(mu);
          for (const RecordBatch& batch : batches) {
            Status st = active->Append(batch, tombstone, end, record_offset);
            if (!st.ok() && append_error.ok()) {
              append_error = st.WithContext("memtable append after WAL " + PositionString(end));
            }
          }
        });
    if (!appended.ok()) {
      if (appended.status().IsFenced()) MarkFenced();
      return appended.status();
    }
    {
      MutexLock lock(mu);
      if (!append_error.ok()) return append_error;
    }
    MaybeSealFull();
    return Status::OK();
  }

  // Marks a put or delete under way for the recoder (RecodeCancelled).
  class WriteInFlight {
   public:
    explicit WriteInFlight(Impl& impl) : impl_(impl) {
      if (Tracked()) impl_.writes_in_flight.fetch_add(1);
    }
    ~WriteInFlight() {
      if (!Tracked()) return;
      impl_.last_write_nanos.store(impl_.options.clock->MonotonicNanos());
      impl_.writes_in_flight.fetch_sub(1);
    }
    WriteInFlight(const WriteInFlight&) = delete;
    WriteInFlight& operator=(const WriteInFlight&) = delete;

   private:
    bool Tracked() const {
      return impl_.options.recode_linked_generations &&
             impl_.options.recode_quiet_period.count() > 0;
    }
    Impl& impl_;
  };

  // The tombstone rows of `keys`: the key column and nulls elsewhere.
  Result<RecordBatch> TombstoneBatch(const Array& keys) const {
    std::vector<Array> columns;
    for (int i = 0; i < tombstone_schema->num_fields(); ++i) {
      if (i == key_column) {
        columns.push_back(keys);
      } else {
        columns.push_back(Array::MakeNull(tombstone_schema->field(i)->type(), keys.length()));
      }
    }
    return RecordBatch::Make(tombstone_schema, keys.length(), std::move(columns));
  }

  // `batch` with the store schema object itself (the caller checked the fields match).
  Result<RecordBatch> WithStoreSchema(const RecordBatch& batch) const {
    if (batch.schema() == schema || batch.schema()->Equals(*schema, true)) return batch;
    return RecordBatch::Make(schema, batch.num_rows(), batch.columns());
  }

  // A WAL batch of rows in the store schema. Rows written before the base table gained
  // nullable columns lack them (schema evolution is additive): they are aligned, the new
  // columns null, so acknowledged rows stay recoverable. Any other difference is Corruption.
  Result<RecordBatch> ReplayedRows(const RecordBatch& batch, const std::string& where) const {
    if (batch.schema()->Equals(*schema, false)) return WithStoreSchema(batch);
    const Schema& written = *batch.schema();
    for (const FieldPtr& f : written.fields()) {
      int index = schema->GetFieldIndex(f->name());
      if (index < 0) {
        return Status::Corruption(where + ": rows do not have the store schema (column '" +
                                  f->name() + "' is not in the store schema)");
      }
      if (!schema->field(index)->type()->Equals(*f->type())) {
        return Status::Corruption(where + ": rows do not have the store schema (column '" +
                                  f->name() + "' has type " + f->type()->ToString() +
                                  ", the store's is " + schema->field(index)->type()->ToString() +
                                  ")");
      }
    }
    for (const FieldPtr& f : schema->fields()) {
      if (written.GetFieldIndex(f->name()) < 0 && !f->nullable()) {
        return Status::Corruption(where +
                                  ": rows do not have the store schema (they lack "
                                  "the non-nullable column '" +
                                  f->name() + "')");
      }
    }
    Result<RecordBatch> aligned = AlignBatchToSchema(batch, schema);
    if (!aligned.ok()) {
      return Status::Corruption(where + ": rows do not have the store schema (" +
                                aligned.status().message() + ")");
    }
    return WithStoreSchema(*aligned);
  }

  Status CheckKeys(const Array& keys) const {
    if (!keys.type()->Equals(*schema->field(key_column)->type())) {
      return Status::InvalidArgument("key column '" + key_name + "' has type " +
                                     keys.type()->ToString() + ", expected " +
                                     schema->field(key_column)->type()->ToString());
    }
    return EncodeKeys(keys, key_name).status();
  }

  // Whether the generation of `snapshot` (ending at `wal_end`) links the WAL's segments
  // rather than rewriting its rows; if so, ends the segment holding wal_end first, so that
  // every segment the snapshot touches is a complete IPC file.
  Result<bool> ReadyToLink(const MemTableSnapshot& snapshot, const pb::WalPosition& wal_end) {
    if (!wal_files || wal == nullptr || wal_end.epoch() != epoch || !CanLinkWal(snapshot)) {
      return false;
    }
    if (canon != nullptr && !canon->usable()) return false;
    if (snapshot.bytes() < options.max_wal_segment_bytes / 8) return false;
    if (!wal->SegmentHasFooter(wal_end.segment())) {
      STRATA_RETURN_IF_ERROR(wal->RollSegment().status());
    }
    const uint64_t first = snapshot.batches().front()->wal_end.segment();
    for (uint64_t segment = first; segment <= wal_end.segment(); ++segment) {
      if (!wal->SegmentHasFooter(segment)) return false;  // abandoned after an error
    }
    return true;
  }

  // The highest order stamp of the other shards' pending generations (0 when none): a seal
  // stamps its generation above it, so a write made after another shard's generation was
  // published wins over it whatever the two writers' clocks say (docs/format/lsm.md §8). A
  // shard whose manifest cannot be read is skipped with a warning: its reads fail anyway,
  // and this writer keeps sealing.
  Result<int64_t> NewestStampOfOtherShards() {
    STRATA_ASSIGN_OR_RETURN(std::vector<Uuid> shards, ListShards(*store, prefix));
    int64_t newest = 0;
    for (const Uuid& other : shards) {
      if (other == shard) continue;
      Result<pb::ShardManifest> manifest =
          ShardManifestStore(store, prefix, other, options.clock).ReadLatest();
      if (!manifest.ok()) {
        if (!manifest.status().IsNotFound()) {
          LogWarning("shard {}: seal stamp ignores shard {}: {}", shard.ToString(),
                     other.ToString(), manifest.status().ToString());
        }
        continue;
      }
      for (const pb::Generation& g : manifest->generations()) {
        newest = std::max(newest, g.sealed_at_micros());
      }
    }
    return newest;
  }

  // Writes the generation of `snapshot` and publishes it: generation entry with wal_end,
  // current_generation + 1, replay_after = `replay_after`. OK without writing when the
  // manifest already covers `wal_end` (an earlier attempt published it but reported an
  // error).
  Status Publish(const MemTableSnapshot& snapshot, const pb::WalPosition& wal_end,
                 const pb::WalPosition& replay_after) {
    STRATA_ASSIGN_OR_RETURN(pb::ShardManifest latest, manifests.ReadLatest());
    NoteVersion(latest);
    if (latest.writer_epoch() != epoch) return FencedStatus();
    if (CompareWalPositions(latest.replay_after(), replay_after) >= 0 &&
        CompareWalPositions(latest.replay_after(), wal_end) >= 0) {
      return Status::OK();
    }
    const uint64_t g = latest.current_generation();
    STRATA_ASSIGN_OR_RETURN(bool link, ReadyToLink(snapshot, wal_end));
    STRATA_ASSIGN_OR_RETURN(pb::Generation entry,
                            link ? WriteLinkedGeneration(store, prefix, shard, g, snapshot,
                                                         options.generation_options, options.clock)
                                 : WriteGeneration(store, prefix, shard, g, snapshot,
                                                   options.generation_options, options.clock));
    *entry.mutable_wal_end() = wal_end;
    STRATA_ASSIGN_OR_RETURN(const int64_t others, NewestStampOfOtherShards());
    STRATA_ASSIGN_OR_RETURN(
        pb::ShardManifest written,
        manifests.Update(epoch, "seal", [&](pb::ShardManifest& m) -> Status {
          if (m.current_generation() != g) {
            return Status::Aborted("shard " + shard.ToString() + ": generation " +
                                   std::to_string(g) + " was taken meanwhile (current " +
                                   std::to_string(m.current_generation()) + ")");
          }
          pb::Generation added = entry;
          // The order stamp (a hybrid logical clock): the seal time, raised past every
          // stamp this writer has seen — its shard's newest generation (so stamps increase
          // within a shard even if the clock steps back) and the other shards' (so a later
          // write wins across writers whose clocks disagree).
          int64_t seen = others;
          if (m.generations_size() > 0) {
            seen = std::max(seen, m.generations(m.generations_size() - 1).sealed_at_micros());
          }
          if (added.sealed_at_micros() <= seen) added.set_sealed_at_micros(seen + 1);
          *m.add_generations() = std::move(added);
          m.set_current_generation(g + 1);
          *m.mutable_replay_after() = replay_after;
          return Status::OK();
        }));
    NoteVersion(written);
    if (link) QueueRecode(g);
    return Status::OK();
  }

  // Queues generation `g` for recoding (when the options ask for it), starting the recoder
  // thread with the first one.
  void QueueRecode(uint64_t g) {
    if (!options.recode_linked_generations) return;
    MutexLock lock(recode_mu);
    if (recode_stop) return;
    recode_queue.push_back({g, options.clock->MonotonicNanos()});
    ++recodes_queued_total;
    if (!recoder.joinable()) recoder = std::thread([this] { RecoderLoop(); });
    recode_cv.SignalAll();
  }

  void RecoderLoop() {
    // Recoding is worth doing only with CPU that puts and reads leave unused.
    if (!RunThreadAtIdlePriority()) {
      LogWarning("shard {}: recoding linked generations at normal priority (SCHED_IDLE refused)",
                 shard.ToString());
    }
    recode_mu.Lock();
    for (;;) {
      while (!recode_stop && recode_queue.empty()) recode_cv.Wait(recode_mu);
      if (recode_stop) break;
      const QueuedRecode next = recode_queue.front();
      recode_queue.pop_front();
      recode_running = true;
      recode_mu.Unlock();
      Result<bool> recoded = RecodeOne(next);
      if (!recoded.ok() && !cancel_recode.load()) {
        LogWarning("shard {}: recoding generation {} failed (its linked files stay in use): {}",
                   shard.ToString(), next.generation, recoded.status().ToString());
      }
      recode_mu.Lock();
      recode_running = false;
      ++recodes_done_total;
      if (recoded.ok() && *recoded) ++generations_recoded;
      if (recoded.status().IsFenced()) {
        recodes_done_total += recode_queue.size();
        recode_queue.clear();
      }
      recode_cv.SignalAll();
    }
    recode_running = false;
    recode_cv.SignalAll();
    recode_mu.Unlock();
  }

  // Recodes generation `g` when the latest manifest lists it as linked, and publishes the
  // recode. True when published; false when there was nothing to do (already recoded,
  // drained) or the generation was drained while it was recoded.
  Result<bool> RecodeOne(const QueuedRecode& queued) {
    const uint64_t g = queued.generation;
    if (RecodeCancelled(queued)) {
      return fenced.load() ? FencedStatus() : Status::Aborted("recode cancelled");
    }
    STRATA_ASSIGN_OR_RETURN(pb::ShardManifest latest, manifests.ReadLatest());
    if (latest.writer_epoch() != epoch) return FencedStatus();
    const pb::Generation* listed = nullptr;
    for (const pb::Generation& entry : latest.generations()) {
      if (entry.generation() == g) listed = &entry;
    }
    if (listed == nullptr || !listed->linked()) return false;
    const pb::Generation entry = *listed;
    Result<std::shared_ptr<Generation>> source =
        Generation::Open(store, prefix, shard, entry, options.generation_options);
    if (!source.ok()) {
      if (source.status().IsNotFound()) return false;  // drained and deleted meanwhile
      return source.status();
    }
    std::string path = NewGenerationPath(g, options.recode_options.random);
    while (path == entry.path()) path = NewGenerationPath(g, options.recode_options.random);
    auto cancelled = [&] { return RecodeCancelled(queued); };
    Result<pb::Generation> recoded =
        RecodeGeneration(store, prefix, **source, path, options.recode_options, cancelled);
    if (recoded.ok() && RecodeStopped())
      recoded = Status::Aborted("recode cancelled before publishing");
    if (!recoded.ok()) {
      // A merge that drained the generation meanwhile deletes its files: nothing to recode.
      const bool drained = recoded.status().IsNotFound() && Listed(g) == Where::kGone;
      Discard(path);
      if (drained) return false;
      return recoded.status();
    }
    Result<bool> replaced = manifests.ReplaceGeneration(epoch, entry.path(), *recoded);
    if (replaced.ok() && !*replaced) {
      Discard(path);
      return false;
    }
    if (!replaced.ok()) {
      if (replaced.status().IsFenced()) MarkFenced();
      // The version may have been written before the error (a put whose directory sync
      // failed): the manifest decides which copy is the generation's.
      switch (Listed(g, entry.path(), path)) {
        case Where::kNew:
          break;  // published after all
        case Where::kUnknown:
          return replaced.status();  // keep both; the merge sweep removes the loser
        default:
          Discard(path);
          return replaced.status();
      }
    }
    Retire({entry.path()});
    if (options.generations_recoded != nullptr) options.generations_recoded->Increment();
    return true;
  }

  // Checked before a recode and between its batches: waits while writes arrive (the
  // options' quiet period and maximum delay), then whether Close or a fence stops the recode.
  // Waits in slices of at most 50 ms so that Close never waits long for the recoder.
  bool RecodeCancelled(const QueuedRecode& queued) {
    const int64_t quiet = std::chrono::nanoseconds(options.recode_quiet_period).count();
    const int64_t deadline =
        queued.queued_nanos + std::chrono::nanoseconds(options.recode_max_delay).count();
    for (;;) {
      if (RecodeStopped() || quiet <= 0) break;
      // In flight first: a write that returns between the two reads has stamped its end.
      const bool writing = writes_in_flight.load() > 0;
      const int64_t now = options.clock->MonotonicNanos();
      const int64_t last = last_write_nanos.load();
      int64_t quiet_left = last > now - quiet ? last + quiet - now : 0;
      if (writing) quiet_left = quiet;
      const int64_t wait = std::min(quiet_left, deadline - now);
      if (wait <= 0) break;
      SetRecodeWaiting(true);
      options.clock->SleepFor(std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::nanoseconds(std::min<int64_t>(wait, 50'000'000)) +
          std::chrono::microseconds(1)));
    }
    SetRecodeWaiting(false);
    return RecodeStopped();
  }

  // Close or a fence stops the recode under way.
  bool RecodeStopped() const { return cancel_recode.load() || fenced.load(); }

  void SetRecodeWaiting(bool waiting) {
    MutexLock lock(recode_mu);
    recode_waiting = waiting;
  }

  enum class Where { kOld, kNew, kGone, kUnknown };
  // Where the latest manifest lists generation `g`: at `old_path`, at `new_path`, not at all,
  // or kUnknown when the manifest cannot be read (or lists it elsewhere).
  Where Listed(uint64_t g, const std::string& old_path = {}, const std::string& new_path = {}) {
    Result<pb::ShardManifest> latest = manifests.ReadLatest();
    if (!latest.ok()) return Where::kUnknown;
    for (const pb::Generation& e : latest->generations()) {
      if (e.generation() != g) continue;
      if (!new_path.empty() && e.path() == new_path) return Where::kNew;
      if (!old_path.empty() && e.path() == old_path) return Where::kOld;
      return Where::kUnknown;
    }
    return Where::kGone;
  }

  // Hands directories no manifest lists to the caller for a delayed delete on a thread of
  // ordinary priority (an idle-priority thread must not hold the object store's locks).
  void Retire(std::vector<std::string> paths) {
    if (options.retire_generations) options.retire_generations(shard, std::move(paths));
  }

  // A recode's copy that was not published.
  void Discard(const std::string& path) {
    if (options.retire_generations) {
      Retire({path});
    } else {
      store->DeletePrefix(ShardDir(prefix, shard) + path).status().IgnoreError();
    }
  }

  // Stops the recoder: the recode under way is cancelled, queued ones are dropped.
  void StopRecoder() {
    std::thread thread;
    cancel_recode = true;
    {
      MutexLock lock(recode_mu);
      recode_stop = true;
      recode_queue.clear();
      thread = std::move(recoder);
      recode_cv.SignalAll();
    }
    if (thread.joinable()) thread.join();
  }

  // What a generation ending at WAL position `end` covers. When nothing was appended
  // after `end` and the segment holds a good part of its size limit, the segment is
  // rolled: if it then ends exactly at `end`, the whole segment is covered and can be
  // deleted now (otherwise the segment holding `end` stays until a later generation
  // covers the records after it). Small segments are not rolled, so frequent small seals
  // (seal_on_put) do not start a new segment object each time.
  pb::WalPosition CoveredAfterPublish(const pb::WalPosition& end) {
    if (wal == nullptr || CompareWalPositions(wal->last_position(), end) != 0) return end;
    // Already ended (a linked generation's seal ends its last segment).
    if (end.epoch() == epoch && wal->SegmentHasFooter(end.segment())) {
      return MakeWalPosition(end.epoch(), end.segment() + 1, 0);
    }
    if (static_cast<int64_t>(end.offset()) < options.max_wal_segment_bytes / 8) return end;
    Result<pb::WalPosition> rolled = wal->RollSegment();
    if (!rolled.ok() || CompareWalPositions(*rolled, end) != 0) return end;
    return MakeWalPosition(end.epoch(), end.segment() + 1, 0);
  }

  void FlusherLoop() {
    while (true) {
      std::shared_ptr<MemTable> m;
      {
        MutexLock lock(mu);
        while (!stop && (sealed.empty() || flush_paused || fenced)) flusher_cv.Wait(mu);
        if (stop) return;
        m = sealed.front();
      }
      const pb::WalPosition end = m->wal_end();
      Status st = Publish(*m->Snapshot(), end, end);
      if (st.ok()) {
        // Best effort, before waiters are woken (a Flush returns with the WAL trimmed):
        // segments wholly before what the new generation covers are no longer needed.
        DeleteCoveredWalSegments(*store, prefix, shard, CoveredAfterPublish(end))
            .status()
            .IgnoreError();
      }
      {
        MutexLock lock(mu);
        if (st.ok()) {
          sealed.pop_front();
          ++published_count;
          ++generations_published;
        } else if (st.IsFenced()) {
          fenced = true;
        } else {
          flush_error = st.WithContext("publishing a generation of shard " + shard.ToString());
          flush_paused = true;
          ++error_count;
        }
        progress_cv.SignalAll();
      }
    }
  }

  Result<SealOutcome> SealInternal(bool wait) {
    MutexLock lock(mu);
    if (fenced) return SealOutcome::kFenced;
    const bool queued = QueueActiveLocked();
    const SealOutcome done = queued ? SealOutcome::kSealed : SealOutcome::kNoop;
    if (!wait) return done;
    const uint64_t target = queued_count;
    if (published_count >= target) return done;
    if (flush_paused) {  // retry after an earlier error
      flush_paused = false;
      flusher_cv.Signal();
    }
    const uint64_t errors_at_start = error_count;
    while (published_count < target) {
      if (fenced) return SealOutcome::kFenced;
      if (error_count != errors_at_start) return flush_error;
      progress_cv.Wait(mu);
    }
    return done;
  }

  // `damage` (a failed check or read of the WAL that replay must read), unless a newer
  // writer claimed the shard meanwhile: its replay deletes the segments it covers, ours
  // included, which looks like damage to a writer that lost the claim race. Then the
  // writer's fenced status instead. OK stays OK.
  Status FencedOr(const pb::ShardManifest& claimed, Status damage) {
    if (damage.ok()) return damage;
    Result<pb::ShardManifest> latest = manifests.ReadLatest();
    if (!latest.ok()) return damage;
    if (latest->writer_epoch() != epoch ||
        CompareWalPositions(latest->replay_after(), claimed.replay_after()) != 0) {
      MarkFenced();
      return Status::Fenced("shard " + shard.ToString() + ": writer epoch " +
                            std::to_string(epoch) + " fenced by epoch " +
                            std::to_string(latest->writer_epoch()) + " (manifest version " +
                            std::to_string(latest->version()) + ") while it replayed the WAL");
    }
    return damage;
  }

  Status Replay(const pb::ShardManifest& claimed) {
    std::shared_ptr<MemTable> replayed = MemTable::Make(schema, key_column);
    auto apply = [&](const WalRecord& record) -> Status {
      const std::string where = "WAL record ending at " + PositionString(record.end);
      STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches,
                              ipc::ReadStream(Buffer::Copy(record.payload)));
      for (const RecordBatch& batch : batches) {
        if (batch.num_rows() == 0) continue;
        if (record.kind == WalRecordKind::kTombstones) {
          if (batch.num_columns() != 1) {
            return Status::Corruption(where + ": a tombstone batch has " +
                                      std::to_string(batch.num_columns()) + " columns");
          }
          Status keys_ok = CheckKeys(batch.column(0));
          if (!keys_ok.ok()) return Status::Corruption(where + ": " + keys_ok.message());
          STRATA_ASSIGN_OR_RETURN(RecordBatch rows, TombstoneBatch(batch.column(0)));
          STRATA_RETURN_IF_ERROR(replayed->Append(std::move(rows), true, record.end));
        } else {
          STRATA_ASSIGN_OR_RETURN(RecordBatch rows, ReplayedRows(batch, where));
          STRATA_RETURN_IF_ERROR(replayed->Append(std::move(rows), false, record.end));
        }
      }
      ++replayed_records;
      return Status::OK();
    };
    // Segments deleted from outside: refuse to carry on when the store shows that records
    // were written to them (lsm.md §5.4), rather than publish a replay that lost them.
    STRATA_ASSIGN_OR_RETURN(std::vector<WalSegment> segments,
                            ListWalSegments(*store, prefix, shard));
    STRATA_RETURN_IF_ERROR(FencedOr(
        claimed, CheckWalSegmentsComplete(segments, prefix, shard, claimed.replay_after(), epoch)));
    Result<ReplayStats> replayed_wal =
        ReplayWal(*store, prefix, shard, claimed.replay_after(), epoch, apply);
    if (!replayed_wal.ok()) return FencedOr(claimed, replayed_wal.status());
    const ReplayStats& stats = *replayed_wal;
    // A writer that closed without sealing recorded where its acknowledged records end.
    const pb::WalPosition& closed = claimed.closed_wal_end();
    if (closed.epoch() > 0 && CompareWalPositions(closed, claimed.replay_after()) > 0 &&
        CompareWalPositions(stats.end, closed) < 0) {
      return FencedOr(
          claimed,
          Status::Corruption("WAL segment '" +
                             WalSegmentKey(prefix, shard, closed.epoch(), closed.segment()) +
                             "' ends before the position " + PositionString(closed) +
                             " its writer recorded when it closed (replay reached " +
                             PositionString(stats.end) + "): acknowledged records were cut off"));
    }
    const pb::WalPosition start = MakeWalPosition(epoch, 0, 0);
    if (!replayed->empty()) {
      STRATA_RETURN_IF_ERROR(Publish(*replayed->Snapshot(), replayed->wal_end(), start));
      MutexLock lock(mu);
      ++generations_published;
    } else {
      STRATA_ASSIGN_OR_RETURN(pb::ShardManifest written,
                              manifests.Update(epoch, "seal", [&](pb::ShardManifest& m) {
                                *m.mutable_replay_after() = start;
                                return Status::OK();
                              }));
      NoteVersion(written);
    }
    // Best effort: every older epoch's segments are now covered.
    DeleteCoveredWalSegments(*store, prefix, shard, start).status().IgnoreError();
    return Status::OK();
  }

  // Records in the manifest where the acknowledged records of a writer that closes without
  // sealing end (closed_wal_end), so that the next owner can tell a WAL cut short from
  // outside from a tail torn by a crash. Best effort: without it the next owner simply
  // cannot tell the two apart.
  void RecordClosedWalEnd(const pb::WalPosition& end) {
    Result<pb::ShardManifest> written =
        manifests.Update(epoch, "close", [&](pb::ShardManifest& m) -> Status {
          if (CompareWalPositions(m.replay_after(), end) >= 0) {
            return Status::Aborted("every record is in a published generation");
          }
          *m.mutable_closed_wal_end() = end;
          return Status::OK();
        });
    if (written.ok()) NoteVersion(*written);
  }

  // `seal` false leaves the active and sealed-but-unpublished memtables unpublished: their
  // rows are durable in the WAL and the shard's next writer replays them.
  Status Close(bool seal) {
    MutexLock close_lock(close_mu);
    if (close_done) return close_status;
    {
      MutexLock lock(mu);
      closing = true;
      while (inflight > 0) progress_cv.Wait(mu);
    }
    Status st;
    if (seal) {
      Result<SealOutcome> sealed_all = SealInternal(true);
      if (!sealed_all.ok()) {
        st = sealed_all.status();
      } else if (*sealed_all == SealOutcome::kFenced) {
        st = FencedStatus();
      }
    }
    {
      MutexLock lock(mu);
      stop = true;
      flusher_cv.SignalAll();
    }
    if (flusher.joinable()) flusher.join();
    StopRecoder();
    Status wal_closed = wal->Close();
    if (st.ok() && !wal_closed.ok()) st = wal_closed;
    if (!seal && st.ok() && !fenced) RecordClosedWalEnd(wal->last_position());
    closed = true;
    close_done = true;
    close_status = st;
    return st;
  }
};

Result<std::shared_ptr<ShardWriter>> ShardWriter::Open(std::shared_ptr<ObjectStore> store,
                                                       std::string store_prefix, Uuid shard,
                                                       SchemaPtr schema, int key_column,
                                                       ShardWriterOptions options) {
  if (store == nullptr) return Status::InvalidArgument("shard writer: no object store");
  if (schema == nullptr) return Status::InvalidArgument("shard writer: no schema");
  if (key_column < 0 || key_column >= schema->num_fields()) {
    return Status::InvalidArgument("shard writer: key column " + std::to_string(key_column) +
                                   " out of range for a schema of " +
                                   std::to_string(schema->num_fields()) + " fields");
  }
  if (!IsSupportedKeyType(*schema->field(key_column)->type())) {
    return Status::InvalidArgument("shard writer: key column '" +
                                   schema->field(key_column)->name() + "' has unsupported type " +
                                   schema->field(key_column)->type()->ToString());
  }
  if (options.max_memtable_rows <= 0 || options.max_memtable_bytes <= 0 ||
      options.max_unflushed_bytes <= 0 || options.max_wal_segment_bytes <= 0) {
    return Status::InvalidArgument(
        "shard writer: max_memtable_rows, max_memtable_bytes, max_unflushed_bytes and "
        "max_wal_segment_bytes must be positive");
  }
  if (options.clock == nullptr) options.clock = SystemClock();
  // Nanoseconds of clock time stay far from overflow (30 years at most).
  constexpr std::chrono::milliseconds kLongestWait = std::chrono::hours(24 * 365 * 30);
  options.recode_quiet_period =
      std::clamp(options.recode_quiet_period, std::chrono::milliseconds(0), kLongestWait);
  options.recode_max_delay =
      std::clamp(options.recode_max_delay, std::chrono::milliseconds(0), kLongestWait);

  auto impl = std::make_unique<Impl>(std::move(store), std::move(store_prefix), shard,
                                     std::move(schema), key_column, options);
  STRATA_ASSIGN_OR_RETURN(pb::ShardManifest claimed, impl->manifests.Claim());
  impl->epoch = claimed.writer_epoch();
  impl->NoteVersion(claimed);
  {
    MutexLock lock(impl->mu);
    impl->active = MemTable::Make(impl->schema, impl->key_column);
  }

  WalWriterOptions wal_options;
  wal_options.max_segment_bytes = impl->options.max_wal_segment_bytes;
  wal_options.group_commit_wait = impl->options.group_commit_wait;
  // Segments double as IPC files when generations may link them; dictionary columns are
  // canonicalized for that (a dictionary nested in another column is not).
  if (impl->options.link_wal_segments && !DictionaryCanon::HasNestedDictionary(*impl->schema)) {
    wal_options.file_schema = impl->schema;
    impl->canon = std::make_unique<DictionaryCanon>(*impl->schema);
  }
  impl->wal_files = wal_options.file_schema != nullptr;
  Impl* raw = impl.get();
  wal_options.check_fence = [raw] { return raw->CheckFence(); };
  // Segment (epoch, 0) exists before the replay publishes replay_after = (epoch, 0, 0), so a
  // replay position at a segment's start always names a segment that was created: its
  // absence is evidence of outside deletion (CheckWalSegmentsComplete).
  STRATA_ASSIGN_OR_RETURN(impl->wal, WalWriter::Open(impl->store, impl->prefix, impl->shard,
                                                     impl->epoch, 0, std::move(wal_options)));
  STRATA_RETURN_IF_ERROR(impl->Replay(claimed));
  impl->flusher = std::thread([raw] { raw->FlusherLoop(); });
  // Linked generations an earlier writer published and did not get to recode.
  for (const pb::Generation& entry : claimed.generations()) {
    if (entry.linked()) impl->QueueRecode(entry.generation());
  }
  return std::shared_ptr<ShardWriter>(new ShardWriter(std::move(impl)));
}

ShardWriter::ShardWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ShardWriter::~ShardWriter() {
  if (impl_ != nullptr) impl_->Close(/*seal=*/true).IgnoreError();
}

Status ShardWriter::Put(const std::vector<RecordBatch>& batches) {
  Impl& d = *impl_;
  STRATA_RETURN_IF_ERROR(d.Enter());
  struct LeaveOnExit {
    Impl& d;
    ~LeaveOnExit() { d.Leave(); }
  } leave{d};
  // Validate everything before anything reaches the WAL.
  std::vector<RecordBatch> rows;
  for (size_t i = 0; i < batches.size(); ++i) {
    const RecordBatch& batch = batches[i];
    if (batch.schema() == nullptr || !batch.schema()->Equals(*d.schema, false)) {
      return Status::InvalidArgument(
          "put: batch " + std::to_string(i) + " does not have the store schema (got " +
          (batch.schema() ? batch.schema()->ToString() : std::string("none")) + ", expected " +
          d.schema->ToString() + ")");
    }
    if (batch.num_rows() == 0) continue;
    STRATA_RETURN_IF_ERROR(EncodeKeys(batch.column(d.key_column), d.key_name)
                               .status()
                               .WithContext("put: batch " + std::to_string(i)));
    STRATA_ASSIGN_OR_RETURN(RecordBatch aligned, d.WithStoreSchema(batch));
    rows.push_back(std::move(aligned));
  }
  if (rows.empty()) return Status::OK();
  if (d.canon != nullptr && !d.canon->empty()) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::vector<RecordBatch>> canonical,
                            d.canon->Apply(rows));
    if (canonical) {
      rows = std::move(*canonical);
    } else {
      // A dictionary outgrew its index type: this and later segments cannot be files.
      d.wal->StopFileSegments();
    }
  }
  STRATA_ASSIGN_OR_RETURN(Buffer payload, SerializeStream(d.schema, rows));
  return d.AppendDurable(WalRecordKind::kRows, payload, rows, false);
}

Status ShardWriter::PutTombstones(const Array& keys) {
  Impl& d = *impl_;
  STRATA_RETURN_IF_ERROR(d.Enter());
  struct LeaveOnExit {
    Impl& d;
    ~LeaveOnExit() { d.Leave(); }
  } leave{d};
  if (!keys.is_valid_handle()) return Status::InvalidArgument("put tombstones: no key array");
  STRATA_RETURN_IF_ERROR(d.CheckKeys(keys).WithContext("put tombstones"));
  if (keys.length() == 0) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(RecordBatch key_batch,
                          RecordBatch::Make(d.key_schema, keys.length(), {keys}));
  STRATA_ASSIGN_OR_RETURN(Buffer payload, SerializeStream(d.key_schema, {key_batch}));
  STRATA_ASSIGN_OR_RETURN(RecordBatch rows, d.TombstoneBatch(keys));
  return d.AppendDurable(WalRecordKind::kTombstones, payload, {rows}, true);
}

Result<SealOutcome> ShardWriter::Seal(bool wait) {
  Impl& d = *impl_;
  {
    MutexLock lock(d.mu);
    if (d.closing || d.closed) return Status::InvalidArgument("writer closed");
    if (d.fenced) return SealOutcome::kFenced;
    ++d.inflight;
  }
  struct LeaveOnExit {
    Impl& d;
    ~LeaveOnExit() { d.Leave(); }
  } leave{d};
  return d.SealInternal(wait);
}

void ShardWriter::WaitForRecodes() const {
  const Impl& d = *impl_;
  MutexLock lock(d.recode_mu);
  const uint64_t target = d.recodes_queued_total;
  while (!d.recode_stop && d.recodes_done_total < target) d.recode_cv.Wait(d.recode_mu);
}

Status ShardWriter::Close() { return impl_->Close(/*seal=*/true); }
Status ShardWriter::CloseWithoutSeal() { return impl_->Close(/*seal=*/false); }

uint64_t ShardWriter::epoch() const { return impl_->epoch; }
const Uuid& ShardWriter::shard() const { return impl_->shard; }
bool ShardWriter::fenced() const { return impl_->fenced; }

ShardWriterStats ShardWriter::stats() const {
  const Impl& d = *impl_;
  ShardWriterStats s;
  s.epoch = d.epoch;
  s.replayed_records = d.replayed_records;
  {
    MutexLock recode_lock(d.recode_mu);
    s.generations_recoded = d.generations_recoded;
    s.recodes_queued = static_cast<int64_t>(d.recode_queue.size()) + (d.recode_running ? 1 : 0);
    s.recode_waiting_for_quiet = d.recode_waiting;
  }
  MutexLock lock(d.mu);
  s.active_rows = d.active->rows();
  s.unflushed_rows = s.active_rows;
  for (const auto& m : d.sealed) s.unflushed_rows += m->rows();
  s.unflushed_bytes = d.UnflushedBytesLocked();
  s.generations_published = d.generations_published;
  return s;
}

std::vector<std::shared_ptr<const MemTableSnapshot>> ShardWriter::MemTables() const {
  const Impl& d = *impl_;
  std::vector<std::shared_ptr<const MemTableSnapshot>> out;
  MutexLock lock(d.mu);
  if (!d.active->empty()) out.push_back(d.active->Snapshot());
  for (auto it = d.sealed.rbegin(); it != d.sealed.rend(); ++it) out.push_back((*it)->Snapshot());
  return out;
}

}  // namespace strata::lsm
