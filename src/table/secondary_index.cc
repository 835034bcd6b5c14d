// Secondary indexes (docs/format/table.md §14): index files written by upper layers, recorded
// as segments of a named index in the manifest. The table only stores and carries them; what
// a file holds is its builder's business.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "strata/table.h"
#include "table/commit.h"
#include "table/table_internal.h"
#include "util/uuid.h"

namespace strata::table {

using internal::SnapshotPtr;

namespace {

constexpr size_t kMaxExtensionLength = 16;

Status CheckExtension(std::string_view extension) {
  const bool ok = !extension.empty() && extension.size() <= kMaxExtensionLength &&
                  std::all_of(extension.begin(), extension.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                  });
  if (ok) return Status::OK();
  return Status::InvalidArgument(
      fmt::format("index file extension '{}' must be 1 to {} characters of a-z 0-9", extension,
                  kMaxExtensionLength));
}

// Whether some fragment of `segment` is in `base`.
bool CoversLiveFragment(const internal::Snapshot& base, const pb::KeySegment& segment) {
  return std::any_of(segment.fragment_ids().begin(), segment.fragment_ids().end(),
                     [&](uint32_t id) { return base.FindFragment(id) != nullptr; });
}

}  // namespace

Result<std::string> Table::WriteIndexFile(std::string_view extension, std::string_view bytes) {
  STRATA_RETURN_IF_ERROR(CheckExtension(extension));
  const internal::TableContext& context = *impl_->context;
  Clock& clock = context.options.clock != nullptr ? *context.options.clock : *SystemClock();
  RandomSource& random =
      context.options.random != nullptr ? *context.options.random : *SystemRandom();
  const std::string path =
      fmt::format("{}{}.{}", internal::kIndicesDir, UuidV7(clock, random).ToString(), extension);
  STRATA_RETURN_IF_ERROR(
      context.store->Put(context.prefix + path, bytes).WithContext("writing an index file"));
  return path;
}

Result<Buffer> Table::ReadIndexFile(std::string_view path) const {
  const internal::TableContext& context = *impl_->context;
  const std::string key = internal::FileKey(context.prefix, path);
  Result<Buffer> bytes = context.store->Get(key);
  if (!bytes.ok()) return bytes.status().WithContext(fmt::format("reading index file {}", key));
  return bytes;
}

Result<uint64_t> Table::AddIndexSegments(std::string_view name, std::string_view type,
                                         std::string_view column,
                                         const std::vector<IndexSegmentInfo>& segments) {
  if (impl_->read_only) {
    return Status::InvalidArgument(
        fmt::format("table is checked out at version {} (read-only)", impl_->current()->version()));
  }
  if (name.empty() || name == internal::kKeyIndexName) {
    return Status::InvalidArgument(fmt::format("'{}' cannot name a secondary index", name));
  }
  if (type.empty()) return Status::InvalidArgument("a secondary index needs a type");
  for (const IndexSegmentInfo& segment : segments) {
    if (segment.fragment_ids.empty()) {
      return Status::InvalidArgument(
          fmt::format("index segment {} covers no fragment", segment.path));
    }
  }
  SnapshotPtr read = impl_->current();
  auto build = [&](const internal::Snapshot& base,
                   const std::vector<pb::Transaction>&) -> Result<pb::Manifest> {
    const int column_index = base.schema->GetFieldIndex(column);
    if (column_index < 0) {
      return Status::InvalidArgument(fmt::format("index '{}': no column '{}'", name, column));
    }
    const int32_t field_id = base.field_ids[static_cast<size_t>(column_index)];
    pb::Manifest manifest = base.manifest;
    manifest.clear_transaction();
    pb::Index* index = nullptr;
    for (pb::Index& candidate : *manifest.mutable_indexes()) {
      if (candidate.name() == name) index = &candidate;
    }
    if (index == nullptr) {
      index = manifest.add_indexes();
      index->set_name(std::string(name));
      index->set_type(std::string(type));
      index->set_field_id(field_id);
    } else if (index->type() != type || index->field_id() != field_id) {
      return Status::InvalidArgument(
          fmt::format("index '{}' already exists with type '{}' over field {}", name, index->type(),
                      index->field_id()));
    }
    google::protobuf::RepeatedPtrField<pb::KeySegment> kept;
    for (const pb::KeySegment& existing : index->segments()) {
      if (CoversLiveFragment(base, existing)) *kept.Add() = existing;
    }
    for (const IndexSegmentInfo& segment : segments) {
      const bool all_live =
          std::all_of(segment.fragment_ids.begin(), segment.fragment_ids.end(),
                      [&](uint32_t id) { return base.FindFragment(id) != nullptr; });
      if (!all_live) continue;  // a concurrent compaction rewrote its rows
      pb::KeySegment* added = kept.Add();
      added->set_path(segment.path);
      for (uint32_t id : segment.fragment_ids) added->add_fragment_ids(id);
      added->set_num_entries(segment.num_entries);
      added->set_size(segment.size);
    }
    *index->mutable_segments() = std::move(kept);
    return manifest;
  };
  internal::CommitRequest request;
  request.operation = "create_index";
  request.detail = std::string(name);
  request.max_retries = impl_->context->options.commit_retries;
  request.build = build;
  request.clock = impl_->context->options.clock;
  request.random = impl_->context->options.random;
  STRATA_ASSIGN_OR_RETURN(
      internal::CommitOutcome outcome,
      internal::CommitWithRetry(*impl_->context->store, impl_->context->prefix, read, request));
  impl_->Advance(outcome.snapshot);
  return outcome.snapshot->version();
}

}  // namespace strata::table
