// Where the LSM tree keeps its objects beside the base table, and the names of things
// shared by every part of the lsm layer (docs/format/lsm.md).
//
// A store at prefix P holds the base table at P (P/_versions/, P/data/, ...) and:
//   P/_lsm/shards/<uuid>                            registry: one empty object per shard
//   P/_lsm/<uuid>/manifest/<version:020>.shard      the shard manifest chain
//   P/_lsm/<uuid>/manifest/_latest_hint             advisory newest version (overwritten)
//   P/_lsm/<uuid>/wal/<epoch:020>-<segment:010>.wal WAL segments
//   P/_lsm/<uuid>/gen/<generation:020>-<8 hex>/     generation tables (+ bloom.bin)
// The base table records, per shard, the highest generation merged into it as table
// metadata "strata:lsm:merged:<uuid>" = decimal generation number.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "lsm/lsm.pb.h"
#include "strata/status.h"
#include "strata/type.h"
#include "util/clock.h"
#include "util/uuid.h"

namespace strata::lsm {

inline constexpr std::string_view kLsmDir = "_lsm/";
inline constexpr std::string_view kShardRegistryDir = "_lsm/shards/";
inline constexpr std::string_view kMergedWatermarkPrefix = "strata:lsm:merged:";
// Name of the generation tables' tombstone column (bool, non-null; true = deletion).
inline constexpr std::string_view kTombstoneColumn = "_strata_tombstone";
// Envelope kind of shard manifests and of generation bloom filters.
inline constexpr std::string_view kShardManifestKind = "SHRD";
inline constexpr std::string_view kBloomKind = "BLOM";
inline constexpr std::string_view kBloomObject = "bloom.bin";

// The shard of a writer identity: UUIDv5(NAMESPACE_OID, instance_id, or "default" when
// empty). Deterministic, so a restarted instance writes the same shard.
Uuid DeriveShardId(std::string_view instance_id);

// "<P>_lsm/<uuid>/" — every shard key below is relative to the store prefix P.
std::string ShardDir(std::string_view store_prefix, const Uuid& shard);
std::string ShardRegistryKey(std::string_view store_prefix, const Uuid& shard);
std::string ShardManifestKey(std::string_view store_prefix, const Uuid& shard, uint64_t version);
// "<P>_lsm/<uuid>/manifest/": the manifest versions and the hint.
std::string ShardManifestDir(std::string_view store_prefix, const Uuid& shard);
std::string ShardLatestHintKey(std::string_view store_prefix, const Uuid& shard);
// Parses the file name part of a manifest version key ("<version:020>.shard").
std::optional<uint64_t> ParseShardManifestName(std::string_view name);
std::string WalSegmentKey(std::string_view store_prefix, const Uuid& shard, uint64_t epoch,
                          uint64_t segment);
// Parses the file name part of a WAL segment key ("<epoch:020>-<segment:010>.wal").
std::optional<std::pair<uint64_t, uint64_t>> ParseWalSegmentName(std::string_view name);
// A fresh generation path relative to the shard dir: "gen/<generation:020>-<8 hex>/".
// The random part comes from `random` (null = the system source).
std::string NewGenerationPath(uint64_t generation, RandomSource* random = nullptr);
// The generation number of a path NewGenerationPath made ("gen/<generation:020>-<8 hex>/";
// the trailing slash may be missing); nullopt for anything else.
std::optional<uint64_t> ParseGenerationPath(std::string_view path);
// Table metadata key of a shard's merge watermark.
std::string MergedWatermarkKey(const Uuid& shard);
// The watermark value in `metadata` (0 when absent); Corruption for a non-number.
Result<uint64_t> ParseWatermark(std::string_view value);
// Every shard's merge watermark recorded in a base version's metadata; Corruption for a
// damaged entry.
using Watermarks = std::map<Uuid, uint64_t>;
Result<Watermarks> ReadWatermarks(const KeyValueMetadata& metadata);
// The watermark of `shard` (0: nothing of it merged yet).
uint64_t WatermarkOf(const Watermarks& watermarks, const Uuid& shard);

// Positions order by (epoch, segment, offset).
int CompareWalPositions(const pb::WalPosition& a, const pb::WalPosition& b);
pb::WalPosition MakeWalPosition(uint64_t epoch, uint64_t segment, uint64_t offset);

}  // namespace strata::lsm
