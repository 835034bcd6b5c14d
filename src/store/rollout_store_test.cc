// RolloutStore: round trips, visibility of deferred seals, filters and pages over the base
// table and pending generations, writers and epochs, merges (bounded passes, relative
// drains, concurrent merges and appends), the pending-generation cap and schema evolution.
#include "strata/rollout_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "lsm/merge.h"
#include "store/store_test_util.h"

namespace strata::store {
namespace {

using testing::ArtifactRecord;
using testing::AssistantRecord;
using testing::IdsOf;
using testing::WithoutBlob;

class RolloutStoreTest : public testing::StoreFixture {};

// Every id appears exactly once.
void ExpectUniqueIds(const std::vector<RolloutRecord>& records, size_t want) {
  std::set<std::string> ids;
  for (const RolloutRecord& r : records) {
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate id " << r.id;
  }
  EXPECT_EQ(ids.size(), want);
}

// --- Filters ---------------------------------------------------------------------------

TEST(RolloutFiltersTest, ParsesEverySupportedKey) {
  ASSERT_OK_AND_ASSIGN(RolloutFilters f, RolloutFilters::FromJson(R"({
      "rollout_id": "r", "problem_id": "p", "dataset": "d", "policy_version": "v",
      "role": "tool", "content_type": "text/plain", "artifact_type": "img",
      "include_in_training": false})"));
  EXPECT_EQ(f.rollout_id, "r");
  EXPECT_EQ(f.problem_id, "p");
  EXPECT_EQ(f.dataset, "d");
  EXPECT_EQ(f.policy_version, "v");
  EXPECT_EQ(f.role, "tool");
  EXPECT_EQ(f.content_type, "text/plain");
  EXPECT_EQ(f.artifact_type, "img");
  EXPECT_EQ(f.include_in_training, false);
}

TEST(RolloutFiltersTest, RejectsUnknownKeysWrongTypesAndNonObjects) {
  auto unknown = RolloutFilters::FromJson(R"({"reward": 1})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unsupported rollout filter 'reward'"),
            std::string::npos);
  EXPECT_FALSE(RolloutFilters::FromJson(R"({"id": "x"})").ok());
  auto wrong = RolloutFilters::FromJson(R"({"dataset": 42})");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("dataset"), std::string::npos);
  auto yes = RolloutFilters::FromJson(R"({"include_in_training": "yes"})");
  ASSERT_FALSE(yes.ok());
  EXPECT_NE(yes.status().message().find("include_in_training"), std::string::npos);
  EXPECT_FALSE(RolloutFilters::FromJson("[1, 2]").ok());
  EXPECT_FALSE(RolloutFilters::FromJson("not json").ok());
}

TEST(RolloutFiltersTest, RejectsAKeyGivenTwice) {
  auto repeated =
      RolloutFilters::FromJson(R"({"rollout_id": "a", "role": "user", "rollout_id": "b"})");
  ASSERT_TRUE(repeated.status().IsInvalidArgument()) << repeated.status();
  EXPECT_NE(repeated.status().message().find("key 'rollout_id' is given twice"), std::string::npos)
      << repeated.status();
}

TEST(RolloutFiltersTest, ExpressionEscapesQuotesInFixedOrder) {
  ASSERT_OK_AND_ASSIGN(
      RolloutFilters f,
      RolloutFilters::FromJson(
          R"({"policy_version": "worker's-ckpt", "role": "assistant", "include_in_training": true})"));
  EXPECT_EQ(f.Expression(),
            "role = 'assistant' AND policy_version = 'worker''s-ckpt' AND include_in_training = "
            "true");
  RolloutFilters empty;
  empty.dataset = "";
  EXPECT_EQ(empty.Expression(), "");
  RolloutRecord r = AssistantRecord("a");
  EXPECT_TRUE(empty.Matches(r));
  EXPECT_TRUE(f.Matches(r) == false);  // policy_version differs
  f.policy_version = "v3";
  EXPECT_TRUE(f.Matches(r));
}

// --- Round trip and visibility ------------------------------------------------------------

TEST_F(RolloutStoreTest, AppendListAndFetchRoundTrip) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  RolloutRecord turn = AssistantRecord("it's \"quoted\" 你好");
  RolloutRecord artifact = ArtifactRecord("artifact-1", std::string("\0\1\2bytes", 8));
  ASSERT_OK(rollouts->Add({turn, artifact}).status());
  ASSERT_OK(rollouts->Flush().status());

  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0], WithoutBlob(artifact));  // id order
  EXPECT_EQ(listed[1], turn);

  ASSERT_OK_AND_ASSIGN(auto got, rollouts->GetById(turn.id));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, turn);
  ASSERT_OK_AND_ASSIGN(auto blob, rollouts->GetBlob("artifact-1"));
  ASSERT_TRUE(blob.has_value());
  EXPECT_EQ(*blob, *artifact.binary_payload);
  ASSERT_OK_AND_ASSIGN(auto missing, rollouts->GetById("nope"));
  EXPECT_FALSE(missing.has_value());
  ASSERT_OK_AND_ASSIGN(auto no_blob, rollouts->GetBlob(turn.id));
  EXPECT_FALSE(no_blob.has_value());
}

TEST_F(RolloutStoreTest, AddIsDurableButNotVisibleUntilFlush) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK(rollouts->Add({AssistantRecord("a")}).status());
  ASSERT_OK_AND_ASSIGN(auto before, rollouts->List());
  EXPECT_TRUE(before.empty());
  ASSERT_OK_AND_ASSIGN(auto got, rollouts->GetById("a"));
  EXPECT_FALSE(got.has_value());
  ASSERT_OK_AND_ASSIGN(FlushOutcome outcome, rollouts->Flush());
  EXPECT_EQ(outcome, FlushOutcome::kSealed);
  ASSERT_OK_AND_ASSIGN(auto after, rollouts->List());
  EXPECT_EQ(IdsOf(after), std::vector<std::string>{"a"});
}

TEST_F(RolloutStoreTest, ReadOwnWritesSeesUnsealedRowsOnlyInTheWritingHandle) {
  RolloutStoreOptions options;
  options.base.read_own_writes = true;
  ASSERT_OK_AND_ASSIGN(auto writer, OpenRollout("solo", options));
  ASSERT_OK_AND_ASSIGN(auto other, OpenRollout("reader"));
  ASSERT_OK(writer->Add({AssistantRecord("a"), AssistantRecord("b")}).status());
  ASSERT_OK_AND_ASSIGN(auto own, writer->List());
  EXPECT_EQ(IdsOf(own), (std::vector<std::string>{"a", "b"}));
  ASSERT_OK_AND_ASSIGN(auto got, writer->GetById("b"));
  EXPECT_TRUE(got.has_value());
  ASSERT_OK_AND_ASSIGN(auto theirs, other->List());
  EXPECT_TRUE(theirs.empty());
  EXPECT_EQ(Manifest().generations_size(), 0) << "read-your-writes must not seal per put";
}

TEST_F(RolloutStoreTest, ObserveCountsSealedRowsAndReportsUnflushedOnes) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK(rollouts->Add({AssistantRecord("a"), AssistantRecord("b")}).status());
  ASSERT_OK_AND_ASSIGN(RolloutObservation before, rollouts->Observe());
  EXPECT_EQ(before.row_count, 0);
  EXPECT_EQ(before.unflushed_rows, 2);
  ASSERT_OK(rollouts->Flush().status());
  ASSERT_OK_AND_ASSIGN(RolloutObservation after, rollouts->Observe());
  EXPECT_EQ(after.row_count, 2);
  EXPECT_EQ(after.unflushed_rows, 0);
  EXPECT_EQ(after.pending_generations, 1);
  EXPECT_EQ(after.fragment_count, 0);
  EXPECT_GT(after.last_updated_micros, 0);  // the base version's commit time
}

TEST_F(RolloutStoreTest, FilteredListMatchesFieldsBeforePagination) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  std::vector<RolloutRecord> records;
  for (int i = 0; i < 10; ++i) {
    RolloutRecord r = AssistantRecord(fmt::format("id-{:02}", i), i % 2 == 0 ? "even" : "odd", i);
    if (i % 3 == 0) r.role = std::string(kRoleTool);  // dictionary column
    if (i == 4) r.dataset.reset();                    // nullable string column
    records.push_back(r);
  }
  ASSERT_OK(rollouts->Add(records).status());
  ASSERT_OK(rollouts->Flush().status());
  RolloutFilters even;
  even.rollout_id = "even";
  ASSERT_OK_AND_ASSIGN(RolloutPage page, rollouts->ListFiltered(even, 2, 1));
  EXPECT_EQ(IdsOf(page.records), (std::vector<std::string>{"id-02", "id-04"}));
  EXPECT_TRUE(page.has_more);
  RolloutFilters tools;
  tools.role = "tool";
  ASSERT_OK_AND_ASSIGN(RolloutPage tool_page, rollouts->ListFiltered(tools, 10));
  EXPECT_EQ(IdsOf(tool_page.records),
            (std::vector<std::string>{"id-00", "id-03", "id-06", "id-09"}));
  EXPECT_FALSE(tool_page.has_more);
  RolloutFilters dataset;
  dataset.dataset = "gsm8k";
  ASSERT_OK_AND_ASSIGN(auto with_dataset, rollouts->List(std::nullopt, 0, dataset));
  EXPECT_EQ(with_dataset.size(), 9u);
}

TEST_F(RolloutStoreTest, ConcurrentAddsShareOneStoreAndNoneAreLost) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 50; ++i) {
    threads.emplace_back([&, i] {
      if (!rollouts->Add({AssistantRecord(fmt::format("c{:02}", i))}).ok()) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_OK(rollouts->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 50);
}

TEST_F(RolloutStoreTest, FlushIsANoopWithoutWrites) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK_AND_ASSIGN(FlushOutcome first, rollouts->Flush());
  ASSERT_OK_AND_ASSIGN(FlushOutcome second, rollouts->Flush());
  EXPECT_EQ(first, FlushOutcome::kNoop);
  EXPECT_EQ(second, FlushOutcome::kNoop);
  ASSERT_OK(rollouts->Add({AssistantRecord("a")}).status());
  ASSERT_OK_AND_ASSIGN(FlushOutcome sealed, rollouts->Flush());
  EXPECT_EQ(sealed, FlushOutcome::kSealed);
  EXPECT_EQ(Manifest().generations_size(), 1);
  ASSERT_OK(rollouts->Flush().status());
  EXPECT_EQ(Manifest().generations_size(), 1) << "a flush of an empty memtable seals nothing";
}

TEST_F(RolloutStoreTest, ANewStoreRecordsThatARolloutStoreOwnsItsBaseTable) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  // Before any row is written there is nothing under _lsm/: only the kind says who owns it.
  ASSERT_OK_AND_ASSIGN(auto table, table::Table::Open(store_, prefix_));
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> kind,
                       OwningStoreKind(*store_, prefix_, *table->schema()));
  EXPECT_EQ(kind, std::optional<std::string>(kRolloutStoreKind));
  EXPECT_EQ(CheckBaseTableChange(*kind, BaseTableChange::kAddColumns).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(RolloutStoreTest, CleanupSealsBeforeMerging) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK(rollouts->Add({AssistantRecord("a")}).status());
  ASSERT_OK_AND_ASSIGN(MergeReport report, rollouts->Cleanup());
  EXPECT_EQ(report.generations_reclaimed, 1);
  ASSERT_OK_AND_ASSIGN(auto all, rollouts->List());
  EXPECT_EQ(IdsOf(all), std::vector<std::string>{"a"});
  ASSERT_OK_AND_ASSIGN(RolloutPage base, rollouts->ListFiltered({}, 10, 0, ListSource::kFragments));
  EXPECT_EQ(IdsOf(base.records), std::vector<std::string>{"a"});
  ExpectGenerationDirsAfterDeletions(rollouts->base(), 0);
}

TEST_F(RolloutStoreTest, DroppingAStoreSealsItsUnflushedRows) {
  {
    ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
    ASSERT_OK(rollouts->Add({AssistantRecord("dropped")}).status());
  }
  ASSERT_OK_AND_ASSIGN(auto reader, OpenRollout("reader"));
  ASSERT_OK_AND_ASSIGN(auto got, reader->GetById("dropped"));
  EXPECT_TRUE(got.has_value());
}

TEST_F(RolloutStoreTest, DistinctShardsShareOneStore) {
  ASSERT_OK_AND_ASSIGN(auto a, OpenRollout("worker-a"));
  ASSERT_OK_AND_ASSIGN(auto b, OpenRollout("worker-b"));
  ASSERT_OK(a->Add({ArtifactRecord("from-a", "AAAA")}).status());
  ASSERT_OK(b->Add({ArtifactRecord("from-b", "BBBB")}).status());
  ASSERT_OK(a->Flush().status());
  ASSERT_OK(b->Flush().status());
  for (RolloutStore* s : {a.get(), b.get()}) {
    ASSERT_OK_AND_ASSIGN(auto listed, s->List());
    EXPECT_EQ(IdsOf(listed), (std::vector<std::string>{"from-a", "from-b"}));
    ASSERT_OK_AND_ASSIGN(auto blob, s->GetBlob("from-b"));
    EXPECT_EQ(blob, std::optional<std::string>("BBBB"));
  }
  ASSERT_OK_AND_ASSIGN(auto observer, OpenRollout("observer"));
  ASSERT_OK_AND_ASSIGN(RolloutObservation o, observer->Observe());
  EXPECT_EQ(o.row_count, 2);
  EXPECT_EQ(o.pending_generations, 2);
  EXPECT_EQ(o.fragment_count, 0);
}

TEST_F(RolloutStoreTest, WalAndAllPaginationTakeOnlyPageRows) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK(rollouts->Add({AssistantRecord("000"), AssistantRecord("002"), AssistantRecord("004")})
                .status());
  ASSERT_OK(rollouts->Cleanup().status());  // into the base table
  RolloutRecord wal = AssistantRecord("001");
  wal.rationale = "because";
  ASSERT_OK(rollouts->Add({wal, AssistantRecord("003"), AssistantRecord("005")}).status());
  ASSERT_OK(rollouts->Flush().status());

  ASSERT_OK_AND_ASSIGN(RolloutPage all, rollouts->ListFiltered({}, 2, 1, ListSource::kAll));
  EXPECT_EQ(IdsOf(all.records), (std::vector<std::string>{"001", "002"}));
  EXPECT_EQ(all.records[0].rationale, "because");
  EXPECT_TRUE(all.has_more);
  ASSERT_OK_AND_ASSIGN(RolloutPage wal_page, rollouts->ListFiltered({}, 1, 1, ListSource::kWal));
  EXPECT_EQ(IdsOf(wal_page.records), std::vector<std::string>{"003"});
  EXPECT_TRUE(wal_page.has_more);
  ASSERT_OK_AND_ASSIGN(RolloutPage last, rollouts->ListFiltered({}, 10, 4, ListSource::kAll));
  EXPECT_EQ(IdsOf(last.records), (std::vector<std::string>{"004", "005"}));
  EXPECT_FALSE(last.has_more);
  ASSERT_OK_AND_ASSIGN(RolloutPage base, rollouts->ListFiltered({}, 10, 0, ListSource::kFragments));
  EXPECT_EQ(IdsOf(base.records), (std::vector<std::string>{"000", "002", "004"}));
}

TEST_F(RolloutStoreTest, ListSourceSplitsBaseAndWalAcrossAMerge) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK(rollouts->Add({AssistantRecord("a")}).status());
  ASSERT_OK(rollouts->Flush().status());
  ASSERT_OK_AND_ASSIGN(RolloutPage frag, rollouts->ListFiltered({}, 10, 0, ListSource::kFragments));
  ASSERT_OK_AND_ASSIGN(RolloutPage wal, rollouts->ListFiltered({}, 10, 0, ListSource::kWal));
  EXPECT_TRUE(frag.records.empty());
  EXPECT_EQ(wal.records.size(), 1u);
  ASSERT_OK(rollouts->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(frag, rollouts->ListFiltered({}, 10, 0, ListSource::kFragments));
  ASSERT_OK_AND_ASSIGN(wal, rollouts->ListFiltered({}, 10, 0, ListSource::kWal));
  EXPECT_EQ(frag.records.size(), 1u);
  EXPECT_TRUE(wal.records.empty());
}

TEST_F(RolloutStoreTest, ExplicitCheckoutPinsUntilRefreshLatest) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK(rollouts->Add({AssistantRecord("a")}).status());
  ASSERT_OK(rollouts->Cleanup().status());
  uint64_t first = rollouts->version();
  ASSERT_OK(rollouts->Add({AssistantRecord("b")}).status());
  ASSERT_OK(rollouts->Cleanup().status());
  ASSERT_OK(rollouts->Checkout(first));
  EXPECT_TRUE(rollouts->pinned());
  ASSERT_OK_AND_ASSIGN(auto pinned, rollouts->List());
  EXPECT_EQ(IdsOf(pinned), std::vector<std::string>{"a"});
  auto refused = rollouts->Add({AssistantRecord("c")});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("read-only"), std::string::npos);
  ASSERT_OK(rollouts->RefreshLatest());
  ASSERT_OK_AND_ASSIGN(auto latest, rollouts->List());
  EXPECT_EQ(IdsOf(latest), (std::vector<std::string>{"a", "b"}));
  ASSERT_OK(rollouts->Add({AssistantRecord("c")}).status());
}

TEST_F(RolloutStoreTest, TrajectoryRowsAreFilteredAndSortedAcrossSources) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK(
      rollouts->Add({AssistantRecord("t2", "traj", 2), AssistantRecord("x", "other", 0)}).status());
  ASSERT_OK(rollouts->Cleanup().status());
  ASSERT_OK(rollouts
                ->Add({AssistantRecord("t0", "traj", 0), AssistantRecord("t1b", "traj", 1),
                       AssistantRecord("t1a", "traj", 1)})
                .status());
  ASSERT_OK(rollouts->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto trajectory, rollouts->GetTrajectory("traj"));
  EXPECT_EQ(IdsOf(trajectory), (std::vector<std::string>{"t0", "t1a", "t1b", "t2"}));
  auto empty = rollouts->GetTrajectory("");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("rollout_id must not be empty"), std::string::npos);
}

TEST_F(RolloutStoreTest, AddRejectsRecordsWithoutIdsAndWritesNothing) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  RolloutRecord bad = AssistantRecord("");
  auto added = rollouts->Add({AssistantRecord("ok"), bad});
  ASSERT_FALSE(added.ok());
  EXPECT_EQ(added.status().code(), StatusCode::kInvalidArgument);
  ASSERT_OK(rollouts->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  EXPECT_TRUE(listed.empty());
}

// --- Writers and epochs ---------------------------------------------------------------

TEST_F(RolloutStoreTest, AddReusesTheResidentWriterAndItsEpoch) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK(rollouts->Add({AssistantRecord("a0")}).status());
  ASSERT_OK(rollouts->Flush().status());
  uint64_t epoch = Manifest().writer_epoch();
  for (int i = 1; i < 5; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("a{}", i))}).status());
    ASSERT_OK(rollouts->Flush().status());
  }
  EXPECT_EQ(Manifest().writer_epoch(), epoch);
  EXPECT_EQ(Manifest().generations_size(), 5);
}

TEST_F(RolloutStoreTest, MergeNeverFencesTheLiveWriter) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("m{}", i))}).status());
    ASSERT_OK(rollouts->Cleanup().status());
  }
  EXPECT_EQ(Manifest().generations_size(), 0);
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 4);
}

TEST_F(RolloutStoreTest, CloseIsIdempotentAndAddReopens) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK(rollouts->Add({AssistantRecord("a")}).status());
  ASSERT_OK(rollouts->Close());
  ASSERT_OK(rollouts->Close());
  ASSERT_OK_AND_ASSIGN(auto after_close, rollouts->List());
  EXPECT_EQ(IdsOf(after_close), std::vector<std::string>{"a"}) << "close seals";
  ASSERT_OK(rollouts->Add({AssistantRecord("b")}).status());
  ASSERT_OK(rollouts->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  EXPECT_EQ(IdsOf(listed), (std::vector<std::string>{"a", "b"}));
}

TEST_F(RolloutStoreTest, TwoHandlesWithOneInstanceIdLoseNoAcknowledgedRow) {
  ASSERT_OK_AND_ASSIGN(auto first, OpenRollout("same"));
  ASSERT_OK_AND_ASSIGN(auto second, OpenRollout("same"));
  std::vector<std::string> acknowledged;
  for (int i = 0; i < 6; ++i) {
    RolloutStore* s = i % 2 == 0 ? first.get() : second.get();
    std::string id = fmt::format("f{}", i);
    // Each handle's writer fences the other's; Add reopens once and retries.
    if (s->Add({AssistantRecord(id)}).ok()) acknowledged.push_back(id);
  }
  ASSERT_OK(first->Close());
  ASSERT_OK(second->Close());
  ASSERT_OK_AND_ASSIGN(auto reader, OpenRollout("reader"));
  ASSERT_OK_AND_ASSIGN(auto listed, reader->List());
  std::set<std::string> present;
  for (const auto& r : listed) present.insert(r.id);
  for (const std::string& id : acknowledged) EXPECT_TRUE(present.count(id)) << id;
  EXPECT_EQ(acknowledged.size(), 6u);
}

// --- Merges ---------------------------------------------------------------------------

TEST_F(RolloutStoreTest, MergeIfDueMergesOnlyAtTheThreshold) {
  RolloutStoreOptions options;
  options.base.merge_after_generations = 2;
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout("solo", options));
  ASSERT_OK(rollouts->Add({AssistantRecord("g0")}).status());
  ASSERT_OK(rollouts->Flush().status());
  ASSERT_OK_AND_ASSIGN(bool merged, rollouts->base().MergeIfDue());
  EXPECT_FALSE(merged);
  EXPECT_EQ(Manifest().generations_size(), 1);
  ASSERT_OK(rollouts->Add({AssistantRecord("g1")}).status());
  ASSERT_OK(rollouts->Flush().status());
  ASSERT_OK_AND_ASSIGN(merged, rollouts->base().MergeIfDue());
  EXPECT_TRUE(merged);
  EXPECT_EQ(Manifest().generations_size(), 0);
  ASSERT_OK_AND_ASSIGN(merged, rollouts->base().MergeIfDue());
  EXPECT_FALSE(merged);  // nothing pends
}

TEST_F(RolloutStoreTest, CountTriggerMergesOnlyAtTheThreshold) {
  RolloutStoreOptions options;
  options.base.merge_after_generations = 3;
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout("solo", options));
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("g{}", i))}).status());
    ASSERT_OK(rollouts->Flush().status());
  }
  ASSERT_OK_AND_ASSIGN(bool due, rollouts->CountMergeDue());
  EXPECT_FALSE(due);
  ASSERT_OK_AND_ASSIGN(MergeReport none, rollouts->MaybeMerge());
  EXPECT_EQ(none.generations_reclaimed, 0);
  EXPECT_EQ(Manifest().generations_size(), 2);
  ASSERT_OK(rollouts->Add({AssistantRecord("g2")}).status());
  ASSERT_OK(rollouts->Flush().status());
  ASSERT_OK_AND_ASSIGN(due, rollouts->CountMergeDue());
  EXPECT_TRUE(due);
  ASSERT_OK_AND_ASSIGN(MergeReport merged, rollouts->MaybeMerge());
  EXPECT_EQ(merged.generations_reclaimed, 3);
  EXPECT_EQ(Manifest().generations_size(), 0);
  // A fresh reader sees the merged rows.
  ASSERT_OK_AND_ASSIGN(auto reader, OpenRollout("reader"));
  ASSERT_OK_AND_ASSIGN(auto listed, reader->List());
  ExpectUniqueIds(listed, 3);
  ExpectGenerationDirsAfterDeletions(rollouts->base(), 0);
}

TEST_F(RolloutStoreTest, SerialMergesDeleteMergedGenerationDirs) {
  RolloutStoreOptions options;
  options.base.merge_after_generations = 10;
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout("solo", options));
  for (int i = 0; i < 30; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("s{:02}", i))}).status());
    ASSERT_OK(rollouts->Flush().status());
    ASSERT_OK(rollouts->MaybeMerge().status());
  }
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 30);
  ExpectGenerationDirsAfterDeletions(rollouts->base(), Manifest().generations_size());
}

TEST_F(RolloutStoreTest, MergePassIsBoundedAndLeftoversSurvive) {
  RolloutStoreOptions options;
  options.base.merge_max_generations = 3;
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout("solo", options));
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("b{}", i))}).status());
    ASSERT_OK(rollouts->Flush().status());
  }
  ASSERT_OK_AND_ASSIGN(MergeReport first, rollouts->Cleanup());
  EXPECT_EQ(first.generations_reclaimed, 3);
  EXPECT_EQ(Manifest().generations_size(), 7);
  ASSERT_OK_AND_ASSIGN(auto mid, rollouts->List());
  ExpectUniqueIds(mid, 10);
  std::vector<int> passes = {first.generations_reclaimed};
  while (Manifest().generations_size() > 0) {
    ASSERT_OK_AND_ASSIGN(MergeReport pass, rollouts->Cleanup());
    ASSERT_GT(pass.generations_reclaimed, 0);
    EXPECT_LE(pass.generations_reclaimed, 3);
    passes.push_back(pass.generations_reclaimed);
  }
  EXPECT_EQ(passes, (std::vector<int>{3, 3, 3, 1}));
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 10);
  ExpectGenerationDirsAfterDeletions(rollouts->base(), 0);
}

TEST_F(RolloutStoreTest, ZeroMergeCapsMergeEverythingInOnePass) {
  RolloutStoreOptions options;
  options.base.merge_max_generations = 0;
  options.base.merge_max_bytes = 0;
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout("solo", options));
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("z{}", i))}).status());
    ASSERT_OK(rollouts->Flush().status());
  }
  ASSERT_OK_AND_ASSIGN(MergeReport pass, rollouts->Cleanup());
  EXPECT_EQ(pass.generations_reclaimed, 6);
}

TEST_F(RolloutStoreTest, ByteCappedPassesKeepWholeGenerationsAndBlobs) {
  struct Case {
    int max_generations;
    int64_t max_bytes;
  };
  const int64_t kMiB = 1 << 20;
  for (Case c :
       {Case{8, kMiB + kMiB / 2}, Case{0, kMiB + kMiB / 2}, Case{2, 16 * kMiB}, Case{2, 0}}) {
    SCOPED_TRACE(fmt::format("max_generations {} max_bytes {}", c.max_generations, c.max_bytes));
    prefix_ = fmt::format("caps-{}-{}/", c.max_generations, c.max_bytes);
    RolloutStoreOptions options;
    options.base.merge_max_generations = c.max_generations;
    options.base.merge_max_bytes = c.max_bytes;
    ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout("solo", options));
    for (int i = 0; i < 5; ++i) {
      ASSERT_OK(
          rollouts->Add({ArtifactRecord(fmt::format("blob{}", i), std::string(kMiB, 'a' + i))})
              .status());
      ASSERT_OK(rollouts->Flush().status());
    }
    std::vector<int> passes;
    while (Manifest().generations_size() > 0) {
      ASSERT_OK_AND_ASSIGN(MergeReport pass, rollouts->Cleanup());
      ASSERT_GT(pass.generations_reclaimed, 0);
      passes.push_back(pass.generations_reclaimed);
      ExpectGenerationDirsAfterDeletions(rollouts->base(), Manifest().generations_size());
    }
    EXPECT_EQ(passes, (std::vector<int>{2, 2, 1}));
    for (int i = 0; i < 5; ++i) {
      ASSERT_OK_AND_ASSIGN(auto blob, rollouts->GetBlob(fmt::format("blob{}", i)));
      ASSERT_TRUE(blob.has_value());
      EXPECT_EQ(*blob, std::string(kMiB, 'a' + i));
    }
  }
}

TEST_F(RolloutStoreTest, OversizedGenerationIsMergedWholeAndMakesProgress) {
  RolloutStoreOptions options;
  options.base.merge_after_generations = 1;
  options.base.merge_max_bytes = 1;
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout("solo", options));
  for (int g = 0; g < 2; ++g) {
    std::vector<RolloutRecord> rows;
    for (int i = 0; i < 3; ++i) {
      rows.push_back(ArtifactRecord(fmt::format("o{}{}", g, i), std::string(4096, 'x')));
    }
    ASSERT_OK(rollouts->Add(rows).status());
    ASSERT_OK(rollouts->Flush().status());
  }
  ASSERT_OK_AND_ASSIGN(MergeReport first, rollouts->MaybeMerge());
  EXPECT_EQ(first.generations_reclaimed, 1);
  EXPECT_EQ(Manifest().generations_size(), 1);
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 6);
  ASSERT_OK_AND_ASSIGN(MergeReport second, rollouts->MaybeMerge());
  EXPECT_EQ(second.generations_reclaimed, 1);
  ASSERT_OK_AND_ASSIGN(MergeReport none, rollouts->MaybeMerge());
  EXPECT_EQ(none.generations_reclaimed, 0);
  ASSERT_OK_AND_ASSIGN(listed, rollouts->List());
  ExpectUniqueIds(listed, 6);
  ASSERT_OK_AND_ASSIGN(auto blob, rollouts->GetBlob("o12"));
  EXPECT_EQ(blob, std::optional<std::string>(std::string(4096, 'x')));
}

TEST_F(RolloutStoreTest, OverwrittenKeyKeepsOneLiveBaseRowAndNewestWins) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  RolloutRecord v1 = AssistantRecord("k");
  v1.content = "first";
  ASSERT_OK(rollouts->Add({v1, AssistantRecord("other")}).status());
  ASSERT_OK(rollouts->Cleanup().status());
  RolloutRecord v2 = v1;
  v2.content = "second";
  ASSERT_OK(rollouts->Add({v2}).status());
  ASSERT_OK(rollouts->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(auto got, rollouts->GetById("k"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->content, "second");
  // The base table holds exactly one live row per id (no over-count after merges).
  int64_t raw = rollouts->base().Observe()->base_rows;
  EXPECT_EQ(raw, 2);
  ASSERT_OK_AND_ASSIGN(RolloutObservation o, rollouts->Observe());
  EXPECT_EQ(o.row_count, 2);
}

TEST_F(RolloutStoreTest, MergesFromTwoShardsIntoOneBaseRunConcurrently) {
  ASSERT_OK_AND_ASSIGN(auto a, OpenRollout("shard-a"));
  ASSERT_OK_AND_ASSIGN(auto b, OpenRollout("shard-b"));
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK(a->Add({AssistantRecord(fmt::format("a{}", i))}).status());
    ASSERT_OK(a->Flush().status());
    ASSERT_OK(b->Add({AssistantRecord(fmt::format("b{}", i))}).status());
    ASSERT_OK(b->Flush().status());
  }
  Result<MergeReport> ra = Status::Internal("not run");
  Result<MergeReport> rb = Status::Internal("not run");
  std::thread ta([&] { ra = a->Cleanup(); });
  std::thread tb([&] { rb = b->Cleanup(); });
  ta.join();
  tb.join();
  ASSERT_OK(ra.status());
  ASSERT_OK(rb.status());
  EXPECT_EQ(ra->generations_reclaimed, 4);
  EXPECT_EQ(rb->generations_reclaimed, 4);
  EXPECT_EQ(Manifest("shard-a").generations_size(), 0);
  EXPECT_EQ(Manifest("shard-b").generations_size(), 0);
  ASSERT_OK_AND_ASSIGN(auto listed, a->List());
  ExpectUniqueIds(listed, 8);
}

TEST_F(RolloutStoreTest, CompactionComposesWithConcurrentMerges) {
  ASSERT_OK_AND_ASSIGN(auto merger, OpenRollout("merger"));
  ASSERT_OK_AND_ASSIGN(auto compactor, OpenRollout("compactor"));
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK(merger->Add({AssistantRecord(fmt::format("c{}", i))}).status());
    ASSERT_OK(merger->Cleanup().status());  // one base fragment per merge
  }
  for (int i = 4; i < 8; ++i) {
    ASSERT_OK(merger->Add({AssistantRecord(fmt::format("c{}", i))}).status());
    ASSERT_OK(merger->Flush().status());
  }
  Result<table::CompactionResult> compacted = Status::Internal("not run");
  Result<MergeReport> merged = Status::Internal("not run");
  std::thread tc([&] { compacted = compactor->Compact(); });
  std::thread tm([&] { merged = merger->Cleanup(); });
  tc.join();
  tm.join();
  ASSERT_OK(merged.status());
  if (!compacted.ok()) {
    EXPECT_EQ(compacted.status().code(), StatusCode::kBusy);
  }
  ASSERT_OK_AND_ASSIGN(auto listed, merger->List());
  ExpectUniqueIds(listed, 8);
  int64_t raw = merger->base().Observe()->base_rows;
  EXPECT_EQ(raw, 8);
}

TEST_F(RolloutStoreTest, CompactionReducesFragmentsAndPreservesReads) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  for (int i = 0; i < 7; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("f{}", i))}).status());
    ASSERT_OK(rollouts->Cleanup().status());
  }
  ASSERT_OK(rollouts->Add({ArtifactRecord("blob", "payload")}).status());
  ASSERT_OK(rollouts->Cleanup().status());
  int64_t before = rollouts->Observe()->fragment_count;
  ASSERT_GE(before, 2);
  table::CompactionOptions options;
  options.max_source_fragments = 4;
  ASSERT_OK_AND_ASSIGN(table::CompactionResult result, rollouts->Compact(options));
  EXPECT_GE(result.fragments_removed, 1);
  EXPECT_LE(result.fragments_removed, 4);
  EXPECT_LT(rollouts->Observe()->fragment_count, before);
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 8);
  ASSERT_OK_AND_ASSIGN(auto blob, rollouts->GetBlob("blob"));
  EXPECT_EQ(blob, std::optional<std::string>("payload"));
}

TEST_F(RolloutStoreTest, RepairDropsFragmentsWhoseFilesAreMissing) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("r{}", i))}).status());
    ASSERT_OK(rollouts->Cleanup().status());
  }
  ASSERT_OK_AND_ASSIGN(table::RepairReport nothing, rollouts->Repair());
  EXPECT_FALSE(nothing.committed_version.has_value());
  EXPECT_TRUE(nothing.dropped.empty());
  // Lose one base data file.
  std::filesystem::path data = dir_.path() / (prefix_ + "data");
  std::filesystem::path victim;
  for (const auto& entry : std::filesystem::directory_iterator(data)) victim = entry.path();
  ASSERT_FALSE(victim.empty());
  std::filesystem::remove(victim);
  ASSERT_OK_AND_ASSIGN(table::RepairReport report, rollouts->Repair());
  ASSERT_EQ(report.dropped.size(), 1u);
  EXPECT_EQ(report.dropped[0].physical_rows, 1);
  ASSERT_TRUE(report.committed_version.has_value());
  EXPECT_GT(*report.committed_version, report.read_version);
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 2);
  ASSERT_OK(rollouts->Compact().status());
}

// --- Merge vs. appends (the reference's issue #198 suite) -------------------------------

TEST_F(RolloutStoreTest, AppendsSucceedAndAreNotLostWhileAMergeRuns) {
  // The merge waits for a budget the test holds, so the first appends are known to land
  // while it is under way (sealed, pending generations listed); the rest race its reads
  // and commit.
  RolloutStoreOptions options;
  options.base.merge_budget = std::make_shared<lsm::MergeBudget>(8 << 20);
  lsm::MergeBudget& budget = *options.base.merge_budget;
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout("solo", options));
  for (int i = 0; i < 8; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("g{}", i))}).status());
    ASSERT_OK(rollouts->Flush().status());
  }
  std::optional<lsm::MergeBudget::Reservation> held = budget.Reserve(budget.limit_bytes());
  Result<MergeReport> merged = Status::Internal("not run");
  std::thread merge([&] { merged = rollouts->Cleanup(); });
  budget.WaitForWaiters(1);
  int failures = 0;
  for (int i = 0; i < 40; ++i) {
    if (i == 20) held.reset();
    if (!rollouts->Add({AssistantRecord(fmt::format("w{:02}", i))}).ok()) ++failures;
  }
  merge.join();
  ASSERT_OK(merged.status());
  EXPECT_EQ(failures, 0);
  ASSERT_OK(rollouts->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 48);
}

TEST_F(RolloutStoreTest, GenerationSealedDuringAMergeIsNotDropped) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("g{}", i))}).status());
    ASSERT_OK(rollouts->Flush().status());
  }
  Result<MergeReport> merged = Status::Internal("not run");
  std::thread merge([&] { merged = rollouts->Cleanup(); });
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("n{}", i))}).status());
    ASSERT_OK(rollouts->Flush().status());
  }
  merge.join();
  ASSERT_OK(merged.status());
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 16);
}

TEST_F(RolloutStoreTest, ConcurrentMergesOfOneShardDoNotDuplicateRows) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("d{}", i))}).status());
    ASSERT_OK(rollouts->Flush().status());
  }
  // Four handles of the same shard merge at once (none of them writes).
  std::vector<std::unique_ptr<RolloutStore>> mergers;
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(auto m, OpenRollout());
    mergers.push_back(std::move(m));
  }
  std::vector<Result<MergeReport>> results(4, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { results[i] = mergers[i]->Cleanup(); });
  }
  for (auto& t : threads) t.join();
  int reclaimed = 0;
  for (auto& r : results) {
    ASSERT_OK(r.status());
    reclaimed += r->generations_reclaimed;
  }
  EXPECT_GE(reclaimed, 8);  // each pass takes up to 8; stale prepares reclaim nothing
  while (Manifest().generations_size() > 0) ASSERT_OK(rollouts->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 10);
  int64_t raw = rollouts->base().Observe()->base_rows;
  EXPECT_EQ(raw, 10);
}

// --- Pending-generation cap --------------------------------------------------------------

TEST_F(RolloutStoreTest, ReadsAreRefusedPastThePendingGenerationCap) {
  RolloutStoreOptions options;
  options.base.pending_generations_max = 2;
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout("solo", options));
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(rollouts->Add({AssistantRecord(fmt::format("p{}", i))}).status());
    ASSERT_OK(rollouts->Flush().status());
  }
  auto refused = rollouts->List();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("3 generations"), std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find(kPendingGenerationsExceeded), std::string::npos);
  ASSERT_OK(rollouts->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(auto listed, rollouts->List());
  ExpectUniqueIds(listed, 3);
}

TEST_F(RolloutStoreTest, PendingGenerationCapCountsEveryShard) {
  RolloutStoreOptions options;
  options.base.pending_generations_max = 3;
  ASSERT_OK_AND_ASSIGN(auto a, OpenRollout("cap-a", options));
  ASSERT_OK_AND_ASSIGN(auto b, OpenRollout("cap-b", options));
  auto seal = [](RolloutStore& s, const std::string& id) {
    ASSERT_OK(s.Add({AssistantRecord(id)}).status());
    ASSERT_OK(s.Flush().status());
  };
  seal(*a, "a0");
  seal(*a, "a1");
  seal(*b, "b0");
  ASSERT_OK_AND_ASSIGN(auto three, a->List());
  EXPECT_EQ(three.size(), 3u);
  seal(*b, "b1");
  auto refused = a->List();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("across 2 shards"), std::string::npos)
      << refused.status();
  ASSERT_OK(b->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(auto four, a->List());
  ExpectUniqueIds(four, 4);
}

// --- Schema evolution ---------------------------------------------------------------------

TEST_F(RolloutStoreTest, OlderStoresGainNewColumnsAndKeepTheirRows) {
  // A store created before the claim-check columns existed.
  std::vector<FieldPtr> legacy;
  for (const FieldPtr& f : RolloutSchema()->fields()) {
    if (f->name() == "model_input_string" || f->name() == "model_output_string" ||
        f->name() == "rationale" || f->name() == "problem_text" || f->name() == "user_metadata") {
      continue;
    }
    legacy.push_back(f);
  }
  StorageBaseOptions legacy_options;
  legacy_options.schema = std::make_shared<Schema>(legacy);
  legacy_options.key_column = "id";
  legacy_options.shard_id = "solo";
  legacy_options.store_kind = std::string(kRolloutStoreKind);  // an older rollout store
  {
    ASSERT_OK_AND_ASSIGN(auto old_store, StorageBase::Open(store_, prefix_, legacy_options));
    ASSERT_OK_AND_ASSIGN(RecordBatch batch,
                         EncodeRolloutRecords({AssistantRecord("legacy")}, old_store->schema()));
    ASSERT_OK(old_store->Put({batch}));
    ASSERT_OK(old_store->Flush().status());  // a pending generation in the old schema
  }
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  EXPECT_EQ(rollouts->base().schema()->num_fields(), RolloutSchema()->num_fields());
  RolloutRecord fresh = AssistantRecord("fresh");
  fresh.rationale = "why";
  ASSERT_OK(rollouts->Add({fresh}).status());
  ASSERT_OK(rollouts->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(auto legacy_row, rollouts->GetById("legacy"));
  ASSERT_TRUE(legacy_row.has_value());
  EXPECT_FALSE(legacy_row->rationale.has_value());
  ASSERT_OK_AND_ASSIGN(auto fresh_row, rollouts->GetById("fresh"));
  ASSERT_TRUE(fresh_row.has_value());
  EXPECT_EQ(fresh_row->rationale, "why");
}

}  // namespace
}  // namespace strata::store
