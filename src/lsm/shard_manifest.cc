// The shard manifest chain (shard_manifest.h): immutable versions created with
// PutIfAbsent, the writer epoch that fences stale owners, and latest-version discovery by
// hint plus forward probing.
//
// Invariants:
// - Version N+1 is only ever built from a decoded version N, so the chain has no gaps and
//   every successful write saw everything before it.
// - writer_epoch changes only in Claim, and only to (epoch of the version it builds on) + 1;
//   of two claimers building on the same version exactly one wins the PutIfAbsent, so no
//   two writers ever hold the same epoch.
// - The hint is advisory: written after successful writes, never trusted beyond "start
//   probing here". A hint that names a missing version is ignored.
#include "lsm/shard_manifest.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include "fmt/format.h"
#include "lsm/layout.h"
#include "util/envelope.h"

namespace strata::lsm {
namespace {

constexpr int kClaimAttempts = 16;
constexpr int kUpdateAttempts = 10;

std::string ShardIdBytes(const Uuid& shard) {
  return std::string(reinterpret_cast<const char*>(shard.bytes().data()), Uuid::kSize);
}

// The hint's version; 0 when it is missing, unreadable or not a number.
uint64_t ReadHint(ObjectStore& store, const std::string& key) {
  Result<Buffer> bytes = store.Get(key);
  if (!bytes.ok()) return 0;
  std::string_view text = bytes->view();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  uint64_t version = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return 0;
  return version;
}

Result<bool> VersionExists(ObjectStore& store, const std::string& key) {
  Result<ObjectMeta> meta = store.Head(key);
  if (meta.ok()) return true;
  if (meta.status().IsNotFound()) return false;
  return meta.status();
}

// Sleeps a little before retrying a lost race: exponential with full jitter, so racing
// writers spread out instead of colliding again in lockstep.
void Backoff(Clock* clock, int attempt) {
  const int64_t cap_micros = int64_t{100} << std::min(attempt, 7);  // 100us .. 12.8ms
  const auto jitter =
      static_cast<int64_t>(SystemRandom()->Uniform(static_cast<uint64_t>(cap_micros)));
  clock->SleepFor(std::chrono::microseconds(jitter + 1));
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
                                       Uuid shard, Clock* clock)
    : store_(std::move(store)), prefix_(std::move(store_prefix)), shard_(shard), clock_(clock) {}

Result<pb::ShardManifest> ShardManifestStore::ReadLatest() const {
  ObjectStore& store = *store_;
  uint64_t version = ReadHint(store, ShardLatestHintKey(prefix_, shard_));
  if (version > 0) {
    STRATA_ASSIGN_OR_RETURN(bool exists,
                            VersionExists(store, ShardManifestKey(prefix_, shard_, version)));
    if (!exists) version = 0;  // a hint past the chain (damaged or foreign): start over
  }
  if (version == 0) {
    STRATA_ASSIGN_OR_RETURN(bool exists,
                            VersionExists(store, ShardManifestKey(prefix_, shard_, 1)));
    if (!exists) {
      return Status::NotFound(fmt::format("shard {} has no manifest under {}", shard_.ToString(),
                                          ShardDir(prefix_, shard_)));
    }
    version = 1;
  }
  while (true) {
    STRATA_ASSIGN_OR_RETURN(bool next,
                            VersionExists(store, ShardManifestKey(prefix_, shard_, version + 1)));
    if (!next) break;
    ++version;
  }
  const std::string key = ShardManifestKey(prefix_, shard_, version);
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, store.Get(key));
  return DecodeShardManifest(bytes.view(), key, version, shard_);
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
  Status put =
      store_->PutIfAbsent(ShardManifestKey(prefix_, shard_, 1), EncodeShardManifest(first));
  if (put.ok()) {
    (void)store_->Put(ShardLatestHintKey(prefix_, shard_), "1");  // advisory
    return first;
  }
  if (!put.IsAlreadyExists()) return put;
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
    Status put = store_->PutIfAbsent(ShardManifestKey(prefix_, shard_, next.version()),
                                     EncodeShardManifest(next));
    if (put.ok()) {
      (void)store_->Put(ShardLatestHintKey(prefix_, shard_), std::to_string(next.version()));
      return next;
    }
    if (!put.IsAlreadyExists()) return put;
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
    if (attempt > 0) Backoff(clock_, attempt);
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
    Status put = store_->PutIfAbsent(ShardManifestKey(prefix_, shard_, next.version()),
                                     EncodeShardManifest(next));
    if (put.ok()) {
      (void)store_->Put(ShardLatestHintKey(prefix_, shard_), std::to_string(next.version()));
      return next;
    }
    if (!put.IsAlreadyExists()) return put;
  }
  return Status::Busy(fmt::format("shard {}: manifest update '{}' lost {} races in a row",
                                  shard_.ToString(), operation, kUpdateAttempts));
}

Result<pb::ShardManifest> ShardManifestStore::Drain(uint64_t epoch,
                                                    const std::vector<uint64_t>& generations) {
  std::optional<pb::ShardManifest> unchanged;
  Result<pb::ShardManifest> drained =
      Update(epoch, "drain", [&](pb::ShardManifest& manifest) -> Status {
        auto* listed = manifest.mutable_generations();
        const auto removed =
            std::remove_if(listed->begin(), listed->end(), [&](const pb::Generation& g) {
              return std::find(generations.begin(), generations.end(), g.generation()) !=
                     generations.end();
            });
        if (removed == listed->end()) {
          unchanged = manifest;  // nothing left to drain: write nothing
          return Status::Aborted("nothing to drain");
        }
        listed->erase(removed, listed->end());
        return Status::OK();
      });
  if (!drained.ok() && unchanged.has_value() && drained.status().IsAborted()) return *unchanged;
  return drained;
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

}  // namespace strata::lsm
