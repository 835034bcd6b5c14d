// CleanupTable: removes the oldest versions (a prefix of the history, so versions stay
// contiguous) and the files only they reference, never a file a kept version, a tag or a
// branch references.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "table/commit.h"
#include "table/table_internal.h"
#include "util/clock.h"

namespace strata::table::internal {
namespace {

// Every data, deletion and key-segment file a manifest references (keys relative to the
// table prefix), with the size the manifest records.
void CollectFiles(const pb::Manifest& manifest, std::unordered_map<std::string, int64_t>* out) {
  for (const pb::Fragment& fragment : manifest.fragments()) {
    for (const pb::DataFile& file : fragment.files()) out->emplace(file.path(), file.size());
    if (fragment.has_deletion()) {
      out->emplace(fragment.deletion().path(), fragment.deletion().size());
    }
  }
  for (const pb::Index& index : manifest.indexes()) {
    for (const pb::KeySegment& segment : index.segments()) {
      out->emplace(segment.path(), segment.size());
    }
  }
}

bool IsTableFileKey(std::string_view key) {
  return key.starts_with(kDataDir) || key.starts_with(kDeletionsDir) ||
         key.starts_with(kIndicesDir);
}

// Deletes `key`; an object that is already gone (a concurrent cleanup) is not an error.
// Returns whether this call removed it.
Result<bool> DeleteIfPresent(ObjectStore& store, const std::string& key) {
  Status status = store.Delete(key);
  if (status.IsNotFound()) return false;
  STRATA_RETURN_IF_ERROR(status);
  return true;
}

}  // namespace

Result<CleanupResult> CleanupTable(TableContext& context, const SnapshotPtr& latest,
                                   const CleanupOptions& options) {
  ObjectStore& store = *context.store;
  const std::string& prefix = context.prefix;
  if (options.older_than_micros < 0) {
    return Status::InvalidArgument(fmt::format(
        "cleanup: older_than_micros must not be negative (got {})", options.older_than_micros));
  }
  Clock* clock = context.options.clock != nullptr ? context.options.clock : SystemClock();
  const int64_t now = options.now_micros != 0 ? options.now_micros : clock->NowMicros();
  const int64_t cutoff = now - options.older_than_micros;
  const size_t keep_at_least = static_cast<size_t>(std::max(1, options.keep_at_least));

  STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> versions, ListVersionNumbers(store, prefix));

  // Walk the history oldest first: a version is removed while it is older than the cutoff,
  // outside the newest `keep_at_least`, and older than the caller's version; the first
  // version that fails any of these ends the removable prefix.
  std::vector<uint64_t> removed;
  std::unordered_map<std::string, int64_t> removed_files;
  std::unordered_map<std::string, int64_t> kept_files;
  bool keeping = false;
  int64_t kept_versions = 0;
  std::optional<std::vector<RolledBackRange>> rolled_back;  // read when needed
  for (size_t i = 0; i < versions.size(); ++i) {
    const uint64_t version = versions[i];
    Result<SnapshotPtr> loaded = LoadVersion(store, prefix, version);
    if (!loaded.ok() && loaded.status().IsNotFound()) {
      continue;  // removed by a concurrent cleanup since we listed
    }
    // A corrupt version that a later rollback replaced has no readable files list and no
    // timestamp of its own; it was committed before its rollback, whose timestamp stands in
    // for its age. Its files are not known, so none are deleted on its account (they are
    // unreferenced leftovers once it is gone).
    const RolledBackRange* replaced = nullptr;
    if (!loaded.ok() && loaded.status().IsCorruption()) {
      if (!rolled_back) rolled_back = RolledBackRanges(store, prefix, versions);
      replaced = FindRolledBack(*rolled_back, version);
    }
    if (!loaded.ok() && replaced == nullptr) {
      return loaded.status().WithContext(fmt::format(
          "cleanup: cannot read version {}, so cannot tell which files it uses", version));
    }
    int64_t timestamp = 0;
    if (replaced != nullptr) {
      Result<SnapshotPtr> rollback = LoadVersion(store, prefix, replaced->rollback);
      if (!rollback.ok()) {
        return rollback.status().WithContext(
            fmt::format("cleanup: cannot read version {}, which rolled back version {}",
                        replaced->rollback, version));
      }
      timestamp = (*rollback)->manifest.timestamp_micros();
    } else {
      timestamp = (*loaded)->manifest.timestamp_micros();
    }
    if (!keeping) {
      const bool in_newest = versions.size() - i <= keep_at_least;
      const bool recent = timestamp >= cutoff;
      const bool in_use = latest && version >= latest->version();
      keeping = in_newest || recent || in_use;
    }
    if (keeping) {
      ++kept_versions;
      if (replaced == nullptr) CollectFiles((*loaded)->manifest, &kept_files);
    } else {
      removed.push_back(version);
      if (replaced == nullptr) CollectFiles((*loaded)->manifest, &removed_files);
    }
  }
  if (kept_versions == 0) {
    // Every listed version vanished while we read them: another cleanup cannot have done
    // that (it keeps the latest), so the table itself is gone.
    return Status::NotFound(fmt::format("cleanup: no versions of the table under '{}'", prefix));
  }

  // versions_removed counts manifests; files_removed / bytes_removed count data, deletion
  // and index files (sizes as the manifests record them, or as listed). Only deletions this
  // call made are counted, so two racing cleanups never count one object twice.
  CleanupResult result;
  // Manifests first (oldest first), so that at every moment each remaining manifest's
  // files still exist, and a reader never sees a version whose files are half deleted.
  for (uint64_t version : removed) {
    STRATA_ASSIGN_OR_RETURN(bool deleted, DeleteIfPresent(store, prefix + ManifestKey(version)));
    if (deleted) ++result.versions_removed;
  }

  // Candidates: files the removed versions used, or (delete_unreferenced) every file under
  // the table's file directories. Anything a kept version references is skipped.
  std::unordered_map<std::string, int64_t> candidates = std::move(removed_files);
  if (options.delete_unreferenced) {
    for (std::string_view dir : {kDataDir, kDeletionsDir, kIndicesDir}) {
      STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects,
                              store.List(prefix + std::string(dir)));
      for (const ObjectMeta& object : objects) {
        std::string relative = object.key.substr(prefix.size());
        if (!IsTableFileKey(relative)) continue;
        candidates.insert_or_assign(std::move(relative), object.size);
      }
    }
  }
  // Tags and branches keep files too. They are read only now, after the manifests are gone:
  // a tag or branch created from a version this call removed checks, after writing its ref,
  // that the version still exists, and gives up when it does not; one whose ref was written
  // before that is seen here (docs/format/table.md §13).
  std::unordered_set<std::string> kept_by_refs;
  STRATA_RETURN_IF_ERROR(CollectFilesKeptByRefs(store, prefix, &kept_by_refs)
                             .WithContext("cleanup: reading the table's tags and branches"));
  std::vector<std::pair<std::string, int64_t>> doomed;
  for (auto& [key, size] : candidates) {
    // A path with "../" steps is a file of an ancestor table (this table is a branch):
    // never this table's to delete.
    if (ParentSteps(key) > 0) continue;
    if (!kept_files.contains(key) && !kept_by_refs.contains(key)) doomed.emplace_back(key, size);
  }
  std::sort(doomed.begin(), doomed.end());
  for (const auto& [key, size] : doomed) {
    STRATA_ASSIGN_OR_RETURN(bool deleted, DeleteIfPresent(store, prefix + key));
    if (deleted) {
      ++result.files_removed;
      result.bytes_removed += size;
    }
  }
  return result;
}

}  // namespace strata::table::internal
