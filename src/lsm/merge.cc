// Merging a shard's pending generations into the base table (see merge.h): the merge memory
// budget and the two merge steps (prepare: read + de-duplicate; commit:
// one guarded base commit, then drain).
#include "lsm/merge.h"

#include <algorithm>
#include <map>
#include <unordered_set>
#include <utility>

#include "fmt/format.h"
#include "lsm/key.h"
#include "lsm/layout.h"
#include "lsm/lsm_read.h"
#include "strata/builder.h"

namespace strata::lsm {

namespace {

constexpr int64_t kPermitBytes = int64_t{1} << 20;

Result<uint64_t> ReadWatermark(const table::Table& base, const Uuid& shard) {
  KeyValueMetadata metadata = base.metadata();
  std::optional<std::string_view> value = metadata.Get(MergedWatermarkKey(shard));
  return ParseWatermark(value.has_value() ? *value : std::string_view());
}

// One generation read for a merge: its scanned batches (generation schema).
struct ReadGeneration {
  uint64_t number = 0;
  std::vector<RecordBatch> batches;
};

// The winning rows (newest generation first) of `generations`, aligned to the base schema,
// plus the tombstoned keys. `generations` is oldest first.
Status Deduplicate(const std::vector<ReadGeneration>& generations, const SchemaPtr& base_schema,
                   int base_key_column, PreparedMerge& out) {
  const std::string& key_name = base_schema->field(base_key_column)->name();
  // Newest first, a row is kept when its key is new to `seen` (the batched hash set of
  // scans: key bytes copied into shared blocks, no allocation per key).
  internal::KeySet seen;
  int64_t rows = 0;
  for (const ReadGeneration& gen : generations) {
    for (const RecordBatch& batch : gen.batches) rows += batch.num_rows();
  }
  seen.Reserve(static_cast<size_t>(std::min(rows, internal::KeySet::kMaxReserve)));
  std::vector<uint8_t> added;
  std::vector<RecordBatch> newest_first;
  for (auto gen = generations.rbegin(); gen != generations.rend(); ++gen) {
    for (const RecordBatch& batch : gen->batches) {
      const SchemaPtr& schema = batch.schema();
      int key_index = schema->GetFieldIndex(key_name);
      int tombstone_index = schema->GetFieldIndex(kTombstoneColumn);
      if (key_index < 0 || tombstone_index < 0) {
        return Status::Corruption(
            fmt::format("generation {} lacks the key column '{}' or the tombstone column '{}'",
                        gen->number, key_name, kTombstoneColumn));
      }
      const Array& keys = batch.column(key_index);
      const Array& tombstones = batch.column(tombstone_index);
      if (tombstones.type_id() != TypeId::kBool) {
        return Status::Corruption(fmt::format("generation {}: tombstone column has type {}",
                                              gen->number, tombstones.type()->ToString()));
      }
      STRATA_ASSIGN_OR_RETURN(internal::KeyColumnView key_view,
                              internal::KeyColumnView::Make(keys, key_name));
      seen.InsertAll(key_view, &added);
      std::vector<int64_t> keep;
      for (int64_t row = 0; row < batch.num_rows(); ++row) {
        if (!added[row]) continue;  // a newer version won
        if (tombstones.IsValid(row) && tombstones.BoolValue(row)) {
          STRATA_ASSIGN_OR_RETURN(expr::Scalar key, KeyScalar(keys, row));
          out.deleted_keys.push_back(std::move(key));
        } else {
          keep.push_back(row);
        }
      }
      if (keep.empty()) continue;
      std::vector<int> projection;
      for (int i = 0; i < schema->num_fields(); ++i) {
        if (i != tombstone_index) projection.push_back(i);
      }
      STRATA_ASSIGN_OR_RETURN(RecordBatch projected, batch.Project(projection));
      RecordBatch taken = projected;
      if (static_cast<int64_t>(keep.size()) != batch.num_rows()) {
        std::vector<Array> columns;
        columns.reserve(projected.num_columns());
        for (const Array& column : projected.columns()) {
          STRATA_ASSIGN_OR_RETURN(Array picked, Take(column, keep));
          columns.push_back(std::move(picked));
        }
        STRATA_ASSIGN_OR_RETURN(
            taken, RecordBatch::Make(projected.schema(), static_cast<int64_t>(keep.size()),
                                     std::move(columns)));
      }
      STRATA_ASSIGN_OR_RETURN(RecordBatch aligned, AlignBatchToSchema(taken, base_schema));
      out.bytes += aligned.BufferBytes();
      newest_first.push_back(std::move(aligned));
    }
  }
  // Oldest first, as the rows were written (the order does not change the result).
  out.rows.assign(std::make_move_iterator(newest_first.rbegin()),
                  std::make_move_iterator(newest_first.rend()));
  return Status::OK();
}

}  // namespace

// --- MergeBudget ------------------------------------------------------------------------

}  // namespace strata::lsm

namespace strata {

struct MergeBudget::State {
  Mutex mutex;
  CondVar released;         // signalled whenever permits are returned
  CondVar waiters_changed;  // signalled when a Reserve starts waiting
  int64_t free_permits STRATA_GUARDED_BY(mutex) = 0;
  int64_t reserved_bytes STRATA_GUARDED_BY(mutex) = 0;
  int waiters STRATA_GUARDED_BY(mutex) = 0;  // threads blocked in Reserve
  // Reserve is served in arrival order: each call draws a ticket and is granted only when
  // its ticket is `serving`, so small requests arriving behind a large one cannot overtake
  // it and starve it.
  uint64_t next_ticket STRATA_GUARDED_BY(mutex) = 0;
  uint64_t serving STRATA_GUARDED_BY(mutex) = 0;
};

MergeBudget::MergeBudget(int64_t limit_bytes)
    : limit_(std::max<int64_t>(limit_bytes, 1)),
      total_permits_((limit_ + lsm::kPermitBytes - 1) / lsm::kPermitBytes),
      state_(std::make_unique<State>()) {
  MutexLock lock(state_->mutex);
  state_->free_permits = total_permits_;
}

MergeBudget::~MergeBudget() = default;

int64_t MergeBudget::reserved_bytes() const {
  MutexLock lock(state_->mutex);
  return state_->reserved_bytes;
}

int64_t MergeBudget::Permits(int64_t bytes) const {
  if (bytes <= 0) return 0;
  return std::min((bytes + lsm::kPermitBytes - 1) / lsm::kPermitBytes, total_permits_);
}

MergeBudget::Reservation MergeBudget::Reserve(int64_t bytes) {
  bytes = std::max<int64_t>(bytes, 0);
  int64_t permits = Permits(bytes);
  State& s = *state_;
  MutexLock lock(s.mutex);
  const uint64_t ticket = s.next_ticket++;
  if (ticket != s.serving || s.free_permits < permits) {
    ++s.waiters;
    s.waiters_changed.SignalAll();
    while (ticket != s.serving || s.free_permits < permits) s.released.Wait(s.mutex);
    --s.waiters;
  }
  ++s.serving;
  s.free_permits -= permits;
  s.reserved_bytes += bytes;
  // The next ticket in line may fit in what is left.
  if (s.waiters > 0) s.released.SignalAll();
  Reservation reservation;
  reservation.budget_ = this;
  reservation.permits_ = permits;
  reservation.bytes_ = bytes;
  return reservation;
}

void MergeBudget::WaitForWaiters(int count) {
  State& s = *state_;
  MutexLock lock(s.mutex);
  while (s.waiters < count) s.waiters_changed.Wait(s.mutex);
}

void MergeBudget::Release(int64_t permits, int64_t bytes) {
  State& s = *state_;
  {
    MutexLock lock(s.mutex);
    s.free_permits += permits;
    s.reserved_bytes -= bytes;
  }
  s.released.SignalAll();
}

MergeBudget::Reservation::Reservation(Reservation&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)),
      permits_(std::exchange(other.permits_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

MergeBudget::Reservation& MergeBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    if (budget_ != nullptr) budget_->Release(permits_, bytes_);
    budget_ = std::exchange(other.budget_, nullptr);
    permits_ = std::exchange(other.permits_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

MergeBudget::Reservation::~Reservation() {
  if (budget_ != nullptr) budget_->Release(permits_, bytes_);
}

bool MergeBudget::Reservation::TryGrowTo(int64_t bytes) {
  if (bytes <= bytes_) return true;  // never shrinks; already large enough
  if (budget_ == nullptr) return false;
  State& s = *budget_->state_;
  MutexLock lock(s.mutex);
  int64_t needed = budget_->Permits(bytes) - permits_;
  if (needed > s.free_permits) return false;
  if (needed > 0) {
    s.free_permits -= needed;
    permits_ += needed;
  }
  s.reserved_bytes += bytes - bytes_;
  bytes_ = bytes;
  return true;
}

}  // namespace strata

namespace strata::lsm {

// --- PrepareMerge -----------------------------------------------------------------------

namespace {

// One attempt of PrepareMerge. `lost` is set when a generation the manifest listed was gone
// by the time it was read: drained and deleted by a concurrent merge, or recoded (§6.4) and
// its old directory deleted — then the caller reads the manifest again.
Result<std::optional<PreparedMerge>> TryPrepareMerge(const std::shared_ptr<table::Table>& base,
                                                     ShardManifestStore& manifests,
                                                     GenerationCache& generations,
                                                     const MergeOptions& options,
                                                     int min_generations, bool* lost) {
  const Uuid& shard = manifests.shard();
  STRATA_RETURN_IF_ERROR(base->Refresh());
  std::optional<int> key_column = base->primary_key_column();
  if (!key_column.has_value()) {
    return Status::InvalidArgument("merge needs a base table with a primary key");
  }
  SchemaPtr base_schema = base->schema();
  STRATA_ASSIGN_OR_RETURN(uint64_t watermark, ReadWatermark(*base, shard));

  Result<pb::ShardManifest> latest = manifests.ReadLatest();
  if (!latest.ok()) {
    if (latest.status().IsNotFound()) return std::optional<PreparedMerge>();
    return latest.status();
  }
  const pb::ShardManifest& manifest = *latest;
  std::vector<pb::Generation> pending(manifest.generations().begin(), manifest.generations().end());
  std::stable_sort(pending.begin(), pending.end(),
                   [](const pb::Generation& a, const pb::Generation& b) {
                     return a.generation() < b.generation();
                   });
  if (static_cast<int64_t>(pending.size()) < std::max(min_generations, 1)) {
    return std::optional<PreparedMerge>();
  }

  PreparedMerge prepared;
  prepared.shard = shard;
  prepared.epoch = manifest.writer_epoch();
  prepared.watermark_before = watermark;
  if (options.budget != nullptr) {
    int64_t up_front = options.max_bytes > 0
                           ? std::min(options.max_bytes, options.budget->limit_bytes())
                           : options.budget->limit_bytes();
    {
      ScopedTimer wait(options.budget_wait_seconds);
      prepared.reservation = options.budget->Reserve(up_front);
    }
  }

  std::vector<ReadGeneration> read;
  int64_t read_bytes = 0;  // of the scanned generations held in memory
  for (const pb::Generation& entry : pending) {
    if (options.max_generations > 0 &&
        static_cast<int>(prepared.generations.size()) >= options.max_generations) {
      break;
    }
    if (options.max_bytes > 0 && read_bytes >= options.max_bytes) break;
    if (entry.generation() <= watermark) {
      // A crashed merge already committed it: drain it, read nothing.
      prepared.generations.push_back(entry);
      continue;
    }
    Result<std::shared_ptr<Generation>> opened = generations.Get(shard, entry);
    if (!opened.ok()) {
      if (opened.status().IsNotFound()) {
        *lost = true;
        return std::optional<PreparedMerge>();
      }
      return opened.status();
    }
    ReadGeneration gen;
    gen.number = entry.generation();
    Result<std::unique_ptr<table::BatchIterator>> it = (*opened)->table()->Scan();
    Result<std::vector<RecordBatch>> batches =
        it.ok() ? (*it)->ToBatches() : Result<std::vector<RecordBatch>>(it.status());
    if (!batches.ok()) {
      if (batches.status().IsNotFound()) {
        *lost = true;
        return std::optional<PreparedMerge>();
      }
      return batches.status();
    }
    gen.batches = std::move(*batches);
    int64_t gen_bytes = 0;
    for (const RecordBatch& batch : gen.batches) gen_bytes += batch.BufferBytes();
    if (options.budget != nullptr && !prepared.reservation.TryGrowTo(read_bytes + gen_bytes)) {
      if (read.empty()) {
        return Status::Busy(fmt::format(
            "merge memory budget busy while reading the first generation; retry (shard {}, "
            "generation {}, {} bytes, {} of {} bytes reserved)",
            shard.ToString(), entry.generation(), gen_bytes, options.budget->reserved_bytes(),
            options.budget->limit_bytes()));
      }
      break;  // the next pass takes it
    }
    read_bytes += gen_bytes;
    prepared.generations.push_back(entry);
    read.push_back(std::move(gen));
  }
  if (prepared.generations.empty()) return std::optional<PreparedMerge>();
  for (const pb::Generation& entry : prepared.generations) {
    prepared.max_generation = std::max(prepared.max_generation, entry.generation());
  }
  STRATA_RETURN_IF_ERROR(Deduplicate(read, base_schema, *key_column, prepared));
  return std::optional<PreparedMerge>(std::move(prepared));
}

}  // namespace

Result<std::optional<PreparedMerge>> PrepareMerge(const std::shared_ptr<table::Table>& base,
                                                  ShardManifestStore& manifests,
                                                  GenerationCache& generations,
                                                  const MergeOptions& options,
                                                  int min_generations) {
  // A generation lost between the manifest read and its own read was drained (the next
  // attempt finds it gone) or recoded (the next attempt reads it at its new path).
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    bool lost = false;
    Result<std::optional<PreparedMerge>> prepared =
        TryPrepareMerge(base, manifests, generations, options, min_generations, &lost);
    if (!lost || attempt == kAttempts) return prepared;
  }
}

// --- CommitMerge ------------------------------------------------------------------------

Result<MergeCommitResult> CommitMerge(
    const std::shared_ptr<table::Table>& base, ShardManifestStore& manifests,
    PreparedMerge prepared,
    const std::function<void(const Uuid& shard, std::vector<std::string> paths)>& delete_files) {
  MergeCommitResult result;
  const Uuid& shard = prepared.shard;
  STRATA_ASSIGN_OR_RETURN(pb::ShardManifest manifest, manifests.ReadLatest());
  std::unordered_set<uint64_t> listed;
  for (const pb::Generation& entry : manifest.generations()) listed.insert(entry.generation());
  int still_pending = 0;
  for (const pb::Generation& entry : prepared.generations) {
    if (listed.count(entry.generation()) > 0) ++still_pending;
  }
  if (still_pending == 0) return result;  // another merge drained them all

  const std::string watermark_key = MergedWatermarkKey(shard);
  STRATA_RETURN_IF_ERROR(base->Refresh());
  STRATA_ASSIGN_OR_RETURN(uint64_t watermark, ReadWatermark(*base, shard));
  if (prepared.max_generation > watermark) {
    table::UpsertOptions upsert;
    upsert.delete_keys = prepared.deleted_keys;
    upsert.metadata_updates.Set(watermark_key, std::to_string(prepared.max_generation));
    upsert.expected_metadata.Set(watermark_key, prepared.watermark_before == 0
                                                    ? std::string()
                                                    : std::to_string(prepared.watermark_before));
    Result<table::UpsertResult> committed = base->Upsert(prepared.rows, upsert);
    if (committed.ok()) {
      result.base_version = committed->version;
      result.rows_merged = committed->rows_appended;
      result.keys_deleted = static_cast<int64_t>(prepared.deleted_keys.size());
    } else if (committed.status().IsAborted()) {
      // The watermark moved since prepare: a concurrent merge committed first.
      STRATA_RETURN_IF_ERROR(base->Refresh());
      STRATA_ASSIGN_OR_RETURN(uint64_t now, ReadWatermark(*base, shard));
      if (now < prepared.max_generation) {
        return Status::Busy(fmt::format(
            "merge of shard {} up to generation {}: the base watermark moved from {} to {} "
            "meanwhile; retry",
            shard.ToString(), prepared.max_generation, prepared.watermark_before, now));
      }
      // Already merged by the other merge: just drain.
    } else {
      return committed.status();
    }
  }

  // From here on a failure leaves this call's base commit in place: report it beside the
  // commit instead of as a failed merge.
  std::vector<std::string> removed_paths;  // what the drain took out of the manifest
  Status drained = [&]() -> Status {
    // Count again right before the drain: a concurrent merge may have drained meanwhile.
    STRATA_ASSIGN_OR_RETURN(manifest, manifests.ReadLatest());
    listed.clear();
    for (const pb::Generation& entry : manifest.generations()) listed.insert(entry.generation());
    still_pending = 0;
    for (const pb::Generation& entry : prepared.generations) {
      if (listed.count(entry.generation()) > 0) ++still_pending;
    }
    if (still_pending == 0) return Status::OK();
    std::vector<uint64_t> numbers;
    numbers.reserve(prepared.generations.size());
    for (const pb::Generation& entry : prepared.generations) numbers.push_back(entry.generation());
    Result<pb::ShardManifest> written = manifests.Drain(prepared.epoch, numbers, &removed_paths);
    if (written.status().IsFenced()) {
      return Status::Fenced(fmt::format("merge writer epoch changed before drain (shard {}): {}",
                                        shard.ToString(), written.status().message()));
    }
    return written.status();
  }();
  if (!drained.ok()) {
    if (result.base_version == 0) return drained;
    result.drain_status = std::move(drained);
    return result;
  }
  if (still_pending == 0) return result;

  // The paths the drain removed: a generation recoded since the prepare is listed at its
  // new path (its old one is deleted by the recode).
  result.generations_reclaimed = static_cast<int>(removed_paths.size());
  if (delete_files && !removed_paths.empty()) delete_files(shard, std::move(removed_paths));
  return result;
}

// --- CommitPendingFold --------------------------------------------------------------------

Result<uint64_t> CommitPendingFold(const std::shared_ptr<table::Table>& base,
                                   const ReadView& view) {
  if (!view.view.memtables.empty()) {
    return Status::Internal("a pending fold reads generations only, not memtables");
  }
  if (view.view.generations.empty()) return view.base_version;
  std::optional<int> key_column = base->primary_key_column();
  if (!key_column.has_value()) {
    return Status::InvalidArgument("folding pending generations needs a base table with a key");
  }
  // Deduplicate takes the generations oldest first; the view lists them newest first.
  std::vector<ReadGeneration> read;
  std::map<Uuid, uint64_t> highest;  // shard -> highest generation folded
  for (auto gen = view.view.generations.rbegin(); gen != view.view.generations.rend(); ++gen) {
    ReadGeneration one;
    one.number = (*gen)->entry().generation();
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it, (*gen)->table()->Scan());
    STRATA_ASSIGN_OR_RETURN(one.batches, it->ToBatches());
    read.push_back(std::move(one));
    uint64_t& top = highest[(*gen)->shard()];
    top = std::max(top, (*gen)->entry().generation());
  }
  PreparedMerge folded;
  STRATA_RETURN_IF_ERROR(Deduplicate(read, base->schema(), *key_column, folded));
  table::UpsertOptions upsert;
  upsert.delete_keys = std::move(folded.deleted_keys);
  for (const auto& [shard, generation] : highest) {
    const uint64_t before = WatermarkOf(view.watermarks, shard);
    upsert.metadata_updates.Set(MergedWatermarkKey(shard), std::to_string(generation));
    upsert.expected_metadata.Set(MergedWatermarkKey(shard),
                                 before == 0 ? std::string() : std::to_string(before));
  }
  STRATA_RETURN_IF_ERROR(base->Refresh());
  STRATA_ASSIGN_OR_RETURN(table::UpsertResult committed, base->Upsert(folded.rows, upsert));
  return committed.version;
}

}  // namespace strata::lsm
