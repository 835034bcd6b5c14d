// The shard manifest chain (shard_manifest.h): immutable versions created with
// PutIfAbsent, the writer epoch that fences stale owners, latest-version discovery
// (io/version_chain.h: hint, bounded forward probe, listing) and cleanup of old versions.
//
// Invariants:
// - Version N+1 is only ever built from a decoded version N, so the chain has no gaps above
//   its oldest surviving version and every successful write saw everything before it.
// - writer_epoch changes only in Claim, and only to (epoch of the version it builds on) + 1;
//   of two claimers building on the same version exactly one wins the PutIfAbsent, so no
//   two writers ever hold the same epoch.
// - Versions are deleted oldest first and only ever below the newest retained ones. A write
//   counts only if its base still exists after its put succeeded: cleanup deletes a version
//   after its predecessor, so an existing base proves the slot had never been deleted (a put
//   into a deleted slot would otherwise resurrect a version behind the chain).
// - The hint is advisory: written after successful writes, never trusted beyond "start
//   probing here". A hint that names a missing version makes the reader list the chain.
#include "lsm/shard_manifest.h"

#include <algorithm>
#include <chrono>

#include "fmt/format.h"
#include "io/version_chain.h"
#include "lsm/layout.h"
#include "util/envelope.h"

namespace strata::lsm {
namespace {

constexpr int kClaimAttempts = 16;
constexpr int kUpdateAttempts = 10;

std::string ShardIdBytes(const Uuid& shard) {
  return std::string(reinterpret_cast<const char*>(shard.bytes().data()), Uuid::kSize);
}

// Backoff between update attempts: 100us .. 12.8ms, full jitter.
constexpr io::BackoffPolicy kUpdateBackoff{std::chrono::microseconds(100),
                                           std::chrono::microseconds(12'800)};
// ReadLatest attempts when the version it found is deleted before it is read (cleanup moved
// on by kRetainedShardManifestVersions versions in between).
constexpr int kReadAttempts = 4;

io::VersionChainLayout ChainLayout(const std::string& prefix, const Uuid& shard) {
  io::VersionChainLayout layout;
  layout.hint_key = ShardLatestHintKey(prefix, shard);
  layout.versions_dir = ShardManifestDir(prefix, shard);
  layout.version_key = [prefix, shard](uint64_t version) {
    return ShardManifestKey(prefix, shard, version);
  };
  layout.parse_version_key = [dir = layout.versions_dir](std::string_view key) {
    if (key.substr(0, dir.size()) != dir) return std::optional<uint64_t>();
    return ParseShardManifestName(key.substr(dir.size()));
  };
  return layout;
}

}  // namespace

std::string EncodeShardManifest(const pb::ShardManifest& manifest) {
  std::string payload;
  manifest.SerializeToString(&payload);
  return EncodeEnvelope(kShardManifestKind, payload);
}

Result<pb::ShardManifest> DecodeShardManifest(std::string_view bytes, std::string_view what,
                                              uint64_t expected_version,
                                              const Uuid& expected_shard) {
  STRATA_ASSIGN_OR_RETURN(std::string_view payload,
                          DecodeEnvelope(kShardManifestKind, bytes, what));
  pb::ShardManifest manifest;
  if (!manifest.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return Status::Corruption(fmt::format("{}: shard manifest protobuf does not parse", what));
  }
  if (manifest.version() != expected_version) {
    return Status::Corruption(fmt::format("{}: holds shard manifest version {}, expected {}", what,
                                          manifest.version(), expected_version));
  }
  if (manifest.shard_id() != ShardIdBytes(expected_shard)) {
    std::string shown = "<not a uuid>";
    if (manifest.shard_id().size() == Uuid::kSize) {
      Uuid::Bytes raw{};
      std::copy(manifest.shard_id().begin(), manifest.shard_id().end(), raw.begin());
      shown = Uuid(raw).ToString();
    }
    return Status::Corruption(fmt::format("{}: belongs to shard {}, expected {}", what, shown,
                                          expected_shard.ToString()));
  }
  return manifest;
}

ShardManifestStore::ShardManifestStore(std::shared_ptr<ObjectStore> store, std::string store_prefix,
                                       Uuid shard, Clock* clock, RandomSource* random)
    : store_(std::move(store)),
      prefix_(std::move(store_prefix)),
      shard_(shard),
      clock_(clock),
      random_(random),
      layout_(ChainLayout(prefix_, shard_)) {}

Result<pb::ShardManifest> ShardManifestStore::ReadLatest() const {
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    STRATA_ASSIGN_OR_RETURN(uint64_t version, io::FindLatestVersion(*store_, layout_));
    if (version == 0) {
      return Status::NotFound(fmt::format("shard {} has no manifest under {}", shard_.ToString(),
                                          ShardDir(prefix_, shard_)));
    }
    Result<pb::ShardManifest> manifest = ReadVersion(version);
    if (manifest.ok() || !manifest.status().IsNotFound()) return manifest;
    // Deleted by cleanup after it was found: newer versions exist, look again.
  }
  return Status::Unavailable(fmt::format(
      "shard {}: the latest manifest version was deleted before it could be read, {} times",
      shard_.ToString(), kReadAttempts));
}

Result<bool> ShardManifestStore::IsLatest(uint64_t version) const {
  return io::IsLatestVersion(*store_, layout_, version);
}

Result<std::unique_ptr<ChangeWatch>> ShardManifestStore::Watch() const {
  return io::WatchVersionChain(*store_, layout_);
}

Result<std::vector<uint64_t>> ShardManifestStore::ListVersions() const {
  return io::ListVersions(*store_, layout_);
}

uint64_t ShardManifestStore::HintedVersion() const {
  return io::ReadVersionHint(*store_, layout_.hint_key);
}

Result<pb::ShardManifest> ShardManifestStore::ReadVersion(uint64_t version) const {
  const std::string key = ShardManifestKey(prefix_, shard_, version);
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, store_->Get(key));
  return DecodeShardManifest(bytes.view(), key, version, shard_);
}

Result<bool> ShardManifestStore::Publish(const pb::ShardManifest& next) {
  const uint64_t version = next.version();
  const std::string key = ShardManifestKey(prefix_, shard_, version);
  Status put = store_->PutIfAbsent(key, EncodeShardManifest(next));
  if (put.IsAlreadyExists()) return false;
  STRATA_RETURN_IF_ERROR(put);
  if (version > 1) {
    // The slot was free, but was it free because nobody had written it yet, or because
    // cleanup had deleted it (the chain moved on while this writer was building on a version
    // that is now old)? Cleanup deletes oldest first, so if the base is still there the
    // slot had never been deleted and this version is the base's successor.
    STRATA_ASSIGN_OR_RETURN(bool base_exists,
                            store_->Exists(ShardManifestKey(prefix_, shard_, version - 1)));
    if (!base_exists) {
      // Either a stray copy behind the chain, or the chain already moved far past it. Both
      // are safe to remove (cleanup would soon), and the caller retries on the latest.
      // Best effort: a copy left behind is removed by the next cleanup.
      store_->Delete(key).IgnoreError();
      return false;
    }
  }
  // The hint is advisory: readers that find it stale or missing probe or list.
  io::WriteVersionHint(*store_, layout_.hint_key, version).IgnoreError();
  if (retained_versions_ > 0 && version > retained_versions_) {
    // Best effort: a later write retries what fails now.
    io::DeleteVersionsBefore(*store_, layout_, version - retained_versions_ + 1).IgnoreError();
  }
  return true;
}

Result<pb::ShardManifest> ShardManifestStore::Initialize() {
  // Register first: a registered shard without a manifest reads as empty, while a manifest
  // nobody can find would hide its generations from readers and merges.
  Status registered = store_->PutIfAbsent(ShardRegistryKey(prefix_, shard_), "");
  if (!registered.ok() && !registered.IsAlreadyExists()) return registered;

  Result<pb::ShardManifest> latest = ReadLatest();
  if (latest.ok() || !latest.status().IsNotFound()) return latest;

  pb::ShardManifest first;
  first.set_shard_id(ShardIdBytes(shard_));
  first.set_version(1);
  first.set_writer_epoch(0);
  first.set_current_generation(1);
  first.set_created_micros(clock_->NowMicros());
  first.set_operation("init");
  STRATA_ASSIGN_OR_RETURN(bool written, Publish(first));
  if (written) return first;
  return ReadLatest();  // a concurrent initialiser won; that is just as good
}

Result<pb::ShardManifest> ShardManifestStore::Claim() {
  STRATA_ASSIGN_OR_RETURN(pb::ShardManifest latest, Initialize());
  for (int attempt = 0; attempt < kClaimAttempts; ++attempt) {
    const uint64_t target = latest.writer_epoch() + 1;
    pb::ShardManifest next = latest;
    next.set_version(latest.version() + 1);
    next.set_writer_epoch(target);
    next.set_shard_id(ShardIdBytes(shard_));
    next.set_created_micros(clock_->NowMicros());
    next.set_operation("claim");
    STRATA_ASSIGN_OR_RETURN(bool written, Publish(next));
    if (written) return next;
    STRATA_ASSIGN_OR_RETURN(latest, ReadLatest());
    if (latest.writer_epoch() >= target) {
      return Status::Fenced(fmt::format(
          "shard {}: another writer claimed epoch {} (version {}) while this one was claiming "
          "epoch {}",
          shard_.ToString(), latest.writer_epoch(), latest.version(), target));
    }
    // The version we lost to was not a claim (a seal or drain): try again on top of it.
  }
  return Status::Busy(
      fmt::format("shard {}: claim lost {} races in a row", shard_.ToString(), kClaimAttempts));
}

Result<pb::ShardManifest> ShardManifestStore::Update(
    uint64_t epoch, std::string_view operation,
    const std::function<Status(pb::ShardManifest&)>& mutate) {
  for (int attempt = 0; attempt < kUpdateAttempts; ++attempt) {
    if (attempt > 0) io::Backoff(kUpdateBackoff, attempt, clock_, random_);
    STRATA_ASSIGN_OR_RETURN(pb::ShardManifest latest, ReadLatest());
    if (latest.writer_epoch() != epoch) {
      return Status::Fenced(
          fmt::format("shard {}: epoch {} no longer owns the shard (version {} has epoch {})",
                      shard_.ToString(), epoch, latest.version(), latest.writer_epoch()));
    }
    pb::ShardManifest next = latest;
    STRATA_RETURN_IF_ERROR(mutate(next));
    // Only Claim moves the epoch; the chain position and identity are not the caller's.
    next.set_writer_epoch(epoch);
    next.set_version(latest.version() + 1);
    next.set_shard_id(ShardIdBytes(shard_));
    next.set_created_micros(clock_->NowMicros());
    next.set_operation(std::string(operation));
    STRATA_ASSIGN_OR_RETURN(bool written, Publish(next));
    if (written) return next;
  }
  return Status::Busy(fmt::format("shard {}: manifest update '{}' lost {} races in a row",
                                  shard_.ToString(), operation, kUpdateAttempts));
}

Result<pb::ShardManifest> ShardManifestStore::Drain(uint64_t epoch,
                                                    const std::vector<uint64_t>& generations,
                                                    std::vector<std::string>* removed_paths) {
  std::optional<pb::ShardManifest> unchanged;
  std::vector<std::string> removed_now;
  Result<pb::ShardManifest> drained =
      Update(epoch, "drain", [&](pb::ShardManifest& manifest) -> Status {
        removed_now.clear();
        auto* listed = manifest.mutable_generations();
        auto drained_here = [&](const pb::Generation& g) {
          return std::find(generations.begin(), generations.end(), g.generation()) !=
                 generations.end();
        };
        for (const pb::Generation& g : *listed) {
          if (drained_here(g)) removed_now.push_back(g.path());
        }
        if (removed_now.empty()) {
          unchanged = manifest;  // nothing left to drain: write nothing
          return Status::Aborted("nothing to drain");
        }
        listed->erase(std::remove_if(listed->begin(), listed->end(), drained_here), listed->end());
        return Status::OK();
      });
  if (!drained.ok() && unchanged.has_value() && drained.status().IsAborted()) return *unchanged;
  if (drained.ok() && removed_paths != nullptr) *removed_paths = std::move(removed_now);
  return drained;
}

Result<bool> ShardManifestStore::ReplaceGeneration(uint64_t epoch, const std::string& old_path,
                                                   const pb::Generation& replacement) {
  bool gone = false;
  Result<pb::ShardManifest> written =
      Update(epoch, "recode", [&](pb::ShardManifest& manifest) -> Status {
        for (pb::Generation& g : *manifest.mutable_generations()) {
          if (g.generation() == replacement.generation() && g.path() == old_path) {
            g = replacement;
            gone = false;
            return Status::OK();
          }
        }
        gone = true;  // write nothing
        return Status::Aborted("generation no longer listed at its old path");
      });
  if (!written.ok() && gone && written.status().IsAborted()) return false;
  STRATA_RETURN_IF_ERROR(written.status());
  return true;
}

Result<std::vector<Uuid>> ListShards(ObjectStore& store, std::string_view store_prefix) {
  const std::string dir = fmt::format("{}{}", store_prefix, kShardRegistryDir);
  STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, store.List(dir));
  std::vector<Uuid> shards;
  shards.reserve(objects.size());
  for (const ObjectMeta& object : objects) {
    std::string_view name = std::string_view(object.key).substr(dir.size());
    Result<Uuid> shard = Uuid::Parse(name);
    if (!shard.ok()) continue;  // not a registry entry (nothing else is written here)
    shards.push_back(*shard);
  }
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  return shards;
}

Result<std::unique_ptr<ChangeWatch>> WatchShardRegistry(ObjectStore& store,
                                                        std::string_view store_prefix) {
  return store.Watch(fmt::format("{}{}", store_prefix, kShardRegistryDir));
}

}  // namespace strata::lsm
