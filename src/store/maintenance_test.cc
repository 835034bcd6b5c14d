// The maintenance component: synchronous passes (flush + count-triggered merge, cleanup,
// compaction), the background jobs on a manual clock, registration that holds no store,
// timeouts, Stop, and the metrics of every action.
#include "strata/maintenance.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "store/maintenance_test_util.h"
#include "util/clock.h"

namespace strata::store {
namespace {

// 2026-12-03 03:30:00 UTC.
constexpr int64_t kThreeThirtyUtc = int64_t{1796268600} * 1000000;

class MaintenanceTest : public testing::MaintenanceFixture {
 protected:
  // A component on the fixture's clock and metrics; intervals 0 unless set.
  std::shared_ptr<Maintenance> Start(MaintenanceOptions options = {}) {
    options.clock = &clock_;
    options.metrics = &metrics_;
    Result<std::shared_ptr<Maintenance>> created = Maintenance::Create(std::move(options));
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : nullptr;
  }

  static MaintenanceOptions Off() {
    MaintenanceOptions options;
    options.flush_interval_seconds = 0;
    options.cleanup_interval_seconds = 0;
    return options;
  }

  Result<std::unique_ptr<StorageBase>> OpenRegistered(const std::shared_ptr<Maintenance>& m,
                                                      StorageBaseOptions options = {},
                                                      std::shared_ptr<ObjectStore> on = nullptr) {
    options.maintenance = m;
    options.clock = &clock_;
    options.metrics = &metrics_;
    return OpenItems(std::move(options), std::move(on));
  }

  // Advances the clock and lets the component's timer see it.
  void Advance(const std::shared_ptr<Maintenance>& m, std::chrono::nanoseconds by) {
    clock_.Advance(by);
    m->Wake();
  }

  double Metric(const std::string& series) const { return MetricValue(metrics_, series); }

  ManualClock clock_{kThreeThirtyUtc};
  MetricsRegistry metrics_;
};

TEST_F(MaintenanceTest, CreateRejectsBadOptions) {
  MaintenanceOptions options = Off();
  options.threads = 0;
  EXPECT_TRUE(Maintenance::Create(options).status().IsInvalidArgument());
  options = Off();
  options.cleanup_interval_seconds = -1;
  EXPECT_TRUE(Maintenance::Create(options).status().IsInvalidArgument());
  options = Off();
  options.compaction.enabled = true;
  options.compaction.min_fragments = 0;
  EXPECT_TRUE(Maintenance::Create(options).status().IsInvalidArgument());
}

TEST_F(MaintenanceTest, FlushPassSealsDeferredRows) {
  std::shared_ptr<Maintenance> m = Start(Off());
  ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m));
  ASSERT_OK(base->Put({Items("a", 3)}));
  EXPECT_OK_AND_EQ_(base->Count(), 0);  // deferred: not visible before a seal
  MaintenancePassReport report = m->RunFlushPass();
  EXPECT_EQ(report.stores, 1);
  EXPECT_EQ(report.succeeded, 1);
  EXPECT_EQ(report.failed, 0);
  EXPECT_OK_AND_EQ_(base->Count(), 3);
  EXPECT_OK_AND_EQ_(base->PendingGenerations(), 1);  // no count trigger configured
  EXPECT_EQ(Metric(R"(strata_wal_flush_total{result="ok",kind="generic"})"), 1);
}

TEST_F(MaintenanceTest, FlushPassRunsTheCountTriggeredMergeAfterASeal) {
  std::shared_ptr<Maintenance> m = Start(Off());
  StorageBaseOptions options;
  options.merge_after_generations = 2;
  options.store_kind = "rollout";
  ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m, options));
  ASSERT_OK(base->Put({Items("a", 2)}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK(base->Put({Items("b", 2)}));
  MaintenancePassReport report = m->RunFlushPass();  // seals the second generation
  EXPECT_EQ(report.succeeded, 1);
  EXPECT_EQ(report.generations_reclaimed, 2);
  EXPECT_OK_AND_EQ_(base->PendingGenerations(), 0);
  EXPECT_OK_AND_EQ_(base->Count(ListSource::kFragments), 4);
  EXPECT_EQ(Metric(R"(strata_wal_flush_total{result="ok",kind="rollout"})"), 1);
  EXPECT_EQ(Metric(R"(strata_wal_count_merge_total{result="merged",kind="rollout"})"), 1);
  EXPECT_EQ(Metric(R"(strata_maintenance_generations_reclaimed_total{kind="rollout"})"), 2);
  // One pending generation is below the trigger: a flush, no merge.
  ASSERT_OK(base->Put({Items("c", 1)}));
  report = m->RunFlushPass();
  EXPECT_EQ(report.generations_reclaimed, 0);
  EXPECT_OK_AND_EQ_(base->PendingGenerations(), 1);
  EXPECT_EQ(Metric(R"(strata_wal_count_merge_total{result="merged",kind="rollout"})"), 1);
}

TEST_F(MaintenanceTest, FencedFlushIsCountedAsFenced) {
  std::shared_ptr<Maintenance> m = Start(Off());
  StorageBaseOptions options;
  options.shard_id = "one-writer";
  ASSERT_OK_AND_ASSIGN(auto first, OpenRegistered(m, options));
  ASSERT_OK(first->Put({Items("a", 2)}));
  options.maintenance = nullptr;
  ASSERT_OK_AND_ASSIGN(auto second, OpenItems(options));
  ASSERT_OK(second->OpenWriter());  // claims the shard: replays and publishes the rows
  MaintenancePassReport report = m->RunFlushPass();
  EXPECT_EQ(report.failed, 0);
  EXPECT_EQ(Metric(R"(strata_wal_flush_total{result="fenced",kind="generic"})"), 1);
  EXPECT_EQ(Metric(R"(strata_wal_flush_total{result="ok",kind="generic"})"), 0);
  EXPECT_OK_AND_EQ_(second->Count(), 2);
}

TEST_F(MaintenanceTest, CleanupPassMergesWhatIsPending) {
  std::shared_ptr<Maintenance> m = Start(Off());
  ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m));
  ASSERT_OK(base->Put({Items("a", 3)}));
  MaintenancePassReport report = m->RunCleanupPass();
  EXPECT_EQ(report.succeeded, 1);
  EXPECT_EQ(report.generations_reclaimed, 1);
  EXPECT_OK_AND_EQ_(base->Count(ListSource::kFragments), 3);
  EXPECT_EQ(Metric(R"(strata_wal_cleanup_total{result="merged",kind="generic"})"), 1);
  report = m->RunCleanupPass();
  EXPECT_EQ(report.generations_reclaimed, 0);
  EXPECT_EQ(Metric(R"(strata_wal_cleanup_total{result="noop",kind="generic"})"), 1);
  EXPECT_EQ(Metric(R"(strata_maintenance_generations_reclaimed_total{kind="generic"})"), 1);
}

TEST_F(MaintenanceTest, CompactionPassCompactsOutsideQuietHours) {
  MaintenanceOptions options = Off();
  options.compaction.min_fragments = 3;
  options.compaction.quiet_hours = {{3, 4}};  // now (03:30) is quiet
  std::shared_ptr<Maintenance> m = Start(options);
  ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m));
  MakeFragments(*base, 3);
  MaintenancePassReport report = m->RunCompactionPass();
  EXPECT_EQ(report.succeeded, 1);  // not due
  EXPECT_EQ(report.compactions, 0);
  ASSERT_OK_AND_ASSIGN(StoreObservation before, base->Observe());
  EXPECT_EQ(before.fragments, 3);
  clock_.Advance(std::chrono::hours(1));
  report = m->RunCompactionPass();
  EXPECT_EQ(report.compactions, 1);
  ASSERT_OK_AND_ASSIGN(StoreObservation observed, base->Observe());
  EXPECT_EQ(observed.fragments, 1);
  EXPECT_EQ(Metric(R"(strata_compactions_total{result="success",kind="generic"})"), 1);
  ASSERT_OK_AND_ASSIGN(CompactionStats stats, base->GetCompactionStats());
  EXPECT_EQ(stats.total_compactions, 1);
  EXPECT_EQ(stats.last_compaction_micros, clock_.NowMicros());
}

TEST_F(MaintenanceTest, PassCountsFailuresAndSkipsPinnedHandles) {
  std::shared_ptr<Maintenance> m = Start(Off());
  auto failing = std::make_shared<testing::FailingWritesStore>(store_);
  ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m, {}, failing));
  ASSERT_OK(base->Put({Items("a", 1)}));
  failing->fail = true;
  MaintenancePassReport report = m->RunCleanupPass();
  failing->fail = false;
  EXPECT_EQ(report.failed, 1);
  EXPECT_EQ(Metric(R"(strata_wal_cleanup_total{result="failed",kind="generic"})"), 1);
  ASSERT_OK(base->Checkout(base->version()));
  report = m->RunCleanupPass();
  EXPECT_EQ(report.skipped, 1);
  EXPECT_EQ(report.failed, 0);
}

TEST_F(MaintenanceTest, BackgroundJobsRunOnTheirIntervalsAfterSkippingTheFirstTick) {
  MaintenanceOptions options = Off();
  options.flush_interval_seconds = 10;
  options.cleanup_interval_seconds = 60;
  std::shared_ptr<Maintenance> m = Start(options);
  ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m));
  ASSERT_OK(base->Put({Items("a", 2)}));

  Advance(m, std::chrono::seconds(10));
  m->WaitUntil([](const MaintenanceProgress& p) { return p.flush_passes >= 1; });
  EXPECT_OK_AND_EQ_(base->Count(), 2);  // sealed by the flush sweeper
  EXPECT_OK_AND_EQ_(base->PendingGenerations(), 1);
  MaintenanceProgress progress = m->Progress();
  EXPECT_EQ(progress.flush_passes, 1);  // none at Create: the first tick is skipped
  EXPECT_EQ(progress.cleanup_passes, 0);
  EXPECT_EQ(Metric(R"(strata_wal_flush_total{result="ok",kind="generic"})"), 1);

  Advance(m, std::chrono::seconds(50));
  m->WaitUntil([](const MaintenanceProgress& p) { return p.cleanup_passes >= 1; });
  EXPECT_OK_AND_EQ_(base->PendingGenerations(), 0);
  EXPECT_OK_AND_EQ_(base->Count(ListSource::kFragments), 2);
  EXPECT_EQ(Metric(R"(strata_wal_cleanup_total{result="merged",kind="generic"})"), 1);
}

TEST_F(MaintenanceTest, BackgroundCompactionPolicyCompacts) {
  MaintenanceOptions options = Off();
  options.compaction.enabled = true;
  options.compaction.min_fragments = 2;
  options.compaction.check_interval_seconds = 300;
  std::shared_ptr<Maintenance> m = Start(options);
  ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m));
  MakeFragments(*base, 2);
  Advance(m, std::chrono::seconds(300));
  m->WaitUntil([](const MaintenanceProgress& p) { return p.compaction_passes >= 1; });
  ASSERT_OK_AND_ASSIGN(StoreObservation observed, base->Observe());
  EXPECT_EQ(observed.fragments, 1);
  EXPECT_EQ(Metric(R"(strata_compactions_total{result="success",kind="generic"})"), 1);
}

TEST_F(MaintenanceTest, DroppedHandleLeavesTheRegistry) {
  MaintenanceOptions options = Off();
  options.flush_interval_seconds = 10;
  std::shared_ptr<Maintenance> m = Start(options);
  {
    ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m));
    ASSERT_OK_AND_ASSIGN(auto second, OpenRegistered(m));
    EXPECT_EQ(m->Progress().registered, 2);
  }
  EXPECT_EQ(m->Progress().registered, 0);
  EXPECT_EQ(Metric("strata_maintenance_stores"), 0);
  // The next tick visits no store (a dangling one would be used after free here).
  Advance(m, std::chrono::seconds(10));
  m->WaitUntil([](const MaintenanceProgress& p) { return p.flush_passes >= 1; });
  EXPECT_EQ(m->Progress().actions_started, 0);
  EXPECT_EQ(m->RunFlushPass().stores, 0);

  // Close leaves too, and a write after Close joins again; DeleteData leaves for good.
  ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m));
  EXPECT_EQ(m->Progress().registered, 1);
  ASSERT_OK(base->Close());
  EXPECT_EQ(m->Progress().registered, 0);
  ASSERT_OK(base->Put({Items("a", 1)}));
  EXPECT_EQ(m->Progress().registered, 1);
  ASSERT_OK(base->DeleteData());
  EXPECT_EQ(m->Progress().registered, 0);
}

TEST_F(MaintenanceTest, SlowActionTimesOutIsSkippedAndStopWaitsForIt) {
  MaintenanceOptions options = Off();
  options.cleanup_interval_seconds = 10;  // timeout max(50 s, 30 s) = 50 s
  options.threads = 1;
  std::shared_ptr<Maintenance> m = Start(options);
  auto parking = std::make_shared<testing::ParkingStore>(store_);
  ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m, {}, parking));
  ASSERT_OK(base->Put({Items("a", 2)}));
  parking->Arm(BaseManifestKey(base->version() + 1));  // the cleanup merge's base commit

  Advance(m, std::chrono::seconds(10));
  parking->WaitUntilParked();
  m->WaitUntil([](const MaintenanceProgress& p) { return p.actions_started >= 1; });
  EXPECT_EQ(m->Progress().timeouts, 0);

  // 50 s later: the action has run for its whole timeout, and the tick due at 20 s finds
  // the store still busy.
  Advance(m, std::chrono::seconds(50));
  m->WaitUntil([](const MaintenanceProgress& p) { return p.timeouts >= 1 && p.skipped >= 1; });
  MaintenanceProgress progress = m->Progress();
  EXPECT_EQ(progress.timeouts, 1);
  EXPECT_EQ(progress.cleanup_passes, 2);  // the timed-out pass and the one that skipped
  EXPECT_EQ(progress.actions_finished, 0);
  EXPECT_EQ(Metric(R"(strata_wal_cleanup_total{result="timeout",kind="generic"})"), 1);
  // A synchronous pass skips the busy store too.
  EXPECT_EQ(m->RunCleanupPass().skipped, 1);

  // Stop waits for the action in flight.
  std::thread stopper([&] { m->Stop(); });
  m->WaitUntil([](const MaintenanceProgress& p) { return p.stopping; });
  parking->Release();
  stopper.join();
  progress = m->Progress();
  EXPECT_EQ(progress.actions_finished, 1);
  EXPECT_OK_AND_EQ_(base->PendingGenerations(), 0);  // the merge did complete
  // Its late result is not counted on top of the timeout.
  EXPECT_EQ(Metric(R"(strata_wal_cleanup_total{result="merged",kind="generic"})"), 0);
  m->Stop();  // idempotent
  // Stopped: no more ticks, but synchronous passes and registration still work.
  ASSERT_OK(base->Put({Items("b", 1)}));
  EXPECT_EQ(m->RunCleanupPass().generations_reclaimed, 1);
}

TEST_F(MaintenanceTest, UnregisterWaitsForTheActionOnThatStore) {
  MaintenanceOptions options = Off();
  options.cleanup_interval_seconds = 10;
  std::shared_ptr<Maintenance> m = Start(options);
  auto parking = std::make_shared<testing::ParkingStore>(store_);
  ASSERT_OK_AND_ASSIGN(auto base, OpenRegistered(m, {}, parking));
  ASSERT_OK(base->Put({Items("a", 2)}));
  parking->Arm(BaseManifestKey(base->version() + 1));
  Advance(m, std::chrono::seconds(10));
  parking->WaitUntilParked();
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    base.reset();  // the destructor unregisters: waits for the cleanup in flight
    closed = true;
  });
  // The action cannot end before the release, so the handle must still be alive.
  EXPECT_FALSE(closed.load());
  parking->Release();
  closer.join();
  EXPECT_EQ(m->Progress().registered, 0);
  EXPECT_EQ(m->Progress().actions_finished, 1);
  EXPECT_EQ(Metric(R"(strata_wal_cleanup_total{result="merged",kind="generic"})"), 1);
}

}  // namespace
}  // namespace strata::store
