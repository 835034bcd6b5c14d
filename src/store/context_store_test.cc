// ContextStore (include/strata/context_store.h): the reference's context-store behaviours
// (shared/reference/lance-context.md §3.2, §6.3, §6.6) — visible on return by default,
// deferred seal invisible until flush, generations merge, upsert insert / replace,
// multiple-visible error, upsert_many all-or-nothing, update hides the old row, tombstones
// free id and external id, lifecycle visibility, option mismatches, concurrent adds.
#include "strata/context_store.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "store/store_test_util.h"
#include "util/clock.h"

namespace strata::store {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kT0 = 1'700'000'000'000'000;

class ContextStoreTest : public testing::StoreFixture {
 protected:
  Result<std::unique_ptr<ContextStore>> Open(ContextStoreOptions options = {},
                                             std::string shard = "solo") {
    if (!options.embedding_dim) options.embedding_dim = 3;
    options.base.shard_id = std::move(shard);
    options.base.clock = &clock_;
    options.base.generation_delete_delay_seconds = 0.1;
    return ContextStore::Open(store_, prefix_, std::move(options));
  }

  // A record at kT0 + `at` seconds.
  static ContextRecord Rec(std::string id, int at = 0, std::optional<std::string> ext = {}) {
    ContextRecord r;
    r.id = std::move(id);
    r.external_id = std::move(ext);
    r.run_id = "run";
    r.created_at_micros = kT0 + int64_t{at} * 1'000'000;
    r.text_payload = "text of " + r.id;
    r.embedding = std::vector<float>{1, 0, static_cast<float>(at)};
    return r;
  }

  static std::vector<std::string> Ids(const std::vector<ContextRecord>& records) {
    std::vector<std::string> out;
    for (const ContextRecord& r : records) out.push_back(r.id);
    return out;
  }

  ManualClock clock_{kT0 + 100'000'000};
};

TEST_F(ContextStoreTest, AnAddIsVisibleToEveryReaderOnReturnByDefault) {
  ASSERT_OK_AND_ASSIGN(auto writer, Open());
  ASSERT_OK_AND_ASSIGN(auto reader, Open({}, "reader"));
  ASSERT_OK(writer->Add({Rec("a"), Rec("b", 1)}).status());
  ASSERT_OK_AND_ASSIGN(auto listed, reader->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"a", "b"}));
  ASSERT_OK_AND_ASSIGN(auto got, reader->GetById("b"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, Rec("b", 1));
}

TEST_F(ContextStoreTest, ADeferredSealIsInvisibleUntilFlush) {
  ContextStoreOptions deferred;
  deferred.seal_on_add = false;
  ASSERT_OK_AND_ASSIGN(auto writer, Open(deferred));
  ASSERT_OK_AND_ASSIGN(auto reader, Open({}, "reader"));
  ASSERT_OK(writer->Add({Rec("a")}).status());
  ASSERT_OK_AND_ASSIGN(auto before, reader->List());
  EXPECT_TRUE(before.empty());
  ASSERT_OK(writer->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto after, reader->List());
  EXPECT_EQ(Ids(after), (std::vector<std::string>{"a"}));
}

TEST_F(ContextStoreTest, ADeferredSealHandleValidatesAgainstItsOwnUnsealedRows) {
  ContextStoreOptions deferred;
  deferred.seal_on_add = false;
  ASSERT_OK_AND_ASSIGN(auto writer, Open(deferred));
  ASSERT_OK(writer->Add({Rec("a", 0, "doc")}).status());
  EXPECT_EQ(writer->Add({Rec("a")}).status().message(), "id 'a' already exists");
  ASSERT_OK_AND_ASSIGN(UpsertResult up, writer->UpsertByExternalId(Rec("a2", 1, "doc")));
  EXPECT_EQ(up.replaced_id, "a");
  ASSERT_OK(writer->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto reader, Open({}, "reader"));
  ASSERT_OK_AND_ASSIGN(auto got, reader->GetByExternalId("doc"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->id, "a2");
}

TEST_F(ContextStoreTest, AStoreWithoutOptionalGroupsRefusesTheirValuesWithTheirMessages) {
  // A context store created with the lifecycle and external-id groups left out.
  ContextSchemaOptions old;
  old.embedding_dim = 3;
  old.groups.lifecycle = false;
  old.groups.external_id = false;
  ASSERT_OK_AND_ASSIGN(SchemaPtr schema, ContextSchema(old));
  {
    StorageBaseOptions base;
    base.schema = schema;
    base.key_column = "id";
    base.store_kind = std::string(kContextStoreKind);
    base.shard_id = "creator";
    ASSERT_OK_AND_ASSIGN(auto created, StorageBase::Open(store_, prefix_, base));
    ASSERT_OK(created->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK(store->Add({Rec("a"), Rec("b", 1)}).status());
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"a", "b"}));
  ASSERT_OK_AND_ASSIGN(auto got, store->GetById("a"));
  EXPECT_TRUE(got.has_value());
  ContextRecord retired = Rec("c");
  retired.retired_reason = "old";
  EXPECT_EQ(store->Add({retired}).status().message(),
            "lifecycle fields require a context dataset created with lifecycle support");
  EXPECT_EQ(store->UpsertManyByExternalId({Rec("d", 0, "x")}).status().message(),
            "external_id requires a context dataset created with external_id support");
  EXPECT_EQ(store->Add({Rec("d", 0, "x")}).status().message(),
            "external_id requires a context dataset created with external_id support");
  ASSERT_OK_AND_ASSIGN(bool deleted, store->DeleteById("a"));
  EXPECT_TRUE(deleted);
  ASSERT_OK_AND_ASSIGN(listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"b"}));
}

TEST_F(ContextStoreTest, GenerationsMergeIntoTheBaseAndReadsStayTheSame) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  for (int i = 0; i < 5; ++i) ASSERT_OK(store->Add({Rec(fmt::format("r{}", i), i)}).status());
  ASSERT_OK_AND_ASSIGN(auto before, store->List());
  ASSERT_OK_AND_ASSIGN(auto from_base, store->Get("r1"));
  EXPECT_FALSE(from_base.has_value());  // Get reads the base table only
  ASSERT_OK_AND_ASSIGN(MergeReport merged, store->base().Cleanup());
  EXPECT_EQ(merged.rows_merged, 5);
  ASSERT_OK_AND_ASSIGN(auto after, store->List());
  EXPECT_EQ(after, before);
  ASSERT_OK_AND_ASSIGN(from_base, store->Get("r1"));
  ASSERT_TRUE(from_base.has_value());
  EXPECT_EQ(from_base->id, "r1");
  ASSERT_OK(store->base().Compact().status());
  ASSERT_OK_AND_ASSIGN(after, store->List());
  EXPECT_EQ(after, before);
}

TEST_F(ContextStoreTest, AddValidatesWithTheReferenceMessagesAndWritesNothing) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK(store->Add({Rec("a", 0, "ext-a")}).status());
  auto message = [&](std::vector<ContextRecord> records) {
    return std::string(store->Add(std::move(records)).status().message());
  };
  ContextRecord tomb = Rec("t");
  tomb.content_type = std::string(kContentTypeTombstone);
  EXPECT_EQ(message({tomb}),
            "content_type 'application/vnd.strata.tombstone' is reserved for internal tombstones");
  EXPECT_EQ(message({Rec("x"), Rec("x")}), "duplicate id 'x' in batch");
  EXPECT_EQ(message({Rec("x", 0, "e"), Rec("y", 0, "e")}), "duplicate external_id 'e' in batch");
  EXPECT_EQ(message({Rec("z"), Rec("a")}), "id 'a' already exists");
  EXPECT_EQ(message({Rec("z", 0, "ext-a")}), "external_id 'ext-a' already exists");
  ContextRecord bad_json = Rec("z");
  bad_json.metadata = "{not json";
  EXPECT_EQ(message({bad_json}), "invalid metadata JSON for record z: not valid JSON");
  ContextRecord short_embedding = Rec("z");
  short_embedding.embedding = std::vector<float>{1};
  EXPECT_EQ(message({short_embedding}), "embedding length 1 does not match expected dimension 3");
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"a"}));
}

TEST_F(ContextStoreTest, AnAddFillsRunIdAndCreatedAt) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ContextRecord bare;
  bare.id = "bare";
  ContextRecord other;
  other.id = "other";
  ASSERT_OK(store->Add({bare, other}).status());
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_FALSE(listed[0].run_id.empty());
  EXPECT_EQ(listed[0].run_id, listed[1].run_id);  // one run per call
  EXPECT_EQ(listed[0].created_at_micros, clock_.NowMicros());
}

TEST_F(ContextStoreTest, UpsertInsertsThenSupersedesAndHidesTheOldRecord) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK_AND_ASSIGN(UpsertResult first, store->UpsertByExternalId(Rec("v1", 0, "doc")));
  EXPECT_TRUE(first.inserted);
  EXPECT_FALSE(first.replaced_id.has_value());
  ASSERT_OK_AND_ASSIGN(UpsertResult second, store->UpsertByExternalId(Rec("v2", 1, "doc")));
  EXPECT_FALSE(second.inserted);
  EXPECT_EQ(second.replaced_id, "v1");
  EXPECT_EQ(second.record.supersedes_id, "v1");
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"v2"}));
  ASSERT_OK_AND_ASSIGN(auto by_ext, store->GetByExternalId("doc"));
  ASSERT_TRUE(by_ext.has_value());
  EXPECT_EQ(by_ext->id, "v2");
  ASSERT_OK_AND_ASSIGN(auto old, store->GetById("v1"));
  EXPECT_FALSE(old.has_value());
  // include_retired shows the superseded row too.
  ASSERT_OK_AND_ASSIGN(auto all,
                       store->ListFiltered({}, std::nullopt, 0, {.include_retired = true}));
  EXPECT_EQ(Ids(all), (std::vector<std::string>{"v1", "v2"}));
  // The reference's messages.
  EXPECT_EQ(store->UpsertByExternalId(Rec("v3")).status().message(),
            "upsert_by_external_id requires external_id");
  EXPECT_EQ(store->UpsertByExternalId(Rec("v3", 0, "")).status().message(),
            "upsert_by_external_id requires a non-empty external_id");
  EXPECT_EQ(store->UpsertByExternalId(Rec("v2", 0, "other")).status().message(),
            "id 'v2' already exists");
}

TEST_F(ContextStoreTest, MoreThanOneVisibleRecordForAnExternalIdIsAnError) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  // Two rows with one external id, written past validation (as two racing writers could).
  ASSERT_OK_AND_ASSIGN(
      RecordBatch rows,
      EncodeContextRecords({Rec("a", 0, "dup"), Rec("b", 1, "dup")}, store->base().schema()));
  ASSERT_OK(store->base().Put({rows}));
  EXPECT_EQ(store->GetByExternalId("dup").status().message(),
            "external_id 'dup' matches multiple visible records");
  EXPECT_EQ(store->UpsertByExternalId(Rec("c", 2, "dup")).status().message(),
            "external_id 'dup' matches multiple visible records");
  EXPECT_EQ(store->UpdateByExternalId("dup", {.bot_id = "x"}).status().message(),
            "external_id 'dup' matches multiple visible records");
  EXPECT_EQ(store->DeleteByExternalId("dup").status().message(),
            "external_id 'dup' matches multiple visible records");
}

TEST_F(ContextStoreTest, UpsertManyIsAllOrNothingWithResultsInInputOrder) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK(store->Add({Rec("old", 0, "e1")}).status());
  ContextRecord retired = Rec("gone", 0, "e3");
  retired.lifecycle_status = "retired";
  ASSERT_OK(store->Add({retired}).status());
  // e3's only row is retired: it still reserves the external id; nothing is written.
  Result<std::vector<UpsertResult>> refused =
      store->UpsertManyByExternalId({Rec("n1", 1, "e1"), Rec("n2", 1, "e2"), Rec("n3", 1, "e3")});
  EXPECT_EQ(refused.status().message(), "external_id 'e3' already exists");
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"old"}));
  EXPECT_EQ(store->UpsertManyByExternalId({Rec("n1", 1, "e1"), Rec("n2", 1)}).status().message(),
            "upsert_many_by_external_id requires external_id on every record");
  EXPECT_EQ(
      store->UpsertManyByExternalId({Rec("n1", 1, "e1"), Rec("n2", 1, "e1")}).status().message(),
      "duplicate external_id 'e1' in batch");

  ASSERT_OK_AND_ASSIGN(std::vector<UpsertResult> done,
                       store->UpsertManyByExternalId({Rec("n1", 1, "e1"), Rec("n2", 2, "e2")}));
  ASSERT_EQ(done.size(), 2u);
  EXPECT_FALSE(done[0].inserted);
  EXPECT_EQ(done[0].replaced_id, "old");
  EXPECT_TRUE(done[1].inserted);
  EXPECT_EQ(done[0].version, done[1].version);
  ASSERT_OK_AND_ASSIGN(listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"n1", "n2"}));
}

TEST_F(ContextStoreTest, UpdateWritesANewRecordThatHidesTheOldOne) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK(store->Add({Rec("a", 0, "ext")}).status());
  EXPECT_EQ(store->UpdateById("", {.bot_id = "b"}).status().message(),
            "update_by_id requires a non-empty id");
  EXPECT_EQ(store->UpdateById("a", {}).status().message(),
            "update requires at least one patch field");
  ASSERT_OK_AND_ASSIGN(auto none, store->UpdateById("missing", {.bot_id = "b"}));
  EXPECT_FALSE(none.has_value());

  ASSERT_OK_AND_ASSIGN(auto updated, store->UpdateById("a", {.bot_id = "bot-2",
                                                             .lifecycle_status = "contradicted"}));
  ASSERT_TRUE(updated.has_value());
  EXPECT_EQ(updated->replaced_id, "a");
  EXPECT_NE(updated->record.id, "a");
  EXPECT_NE(updated->record.run_id, "run");
  EXPECT_EQ(updated->record.supersedes_id, "a");
  EXPECT_EQ(updated->record.bot_id, "bot-2");
  EXPECT_EQ(updated->record.text_payload, "text of a");  // content is carried over
  EXPECT_EQ(updated->record.external_id, "ext");
  EXPECT_EQ(updated->record.created_at_micros, clock_.NowMicros());
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{updated->record.id}));  // contradicted shows
  ASSERT_OK_AND_ASSIGN(auto by_ext, store->GetByExternalId("ext"));
  ASSERT_TRUE(by_ext.has_value());
  EXPECT_EQ(by_ext->id, updated->record.id);
  ASSERT_OK_AND_ASSIGN(auto again, store->UpdateByExternalId("ext", {.metadata = "{}"}));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->replaced_id, updated->record.id);
}

TEST_F(ContextStoreTest, ADeleteWritesATombstoneThatFreesTheIdAndExternalId) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK(store->Add({Rec("a", 0, "ext"), Rec("b", 1)}).status());
  ASSERT_OK_AND_ASSIGN(bool deleted, store->DeleteById("a"));
  EXPECT_TRUE(deleted);
  ASSERT_OK_AND_ASSIGN(deleted, store->DeleteById("a"));
  EXPECT_FALSE(deleted);  // no visible record left
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"b"}));
  ASSERT_OK_AND_ASSIGN(auto gone, store->GetByExternalId("ext"));
  EXPECT_FALSE(gone.has_value());
  // The id and the external id are free again.
  ASSERT_OK(store->Add({Rec("a", 2, "ext")}).status());
  ASSERT_OK_AND_ASSIGN(auto back, store->GetByExternalId("ext"));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->created_at_micros, kT0 + 2'000'000);
  ASSERT_OK_AND_ASSIGN(deleted, store->DeleteByExternalId("ext"));
  EXPECT_TRUE(deleted);
  ASSERT_OK_AND_ASSIGN(listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"b"}));
  // Tombstones survive a merge and keep hiding.
  ASSERT_OK(store->base().Cleanup().status());
  ASSERT_OK_AND_ASSIGN(listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"b"}));
}

TEST_F(ContextStoreTest, LifecycleDecidesVisibilityAndContradictedStaysVisible) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  const int64_t now = clock_.NowMicros();
  ContextRecord expired = Rec("expired", 1);
  expired.expires_at_micros = now;
  ContextRecord later = Rec("later", 2);
  later.expires_at_micros = now + 1;
  ContextRecord retired = Rec("retired", 3);
  retired.lifecycle_status = "retired";
  ContextRecord contradicted = Rec("contradicted", 4);
  contradicted.lifecycle_status = std::string(kLifecycleContradicted);
  ContextRecord retired_at = Rec("retired_at", 5);
  retired_at.retired_at_micros = now;
  ContextRecord by = Rec("by", 6);
  by.superseded_by_id = "x";
  ASSERT_OK(store->Add({expired, later, retired, contradicted, retired_at, by}).status());
  ASSERT_OK_AND_ASSIGN(auto plain, store->List());
  EXPECT_EQ(Ids(plain), (std::vector<std::string>{"later", "contradicted"}));
  ASSERT_OK_AND_ASSIGN(auto with_expired,
                       store->ListFiltered({}, std::nullopt, 0, {.include_expired = true}));
  EXPECT_EQ(Ids(with_expired), (std::vector<std::string>{"expired", "later", "contradicted"}));
  ASSERT_OK_AND_ASSIGN(auto with_retired,
                       store->ListFiltered({}, std::nullopt, 0, {.include_retired = true}));
  EXPECT_EQ(Ids(with_retired),
            (std::vector<std::string>{"later", "retired", "contradicted", "retired_at", "by"}));
  // Time moves on: `later` expires.
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_OK_AND_ASSIGN(plain, store->List());
  EXPECT_EQ(Ids(plain), (std::vector<std::string>{"contradicted"}));
  ASSERT_OK_AND_ASSIGN(auto at_reference,
                       store->ListFiltered({}, std::nullopt, 0, {.reference_time_micros = now}));
  EXPECT_EQ(Ids(at_reference), (std::vector<std::string>{"later", "contradicted"}));
}

TEST_F(ContextStoreTest, ListFiltersOrdersByCreatedAtThenIdAndPages) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ContextRecord a = Rec("c", 0);
  a.bot_id = "bot";
  a.metadata = R"({"topic":"db"})";
  ContextRecord b = Rec("a", 1);
  b.bot_id = "bot";
  ContextRecord c = Rec("b", 1);
  c.bot_id = "bot";
  c.metadata = R"({"topic":"db"})";
  ContextRecord d = Rec("d", 2);
  ASSERT_OK(store->Add({d, c, b, a}).status());
  ASSERT_OK_AND_ASSIGN(auto all, store->List());
  EXPECT_EQ(Ids(all), (std::vector<std::string>{"c", "a", "b", "d"}));
  ASSERT_OK_AND_ASSIGN(auto page, store->List(2, 1));
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"a", "b"}));
  ASSERT_OK_AND_ASSIGN(RecordFilters bot, RecordFilters::FromJson(R"({"bot_id":"bot"})"));
  ASSERT_OK_AND_ASSIGN(auto bots, store->ListFiltered(bot, std::nullopt, 0));
  EXPECT_EQ(Ids(bots), (std::vector<std::string>{"c", "a", "b"}));
  ASSERT_OK_AND_ASSIGN(RecordFilters topic,
                       RecordFilters::FromJson(R"({"bot_id":"bot","topic":"db"})"));
  ASSERT_OK_AND_ASSIGN(auto topics, store->ListFiltered(topic, 1, 1));
  EXPECT_EQ(Ids(topics), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(store->List(-1).status().IsInvalidArgument());
}

TEST_F(ContextStoreTest, RelatedRecordsAndBlobs) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ContextRecord a = Rec("a", 0);
  a.relationships = std::vector<ContextRelationship>{{"t", "cites", 1.0F}};
  a.binary_payload = std::string("\x01\x02\x03", 3);
  ContextRecord b = Rec("b", 1);
  b.relationships = std::vector<ContextRelationship>{{"t", "follows", std::nullopt}};
  ASSERT_OK(store->Add({a, b, Rec("c", 2)}).status());
  ASSERT_OK_AND_ASSIGN(auto related, store->ListRelated("t"));
  EXPECT_EQ(Ids(related), (std::vector<std::string>{"a", "b"}));
  ASSERT_OK_AND_ASSIGN(related, store->ListRelated("t", "follows"));
  EXPECT_EQ(Ids(related), (std::vector<std::string>{"b"}));
  ASSERT_OK_AND_ASSIGN(related, store->ListRelated("t", std::nullopt, 1));
  EXPECT_EQ(Ids(related), (std::vector<std::string>{"a"}));
  ASSERT_OK_AND_ASSIGN(related, store->ListRelated("t", std::nullopt, 0));
  EXPECT_TRUE(related.empty());
  ASSERT_OK_AND_ASSIGN(auto blob, store->GetBlob("a"));
  EXPECT_EQ(blob, std::string("\x01\x02\x03", 3));
  ASSERT_OK_AND_ASSIGN(blob, store->GetBlob("c"));
  EXPECT_FALSE(blob.has_value());
  ASSERT_OK(store->DeleteById("a").status());
  ASSERT_OK_AND_ASSIGN(blob, store->GetBlob("a"));
  EXPECT_FALSE(blob.has_value());
}

TEST_F(ContextStoreTest, BlobColumnsAreLeftOutOfListsUnlessAskedFor) {
  ContextStoreOptions options;
  options.blob_columns = {"text_payload", "binary_payload"};
  ASSERT_OK_AND_ASSIGN(auto store, Open(options));
  ContextRecord a = Rec("a");
  a.binary_payload = "bytes";
  ASSERT_OK(store->Add({a}).status());
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_FALSE(listed[0].text_payload.has_value());
  EXPECT_FALSE(listed[0].binary_payload.has_value());
  ASSERT_OK_AND_ASSIGN(auto full, store->ListFiltered({}, std::nullopt, 0, {}, ReadProjection{}));
  EXPECT_EQ(full[0], a);
  ASSERT_OK_AND_ASSIGN(
      auto lean,
      store->ListFiltered({}, std::nullopt, 0, {},
                          ReadProjection{.text = true, .binary = false, .embedding = false}));
  EXPECT_EQ(lean[0].text_payload, "text of a");
  EXPECT_FALSE(lean[0].embedding.has_value());
}

TEST_F(ContextStoreTest, ReopeningChecksRequestedOptionsAgainstThePersistedOnes) {
  {
    ContextStoreOptions options;
    options.blob_columns = {"binary_payload"};
    options.distance_metric = DistanceMetric::kCosine;
    ASSERT_OK_AND_ASSIGN(auto store, Open(options));
    ASSERT_OK(store->Close());
  }
  // Nothing requested: the persisted options.
  ContextStoreOptions nothing;
  nothing.base.shard_id = "solo";
  ASSERT_OK_AND_ASSIGN(auto plain, ContextStore::Open(store_, prefix_, nothing));
  EXPECT_EQ(plain->distance_metric(), DistanceMetric::kCosine);
  EXPECT_EQ(plain->blob_columns(), (std::set<std::string>{"binary_payload"}));
  EXPECT_EQ(plain->embedding_dim(), 3);
  ASSERT_OK(plain->Close());
  ContextStoreOptions dim;
  dim.embedding_dim = 4;
  EXPECT_EQ(Open(dim).status().message(),
            "existing context embedding dimension 3 does not match requested dimension 4");
  ContextStoreOptions metric;
  metric.distance_metric = DistanceMetric::kDot;
  EXPECT_EQ(Open(metric).status().message(),
            "existing context distance metric 'cosine' does not match requested metric 'dot'");
  ContextStoreOptions blobs;
  blobs.blob_columns = {"text_payload"};
  EXPECT_EQ(Open(blobs).status().message(),
            "existing context blob columns [binary_payload] do not match requested columns "
            "[text_payload]");
  ContextStoreOptions bad;
  bad.embedding_dim = 0;
  EXPECT_THAT(ContextStore::Open(store_, "other/", bad).status().message(),
              HasSubstr("embedding_dim must be positive, got 0"));
}

TEST_F(ContextStoreTest, AnotherKindOfStoreIsRefused) {
  ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout());
  ASSERT_OK(rollouts->Close());
  EXPECT_THAT(Open().status().message(), HasSubstr("is a rollout store, not a context store"));
}

TEST_F(ContextStoreTest, ConcurrentAddsOnOneHandleLoseNothing) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  constexpr int kThreads = 4;
  constexpr int kEach = 20;
  std::vector<std::thread> threads;
  std::vector<Status> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach && errors[t].ok(); ++i) {
        errors[t] = store->Add({Rec(fmt::format("t{}-{:02}", t, i), i)}).status();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& e : errors) ASSERT_OK(e);
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  EXPECT_EQ(listed.size(), static_cast<size_t>(kThreads * kEach));
  // And two threads adding the same id: exactly one wins.
  Status first;
  Status second;
  std::thread a([&] { first = store->Add({Rec("same")}).status(); });
  std::thread b([&] { second = store->Add({Rec("same")}).status(); });
  a.join();
  b.join();
  EXPECT_NE(first.ok(), second.ok()) << first << " / " << second;
}

// --- The visible-state model ------------------------------------------------------------

// An independent model of what a context store shows: the newest row of every id (as the
// LSM keeps it), and visibility decided from those rows by brute force, the reference's four
// rules read literally.
class ContextModel {
 public:
  std::map<std::string, ContextRecord> rows;  // newest row per id, tombstones included

  bool Superseded(const std::string& id) const {
    for (const auto& [other_id, row] : rows) {
      if (row.supersedes_id == id && other_id != id) return true;
    }
    return false;
  }
  bool Visible(const ContextRecord& r, int64_t now, bool expired = false,
               bool retired = false) const {
    if (r.content_type == kContentTypeTombstone) return false;
    if (!expired && r.expires_at_micros && *r.expires_at_micros <= now) return false;
    if (retired) return true;
    const bool plain = r.lifecycle_status == "active" || r.lifecycle_status == "contradicted";
    if (!plain || r.retired_at_micros || r.superseded_by_id) return false;
    return !Superseded(r.id);
  }
  std::vector<std::string> List(int64_t now, bool expired = false, bool retired = false) const {
    std::vector<const ContextRecord*> out;
    for (const auto& [id, row] : rows) {
      if (Visible(row, now, expired, retired)) out.push_back(&row);
    }
    std::sort(out.begin(), out.end(), [](const ContextRecord* a, const ContextRecord* b) {
      return std::tie(a->created_at_micros, a->id) < std::tie(b->created_at_micros, b->id);
    });
    std::vector<std::string> ids;
    for (const ContextRecord* r : out) ids.push_back(r->id);
    return ids;
  }
  std::vector<std::string> WithExternalId(const std::string& ext, int64_t now) const {
    std::vector<std::string> out;
    for (const std::string& id : List(now)) {
      if (rows.at(id).external_id == ext) out.push_back(id);
    }
    return out;
  }
  // Some non-tombstone row holds `ext` (it is not free for a new record).
  bool Holds(const std::string& ext) const {
    for (const auto& [id, row] : rows) {
      if (row.content_type != kContentTypeTombstone && row.external_id == ext) return true;
    }
    return false;
  }
  bool HoldsId(const std::string& id) const {
    auto it = rows.find(id);
    return it != rows.end() && it->second.content_type != kContentTypeTombstone;
  }
};

TEST_F(ContextStoreTest, ModelEveryReadAgreesWithAnIndependentModelAfterEveryStep) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ContextModel model;
  std::mt19937 rng(42);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::vector<std::string> ext_pool = {"e0", "e1", "e2", "e3", "e4"};
  int next_id = 0;
  auto fresh = [&](std::optional<std::string> ext) {
    ContextRecord r = Rec(fmt::format("k{:03}", next_id++), pick(50), std::move(ext));
    r.created_at_micros = clock_.NowMicros() - pick(3) * 1'000'000;
    if (pick(4) == 0) r.lifecycle_status = pick(2) == 0 ? "contradicted" : "retired";
    if (pick(5) == 0) r.expires_at_micros = clock_.NowMicros() + pick(4) * 1'000'000;
    return r;
  };
  auto any_id = [&]() -> std::string {
    if (model.rows.empty()) return "none";
    auto it = model.rows.begin();
    std::advance(it, pick(static_cast<int>(model.rows.size())));
    return it->first;
  };
  std::map<std::string, ContextModel> snapshots;
  int replaced = 0;
  int updated_count = 0;
  int deleted_count = 0;
  int refused = 0;
  constexpr int kSteps = 90;
  for (int step = 0; step < kSteps; ++step) {
    SCOPED_TRACE(fmt::format("step {}", step));
    const int64_t now = clock_.NowMicros();
    const int op = pick(10);
    if (op <= 2) {  // add
      ContextRecord r =
          fresh(pick(2) == 0 ? std::optional<std::string>(ext_pool[pick(5)]) : std::nullopt);
      const bool ok = !(r.external_id && model.Holds(*r.external_id));
      Status st = store->Add({r}).status();
      ASSERT_EQ(st.ok(), ok) << st;
      if (ok) model.rows[r.id] = r;
      refused += ok ? 0 : 1;
    } else if (op <= 4) {  // upsert
      ContextRecord r = fresh(ext_pool[pick(5)]);
      r.lifecycle_status = "active";
      std::vector<std::string> live = model.WithExternalId(*r.external_id, now);
      Result<UpsertResult> result = store->UpsertByExternalId(r);
      if (live.empty() && model.Holds(*r.external_id)) {
        ASSERT_FALSE(result.ok());
        ++refused;
        continue;
      }
      ASSERT_OK(result.status());
      if (live.size() == 1) {
        EXPECT_EQ(result->replaced_id, live[0]);
        ++replaced;
      } else {
        EXPECT_TRUE(result->inserted);
      }
      model.rows[r.id] = result->record;
    } else if (op <= 6) {  // update, expire or retire
      const std::string id = any_id();
      ContextPatch patch;
      switch (pick(3)) {
        case 0:
          patch.bot_id = fmt::format("bot{}", step);
          break;
        case 1:
          patch.expires_at_micros = now + pick(3) * 1'000'000;
          break;
        default:
          patch.lifecycle_status = "retired";
          break;
      }
      ASSERT_OK_AND_ASSIGN(std::optional<UpdateResult> updated, store->UpdateById(id, patch));
      const bool visible = model.rows.count(id) > 0 && model.Visible(model.rows[id], now);
      ASSERT_EQ(updated.has_value(), visible) << id;
      if (updated) {
        model.rows[updated->record.id] = updated->record;
        ++updated_count;
      }
    } else if (op == 7) {  // delete
      const std::string id = any_id();
      const bool visible = model.rows.count(id) > 0 && model.Visible(model.rows[id], now);
      ASSERT_OK_AND_ASSIGN(bool deleted, store->DeleteById(id));
      ASSERT_EQ(deleted, visible) << id;
      if (deleted) {
        ++deleted_count;
        ContextRecord tomb = model.rows[id];
        tomb.content_type = std::string(kContentTypeTombstone);
        tomb.supersedes_id.reset();
        model.rows[id] = tomb;
      }
    } else if (op == 8) {  // time passes
      clock_.Advance(std::chrono::seconds(1));
    } else if (pick(2) == 0) {  // maintenance: merge, sometimes compaction
      ASSERT_OK(store->base().Cleanup().status());
      if (pick(3) == 0) ASSERT_OK(store->base().Compact().status());
    } else {  // a snapshot, compared with a copy of the model at the end
      const std::string label = fmt::format("s{}", step);
      ASSERT_OK(store->Snapshot(label).status());
      snapshots.emplace(label, model);
    }
    // Every read agrees with the model.
    const int64_t at = clock_.NowMicros();
    ASSERT_OK_AND_ASSIGN(auto listed, store->List());
    ASSERT_EQ(Ids(listed), model.List(at));
    ASSERT_OK_AND_ASSIGN(auto expired,
                         store->ListFiltered({}, std::nullopt, 0, {.include_expired = true}));
    ASSERT_EQ(Ids(expired), model.List(at, true, false));
    ASSERT_OK_AND_ASSIGN(auto retired,
                         store->ListFiltered({}, std::nullopt, 0, {.include_retired = true}));
    ASSERT_EQ(Ids(retired), model.List(at, false, true));
    // Point reads of a few ids each step, of every id at the end.
    for (int k = 0; k < (step + 1 == kSteps ? static_cast<int>(model.rows.size()) : 3); ++k) {
      const std::string id =
          step + 1 == kSteps ? std::next(model.rows.begin(), k)->first : any_id();
      if (model.rows.count(id) == 0) continue;
      ASSERT_OK_AND_ASSIGN(auto got, store->GetById(id));
      ASSERT_EQ(got.has_value(), model.Visible(model.rows[id], at)) << id;
    }
    for (const std::string& ext : ext_pool) {
      ASSERT_OK_AND_ASSIGN(auto got, store->GetByExternalId(ext));
      std::vector<std::string> live = model.WithExternalId(ext, at);
      ASSERT_LE(live.size(), 1u) << ext;
      ASSERT_EQ(got.has_value(), !live.empty()) << ext;
      if (got) {
        ASSERT_EQ(got->id, live[0]);
      }
    }
  }
  // Every snapshot lists what the model held when it was taken (visibility as of now).
  ASSERT_OK_AND_ASSIGN(auto reader, Open({}, "reader"));
  for (const auto& [label, then] : snapshots) {
    ASSERT_OK(reader->CheckoutSnapshot(label));
    ASSERT_OK_AND_ASSIGN(auto listed, reader->List());
    EXPECT_EQ(Ids(listed), then.List(clock_.NowMicros())) << label;
  }
  // The run exercised what it claims to.
  EXPECT_GT(snapshots.size(), 2u);
  EXPECT_GT(replaced, 0);
  EXPECT_GT(updated_count, 0);
  EXPECT_GT(deleted_count, 0);
  EXPECT_GT(refused, 0);
}

TEST_F(ContextStoreTest, SnapshotsForksAndCheckouts) {
  ContextStoreOptions deferred;
  deferred.seal_on_add = false;
  ASSERT_OK_AND_ASSIGN(auto store, Open(deferred));
  ASSERT_OK(store->Add({Rec("a", 0, "ext-a"), Rec("b", 1)}).status());
  ASSERT_OK(store->Flush().status());
  ASSERT_OK(store->base().Cleanup().status());  // a, b in the base
  ASSERT_OK(store->Add({Rec("c", 2)}).status());
  ASSERT_OK(store->Flush().status());             // c pending
  ASSERT_OK(store->Add({Rec("d", 3)}).status());  // d unsealed: the snapshot seals it
  ASSERT_OK_AND_ASSIGN(table::TagInfo tag, store->Snapshot("v1"));
  const std::vector<std::string> v1 = {"a", "b", "c", "d"};
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  EXPECT_EQ(Ids(listed), v1);

  // Change everything afterwards: update, delete, add, merge, compact.
  ContextPatch patch;
  patch.bot_id = "bot";
  ASSERT_OK_AND_ASSIGN(auto updated, store->UpdateByExternalId("ext-a", patch));
  ASSERT_TRUE(updated.has_value());
  ASSERT_OK(store->DeleteById("b").status());
  ASSERT_OK(store->Add({Rec("e", 4)}).status());
  ASSERT_OK(store->Flush().status());
  ASSERT_OK(store->base().Cleanup().status());
  ASSERT_OK(store->base().Compact().status());

  // A fork of the current state, written to on its own.
  ASSERT_OK_AND_ASSIGN(auto fork, store->Fork("experiment"));
  ASSERT_OK_AND_ASSIGN(auto now, store->List());
  ASSERT_OK_AND_ASSIGN(auto forked, fork->List());
  EXPECT_EQ(Ids(forked), Ids(now));
  ASSERT_OK(fork->Add({Rec("only-in-fork", 5)}).status());
  ASSERT_OK(fork->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto in_fork, fork->GetById("only-in-fork"));
  EXPECT_TRUE(in_fork.has_value());
  ASSERT_OK_AND_ASSIGN(auto in_parent, store->GetById("only-in-fork"));
  EXPECT_FALSE(in_parent.has_value());
  ASSERT_OK(store->Add({Rec("only-in-parent", 6)}).status());
  ASSERT_OK(store->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto reopened, store->OpenBranch("experiment"));
  ASSERT_OK_AND_ASSIGN(auto not_there, reopened->GetById("only-in-parent"));
  EXPECT_FALSE(not_there.has_value());
  ASSERT_OK_AND_ASSIGN(auto searched, reopened->Search({1, 0, 5}, 1));
  ASSERT_EQ(searched.size(), 1u);
  EXPECT_EQ(searched[0].record.id, "only-in-fork");
  EXPECT_TRUE(store->OpenBranch("missing").status().IsNotFound());
  EXPECT_TRUE(store->OpenBranch("../x").status().IsInvalidArgument());

  // Checkout of the snapshot: exactly v1, read-only; RefreshLatest returns to now.
  ASSERT_OK_AND_ASSIGN(auto reader, Open({}, "reader"));
  ASSERT_OK(reader->CheckoutSnapshot("v1"));
  ASSERT_OK_AND_ASSIGN(auto at_v1, reader->List());
  EXPECT_EQ(Ids(at_v1), v1);
  ASSERT_OK_AND_ASSIGN(auto old_a, reader->GetByExternalId("ext-a"));
  ASSERT_TRUE(old_a.has_value());
  EXPECT_EQ(old_a->id, "a");
  EXPECT_FALSE(old_a->bot_id.has_value());
  EXPECT_TRUE(reader->Add({Rec("x", 9)}).status().IsInvalidArgument());
  // A fork of the checked-out snapshot.
  ASSERT_OK_AND_ASSIGN(auto from_v1, reader->Fork("from-v1"));
  ASSERT_OK_AND_ASSIGN(auto from_v1_rows, from_v1->List());
  EXPECT_EQ(Ids(from_v1_rows), v1);
  ASSERT_OK(reader->RefreshLatest());
  ASSERT_OK_AND_ASSIGN(auto latest, reader->List());
  EXPECT_EQ(latest.size(), now.size() + 1);

  ASSERT_OK_AND_ASSIGN(auto snapshots, store->ListSnapshots());
  ASSERT_EQ(snapshots.size(), 1u);
  EXPECT_EQ(snapshots[0].label, "v1");
  EXPECT_EQ(snapshots[0].version, tag.version);
  ASSERT_OK_AND_ASSIGN(auto branches, store->ListBranches());
  ASSERT_EQ(branches.size(), 2u);
  ASSERT_OK(fork->Close());
  ASSERT_OK(reopened->Close());
  ASSERT_OK(store->DeleteBranch("experiment"));
  ASSERT_OK(store->DeleteSnapshot("v1"));
  EXPECT_TRUE(reader->CheckoutSnapshot("v1").IsNotFound());
  ASSERT_OK_AND_ASSIGN(auto rest, store->List());
  EXPECT_EQ(rest.size(), now.size() + 1);
}

// --- Relationships migration ------------------------------------------------------------

constexpr const char* kNoRelationships =
    "relationships require a context dataset with relationships support; run "
    "migrate_relationships_column() on older datasets";

// A context store created without the relationships column group (as older stores were).
void CreateWithoutRelationships(const std::shared_ptr<ObjectStore>& store,
                                const std::string& prefix) {
  ContextSchemaOptions old;
  old.embedding_dim = 3;
  old.groups.relationships = false;
  ASSERT_OK_AND_ASSIGN(SchemaPtr schema, ContextSchema(old));
  StorageBaseOptions base;
  base.schema = schema;
  base.key_column = "id";
  base.store_kind = std::string(kContextStoreKind);
  base.shard_id = "creator";
  ASSERT_OK_AND_ASSIGN(auto created, StorageBase::Open(store, prefix, base));
  ASSERT_OK(created->Close());
}

ContextRecord WithRelationship(ContextRecord r, std::string target) {
  r.relationships = std::vector<ContextRelationship>{{std::move(target), "cites", 0.5F}};
  return r;
}

TEST_F(ContextStoreTest, MigratingRelationshipsLetsThisAndNewHandlesWriteThem) {
  ASSERT_NO_FATAL_FAILURE(CreateWithoutRelationships(store_, prefix_));
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK_AND_ASSIGN(auto before, Open({}, "before"));  // opened with the old schema
  ASSERT_OK(store->Add({Rec("in-base")}).status());
  ASSERT_OK(store->base().Cleanup().status());
  ASSERT_OK(store->Add({Rec("pending", 1)}).status());  // a generation in the old schema
  EXPECT_EQ(store->Add({WithRelationship(Rec("early", 2), "in-base")}).status().message(),
            kNoRelationships);
  const uint64_t version = store->version();

  ASSERT_OK_AND_ASSIGN(bool added, store->MigrateRelationshipsColumn());
  EXPECT_TRUE(added);
  EXPECT_GT(store->version(), version);
  EXPECT_GE(store->base().schema()->GetFieldIndex("relationships"), 0);
  ASSERT_OK_AND_ASSIGN(bool again, store->MigrateRelationshipsColumn());
  EXPECT_FALSE(again);

  // The same handle writes relationships at once; older rows have none.
  ASSERT_OK(store->Add({WithRelationship(Rec("cites", 3), "in-base")}).status());
  ASSERT_OK_AND_ASSIGN(auto cites, store->GetById("cites"));
  ASSERT_TRUE(cites.has_value());
  EXPECT_EQ(cites->relationships, WithRelationship(Rec("cites", 3), "in-base").relationships);
  for (const char* old : {"in-base", "pending"}) {
    ASSERT_OK_AND_ASSIGN(auto row, store->GetById(old));
    ASSERT_TRUE(row.has_value()) << old;
    EXPECT_FALSE(row->relationships.has_value()) << old;
  }
  // A handle opened before keeps its schema until reopened: its rows read without
  // relationships beside the new ones.
  ASSERT_OK(before->Add({Rec("from-before", 4)}).status());
  ASSERT_OK_AND_ASSIGN(auto fresh, Open({}, "fresh"));
  ASSERT_OK(fresh->Add({WithRelationship(Rec("from-fresh", 5), "in-base")}).status());
  const std::vector<std::string> all = {"in-base", "pending", "cites", "from-before", "from-fresh"};
  for (ContextStore* reader : {store.get(), before.get(), fresh.get()}) {
    ASSERT_OK_AND_ASSIGN(auto listed, reader->List());
    EXPECT_EQ(Ids(listed), all);
  }
  ASSERT_OK_AND_ASSIGN(auto related, fresh->ListRelated("in-base"));
  EXPECT_EQ(Ids(related), (std::vector<std::string>{"cites", "from-fresh"}));
  // Merged and compacted, the rows read the same.
  for (ContextStore* writer : {store.get(), before.get(), fresh.get()}) {
    ASSERT_OK(writer->base().Cleanup().status());
  }
  ASSERT_OK(store->base().Compact().status());
  ASSERT_OK_AND_ASSIGN(auto merged, store->List());
  EXPECT_EQ(Ids(merged), all);
  ASSERT_OK_AND_ASSIGN(related, store->ListRelated("in-base"));
  EXPECT_EQ(Ids(related), (std::vector<std::string>{"cites", "from-fresh"}));
}

TEST_F(ContextStoreTest, MigratingRelationshipsKeepsADeferredHandlesUnsealedRows) {
  ASSERT_NO_FATAL_FAILURE(CreateWithoutRelationships(store_, prefix_));
  ContextStoreOptions deferred;
  deferred.seal_on_add = false;
  ASSERT_OK_AND_ASSIGN(auto store, Open(deferred));
  ASSERT_OK(store->Add({Rec("unsealed")}).status());
  ASSERT_OK_AND_ASSIGN(bool added, store->MigrateRelationshipsColumn());
  EXPECT_TRUE(added);
  ASSERT_OK(store->Add({WithRelationship(Rec("after", 1), "unsealed")}).status());
  ASSERT_OK_AND_ASSIGN(auto listed, store->List());
  EXPECT_EQ(Ids(listed), (std::vector<std::string>{"unsealed", "after"}));
  ASSERT_OK(store->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto reader, Open({}, "reader"));
  ASSERT_OK_AND_ASSIGN(auto related, reader->ListRelated("unsealed"));
  EXPECT_EQ(Ids(related), (std::vector<std::string>{"after"}));
}

TEST_F(ContextStoreTest, MigratingRelationshipsIsRefusedOnACheckedOutHandle) {
  ASSERT_NO_FATAL_FAILURE(CreateWithoutRelationships(store_, prefix_));
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK(store->Add({Rec("a")}).status());
  ASSERT_OK(store->base().Cleanup().status());
  ASSERT_OK(store->Checkout(store->version()));
  Result<bool> refused = store->MigrateRelationshipsColumn();
  EXPECT_TRUE(refused.status().IsInvalidArgument());
  EXPECT_EQ(refused.status().message(),
            "checked-out store is read-only; call RefreshLatest before migrating it");
  ASSERT_OK(store->RefreshLatest());
  EXPECT_LT(store->base().schema()->GetFieldIndex("relationships"), 0);
  ASSERT_OK_AND_ASSIGN(bool added, store->MigrateRelationshipsColumn());
  EXPECT_TRUE(added);
}

TEST_F(ContextStoreTest, MigratingANewStoreFindsTheColumnThere) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK_AND_ASSIGN(bool added, store->MigrateRelationshipsColumn());
  EXPECT_FALSE(added);
}

// --- External payloads ------------------------------------------------------------------

TEST_F(ContextStoreTest, APayloadIsPutUnderTheStoreAndFetchedThroughItsRecord) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  const std::string bytes("pdf\0bytes", 9);
  ASSERT_OK_AND_ASSIGN(int64_t length, store->PutPayload("docs/report.pdf", bytes));
  EXPECT_EQ(length, 9);
  EXPECT_TRUE(std::filesystem::exists(dir_.path() / prefix_ / "_payloads/docs/report.pdf"));
  ContextRecord r = Rec("r");
  r.payload_uri = "docs/report.pdf";
  r.payload_size = 9;
  ASSERT_OK(store->Add({r, Rec("plain", 1)}).status());
  ASSERT_OK_AND_ASSIGN(auto fetched, store->FetchPayload("r"));
  EXPECT_EQ(fetched, bytes);
  ASSERT_OK_AND_ASSIGN(auto reader, Open({}, "reader"));
  ASSERT_OK_AND_ASSIGN(fetched, reader->FetchPayload("r"));
  EXPECT_EQ(fetched, bytes);

  ASSERT_OK_AND_ASSIGN(auto none, store->FetchPayload("missing"));
  EXPECT_FALSE(none.has_value());
  EXPECT_EQ(store->FetchPayload("plain").status().message(),
            "record 'plain' has no external payload reference to fetch");
  // An empty payload is a payload.
  ASSERT_OK_AND_ASSIGN(length, store->PutPayload("empty", ""));
  EXPECT_EQ(length, 0);
  ContextRecord e = Rec("e", 2);
  e.payload_uri = "empty";
  ASSERT_OK(store->Add({e}).status());
  ASSERT_OK_AND_ASSIGN(fetched, store->FetchPayload("e"));
  EXPECT_EQ(fetched, std::string());
  // A deleted record has no payload to fetch (the object stays).
  ASSERT_OK(store->DeleteById("r").status());
  ASSERT_OK_AND_ASSIGN(none, store->FetchPayload("r"));
  EXPECT_FALSE(none.has_value());

  // Deleting the store deletes its payloads.
  ASSERT_OK(store->base().DeleteData());
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / prefix_ / "_payloads"));
}

TEST_F(ContextStoreTest, PayloadsAreImmutableButARetriedPutSucceeds) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK(store->PutPayload("a/b", "first").status());
  ASSERT_OK_AND_ASSIGN(int64_t length, store->PutPayload("a/b", "first"));
  EXPECT_EQ(length, 5);
  Status changed = store->PutPayload("a/b", "second").status();
  EXPECT_TRUE(changed.IsAlreadyExists());
  EXPECT_EQ(changed.message(),
            "payload 'a/b' already exists with other content (5 bytes); payloads are "
            "immutable: put the new content under another uri");
}

TEST_F(ContextStoreTest, BadPayloadUrisAreRefusedWithTheirReason) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  EXPECT_EQ(store->PutPayload("", "x").status().message(),
            "invalid payload uri '': object key is empty");
  EXPECT_EQ(store->PutPayload("../escape", "x").status().message(),
            "invalid payload uri '../escape': object key '../escape' has an empty, '.' or '..' "
            "segment");
  EXPECT_EQ(store->PutPayload("a//b", "x").status().message(),
            "invalid payload uri 'a//b': object key 'a//b' has an empty, '.' or '..' segment");
  EXPECT_EQ(store->PutPayload("/etc/passwd", "x").status().message(),
            "invalid payload uri '/etc/passwd': object key '/etc/passwd' is absolute");
  EXPECT_EQ(store->PutPayload("s3://bucket/x", "x").status().message(),
            "payload uri 's3://bucket/x' names another store: a payload uri is a key relative "
            "to the store's payload area, such as 'docs/report.pdf'");
  // A record naming a bad uri fails its fetch the same way, naming the record.
  ContextRecord r = Rec("r");
  r.payload_uri = "../escape";
  ASSERT_OK(store->Add({r}).status());
  Status fetched = store->FetchPayload("r").status();
  EXPECT_TRUE(fetched.IsInvalidArgument());
  EXPECT_EQ(fetched.message(),
            "record 'r': invalid payload uri '../escape': object key '../escape' has an empty, "
            "'.' or '..' segment");
}

TEST_F(ContextStoreTest, AMissingOrShortPayloadIsReportedNamingRecordAndUri) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ContextRecord missing = Rec("missing");
  missing.payload_uri = "never/put";
  ContextRecord sized = Rec("sized", 1);
  sized.payload_uri = "blob";
  sized.payload_size = 10;
  ASSERT_OK(store->Add({missing, sized}).status());
  Status not_found = store->FetchPayload("missing").status();
  EXPECT_TRUE(not_found.IsNotFound());
  EXPECT_EQ(not_found.message(), "payload 'never/put' of record 'missing' is not in the store");
  ASSERT_OK(store->PutPayload("blob", "four").status());
  Status short_payload = store->FetchPayload("sized").status();
  EXPECT_TRUE(short_payload.IsCorruption());
  EXPECT_EQ(short_payload.message(),
            "payload 'blob' of record 'sized' has 4 bytes, the record "
            "says 10");
}

TEST_F(ContextStoreTest, ACheckedOutHandleFetchesButDoesNotPutPayloads) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_OK(store->PutPayload("p", "bytes").status());
  ContextRecord r = Rec("r");
  r.payload_uri = "p";
  ASSERT_OK(store->Add({r}).status());
  ASSERT_OK(store->base().Cleanup().status());
  ASSERT_OK(store->Checkout(store->version()));
  ASSERT_OK_AND_ASSIGN(auto fetched, store->FetchPayload("r"));
  EXPECT_EQ(fetched, "bytes");
  Status refused = store->PutPayload("q", "x").status();
  EXPECT_TRUE(refused.IsInvalidArgument());
  EXPECT_EQ(refused.message(), "checked-out store is read-only; call RefreshLatest before writing");
}

}  // namespace
}  // namespace strata::store
