// Version discovery (the table's manifests as an io/version_chain.h chain: hint, bounded
// probing, listing as the fallback) and the commit loop:
// one put-if-absent per attempt, rebasing on the transactions that won the race.
//
// Invariants (what the rest of the table layer relies on):
// - A version is committed iff its manifest object exists. Manifests are only ever created
//   with PutIfAbsent, so of two writers racing for version N exactly one wins, and a
//   manifest never changes after it is created.
// - Every manifest we write has passed MakeSnapshot first: a builder bug is reported as
//   Internal, never committed as a manifest nobody can read.
// - Version N+1 is only ever attempted on top of a manifest we read (version N), so versions
//   are contiguous. The transaction of every version from the operation's read version + 1
//   to the new base is handed to the builder, so a rebased change sees everything that
//   committed since it read.
// - No commit is made on a read version that cleanup removed (checked before the first
//   attempt): put-if-absent of a removed version would otherwise succeed into the gap.
// - The latest-version hint is advisory: it may lag (or even move backwards under races)
//   and readers never trust it beyond "start probing here". Nothing else is overwritten.
// - An ambiguous PutIfAbsent failure (the object may or may not have been created) is
//   resolved by reading the manifest back and comparing the transaction uuid, so a commit
//   that did happen is never reported as failed.
#include "table/commit.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "io/version_chain.h"
#include "util/clock.h"
#include "util/uuid.h"

namespace strata::table::internal {
namespace {

// Backoff between commit attempts: uniform in [0, min(1 ms << attempt, 100 ms)].
constexpr io::BackoffPolicy kCommitBackoff{std::chrono::milliseconds(1),
                                           std::chrono::milliseconds(100)};
// Rounds of "find the latest version, load what is new" before rebuilding after a lost race.
constexpr int kMaxCatchUpRounds = 4;

// The table's manifests as a version chain (io/version_chain.h).
io::VersionChainLayout ChainLayout(const std::string& prefix) {
  io::VersionChainLayout layout;
  layout.hint_key = prefix + std::string(kLatestHintKey);
  layout.versions_dir = prefix + std::string(kVersionsDir);
  layout.version_key = [prefix](uint64_t version) { return prefix + ManifestKey(version); };
  layout.parse_version_key = [prefix](std::string_view key) -> std::optional<uint64_t> {
    if (key.substr(0, prefix.size()) != prefix) return std::nullopt;
    return ParseManifestKey(key.substr(prefix.size()));
  };
  return layout;
}

Clock& ClockOr(Clock* clock) { return clock != nullptr ? *clock : *SystemClock(); }
RandomSource& RandomOr(RandomSource* random) {
  return random != nullptr ? *random : *SystemRandom();
}

// Fills what CommitWithRetry / CommitCreate own in a manifest the builder returned.
void StampManifest(pb::Manifest* manifest, uint64_t version, uint64_t read_version,
                   const std::string& operation, const std::string& detail, const std::string& uuid,
                   Clock& clock) {
  manifest->set_version(version);
  manifest->set_timestamp_micros(clock.NowMicros());
  pb::Transaction* txn = manifest->mutable_transaction();
  txn->set_read_version(read_version);
  txn->set_version(version);
  txn->set_operation(operation);
  txn->set_uuid(uuid);
  txn->set_detail(detail);
}

// After a PutIfAbsent failed with something other than AlreadyExists the object may still
// have been created (e.g. linked into place, then the directory sync failed). True when the
// manifest at `key` exists and carries our transaction.
bool ManifestIsOurs(ObjectStore& store, const std::string& key, const std::string& uuid) {
  Result<Buffer> bytes = store.Get(key);
  if (!bytes.ok()) return false;
  Result<pb::Manifest> manifest = DecodeManifest(bytes->view(), key);
  return manifest.ok() && manifest->transaction().uuid() == uuid;
}

// Validates a manifest before it is written: a builder must never commit something
// MakeSnapshot (every reader) rejects.
Result<SnapshotPtr> CheckBuilt(pb::Manifest manifest, const std::string& operation) {
  Result<SnapshotPtr> snapshot = MakeSnapshot(std::move(manifest));
  if (!snapshot.ok()) {
    return Status::Internal(fmt::format("{} built an invalid manifest (not committed): {}",
                                        operation, snapshot.status().message()));
  }
  return snapshot;
}

// The bytes of manifest `version`; NotFound names the version and the table.
Result<Buffer> GetManifestObject(ObjectStore& store, const std::string& prefix, uint64_t version) {
  Result<Buffer> bytes = store.Get(prefix + ManifestKey(version));
  if (!bytes.ok() && bytes.status().IsNotFound()) {
    return Status::NotFound(fmt::format("version {} of the table at {} does not exist", version,
                                        TableLocation(store, prefix)));
  }
  return bytes;
}

// A rollback (RollBackCorruptVersions) repeats an older version's content: a change computed
// on a version it rolled back would silently reapply only part of that version's state, so it
// is not rebased but refused like a cleanup conflict.
Status CheckNotRolledBack(const pb::Transaction& txn, const Snapshot& read,
                          const std::string& operation) {
  if (txn.operation() != kRollbackOperation || read.version() <= txn.read_version()) {
    return Status::OK();
  }
  return Status::Busy(fmt::format(
      "commit conflict on {}: version {} rolled the table back to version {}, dropping the "
      "version this change read ({}); refresh the table and retry",
      operation, txn.version(), txn.read_version(), read.version()));
}

}  // namespace

std::string TableLocation(const ObjectStore& store, const std::string& prefix) {
  return fmt::format("{}/{}", store.Describe(), prefix);
}

Result<SnapshotPtr> LoadVersion(ObjectStore& store, const std::string& prefix, uint64_t version) {
  const std::string key = prefix + ManifestKey(version);
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, GetManifestObject(store, prefix, version));
  STRATA_ASSIGN_OR_RETURN(pb::Manifest manifest, DecodeManifest(bytes.view(), key));
  if (manifest.version() != version) {
    return Status::Corruption(
        fmt::format("{}: manifest records version {}", key, manifest.version()));
  }
  return MakeSnapshot(std::move(manifest));
}

Result<pb::Transaction> LoadTransaction(ObjectStore& store, const std::string& prefix,
                                        uint64_t version) {
  const std::string key = prefix + ManifestKey(version);
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, GetManifestObject(store, prefix, version));
  STRATA_ASSIGN_OR_RETURN(std::string_view payload,
                          DecodeEnvelope(kManifestKind, bytes.view(), key));
  pb::ManifestSummary summary;
  if (!summary.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return Status::Corruption(fmt::format("{}: manifest protobuf does not parse", key));
  }
  if (summary.version() != version) {
    return Status::Corruption(
        fmt::format("{}: manifest records version {}", key, summary.version()));
  }
  return std::move(*summary.mutable_transaction());
}

Result<std::vector<uint64_t>> ListVersionNumbers(ObjectStore& store, const std::string& prefix) {
  return io::ListVersions(store, ChainLayout(prefix));
}

Result<uint64_t> FindLatestVersion(ObjectStore& store, const std::string& prefix, uint64_t known,
                                   uint64_t* hint) {
  STRATA_ASSIGN_OR_RETURN(io::LatestVersion latest,
                          io::FindLatestVersionAndHint(store, ChainLayout(prefix), known));
  if (hint != nullptr) *hint = latest.hint;
  if (latest.version == 0) {
    return Status::NotFound(fmt::format("no table at {}", TableLocation(store, prefix)));
  }
  return latest.version;
}

Result<bool> IsLatestVersion(ObjectStore& store, const std::string& prefix, uint64_t version) {
  return io::IsLatestVersion(store, ChainLayout(prefix), version);
}

Result<std::unique_ptr<ChangeWatch>> WatchVersions(ObjectStore& store, const std::string& prefix) {
  return io::WatchVersionChain(store, ChainLayout(prefix));
}

uint64_t ReadLatestHint(ObjectStore& store, const std::string& prefix) {
  return io::ReadVersionHint(store, prefix + std::string(kLatestHintKey));
}

Status WriteLatestHint(ObjectStore& store, const std::string& prefix, uint64_t version) {
  return io::WriteVersionHint(store, prefix + std::string(kLatestHintKey), version);
}

Result<CommitOutcome> CommitWithRetry(ObjectStore& store, const std::string& prefix,
                                      const SnapshotPtr& read, const CommitRequest& request) {
  Clock& clock = ClockOr(request.clock);
  RandomSource& random = RandomOr(request.random);
  if (!read) return Status::InvalidArgument("commit without a read version");
  if (!request.build) return Status::InvalidArgument("commit without a manifest builder");
  SnapshotPtr base = read;
  // Transactions of versions read+1 .. base, in version order.
  std::vector<pb::Transaction> intervening;
  // Cleanup removes a prefix of the history, oldest first. While the read version's manifest
  // exists, version read+1 has never been removed, so a put-if-absent of it cannot recreate a
  // version cleanup deleted. A handle whose read version is gone must not commit on it.
  STRATA_ASSIGN_OR_RETURN(bool read_exists, store.Exists(prefix + ManifestKey(read->version())));
  if (!read_exists) {
    return Status::Busy(fmt::format(
        "commit conflict on {}: the version it read ({}) was removed by a cleanup; refresh the "
        "table and retry",
        request.operation, read->version()));
  }
  for (int attempt = 0;; ++attempt) {
    STRATA_ASSIGN_OR_RETURN(pb::Manifest manifest, request.build(*base, intervening));
    const uint64_t version = base->version() + 1;
    const std::string uuid = UuidV7(clock, random).ToString();
    StampManifest(&manifest, version, read->version(), request.operation, request.detail, uuid,
                  clock);
    STRATA_ASSIGN_OR_RETURN(SnapshotPtr built, CheckBuilt(std::move(manifest), request.operation));
    const std::string key = prefix + ManifestKey(version);
    Status put = store.PutIfAbsent(key, EncodeManifest(built->manifest));
    if (put.ok() || (!put.IsAlreadyExists() && ManifestIsOurs(store, key, uuid))) {
      // The hint is advisory (readers probe past a stale one): a failed write costs nothing.
      WriteLatestHint(store, prefix, version).IgnoreError();
      return CommitOutcome{std::move(built), attempt + 1};
    }
    if (!put.IsAlreadyExists()) return put;

    // Lost the race for `version`. Rebase on everything committed since.
    if (attempt >= request.max_retries) {
      return Status::Busy(fmt::format(
          "commit conflict on {}: version {} was taken by a concurrent commit; gave up after {} "
          "retries",
          request.operation, version, attempt));
    }
    io::Backoff(kCommitBackoff, attempt, &clock, &random);
    // Catch up with the newest version. Loading many versions takes a while, so look again
    // afterwards: the shorter the time between finding the latest version and the put, the
    // better the next attempt's chance under heavy contention.
    uint64_t known = version;
    for (int round = 0; round < kMaxCatchUpRounds; ++round) {
      STRATA_ASSIGN_OR_RETURN(uint64_t latest, FindLatestVersion(store, prefix, known));
      if (latest <= base->version()) break;
      auto removed = [&](uint64_t v) {
        return Status::Busy(fmt::format(
            "commit conflict on {}: version {} was removed while rebasing on it (concurrent "
            "cleanup); retry the operation",
            request.operation, v));
      };
      // Only the newest version is decoded in full; the others give just their transaction,
      // so catching up stays cheap however many fragments the manifests list.
      for (uint64_t v = base->version() + 1; v < latest; ++v) {
        Result<pb::Transaction> txn = LoadTransaction(store, prefix, v);
        if (!txn.ok()) return txn.status().IsNotFound() ? removed(v) : txn.status();
        // A store that retries internally may report our own earlier put as AlreadyExists.
        if (v == version && txn->uuid() == uuid) {
          STRATA_ASSIGN_OR_RETURN(SnapshotPtr ours, LoadVersion(store, prefix, v));
          WriteLatestHint(store, prefix, version).IgnoreError();  // advisory, as above
          return CommitOutcome{std::move(ours), attempt + 1};
        }
        STRATA_RETURN_IF_ERROR(CheckNotRolledBack(*txn, *read, request.operation));
        intervening.push_back(std::move(*txn));
      }
      Result<SnapshotPtr> loaded = LoadVersion(store, prefix, latest);
      if (!loaded.ok()) return loaded.status().IsNotFound() ? removed(latest) : loaded.status();
      if (latest == version && (*loaded)->manifest.transaction().uuid() == uuid) {
        WriteLatestHint(store, prefix, version).IgnoreError();  // advisory, as above
        return CommitOutcome{std::move(*loaded), attempt + 1};
      }
      STRATA_RETURN_IF_ERROR(
          CheckNotRolledBack((*loaded)->manifest.transaction(), *read, request.operation));
      intervening.push_back((*loaded)->manifest.transaction());
      base = std::move(*loaded);
      known = latest;
    }
  }
}

Result<SnapshotPtr> CommitCreate(ObjectStore& store, const std::string& prefix,
                                 pb::Manifest manifest, Clock* clock_in, RandomSource* random_in) {
  Clock& clock = ClockOr(clock_in);
  RandomSource& random = RandomOr(random_in);
  if (manifest.table_uuid().empty()) manifest.set_table_uuid(UuidV4(random).ToString());
  const std::string uuid = UuidV7(clock, random).ToString();
  StampManifest(&manifest, 1, 0, "create", manifest.transaction().detail(), uuid, clock);
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr built, CheckBuilt(std::move(manifest), "create"));
  const std::string key = prefix + ManifestKey(1);
  Status put = store.PutIfAbsent(key, EncodeManifest(built->manifest));
  if (put.IsAlreadyExists()) {
    return Status::AlreadyExists(
        fmt::format("a table already exists at {}", TableLocation(store, prefix)));
  }
  if (!put.ok() && !ManifestIsOurs(store, key, uuid)) return put;
  WriteLatestHint(store, prefix, 1).IgnoreError();  // advisory, as in Commit
  return built;
}

Result<SnapshotPtr> CommitRollback(ObjectStore& store, const std::string& prefix, uint64_t newest,
                                   const Snapshot& intact, const std::string& detail,
                                   Clock* clock_in, RandomSource* random_in) {
  Clock& clock = ClockOr(clock_in);
  RandomSource& random = RandomOr(random_in);
  if (intact.version() >= newest) {
    return Status::InvalidArgument(fmt::format(
        "rollback: version {} is not older than the newest version {}", intact.version(), newest));
  }
  pb::Manifest manifest = intact.manifest;
  manifest.clear_transaction();
  const uint64_t version = newest + 1;
  const std::string uuid = UuidV7(clock, random).ToString();
  StampManifest(&manifest, version, intact.version(), std::string(kRollbackOperation), detail, uuid,
                clock);
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr built,
                          CheckBuilt(std::move(manifest), std::string(kRollbackOperation)));
  const std::string key = prefix + ManifestKey(version);
  Status put = store.PutIfAbsent(key, EncodeManifest(built->manifest));
  if (put.IsAlreadyExists()) {
    return Status::Busy(fmt::format(
        "rollback: a concurrent commit created version {} first; nothing was rolled back, run "
        "the repair again",
        version));
  }
  if (!put.ok() && !ManifestIsOurs(store, key, uuid)) return put;
  WriteLatestHint(store, prefix, version).IgnoreError();  // advisory, as in Commit
  return built;
}

std::vector<RolledBackRange> RolledBackRanges(ObjectStore& store, const std::string& prefix,
                                              const std::vector<uint64_t>& versions) {
  std::vector<RolledBackRange> ranges;
  for (uint64_t version : versions) {
    Result<pb::Transaction> txn = LoadTransaction(store, prefix, version);
    if (!txn.ok() || txn->operation() != kRollbackOperation) continue;
    if (txn->read_version() + 1 >= version) continue;  // nothing rolled back (or damaged)
    ranges.push_back({txn->read_version() + 1, version - 1, version});
  }
  return ranges;
}

const RolledBackRange* FindRolledBack(const std::vector<RolledBackRange>& ranges,
                                      uint64_t version) {
  for (const RolledBackRange& range : ranges) {
    if (version >= range.first && version <= range.last) return &range;
  }
  return nullptr;
}

std::optional<std::string> FindConflict(const std::vector<pb::Transaction>& intervening,
                                        const std::vector<uint32_t>& fragments,
                                        bool include_modified) {
  if (fragments.empty()) return std::nullopt;
  const std::unordered_set<uint32_t> wanted(fragments.begin(), fragments.end());
  for (const pb::Transaction& txn : intervening) {
    for (uint32_t id : txn.removed_fragments()) {
      if (wanted.count(id) != 0) {
        return fmt::format("fragment {} was {} by a concurrent {} (version {})", id,
                           txn.operation() == "compact" ? "rewritten" : "removed", txn.operation(),
                           txn.version());
      }
    }
    if (!include_modified) continue;
    for (uint32_t id : txn.modified_fragments()) {
      if (wanted.count(id) != 0) {
        return fmt::format("fragment {} was changed by a concurrent {} (version {})", id,
                           txn.operation(), txn.version());
      }
    }
  }
  return std::nullopt;
}

}  // namespace strata::table::internal
