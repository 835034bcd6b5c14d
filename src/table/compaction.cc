// Compaction: rewrites runs of small fragments into fewer larger ones and fragments with many
// deleted rows without those rows, merges the key index into one segment, and commits the
// rewrite so that concurrent appends survive it and concurrent deletes of its sources fail
// it (Busy) instead of being lost.
//
// Invariant: a fragment the writer cut at the table's row or byte limit is never small, so a
// rewrite turns its small sources into full fragments and at most one small one, and
// repeated compaction converges instead of rewriting the same fragments again and again.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "strata/builder.h"
#include "table/commit.h"
#include "table/key_index.h"
#include "table/table_internal.h"

namespace strata::table::internal {
namespace {

// Below this many key-index segments, a pass with no fragments to rewrite does nothing.
constexpr int kMaxKeySegmentsWithoutMerge = 16;

int64_t DeletedRows(const pb::Fragment& fragment) {
  return fragment.has_deletion() ? fragment.deletion().num_deleted() : 0;
}
int64_t LiveRows(const pb::Fragment& fragment) {
  return fragment.physical_rows() - DeletedRows(fragment);
}

// The uncompressed bytes the writer measured for the fragment's files; unknown when a file
// predates the manifest recording them.
std::optional<int64_t> FragmentBytes(const pb::Fragment& fragment) {
  if (fragment.files_size() == 0) return std::nullopt;
  int64_t bytes = 0;
  for (const pb::DataFile& file : fragment.files()) {
    if (!file.has_uncompressed_bytes()) return std::nullopt;
    bytes += file.uncompressed_bytes();
  }
  return bytes;
}

// The share of FragmentBytes that the live rows take, taking deleted rows as average ones.
std::optional<int64_t> LiveBytes(const pb::Fragment& fragment) {
  const std::optional<int64_t> bytes = FragmentBytes(fragment);
  if (!bytes || fragment.physical_rows() <= 0) return bytes;
  return static_cast<int64_t>(static_cast<double>(*bytes) *
                              static_cast<double>(LiveRows(fragment)) /
                              static_cast<double>(fragment.physical_rows()));
}

// Sizes that decide what the planner merges.
struct Limits {
  // A fragment with this many live rows or bytes is full: the targets, but never more than
  // the table's fragment limits, where the writer cuts (so its fragments are always full).
  int64_t full_rows = 0;
  int64_t full_bytes = 0;
  // A group takes sources up to these sums. A target beyond the table's limit bounds
  // nothing (the writer cuts the output into full fragments anyway), so a run of small
  // fragments becomes full fragments and at most one small one, not one small one per group.
  int64_t group_rows = 0;
  int64_t group_bytes = 0;
};

Limits MakeLimits(const CompactionOptions& options, const TableOptions& table) {
  // As FragmentSetWriter cuts.
  const int64_t max_rows = std::max<int64_t>(1, table.max_rows_per_fragment);
  const int64_t max_bytes = std::max<int64_t>(1, table.max_bytes_per_fragment);
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max() / 2;
  Limits limits;
  limits.full_rows = std::min(options.target_rows_per_fragment, max_rows);
  limits.full_bytes = std::min(options.target_bytes_per_fragment, max_bytes);
  limits.group_rows =
      options.target_rows_per_fragment <= max_rows ? options.target_rows_per_fragment : kUnbounded;
  limits.group_bytes = options.target_bytes_per_fragment <= max_bytes
                           ? options.target_bytes_per_fragment
                           : kUnbounded;
  return limits;
}

// Fragments (positions in the read manifest) rewritten together into new fragments.
struct Group {
  std::vector<int> sources;
  int64_t live_rows = 0;
  int64_t live_bytes = 0;     // of the sources that record their size
  bool materializes = false;  // some source has deletions above the threshold
};

bool HeavilyDeleted(const pb::Fragment& fragment, const CompactionOptions& options) {
  return options.materialize_deletions && fragment.physical_rows() > 0 &&
         static_cast<double>(DeletedRows(fragment)) /
                 static_cast<double>(fragment.physical_rows()) >
             options.materialize_deletions_threshold;
}

// Which fragments to rewrite: runs of adjacent candidates (not full, or heavily deleted), each
// run cut where its live rows or bytes would exceed the group limits. A group is worth
// rewriting when it merges fragments or drops deleted rows; at most max_source_fragments
// sources in total.
std::vector<Group> PlanGroups(const pb::Manifest& manifest, const CompactionOptions& options,
                              const TableOptions& table) {
  const Limits limits = MakeLimits(options, table);
  std::vector<Group> groups;
  Group current;
  auto close = [&]() {
    if (current.sources.size() >= 2 || (current.sources.size() == 1 && current.materializes)) {
      groups.push_back(std::move(current));
    }
    current = Group();
  };
  for (int i = 0; i < manifest.fragments_size(); ++i) {
    const pb::Fragment& fragment = manifest.fragments(i);
    const int64_t live = LiveRows(fragment);
    const std::optional<int64_t> live_bytes = LiveBytes(fragment);
    const bool heavy = HeavilyDeleted(fragment, options);
    const bool full = live >= limits.full_rows || (live_bytes && *live_bytes >= limits.full_bytes);
    if (full && !heavy) {
      close();
      continue;
    }
    if (!current.sources.empty() &&
        (current.live_rows + live > limits.group_rows ||
         current.live_bytes + live_bytes.value_or(0) > limits.group_bytes)) {
      close();
    }
    current.sources.push_back(i);
    current.live_rows += live;
    current.live_bytes += live_bytes.value_or(0);
    current.materializes = current.materializes || heavy;
  }
  close();

  if (options.max_source_fragments <= 0) return groups;
  std::vector<Group> bounded;
  size_t budget = static_cast<size_t>(options.max_source_fragments);
  for (Group& group : groups) {
    if (budget == 0) break;
    if (group.sources.size() > budget) {
      group.sources.resize(budget);
      group.live_rows = 0;
      group.live_bytes = 0;
      group.materializes = false;
      for (int i : group.sources) {
        group.live_rows += LiveRows(manifest.fragments(i));
        group.live_bytes += LiveBytes(manifest.fragments(i)).value_or(0);
        group.materializes = group.materializes || HeavilyDeleted(manifest.fragments(i), options);
      }
      if (group.sources.size() < 2 && !group.materializes) break;
    }
    budget -= group.sources.size();
    bounded.push_back(std::move(group));
  }
  return bounded;
}

// Whether `written`, the rewrite of `group`, gives back fragments with the row counts of its
// sources (so no deleted row was dropped and nothing merged) and every source records its
// size. Committing it would change nothing, and the next pass would plan it again. The
// planner avoids such groups; this catches the rest (the bytes a rewrite measures can differ a
// little from the sum of its sources'). When a source lacks its size, the rewrite is kept:
// its fragments record theirs, so the next pass can tell that they are full.
bool RewriteChangesNothing(const Group& group, const pb::Manifest& manifest,
                           const std::vector<pb::Fragment>& written) {
  if (written.size() != group.sources.size()) return false;
  for (size_t k = 0; k < written.size(); ++k) {
    const pb::Fragment& source = manifest.fragments(group.sources[k]);
    if (!FragmentBytes(source) || written[k].physical_rows() != source.physical_rows()) {
      return false;
    }
  }
  return true;
}

// The rows of `batch` (physical rows [first, first + num_rows) of its fragment) that are not
// in `deleted`.
Result<RecordBatch> DropDeleted(const RecordBatch& batch, int64_t first,
                                const DeletionVector* deleted) {
  if (deleted == nullptr) return batch;
  std::vector<int64_t> live;
  live.reserve(static_cast<size_t>(batch.num_rows()));
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    if (!deleted->Contains(static_cast<uint32_t>(first + i))) live.push_back(i);
  }
  if (static_cast<int64_t>(live.size()) == batch.num_rows()) return batch;
  std::vector<Array> columns;
  columns.reserve(static_cast<size_t>(batch.num_columns()));
  for (const Array& column : batch.columns()) {
    STRATA_ASSIGN_OR_RETURN(Array taken, Take(column, live));
    columns.push_back(std::move(taken));
  }
  return RecordBatch::Make(batch.schema(), static_cast<int64_t>(live.size()), std::move(columns));
}

// Adds every entry of `segment` to `builder`, with local fragment positions mapped by
// `position` (old local -> new local; entries of unmapped fragments are dropped).
void MergeSegment(const KeySegment& segment, const std::vector<std::optional<uint32_t>>& position,
                  KeySegmentBuilder* builder) {
  for (int64_t i = 0; i < segment.num_entries(); ++i) {
    const LocalAddress local = segment.Address(i);
    const std::optional<uint32_t> mapped = position[local >> 32];
    if (!mapped) continue;
    const LocalAddress address = (uint64_t{*mapped} << 32) | (local & 0xffffffffu);
    if (segment.kind() == KeyKind::kInteger) {
      builder->AddInteger(segment.IntegerKey(i), address);
    } else {
      builder->AddString(segment.StringKey(i), address);
    }
  }
}

// What the rewrite produced before the commit assigns fragment ids.
struct Rewrite {
  std::vector<Group> groups;
  std::vector<std::vector<pb::Fragment>> outputs;  // per group, ids unset
  std::vector<uint32_t> source_ids;
  // The merged key segment (fragment_ids: old ids, then placeholders for new fragments at
  // new_positions[g][k]) and the paths of the read version's segments it replaces.
  std::optional<pb::KeySegment> segment;
  std::vector<std::vector<uint32_t>> new_positions;
  std::unordered_set<std::string> replaced_segments;
};

Result<pb::Manifest> BuildManifest(const Rewrite& rewrite, const Snapshot& base,
                                   const std::vector<pb::Transaction>& intervening) {
  if (std::optional<std::string> conflict =
          FindConflict(intervening, rewrite.source_ids, /*include_modified=*/true)) {
    return Status::Busy(fmt::format("commit conflict: {}; retry the compaction", *conflict));
  }
  for (uint32_t id : rewrite.source_ids) {
    if (base.FindFragment(id) == nullptr) {
      return Status::Busy(fmt::format(
          "commit conflict: fragment {} was removed by a concurrent commit; retry the compaction",
          id));
    }
  }
  const pb::Index* base_index = base.key_index();
  if (!rewrite.replaced_segments.empty()) {
    std::unordered_set<std::string> present;
    if (base_index != nullptr) {
      for (const pb::KeySegment& s : base_index->segments()) present.insert(s.path());
    }
    for (const std::string& path : rewrite.replaced_segments) {
      if (present.count(path) == 0) {
        return Status::Busy(fmt::format(
            "commit conflict: key index segment {} was replaced by a concurrent commit; retry "
            "the compaction",
            path));
      }
    }
  }

  pb::Manifest manifest = base.manifest;
  manifest.clear_transaction();
  pb::Transaction* txn = manifest.mutable_transaction();
  uint32_t next_id = base.manifest.next_fragment_id();
  // Ids per group's new fragments, and where each group goes: its first source.
  std::vector<std::vector<uint32_t>> new_ids(rewrite.groups.size());
  std::unordered_map<uint32_t, size_t> group_of_first;
  std::unordered_set<uint32_t> sources(rewrite.source_ids.begin(), rewrite.source_ids.end());
  size_t source_index = 0;
  for (size_t g = 0; g < rewrite.groups.size(); ++g) {
    group_of_first[rewrite.source_ids[source_index]] = g;
    source_index += rewrite.groups[g].sources.size();
    for (size_t k = 0; k < rewrite.outputs[g].size(); ++k) {
      new_ids[g].push_back(next_id);
      txn->add_added_fragments(next_id);
      ++next_id;
    }
  }
  for (uint32_t id : rewrite.source_ids) txn->add_removed_fragments(id);

  google::protobuf::RepeatedPtrField<pb::Fragment> fragments;
  for (const pb::Fragment& fragment : base.manifest.fragments()) {
    if (sources.count(fragment.id()) == 0) {
      *fragments.Add() = fragment;
      continue;
    }
    auto first = group_of_first.find(fragment.id());
    if (first == group_of_first.end()) continue;
    const size_t g = first->second;
    for (size_t k = 0; k < rewrite.outputs[g].size(); ++k) {
      pb::Fragment* added = fragments.Add();
      *added = rewrite.outputs[g][k];
      added->set_id(new_ids[g][k]);
    }
  }
  *manifest.mutable_fragments() = std::move(fragments);
  manifest.set_next_fragment_id(next_id);

  if (base_index != nullptr && (rewrite.segment || !rewrite.replaced_segments.empty())) {
    pb::Index* index = nullptr;
    for (pb::Index& candidate : *manifest.mutable_indexes()) {
      if (candidate.name() == kKeyIndexName) index = &candidate;
    }
    google::protobuf::RepeatedPtrField<pb::KeySegment> segments;
    for (const pb::KeySegment& s : base_index->segments()) {
      if (rewrite.replaced_segments.count(s.path()) == 0) *segments.Add() = s;
    }
    if (rewrite.segment) {
      pb::KeySegment* merged = segments.Add();
      *merged = *rewrite.segment;
      for (size_t g = 0; g < rewrite.new_positions.size(); ++g) {
        for (size_t k = 0; k < rewrite.new_positions[g].size(); ++k) {
          merged->set_fragment_ids(static_cast<int>(rewrite.new_positions[g][k]), new_ids[g][k]);
        }
      }
    }
    *index->mutable_segments() = std::move(segments);
  }
  return manifest;
}

}  // namespace

Result<CompactionResult> CompactTable(TableContext& context, const SnapshotPtr& read,
                                      const CompactionOptions& options, SnapshotPtr* committed) {
  if (options.target_rows_per_fragment <= 0) {
    return Status::InvalidArgument(fmt::format("target_rows_per_fragment must be positive, got {}",
                                               options.target_rows_per_fragment));
  }
  if (options.target_bytes_per_fragment <= 0) {
    return Status::InvalidArgument(fmt::format("target_bytes_per_fragment must be positive, got {}",
                                               options.target_bytes_per_fragment));
  }
  if (!(options.materialize_deletions_threshold >= 0 &&
        options.materialize_deletions_threshold <= 1)) {
    return Status::InvalidArgument(
        fmt::format("materialize_deletions_threshold must be in [0, 1], got {}",
                    options.materialize_deletions_threshold));
  }
  if (options.max_source_fragments < 0) {
    return Status::InvalidArgument(
        fmt::format("max_source_fragments must be >= 0, got {}", options.max_source_fragments));
  }

  const std::vector<Group> planned = PlanGroups(read->manifest, options, context.options);
  const pb::Index* key_index = read->key_index();
  const bool has_key_index = key_index != nullptr && read->key_column.has_value();
  const bool too_many_segments =
      has_key_index && key_index->segments_size() >= kMaxKeySegmentsWithoutMerge;
  if (planned.empty() && !too_many_segments) return CompactionResult();

  // --- Rewrite the groups ---------------------------------------------------------------
  Rewrite rewrite;
  CompactionResult result;
  int64_t rows_total = 0;
  for (const Group& group : planned) rows_total += group.live_rows;
  std::vector<int> all_columns(static_cast<size_t>(read->schema->num_fields()));
  for (size_t c = 0; c < all_columns.size(); ++c) all_columns[c] = static_cast<int>(c);
  int64_t rows_done = 0;
  if (options.progress) options.progress(0, rows_total);
  std::vector<std::optional<pb::KeySegment>> written_segments;
  for (const Group& group : planned) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FragmentSetWriter> writer,
                            FragmentSetWriter::Make(context, *read, read->schema));
    for (int i : group.sources) {
      const pb::Fragment& fragment = read->manifest.fragments(i);
      for (const pb::DataFile& file : fragment.files()) result.bytes_read += file.size();
      STRATA_ASSIGN_OR_RETURN(FragmentReader reader,
                              FragmentReader::Open(context, *read, fragment));
      for (int b = 0; b < reader.num_batches(); ++b) {
        STRATA_ASSIGN_OR_RETURN(RecordBatch batch, reader.ReadBatch(b, all_columns));
        STRATA_ASSIGN_OR_RETURN(RecordBatch live,
                                DropDeleted(batch, reader.batch_offset(b), reader.deletions()));
        if (live.num_rows() == 0) continue;
        STRATA_RETURN_IF_ERROR(writer->Write(live));
        rows_done += live.num_rows();
        if (options.progress) options.progress(rows_done, rows_total);
      }
    }
    STRATA_ASSIGN_OR_RETURN(WrittenFragments written, writer->Finish());
    if (RewriteChangesNothing(group, read->manifest, written.fragments)) {
      // Nothing references the new files; remove them rather than leave them to cleanup.
      // A failed delete only leaves an unreferenced file that cleanup removes later.
      for (const pb::Fragment& fragment : written.fragments) {
        for (const pb::DataFile& file : fragment.files()) {
          context.store->Delete(context.prefix + file.path()).IgnoreError();
        }
      }
      if (written.key_segment) {
        context.store->Delete(context.prefix + written.key_segment->path()).IgnoreError();
      }
      continue;
    }
    rewrite.groups.push_back(group);
    for (int i : group.sources) rewrite.source_ids.push_back(read->manifest.fragments(i).id());
    for (const pb::Fragment& fragment : written.fragments) {
      for (const pb::DataFile& file : fragment.files()) result.bytes_written += file.size();
      result.files_added += fragment.files_size();
    }
    result.rows_written += written.rows;
    written_segments.push_back(std::move(written.key_segment));
    rewrite.outputs.push_back(std::move(written.fragments));
  }

  const bool merge_index = has_key_index && (!rewrite.groups.empty() || too_many_segments);
  if (rewrite.groups.empty() && !merge_index) return CompactionResult();

  // --- Merge the key index ------------------------------------------------------------
  if (merge_index) {
    STRATA_ASSIGN_OR_RETURN(KeyKind kind,
                            KeyKindForType(*read->schema->field(*read->key_column)->type()));
    KeySegmentBuilder builder(kind);
    std::unordered_set<uint32_t> sources(rewrite.source_ids.begin(), rewrite.source_ids.end());
    std::vector<uint32_t> fragment_ids;  // of the merged segment, by local position
    std::unordered_map<uint32_t, uint32_t> position_of;
    for (const pb::KeySegment& entry : key_index->segments()) {
      rewrite.replaced_segments.insert(entry.path());
      STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const KeySegment> segment,
                              context.cache.Segment(*context.store, context.prefix, entry));
      // The manifest entry's list is authoritative (the cache keys segments by path).
      if (static_cast<size_t>(entry.fragment_ids_size()) != segment->fragment_ids().size()) {
        return Status::Corruption(
            fmt::format("{}: segment covers {} fragments, the manifest lists {}", entry.path(),
                        segment->fragment_ids().size(), entry.fragment_ids_size()));
      }
      std::vector<std::optional<uint32_t>> position(segment->fragment_ids().size());
      for (size_t p = 0; p < position.size(); ++p) {
        const uint32_t id = entry.fragment_ids(static_cast<int>(p));
        if (read->FindFragment(id) == nullptr || sources.count(id) != 0) continue;
        auto [it, inserted] = position_of.emplace(id, static_cast<uint32_t>(fragment_ids.size()));
        if (inserted) fragment_ids.push_back(id);
        position[p] = it->second;
      }
      MergeSegment(*segment, position, &builder);
    }
    for (size_t g = 0; g < rewrite.outputs.size(); ++g) {
      std::vector<uint32_t>& positions = rewrite.new_positions.emplace_back();
      for (size_t k = 0; k < rewrite.outputs[g].size(); ++k) {
        positions.push_back(static_cast<uint32_t>(fragment_ids.size()));
        fragment_ids.push_back(0);  // assigned at commit
      }
      if (!written_segments[g]) {
        if (positions.empty()) continue;
        return Status::Internal(
            fmt::format("compaction: the writer of {} new fragments returned no key segment",
                        positions.size()));
      }
      // The writer's segment covers exactly this group's new fragments, in order.
      STRATA_ASSIGN_OR_RETURN(
          std::shared_ptr<const KeySegment> segment,
          KeySegment::Load(*context.store, context.prefix, *written_segments[g]));
      if (segment->fragment_ids().size() != positions.size()) {
        return Status::Internal(fmt::format(
            "compaction: key segment {} covers {} fragments, the rewrite wrote {}",
            written_segments[g]->path(), segment->fragment_ids().size(), positions.size()));
      }
      std::vector<std::optional<uint32_t>> position(positions.begin(), positions.end());
      MergeSegment(*segment, position, &builder);
    }
    if (builder.num_entries() > 0) {
      STRATA_ASSIGN_OR_RETURN(
          pb::KeySegment merged,
          builder.Finish(*context.store, context.prefix, std::move(fragment_ids),
                         context.options.clock, context.options.random));
      rewrite.segment = std::move(merged);
    }
  }
  // The writers' own segments were merged (or there is no key index): nothing will reference
  // them, so remove them now rather than leave them to cleanup (which also catches any
  // that fail to delete here).
  for (const std::optional<pb::KeySegment>& segment : written_segments) {
    if (segment) context.store->Delete(context.prefix + segment->path()).IgnoreError();
  }

  // --- Commit ---------------------------------------------------------------------------
  CommitRequest request;
  request.operation = "compact";
  request.detail =
      rewrite.groups.empty()
          ? fmt::format("merged {} key index segments", rewrite.replaced_segments.size())
          : fmt::format("rewrote {} fragments in {} groups", rewrite.source_ids.size(),
                        rewrite.groups.size());
  request.max_retries = context.options.commit_retries;
  request.clock = context.options.clock;
  request.random = context.options.random;
  request.build = [&rewrite](const Snapshot& base,
                             const std::vector<pb::Transaction>& intervening) {
    return BuildManifest(rewrite, base, intervening);
  };
  STRATA_ASSIGN_OR_RETURN(CommitOutcome outcome,
                          CommitWithRetry(*context.store, context.prefix, read, request));

  for (uint32_t id : rewrite.source_ids) {
    const pb::Fragment& fragment = *read->FindFragment(id);
    result.files_removed += fragment.files_size() + (fragment.has_deletion() ? 1 : 0);
  }
  result.fragments_removed = static_cast<int>(rewrite.source_ids.size());
  for (const std::vector<pb::Fragment>& output : rewrite.outputs) {
    result.fragments_added += static_cast<int>(output.size());
  }
  result.version = outcome.snapshot->version();
  if (committed != nullptr) *committed = outcome.snapshot;
  return result;
}

}  // namespace strata::table::internal
