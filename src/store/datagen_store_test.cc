// DatagenStore: append batch and checkpoint rules (nothing written on bad input), atomic
// visibility of a checkpoint, the count-triggered merge, reads (tree, failures, statuses,
// overview, blobs), the stream writer's ids, retries and resumes.
#include "strata/datagen_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/datagen_test_util.h"
#include "store/store_test_util.h"
#include "strata/maintenance.h"
#include "strata/rollout_store.h"

namespace strata::store {
namespace {

using namespace std::string_literals;
using testing::Checkpoint;
using testing::Event;
using testing::Field;
using testing::Pos;

class DatagenStoreTest : public testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    ASSERT_OK_AND_ASSIGN(datagen_, OpenDatagen());
  }
  Result<std::unique_ptr<DatagenStore>> OpenDatagen(DatagenStoreOptions options = {}) {
    options.base.shard_id = "solo";
    options.base.generation_delete_delay_seconds = 0.1;
    return DatagenStore::Open(store_, "datagen/", std::move(options));
  }
  // Every event in the store.
  size_t EventCount() {
    auto overview = datagen_->base().Count();
    EXPECT_TRUE(overview.ok()) << overview.status();
    return overview.ok() ? static_cast<size_t>(*overview) : 0;
  }
  std::unique_ptr<DatagenStore> datagen_;
};

TEST_F(DatagenStoreTest, AppendBatchRulesRejectAndWriteNothing) {
  DatagenEvent created = Event(DatagenEventType::kItemCreated, "a", 1);
  DatagenEvent changed = created;
  changed.run_id = "run-2";
  EXPECT_INVALID(datagen_->Append({created, changed}).status(),
                 "event_id 'a#1#ITEM_CREATED' was reused with different content");
  DatagenEvent other = Event(DatagenEventType::kStepStarted, "a", 1);
  EXPECT_INVALID(datagen_->Append({created, other}).status(),
                 "item 'a' has duplicate item_seq 1 in one batch");
  DatagenEvent blob = Field("a", 2, "img", DatagenValue::Blob("abc"));
  DatagenEvent no_bytes = blob;
  no_bytes.value->mutable_blob().bytes.reset();
  EXPECT_INVALID(datagen_->Append({created, no_bytes}).status(),
                 "blob event 'a#2#FIELD_SET' has no bytes on the write path");
  DatagenEvent wrong_size = blob;
  wrong_size.value->mutable_blob().size = 5;
  EXPECT_INVALID(datagen_->Append({created, wrong_size}).status(),
                 "blob event 'a#2#FIELD_SET' declares 5 bytes but contains 3");
  DatagenEvent invalid = created;
  invalid.writer_epoch = "";
  EXPECT_INVALID(datagen_->Append({invalid}).status(), "writer_epoch must not be empty");
  EXPECT_EQ(EventCount(), 0u);
  ASSERT_OK_AND_ASSIGN(auto events, datagen_->EventsForItem("a"));
  EXPECT_TRUE(events.empty());

  // Identical duplicates are one event.
  ASSERT_OK(datagen_->Append({created, created, blob}).status());
  EXPECT_EQ(EventCount(), 2u);
  // An empty batch writes nothing.
  ASSERT_OK(datagen_->Append({}).status());
  EXPECT_EQ(EventCount(), 2u);
}

TEST_F(DatagenStoreTest, CheckpointRulesRejectAndWriteNothing) {
  const std::vector<DatagenEvent> good =
      Checkpoint("a", 2, "gen", {{"x", DatagenValue::Int(1)}, {"y", DatagenValue::Str("s")}});
  EXPECT_OK(ValidateDatagenCheckpoint(good));
  EXPECT_INVALID(datagen_->AppendCheckpoint({}).status(), "checkpoint batch must not be empty");
  for (auto [member, name] : std::vector<std::pair<std::string DatagenEvent::*, std::string>>{
           {&DatagenEvent::item_id, "item_id"},
           {&DatagenEvent::checkpoint_id, "checkpoint_id"},
           {&DatagenEvent::run_id, "run_id"},
           {&DatagenEvent::writer_epoch, "writer_epoch"}}) {
    std::vector<DatagenEvent> bad = good;
    bad[1].*member = "other";
    EXPECT_INVALID(datagen_->AppendCheckpoint(bad).status(),
                   "checkpoint batch mixes " + name + " values");
  }
  std::vector<DatagenEvent> bad = good;
  bad[0].attempt = 1;
  EXPECT_INVALID(datagen_->AppendCheckpoint(bad).status(), "checkpoint batch mixes attempt");
  bad = good;
  DatagenEvent started = Event(DatagenEventType::kStepStarted, "a", 9);
  started.checkpoint_id = good[0].checkpoint_id;
  bad.push_back(started);
  EXPECT_INVALID(
      datagen_->AppendCheckpoint(bad).status(),
      "checkpoint batch may contain only FIELD_SET, FIELD_APPEND, and STEP_COMPLETED events");
  bad = good;
  bad.pop_back();
  EXPECT_INVALID(datagen_->AppendCheckpoint(bad).status(),
                 "checkpoint batch requires exactly one STEP_COMPLETED event, found 0");
  bad = good;
  DatagenEvent second = good.back();
  second.event_id = "another";
  second.item_seq = 10;
  bad.push_back(second);
  EXPECT_INVALID(datagen_->AppendCheckpoint(bad).status(),
                 "checkpoint batch requires exactly one STEP_COMPLETED event, found 2");
  for (int which = 0; which < 5; ++which) {
    bad = good;
    DatagenEvent& f = bad[0];
    if (which == 0) f.step_name = "other";
    if (which == 1) f.step_index = 7;
    if (which == 2) f.step_kind = DatagenStepKind::kLoop;
    if (which == 3) f.enclosing_step = "outer";
    if (which == 4) f.selector_step = "router";
    EXPECT_INVALID(datagen_->AppendCheckpoint(bad).status(),
                   "all field events must share the STEP_COMPLETED step identity");
  }
  // The write-batch rules apply too.
  bad = good;
  bad[1].item_seq = bad[0].item_seq;
  EXPECT_INVALID(datagen_->AppendCheckpoint(bad).status(), "duplicate item_seq");
  EXPECT_EQ(EventCount(), 0u);
  ASSERT_OK(datagen_->AppendCheckpoint(good).status());
  EXPECT_EQ(EventCount(), 3u);
}

TEST_F(DatagenStoreTest, ACheckpointIsOneSealedPutVisibleOnReturn) {
  ASSERT_OK(datagen_->Append({Event(DatagenEventType::kItemCreated, "a", 1)}).status());
  ASSERT_OK_AND_ASSIGN(int64_t before, datagen_->PendingGenerations());
  std::vector<std::pair<std::string, DatagenValue>> fields;
  for (int i = 0; i < 50; ++i) fields.emplace_back(fmt::format("f{}", i), DatagenValue::Int(i));
  ASSERT_OK(datagen_->AppendCheckpoint(Checkpoint("a", 2, "gen", fields)).status());
  // One generation holds the whole checkpoint, so no read can see part of it.
  ASSERT_OK_AND_ASSIGN(int64_t after, datagen_->PendingGenerations());
  EXPECT_EQ(after, before + 1);
  ASSERT_OK_AND_ASSIGN(auto folded, datagen_->FoldItem("a"));
  ASSERT_TRUE(folded.has_value());
  EXPECT_EQ(folded->fields.size(), 50u);
  EXPECT_EQ(folded->trajectory.size(), 1u);
  EXPECT_EQ(folded->last_item_seq, 52);
}

TEST_F(DatagenStoreTest, ConcurrentReadersSeeWholeCheckpointsOnly) {
  ASSERT_OK(datagen_->Append({Event(DatagenEventType::kItemCreated, "a", 1)}).status());
  constexpr int kCheckpoints = 12;
  constexpr size_t kFields = 9;
  std::atomic<bool> done{false};
  Status written;
  std::thread writer([&] {
    int64_t seq = 2;
    for (int c = 0; c < kCheckpoints && written.ok(); ++c) {
      std::vector<std::pair<std::string, DatagenValue>> fields;
      for (size_t f = 0; f < kFields; ++f) {
        fields.emplace_back(fmt::format("f{}", f), DatagenValue::Int(c));
      }
      written =
          datagen_->AppendCheckpoint(Checkpoint("a", seq, fmt::format("s{}", c), fields)).status();
      seq += kFields + 1;
    }
    done = true;
  });
  int reads = 0;
  bool last = false;
  while (!last) {
    last = done.load();  // one more read after the writer finished
    auto events = datagen_->EventsForItem("a");
    EXPECT_TRUE(events.ok()) << events.status();
    if (!events.ok()) break;  // the writer is joined below
    std::map<std::string, size_t> per_checkpoint;
    for (const DatagenEvent& e : *events) {
      if (e.event_type != DatagenEventType::kItemCreated) ++per_checkpoint[e.checkpoint_id];
    }
    for (const auto& [checkpoint, n] : per_checkpoint) {
      EXPECT_EQ(n, kFields + 1) << "checkpoint " << checkpoint << " seen in part";
    }
    if (last) {
      EXPECT_EQ(per_checkpoint.size(), static_cast<size_t>(kCheckpoints));
    }
    ++reads;
  }
  writer.join();
  ASSERT_OK(written);
  EXPECT_GE(reads, 1);
}

TEST_F(DatagenStoreTest, AppendRunsTheCountTriggeredMerge) {
  DatagenStoreOptions options;
  options.base.merge_after_generations = 2;
  options.base.shard_id = "merging";
  ASSERT_OK_AND_ASSIGN(auto store, DatagenStore::Open(store_, "merging/", options));
  const uint64_t v0 = store->version();
  ASSERT_OK(store->Append({Event(DatagenEventType::kItemCreated, "a", 1)}).status());
  EXPECT_EQ(store->PendingGenerations().value(), 1);
  ASSERT_OK_AND_ASSIGN(uint64_t v, store->Append({Event(DatagenEventType::kStepStarted, "a", 2)}));
  EXPECT_EQ(store->PendingGenerations().value(), 0);
  EXPECT_GT(v, v0);
  ASSERT_OK_AND_ASSIGN(auto events, store->EventsForItem("a"));
  EXPECT_EQ(events.size(), 2u);
}

// --- Reads -------------------------------------------------------------------------------------

TEST_F(DatagenStoreTest, TreeFailuresStatusesAndTrajectory) {
  ASSERT_OK(datagen_
                ->Append({Event(DatagenEventType::kItemCreated, "r", 1),
                          Event(DatagenEventType::kStepCompleted, "r", 2),
                          Event(DatagenEventType::kTerminal, "r", 3)})
                .status());
  for (std::string child : {"r/split:1", "r/split:0"}) {
    DatagenEvent created = Event(DatagenEventType::kItemCreated, child, 1);
    created.parent_item_id = "r";
    ASSERT_OK(datagen_->Append({created}).status());
  }
  DatagenEvent grandchild = Event(DatagenEventType::kItemCreated, "r/split:0/map:4", 1);
  grandchild.parent_item_id = "r/split:0";
  DatagenEvent failure = Event(DatagenEventType::kFailed, "r/split:0/map:4", 2);
  failure.error_dump = "boom";
  failure.run_id = "run-2";
  ASSERT_OK(datagen_->Append({grandchild, failure}).status());
  // Never started: no ITEM_CREATED.
  ASSERT_OK(datagen_->Append({Event(DatagenEventType::kStepStarted, "r/split:9", 1)}).status());

  ASSERT_OK_AND_ASSIGN(DatagenItemTree tree, datagen_->ItemTree("r"));
  EXPECT_EQ(tree.roots, std::vector<std::string>{"r"});
  EXPECT_EQ(tree.nodes.size(), 4u);
  EXPECT_EQ(tree.nodes.at("r").children, (std::vector<std::string>{"r/split:0", "r/split:1"}));
  EXPECT_EQ(tree.nodes.at("r/split:0").children, std::vector<std::string>{"r/split:0/map:4"});
  EXPECT_EQ(tree.nodes.at("r").item.status, DatagenItemStatus::kCompleted);

  ASSERT_OK_AND_ASSIGN(auto failures, datagen_->ItemFailures("r/split:0/map:4"));
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0], (DatagenItemFailure{DatagenCursor{Pos("gen"), 2}, "run-2", 0, "ValueError",
                                             "boom", std::nullopt}));
  ASSERT_OK_AND_ASSIGN(auto all, datagen_->Failures());
  EXPECT_EQ(all.size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto run1, datagen_->Failures("run-1"));
  EXPECT_TRUE(run1.empty());
  ASSERT_OK_AND_ASSIGN(auto run2, datagen_->Failures("run-2"));
  EXPECT_EQ(run2.size(), 1u);

  // Ids with quotes and non-ASCII text are quoted in the filters.
  ASSERT_OK(datagen_->Append({Event(DatagenEventType::kItemCreated, "it's-ü", 1)}).status());
  ASSERT_OK_AND_ASSIGN(auto statuses, datagen_->RootItemStatuses({"r", "nobody", "it's-ü"}));
  EXPECT_EQ(statuses.size(), 3u);
  EXPECT_EQ(statuses.at("r"), DatagenItemStatus::kCompleted);
  EXPECT_EQ(statuses.at("nobody"), std::nullopt);
  EXPECT_EQ(statuses.at("it's-ü"), DatagenItemStatus::kRunning);
  ASSERT_OK_AND_ASSIGN(auto quoted, datagen_->EventsForItem("it's-ü"));
  EXPECT_EQ(quoted.size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto trajectory, datagen_->Trajectory("r"));
  EXPECT_EQ(trajectory, (std::vector<DatagenCursor>{DatagenCursor{Pos("gen"), 2}}));
  ASSERT_OK_AND_ASSIGN(auto events, datagen_->EventsForRoot("r"));
  EXPECT_EQ(events.size(), 8u);
  EXPECT_EQ(events.front().item_id, "r");
  ASSERT_OK_AND_ASSIGN(auto none, datagen_->FoldItem("r/split:9"));
  EXPECT_FALSE(none.has_value());
}

TEST_F(DatagenStoreTest, OverviewCountsRootsFailuresAndSamples) {
  // Roots r0..r7: r0 completed, r1 filtered, r2 failed (counts as running), others running;
  // every root but r0 fails once in run-A (7 roots → 5 samples); r1's child fails in run-B.
  for (int i = 0; i < 8; ++i) {
    std::string root = fmt::format("r{}", i);
    std::vector<DatagenEvent> events = {Event(DatagenEventType::kItemCreated, root, 1),
                                        Event(DatagenEventType::kStepCompleted, root, 2)};
    if (i > 0) {
      events.push_back(Event(DatagenEventType::kFailed, root, 3));
      events.back().run_id = "run-A";
      events.back().error_type = i % 2 == 0 ? "Timeout" : "ValueError";
    }
    if (i == 0) events.push_back(Event(DatagenEventType::kTerminal, root, 4));
    if (i == 1) {
      events.push_back(Event(DatagenEventType::kTerminal, root, 4));
      events.back().status = DatagenItemStatus::kFiltered;
    }
    ASSERT_OK(datagen_->Append(events).status());
  }
  DatagenEvent child = Event(DatagenEventType::kItemCreated, "r1/fan:0", 1);
  DatagenEvent child_failure = Event(DatagenEventType::kFailed, "r1/fan:0", 2);
  child_failure.run_id = "run-B";
  DatagenEvent child_step = Event(DatagenEventType::kStepCompleted, "r1/fan:0", 3);
  child_step.step_name = "judge";
  ASSERT_OK(datagen_->Append({child, child_failure, child_step}).status());
  // A root that never started is not an item.
  ASSERT_OK(datagen_->Append({Event(DatagenEventType::kStepStarted, "ghost", 1)}).status());

  ASSERT_OK_AND_ASSIGN(DatagenOverview overview, datagen_->Overview());
  EXPECT_EQ(overview.items, 8);
  EXPECT_EQ(overview.completed, 1);
  EXPECT_EQ(overview.filtered, 1);
  EXPECT_EQ(overview.running, 6);
  EXPECT_EQ(overview.failures, 8);
  EXPECT_EQ(overview.failures_by_error_type,
            (std::map<std::string, int64_t>{{"Timeout", 3}, {"ValueError", 5}}));
  ASSERT_EQ(overview.failures_by_run.size(), 2u);
  const DatagenRunFailures& a = overview.failures_by_run.at("run-A");
  EXPECT_EQ(a.failures, 7);
  EXPECT_EQ(a.failures_by_error_type,
            (std::map<std::string, int64_t>{{"Timeout", 3}, {"ValueError", 4}}));
  EXPECT_EQ(a.sample_root_item_ids, (std::vector<std::string>{"r1", "r2", "r3", "r4", "r5"}));
  EXPECT_EQ(overview.failures_by_run.at("run-B").sample_root_item_ids,
            std::vector<std::string>{"r1"});
  EXPECT_EQ(overview.completed_steps, (std::map<std::string, int64_t>{{"gen", 8}, {"judge", 1}}));
}

TEST_F(DatagenStoreTest, BlobReadsTakeTheNewestGeneration) {
  DatagenEvent created = Event(DatagenEventType::kItemCreated, "a", 1);
  DatagenEvent blob = Field("a", 2, "img", DatagenValue::Blob("base bytes"));
  ASSERT_OK(datagen_->Append({created, blob}).status());
  ASSERT_OK(datagen_->Cleanup().status());  // into the base table
  ASSERT_EQ(datagen_->PendingGenerations().value(), 0);
  ASSERT_OK_AND_ASSIGN(auto bytes, datagen_->GetBlob(blob.event_id));
  EXPECT_EQ(bytes, "base bytes");
  // The same event rewritten twice: two pending generations over the base copy.
  blob.value = DatagenValue::Blob("older");
  ASSERT_OK(datagen_->Append({blob}).status());
  blob.value = DatagenValue::Blob("newest");
  ASSERT_OK(datagen_->Append({blob}).status());
  ASSERT_EQ(datagen_->PendingGenerations().value(), 2);
  ASSERT_OK_AND_ASSIGN(bytes, datagen_->GetBlob(blob.event_id));
  EXPECT_EQ(bytes, "newest");
  ASSERT_OK_AND_ASSIGN(auto lazy, datagen_->FoldItem("a"));
  EXPECT_EQ(lazy->fields.at("img").values[0].blob(), (DatagenBlob{std::nullopt, 6, std::nullopt}));
  ASSERT_OK_AND_ASSIGN(std::string loaded, datagen_->LoadBlob(*lazy, "img"));
  EXPECT_EQ(loaded, "newest");
  ASSERT_OK_AND_ASSIGN(auto eager, datagen_->FoldItem("a", DatagenFoldMode::kEager));
  EXPECT_EQ(eager->fields.at("img").values[0].blob().bytes, "newest");
  EXPECT_INVALID(datagen_->LoadBlob(*lazy, "nope").status(), "holds no blob");
  ASSERT_OK_AND_ASSIGN(auto missing, datagen_->GetBlob("no-such-event"));
  EXPECT_EQ(missing, std::nullopt);
  ASSERT_OK_AND_ASSIGN(auto not_blob, datagen_->GetBlob(created.event_id));
  EXPECT_EQ(not_blob, std::nullopt);
}

TEST_F(DatagenStoreTest, RecordsItsKind) {
  ASSERT_OK_AND_ASSIGN(auto kind, OwningStoreKind(*store_, "datagen/", *datagen_->base().schema()));
  EXPECT_EQ(kind, std::optional<std::string>(kDatagenStoreKind));
}

TEST_F(DatagenStoreTest, AStoreOfAnotherKindIsRefusedBeforeAnythingChanges) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, RolloutStore::Open(store_, "rollouts/"));
  rollouts.reset();
  auto opened = DatagenStore::Open(store_, "rollouts/");
  EXPECT_INVALID(opened.status(), "is a rollout store, not a datagen store");
  // A rollout store opened on the datagen store must not evolve it to the rollout schema.
  const int columns = datagen_->base().schema()->num_fields();
  datagen_.reset();
  auto as_rollout = RolloutStore::Open(store_, "datagen/");
  EXPECT_INVALID(as_rollout.status(), "is a datagen store, not a rollout store");
  ASSERT_OK_AND_ASSIGN(datagen_, OpenDatagen());
  EXPECT_EQ(datagen_->base().schema()->num_fields(), columns);
}

// --- Stream writer -----------------------------------------------------------------------------

TEST_F(DatagenStoreTest, StreamWriterDerivesTheDocumentedIds) {
  ASSERT_OK_AND_ASSIGN(DatagenItemId item, DatagenItemId::FromSourceKey("root-1"));
  ASSERT_OK_AND_ASSIGN(DatagenStreamWriter writer,
                       datagen_->OpenStream(item, {"run-1", "epoch-1"}, std::nullopt, "{\"q\":1}"));
  EXPECT_EQ(writer.next_seq(), 2);
  EXPECT_EQ(writer.attempt(), 0);
  ASSERT_OK(writer.StepStarted(Pos("outer", 0, DatagenStepKind::kSequence)));
  ASSERT_OK(writer.StepCompleted(Pos("gen", 3), {{"text", DatagenValue::Str("hi")},
                                                 {"n", DatagenValue::Int(2), /*append=*/true}}));
  ASSERT_OK(writer.ItemFailed(Pos("judge", 0), "Timeout", "dump"));
  ASSERT_OK(writer.ItemTerminal(DatagenItemStatus::kCompleted));
  EXPECT_INVALID(writer.ItemTerminal(DatagenItemStatus::kRunning), "completed or filtered");
  EXPECT_EQ(writer.next_seq(), 8);

  ASSERT_OK_AND_ASSIGN(auto events, datagen_->EventsForItem("root-1"));
  ASSERT_EQ(events.size(), 7u);
  const std::string created = "root-1\0created"s;
  const std::string started =
      "root-1\0"s
      "0\0"s
      "outer\0"s
      "0\0"s
      "0";
  const std::string completed =
      "root-1\0"s
      "0\0"s
      "gen\0"s
      "3\0"s
      "1";
  const std::string failed =
      "root-1\0"s
      "0\0"s
      "judge\0"s
      "0\0"s
      "2";
  const std::string terminal =
      "root-1\0terminal\0"s
      "7";
  struct Want {
    DatagenEventType type;
    std::string checkpoint;
    uint64_t ordinal;
  };
  std::vector<Want> want = {{DatagenEventType::kItemCreated, created, 0},
                            {DatagenEventType::kStepStarted, started, 0},
                            {DatagenEventType::kFieldSet, completed, 1},
                            {DatagenEventType::kFieldAppend, completed, 2},
                            {DatagenEventType::kStepCompleted, completed, 0},
                            {DatagenEventType::kFailed, failed, 0},
                            {DatagenEventType::kTerminal, terminal, 0}};
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(events[i].item_seq, static_cast<int64_t>(i + 1));
    EXPECT_EQ(events[i].event_type, want[i].type);
    EXPECT_EQ(events[i].checkpoint_id, want[i].checkpoint);
    EXPECT_EQ(events[i].event_id, DatagenEventId("root-1", want[i].checkpoint, want[i].ordinal));
    EXPECT_EQ(events[i].run_id, "run-1");
    EXPECT_EQ(events[i].root_item_id, "root-1");
  }
  // The independently computed id of the ITEM_CREATED event.
  EXPECT_EQ(events[0].event_id, "439d4ddf-fa7c-5f66-a40f-aa361a4c8ca1");
  EXPECT_EQ(events[0].query_tags_json, "{\"q\":1}");
  EXPECT_EQ(events[0].status, DatagenItemStatus::kRunning);
  EXPECT_EQ(events[5].status, DatagenItemStatus::kFailed);
  EXPECT_EQ(events[5].error_dump, "dump");
  EXPECT_EQ(events[2].field_type, "str");

  // A child's parent and root come from its path.
  ASSERT_OK_AND_ASSIGN(DatagenItemId child, item.Child("split", 0));
  ASSERT_OK(datagen_->OpenStream(child, {"run-1", "epoch-1"}).status());
  ASSERT_OK_AND_ASSIGN(auto child_events, datagen_->EventsForItem(child.str()));
  EXPECT_EQ(child_events.at(0).parent_item_id, "root-1");
  EXPECT_EQ(child_events.at(0).root_item_id, "root-1");
  EXPECT_INVALID(datagen_->OpenStream(child, {"", "epoch-1"}).status(), "run_id must not be empty");
}

TEST_F(DatagenStoreTest, RetriedCheckpointsCollapse) {
  ASSERT_OK_AND_ASSIGN(DatagenItemId item, DatagenItemId::FromSourceKey("a"));
  ASSERT_OK_AND_ASSIGN(DatagenStreamWriter writer, datagen_->OpenStream(item, {"run", "e"}));
  // A retry whose first try was stored (its acknowledgement lost): the copy is the writer
  // as it was before the first try.
  DatagenStreamWriter before = writer;
  const std::vector<DatagenFieldWrite> fields = {{"xs", DatagenValue::Int(1), true}};
  ASSERT_OK(before.StepCompleted(Pos("gen"), fields));
  ASSERT_OK(writer.StepCompleted(Pos("gen"), fields));
  ASSERT_OK(datagen_->OpenStream(item, {"run", "e"}).status());  // a re-opened stream
  EXPECT_EQ(EventCount(), 3u);
  ASSERT_OK_AND_ASSIGN(auto folded, datagen_->FoldItem("a"));
  EXPECT_EQ(folded->fields.at("xs").values.size(), 1u);
  EXPECT_EQ(folded->last_item_seq, 3);
  // A failed call leaves the writer as it was, so its retry writes the same ids.
  const int64_t seq = writer.next_seq();
  EXPECT_FALSE(writer.StepCompleted(Pos("gen"), {{"bad", DatagenValue::Json("{")}}).ok());
  EXPECT_EQ(writer.next_seq(), seq);
  EXPECT_EQ(writer.next_ordinal(), 1u);
  EXPECT_EQ(EventCount(), 3u);
}

TEST_F(DatagenStoreTest, ResumeContinuesAfterTheLastEvent) {
  ASSERT_OK_AND_ASSIGN(DatagenItemId item, DatagenItemId::FromSourceKey("a"));
  ASSERT_OK_AND_ASSIGN(auto none, datagen_->ResumeStream(item, {"run", "e2"}));
  EXPECT_FALSE(none.has_value());
  ASSERT_OK_AND_ASSIGN(DatagenStreamWriter writer, datagen_->OpenStream(item, {"run", "e1"}));
  ASSERT_OK(writer.StepCompleted(Pos("gen"), {{"x", DatagenValue::Int(1)}}));
  ASSERT_OK_AND_ASSIGN(auto resumed, datagen_->ResumeStream(item, {"run", "e2"}));
  ASSERT_TRUE(resumed.has_value());
  EXPECT_EQ(resumed->next_seq(), 4);
  EXPECT_EQ(resumed->attempt(), 1);
  EXPECT_EQ(resumed->next_ordinal(), 0u);
  // The same step again under the new attempt: new ids, no conflict.
  ASSERT_OK(resumed->StepCompleted(Pos("gen"), {{"x", DatagenValue::Int(2)}}));
  ASSERT_OK_AND_ASSIGN(auto folded, datagen_->FoldItem("a"));
  EXPECT_EQ(folded->last_attempt, 1);
  EXPECT_EQ(folded->last_item_seq, 5);
  EXPECT_EQ(folded->fields.at("x").values[0], DatagenValue::Int(2));
  EXPECT_EQ(folded->trajectory.size(), 2u);
  ASSERT_OK_AND_ASSIGN(auto events, datagen_->EventsForItem("a"));
  EXPECT_EQ(events.back().checkpoint_id,
            "a\0"s
            "1\0"s
            "gen\0"s
            "0\0"s
            "0");
  EXPECT_EQ(events.back().writer_epoch, "e2");
}

// Every column but event_ts, which each build stamps afresh.
DatagenEvent WithoutTime(DatagenEvent e) {
  e.event_ts_micros = 0;
  return e;
}

TEST_F(DatagenStoreTest, BuiltEventsAreTheOnesTheWritingCallsAppend) {
  ASSERT_OK_AND_ASSIGN(DatagenItemId item, DatagenItemId::FromSourceKey("a"));
  ASSERT_OK_AND_ASSIGN(DatagenStreamWriter writer, datagen_->OpenStream(item, {"run", "e"}));
  DatagenStreamWriter builder = writer;
  const DatagenStepPosition outer = Pos("outer", 0, DatagenStepKind::kSequence);
  const std::vector<DatagenFieldWrite> fields = {{"text", DatagenValue::Str("hi")},
                                                 {"img", DatagenValue::Blob("png")},
                                                 {"n", DatagenValue::Int(2), /*append=*/true}};
  ASSERT_OK(writer.StepStarted(outer));
  ASSERT_OK(writer.StepCompleted(Pos("gen", 3), fields));
  ASSERT_OK(writer.ItemFailed(Pos("judge"), "Timeout", "dump", "tb"));
  ASSERT_OK(writer.ItemTerminal(DatagenItemStatus::kFiltered));

  std::vector<DatagenEvent> built;
  ASSERT_OK_AND_ASSIGN(DatagenEvent started, builder.BuildStepStarted(outer));
  built.push_back(started);
  ASSERT_OK_AND_ASSIGN(std::vector<DatagenEvent> checkpoint,
                       builder.BuildStepCompleted(Pos("gen", 3), fields));
  built.insert(built.end(), checkpoint.begin(), checkpoint.end());
  ASSERT_OK_AND_ASSIGN(DatagenEvent failed,
                       builder.BuildItemFailed(Pos("judge"), "Timeout", "dump", "tb"));
  built.push_back(failed);
  ASSERT_OK_AND_ASSIGN(DatagenEvent terminal,
                       builder.BuildItemTerminal(DatagenItemStatus::kFiltered));
  built.push_back(terminal);
  EXPECT_EQ(builder.next_seq(), writer.next_seq());
  EXPECT_EQ(builder.next_ordinal(), writer.next_ordinal());

  ASSERT_OK_AND_ASSIGN(auto stored, datagen_->EventsForItem("a"));
  ASSERT_EQ(stored.size(), built.size() + 1);  // + ITEM_CREATED
  for (size_t i = 0; i < built.size(); ++i) {
    SCOPED_TRACE(i);
    DatagenEvent want = built[i];
    if (want.value && want.value->kind() == DatagenValue::Kind::kBlob) {
      want.value->mutable_blob().bytes.reset();  // reads leave blob bytes out
    }
    EXPECT_EQ(WithoutTime(stored[i + 1]), WithoutTime(want));
  }
  // Appending what was built, as a retry would, adds nothing.
  const size_t before = EventCount();
  ASSERT_OK(datagen_->Append({started}).status());
  ASSERT_OK(datagen_->AppendCheckpoint(checkpoint).status());
  ASSERT_OK(datagen_->Append({failed, terminal}).status());
  EXPECT_EQ(EventCount(), before);
  ASSERT_OK_AND_ASSIGN(auto folded, datagen_->FoldItem("a", DatagenFoldMode::kEager));
  EXPECT_EQ(folded->status, DatagenItemStatus::kFiltered);
  EXPECT_EQ(folded->fields.at("img").values[0].blob().bytes, "png");
}

TEST_F(DatagenStoreTest, ABuildThatFailsLeavesTheWriterUnchanged) {
  ASSERT_OK_AND_ASSIGN(DatagenItemId item, DatagenItemId::FromSourceKey("a"));
  ASSERT_OK_AND_ASSIGN(DatagenStreamWriter writer, datagen_->OpenStream(item, {"run", "e"}));
  const size_t events = EventCount();
  EXPECT_INVALID(writer.BuildStepCompleted(Pos("gen"), {{"bad", DatagenValue::Json("{")}}).status(),
                 "invalid value_json");
  EXPECT_INVALID(writer.BuildItemTerminal(DatagenItemStatus::kFailed).status(),
                 "completed or filtered, got failed");
  DatagenBlob no_bytes;
  no_bytes.size = 3;
  EXPECT_INVALID(
      writer.BuildStepCompleted(Pos("gen"), {{"img", DatagenValue::Blob(no_bytes)}}).status(),
      "has no bytes on the write path");
  EXPECT_EQ(writer.next_seq(), 2);
  EXPECT_EQ(writer.next_ordinal(), 0u);
  EXPECT_EQ(EventCount(), events);  // building never writes
  // The next good build takes the place the failed ones did not use.
  ASSERT_OK_AND_ASSIGN(auto checkpoint, writer.BuildStepCompleted(Pos("gen"), {}));
  EXPECT_EQ(checkpoint.at(0).item_seq, 2);
  EXPECT_EQ(checkpoint.at(0).checkpoint_id,
            "a\0"s
            "0\0"s
            "gen\0"s
            "0\0"s
            "0");
}

TEST_F(DatagenStoreTest, AWriterBuildsAfterItsStoreIsGone) {
  ASSERT_OK_AND_ASSIGN(DatagenItemId item, DatagenItemId::FromSourceKey("a"));
  ASSERT_OK_AND_ASSIGN(DatagenStreamWriter writer, datagen_->OpenStream(item, {"run", "e"}));
  datagen_.reset();  // builds touch only the clock (ASan would catch a use of the store)
  ASSERT_OK_AND_ASSIGN(auto checkpoint,
                       writer.BuildStepCompleted(Pos("gen"), {{"x", DatagenValue::Int(7)}}));
  ASSERT_OK_AND_ASSIGN(DatagenEvent terminal,
                       writer.BuildItemTerminal(DatagenItemStatus::kCompleted));
  ASSERT_OK_AND_ASSIGN(datagen_, OpenDatagen());
  ASSERT_OK(datagen_->AppendCheckpoint(checkpoint).status());
  ASSERT_OK(datagen_->Append({terminal}).status());
  ASSERT_OK_AND_ASSIGN(auto folded, datagen_->FoldItem("a"));
  EXPECT_EQ(folded->status, DatagenItemStatus::kCompleted);
  EXPECT_EQ(folded->fields.at("x").values[0], DatagenValue::Int(7));
  EXPECT_EQ(folded->last_item_seq, 4);
}

TEST_F(DatagenStoreTest, MaintenanceCleansADatagenStoreAndDeleteDataEndsIt) {
  MaintenanceOptions maintenance_options;
  maintenance_options.flush_interval_seconds = 0;  // passes run by hand below
  maintenance_options.cleanup_interval_seconds = 0;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Maintenance> maintenance,
                       Maintenance::Create(maintenance_options));
  datagen_.reset();
  DatagenStoreOptions options;
  options.base.maintenance = maintenance;
  ASSERT_OK_AND_ASSIGN(datagen_, OpenDatagen(options));
  ASSERT_OK(datagen_->Append({Event(DatagenEventType::kItemCreated, "a", 1)}).status());
  ASSERT_OK(datagen_->Append({Event(DatagenEventType::kItemCreated, "b", 1)}).status());
  EXPECT_EQ(datagen_->PendingGenerations().ValueOr(-1), 2);
  MaintenancePassReport cleaned = maintenance->RunCleanupPass();
  EXPECT_EQ(cleaned.stores, 1);
  EXPECT_EQ(cleaned.generations_reclaimed, 2);
  EXPECT_EQ(datagen_->base().Count(ListSource::kFragments).ValueOr(-1), 2);
  ASSERT_OK_AND_ASSIGN(CompactionStats stats, datagen_->GetCompactionStats());
  EXPECT_EQ(stats.total_fragments, 1);

  ASSERT_OK(datagen_->DeleteData());
  EXPECT_FALSE(datagen_->Append({Event(DatagenEventType::kItemCreated, "c", 1)}).ok());
  EXPECT_FALSE(datagen_->FoldItem("a").ok());
  EXPECT_EQ(maintenance->RunCleanupPass().stores, 0);  // a deleted store leaves the registry
  EXPECT_TRUE(DatagenStore::Open(store_, "datagen/", {}, /*create_if_missing=*/false)
                  .status()
                  .IsNotFound());
}

}  // namespace
}  // namespace strata::store
