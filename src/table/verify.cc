// VerifyTable re-reads a version's manifest and every file it references and reports what
// is missing or corrupt; RepairTable commits a version without the fragments whose files
// are gone, so the rest of the table stays readable; RollBackTable commits the content of the
// newest intact version on top of corrupt newest manifests, so the table opens again.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "table/commit.h"
#include "table/table_internal.h"

namespace strata::table::internal {
namespace {

// A problem description without the lead naming the object ("data file t/data/x.arrow: "),
// which the report line already names.
std::string Describe(const Status& status, const std::string& prefix, const std::string& key) {
  if (status.IsNotFound()) return "missing from storage";
  std::string_view message = status.message();
  for (const std::string& name : {FileKey(prefix, key), key}) {
    const size_t at = message.find(name);
    if (at == std::string_view::npos || at > 32) continue;
    message.remove_prefix(at + name.size());
    while (!message.empty() && (message.front() == ':' || message.front() == ' ')) {
      message.remove_prefix(1);
    }
    break;
  }
  return fmt::format("{} ({})", message, StatusCodeName(status.code()));
}

class Verifier {
 public:
  Verifier(TableContext& context, VerifyReport* report)
      : store_(*context.store), prefix_(context.prefix), report_(report) {}

  // Checks manifest `version`; `in_memory` (the handle's decoded copy, may be null) stands
  // in for a stored manifest that fails its checks, so its files are still verified.
  // A version a later rollback replaced (`rolled_back(version)`, asked only about a corrupt
  // manifest) may be corrupt: that is what the rollback recorded, not a new problem.
  void CheckVersion(uint64_t version, const Snapshot* in_memory,
                    const std::function<bool(uint64_t)>& rolled_back = {}) {
    const std::string key = ManifestKey(version);
    Result<Buffer> bytes = store_.Get(prefix_ + key);
    if (!bytes.ok()) {
      // A version listed a moment ago and now gone was removed by a concurrent cleanup;
      // only the handle's own version is expected to exist.
      if (bytes.status().IsNotFound() && in_memory == nullptr) return;
      Problem(version, key, bytes.status());
      if (in_memory != nullptr) CheckFiles(version, in_memory->manifest);
      return;
    }
    ++report_->manifests_checked;
    report_->bytes_checked += bytes->size();
    Result<pb::Manifest> manifest = DecodeManifest(bytes->view(), key);
    Status status = manifest.status();
    if (status.ok() && manifest->version() != version) {
      status = Status::Corruption(
          fmt::format("holds version {} instead of {}", manifest->version(), version));
    }
    if (status.ok()) {
      Result<SnapshotPtr> decoded = MakeSnapshot(*manifest);
      status = decoded.status();
    }
    if (!status.ok()) {
      if (status.IsCorruption() && rolled_back && rolled_back(version)) return;
      Problem(version, key, status);
      if (in_memory != nullptr) CheckFiles(version, in_memory->manifest);
      return;
    }
    CheckFiles(version, *manifest);
  }

  // A manifest that should exist and does not: `detail` says why it should.
  void MissingManifest(uint64_t version, const std::string& detail) {
    report_->problems.push_back(fmt::format("version {}: {}: missing from storage ({})", version,
                                            ManifestKey(version), detail));
  }

 private:
  void CheckFiles(uint64_t version, const pb::Manifest& manifest) {
    for (const pb::Fragment& fragment : manifest.fragments()) {
      for (const pb::DataFile& file : fragment.files()) {
        CheckOnce(version, file.path(), file.size(),
                  [&] { return VerifyDataFile(store_, prefix_, file); });
      }
      if (fragment.has_deletion()) {
        const pb::DeletionFile& deletion = fragment.deletion();
        CheckOnce(version, deletion.path(), deletion.size(), [&] {
          return ReadDeletionFile(store_, prefix_, deletion, fragment.physical_rows()).status();
        });
      }
    }
    for (const pb::Index& index : manifest.indexes()) {
      const bool key_index = index.name() == kKeyIndexName;
      for (const pb::KeySegment& segment : index.segments()) {
        CheckOnce(version, segment.path(), segment.size(), [&]() -> Status {
          if (key_index) return KeySegment::Load(store_, prefix_, segment).status();
          // A secondary index file (§14): its builder owns its format (and its checksum);
          // the table checks that it is there with the size recorded.
          STRATA_ASSIGN_OR_RETURN(int64_t size, store_.Size(FileKey(prefix_, segment.path())));
          if (size != segment.size()) {
            return Status::Corruption(fmt::format("{}: size {} differs from the manifest's {}",
                                                  segment.path(), size, segment.size()));
          }
          return Status::OK();
        });
      }
    }
  }

  // Files shared by many versions are read once and reported (if bad) once, under the first
  // version that references them.
  template <typename Check>
  void CheckOnce(uint64_t version, const std::string& key, int64_t size, const Check& check) {
    if (!checked_.insert(key).second) return;
    ++report_->files_checked;
    report_->bytes_checked += size;
    Status status = check();
    if (!status.ok()) Problem(version, key, status);
  }

  void Problem(uint64_t version, const std::string& key, const Status& status) {
    report_->problems.push_back(
        fmt::format("version {}: {}: {}", version, key, Describe(status, prefix_, key)));
  }

  ObjectStore& store_;
  const std::string& prefix_;
  VerifyReport* report_;
  std::unordered_set<std::string> checked_;
};

}  // namespace

std::optional<std::string> HintAheadWarning(uint64_t hint, uint64_t latest) {
  if (hint <= latest) return std::nullopt;
  return fmt::format(
      "the latest-version hint names version {} but the newest manifest is version {}: {} "
      "missing from storage; reading version {}",
      hint, latest,
      hint == latest + 1 ? fmt::format("version {} is", hint)
                         : fmt::format("versions {}..{} are", latest + 1, hint),
      latest);
}

Result<VerifyReport> VerifyTable(TableContext& context, const SnapshotPtr& snapshot,
                                 const VerifyOptions& options) {
  if (!snapshot) return Status::InvalidArgument("verify: no version to check");
  ObjectStore& store = *context.store;
  const std::string& prefix = context.prefix;
  VerifyReport report;
  Verifier verifier(context, &report);

  // The chain itself: the newest manifests missing (the hint names a later version than any
  // listed) or, with all_versions, a gap between the oldest and the newest version (cleanup
  // only removes the oldest versions, so a missing version in between was lost).
  // The hint is read before the listing: it is written after its version's manifest, so a
  // commit racing this check cannot make the hint name a version the listing missed.
  const uint64_t hint = ReadLatestHint(store, prefix);
  STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> listed, ListVersionNumbers(store, prefix));
  const uint64_t newest = listed.empty() ? 0 : listed.back();
  if (hint > newest) {
    verifier.MissingManifest(
        hint, hint == newest + 1
                  ? fmt::format("the latest-version hint names it; the newest manifest is "
                                "version {}",
                                newest)
                  : fmt::format("the latest-version hint names it; versions {}..{} are missing "
                                "and the newest manifest is version {}",
                                newest + 1, hint, newest));
  }
  if (!options.all_versions) {
    verifier.CheckVersion(snapshot->version(), snapshot.get());
    return report;
  }
  // Which versions rollbacks replaced: read (one transaction per version) only when a
  // corrupt manifest or a gap needs it.
  std::optional<std::vector<RolledBackRange>> rolled_back;
  auto find_rolled_back = [&](uint64_t version) {
    if (!rolled_back) rolled_back = RolledBackRanges(store, prefix, listed);
    return FindRolledBack(*rolled_back, version);
  };
  auto is_rolled_back = [&](uint64_t version) { return find_rolled_back(version) != nullptr; };
  for (size_t i = 0; i < listed.size(); ++i) {
    const uint64_t version = listed[i];
    if (i > 0 && version > listed[i - 1] + 1) {
      const uint64_t first = listed[i - 1] + 1;
      // Versions a rollback replaced may have been lost with the rest of their manifest.
      const RolledBackRange* range = find_rolled_back(first);
      const bool covered = range != nullptr && range->last >= version - 1;
      // A listing racing a cleanup can miss versions cleanup deleted after the listing read
      // an older one; while the version below the gap still exists, cleanup cannot have
      // removed those above it (it deletes oldest first).
      Result<bool> below_exists = store.Exists(prefix + ManifestKey(listed[i - 1]));
      if (!covered && below_exists.ok() && *below_exists) {
        verifier.MissingManifest(
            first, first == version - 1
                       ? fmt::format("versions {} and {} exist", first - 1, version)
                       : fmt::format("versions {}..{} are missing; versions {} and {} exist", first,
                                     version - 1, first - 1, version));
      }
    }
    verifier.CheckVersion(version, version == snapshot->version() ? snapshot.get() : nullptr,
                          is_rolled_back);
  }
  return report;
}

Result<RepairReport> RepairTable(TableContext& context, const SnapshotPtr& read,
                                 SnapshotPtr* committed) {
  if (!read) return Status::InvalidArgument("repair: no version to repair");
  ObjectStore& store = *context.store;
  RepairReport report;
  report.read_version = read->version();

  // Fragment id -> its files that are missing (keys relative to the prefix).
  std::unordered_map<uint32_t, std::vector<std::string>> missing;
  std::vector<RepairReport::DroppedFragment> candidates;
  for (const pb::Fragment& fragment : read->manifest.fragments()) {
    std::vector<std::string> keys;
    for (const pb::DataFile& file : fragment.files()) keys.push_back(file.path());
    if (fragment.has_deletion()) keys.push_back(fragment.deletion().path());
    std::vector<std::string> gone;
    for (const std::string& key : keys) {
      STRATA_ASSIGN_OR_RETURN(bool exists, store.Exists(FileKey(context.prefix, key)));
      if (!exists) gone.push_back(key);
    }
    if (gone.empty()) continue;
    candidates.push_back({fragment.id(), fragment.physical_rows(), gone});
    missing.emplace(fragment.id(), std::move(gone));
  }
  if (candidates.empty()) return report;

  // Built against the newest version: a fragment is dropped only while that version still
  // references one of the files found missing (a concurrent compaction may have removed it,
  // or a concurrent delete replaced its missing deletion file).
  std::set<uint32_t> dropped_ids;
  CommitRequest request;
  request.operation = "repair";
  request.detail = "repair: fragment data file missing from storage";
  request.max_retries = context.options.commit_retries;
  request.clock = context.options.clock;
  request.random = context.options.random;
  request.build = [&](const Snapshot& base,
                      const std::vector<pb::Transaction>&) -> Result<pb::Manifest> {
    dropped_ids.clear();
    pb::Manifest next = base.manifest;
    next.clear_transaction();
    next.clear_fragments();
    for (const pb::Fragment& fragment : base.manifest.fragments()) {
      bool drop = false;
      if (auto it = missing.find(fragment.id()); it != missing.end()) {
        for (const std::string& key : it->second) {
          for (const pb::DataFile& file : fragment.files()) drop |= file.path() == key;
          drop |= fragment.has_deletion() && fragment.deletion().path() == key;
        }
      }
      if (drop) {
        dropped_ids.insert(fragment.id());
        next.mutable_transaction()->add_removed_fragments(fragment.id());
      } else {
        *next.add_fragments() = fragment;
      }
    }
    return next;
  };
  STRATA_ASSIGN_OR_RETURN(CommitOutcome outcome,
                          CommitWithRetry(store, context.prefix, read, request));
  for (RepairReport::DroppedFragment& fragment : candidates) {
    if (dropped_ids.contains(fragment.fragment_id)) report.dropped.push_back(std::move(fragment));
  }
  report.committed_version = outcome.snapshot->version();
  if (committed != nullptr) *committed = outcome.snapshot;
  return report;
}

Result<RollbackReport> RollBackTable(ObjectStore& store, const std::string& prefix,
                                     const RollbackOptions& options, const TableOptions& table) {
  STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> versions, ListVersionNumbers(store, prefix));
  if (versions.empty()) {
    return Status::NotFound(fmt::format("no table at {}/{}", store.Describe(), prefix));
  }
  RollbackReport report;
  report.newest_version = versions.back();
  // Newest first, down to the first manifest that passes every check. Only Corruption
  // counts: an I/O error or a newer format says nothing about the manifest's content.
  SnapshotPtr intact;
  for (auto it = versions.rbegin(); it != versions.rend() && !intact; ++it) {
    Result<SnapshotPtr> loaded = LoadVersion(store, prefix, *it);
    if (loaded.ok()) {
      intact = std::move(*loaded);
    } else if (loaded.status().IsCorruption()) {
      report.corrupt.push_back({*it, std::string(loaded.status().message())});
    } else if (!loaded.status().IsNotFound()) {  // NotFound: removed since the listing
      return loaded.status().WithContext(fmt::format("rollback: reading version {}", *it));
    }
  }
  std::reverse(report.corrupt.begin(), report.corrupt.end());
  if (!intact) {
    return Status::Corruption(fmt::format(
        "rollback: no intact version of the table at {}/{}: all {} versions are corrupt",
        store.Describe(), prefix, versions.size()));
  }
  report.intact_version = intact->version();
  if (report.corrupt.empty() || !options.apply) return report;

  const std::string detail =
      fmt::format("rolled back to version {}: {} corrupt ({})", intact->version(),
                  report.corrupt.size() == 1
                      ? fmt::format("version {} is", report.corrupt[0].version)
                      : fmt::format("versions {}..{} are", report.corrupt.front().version,
                                    report.corrupt.back().version),
                  report.corrupt.back().problem);
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr committed,
                          CommitRollback(store, prefix, report.newest_version, *intact, detail,
                                         table.clock, table.random));
  report.committed_version = committed->version();
  return report;
}

}  // namespace strata::table::internal
