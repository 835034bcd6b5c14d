// Version chains (version_chain.h): hint, bounded forward probe, listing fallback, deletion
// from the start of the chain, and jittered backoff.
#include "io/version_chain.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace strata::io {

std::optional<uint64_t> ParseVersionHint(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

uint64_t ReadVersionHint(ObjectStore& store, std::string_view hint_key) {
  Result<Buffer> bytes = store.Get(hint_key);
  if (!bytes.ok()) return 0;
  return ParseVersionHint(bytes->view()).value_or(0);
}

Status WriteVersionHint(ObjectStore& store, std::string_view hint_key, uint64_t version) {
  return store.Put(hint_key, std::to_string(version));
}

Result<std::vector<uint64_t>> ListVersions(ObjectStore& store, const VersionChainLayout& layout) {
  STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, store.List(layout.versions_dir));
  std::vector<uint64_t> versions;
  versions.reserve(objects.size());
  for (const ObjectMeta& object : objects) {
    if (std::optional<uint64_t> version = layout.parse_version_key(object.key)) {
      versions.push_back(*version);
    }
  }
  std::sort(versions.begin(), versions.end());
  return versions;
}

Result<uint64_t> FindLatestVersion(ObjectStore& store, const VersionChainLayout& layout,
                                   uint64_t known, int max_probes) {
  STRATA_ASSIGN_OR_RETURN(LatestVersion latest,
                          FindLatestVersionAndHint(store, layout, known, max_probes));
  return latest.version;
}

Result<LatestVersion> FindLatestVersionAndHint(ObjectStore& store, const VersionChainLayout& layout,
                                               uint64_t known, int max_probes) {
  LatestVersion found;
  found.hint = ReadVersionHint(store, layout.hint_key);
  const uint64_t start = std::max(known, found.hint);
  if (start > 0) {
    STRATA_ASSIGN_OR_RETURN(bool start_exists, store.Exists(layout.version_key(start)));
    if (start_exists) {
      uint64_t latest = start;
      for (int probe = 0; probe < max_probes; ++probe) {
        STRATA_ASSIGN_OR_RETURN(bool exists, store.Exists(layout.version_key(latest + 1)));
        if (!exists) {
          found.version = latest;
          return found;
        }
        ++latest;
      }
      // Still finding versions: the start is far behind, listing is cheaper than probing on.
    }
  }
  // No start point, or one that is gone: probing from 1 would not work once cleanup has
  // removed the start of the chain, so list.
  STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> versions, ListVersions(store, layout));
  found.version = versions.empty() ? 0 : versions.back();
  return found;
}

Result<bool> IsLatestVersion(ObjectStore& store, const VersionChainLayout& layout,
                             uint64_t version) {
  if (version == 0) return false;
  STRATA_ASSIGN_OR_RETURN(bool next_exists, store.Exists(layout.version_key(version + 1)));
  if (next_exists) return false;
  if (ReadVersionHint(store, layout.hint_key) > version) return false;
  return store.Exists(layout.version_key(version));
}

namespace {

// The sum of two watches' counts: it moves whenever either one's does.
class SumChangeWatch final : public ChangeWatch {
 public:
  SumChangeWatch(std::unique_ptr<ChangeWatch> a, std::unique_ptr<ChangeWatch> b)
      : a_(std::move(a)), b_(std::move(b)) {}

  Result<uint64_t> Poll() override {
    STRATA_ASSIGN_OR_RETURN(uint64_t a, a_->Poll());
    STRATA_ASSIGN_OR_RETURN(uint64_t b, b_->Poll());
    return a + b;
  }

 private:
  const std::unique_ptr<ChangeWatch> a_;
  const std::unique_ptr<ChangeWatch> b_;
};

}  // namespace

Result<std::unique_ptr<ChangeWatch>> WatchVersionChain(ObjectStore& store,
                                                       const VersionChainLayout& layout) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ChangeWatch> versions, store.Watch(layout.versions_dir));
  const std::string_view hint_dir = WatchPrefixOf(layout.hint_key);
  if (hint_dir == layout.versions_dir) return versions;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ChangeWatch> hint, store.Watch(hint_dir));
  return std::unique_ptr<ChangeWatch>(
      std::make_unique<SumChangeWatch>(std::move(versions), std::move(hint)));
}

Result<int64_t> DeleteVersionsBefore(ObjectStore& store, const VersionChainLayout& layout,
                                     uint64_t keep_from) {
  STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> versions, ListVersions(store, layout));
  int64_t deleted = 0;
  for (uint64_t version : versions) {  // ascending: oldest first
    if (version >= keep_from) break;
    Status status = store.Delete(layout.version_key(version));
    if (status.IsNotFound()) continue;  // deleted concurrently
    STRATA_RETURN_IF_ERROR(status);
    ++deleted;
  }
  return deleted;
}

std::chrono::microseconds BackoffDelay(const BackoffPolicy& policy, int attempt,
                                       RandomSource& random) {
  const int64_t first = std::max<int64_t>(policy.first.count(), 0);
  const int64_t max = std::max<int64_t>(policy.max.count(), 0);
  // Shifting stops once the cap is reached, so a large attempt never overflows.
  int64_t cap = first;
  for (int i = 0; i < attempt && cap < max; ++i) cap <<= 1;
  cap = std::min(cap, max);
  return std::chrono::microseconds(
      static_cast<int64_t>(random.Uniform(static_cast<uint64_t>(cap) + 1)));
}

void Backoff(const BackoffPolicy& policy, int attempt, Clock* clock, RandomSource* random) {
  clock->SleepFor(BackoffDelay(policy, attempt, *random));
}

}  // namespace strata::io
