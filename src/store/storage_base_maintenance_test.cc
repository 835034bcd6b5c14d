// StorageBase's maintenance calls: the prepare/commit merge split, the public MergeBudget,
// ShouldCompact and CompactionStats, the compaction-in-progress error, and DeleteData.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "store/maintenance_test_util.h"
#include "strata/merge_budget.h"
#include "strata/rollout_store.h"
#include "strata/storage_base.h"
#include "util/clock.h"

namespace strata::store {
namespace {

using ::testing::HasSubstr;

class StorageBaseMaintenanceTest : public testing::MaintenanceFixture {};

// 2026-12-03 03:30:00 UTC.
constexpr int64_t kThreeThirtyUtc = int64_t{1796268600} * 1000000;

TEST_F(StorageBaseMaintenanceTest, CommitMergesOnlyThePreparedGenerations) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems());
  ASSERT_OK(base->Put({Items("a", 2)}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK(base->Put({Items("b", 1)}));
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> prepared, base->PrepareCleanupMerge());
  ASSERT_TRUE(prepared.has_value());  // the cleanup variant sealed "b0" first
  EXPECT_EQ(prepared->generations(), 2);
  EXPECT_EQ(prepared->rows(), 3);
  // A put and a seal between prepare and commit: that generation stays pending.
  ASSERT_OK(base->Put({Items("c", 4)}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK_AND_ASSIGN(MergeReport report, base->CommitPreparedMerge(std::move(*prepared)));
  EXPECT_EQ(report.generations_reclaimed, 2);
  EXPECT_EQ(report.rows_merged, 3);
  EXPECT_NE(report.base_version, 0u);
  EXPECT_OK_AND_EQ_(base->PendingGenerations(), 1);
  EXPECT_OK_AND_EQ_(base->Count(ListSource::kFragments), 3);
  EXPECT_OK_AND_EQ_(base->Count(ListSource::kWal), 4);
  EXPECT_OK_AND_EQ_(base->Count(ListSource::kAll), 7);
}

TEST_F(StorageBaseMaintenanceTest, StalePrepareCommitsNothing) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems());
  ASSERT_OK(base->Put({Items("a", 3)}));
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> first, base->PrepareCleanupMerge());
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> second, base->PrepareCleanupMerge());
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());  // both read the same immutable generation
  ASSERT_OK_AND_ASSIGN(MergeReport merged, base->CommitPreparedMerge(std::move(*first)));
  EXPECT_EQ(merged.generations_reclaimed, 1);
  const uint64_t version = base->version();
  ASSERT_OK_AND_ASSIGN(MergeReport stale, base->CommitPreparedMerge(std::move(*second)));
  EXPECT_EQ(stale.generations_reclaimed, 0);
  EXPECT_EQ(stale.base_version, 0u);
  EXPECT_EQ(stale.rows_merged, 0);
  EXPECT_EQ(base->version(), version);
  ASSERT_OK_AND_ASSIGN(StoreObservation observed, base->Observe());
  EXPECT_EQ(observed.base_rows, 3);  // no row appended twice
  EXPECT_EQ(observed.pending_generations, 0);
}

TEST_F(StorageBaseMaintenanceTest, PartlyStalePrepareIsBusyAndLosesNothing) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems());
  ASSERT_OK(base->Put({Items("a", 1)}));
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> older, base->PrepareCleanupMerge());
  ASSERT_OK(base->Put({Items("b", 1)}));
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> newer, base->PrepareCleanupMerge());
  ASSERT_TRUE(older.has_value());
  ASSERT_TRUE(newer.has_value());
  EXPECT_EQ(older->generations(), 1);
  EXPECT_EQ(newer->generations(), 2);  // the older one's generation and one sealed after it
  ASSERT_OK_AND_ASSIGN(MergeReport first, base->CommitPreparedMerge(std::move(*older)));
  EXPECT_EQ(first.generations_reclaimed, 1);
  const uint64_t version = base->version();
  // One of its generations is merged, one is not: no commit, one attempt, prepare again.
  Result<MergeReport> busy = base->CommitPreparedMerge(std::move(*newer));
  EXPECT_TRUE(busy.status().IsBusy()) << busy.status();
  EXPECT_EQ(base->version(), version);
  EXPECT_OK_AND_EQ_(base->PendingGenerations(), 1);
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> again, base->PrepareCleanupMerge());
  ASSERT_TRUE(again.has_value());
  ASSERT_OK_AND_ASSIGN(MergeReport second, base->CommitPreparedMerge(std::move(*again)));
  EXPECT_EQ(second.generations_reclaimed, 1);
  ASSERT_OK_AND_ASSIGN(StoreObservation observed, base->Observe());
  EXPECT_EQ(observed.base_rows, 2);
  EXPECT_EQ(observed.pending_generations, 0);
}

TEST_F(StorageBaseMaintenanceTest, PrepareDoesNotWaitForACommitInFlight) {
  auto parking = std::make_shared<testing::ParkingStore>(store_);
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems({}, parking));
  ASSERT_OK(base->Put({Items("a", 2)}));
  parking->Arm(BaseManifestKey(base->version() + 1));
  Result<MergeReport> cleanup = Status::Internal("not run");
  std::thread merger([&] { cleanup = base->Cleanup(); });
  parking->WaitUntilParked();  // the cleanup holds the merge lock in its base commit
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> prepared, base->PrepareCleanupMerge());
  ASSERT_TRUE(prepared.has_value());  // the generation is still pending
  EXPECT_EQ(prepared->generations(), 1);
  parking->Release();
  merger.join();
  ASSERT_OK(cleanup.status());
  EXPECT_EQ(cleanup->generations_reclaimed, 1);
  ASSERT_OK_AND_ASSIGN(MergeReport stale, base->CommitPreparedMerge(std::move(*prepared)));
  EXPECT_EQ(stale.generations_reclaimed, 0);
  EXPECT_OK_AND_EQ_(base->Count(ListSource::kFragments), 2);
}

TEST_F(StorageBaseMaintenanceTest, PrepareCountMergeWaitsForTheThreshold) {
  StorageBaseOptions options;
  options.merge_after_generations = 2;
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems(options));
  ASSERT_OK(base->Put({Items("a", 1)}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> none, base->PrepareCountMerge());
  EXPECT_FALSE(none.has_value());
  ASSERT_OK(base->Put({Items("b", 1)}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> due, base->PrepareCountMerge());
  ASSERT_TRUE(due.has_value());
  EXPECT_EQ(due->generations(), 2);
  ASSERT_OK_AND_ASSIGN(MergeReport report, base->CommitPreparedMerge(std::move(*due)));
  EXPECT_EQ(report.generations_reclaimed, 2);

  // The count trigger off: nothing to prepare, whatever is pending.
  base.reset();
  ASSERT_OK_AND_ASSIGN(auto off, OpenItems());
  ASSERT_OK(off->Put({Items("c", 1)}));
  ASSERT_OK(off->Flush().status());
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> disabled, off->PrepareCountMerge());
  EXPECT_FALSE(disabled.has_value());
}

TEST_F(StorageBaseMaintenanceTest, CommitRefusesAMergePreparedByAnotherHandle) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems());
  StorageBaseOptions reader_options;
  reader_options.shard_id = "reader";
  ASSERT_OK_AND_ASSIGN(auto other, OpenItems(reader_options));
  ASSERT_OK(base->Put({Items("a", 1)}));
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> prepared, base->PrepareCleanupMerge());
  ASSERT_TRUE(prepared.has_value());
  Result<MergeReport> refused = other->CommitPreparedMerge(std::move(*prepared));
  EXPECT_TRUE(refused.status().IsInvalidArgument()) << refused.status();
  EXPECT_OK_AND_EQ_(base->PendingGenerations(), 1);
}

TEST_F(StorageBaseMaintenanceTest, PublicMergeBudgetBoundsPreparedMerges) {
  // Built from the public header alone, and the type StorageBaseOptions takes.
  auto budget = std::make_shared<MergeBudget>(3 * (int64_t{1} << 20) + 1);
  EXPECT_EQ(budget->limit_bytes(), 3 * (int64_t{1} << 20) + 1);
  EXPECT_EQ(budget->reserved_bytes(), 0);
  StorageBaseOptions options;
  options.merge_budget = budget;
  options.merge_max_bytes = 0;  // reserve the whole budget
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems(options));
  ASSERT_OK(base->Put({Items("a", 10)}));
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> prepared, base->PrepareCleanupMerge());
  ASSERT_TRUE(prepared.has_value());
  // The prepared merge holds its reservation until it is committed.
  EXPECT_EQ(budget->reserved_bytes(), budget->limit_bytes());
  ASSERT_OK(base->CommitPreparedMerge(std::move(*prepared)).status());
  EXPECT_EQ(budget->reserved_bytes(), 0);
  // Dropping a prepared merge releases it too.
  ASSERT_OK(base->Put({Items("b", 10)}));
  {
    ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> dropped, base->PrepareCleanupMerge());
    ASSERT_TRUE(dropped.has_value());
    EXPECT_GT(budget->reserved_bytes(), 0);
  }
  EXPECT_EQ(budget->reserved_bytes(), 0);
}

TEST_F(StorageBaseMaintenanceTest, ShouldCompactCountsFragmentsOutsideQuietHours) {
  ManualClock clock(kThreeThirtyUtc);
  StorageBaseOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems(options));
  MakeFragments(*base, 3);
  ASSERT_OK_AND_ASSIGN(StoreObservation observed, base->Observe());
  ASSERT_EQ(observed.fragments, 3);

  EXPECT_OK_AND_EQ_(base->ShouldCompact(3), true);
  EXPECT_OK_AND_EQ_(base->ShouldCompact(4), false);
  EXPECT_OK_AND_EQ_(base->ShouldCompact(3, {{2, 4}}), false);   // 03:30 is quiet
  EXPECT_OK_AND_EQ_(base->ShouldCompact(3, {{4, 5}}), true);    // not yet
  EXPECT_OK_AND_EQ_(base->ShouldCompact(3, {{1, 3}}), true);    // end is exclusive
  EXPECT_OK_AND_EQ_(base->ShouldCompact(3, {{22, 4}}), false);  // wraps past midnight
  EXPECT_OK_AND_EQ_(base->ShouldCompact(3, {{22, 3}}), true);
  EXPECT_OK_AND_EQ_(base->ShouldCompact(3, {{3, 3}}), true);  // empty range
  EXPECT_OK_AND_EQ_(base->ShouldCompact(3, {{9, 10}, {3, 4}}), false);
  clock.Advance(std::chrono::hours(1));  // 04:30
  EXPECT_OK_AND_EQ_(base->ShouldCompact(3, {{2, 4}}), true);
  EXPECT_OK_AND_EQ_(base->ShouldCompact(3, {{4, 5}}), false);

  CompactionPolicy policy;
  EXPECT_EQ(policy.min_fragments, 5);  // reference defaults
  EXPECT_FALSE(policy.enabled);
  EXPECT_EQ(policy.check_interval_seconds, 300);
  policy.min_fragments = 3;
  EXPECT_OK_AND_EQ_(base->ShouldCompact(policy), true);

  Result<bool> bad = base->ShouldCompact(3, {{24, 2}});
  EXPECT_TRUE(bad.status().IsInvalidArgument()) << bad.status();
  EXPECT_THAT(bad.status().message(), HasSubstr("[24, 2)"));
  bad = base->ShouldCompact(3, {{2, 25}});
  EXPECT_TRUE(bad.status().IsInvalidArgument()) << bad.status();

  // A pinned handle would not compact.
  ASSERT_OK(base->Checkout(base->version()));
  EXPECT_OK_AND_EQ_(base->ShouldCompact(1), false);
}

TEST_F(StorageBaseMaintenanceTest, CompactionStatsRecordSuccessAndFailure) {
  ManualClock clock(kThreeThirtyUtc);
  auto failing = std::make_shared<testing::FailingWritesStore>(store_);
  StorageBaseOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems(options, failing));
  MakeFragments(*base, 3);
  ASSERT_OK_AND_ASSIGN(CompactionStats before, base->GetCompactionStats());
  EXPECT_EQ(before.total_fragments, 3);
  EXPECT_FALSE(before.is_compacting);
  EXPECT_FALSE(before.last_compaction_micros.has_value());
  EXPECT_OK_(before.last_error);
  EXPECT_EQ(before.total_compactions, 0);

  clock.Advance(std::chrono::minutes(5));
  ASSERT_OK(base->Compact().status());
  ASSERT_OK_AND_ASSIGN(CompactionStats after, base->GetCompactionStats());
  EXPECT_EQ(after.total_fragments, 1);
  EXPECT_EQ(after.last_compaction_micros, clock.NowMicros());
  EXPECT_OK_(after.last_error);
  EXPECT_EQ(after.total_compactions, 1);

  MakeFragments(*base, 2);
  failing->fail = true;
  clock.Advance(std::chrono::minutes(5));
  Result<table::CompactionResult> failed = base->Compact();
  failing->fail = false;
  ASSERT_FALSE(failed.ok());
  ASSERT_OK_AND_ASSIGN(CompactionStats after_failure, base->GetCompactionStats());
  EXPECT_EQ(after_failure.last_error, failed.status());
  EXPECT_EQ(after_failure.total_compactions, 1);
  EXPECT_EQ(after_failure.last_compaction_micros, after.last_compaction_micros);
  EXPECT_FALSE(after_failure.is_compacting);

  ASSERT_OK(base->Compact().status());
  ASSERT_OK_AND_ASSIGN(CompactionStats recovered, base->GetCompactionStats());
  EXPECT_OK_(recovered.last_error);
  EXPECT_EQ(recovered.total_compactions, 2);
}

TEST_F(StorageBaseMaintenanceTest, SecondConcurrentCompactFailsAtOnceWithTypedError) {
  uint64_t version = 0;
  {
    ASSERT_OK_AND_ASSIGN(auto setup, OpenItems());
    MakeFragments(*setup, 3);
    version = setup->version();
  }
  auto parking = std::make_shared<testing::ParkingStore>(store_);
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems({}, parking));
  parking->Arm(BaseManifestKey(version + 1));  // the first compaction's commit
  Result<table::CompactionResult> first = Status::Internal("not run");
  std::thread compactor([&] { first = base->Compact(); });
  parking->WaitUntilParked();

  ASSERT_OK_AND_ASSIGN(CompactionStats during, base->GetCompactionStats());
  EXPECT_TRUE(during.is_compacting);
  Result<table::CompactionResult> second = base->Compact();
  EXPECT_TRUE(second.status().IsBusy()) << second.status();
  EXPECT_TRUE(IsCompactionInProgress(second.status())) << second.status();
  EXPECT_THAT(second.status().message(), HasSubstr(prefix_));

  parking->Release();
  compactor.join();
  ASSERT_OK(first.status());
  // Other Busy errors are not this one; the refused call left no error behind.
  EXPECT_FALSE(IsCompactionInProgress(Status::Busy("merge memory budget busy")));
  EXPECT_FALSE(IsCompactionInProgress(Status::OK()));
  ASSERT_OK_AND_ASSIGN(CompactionStats after, base->GetCompactionStats());
  EXPECT_FALSE(after.is_compacting);
  EXPECT_OK_(after.last_error);
  EXPECT_EQ(after.total_compactions, 1);
  EXPECT_OK_(base->Compact().status());  // free again
}

TEST_F(StorageBaseMaintenanceTest, DeleteDataRemovesEverythingAndLaterCallsFail) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenItems());
  StorageBaseOptions other_options;
  other_options.shard_id = "other";
  ASSERT_OK_AND_ASSIGN(auto other, OpenItems(other_options));
  ASSERT_OK(base->Put({Items("a", 3)}));
  ASSERT_OK(base->Cleanup().status());
  ASSERT_OK(base->Put({Items("b", 2)}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK(base->Put({Items("c", 2)}));  // unflushed
  ASSERT_OK(other->Put({Items("d", 1)}));
  ASSERT_OK(other->Flush().status());
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> objects, store_->List(prefix_));
  ASSERT_FALSE(objects.empty());

  ASSERT_OK(base->DeleteData());
  EXPECT_TRUE(base->deleted());
  ASSERT_OK_AND_ASSIGN(objects, store_->List(prefix_));
  EXPECT_TRUE(objects.empty()) << objects.size() << " objects left, first " << objects.front().key;

  auto expect_deleted = [&](const Status& status, const char* call) {
    EXPECT_TRUE(status.IsNotFound()) << call << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr("was deleted")) << call;
    EXPECT_THAT(status.message(), HasSubstr(prefix_)) << call;
  };
  expect_deleted(base->Put({Items("e", 1)}), "Put");
  expect_deleted(base->DeleteKeys({expr::Scalar::String("a0")}), "DeleteKeys");
  expect_deleted(base->OpenWriter(), "OpenWriter");
  expect_deleted(base->Flush().status(), "Flush");
  expect_deleted(base->Scan({}).status(), "Scan");
  expect_deleted(base->GetMany({expr::Scalar::String("a0")}).status(), "GetMany");
  expect_deleted(base->Count().status(), "Count");
  expect_deleted(base->Observe().status(), "Observe");
  expect_deleted(base->PendingGenerations().status(), "PendingGenerations");
  expect_deleted(base->MaybeMerge().status(), "MaybeMerge");
  expect_deleted(base->Cleanup().status(), "Cleanup");
  expect_deleted(base->PrepareCountMerge().status(), "PrepareCountMerge");
  expect_deleted(base->PrepareCleanupMerge().status(), "PrepareCleanupMerge");
  expect_deleted(base->CountMergeDue().status(), "CountMergeDue");
  expect_deleted(base->Compact().status(), "Compact");
  expect_deleted(base->ShouldCompact(1).status(), "ShouldCompact");
  expect_deleted(base->GetCompactionStats().status(), "GetCompactionStats");
  expect_deleted(base->Repair().status(), "Repair");
  expect_deleted(base->Checkout(1), "Checkout");
  expect_deleted(base->RefreshLatest(), "RefreshLatest");
  EXPECT_OK_(base->Close());
  ASSERT_OK_AND_ASSIGN(objects, store_->List(prefix_));
  EXPECT_TRUE(objects.empty());  // nothing was recreated

  // Another handle of the store finds no base table on its next read.
  Result<int64_t> count = other->Count();
  EXPECT_FALSE(count.ok());
  EXPECT_TRUE(count.status().IsNotFound()) << count.status();
  // And the store is gone for openers.
  StorageBaseOptions reopen;
  reopen.schema = testing::MaintenanceFixture::ItemSchema();
  reopen.key_column = "id";
  Result<std::unique_ptr<StorageBase>> reopened =
      StorageBase::Open(store_, prefix_, reopen, /*create_if_missing=*/false);
  EXPECT_TRUE(reopened.status().IsNotFound()) << reopened.status();
}

TEST_F(StorageBaseMaintenanceTest, RolloutStorePassesTheMaintenanceCallsThrough) {
  ManualClock clock(kThreeThirtyUtc);
  RolloutStoreOptions options;
  options.base.clock = &clock;
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout("solo", options));
  ASSERT_OK(rollouts->Add({testing::AssistantRecord("t1")}).status());
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> prepared, rollouts->PrepareCleanupMerge());
  ASSERT_TRUE(prepared.has_value());
  ASSERT_OK_AND_ASSIGN(MergeReport merged, rollouts->CommitPreparedMerge(std::move(*prepared)));
  EXPECT_EQ(merged.generations_reclaimed, 1);
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> count, rollouts->PrepareCountMerge());
  EXPECT_FALSE(count.has_value());
  EXPECT_OK_AND_EQ_(rollouts->ShouldCompact(1, {{3, 4}}), false);
  EXPECT_OK_AND_EQ_(rollouts->ShouldCompact(1), true);
  CompactionPolicy policy;
  EXPECT_OK_AND_EQ_(rollouts->ShouldCompact(policy), false);  // 1 fragment < 5
  ASSERT_OK(rollouts->Compact().status());
  ASSERT_OK_AND_ASSIGN(CompactionStats stats, rollouts->GetCompactionStats());
  EXPECT_EQ(stats.total_compactions, 1);
  ASSERT_OK(rollouts->DeleteData());
  Status add = rollouts->Add({testing::AssistantRecord("t2")}).status();
  EXPECT_TRUE(add.IsNotFound()) << add;
  EXPECT_THAT(add.message(), HasSubstr("was deleted"));
}

}  // namespace
}  // namespace strata::store
