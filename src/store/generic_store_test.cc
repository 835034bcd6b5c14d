// GenericStore: the spec and seal mode persisted at create and checked at every open, JSON
// rows in and out, blobs, deferred seals, merges, newest-wins duplicates, filters, pages,
// point reads from each source, and bad input that writes nothing.
#include "strata/generic_store.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/store_test_util.h"
#include "strata/builder.h"
#include "strata/maintenance.h"
#include "strata/rollout_store.h"
#include "strata/table.h"

namespace strata::store {
namespace {

constexpr std::string_view kSpec = R"({"columns": [
  ["id", {"type": "string", "nullable": false}],
  ["score", {"type": "float32"}],
  ["at", {"type": "timestamp"}],
  ["video", {"type": "binary", "blob": true}],
  ["embedding", {"type": "vector", "dim": 3, "metric": "cosine"}],
  ["tags", {"type": "list", "item": {"type": "string"}}]]})";

SchemaSpec Spec(std::string_view json = kSpec) {
  auto spec = SchemaSpec::FromJson(json);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : SchemaSpec{};
}

std::string Json(const std::vector<RecordBatch>& batches) {
  std::string out;
  for (const RecordBatch& b : batches) EXPECT_TRUE(AppendRowsAsJson(b, &out).ok());
  return out;
}

std::string Json(const RecordBatch& batch) { return Json(std::vector<RecordBatch>{batch}); }

int64_t Value(const Result<int64_t>& result) {
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : -1;
}

class GenericStoreTest : public testing::StoreFixture {
 protected:
  GenericStoreOptions Options(bool seal_on_add = false) {
    GenericStoreOptions options;
    options.base.shard_id = "solo";
    options.base.generation_delete_delay_seconds = 0.1;
    options.seal_on_add = seal_on_add;
    return options;
  }
  Result<std::unique_ptr<GenericStore>> OpenGeneric(std::optional<SchemaSpec> spec = Spec(),
                                                    bool seal_on_add = false) {
    return GenericStore::Open(store_, prefix_, std::move(spec), Options(seal_on_add));
  }
  std::string ListJson(GenericStore& s, GenericListRequest request = {}) {
    auto listed = s.List(request);
    EXPECT_TRUE(listed.ok()) << listed.status();
    return listed.ok() ? Json(*listed) : "";
  }
  bool Exists() {
    auto exists = table::Table::Exists(*store_, prefix_);
    EXPECT_TRUE(exists.ok());
    return exists.ok() && *exists;
  }
};

TEST_F(GenericStoreTest, JsonRowsRoundTripWithVectorsListsAndTimestamps) {
  ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
  ASSERT_OK(
      s->Add(R"([{"id": "b", "score": 0.5, "at": "2024-05-01T00:00:00.25Z", "tags": ["x", null]},
                       {"id": "a", "embedding": [1, 2, 3.5], "at": 7, "video": "AQID"}])")
          .status());
  ASSERT_OK(s->Flush().status());
  const std::string want_a = R"({"id":"a","at":7,"embedding":[1,2,3.5]})"
                             "\n";
  const std::string want_b = R"({"id":"b","score":0.5,"at":1714521600250000,"tags":["x",null]})"
                             "\n";
  EXPECT_EQ(ListJson(*s), want_a + want_b);
  ASSERT_OK_AND_ASSIGN(RecordBatch b, s->Get("b"));
  EXPECT_EQ(Json(b), want_b);
  ASSERT_OK_AND_ASSIGN(int64_t count, s->Count());
  EXPECT_EQ(count, 2);
}

TEST_F(GenericStoreTest, BlobColumnsAreLeftOutOfListsButReadWhenNamed) {
  ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
  ASSERT_OK(s->Add(R"({"id": "clip", "video": [1, 2, 3]})").status());
  ASSERT_OK(s->Flush().status());
  EXPECT_EQ(ListJson(*s), "{\"id\":\"clip\"}\n");
  ASSERT_OK_AND_ASSIGN(RecordBatch plain, s->Get("clip"));
  EXPECT_EQ(plain.schema()->GetFieldIndex("video"), -1);
  ASSERT_OK_AND_ASSIGN(RecordBatch blob, s->Get("clip", {"video"}));
  EXPECT_EQ(Json(blob), "{\"id\":\"clip\",\"video\":\"AQID\"}\n");
  // Listing a named blob column reads it too.
  GenericListRequest request;
  request.columns = {"id", "video"};
  EXPECT_EQ(ListJson(*s, request), "{\"id\":\"clip\",\"video\":\"AQID\"}\n");
  EXPECT_EQ(s->Get("clip", {"nope"}).status().message(),
            "column 'nope' is not declared in the store schema");
}

TEST_F(GenericStoreTest, SpecIsPersistedAndUsedOnReopen) {
  {
    ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
    ASSERT_OK(s->Add(R"({"id": "a", "score": 1})").status());
    ASSERT_OK(s->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto reopened, GenericStore::OpenExisting(store_, prefix_, Options()));
  EXPECT_EQ(reopened->spec(), Spec());
  EXPECT_EQ(reopened->schema()->metadata().Get(kSchemaSpecMetadata), Spec().ToJson());
  EXPECT_EQ(reopened->schema()->metadata().Get(kStoreKindMetadata), kGenericStoreKind);
  EXPECT_EQ(ListJson(*reopened), "{\"id\":\"a\",\"score\":1}\n");
  ASSERT_OK_AND_ASSIGN(auto without_spec, OpenGeneric(std::nullopt));
  EXPECT_EQ(without_spec->spec(), Spec());
  ASSERT_OK_AND_ASSIGN(auto with_same, OpenGeneric(Spec()));
  EXPECT_EQ(with_same->spec(), Spec());
}

TEST_F(GenericStoreTest, SealModeSurvivesReopenBothWays) {
  {
    ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric(Spec(), /*seal_on_add=*/true));
    EXPECT_TRUE(s->seal_on_add());
  }
  {
    ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric(std::nullopt, /*seal_on_add=*/false));
    EXPECT_TRUE(s->seal_on_add());
    // Sealed on add: visible at once.
    ASSERT_OK(s->Add(R"({"id": "a"})").status());
    EXPECT_EQ(ListJson(*s), "{\"id\":\"a\"}\n");
  }
  prefix_ = "other/";
  {
    ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric(Spec(), /*seal_on_add=*/false));
    EXPECT_FALSE(s->seal_on_add());
  }
  ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric(std::nullopt, /*seal_on_add=*/true));
  EXPECT_FALSE(s->seal_on_add());
  EXPECT_EQ(s->schema()->metadata().Get(kSealOnAddMetadata), "false");
}

TEST_F(GenericStoreTest, ConflictingSpecIsRejected) {
  { ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric()); }
  SchemaSpec other = Spec();
  other.columns[1].type.kind = ColumnKind::kFloat64;
  EXPECT_EQ(OpenGeneric(other).status(),
            Status::InvalidArgument(fmt::format(
                "store at '{}/{}' was created with a different schema; open it without a schema "
                "to use the persisted one",
                store_->Describe(), prefix_)));
}

TEST_F(GenericStoreTest, InvalidSpecsAreRejectedAndCreateNothing) {
  SchemaSpec no_id = Spec(R"({"columns": [["a", {"type": "int32"}]]})");
  EXPECT_EQ(OpenGeneric(no_id).status().message(),
            "schema must declare an 'id' column: it is the primary key and the LSM merge key");
  SchemaSpec nullable_id = Spec(R"({"columns": [["id", {"type": "string"}]]})");
  EXPECT_TRUE(OpenGeneric(nullable_id).status().IsInvalidArgument());
  EXPECT_TRUE(OpenGeneric(SchemaSpec{}).status().IsInvalidArgument());
  EXPECT_FALSE(Exists());
  EXPECT_EQ(OpenGeneric(std::nullopt).status(),
            Status::InvalidArgument("a schema is required to create a store"));
  EXPECT_FALSE(Exists());
}

TEST_F(GenericStoreTest, OpenExistingNeverCreates) {
  Status missing = GenericStore::OpenExisting(store_, prefix_, Options()).status();
  EXPECT_TRUE(missing.IsNotFound()) << missing;
  EXPECT_FALSE(Exists());
}

TEST_F(GenericStoreTest, AStoreOfAnotherKindIsNotOpened) {
  { ASSERT_OK_AND_ASSIGN(auto rollouts, OpenRollout()); }
  EXPECT_EQ(GenericStore::OpenExisting(store_, prefix_, Options()).status(),
            Status::InvalidArgument(
                "dataset has no stored schema spec: it was not created as a generic store"));
  EXPECT_TRUE(OpenGeneric().status().IsInvalidArgument());
}

TEST_F(GenericStoreTest, ARolloutStoreOpenLeavesAGenericStoreUnchanged) {
  uint64_t version = 0;
  {
    ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
    ASSERT_OK(s->Add(R"({"id": "a", "score": 1})").status());
    ASSERT_OK(s->Flush().status());
    version = s->version();
  }
  // RolloutStore::Open would add the rollout columns to the base schema (schema evolution).
  Status refused = OpenRollout().status();
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused;
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("is a generic store"));
  ASSERT_OK_AND_ASSIGN(auto s, GenericStore::OpenExisting(store_, prefix_, Options()));
  EXPECT_EQ(s->version(), version);
  ASSERT_OK_AND_ASSIGN(SchemaPtr expected, Spec().ToArrowSchema());
  EXPECT_EQ(s->schema()->num_fields(), expected->num_fields()) << s->schema()->ToString();
  EXPECT_EQ(ListJson(*s), "{\"id\":\"a\",\"score\":1}\n");
}

TEST_F(GenericStoreTest, DeferredSealRowsAreInvisibleUntilFlush) {
  ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
  ASSERT_OK(s->Add(R"({"id": "a"})").status());
  EXPECT_EQ(ListJson(*s), "");
  ASSERT_OK_AND_ASSIGN(RecordBatch none, s->Get("a"));
  EXPECT_EQ(none.num_rows(), 0);
  ASSERT_OK_AND_ASSIGN(FlushOutcome outcome, s->Flush());
  EXPECT_EQ(outcome, FlushOutcome::kSealed);
  EXPECT_EQ(ListJson(*s), "{\"id\":\"a\"}\n");
}

TEST_F(GenericStoreTest, GenerationsMergeIntoTheBase) {
  ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
  for (std::string id : {"a", "b", "c"}) {
    ASSERT_OK(s->Add(fmt::format(R"({{"id": "{}"}})", id)).status());
    ASSERT_OK(s->Flush().status());
  }
  ASSERT_OK_AND_ASSIGN(int64_t pending, s->PendingGenerations());
  EXPECT_EQ(pending, 3);
  ASSERT_OK_AND_ASSIGN(MergeReport report, s->Cleanup());
  EXPECT_EQ(report.rows_merged, 3);
  ASSERT_OK_AND_ASSIGN(int64_t base_rows, s->Count(ListSource::kFragments));
  EXPECT_EQ(base_rows, 3);
  ASSERT_OK_AND_ASSIGN(pending, s->PendingGenerations());
  EXPECT_EQ(pending, 0);
}

TEST_F(GenericStoreTest, AFourMebibyteBlobSurvivesAMerge) {
  GenericStoreOptions options = Options();
  options.base.merge_after_generations = 1;
  ASSERT_OK_AND_ASSIGN(auto s, GenericStore::Open(store_, prefix_, Spec(), options));
  std::string bytes(size_t{4} << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 31 % 251);
  ASSERT_OK_AND_ASSIGN(RecordBatch one, EncodeJsonRows(s->schema(), R"({"id": "big"})"));
  std::vector<Array> columns;
  for (int c = 0; c < one.num_columns(); ++c) columns.push_back(one.column(c));
  ASSERT_OK_AND_ASSIGN(auto builder, MakeBuilder(large_binary()));
  ASSERT_OK(static_cast<LargeBinaryBuilder*>(builder.get())->Append(bytes));
  ASSERT_OK_AND_ASSIGN(columns[s->schema()->GetFieldIndex("video")], builder->Finish());
  ASSERT_OK_AND_ASSIGN(RecordBatch batch, RecordBatch::Make(s->schema(), 1, columns));
  ASSERT_OK(s->AddBatches({batch}).status());
  ASSERT_OK(s->Flush().status());
  ASSERT_OK_AND_ASSIGN(MergeReport report, s->MaybeMerge());
  EXPECT_EQ(report.rows_merged, 1);
  ASSERT_OK_AND_ASSIGN(RecordBatch got, s->Get("big", {"video"}, ListSource::kFragments));
  ASSERT_EQ(got.num_rows(), 1);
  EXPECT_EQ(got.column(1).StringValue(0), bytes);
}

TEST_F(GenericStoreTest, DuplicateIdsCollapseToTheNewestBeforeAndAfterCleanup) {
  ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
  ASSERT_OK(s->Add(R"({"id": "a", "score": 1})"
                   "\n"
                   R"({"id": "b", "score": 1})")
                .status());
  ASSERT_OK(s->Flush().status());
  ASSERT_OK(s->Add(R"({"id": "a", "score": 2})").status());
  ASSERT_OK(s->Flush().status());
  const std::string want = "{\"id\":\"a\",\"score\":2}\n{\"id\":\"b\",\"score\":1}\n";
  EXPECT_EQ(ListJson(*s), want);
  ASSERT_OK(s->Cleanup().status());
  EXPECT_EQ(ListJson(*s), want);
  ASSERT_OK_AND_ASSIGN(int64_t count, s->Count());
  EXPECT_EQ(count, 2);
  // Newer again, after the merge.
  ASSERT_OK(s->Add(R"({"id": "a", "score": 3})").status());
  ASSERT_OK(s->Flush().status());
  EXPECT_EQ(ListJson(*s), "{\"id\":\"a\",\"score\":3}\n{\"id\":\"b\",\"score\":1}\n");
}

TEST_F(GenericStoreTest, FiltersAndPaging) {
  ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
  std::string rows;
  for (int i = 9; i >= 0; --i) rows += fmt::format(R"({{"id": "r{}", "score": {}}})", i, i) + "\n";
  ASSERT_OK(s->Add(rows).status());
  ASSERT_OK(s->Flush().status());
  GenericListRequest request;
  request.filter = "score >= 4";
  request.offset = 1;
  request.limit = 2;
  request.columns = {"id"};
  EXPECT_EQ(ListJson(*s, request), "{\"id\":\"r5\"}\n{\"id\":\"r6\"}\n");
  request.offset = 5;
  EXPECT_EQ(ListJson(*s, request), "{\"id\":\"r9\"}\n");
  request.offset = 6;
  EXPECT_EQ(ListJson(*s, request), "");
  ASSERT_OK_AND_ASSIGN(int64_t count, s->Count(ListSource::kAll, "score >= 4"));
  EXPECT_EQ(count, 6);
  // Columns without id still come in id order.
  GenericListRequest scores;
  scores.columns = {"score"};
  scores.limit = 2;
  EXPECT_EQ(ListJson(*s, scores), "{\"score\":0}\n{\"score\":1}\n");
  request.offset = -1;
  EXPECT_TRUE(s->List(request).status().IsInvalidArgument());
  GenericListRequest bad_filter;
  bad_filter.filter = "nope >";
  EXPECT_TRUE(s->List(bad_filter).status().IsInvalidArgument());
}

TEST_F(GenericStoreTest, GetManyKeepsRequestOrderOnEverySource) {
  ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
  ASSERT_OK(s->Add(R"({"id": "a"})"
                   "\n"
                   R"({"id": "b"})")
                .status());
  ASSERT_OK(s->Cleanup().status());  // a and b in the base
  ASSERT_OK(s->Add(R"({"id": "c"})").status());
  ASSERT_OK(s->Flush().status());  // c pending
  auto ids = [&](ListSource source) {
    auto got = s->GetMany({"c", "missing", "b", "a"}, {"id"}, source);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? Json(*got) : "";
  };
  EXPECT_EQ(ids(ListSource::kAll), "{\"id\":\"c\"}\n{\"id\":\"b\"}\n{\"id\":\"a\"}\n");
  EXPECT_EQ(ids(ListSource::kWal), "{\"id\":\"c\"}\n");
  EXPECT_EQ(ids(ListSource::kFragments), "{\"id\":\"b\"}\n{\"id\":\"a\"}\n");
  ASSERT_OK_AND_ASSIGN(RecordBatch c, s->Get("c", {}, ListSource::kFragments));
  EXPECT_EQ(c.num_rows(), 0);
  ASSERT_OK_AND_ASSIGN(c, s->Get("c", {}, ListSource::kWal));
  EXPECT_EQ(c.num_rows(), 1);
  std::vector<std::string> many(1024, "a");
  ASSERT_OK(s->GetMany(many).status());
  many.emplace_back("b");
  EXPECT_EQ(s->GetMany(many).status().message(), "1025 ids requested; at most 1024 per call");
}

TEST_F(GenericStoreTest, BadRowsWriteNothing) {
  ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
  for (std::string_view bad :
       {R"({"id": "a"}
{"id": "b", "unknown": 1})",
        R"([{"id": "a"}, {"score": 1}])", R"({"id": "a", "embedding": [1, 2]})",
        R"({"id": "a"}
{"id": )"}) {
    EXPECT_TRUE(s->Add(bad).status().IsInvalidArgument()) << bad;
  }
  EXPECT_EQ(s->Add(R"([{"id": "a"}, {"score": 1}])").status().message(),
            "row 1: column 'id' is not nullable and was not supplied");
  ASSERT_OK(s->Flush().status());
  EXPECT_EQ(ListJson(*s), "");
  ASSERT_OK_AND_ASSIGN(StoreObservation observed, s->Observe());
  EXPECT_EQ(observed.generation_rows, 0);
  EXPECT_EQ(observed.unflushed_rows, 0);
}

TEST_F(GenericStoreTest, AddBatchesNeedsTheStoreSchema) {
  ASSERT_OK_AND_ASSIGN(auto s, OpenGeneric());
  ASSERT_OK_AND_ASSIGN(RecordBatch good, EncodeJsonRows(s->schema(), R"({"id": "a"})"));
  auto other_spec = Spec(R"({"columns": [["id", {"type": "string", "nullable": false}],
                                         ["score", {"type": "float64"}]]})");
  ASSERT_OK_AND_ASSIGN(SchemaPtr other, other_spec.ToArrowSchema());
  ASSERT_OK_AND_ASSIGN(RecordBatch bad, EncodeJsonRows(other, R"({"id": "b"})"));
  EXPECT_EQ(s->AddBatches({good, bad}).status(),
            Status::InvalidArgument("record batch schema does not match the store schema"));
  ASSERT_OK(s->Flush().status());
  EXPECT_EQ(ListJson(*s), "");
  // Metadata does not matter.
  ASSERT_OK_AND_ASSIGN(RecordBatch plain,
                       RecordBatch::Make(good.schema()->WithMetadata({}), 1, good.columns()));
  ASSERT_OK(s->AddBatches({plain}).status());
  ASSERT_OK(s->Flush().status());
  EXPECT_EQ(ListJson(*s), "{\"id\":\"a\"}\n");
}

TEST_F(GenericStoreTest, MaintenanceSealsAndMergesAGenericStoreAndDeleteDataEndsIt) {
  MaintenanceOptions maintenance_options;
  maintenance_options.flush_interval_seconds = 0;  // passes run by hand below
  maintenance_options.cleanup_interval_seconds = 0;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Maintenance> maintenance,
                       Maintenance::Create(maintenance_options));
  GenericStoreOptions options = Options();
  options.base.maintenance = maintenance;
  options.base.display_name = "events";
  ASSERT_OK_AND_ASSIGN(auto s, GenericStore::Open(store_, prefix_, Spec(), options));
  ASSERT_OK(s->Add(R"([{"id": "a"}, {"id": "b"}])").status());
  EXPECT_EQ(Value(s->Count()), 0);  // deferred seal
  MaintenancePassReport flushed = maintenance->RunFlushPass();
  EXPECT_EQ(flushed.stores, 1);
  EXPECT_EQ(flushed.succeeded, 1);
  EXPECT_EQ(Value(s->Count()), 2);
  MaintenancePassReport cleaned = maintenance->RunCleanupPass();
  EXPECT_EQ(cleaned.generations_reclaimed, 1);
  EXPECT_EQ(Value(s->Count(ListSource::kFragments)), 2);

  ASSERT_OK(s->DeleteData());
  EXPECT_FALSE(Exists());
  EXPECT_FALSE(s->Add(R"([{"id": "c"}])").ok());
  // An add with no rows fails too: the handle is deleted, whatever the input.
  EXPECT_TRUE(s->Add("[]").status().IsNotFound()) << s->Add("[]").status();
  EXPECT_TRUE(s->Add("").status().IsNotFound());
  EXPECT_TRUE(s->AddBatches({}).status().IsNotFound());
  EXPECT_FALSE(s->List().ok());
  EXPECT_EQ(maintenance->RunFlushPass().stores, 0);  // a deleted store leaves the registry
  EXPECT_TRUE(GenericStore::OpenExisting(store_, prefix_, Options()).status().IsNotFound());
}

}  // namespace
}  // namespace strata::store
