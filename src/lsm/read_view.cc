// Building read views and re-checking them (see read_view.h).
#include "lsm/read_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <optional>

#include "io/watch_batch.h"
#include "lsm/shard_manifest.h"
#include "util/log.h"

namespace strata::lsm {
namespace {

// The latest manifest of `shard`; nullopt for a registered shard without one yet.
Result<std::optional<pb::ShardManifest>> LatestManifest(const std::shared_ptr<ObjectStore>& store,
                                                        const std::string& prefix,
                                                        const Uuid& shard) {
  Result<pb::ShardManifest> manifest = ShardManifestStore(store, prefix, shard).ReadLatest();
  if (manifest.ok()) return std::optional<pb::ShardManifest>(std::move(*manifest));
  if (manifest.status().IsNotFound()) return std::optional<pb::ShardManifest>();
  return manifest.status();
}

// Whether `manifest` lists every generation numbered above `watermark` that its shard has
// published (numbers are consecutive: 1 up to current_generation - 1), given that it lists
// `above` of them. False when the numbers do not add up that way (a manifest that restarted
// below the watermark, say): the caller then re-checks the base chain.
bool CoversAboveWatermark(const pb::ShardManifest& manifest, uint64_t watermark, uint64_t above) {
  const uint64_t current = manifest.current_generation();
  if (current == 0 || current - 1 < watermark) return false;
  return above == current - 1 - watermark;
}

}  // namespace

void SortNewestFirst(std::vector<std::shared_ptr<Generation>>& generations) {
  std::sort(generations.begin(), generations.end(), [](const auto& a, const auto& b) {
    const pb::Generation& x = a->entry();
    const pb::Generation& y = b->entry();
    if (x.sealed_at_micros() != y.sealed_at_micros()) {
      return x.sealed_at_micros() > y.sealed_at_micros();
    }
    if (x.generation() != y.generation()) return x.generation() > y.generation();
    return a->shard() > b->shard();
  });
}

ReadViewSource::ReadViewSource(std::shared_ptr<ObjectStore> store, std::string prefix,
                               std::shared_ptr<table::Table> base, int key_column,
                               GenerationCache* generations, PendingGenerationLimits limits)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      base_(std::move(base)),
      key_column_(key_column),
      generations_(generations),
      limits_(std::move(limits)) {}

Result<ReadView> ReadViewSource::Build(ReadScope scope, const std::shared_ptr<table::Table>& pinned,
                                       const MemTableSource& memtables) const {
  ReadView out;
  out.view.key_column = key_column_;
  if (pinned != nullptr) {
    out.view.base = pinned;
    out.view.schema = pinned->schema();
    out.pinned = true;
    out.base_version = pinned->version();
    return out;
  }
  // The base, the shard registry and every manifest as of one moment, looked at once. The
  // consistency check after Build looks afresh, outside this batch.
  const io::ChangeWatchBatch batch;
  // The view's own handle on this version: another thread's Refresh of base_ (a merge
  // committing through this store) must not move a read that is under way.
  std::shared_ptr<table::Table> base;
  STRATA_RETURN_IF_ERROR(LatestBase(&base, &out.watermarks));
  out.base_version = base->version();
  out.view.schema = base->schema();
  if (scope != ReadScope::kPending) out.view.base = std::move(base);
  if (scope == ReadScope::kBase) return out;

  if (memtables) out.view.memtables = memtables();
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const std::vector<Uuid>> shards, Shards());
  int64_t total = 0;
  bool covers = true;
  std::vector<std::shared_ptr<Generation>> gens;
  for (const Uuid& shard : *shards) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const pb::ShardManifest> manifest,
                            LatestShardManifest(shard));
    if (manifest == nullptr) continue;
    const int64_t pending = manifest->generations_size();
    if (limits_.pending_per_shard != nullptr) {
      limits_.pending_per_shard->Observe(static_cast<double>(pending));
    }
    if (limits_.max > 0 && pending > limits_.max) {
      if (limits_.reads_refused != nullptr) limits_.reads_refused->Increment();
      return Status::Unavailable(fmt::format(
          "{}: shard {} has {} generations pending merge (cap {}); retry after the merge "
          "catches up",
          kPendingGenerationsExceededPrefix, shard.ToString(), pending, limits_.max));
    }
    if (limits_.warn > 0 && pending >= limits_.warn) {
      LogWarning("store {}: shard {} has {} generations pending merge (warning at {})",
                 limits_.store_label, shard.ToString(), pending, limits_.warn);
    }
    total += pending;
    const uint64_t watermark = WatermarkOf(out.watermarks, shard);
    uint64_t above = 0;
    for (const pb::Generation& entry : manifest->generations()) {
      if (entry.generation() <= watermark) continue;
      ++above;
      STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Generation> generation,
                              generations_->Get(shard, entry));
      gens.push_back(std::move(generation));
    }
    covers = covers && CoversAboveWatermark(*manifest, watermark, above);
  }
  if (limits_.max > 0 && total > limits_.max) {
    if (limits_.reads_refused != nullptr) limits_.reads_refused->Increment();
    return Status::Unavailable(fmt::format(
        "{}: {} generations pending merge across {} shards (cap {}); retry after the merge "
        "catches up",
        kPendingGenerationsExceededPrefix, total, shards->size(), limits_.max));
  }
  SortNewestFirst(gens);
  out.view.generations = std::move(gens);
  out.covers_pending = covers;
  return out;
}

template <typename T>
std::optional<ReadViewSource::Polled> ReadViewSource::Poll(Watched<T>& slot,
                                                           const MakeWatch& make) const {
  std::shared_ptr<ChangeWatch> watch;
  {
    MutexLock lock(cache_mutex_);
    if (slot.unsupported) return std::nullopt;
    watch = slot.watch;
  }
  if (watch == nullptr) {
    Result<std::unique_ptr<ChangeWatch>> made = make();
    MutexLock lock(cache_mutex_);
    if (!made.ok()) {
      // NotFound (the directory is not there yet) may pass: try again on the next view.
      if (made.status().IsNotSupported()) slot.unsupported = true;
      return std::nullopt;
    }
    if (slot.watch == nullptr) {
      slot.watch = std::move(*made);
      slot.count.reset();
    }
    watch = slot.watch;
  }
  Result<uint64_t> count = watch->Poll();
  if (!count.ok()) {  // the watch ended: a new one on the next view
    MutexLock lock(cache_mutex_);
    if (slot.watch == watch) {
      slot.watch.reset();
      slot.count.reset();
    }
    return std::nullopt;
  }
  return Polled{std::move(watch), *count};
}

template <typename T>
bool ReadViewSource::Vouched(const Watched<T>& slot, const std::optional<Polled>& polled) const {
  return slot.answer != nullptr && polled.has_value() && slot.watch == polled->watch &&
         slot.count == polled->count;
}

template <typename T, typename Newer>
void ReadViewSource::Store(Watched<T>& slot, T answer, const std::optional<Polled>& polled,
                           Newer newer) const {
  const bool counted = polled.has_value() && slot.watch == polled->watch;
  // Concurrent views may finish in any order: keep the answer confirmed after the latest
  // poll, or else the newest. Either still stands while its count does.
  if (slot.answer != nullptr &&
      (!newer(answer, slot.answer) ||
       (counted && slot.count.has_value() && *slot.count > polled->count))) {
    if (!newer(slot.answer, answer) && counted &&
        (!slot.count.has_value() || *slot.count < polled->count)) {
      slot.count = polled->count;  // the same answer, confirmed again
    }
    return;
  }
  slot.answer = std::move(answer);
  slot.count = counted ? std::optional<uint64_t>(polled->count) : std::nullopt;
}

std::optional<ReadViewSource::Polled> ReadViewSource::PollBase() const {
  Watched<std::shared_ptr<table::Table>>* slot = nullptr;
  {
    MutexLock lock(cache_mutex_);
    slot = &cache_.base;
  }
  return Poll(*slot, [&] { return base_->WatchVersions(); });
}

Status ReadViewSource::LatestBase(std::shared_ptr<table::Table>* base,
                                  Watermarks* watermarks) const {
  const std::optional<Polled> polled = PollBase();
  std::shared_ptr<table::Table> cached;
  {
    MutexLock lock(cache_mutex_);
    cached = cache_.base.answer;
    *watermarks = cache_.watermarks;
    if (Vouched(cache_.base, polled)) {
      *base = std::move(cached);
      return Status::OK();
    }
  }
  const auto newer = [](const std::shared_ptr<table::Table>& a,
                        const std::shared_ptr<table::Table>& b) {
    return a->version() > b->version();
  };
  if (cached != nullptr) {
    STRATA_ASSIGN_OR_RETURN(bool latest, base_->IsLatestVersion(cached->version()));
    if (latest) {
      MutexLock lock(cache_mutex_);
      Store(cache_.base, cached, polled, newer);
      *base = std::move(cached);
      return Status::OK();
    }
  }
  STRATA_RETURN_IF_ERROR(base_->Refresh());
  std::shared_ptr<table::Table> pinned = base_->Pin();
  STRATA_ASSIGN_OR_RETURN(*watermarks, ReadWatermarks(pinned->metadata()));
  {
    MutexLock lock(cache_mutex_);
    Store(cache_.base, pinned, polled, newer);
    if (cache_.base.answer == pinned) cache_.watermarks = *watermarks;
  }
  *base = std::move(pinned);
  return Status::OK();
}

Result<std::shared_ptr<const std::vector<Uuid>>> ReadViewSource::Shards() const {
  Watched<std::shared_ptr<const std::vector<Uuid>>>* slot = nullptr;
  {
    MutexLock lock(cache_mutex_);
    slot = &cache_.shards;
  }
  const std::optional<Polled> polled =
      Poll(*slot, [&] { return WatchShardRegistry(*store_, prefix_); });
  {
    MutexLock lock(cache_mutex_);
    if (Vouched(cache_.shards, polled)) return cache_.shards.answer;
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<Uuid> listed, ListShards(*store_, prefix_));
  auto shards = std::make_shared<const std::vector<Uuid>>(std::move(listed));
  MutexLock lock(cache_mutex_);
  // Listings carry no order: the one confirmed last stands.
  Store(cache_.shards, shards, polled, [](const auto&, const auto&) { return true; });
  // Forget shards no longer registered, with their watches.
  std::erase_if(cache_.manifests, [&](const auto& entry) {
    return !std::binary_search(shards->begin(), shards->end(), entry.first);
  });
  return shards;
}

Result<std::shared_ptr<const pb::ShardManifest>> ReadViewSource::LatestShardManifest(
    const Uuid& shard) const {
  std::shared_ptr<Watched<std::shared_ptr<const pb::ShardManifest>>> slot;
  {
    MutexLock lock(cache_mutex_);
    std::shared_ptr<Watched<std::shared_ptr<const pb::ShardManifest>>>& entry =
        cache_.manifests[shard];
    if (entry == nullptr)
      entry = std::make_shared<Watched<std::shared_ptr<const pb::ShardManifest>>>();
    slot = entry;
  }
  const std::optional<Polled> polled =
      Poll(*slot, [&] { return ShardManifestStore(store_, prefix_, shard).Watch(); });
  std::shared_ptr<const pb::ShardManifest> cached;
  {
    MutexLock lock(cache_mutex_);
    if (Vouched(*slot, polled)) return slot->answer;
    cached = slot->answer;
  }
  const auto newer = [](const std::shared_ptr<const pb::ShardManifest>& a,
                        const std::shared_ptr<const pb::ShardManifest>& b) {
    return a->version() > b->version();
  };
  if (cached != nullptr) {
    STRATA_ASSIGN_OR_RETURN(bool latest,
                            ShardManifestStore(store_, prefix_, shard).IsLatest(cached->version()));
    if (latest) {
      MutexLock lock(cache_mutex_);
      Store(*slot, cached, polled, newer);
      return cached;
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<pb::ShardManifest> read,
                          LatestManifest(store_, prefix_, shard));
  if (!read.has_value()) return std::shared_ptr<const pb::ShardManifest>();
  auto manifest = std::make_shared<const pb::ShardManifest>(std::move(*read));
  MutexLock lock(cache_mutex_);
  Store(*slot, manifest, polled, newer);
  return manifest;
}

Result<bool> ReadViewSource::StillConsistent(const ReadView& view) const {
  if (view.pinned || view.covers_pending) return true;
  assert(io::ChangeWatchBatch::Current() == 0);  // the poll below must look afresh
  // The common case: nothing was committed since the view's version, as the base chain's
  // watch tells without a request, or else two probes.
  const std::optional<Polled> polled = PollBase();
  {
    MutexLock lock(cache_mutex_);
    if (Vouched(cache_.base, polled) && cache_.base.answer->version() == view.base_version) {
      return true;
    }
  }
  STRATA_ASSIGN_OR_RETURN(bool unchanged, base_->IsLatestVersion(view.base_version));
  if (unchanged) return true;
  STRATA_ASSIGN_OR_RETURN(uint64_t latest, base_->LatestVersion());
  if (latest == view.base_version) return true;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> at, base_->Checkout(latest));
  STRATA_ASSIGN_OR_RETURN(Watermarks now, ReadWatermarks(at->metadata()));
  return now == view.watermarks;
}

Status ReadViewSource::RetriesExhausted(const Status& last) const {
  if (!last.ok()) return last;
  return Status::Busy(fmt::format(
      "store changed during read ({} attempts: merges kept committing); retry the request",
      kReadAttempts));
}

Result<PendingSummary> ReadViewSource::SummarizePending(const Watermarks& watermarks) const {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const std::vector<Uuid>> shards, Shards());
  PendingSummary out;
  for (const Uuid& shard : *shards) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const pb::ShardManifest> manifest,
                            LatestShardManifest(shard));
    if (manifest == nullptr) continue;
    const uint64_t watermark = WatermarkOf(watermarks, shard);
    out.generations += manifest->generations_size();
    for (const pb::Generation& g : manifest->generations()) {
      if (g.generation() > watermark) out.rows += g.rows() - g.tombstones();
    }
  }
  return out;
}

}  // namespace strata::lsm
