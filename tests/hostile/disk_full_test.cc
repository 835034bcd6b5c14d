// A full disk must never cost an acknowledged row: a rollout store written through a file
// system that runs out of space at a random point, under a random mix of adds, flushes and
// merges, holds every row whose Add returned OK once space returns (after a fresh open, a
// flush and a merge), no row appears twice, and the base table verifies clean.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "io/fault_injection_file_system.h"
#include "io/file_object_store.h"
#include "strata/rollout_store.h"
#include "strata/table.h"
#include "support/temp_dir.h"

namespace strata {
namespace {

using store::RolloutRecord;
using store::RolloutStore;

RolloutRecord Row(const std::string& id, std::mt19937_64& rng) {
  RolloutRecord r;
  r.id = id;
  r.rollout_id = fmt::format("r{}", rng() % 8);
  r.problem_id = "p";
  r.sequence_order = static_cast<int32_t>(rng() % 100);
  r.created_at_micros = 1'700'000'000'000'000;
  // Some bulk, so that a full disk is hit by data and not only by small records.
  r.content = std::string(200 + rng() % 2000, static_cast<char>('a' + rng() % 26));
  return r;
}

Result<std::unique_ptr<RolloutStore>> OpenStore(std::shared_ptr<io::FileSystem> fs,
                                                const std::string& root) {
  // No fsync: nothing crashes here, and the fault is the full device, not a lost cache.
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects,
                          io::NewFileObjectStore(std::move(fs), root, {.sync = false}));
  store::RolloutStoreOptions options;
  options.base.generation_delete_delay_seconds = 0;
  return RolloutStore::Open(std::move(objects), "", std::move(options));
}

class DiskFullTest : public ::testing::TestWithParam<int> {};

TEST_P(DiskFullTest, EveryAcknowledgedRowSurvivesAndTheStoreVerifies) {
  const uint64_t seed = strata::testing::TestSeed() + static_cast<uint64_t>(GetParam());
  SCOPED_TRACE(fmt::format("seed {} (STRATA_TEST_SEED)", seed));
  std::mt19937_64 rng(seed);
  strata::testing::TempDir dir("disk-full");
  const std::string root = (dir.path() / "store").string();
  auto fs = std::make_shared<io::FaultInjectionFileSystem>(io::PosixFileSystem());

  std::set<std::string> acknowledged;
  int64_t failures = 0;
  {
    Result<std::unique_ptr<RolloutStore>> opened = OpenStore(fs, root);
    ASSERT_TRUE(opened.ok()) << opened.status();
    RolloutStore& rollouts = **opened;
    const int full_from = 10 + static_cast<int>(rng() % 30);
    const int full_until = full_from + 5 + static_cast<int>(rng() % 20);
    int next_id = 0;
    for (int step = 0; step < full_until + 15; ++step) {
      fs->SetNoSpace(step >= full_from && step < full_until);
      switch (rng() % 6) {
        case 0: {
          Result<store::FlushOutcome> flushed = rollouts.Flush();
          if (!flushed.ok()) ++failures;
          break;
        }
        case 1: {
          Result<store::MergeReport> merged = rollouts.MaybeMerge();
          if (!merged.ok()) ++failures;
          break;
        }
        default: {
          std::vector<RolloutRecord> batch;
          const int n = 1 + static_cast<int>(rng() % 16);
          for (int i = 0; i < n; ++i) batch.push_back(Row(fmt::format("id-{:05}", next_id++), rng));
          Result<uint64_t> added = rollouts.Add(batch);
          if (added.ok()) {
            for (const RolloutRecord& r : batch) acknowledged.insert(r.id);
          } else {
            ++failures;
          }
          break;
        }
      }
    }
    fs->SetNoSpace(false);
    // Closing may seal; it may also report an error left from the full disk.
    rollouts.Close().IgnoreError();
  }
  EXPECT_GT(failures, 0) << "the disk never filled up: the test proves nothing";
  EXPECT_GT(fs->injected_faults(), 0);

  // Space is back: a fresh process opens the store, flushes what the WAL holds, merges.
  Result<std::unique_ptr<RolloutStore>> reopened = OpenStore(io::PosixFileSystem(), root);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  ASSERT_TRUE((*reopened)->Flush().ok());
  Result<store::MergeReport> merged = (*reopened)->MaybeMerge();
  ASSERT_TRUE(merged.ok()) << merged.status();
  Result<std::vector<RolloutRecord>> rows = (*reopened)->List();
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::map<std::string, int> seen;
  for (const RolloutRecord& r : *rows) ++seen[r.id];
  for (const auto& [id, count] : seen) EXPECT_EQ(count, 1) << id << " listed more than once";
  for (const std::string& id : acknowledged) {
    EXPECT_EQ(seen.count(id), 1u) << "acknowledged row " << id << " is lost";
  }

  Result<std::shared_ptr<ObjectStore>> objects = OpenLocalObjectStore(root);
  ASSERT_TRUE(objects.ok()) << objects.status();
  Result<std::shared_ptr<table::Table>> base = table::Table::Open(*objects, "");
  ASSERT_TRUE(base.ok()) << base.status();
  Result<table::VerifyReport> verified = (*base)->Verify({.all_versions = true});
  ASSERT_TRUE(verified.ok()) << verified.status();
  EXPECT_TRUE(verified->problems.empty()) << verified->problems.front();
}

INSTANTIATE_TEST_SUITE_P(Seeds, DiskFullTest, ::testing::Range(0, 6));

}  // namespace
}  // namespace strata
