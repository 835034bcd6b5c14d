// The shard manifest chain: versions 1, 2, ... of one shard's manifest, each an immutable
// object created with PutIfAbsent (layout.h keys, envelope kind "SHRD"). The chain is
// gap-free: version N+1 is always built from version N (docs/format/lsm.md §3).
//
// Epochs: Claim() makes a new writer the shard's owner by writing a version with
// writer_epoch = stored + 1. A writer may change the manifest only while its epoch equals
// the stored one (Update checks it against the version it builds on); an older epoch gets
// Status::Fenced. A merge never claims: it drains with the epoch it read (Drain).
//
// Latest-version discovery and cleanup: the chain is an io/version_chain.h chain. A reader
// starts at the hint (advisory, overwritten best effort after each successful write) and
// Heads versions forward; it lists the chain when the hint is missing or names a version
// that is gone, or when it is far behind. A store with retained versions set (the shard
// writer's) deletes all but the newest few versions after each successful write, oldest
// first; a write whose base version is gone by the time its put-if-absent succeeded may have
// landed in a deleted slot and counts as a lost race.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/version_chain.h"
#include "lsm/lsm.pb.h"
#include "strata/object_store.h"
#include "strata/status.h"
#include "util/clock.h"
#include "util/uuid.h"

namespace strata::lsm {

std::string EncodeShardManifest(const pb::ShardManifest& manifest);
// Corruption naming `what` for a damaged object or a version/shard that disagrees with
// `expected_version` / `expected_shard`.
Result<pb::ShardManifest> DecodeShardManifest(std::string_view bytes, std::string_view what,
                                              uint64_t expected_version,
                                              const Uuid& expected_shard);

class ShardManifestStore {
 public:
  ShardManifestStore(std::shared_ptr<ObjectStore> store, std::string store_prefix, Uuid shard,
                     Clock* clock = SystemClock(), RandomSource* random = SystemRandom());

  const Uuid& shard() const { return shard_; }

  // After each successful write of version V, delete versions below V - count + 1 (keep the
  // newest `count`). 0, the default, keeps every version.
  void set_retained_versions(uint64_t count) { retained_versions_ = count; }

  // The newest version: the one function every reader of a shard's state uses (reads,
  // observations, merges, the writer), so that damage is reported the same way everywhere:
  // Corruption naming the key. NotFound when the shard has no manifest; Unavailable
  // (retryable) when cleanup kept deleting the version it found before it could read it.
  Result<pb::ShardManifest> ReadLatest() const;
  // Whether `version` is still the newest version (io::IsLatestVersion): the re-check of a
  // manifest a reader cached, without reading or decoding it again.
  Result<bool> IsLatest(uint64_t version) const;
  // A change watch on the chain (io::WatchVersionChain), vouching for IsLatest's answers.
  Result<std::unique_ptr<ChangeWatch>> Watch() const;
  // Every version the chain holds, ascending (a listing; for verification).
  Result<std::vector<uint64_t>> ListVersions() const;
  // The version the latest-version hint names; 0 when it is missing or unreadable.
  uint64_t HintedVersion() const;
  // Version `version`, decoded and checked as ReadLatest checks the newest: Corruption
  // naming the key when damaged, NotFound when it does not exist.
  Result<pb::ShardManifest> ReadVersion(uint64_t version) const;
  // Version 1 ({epoch 0, current_generation 1}) if the shard has none, and the shard's
  // registry object; returns the latest manifest. Concurrent initialisers all succeed.
  Result<pb::ShardManifest> Initialize();
  // Claims the shard for a new writer: initialises if needed, then writes a version with
  // writer_epoch = stored + 1. When another claimer wins the same version, re-reads: if the
  // stored epoch is already >= the target, fails with Fenced (no epoch war); otherwise
  // retries (up to 16 times). Returns the manifest written.
  Result<pb::ShardManifest> Claim();
  // Writes the successor of the latest version as `mutate` changes it (version, created
  // time and shard id are set here). Fenced when the latest writer_epoch != `epoch`.
  // On a lost race re-reads and re-applies `mutate` (up to 10 attempts, then Busy).
  // `mutate` may return an error to abandon the update (returned as is).
  Result<pb::ShardManifest> Update(uint64_t epoch, std::string_view operation,
                                   const std::function<Status(pb::ShardManifest&)>& mutate);
  // Removes exactly the listed generations (by number) from the latest version, keeping
  // every other field and generations sealed meanwhile — a relative edit. Uses `epoch` as
  // Update does (a merge passes the epoch it prepared with, so a new owner makes it fail
  // with Fenced). Returns the manifest written, or the latest unchanged when none of the
  // generations is listed any more (nothing written).
  // `removed_paths`, when set, receives the paths the written version no longer lists (a
  // recode may have replaced a path since the caller read it).
  Result<pb::ShardManifest> Drain(uint64_t epoch, const std::vector<uint64_t>& generations,
                                  std::vector<std::string>* removed_paths = nullptr);
  // Replaces the generation numbered `replacement.generation()` with `replacement` when the
  // latest version still lists it at `old_path` (operation "recode", docs/format/lsm.md
  // §6.4): a relative edit as Drain, with `epoch` as Update uses it. Returns false, writing
  // nothing, when that generation is no longer listed at `old_path` (a merge drained it, or
  // another recode replaced it).
  Result<bool> ReplaceGeneration(uint64_t epoch, const std::string& old_path,
                                 const pb::Generation& replacement);

 private:
  // Creates `next` (put-if-absent). True when it is now the successor of its base version
  // (then the hint is written and old versions cleaned up); false when the slot was taken,
  // or the base was gone by the time the put succeeded (the put may have recreated a
  // deleted version: it is removed again).
  Result<bool> Publish(const pb::ShardManifest& next);

  std::shared_ptr<ObjectStore> store_;
  std::string prefix_;
  Uuid shard_;
  Clock* clock_;
  RandomSource* random_;
  io::VersionChainLayout layout_;
  uint64_t retained_versions_ = 0;
};

// How many manifest versions a shard writer keeps (ShardManifestStore::set_retained_versions):
// enough that a reader who just read the hint usually still finds its start and a successor.
inline constexpr uint64_t kRetainedShardManifestVersions = 8;

// Every registered shard of the store at `store_prefix`, sorted.
Result<std::vector<Uuid>> ListShards(ObjectStore& store, std::string_view store_prefix);
// A change watch on the shard registry (ObjectStore::Watch): while a poll returns the count
// it returned before a ListShards, that listing is current.
Result<std::unique_ptr<ChangeWatch>> WatchShardRegistry(ObjectStore& store,
                                                        std::string_view store_prefix);

}  // namespace strata::lsm
