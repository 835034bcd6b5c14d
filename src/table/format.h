// Table format basics: object keys, the envelope kinds of table objects (manifest, deletion
// file, key segment; the envelope itself is util/envelope.h), schema <-> manifest conversion,
// and Snapshot, a decoded manifest with the lookups readers need. Byte layouts:
// docs/format/table.md §2 (keys), §3 (envelope), §4 (manifest).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/expr.h"
#include "strata/status.h"
#include "strata/type.h"
#include "table/manifest.pb.h"
#include "util/clock.h"
#include "util/envelope.h"

namespace strata::table::internal {

// --- Object keys (relative to the table prefix) ---------------------------------------
inline constexpr std::string_view kVersionsDir = "_versions/";
inline constexpr std::string_view kDataDir = "data/";
inline constexpr std::string_view kDeletionsDir = "_deletions/";
inline constexpr std::string_view kIndicesDir = "_indices/";
// Advisory: the newest version some writer saw. The only object that is overwritten.
inline constexpr std::string_view kLatestHintKey = "_latest_version_hint";
inline constexpr std::string_view kKeyIndexName = "key_idx";
// Tags and branches (docs/format/table.md §13): "_refs/tags/<label>.manifest" holds a copy
// of the tagged version's manifest, "_refs/branches/<name>" marks a branch whose table lives
// under "_branches/<name>/".
inline constexpr std::string_view kTagsDir = "_refs/tags/";
inline constexpr std::string_view kBranchRefsDir = "_refs/branches/";
inline constexpr std::string_view kBranchesDir = "_branches/";
// A file path of a branch's manifest that names a file of an ancestor table starts with one
// "../" per prefix component to go up ("../../data/<uuid>.arrow": the parent's data file).
inline constexpr std::string_view kParentPathStep = "../";

// The object key of `path` (a manifest's file path, relative to the table prefix), resolving
// leading "../" steps against `prefix`. A path with more steps than `prefix` has components
// keeps the steps left over (the object store then refuses the key).
std::string FileKey(std::string_view prefix, std::string_view path);
// How many leading "../" steps `path` has (0 = a file of the table itself).
int ParentSteps(std::string_view path);

// "_versions/00000000000000000042.manifest"
std::string ManifestKey(uint64_t version);
// The version of a manifest key, or nullopt when `key` (relative) is not one.
std::optional<uint64_t> ParseManifestKey(std::string_view key);
// "data/<uuid v7>.arrow", "_deletions/<fragment>-<version>-<random hex>.bin",
// "_indices/<uuid v7>.keys", drawn from `clock` and `random` (TableOptions'; null = the
// system sources).
std::string NewDataFileKey(Clock* clock = nullptr, RandomSource* random = nullptr);
std::string NewDeletionFileKey(uint32_t fragment_id, uint64_t read_version,
                               RandomSource* random = nullptr);
std::string NewKeySegmentKey(Clock* clock = nullptr, RandomSource* random = nullptr);

// --- Envelope kinds ------------------------------------------------------------------
// Table objects are stored in the checksummed envelope of util/envelope.h.
inline constexpr std::string_view kManifestKind = "MNFT";
inline constexpr std::string_view kDeletionKind = "DELV";
inline constexpr std::string_view kKeySegmentKind = "KIDX";

std::string EncodeManifest(const pb::Manifest& manifest);
Result<pb::Manifest> DecodeManifest(std::string_view bytes, std::string_view what);

// --- Schema ---------------------------------------------------------------------------
// Validates a schema for a new table (types storable, names unique and non-empty, primary
// key rules from table.h) and assigns field ids 0..n-1.
Result<pb::Schema> SchemaToProto(const Schema& schema);
Result<SchemaPtr> SchemaFromProto(const pb::Schema& schema);
// Index of the field carrying kPrimaryKeyMetadata, InvalidArgument when it breaks the rules.
Result<std::optional<int>> FindPrimaryKey(const Schema& schema);

// Statistics as the manifest stores them.
pb::ColumnStats StatsToProto(const expr::ColumnStatistics& stats);
expr::ColumnStatistics StatsFromProto(const pb::ColumnStats& stats, int64_t num_rows);

// --- Snapshot --------------------------------------------------------------------------
// What reading one fragment needs that depends on the manifest alone: where each schema
// column comes from and where each batch starts, checked once per version and fragment (on
// its first read: Snapshot::LayoutOf) instead of on every open of the fragment (a point
// lookup opens one per read).
struct FragmentLayout {
  // Corruption when the manifest's entries for the fragment disagree (files cut into
  // different batches, a column in two files, batch rows not adding up, statistics missing);
  // the fields below are then empty. Reported when the fragment is read, not before.
  Status status;
  // Per schema column: (file index, column in file), or (-1, -1) when no file holds it.
  std::vector<std::pair<int, int>> column_source;
  std::vector<int64_t> batch_offsets;  // first row of each batch
};

// One version, decoded. Immutable once built; shared between readers.
struct Snapshot {
  pb::Manifest manifest;
  SchemaPtr schema;
  std::vector<int32_t> field_ids;  // per schema column
  std::optional<int> key_column;
  std::unordered_map<uint32_t, int> fragment_index;  // fragment id -> position in manifest
  std::unordered_map<int32_t, int> column_of_field;  // field id -> schema column
  // Per fragment in manifest order, made on first use (the first of threads racing to make
  // one is kept) and kept while the snapshot lives: a column and a batch cost 8 bytes each,
  // a small part of what the manifest's own entry for the fragment holds (a statistics entry
  // per column and batch).
  mutable std::vector<std::atomic<std::shared_ptr<const FragmentLayout>>> layouts;

  uint64_t version() const { return manifest.version(); }
  const pb::Fragment* FindFragment(uint32_t id) const;
  // The layout of `fragment`: kept when it is one of this manifest's fragments, made for the
  // caller otherwise. Thread safe.
  std::shared_ptr<const FragmentLayout> LayoutOf(const pb::Fragment& fragment) const;
  // The key index, if the table has one.
  const pb::Index* key_index() const;
  int64_t live_rows() const;  // sum of physical_rows - num_deleted
};
using SnapshotPtr = std::shared_ptr<const Snapshot>;

Result<SnapshotPtr> MakeSnapshot(pb::Manifest manifest);

// The layout of `fragment` read through `snapshot`'s schema.
FragmentLayout MakeFragmentLayout(const Snapshot& snapshot, const pb::Fragment& fragment);

}  // namespace strata::table::internal
