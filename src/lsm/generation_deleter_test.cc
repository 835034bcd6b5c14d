// GenerationDeleter: deletions wait for their delay on the injected clock, Stop runs the
// rest at once, and Sweep deletes exactly the merged, unlisted, unqueued directories. Also
// ParseGenerationPath, which Sweep relies on.
#include "lsm/generation_deleter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "lsm/layout.h"
#include "support/status_assertions.h"
#include "util/clock.h"

namespace strata::lsm {
namespace {

class GenerationDeleterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = NewMemoryObjectStore();
    cache_ = std::make_unique<GenerationCache>(store_, std::string(kPrefix), table::TableOptions{});
  }

  // A generation directory with two objects in it; returns its path.
  std::string MakeGenerationDir(uint64_t number) {
    std::string path = NewGenerationPath(number);
    const std::string dir = ShardDir(kPrefix, shard_) + path;
    EXPECT_TRUE(store_->Put(dir + "_versions/1.manifest", "m").ok());
    EXPECT_TRUE(store_->Put(dir + "bloom.bin", "b").ok());
    return path;
  }

  bool Exists(const std::string& path) {
    Result<std::vector<ObjectMeta>> listed = store_->List(ShardDir(kPrefix, shard_) + path);
    EXPECT_TRUE(listed.ok()) << listed.status();
    return listed.ok() && !listed->empty();
  }

  static constexpr std::string_view kPrefix = "s/";
  const Uuid shard_ = DeriveShardId("deleter");
  std::shared_ptr<ObjectStore> store_;
  std::unique_ptr<GenerationCache> cache_;
};

TEST_F(GenerationDeleterTest, DeletesOnlyAfterTheDelayOnTheInjectedClock) {
  ManualClock clock(0);
  GenerationDeleter deleter(store_, std::string(kPrefix), cache_.get(), std::chrono::seconds(5),
                            &clock);
  const std::string path = MakeGenerationDir(3);
  deleter.Enqueue(shard_, {path});
  EXPECT_TRUE(deleter.Pending(shard_, path));

  clock.Advance(std::chrono::seconds(4));
  deleter.Wake();
  EXPECT_TRUE(deleter.Pending(shard_, path)) << "deleted before its delay";
  EXPECT_TRUE(Exists(path));

  clock.Advance(std::chrono::seconds(1));
  deleter.Wake();
  deleter.WaitIdle();
  EXPECT_FALSE(deleter.Pending(shard_, path));
  EXPECT_FALSE(Exists(path));
}

TEST_F(GenerationDeleterTest, StopRunsTheRemainingDeletionsAtOnceAndIgnoresLaterOnes) {
  ManualClock clock(0);
  GenerationDeleter deleter(store_, std::string(kPrefix), cache_.get(), std::chrono::hours(1),
                            &clock);
  const std::string first = MakeGenerationDir(1);
  const std::string second = MakeGenerationDir(2);
  deleter.Enqueue(shard_, {first, second});
  deleter.Stop();
  EXPECT_FALSE(Exists(first));
  EXPECT_FALSE(Exists(second));

  const std::string late = MakeGenerationDir(4);
  deleter.Enqueue(shard_, {late});
  EXPECT_FALSE(deleter.Pending(shard_, late));
  EXPECT_TRUE(Exists(late));
  deleter.Stop();  // idempotent
}

TEST_F(GenerationDeleterTest, SweepDeletesMergedUnlistedUnqueuedDirectoriesOnly) {
  ManualClock clock(0);
  GenerationDeleter deleter(store_, std::string(kPrefix), cache_.get(), std::chrono::hours(1),
                            &clock);
  const std::string merged_left_behind = MakeGenerationDir(2);
  const std::string merged_queued = MakeGenerationDir(3);
  const std::string merged_still_listed = MakeGenerationDir(4);
  const std::string pending = MakeGenerationDir(6);
  // Not a generation directory: never touched.
  ASSERT_OK(store_->Put(ShardDir(kPrefix, shard_) + "gen/not-a-generation/x", "x"));

  deleter.Enqueue(shard_, {merged_queued});
  pb::ShardManifest manifest;
  manifest.add_generations()->set_path(merged_still_listed);
  manifest.add_generations()->set_path(pending);

  EXPECT_EQ(deleter.Sweep(shard_, /*watermark=*/5, manifest), 1);
  EXPECT_FALSE(Exists(merged_left_behind));
  EXPECT_TRUE(Exists(merged_queued));
  EXPECT_TRUE(Exists(merged_still_listed));
  EXPECT_TRUE(Exists(pending));
  EXPECT_TRUE(Exists("gen/not-a-generation/"));
}

TEST(ParseGenerationPathTest, ReadsTheNumberOfPathsNewGenerationPathMakes) {
  for (uint64_t n : {uint64_t{1}, uint64_t{42}, uint64_t{18446744073709551615u}}) {
    std::string path = NewGenerationPath(n);
    EXPECT_EQ(ParseGenerationPath(path), n) << path;
    path.pop_back();  // without the trailing slash
    EXPECT_EQ(ParseGenerationPath(path), n) << path;
  }
  for (std::string_view bad :
       {"", "gen/", "gen/00000000000000000001", "gen/00000000000000000001-1234567/",
        "gen/00000000000000000001-1234567g/", "wal/00000000000000000001-12345678/",
        "gen/0000000000000000000x-12345678/", "gen/00000000000000000001_12345678/",
        "gen/99999999999999999999-12345678/"}) {
    EXPECT_EQ(ParseGenerationPath(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace strata::lsm
