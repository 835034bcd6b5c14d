// Tags and branches of a table (docs/format/table.md §13).
//
// A tag is a copy of one version's manifest under "_refs/tags/<label>.manifest"; a branch is a
// table of its own under "_branches/<name>/" (marked by "_refs/branches/<name>") whose first
// version is a copy of one parent version with every file path pointing back at the parent's
// files ("../../data/<uuid>.arrow"). Nothing is copied but the manifest, so both are cheap;
// what has to hold is that no cleanup deletes a file a tag or a branch still reads. Cleanup
// (cleanup.cc) therefore deletes its manifests first and only then reads the refs, and tags
// and branches are created in the opposite order (ref first, then a check that the version
// still exists): whichever of the two comes second sees the other.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <vector>

#include "strata/table.h"
#include "table/commit.h"
#include "table/table_internal.h"

namespace strata::table {

using internal::SnapshotPtr;

namespace internal {
namespace {

constexpr size_t kMaxRefNameLength = 128;
constexpr std::string_view kTagSuffix = ".manifest";
// A branch's table lies two prefix components below its parent's ("_branches/<name>/").
constexpr int kBranchDepth = 2;

std::string TagKey(std::string_view label) {
  return fmt::format("{}{}{}", kTagsDir, label, kTagSuffix);
}

std::string BranchRefKey(std::string_view name) {
  return fmt::format("{}{}", kBranchRefsDir, name);
}

// Every file path of `manifest`, as written.
template <typename F>
void ForEachFilePath(const pb::Manifest& manifest, F&& f) {
  for (const pb::Fragment& fragment : manifest.fragments()) {
    for (const pb::DataFile& file : fragment.files()) f(file.path());
    if (fragment.has_deletion()) f(fragment.deletion().path());
  }
  for (const pb::Index& index : manifest.indexes()) {
    for (const pb::KeySegment& segment : index.segments()) f(segment.path());
  }
}

// Adds the paths of `manifest` (of a table `depth` components below the table of interest)
// that name that table's own files, as keys relative to its prefix.
void AddFilesAtDepth(const pb::Manifest& manifest, int depth,
                     std::unordered_set<std::string>* out) {
  ForEachFilePath(manifest, [&](const std::string& path) {
    if (ParentSteps(path) == depth) {
      out->insert(path.substr(static_cast<size_t>(depth) * kParentPathStep.size()));
    }
  });
}

// The names under `dir` (a prefix ending in '/') that end with `suffix`, suffix removed, sorted.
Result<std::vector<std::string>> ListNames(ObjectStore& store, const std::string& dir,
                                           std::string_view suffix) {
  STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, store.List(dir));
  std::vector<std::string> names;
  for (const ObjectMeta& object : objects) {
    std::string_view name = std::string_view(object.key).substr(dir.size());
    if (name.find('/') != std::string_view::npos || !name.ends_with(suffix)) continue;
    name.remove_suffix(suffix.size());
    if (!CheckRefName("ref", name).ok()) continue;  // not one of ours
    names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<pb::Manifest> ReadTagManifest(ObjectStore& store, const std::string& prefix,
                                     std::string_view label) {
  const std::string key = prefix + TagKey(label);
  Result<Buffer> bytes = store.Get(key);
  if (!bytes.ok()) {
    if (bytes.status().IsNotFound()) {
      return Status::NotFound(
          fmt::format("no tag '{}' on the table at {}", label, TableLocation(store, prefix)));
    }
    return bytes.status();
  }
  return DecodeManifest(bytes->view(), key);
}

// The files (relative to the prefix of the table `depth` components up) that the table at
// `prefix` uses: with `include_history`, every kept version's; always, its tags' and, through
// its branches, theirs (recursively).
Status CollectSubtree(ObjectStore& store, const std::string& prefix, int depth,
                      bool include_history, std::unordered_set<std::string>* out) {
  if (include_history) {
    STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> versions, ListVersionNumbers(store, prefix));
    std::optional<std::vector<RolledBackRange>> rolled_back;  // read when needed
    for (uint64_t version : versions) {
      Result<SnapshotPtr> loaded = LoadVersion(store, prefix, version);
      if (!loaded.ok() && loaded.status().IsNotFound()) continue;  // cleaned up meanwhile
      if (!loaded.ok() && loaded.status().IsCorruption()) {
        if (!rolled_back) rolled_back = RolledBackRanges(store, prefix, versions);
        if (FindRolledBack(*rolled_back, version) != nullptr) continue;
      }
      if (!loaded.ok()) {
        return loaded.status().WithContext(fmt::format(
            "cannot read version {} of the table at {}, so cannot tell which files it uses",
            version, TableLocation(store, prefix)));
      }
      AddFilesAtDepth((*loaded)->manifest, depth, out);
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> tags,
                          ListNames(store, prefix + std::string(kTagsDir), kTagSuffix));
  for (const std::string& label : tags) {
    Result<pb::Manifest> manifest = ReadTagManifest(store, prefix, label);
    if (!manifest.ok() && manifest.status().IsNotFound()) continue;  // deleted meanwhile
    if (!manifest.ok()) return manifest.status();
    AddFilesAtDepth(*manifest, depth, out);
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> branches,
                          ListNames(store, prefix + std::string(kBranchRefsDir), ""));
  for (const std::string& name : branches) {
    STRATA_RETURN_IF_ERROR(CollectSubtree(store, Table::BranchPrefix(prefix, name),
                                          depth + kBranchDepth, /*include_history=*/true, out));
  }
  return Status::OK();
}

// Whether something still keeps `version` readable: its manifest in the history, or a tag
// (other than `except_label`) of it.
Result<bool> VersionStillKept(ObjectStore& store, const std::string& prefix, uint64_t version,
                              std::string_view except_label) {
  STRATA_ASSIGN_OR_RETURN(bool in_history, store.Exists(prefix + ManifestKey(version)));
  if (in_history) return true;
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> tags,
                          ListNames(store, prefix + std::string(kTagsDir), kTagSuffix));
  for (const std::string& label : tags) {
    if (label == except_label) continue;
    Result<pb::Manifest> manifest = ReadTagManifest(store, prefix, label);
    if (manifest.ok() && manifest->version() == version) return true;
  }
  return false;
}

// Deletes those of `candidates` (own files) that no version, tag or branch uses any more.
Status SweepFiles(ObjectStore& store, const std::string& prefix,
                  const std::unordered_set<std::string>& candidates) {
  if (candidates.empty()) return Status::OK();
  std::unordered_set<std::string> used;
  STRATA_RETURN_IF_ERROR(CollectSubtree(store, prefix, 0, /*include_history=*/true, &used));
  for (const std::string& key : candidates) {
    if (used.contains(key)) continue;
    Status deleted = store.Delete(prefix + key);
    if (!deleted.ok() && !deleted.IsNotFound()) return deleted;
  }
  return Status::OK();
}

Result<SnapshotPtr> SnapshotAt(const Table::Impl& impl, uint64_t version) {
  SnapshotPtr current = impl.current();
  if (version == 0 || version == current->version()) return current;
  return LoadVersion(*impl.context->store, impl.context->prefix, version);
}

}  // namespace

Status CollectFilesKeptByRefs(ObjectStore& store, const std::string& prefix,
                              std::unordered_set<std::string>* out) {
  return CollectSubtree(store, prefix, 0, /*include_history=*/false, out);
}

}  // namespace internal

Status CheckRefName(std::string_view what, std::string_view name) {
  const bool ok =
      !name.empty() && name.size() <= internal::kMaxRefNameLength && name.front() != '.' &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
      });
  if (ok) return Status::OK();
  return Status::InvalidArgument(
      fmt::format("{} '{}' must be 1 to {} characters of A-Z a-z 0-9 . _ - and not start with '.'",
                  what, name, internal::kMaxRefNameLength));
}

// --- Tags -------------------------------------------------------------------------------

Result<TagInfo> Table::CreateTag(std::string_view label, uint64_t version) {
  STRATA_RETURN_IF_ERROR(CheckRefName("tag label", label));
  ObjectStore& store = *impl_->context->store;
  const std::string& prefix = impl_->context->prefix;
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr snapshot, internal::SnapshotAt(*impl_, version));
  const std::string key = prefix + internal::TagKey(label);
  Status put = store.PutIfAbsent(key, internal::EncodeManifest(snapshot->manifest));
  if (put.IsAlreadyExists()) {
    Result<pb::Manifest> existing = internal::ReadTagManifest(store, prefix, label);
    return Status::AlreadyExists(existing.ok() ? fmt::format("tag '{}' already exists (version {})",
                                                             label, existing->version())
                                               : fmt::format("tag '{}' already exists", label));
  }
  STRATA_RETURN_IF_ERROR(put);
  // A cleanup that removed the version before the tag was written did not see the tag and
  // may delete the version's files: give the tag up then (see the top of this file).
  STRATA_ASSIGN_OR_RETURN(bool kept,
                          internal::VersionStillKept(store, prefix, snapshot->version(), label));
  if (!kept) {
    store.Delete(key).IgnoreError();
    return Status::NotFound(
        fmt::format("version {} was removed by a cleanup while tag '{}' was being created",
                    snapshot->version(), label));
  }
  return TagInfo{std::string(label), snapshot->version(), snapshot->manifest.timestamp_micros()};
}

Result<std::vector<TagInfo>> Table::ListTags() const {
  ObjectStore& store = *impl_->context->store;
  const std::string& prefix = impl_->context->prefix;
  STRATA_ASSIGN_OR_RETURN(
      std::vector<std::string> labels,
      internal::ListNames(store, prefix + std::string(internal::kTagsDir), internal::kTagSuffix));
  std::vector<TagInfo> tags;
  for (const std::string& label : labels) {
    Result<pb::Manifest> manifest = internal::ReadTagManifest(store, prefix, label);
    if (!manifest.ok() && manifest.status().IsNotFound()) continue;  // deleted meanwhile
    if (!manifest.ok()) return manifest.status();
    tags.push_back(TagInfo{label, manifest->version(), manifest->timestamp_micros()});
  }
  return tags;
}

Status Table::DeleteTag(std::string_view label) {
  STRATA_RETURN_IF_ERROR(CheckRefName("tag label", label));
  ObjectStore& store = *impl_->context->store;
  const std::string& prefix = impl_->context->prefix;
  STRATA_ASSIGN_OR_RETURN(pb::Manifest manifest, internal::ReadTagManifest(store, prefix, label));
  std::unordered_set<std::string> candidates;
  internal::AddFilesAtDepth(manifest, 0, &candidates);
  Status deleted = store.Delete(prefix + internal::TagKey(label));
  if (!deleted.ok() && !deleted.IsNotFound()) return deleted;
  return internal::SweepFiles(store, prefix, candidates);
}

Result<std::shared_ptr<Table>> Table::CheckoutTag(std::string_view label) const {
  STRATA_RETURN_IF_ERROR(CheckRefName("tag label", label));
  STRATA_ASSIGN_OR_RETURN(
      pb::Manifest manifest,
      internal::ReadTagManifest(*impl_->context->store, impl_->context->prefix, label));
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr snapshot, internal::MakeSnapshot(std::move(manifest)));
  auto impl = std::make_unique<Impl>();
  impl->context = impl_->context;
  impl->read_only = true;
  impl->Advance(std::move(snapshot));
  return std::shared_ptr<Table>(new Table(std::move(impl)));
}

// --- Branches ---------------------------------------------------------------------------

std::string Table::BranchPrefix(std::string_view prefix, std::string_view name) {
  return fmt::format("{}{}{}/", prefix, internal::kBranchesDir, name);
}

Result<std::shared_ptr<Table>> Table::CreateBranch(std::string_view name, uint64_t version) {
  STRATA_RETURN_IF_ERROR(CheckRefName("branch name", name));
  const std::shared_ptr<internal::TableContext>& context = impl_->context;
  ObjectStore& store = *context->store;
  const std::string& prefix = context->prefix;
  STRATA_ASSIGN_OR_RETURN(SnapshotPtr snapshot, internal::SnapshotAt(*impl_, version));
  const std::string ref_key = prefix + internal::BranchRefKey(name);
  const std::string branch_prefix = BranchPrefix(prefix, name);
  Status put = store.PutIfAbsent(ref_key, std::to_string(snapshot->version()));
  if (put.IsAlreadyExists()) {
    return Status::AlreadyExists(fmt::format("branch '{}' already exists", name));
  }
  STRATA_RETURN_IF_ERROR(put);

  pb::Manifest manifest = snapshot->manifest;
  auto rebase = [](std::string* path) {
    path->insert(0, fmt::format("{}{}", internal::kParentPathStep, internal::kParentPathStep));
  };
  for (pb::Fragment& fragment : *manifest.mutable_fragments()) {
    for (pb::DataFile& file : *fragment.mutable_files()) rebase(file.mutable_path());
    if (fragment.has_deletion()) rebase(fragment.mutable_deletion()->mutable_path());
  }
  for (pb::Index& index : *manifest.mutable_indexes()) {
    for (pb::KeySegment& segment : *index.mutable_segments()) rebase(segment.mutable_path());
  }
  manifest.clear_table_uuid();
  manifest.clear_transaction();
  manifest.mutable_transaction()->set_detail(fmt::format("branch '{}' of {} at version {}", name,
                                                         internal::TableLocation(store, prefix),
                                                         snapshot->version()));
  Result<SnapshotPtr> created = internal::CommitCreate(
      store, branch_prefix, std::move(manifest), context->options.clock, context->options.random);
  if (!created.ok()) {
    store.Delete(ref_key).IgnoreError();
    return created.status().WithContext(fmt::format("creating branch '{}'", name));
  }
  // As for a tag: the version must have outlived the ref's creation, or a cleanup that did
  // not see the branch may delete its files.
  STRATA_ASSIGN_OR_RETURN(bool kept,
                          internal::VersionStillKept(store, prefix, snapshot->version(), {}));
  if (!kept) {
    store.DeletePrefix(branch_prefix).status().IgnoreError();
    store.Delete(ref_key).IgnoreError();
    return Status::NotFound(
        fmt::format("version {} was removed by a cleanup while branch '{}' was being created",
                    snapshot->version(), name));
  }
  auto impl = std::make_unique<Impl>();
  impl->context =
      std::make_shared<internal::TableContext>(context->store, branch_prefix, context->options);
  impl->Advance(std::move(*created));
  return std::shared_ptr<Table>(new Table(std::move(impl)));
}

Result<std::vector<BranchInfo>> Table::ListBranches() const {
  ObjectStore& store = *impl_->context->store;
  const std::string& prefix = impl_->context->prefix;
  STRATA_ASSIGN_OR_RETURN(
      std::vector<std::string> names,
      internal::ListNames(store, prefix + std::string(internal::kBranchRefsDir), ""));
  std::vector<BranchInfo> branches;
  for (const std::string& name : names) {
    Result<Buffer> bytes = store.Get(prefix + internal::BranchRefKey(name));
    if (!bytes.ok() && bytes.status().IsNotFound()) continue;  // deleted meanwhile
    if (!bytes.ok()) return bytes.status();
    BranchInfo info;
    info.name = name;
    info.forked_from = std::strtoull(std::string(bytes->view()).c_str(), nullptr, 10);
    info.prefix = BranchPrefix(prefix, name);
    branches.push_back(std::move(info));
  }
  return branches;
}

Status Table::DeleteBranch(std::string_view name) {
  STRATA_RETURN_IF_ERROR(CheckRefName("branch name", name));
  ObjectStore& store = *impl_->context->store;
  const std::string& prefix = impl_->context->prefix;
  const std::string ref_key = prefix + internal::BranchRefKey(name);
  const std::string branch_prefix = BranchPrefix(prefix, name);
  STRATA_ASSIGN_OR_RETURN(bool has_ref, store.Exists(ref_key));
  STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, store.List(branch_prefix));
  if (!has_ref && objects.empty()) {
    return Status::NotFound(fmt::format("no branch '{}' of the table at {}", name,
                                        internal::TableLocation(store, prefix)));
  }
  // This table's files the branch (and its branches) used: the candidates to delete once it
  // is gone.
  std::unordered_set<std::string> candidates;
  STRATA_RETURN_IF_ERROR(internal::CollectSubtree(store, branch_prefix, internal::kBranchDepth,
                                                  /*include_history=*/true, &candidates));
  STRATA_RETURN_IF_ERROR(store.DeletePrefix(branch_prefix).status());
  Status deleted = store.Delete(ref_key);
  if (!deleted.ok() && !deleted.IsNotFound()) return deleted;
  return internal::SweepFiles(store, prefix, candidates);
}

}  // namespace strata::table
