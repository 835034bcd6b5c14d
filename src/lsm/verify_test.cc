// VerifyShards against a live store: what a writer does while the verifier walks the shard
// (cleanup of old manifest versions, a new owner replaying and deleting the WAL it covers)
// is no problem; the same state left by damage is.
#include "lsm/verify.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lsm/layout.h"
#include "lsm/shard_manifest.h"
#include "lsm/shard_writer.h"
#include "lsm/wal.h"
#include "support/forwarding_object_store.h"
#include "support/status_assertions.h"
#include "table/table_test_util.h"

namespace strata::lsm {
namespace {

using table::testing_util::KeyedRows;
using table::testing_util::KeyedSchema;

constexpr const char* kPrefix = "db/";
const Uuid kShard = DeriveShardId("verify-test");

// Forwards to another store; the first List of `prefix` runs `on_list` on the listing it
// returns (to make a live writer act at exactly that moment).
class ListHookStore final : public strata::testing::ForwardingObjectStore {
 public:
  ListHookStore(std::shared_ptr<ObjectStore> base, std::string prefix,
                std::function<void(std::vector<ObjectMeta>&)> on_list)
      : ForwardingObjectStore(std::move(base)),
        prefix_(std::move(prefix)),
        on_list_(std::move(on_list)) {}
  Result<std::vector<ObjectMeta>> List(std::string_view prefix) override {
    STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> listed, ForwardingObjectStore::List(prefix));
    if (prefix == prefix_ && on_list_) std::exchange(on_list_, nullptr)(listed);
    return listed;
  }

 private:
  std::string prefix_;
  std::function<void(std::vector<ObjectMeta>&)> on_list_;
};

Result<std::shared_ptr<ShardWriter>> OpenWriter(std::shared_ptr<ObjectStore> store) {
  return ShardWriter::Open(std::move(store), kPrefix, kShard, KeyedSchema(), 0, {});
}

// A shard with a few manifest versions; returns them, ascending.
std::vector<uint64_t> ShardWithVersions(const std::shared_ptr<ObjectStore>& store) {
  Result<std::shared_ptr<ShardWriter>> writer = OpenWriter(store);
  EXPECT_TRUE(writer.ok()) << writer.status();
  if (!writer.ok()) return {};
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE((*writer)->Put({KeyedRows(i * 4, 4)}).ok());
    EXPECT_TRUE((*writer)->Seal(true).ok());
  }
  EXPECT_TRUE((*writer)->Close().ok());
  Result<std::vector<uint64_t>> versions =
      ShardManifestStore(store, kPrefix, kShard).ListVersions();
  EXPECT_TRUE(versions.ok()) << versions.status();
  return versions.ok() ? *versions : std::vector<uint64_t>{};
}

std::string Problems(const table::VerifyReport& report) {
  std::string out;
  for (const std::string& problem : report.problems) out += problem + "\n";
  return out;
}

TEST(VerifyShardsTest, AManifestListingRacingCleanupIsNoGap) {
  std::shared_ptr<ObjectStore> base = NewMemoryObjectStore();
  const std::vector<uint64_t> versions = ShardWithVersions(base);
  ASSERT_GE(versions.size(), 3u);
  // Cleanup deletes the two oldest versions (oldest first) while the listing runs: it read
  // the oldest before it went, but reached the second only after it went.
  auto store = std::make_shared<ListHookStore>(
      base, ShardManifestDir(kPrefix, kShard), [&](std::vector<ObjectMeta>& listed) {
        const std::string second = ShardManifestKey(kPrefix, kShard, versions[1]);
        ASSERT_OK(base->Delete(ShardManifestKey(kPrefix, kShard, versions[0])));
        ASSERT_OK(base->Delete(second));
        listed.erase(std::remove_if(listed.begin(), listed.end(),
                                    [&](const ObjectMeta& m) { return m.key == second; }),
                     listed.end());
      });
  table::VerifyReport report;
  ASSERT_OK(VerifyShards(store, kPrefix, &report));
  EXPECT_TRUE(report.problems.empty()) << Problems(report);
}

TEST(VerifyShardsTest, AManifestVersionMissingBetweenTwoThatExistIsAGap) {
  std::shared_ptr<ObjectStore> store = NewMemoryObjectStore();
  const std::vector<uint64_t> versions = ShardWithVersions(store);
  ASSERT_GE(versions.size(), 3u);
  const std::string lost = ShardManifestKey(kPrefix, kShard, versions[1]);
  ASSERT_OK(store->Delete(lost));
  table::VerifyReport report;
  ASSERT_OK(VerifyShards(store, kPrefix, &report));
  ASSERT_EQ(report.problems.size(), 1u) << Problems(report);
  EXPECT_NE(report.problems[0].find(lost.substr(std::string(kPrefix).size())), std::string::npos)
      << report.problems[0];
  EXPECT_NE(report.problems[0].find("missing from the manifest chain"), std::string::npos)
      << report.problems[0];
}

// The head says the previous owner closed with acknowledged records in a segment; a new owner
// replays them into a generation and deletes the segment before the verifier lists the WAL.
TEST(VerifyShardsTest, AClosedWalEndCoveredByANewOwnerMeanwhileIsNoProblem) {
  std::shared_ptr<ObjectStore> base = NewMemoryObjectStore();
  {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<ShardWriter> first, OpenWriter(base));
    ASSERT_OK(first->Put({KeyedRows(0, 4)}));
    ASSERT_OK(first->Seal(true).status());  // the replay position now lies inside the segment
    ASSERT_OK(first->Put({KeyedRows(4, 4)}));
    ASSERT_OK(first->CloseWithoutSeal());
  }
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest closed,
                       ShardManifestStore(base, kPrefix, kShard).ReadLatest());
  ASSERT_GT(CompareWalPositions(closed.closed_wal_end(), closed.replay_after()), 0);
  std::shared_ptr<ShardWriter> next;
  auto store = std::make_shared<ListHookStore>(
      base, ShardDir(kPrefix, kShard) + "wal/", [&](std::vector<ObjectMeta>& listed) {
        ASSERT_OK_AND_ASSIGN(next, OpenWriter(base));
        ASSERT_OK_AND_ASSIGN(listed, base->List(ShardDir(kPrefix, kShard) + "wal/"));
      });
  table::VerifyReport report;
  ASSERT_OK(VerifyShards(store, kPrefix, &report));
  ASSERT_NE(next, nullptr) << "the new owner never opened";
  EXPECT_TRUE(report.problems.empty()) << Problems(report);
  ASSERT_OK(next->Close());
}

}  // namespace
}  // namespace strata::lsm
