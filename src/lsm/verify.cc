// Verifying the LSM side of a store (verify.h): shard manifest chains, WAL segments and
// pending generations, each problem one line of a table::VerifyReport.
#include "lsm/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "lsm/bloom.h"
#include "lsm/shard_manifest.h"
#include "lsm/wal.h"

namespace strata::lsm {
namespace {

// `status`'s message without a lead naming `key` (the report line names it already), with
// its code.
std::string Describe(const Status& status, std::string_view key) {
  if (status.IsNotFound()) return "missing from storage";
  std::string_view message = status.message();
  const size_t at = message.find(key);
  if (at != std::string_view::npos && at <= 32) {
    message.remove_prefix(at + key.size());
    while (!message.empty() &&
           (message.front() == ':' || message.front() == ' ' || message.front() == '\'')) {
      message.remove_prefix(1);
    }
  }
  return fmt::format("{} ({})", message, StatusCodeName(status.code()));
}

class ShardVerifier {
 public:
  ShardVerifier(const std::shared_ptr<ObjectStore>& store, const std::string& prefix,
                const Uuid& shard, table::VerifyReport* report)
      : store_(store), prefix_(prefix), shard_(shard), report_(report) {}

  Status Run() {
    std::optional<pb::ShardManifest> head = CheckManifests();
    STRATA_RETURN_IF_ERROR(CheckWal(head));
    if (head.has_value()) CheckGenerations(*head);
    return Status::OK();
  }

 private:
  // The manifest chain; returns the newest version when it reads.
  std::optional<pb::ShardManifest> CheckManifests() {
    ShardManifestStore manifests(store_, prefix_, shard_);
    // The hint first: a version written after the listing must not look lost.
    const uint64_t hinted = manifests.HintedVersion();
    Result<std::vector<uint64_t>> versions = manifests.ListVersions();
    if (!versions.ok()) {
      Problem(ShardManifestDir(prefix_, shard_), versions.status());
      return std::nullopt;
    }
    if (versions->empty()) return std::nullopt;  // registered, nothing written yet
    bool newest_decoded = false;
    for (size_t i = 0; i < versions->size(); ++i) {
      const uint64_t version = (*versions)[i];
      const std::string key = ShardManifestKey(prefix_, shard_, version);
      // A listing racing a live writer's cleanup (DeleteVersionsBefore) can miss versions
      // deleted after it read an older one; while the version below the gap still exists,
      // cleanup cannot have removed those above it (it deletes oldest first).
      if (i > 0 && version != (*versions)[i - 1] + 1 &&
          StillExists(ShardManifestKey(prefix_, shard_, (*versions)[i - 1]))) {
        Problem(ShardManifestKey(prefix_, shard_, (*versions)[i - 1] + 1),
                Status::Corruption(
                    fmt::format("missing from the manifest chain, between versions {} and {}",
                                (*versions)[i - 1], version)));
      }
      Result<Buffer> bytes = store_->Get(key);
      if (bytes.status().IsNotFound() && i + 1 < versions->size()) continue;  // cleaned up
      ++report_->manifests_checked;
      if (bytes.ok()) report_->bytes_checked += static_cast<int64_t>(bytes->size());
      Result<pb::ShardManifest> manifest =
          bytes.ok() ? DecodeShardManifest(bytes->view(), key, version, shard_)
                     : Result<pb::ShardManifest>(bytes.status());
      if (!manifest.ok()) {
        Problem(key, manifest.status());
      } else if (i + 1 == versions->size()) {
        newest_decoded = true;
      }
    }
    const uint64_t newest = versions->back();
    if (hinted > newest) {
      Problem(ShardManifestKey(prefix_, shard_, hinted),
              Status::Corruption(fmt::format(
                  "missing: the latest-version hint names version {}, but the newest version "
                  "found is {} (newer versions were lost)",
                  hinted, newest)));
    }
    if (!newest_decoded) return std::nullopt;  // reported above
    // The head as every reader reads it (hint, probes, listing).
    Result<pb::ShardManifest> latest = manifests.ReadLatest();
    if (!latest.ok()) {
      Problem(ShardManifestDir(prefix_, shard_), latest.status());
      return std::nullopt;
    }
    return *latest;
  }

  Status CheckWal(std::optional<pb::ShardManifest> head) {
    STRATA_ASSIGN_OR_RETURN(std::vector<WalSegment> segments,
                            ListWalSegments(*store_, prefix_, shard_));
    if (head.has_value()) {
      std::optional<std::pair<std::string, Status>> gap = WalGap(*head, segments);
      if (gap.has_value()) {
        // A live writer may have published a later replay position, and deleted the segments
        // it covers, after the head was read: judge by a fresh head and listing.
        Result<pb::ShardManifest> fresh = ShardManifestStore(store_, prefix_, shard_).ReadLatest();
        if (fresh.ok() && CompareWalPositions(fresh->replay_after(), head->replay_after()) != 0) {
          head = std::move(*fresh);
          STRATA_ASSIGN_OR_RETURN(segments, ListWalSegments(*store_, prefix_, shard_));
          gap = WalGap(*head, segments);
        }
      }
      if (gap.has_value()) Problem(gap->first, gap->second);
    }
    for (const WalSegment& segment : segments) {
      Result<Buffer> data = store_->Get(segment.key);
      if (data.status().IsNotFound()) continue;  // covered and deleted meanwhile
      ++report_->files_checked;
      if (!data.ok()) {
        Problem(segment.key, data.status());
        continue;
      }
      report_->bytes_checked += static_cast<int64_t>(data->size());
      ReplayStats stats;
      auto ignore = [](const WalRecord&) { return Status::OK(); };
      Status read = ReadWalSegment(segment, data->view(), 0, stats, ignore);
      if (!read.ok()) {
        Problem(segment.key, read);
        continue;
      }
      if (!head.has_value()) continue;
      // Positions the manifest records in this segment must lie within its records.
      std::vector<std::pair<std::string, pb::WalPosition>> positions{
          {"the shard manifest's replay position", head->replay_after()}};
      if (CompareWalPositions(head->closed_wal_end(), head->replay_after()) > 0) {
        positions.emplace_back("the position its writer recorded when it closed",
                               head->closed_wal_end());
      }
      for (const pb::Generation& g : head->generations()) {
        positions.emplace_back(fmt::format("generation {}'s WAL end", g.generation()), g.wal_end());
      }
      for (const auto& [what, position] : positions) {
        if (position.epoch() != segment.epoch || position.segment() != segment.segment ||
            position.offset() == 0) {
          continue;
        }
        ReplayStats from;
        Status at = ReadWalSegment(segment, data->view(), position.offset(), from, ignore);
        if (!at.ok()) {
          Problem(segment.key, Status::Corruption(fmt::format(
                                   "{} ({}, {}, {}) does not fit it: {}", what, position.epoch(),
                                   position.segment(), position.offset(), at.message())));
        }
      }
    }
    return Status::OK();
  }

  // A segment that replay from `head` must read but `segments` lacks (the key and the
  // problem), or nullopt.
  std::optional<std::pair<std::string, Status>> WalGap(const pb::ShardManifest& head,
                                                       const std::vector<WalSegment>& segments) {
    Status complete =
        CheckWalSegmentsComplete(segments, prefix_, shard_, head.replay_after(), UINT64_MAX);
    if (!complete.ok()) return std::make_pair(MissingKey(complete), complete);
    const pb::WalPosition& closed = head.closed_wal_end();
    if (closed.epoch() > 0 && CompareWalPositions(closed, head.replay_after()) > 0 &&
        std::none_of(segments.begin(), segments.end(), [&](const WalSegment& s) {
          return s.epoch == closed.epoch() && s.segment == closed.segment();
        })) {
      return std::make_pair(
          WalSegmentKey(prefix_, shard_, closed.epoch(), closed.segment()),
          Status::Corruption(fmt::format(
              "missing, yet its writer recorded acknowledged records up to ({}, {}, {}) "
              "in it when it closed",
              closed.epoch(), closed.segment(), closed.offset())));
    }
    return std::nullopt;
  }

  // Whether `key` exists on a fresh check (as the table verifier: only evidence counts).
  bool StillExists(const std::string& key) const {
    Result<bool> exists = store_->Exists(key);
    return exists.ok() && *exists;
  }

  void CheckGenerations(const pb::ShardManifest& head) {
    for (const pb::Generation& entry : head.generations()) {
      const std::string dir = ShardDir(prefix_, shard_) + entry.path();
      const std::string where = fmt::format("shard {}: generation {} ({})", shard_.ToString(),
                                            entry.generation(), dir.substr(prefix_.size()));
      Result<std::shared_ptr<table::Table>> opened = table::Table::Open(store_, dir);
      if (!opened.ok()) {
        if (opened.status().IsNotFound() && !StillListed(entry)) continue;  // merged meanwhile
        report_->problems.push_back(fmt::format("{}: {}", where, Describe(opened.status(), dir)));
      } else {
        Result<table::VerifyReport> verified = (*opened)->Verify();
        if (!verified.ok()) {
          report_->problems.push_back(
              fmt::format("{}: {}", where, Describe(verified.status(), dir)));
        } else {
          report_->manifests_checked += verified->manifests_checked;
          report_->files_checked += verified->files_checked;
          report_->bytes_checked += verified->bytes_checked;
          for (const std::string& problem : verified->problems) {
            report_->problems.push_back(fmt::format("{}: {}", where, problem));
          }
        }
      }
      const std::string bloom_key = dir + std::string(kBloomObject);
      Result<Buffer> bloom = store_->Get(bloom_key);
      if (bloom.status().IsNotFound() && !StillListed(entry)) continue;
      ++report_->files_checked;
      Status parsed = bloom.status();
      if (bloom.ok()) {
        report_->bytes_checked += static_cast<int64_t>(bloom->size());
        parsed = BloomFilter::Parse(bloom->view(), bloom_key).status();
      }
      if (!parsed.ok()) Problem(bloom_key, parsed);
    }
  }

  // Whether the shard's newest manifest still lists `entry` (a merge may have drained and
  // deleted it while this ran).
  bool StillListed(const pb::Generation& entry) const {
    Result<pb::ShardManifest> latest = ShardManifestStore(store_, prefix_, shard_).ReadLatest();
    if (!latest.ok()) return true;
    return std::any_of(latest->generations().begin(), latest->generations().end(),
                       [&](const pb::Generation& g) { return g.path() == entry.path(); });
  }

  // The segment key a CheckWalSegmentsComplete error names.
  std::string MissingKey(const Status& status) const {
    const std::string_view message = status.message();
    const size_t open = message.find('\'');
    const size_t close = open == std::string_view::npos ? open : message.find('\'', open + 1);
    if (close == std::string_view::npos) return ShardDir(prefix_, shard_) + "wal/";
    return std::string(message.substr(open + 1, close - open - 1));
  }

  void Problem(const std::string& key, const Status& status) {
    const std::string shown = key.substr(std::min(key.size(), prefix_.size()));
    report_->problems.push_back(
        fmt::format("shard {}: {}: {}", shard_.ToString(), shown, Describe(status, key)));
  }

  const std::shared_ptr<ObjectStore>& store_;
  const std::string& prefix_;
  const Uuid shard_;
  table::VerifyReport* report_;
};

}  // namespace

Status VerifyShards(const std::shared_ptr<ObjectStore>& store, const std::string& store_prefix,
                    table::VerifyReport* report) {
  STRATA_ASSIGN_OR_RETURN(std::vector<Uuid> shards, ListShards(*store, store_prefix));
  for (const Uuid& shard : shards) {
    STRATA_RETURN_IF_ERROR(ShardVerifier(store, store_prefix, shard, report).Run());
  }
  return Status::OK();
}

}  // namespace strata::lsm
