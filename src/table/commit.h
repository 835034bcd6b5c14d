// Versions and the commit protocol.
//
// Invariants kept here:
// - Version N exists iff "_versions/{N}.manifest" exists; versions are contiguous from 1
//   (cleanup removes a prefix of old versions, never a gap: see cleanup) and a manifest is
//   never modified once created.
// - A commit is exactly one PutIfAbsent of manifest N+1, made after every file it references
//   is durable. Losing that race leaves nothing referenced; the loser rebuilds its manifest
//   on the newer version (seeing the transactions committed meanwhile) and tries again.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/object_store.h"
#include "strata/status.h"
#include "table/format.h"
#include "table/manifest.pb.h"
#include "util/clock.h"

namespace strata::table::internal {

// "<store description>/<prefix>", for messages.
std::string TableLocation(const ObjectStore& store, const std::string& prefix);

// Reads and verifies manifest `version`. NotFound when it does not exist.
Result<SnapshotPtr> LoadVersion(ObjectStore& store, const std::string& prefix, uint64_t version);

// The transaction of manifest `version`, verified (envelope checksum) but without decoding
// the rest of the manifest: cheap even for manifests with many fragments. NotFound when the
// version does not exist.
Result<pb::Transaction> LoadTransaction(ObjectStore& store, const std::string& prefix,
                                        uint64_t version);

// The newest version: starts from max(`known`, the hint), probes upward one version at a
// time (a bounded number of probes), and lists "_versions/" only when the hint is missing
// or too far behind. NotFound when the table has no versions.
// `hint` (optional) receives the latest-version hint's version (0 when missing or unreadable):
// a hint above the result means the newest manifests are missing.
Result<uint64_t> FindLatestVersion(ObjectStore& store, const std::string& prefix,
                                   uint64_t known = 0, uint64_t* hint = nullptr);

// Whether `version` is still the newest version (io::IsLatestVersion).
Result<bool> IsLatestVersion(ObjectStore& store, const std::string& prefix, uint64_t version);
// A change watch on the version chain (io::WatchVersionChain).
Result<std::unique_ptr<ChangeWatch>> WatchVersions(ObjectStore& store, const std::string& prefix);

// Every version present, ascending (lists "_versions/").
Result<std::vector<uint64_t>> ListVersionNumbers(ObjectStore& store, const std::string& prefix);

// The hint's version: 0 when the hint is missing or not a number.
uint64_t ReadLatestHint(ObjectStore& store, const std::string& prefix);

// Best effort: records `version` in the hint object (errors are ignored by callers).
Status WriteLatestHint(ObjectStore& store, const std::string& prefix, uint64_t version);

// Builds the manifest of the next version from `base` (the newest version known) and the
// transactions committed after the operation's read version up to and including `base`
// (empty on the first attempt). The returned manifest's version, timestamp, transaction
// read_version/uuid/operation are filled in by CommitWithRetry; the builder sets the rest
// (fragments, schema, indexes, metadata, next ids and the transaction's fragment lists).
// Returning Busy means a retryable conflict (given up immediately); any other error ends the
// commit too.
using ManifestBuilder = std::function<Result<pb::Manifest>(
    const Snapshot& base, const std::vector<pb::Transaction>& intervening)>;

struct CommitRequest {
  std::string operation;  // "append", "delete", ...
  std::string detail;     // recorded in the transaction
  int max_retries = 20;
  ManifestBuilder build;
  // Version timestamps, transaction ids and backoff come from these (TableOptions'; null =
  // the system sources).
  Clock* clock = nullptr;
  RandomSource* random = nullptr;
};

struct CommitOutcome {
  SnapshotPtr snapshot;  // the committed version
  int attempts = 0;
};

// Commits on top of `read` (the version the operation computed its change against). On a
// lost race: finds the newest version, loads the transactions in between, calls `build`
// again and retries after a short randomized backoff, up to max_retries times; then Busy
// ("commit conflict: ... gave up after N retries"). Loading an intervening version that was
// cleaned up meanwhile is Busy too.
Result<CommitOutcome> CommitWithRetry(ObjectStore& store, const std::string& prefix,
                                      const SnapshotPtr& read, const CommitRequest& request);

// Writes version 1. AlreadyExists when the table exists.
Result<SnapshotPtr> CommitCreate(ObjectStore& store, const std::string& prefix,
                                 pb::Manifest manifest, Clock* clock = nullptr,
                                 RandomSource* random = nullptr);

// The operation of a version committed by RollBackCorruptVersions. Its transaction's
// read_version is the intact version whose content it repeats; the versions between the two
// (read_version + 1 .. version - 1) are rolled back: their manifests failed their checks, and
// readers that walk the history skip them (format/table.md §11.1).
inline constexpr std::string_view kRollbackOperation = "rollback";

// Commits version `newest` + 1 with the content of `intact` (schema, fragments, indexes,
// metadata, next ids), operation "rollback", read_version = intact's version. Busy when a
// concurrent commit took version `newest` + 1 first (nothing committed).
Result<SnapshotPtr> CommitRollback(ObjectStore& store, const std::string& prefix, uint64_t newest,
                                   const Snapshot& intact, const std::string& detail,
                                   Clock* clock = nullptr, RandomSource* random = nullptr);

// Versions first..last were rolled back by version `rollback` (its transaction's read_version
// is first - 1).
struct RolledBackRange {
  uint64_t first = 0;
  uint64_t last = 0;
  uint64_t rollback = 0;
};
// The ranges the "rollback" versions among `versions` roll back, from each version's
// transaction (versions whose transaction cannot be read are skipped).
std::vector<RolledBackRange> RolledBackRanges(ObjectStore& store, const std::string& prefix,
                                              const std::vector<uint64_t>& versions);
// The range that holds `version`, or null.
const RolledBackRange* FindRolledBack(const std::vector<RolledBackRange>& ranges, uint64_t version);

// Conflict helpers for builders: the first intervening transaction (and the fragment) that
// removed or changed one of `fragments`, described for an error message, or nullopt.
std::optional<std::string> FindConflict(const std::vector<pb::Transaction>& intervening,
                                        const std::vector<uint32_t>& fragments,
                                        bool include_modified);

}  // namespace strata::table::internal
