// Tests of the shard manifest chain (shard_manifest.h): initialisation, claims and epochs,
// fenced updates, racing updates and drains, latest-version discovery and damage, on the
// memory store and the local store.
#include "lsm/shard_manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lsm/layout.h"
#include "support/forwarding_object_store.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::lsm {
namespace {

constexpr std::string_view kPrefix = "db/";

pb::Generation MakeGeneration(uint64_t number) {
  pb::Generation g;
  g.set_generation(number);
  g.set_path(NewGenerationPath(number));
  g.set_rows(10);
  return g;
}

// Appends generation current_generation and advances it: a relative edit, like a seal.
Status SealOne(pb::ShardManifest& m) {
  *m.add_generations() = MakeGeneration(m.current_generation());
  m.set_current_generation(m.current_generation() + 1);
  return Status::OK();
}

std::vector<uint64_t> GenerationNumbers(const pb::ShardManifest& m) {
  std::vector<uint64_t> out;
  for (const pb::Generation& g : m.generations()) out.push_back(g.generation());
  return out;
}

class ShardManifestTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memory") {
      store_ = NewMemoryObjectStore();
    } else {
      dir_ = std::make_unique<strata::testing::TempDir>("shard-manifest");
      LocalObjectStoreOptions options;
      options.sync = false;  // durability is not under test; keep the suite fast
      ASSERT_OK_AND_ASSIGN(store_, OpenLocalObjectStore(dir_->str(), options));
    }
    shard_ = DeriveShardId("instance-a");
  }

  ShardManifestStore Manifests(const Uuid& shard) {
    return ShardManifestStore(store_, std::string(kPrefix), shard);
  }
  ShardManifestStore Manifests() { return Manifests(shard_); }

  bool VersionExists(uint64_t version) {
    Result<bool> exists = store_->Exists(ShardManifestKey(kPrefix, shard_, version));
    EXPECT_TRUE(exists.ok()) << exists.status();
    return exists.ok() && *exists;
  }

  // Every version 1..latest, decoded; fails the test on a gap or a damaged version.
  std::vector<pb::ShardManifest> Chain() {
    std::vector<pb::ShardManifest> chain;
    for (uint64_t v = 1;; ++v) {
      const std::string key = ShardManifestKey(kPrefix, shard_, v);
      Result<Buffer> bytes = store_->Get(key);
      if (!bytes.ok()) {
        EXPECT_TRUE(bytes.status().IsNotFound()) << bytes.status();
        break;
      }
      Result<pb::ShardManifest> m = DecodeShardManifest(bytes->view(), key, v, shard_);
      EXPECT_TRUE(m.ok()) << m.status();
      if (!m.ok()) break;
      chain.push_back(*m);
    }
    return chain;
  }

  std::unique_ptr<strata::testing::TempDir> dir_;
  std::shared_ptr<ObjectStore> store_;
  Uuid shard_;
};

TEST_P(ShardManifestTest, ReadLatestOfUnknownShardIsNotFound) {
  ShardManifestStore manifests = Manifests();
  EXPECT_TRUE(manifests.ReadLatest().status().IsNotFound());
}

TEST_P(ShardManifestTest, InitializeWritesVersionOneAndIsIdempotent) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest first, manifests.Initialize());
  EXPECT_EQ(first.version(), 1u);
  EXPECT_EQ(first.writer_epoch(), 0u);
  EXPECT_EQ(first.current_generation(), 1u);
  EXPECT_EQ(first.operation(), "init");
  EXPECT_EQ(first.generations_size(), 0);
  EXPECT_EQ(first.shard_id().size(), 16u);
  ASSERT_OK_AND_ASSIGN(bool registered, store_->Exists(ShardRegistryKey(kPrefix, shard_)));
  EXPECT_TRUE(registered);

  ASSERT_OK_AND_ASSIGN(pb::ShardManifest again, manifests.Initialize());
  EXPECT_EQ(again.version(), 1u);
  EXPECT_FALSE(VersionExists(2));
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest, manifests.ReadLatest());
  EXPECT_EQ(latest.SerializeAsString(), first.SerializeAsString());

  // Initialising a shard that already has history returns its latest version.
  ASSERT_OK(manifests.Update(0, "seal", SealOne).status());
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest third, manifests.Initialize());
  EXPECT_EQ(third.version(), 2u);
}

TEST_P(ShardManifestTest, ConcurrentInitializersAllSucceedWithOneVersion) {
  constexpr int kThreads = 6;
  std::vector<Result<pb::ShardManifest>> results(kThreads, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ShardManifestStore manifests = Manifests();  // one instance per "process"
      results[static_cast<size_t>(i)] = manifests.Initialize();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->version(), 1u);
    EXPECT_EQ(r->writer_epoch(), 0u);
  }
  EXPECT_TRUE(VersionExists(1));
  EXPECT_FALSE(VersionExists(2));
  ASSERT_OK_AND_ASSIGN(std::vector<Uuid> shards, ListShards(*store_, kPrefix));
  EXPECT_EQ(shards, std::vector<Uuid>{shard_});
}

TEST_P(ShardManifestTest, ClaimIncrementsTheEpochAndKeepsState) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest claimed, manifests.Claim());  // initialises too
  EXPECT_EQ(claimed.version(), 2u);
  EXPECT_EQ(claimed.writer_epoch(), 1u);
  EXPECT_EQ(claimed.operation(), "claim");
  ASSERT_OK(manifests.Update(1, "seal", SealOne).status());

  ASSERT_OK_AND_ASSIGN(pb::ShardManifest reclaimed, manifests.Claim());
  EXPECT_EQ(reclaimed.version(), 4u);
  EXPECT_EQ(reclaimed.writer_epoch(), 2u);
  EXPECT_EQ(GenerationNumbers(reclaimed), std::vector<uint64_t>{1});
  EXPECT_EQ(reclaimed.current_generation(), 2u);
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest, manifests.ReadLatest());
  EXPECT_EQ(latest.SerializeAsString(), reclaimed.SerializeAsString());
}

TEST_P(ShardManifestTest, ConcurrentClaimersNeverShareAnEpoch) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 5;
  std::mutex mu;
  std::map<uint64_t, int> winners;  // epoch -> how many claimers got it
  int fenced = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&] {
        ShardManifestStore manifests = Manifests();
        Result<pb::ShardManifest> claimed = manifests.Claim();
        std::lock_guard<std::mutex> lock(mu);
        if (claimed.ok()) {
          ++winners[claimed->writer_epoch()];
        } else {
          EXPECT_TRUE(claimed.status().IsFenced()) << claimed.status();
          ++fenced;
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  ASSERT_FALSE(winners.empty());
  for (const auto& [epoch, count] : winners) EXPECT_EQ(count, 1) << "epoch " << epoch;
  // The chain agrees: every claim moved the epoch by exactly one.
  std::vector<pb::ShardManifest> chain = Chain();
  ASSERT_FALSE(chain.empty());
  for (size_t i = 1; i < chain.size(); ++i) {
    EXPECT_EQ(chain[i].writer_epoch(), chain[i - 1].writer_epoch() + 1);
    EXPECT_TRUE(winners.count(chain[i].writer_epoch())) << chain[i].writer_epoch();
  }
  EXPECT_EQ(winners.size() + 1, chain.size());
  EXPECT_EQ(static_cast<int>(winners.size()) + fenced, kThreads * kRounds);
}

TEST_P(ShardManifestTest, UpdateWithStaleEpochIsFencedAndWritesNothing) {
  ShardManifestStore old_owner = Manifests();
  ShardManifestStore new_owner = Manifests();
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest first, old_owner.Claim());
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest second, new_owner.Claim());
  ASSERT_EQ(second.writer_epoch(), first.writer_epoch() + 1);

  bool called = false;
  Result<pb::ShardManifest> stale =
      old_owner.Update(first.writer_epoch(), "seal", [&](pb::ShardManifest& m) {
        called = true;
        return SealOne(m);
      });
  EXPECT_TRUE(stale.status().IsFenced()) << stale.status();
  EXPECT_FALSE(called);
  EXPECT_FALSE(VersionExists(second.version() + 1));
  // A future epoch is no better than a past one.
  EXPECT_TRUE(new_owner.Update(second.writer_epoch() + 1, "seal", SealOne).status().IsFenced());
  EXPECT_TRUE(old_owner.Drain(first.writer_epoch(), {1}).status().IsFenced());
  EXPECT_FALSE(VersionExists(second.version() + 1));
}

TEST_P(ShardManifestTest, UpdateSetsChainFieldsAndKeepsTheEpoch) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest claimed, manifests.Claim());
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest updated,
                       manifests.Update(1, "seal", [](pb::ShardManifest& m) {
                         m.set_writer_epoch(99);  // not the caller's to change
                         m.set_version(42);
                         *m.mutable_replay_after() = MakeWalPosition(1, 3, 4096);
                         return SealOne(m);
                       }));
  EXPECT_EQ(updated.version(), claimed.version() + 1);
  EXPECT_EQ(updated.writer_epoch(), 1u);
  EXPECT_EQ(updated.operation(), "seal");
  EXPECT_EQ(CompareWalPositions(updated.replay_after(), MakeWalPosition(1, 3, 4096)), 0);
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest, manifests.ReadLatest());
  EXPECT_EQ(latest.SerializeAsString(), updated.SerializeAsString());
}

TEST_P(ShardManifestTest, MutateErrorAbandonsTheUpdate) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest claimed, manifests.Claim());
  Result<pb::ShardManifest> r = manifests.Update(
      1, "seal", [](pb::ShardManifest&) { return Status::InvalidArgument("nope"); });
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
  EXPECT_EQ(r.status().message(), "nope");
  EXPECT_FALSE(VersionExists(claimed.version() + 1));
}

TEST_P(ShardManifestTest, RacingUpdatesKeepTheChainGapFreeAndApplyEachOnce) {
  ShardManifestStore owner = Manifests();
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest claimed, owner.Claim());
  constexpr int kThreads = 4;
  constexpr int kUpdatesPerThread = 8;
  std::atomic<int> applied{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      ShardManifestStore manifests = Manifests();
      for (int i = 0; i < kUpdatesPerThread; ++i) {
        while (true) {
          Result<pb::ShardManifest> r = manifests.Update(claimed.writer_epoch(), "seal", SealOne);
          if (r.ok()) {
            ++applied;
            break;
          }
          ASSERT_TRUE(r.status().IsBusy()) << r.status();  // retryable: try again
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(applied.load(), kThreads * kUpdatesPerThread);

  ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest, owner.ReadLatest());
  EXPECT_EQ(latest.version(), claimed.version() + kThreads * kUpdatesPerThread);
  std::vector<uint64_t> expected;
  for (uint64_t g = 1; g <= kThreads * kUpdatesPerThread; ++g) expected.push_back(g);
  EXPECT_EQ(GenerationNumbers(latest), expected);  // each seal exactly once, in order
  EXPECT_EQ(latest.current_generation(), uint64_t{kThreads * kUpdatesPerThread} + 1);

  std::vector<pb::ShardManifest> chain = Chain();
  ASSERT_EQ(chain.size(), latest.version());
  for (size_t i = 2; i < chain.size(); ++i) {
    // Version N+1 is built on version N: exactly one more generation.
    EXPECT_EQ(chain[i].generations_size(), chain[i - 1].generations_size() + 1);
  }
}

TEST_P(ShardManifestTest, DrainRemovesExactlyTheListedGenerations) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK(manifests.Claim().status());
  for (int i = 0; i < 5; ++i) ASSERT_OK(manifests.Update(1, "seal", SealOne).status());
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest before, manifests.ReadLatest());

  ASSERT_OK_AND_ASSIGN(pb::ShardManifest drained, manifests.Drain(1, {2, 1, 77}));
  EXPECT_EQ(GenerationNumbers(drained), (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_EQ(drained.version(), before.version() + 1);
  EXPECT_EQ(drained.operation(), "drain");
  EXPECT_EQ(drained.current_generation(), before.current_generation());
  EXPECT_EQ(drained.writer_epoch(), 1u);
  EXPECT_EQ(drained.generations(0).path(), before.generations(2).path());
}

TEST_P(ShardManifestTest, DrainOfGenerationsNoLongerListedWritesNothing) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK(manifests.Claim().status());
  for (int i = 0; i < 3; ++i) ASSERT_OK(manifests.Update(1, "seal", SealOne).status());
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest drained, manifests.Drain(1, {1, 2}));
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest again, manifests.Drain(1, {1, 2}));
  EXPECT_EQ(again.SerializeAsString(), drained.SerializeAsString());
  EXPECT_FALSE(VersionExists(drained.version() + 1));
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest empty_list, manifests.Drain(1, {}));
  EXPECT_EQ(empty_list.version(), drained.version());
  EXPECT_FALSE(VersionExists(drained.version() + 1));
}

TEST_P(ShardManifestTest, DrainKeepsGenerationsSealedConcurrently) {
  ShardManifestStore owner = Manifests();
  ASSERT_OK(owner.Claim().status());
  for (int i = 0; i < 6; ++i) ASSERT_OK(owner.Update(1, "seal", SealOne).status());
  constexpr int kSeals = 12;
  std::thread sealer([&] {
    ShardManifestStore manifests = Manifests();
    for (int i = 0; i < kSeals; ++i) {
      Result<pb::ShardManifest> r = manifests.Update(1, "seal", SealOne);
      while (!r.ok() && r.status().IsBusy()) r = manifests.Update(1, "seal", SealOne);
      ASSERT_TRUE(r.ok()) << r.status();
    }
  });
  std::thread merger([&] {
    ShardManifestStore manifests = Manifests();
    for (uint64_t g = 1; g <= 6; g += 2) {
      Result<pb::ShardManifest> r = manifests.Drain(1, {g, g + 1});
      while (!r.ok() && r.status().IsBusy()) r = manifests.Drain(1, {g, g + 1});
      ASSERT_TRUE(r.ok()) << r.status();
    }
  });
  sealer.join();
  merger.join();
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest, owner.ReadLatest());
  std::vector<uint64_t> expected;
  for (uint64_t g = 7; g <= 6 + kSeals; ++g) expected.push_back(g);
  EXPECT_EQ(GenerationNumbers(latest), expected);
  EXPECT_EQ(latest.current_generation(), uint64_t{7 + kSeals});
  EXPECT_EQ(Chain().size(), latest.version());  // gap-free: 2 + 6 + 12 + 3 versions
  EXPECT_EQ(latest.version(), uint64_t{2 + 6 + kSeals + 3});
}

TEST_P(ShardManifestTest, DrainReportsThePathsItRemoved) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK(manifests.Claim().status());
  for (int i = 0; i < 4; ++i) ASSERT_OK(manifests.Update(1, "seal", SealOne).status());
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest before, manifests.ReadLatest());
  std::vector<std::string> removed;
  ASSERT_OK(manifests.Drain(1, {3, 1, 9}, &removed).status());
  EXPECT_EQ(removed,
            (std::vector<std::string>{before.generations(0).path(), before.generations(2).path()}));
  removed = {"stale"};
  ASSERT_OK(manifests.Drain(1, {1, 3}, &removed).status());  // nothing left to drain
  EXPECT_EQ(removed, std::vector<std::string>{"stale"});
}

TEST_P(ShardManifestTest, ReplaceGenerationSwapsOneEntryWhileItIsListedAtItsOldPath) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK(manifests.Claim().status());
  for (int i = 0; i < 3; ++i) ASSERT_OK(manifests.Update(1, "seal", SealOne).status());
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest before, manifests.ReadLatest());
  const pb::Generation old = before.generations(1);
  pb::Generation recoded = old;
  recoded.set_path(NewGenerationPath(old.generation()));
  recoded.set_bytes(123);
  ASSERT_OK_AND_ASSIGN(bool replaced, manifests.ReplaceGeneration(1, old.path(), recoded));
  EXPECT_TRUE(replaced);
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest after, manifests.ReadLatest());
  EXPECT_EQ(after.version(), before.version() + 1);
  EXPECT_EQ(after.operation(), "recode");
  EXPECT_EQ(GenerationNumbers(after), GenerationNumbers(before));
  EXPECT_EQ(after.generations(1).SerializeAsString(), recoded.SerializeAsString());
  EXPECT_EQ(after.generations(0).SerializeAsString(), before.generations(0).SerializeAsString());
  EXPECT_EQ(after.generations(2).SerializeAsString(), before.generations(2).SerializeAsString());
  EXPECT_EQ(after.current_generation(), before.current_generation());

  // Listed at another path now, or drained: nothing is written.
  ASSERT_OK_AND_ASSIGN(replaced, manifests.ReplaceGeneration(1, old.path(), recoded));
  EXPECT_FALSE(replaced);
  ASSERT_OK(manifests.Drain(1, {old.generation()}).status());
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest drained, manifests.ReadLatest());
  ASSERT_OK_AND_ASSIGN(replaced, manifests.ReplaceGeneration(1, recoded.path(), recoded));
  EXPECT_FALSE(replaced);
  EXPECT_FALSE(VersionExists(drained.version() + 1));
  // A new owner fences it.
  ASSERT_OK(manifests.Claim().status());
  Result<bool> fenced =
      manifests.ReplaceGeneration(1, drained.generations(0).path(), drained.generations(0));
  EXPECT_TRUE(fenced.status().IsFenced()) << fenced.status();
}

TEST_P(ShardManifestTest, StaleMissingOrBogusHintStillFindsTheLatest) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK(manifests.Claim().status());
  for (int i = 0; i < 4; ++i) ASSERT_OK(manifests.Update(1, "seal", SealOne).status());
  const std::string hint = ShardLatestHintKey(kPrefix, shard_);
  ASSERT_OK_AND_ASSIGN(Buffer written, store_->Get(hint));
  EXPECT_EQ(written.view(), "6");  // written after each successful write

  for (std::string_view value : {"1", "3", "not a number", "", "999", "0"}) {
    ASSERT_OK(store_->Put(hint, value));
    ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest, manifests.ReadLatest());
    EXPECT_EQ(latest.version(), 6u) << "hint '" << value << "'";
  }
  ASSERT_OK(store_->Delete(hint));
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest, manifests.ReadLatest());
  EXPECT_EQ(latest.version(), 6u);
  // Writes work from a missing hint too, and restore it.
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest next, manifests.Update(1, "seal", SealOne));
  EXPECT_EQ(next.version(), 7u);
  ASSERT_OK_AND_ASSIGN(written, store_->Get(hint));
  EXPECT_EQ(written.view(), "7");
}

TEST_P(ShardManifestTest, CorruptedManifestObjectIsCorruption) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK(manifests.Claim().status());
  const std::string key = ShardManifestKey(kPrefix, shard_, 2);
  ASSERT_OK_AND_ASSIGN(Buffer bytes, store_->Get(key));
  std::string damaged(bytes.view());
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x01);
  ASSERT_OK(store_->Delete(key));
  ASSERT_OK(store_->PutIfAbsent(key, damaged));
  Result<pb::ShardManifest> latest = manifests.ReadLatest();
  EXPECT_TRUE(latest.status().IsCorruption()) << latest.status();
  EXPECT_NE(latest.status().message().find(key), std::string::npos) << latest.status();
  EXPECT_TRUE(manifests.Update(1, "seal", SealOne).status().IsCorruption());
  EXPECT_TRUE(manifests.Claim().status().IsCorruption());
}

TEST_P(ShardManifestTest, ManifestUnderTheWrongKeyIsCorruption) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest first, manifests.Initialize());
  // Version 1's bytes stored as version 2: the version inside disagrees with the key.
  ASSERT_OK(store_->PutIfAbsent(ShardManifestKey(kPrefix, shard_, 2), EncodeShardManifest(first)));
  EXPECT_TRUE(manifests.ReadLatest().status().IsCorruption());

  const std::string bytes = EncodeShardManifest(first);
  ASSERT_OK(DecodeShardManifest(bytes, "m", 1, shard_).status());
  EXPECT_TRUE(DecodeShardManifest(bytes, "m", 2, shard_).status().IsCorruption());
  EXPECT_TRUE(
      DecodeShardManifest(bytes, "m", 1, DeriveShardId("someone-else")).status().IsCorruption());
  EXPECT_TRUE(DecodeShardManifest(bytes.substr(0, bytes.size() - 3), "m", 1, shard_)
                  .status()
                  .IsCorruption());
}

TEST_P(ShardManifestTest, ListShardsReturnsRegisteredShardsSorted) {
  ASSERT_OK_AND_ASSIGN(std::vector<Uuid> none, ListShards(*store_, kPrefix));
  EXPECT_TRUE(none.empty());
  std::vector<Uuid> expected;
  for (std::string_view name : {"a", "b", "c", "d"}) {
    const Uuid shard = DeriveShardId(name);
    expected.push_back(shard);
    ShardManifestStore manifests = Manifests(shard);
    ASSERT_OK(manifests.Initialize().status());
  }
  // A shard of another store prefix is not listed.
  ShardManifestStore other(store_, "other/", DeriveShardId("e"));
  ASSERT_OK(other.Claim().status());
  std::sort(expected.begin(), expected.end());
  ASSERT_OK_AND_ASSIGN(std::vector<Uuid> shards, ListShards(*store_, kPrefix));
  EXPECT_EQ(shards, expected);
  ASSERT_OK_AND_ASSIGN(std::vector<Uuid> others, ListShards(*store_, "other/"));
  EXPECT_EQ(others, std::vector<Uuid>{DeriveShardId("e")});
}

TEST_P(ShardManifestTest, StaleHintFarBehindStillFindsTheLatest) {
  ShardManifestStore manifests = Manifests();
  ASSERT_OK(manifests.Claim().status());
  for (int i = 0; i < 98; ++i) ASSERT_OK(manifests.Update(1, "seal", SealOne).status());
  // Further behind than the probe budget (io::kMaxVersionProbes): the reader lists.
  ASSERT_OK(store_->Put(ShardLatestHintKey(kPrefix, shard_), "1"));
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest, manifests.ReadLatest());
  EXPECT_EQ(latest.version(), 100u);
  EXPECT_EQ(latest.current_generation(), 99u);
}

TEST_P(ShardManifestTest, RetainedVersionsKeepTheNewestAndReadersStillFindTheLatest) {
  ShardManifestStore manifests = Manifests();
  manifests.set_retained_versions(4);
  ASSERT_OK(manifests.Claim().status());
  for (int i = 0; i < 20; ++i) ASSERT_OK(manifests.Update(1, "seal", SealOne).status());
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> objects,
                       store_->List(ShardManifestDir(kPrefix, shard_)));
  std::vector<uint64_t> versions;
  for (const ObjectMeta& object : objects) {
    const std::string_view name =
        std::string_view(object.key).substr(ShardManifestDir(kPrefix, shard_).size());
    if (std::optional<uint64_t> v = ParseShardManifestName(name)) versions.push_back(*v);
  }
  std::sort(versions.begin(), versions.end());
  EXPECT_EQ(versions, (std::vector<uint64_t>{19, 20, 21, 22}));
  // The start of the chain is gone: a missing hint, a hint naming a deleted version and
  // a hint past the chain all make the reader list instead of probing from version 1.
  const std::string hint = ShardLatestHintKey(kPrefix, shard_);
  for (std::string_view value : {"", "3", "500"}) {
    if (value.empty()) {
      ASSERT_OK(store_->Delete(hint));
    } else {
      ASSERT_OK(store_->Put(hint, value));
    }
    ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest, Manifests().ReadLatest());
    EXPECT_EQ(latest.version(), 22u) << "hint '" << value << "'";
  }
  // Claims and updates keep working on the shortened chain, from any store.
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest claimed, Manifests().Claim());
  EXPECT_EQ(claimed.version(), 23u);
  EXPECT_EQ(claimed.writer_epoch(), 2u);
  EXPECT_EQ(claimed.current_generation(), 21u);
}

using strata::testing::HookedStore;

TEST_P(ShardManifestTest, WriteIntoASlotCleanupEmptiedIsALostRace) {
  ShardManifestStore setup = Manifests();
  ASSERT_OK(setup.Claim().status());  // version 2, epoch 1
  // While the slow writer sits between reading version 2 and putting version 3, another
  // writer with retention writes versions 3..12 and deletes everything below 9: slot 3 is
  // free again when the slow writer's put-if-absent arrives.
  auto hooked = std::make_shared<HookedStore>(store_, ShardManifestKey(kPrefix, shard_, 3), [this] {
    ShardManifestStore fast = Manifests();
    fast.set_retained_versions(4);
    for (int i = 0; i < 10; ++i) ASSERT_OK(fast.Update(1, "seal", SealOne).status());
  });
  ShardManifestStore slow(hooked, std::string(kPrefix), shard_);
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest written, slow.Update(1, "seal", SealOne));
  // Not version 3 behind the chain: the slow writer noticed and went on from the latest.
  EXPECT_EQ(written.version(), 13u);
  EXPECT_EQ(GenerationNumbers(written).size(), 11u);
  EXPECT_FALSE(VersionExists(3));
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest latest, Manifests().ReadLatest());
  EXPECT_EQ(latest.version(), 13u);
  EXPECT_EQ(latest.current_generation(), 12u);
}

INSTANTIATE_TEST_SUITE_P(Stores, ShardManifestTest, ::testing::Values("memory", "local"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace strata::lsm
