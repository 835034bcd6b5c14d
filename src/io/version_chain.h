// Version chains: the numbered, immutable versions 1, 2, ... that a table's manifests and a
// shard's manifests both are. Version N+1 is created with put-if-absent on top of version N,
// an advisory hint object names a recent version, and readers find the latest version by
// probing forward from the hint, listing the chain when probing cannot work or would take
// long. Cleanup may delete versions from the start of the chain (oldest first); readers
// tolerate a chain whose start is gone. Also the jittered backoff both chains' writers use
// after losing a race.
//
// Invariants the helpers rely on (each chain's owner keeps them):
// - Versions are never changed once created and the chain has no gaps above its oldest
//   surviving version.
// - Versions are deleted oldest first (DeleteVersionsBefore): when version V is gone, every
//   version below V was gone before it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/object_store.h"
#include "strata/status.h"
#include "util/clock.h"

namespace strata::io {

// Where one chain's objects live.
struct VersionChainLayout {
  // The advisory hint: decimal text of a recently written version, overwritten.
  std::string hint_key;
  // Listed by the fallback; every version key starts with it.
  std::string versions_dir;
  // The key of version `version`.
  std::function<std::string(uint64_t version)> version_key;
  // The version a listed key (full key, as List returns it) names; nullopt for any other
  // object under versions_dir (the hint, leftovers).
  std::function<std::optional<uint64_t>(std::string_view key)> parse_version_key;
};

// Versions probed one at a time past the starting point before giving up and listing.
inline constexpr int kMaxVersionProbes = 64;

// The hint's version: decimal digits, trailing spaces and line ends allowed. nullopt for
// anything else.
std::optional<uint64_t> ParseVersionHint(std::string_view text);
// The hint's version, or 0 when it is missing, unreadable or not a number.
uint64_t ReadVersionHint(ObjectStore& store, std::string_view hint_key);
Status WriteVersionHint(ObjectStore& store, std::string_view hint_key, uint64_t version);

// Every version the chain holds, ascending.
Result<std::vector<uint64_t>> ListVersions(ObjectStore& store, const VersionChainLayout& layout);

// The newest version, or 0 when the chain holds none. Starts at max(known, hint): if that
// version exists, probes the following ones until one is missing (at most `max_probes`);
// lists the chain when there is no start point, the start point does not exist (a hint past
// the chain, or a start deleted by cleanup) or every probe found a version (far behind).
// `known` is a version the caller has already seen (0 for none).
Result<uint64_t> FindLatestVersion(ObjectStore& store, const VersionChainLayout& layout,
                                   uint64_t known = 0, int max_probes = kMaxVersionProbes);

// FindLatestVersion, also returning the hint it started from. A hint above the latest version
// found means versions the hint names are missing: nothing but a deletion from outside (or
// damage) removes the newest version, so callers report it.
struct LatestVersion {
  uint64_t version = 0;  // 0 when the chain holds none
  uint64_t hint = 0;     // the hint's version, 0 when missing or unreadable
};
Result<LatestVersion> FindLatestVersionAndHint(ObjectStore& store, const VersionChainLayout& layout,
                                               uint64_t known = 0,
                                               int max_probes = kMaxVersionProbes);

// Whether `version` is still the newest version, for a reader that read it before: version + 1
// is missing, the hint names no later version, and `version` is still there. Versions are
// deleted oldest first, so a version + 1 missing beside a surviving `version` was not created
// yet, unless `version` itself is a stray copy a stalled writer re-created behind a chain that
// moved on (ShardManifestStore::Publish deletes such copies again); the hint, which names a
// version past the chain's deleted ones once it moved on, rules that out as FindLatestVersion
// relies on it. The same three requests as FindLatestVersion from `version`, without the
// probes forward and the listing: false sends the caller to FindLatestVersion.
Result<bool> IsLatestVersion(ObjectStore& store, const VersionChainLayout& layout,
                             uint64_t version);

// Watches the chain (ObjectStore::Watch of versions_dir, and of the hint's directory when the
// hint lives outside it; the count is their sum): while a poll returns the count it returned
// before an IsLatestVersion(version) answered true, that answer still holds, as nothing was
// created or deleted among the versions and the hint was not rewritten. NotSupported (or
// NotFound) as ObjectStore::Watch: re-check by requests then.
Result<std::unique_ptr<ChangeWatch>> WatchVersionChain(ObjectStore& store,
                                                       const VersionChainLayout& layout);

// Deletes every version below `keep_from`, oldest first, from one listing; stops at the first
// failure (a version that is already gone is not one), so that the chain never has a hole
// below a surviving version. Returns how many versions it deleted.
Result<int64_t> DeleteVersionsBefore(ObjectStore& store, const VersionChainLayout& layout,
                                     uint64_t keep_from);

// Backoff after losing a race: a uniformly random delay ("full jitter") in
// [0, min(first << attempt, max)], so racing writers spread out instead of colliding again in
// lockstep.
struct BackoffPolicy {
  std::chrono::microseconds first;
  std::chrono::microseconds max;
};
std::chrono::microseconds BackoffDelay(const BackoffPolicy& policy, int attempt,
                                       RandomSource& random);
// Sleeps BackoffDelay on `clock`.
void Backoff(const BackoffPolicy& policy, int attempt, Clock* clock, RandomSource* random);

}  // namespace strata::io
