// Object keys and small shared helpers of the lsm layer (see layout.h).
#include "lsm/layout.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <tuple>

#include "fmt/format.h"
#include "util/clock.h"

namespace strata::lsm {

Uuid DeriveShardId(std::string_view instance_id) {
  return UuidV5(NamespaceOid(), instance_id.empty() ? std::string_view("default") : instance_id);
}

std::string ShardDir(std::string_view store_prefix, const Uuid& shard) {
  return fmt::format("{}{}{}/", store_prefix, kLsmDir, shard.ToString());
}

std::string ShardRegistryKey(std::string_view store_prefix, const Uuid& shard) {
  return fmt::format("{}{}{}", store_prefix, kShardRegistryDir, shard.ToString());
}

std::string ShardManifestKey(std::string_view store_prefix, const Uuid& shard, uint64_t version) {
  return fmt::format("{}manifest/{:020}.shard", ShardDir(store_prefix, shard), version);
}

std::string ShardManifestDir(std::string_view store_prefix, const Uuid& shard) {
  return ShardDir(store_prefix, shard) + "manifest/";
}

std::string ShardLatestHintKey(std::string_view store_prefix, const Uuid& shard) {
  return ShardDir(store_prefix, shard) + "manifest/_latest_hint";
}

std::string WalSegmentKey(std::string_view store_prefix, const Uuid& shard, uint64_t epoch,
                          uint64_t segment) {
  return fmt::format("{}wal/{:020}-{:010}.wal", ShardDir(store_prefix, shard), epoch, segment);
}

namespace {
bool ParseDecimal(std::string_view text, uint64_t& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}
}  // namespace

std::optional<uint64_t> ParseShardManifestName(std::string_view name) {
  constexpr std::string_view kSuffix = ".shard";
  if (name.size() != 20 + kSuffix.size() || name.substr(20) != kSuffix) return std::nullopt;
  const std::string_view digits = name.substr(0, 20);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  uint64_t version = 0;
  if (!ParseDecimal(digits, version)) return std::nullopt;
  return version;
}

std::optional<std::pair<uint64_t, uint64_t>> ParseWalSegmentName(std::string_view name) {
  constexpr std::string_view kSuffix = ".wal";
  if (name.size() != 20 + 1 + 10 + kSuffix.size() || name[20] != '-' ||
      name.substr(31) != kSuffix) {
    return std::nullopt;
  }
  uint64_t epoch = 0;
  uint64_t segment = 0;
  if (!ParseDecimal(name.substr(0, 20), epoch) || !ParseDecimal(name.substr(21, 10), segment)) {
    return std::nullopt;
  }
  return std::make_pair(epoch, segment);
}

std::string NewGenerationPath(uint64_t generation, RandomSource* random) {
  const uint64_t bits = (random != nullptr ? random : SystemRandom())->Next();
  return fmt::format("gen/{:020}-{:08x}/", generation, static_cast<uint32_t>(bits));
}

std::string MergedWatermarkKey(const Uuid& shard) {
  return fmt::format("{}{}", kMergedWatermarkPrefix, shard.ToString());
}

std::optional<uint64_t> ParseGenerationPath(std::string_view path) {
  constexpr std::string_view kDir = "gen/";
  if (!path.starts_with(kDir)) return std::nullopt;
  path.remove_prefix(kDir.size());
  if (path.ends_with('/')) path.remove_suffix(1);
  if (path.size() != 20 + 1 + 8 || path[20] != '-') return std::nullopt;
  for (char c : path.substr(21)) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  uint64_t generation = 0;
  if (!ParseDecimal(path.substr(0, 20), generation)) return std::nullopt;
  return generation;
}

Result<uint64_t> ParseWatermark(std::string_view value) {
  if (value.empty()) return uint64_t{0};
  uint64_t out = 0;
  if (!ParseDecimal(value, out)) {
    return Status::Corruption(fmt::format("merge watermark '{}' is not a number", value));
  }
  return out;
}

Result<Watermarks> ReadWatermarks(const KeyValueMetadata& metadata) {
  Watermarks out;
  for (const auto& [key, value] : metadata.entries()) {
    if (!key.starts_with(kMergedWatermarkPrefix)) continue;
    std::string_view id = std::string_view(key).substr(kMergedWatermarkPrefix.size());
    Result<Uuid> shard = Uuid::Parse(id);
    if (!shard.ok()) {
      return Status::Corruption(fmt::format("merge watermark key '{}' does not name a shard", key));
    }
    STRATA_ASSIGN_OR_RETURN(uint64_t generation, ParseWatermark(value));
    out[*shard] = generation;
  }
  return out;
}

uint64_t WatermarkOf(const Watermarks& watermarks, const Uuid& shard) {
  auto it = watermarks.find(shard);
  return it == watermarks.end() ? 0 : it->second;
}

int CompareWalPositions(const pb::WalPosition& a, const pb::WalPosition& b) {
  auto ta = std::make_tuple(a.epoch(), a.segment(), a.offset());
  auto tb = std::make_tuple(b.epoch(), b.segment(), b.offset());
  return ta < tb ? -1 : (tb < ta ? 1 : 0);
}

pb::WalPosition MakeWalPosition(uint64_t epoch, uint64_t segment, uint64_t offset) {
  pb::WalPosition p;
  p.set_epoch(epoch);
  p.set_segment(segment);
  p.set_offset(offset);
  return p;
}

}  // namespace strata::lsm
