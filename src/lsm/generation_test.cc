// Tests of generations: the generation schema, de-duplication of a memtable snapshot,
// writing and opening generation tables with their bloom filters, and the generation cache.
#include "lsm/generation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "lsm/key.h"
#include "lsm/layout.h"
#include "strata/builder.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::lsm {
namespace {

KeyValueMetadata PrimaryKey() { return KeyValueMetadata({{"strata:primary-key", "true"}}); }

// id int64 (key), name utf8 (non-null in the shard), score float64.
SchemaPtr IntShard() {
  return schema({field("id", int64(), false, PrimaryKey()), field("name", utf8(), false),
                 field("score", float64())});
}

RecordBatch IntRows(const std::vector<int64_t>& ids, double score) {
  Int64Builder id_builder(int64());
  BinaryBuilder names(utf8());
  Float64Builder scores(float64());
  for (int64_t id : ids) {
    id_builder.Append(id);
    EXPECT_TRUE(names.Append("n" + std::to_string(id) + "@" + std::to_string(score)).ok());
    scores.Append(score);
  }
  const auto n = static_cast<int64_t>(ids.size());
  Result<RecordBatch> batch =
      RecordBatch::Make(IntShard(), n, {*id_builder.Finish(), *names.Finish(), *scores.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// Tombstone batches use the shard's columns with nullable non-key fields (the shard schema
// makes `name` non-null, so its tombstones carry it as a nullable column of the same type).
RecordBatch IntTombstones(const std::vector<int64_t>& ids) {
  Int64Builder id_builder(int64());
  for (int64_t id : ids) id_builder.Append(id);
  const auto n = static_cast<int64_t>(ids.size());
  SchemaPtr s = schema({field("id", int64(), false, PrimaryKey()), field("name", utf8()),
                        field("score", float64())});
  Result<RecordBatch> batch = RecordBatch::Make(
      s, n, {*id_builder.Finish(), Array::MakeNull(utf8(), n), Array::MakeNull(float64(), n)});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

SchemaPtr StringShard() {
  return schema({field("k", utf8(), false, PrimaryKey()), field("v", int64())});
}

RecordBatch StringRows(const std::vector<std::string>& keys, int64_t value) {
  BinaryBuilder key_builder(utf8());
  Int64Builder values(int64());
  for (const std::string& k : keys) {
    EXPECT_TRUE(key_builder.Append(k).ok());
    values.Append(value);
  }
  Result<RecordBatch> batch = RecordBatch::Make(StringShard(), static_cast<int64_t>(keys.size()),
                                                {*key_builder.Finish(), *values.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

pb::WalPosition Pos(uint64_t offset) { return MakeWalPosition(1, 0, offset); }

Result<RecordBatch> Concat(const std::vector<RecordBatch>& batches) {
  if (batches.empty()) return Status::InvalidArgument("no batches");
  return ConcatenateBatches(batches);
}

Result<RecordBatch> ScanAll(const table::Table& t) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it, t.Scan());
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, it->ToBatches());
  return Concat(batches);
}

std::vector<int64_t> Ints(const Array& a) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < a.length(); ++i) out.push_back(a.IsNull(i) ? -1 : a.Value<int64_t>(i));
  return out;
}

std::vector<bool> Bools(const Array& a) {
  std::vector<bool> out;
  for (int64_t i = 0; i < a.length(); ++i) out.push_back(a.BoolValue(i));
  return out;
}

// A memtable where: key 1 is deleted last (tombstone newest), key 3 is deleted and then
// written again (tombstone older), key 2 and 4 are overwritten, key 5 is written once.
std::shared_ptr<MemTable> MixedMemTable() {
  auto mem = MemTable::Make(IntShard(), 0);
  EXPECT_TRUE(mem->Append(IntRows({1, 2, 3, 5}, 0), false, Pos(1)).ok());
  EXPECT_TRUE(mem->Append(IntRows({2, 4}, 1), false, Pos(2)).ok());
  EXPECT_TRUE(mem->Append(IntTombstones({1, 3}), true, Pos(3)).ok());
  EXPECT_TRUE(mem->Append(IntRows({4, 3}, 3), false, Pos(4)).ok());
  return mem;
}

TEST(GenerationTest, SchemaMakesNonKeyColumnsNullableAndAddsTombstoneColumn) {
  SchemaPtr g = GenerationSchema(*IntShard(), 0);
  ASSERT_EQ(g->num_fields(), 4);
  EXPECT_EQ(g->field(0)->name(), "id");
  EXPECT_FALSE(g->field(0)->nullable());
  EXPECT_EQ(g->field(0)->metadata().Get(table::kPrimaryKeyMetadata), "true");
  EXPECT_TRUE(g->field(1)->nullable());
  EXPECT_TRUE(g->field(2)->nullable());
  EXPECT_EQ(g->field(3)->name(), kTombstoneColumn);
  EXPECT_TRUE(g->field(3)->type()->Equals(*boolean()));
  EXPECT_TRUE(g->field(3)->nullable());  // null in linked generations
}

TEST(GenerationTest, DedupKeepsNewestRowPerKeyInAppendOrder) {
  auto mem = MixedMemTable();
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches, DedupMemTable(*mem->Snapshot()));
  ASSERT_OK_AND_ASSIGN(RecordBatch all, Concat(batches));
  EXPECT_TRUE(all.schema()->Equals(*GenerationSchema(*IntShard(), 0)));
  // Survivors in append order: 5 (batch 0), 2 (batch 1), tombstone 1 (batch 2), 4 and 3
  // (batch 3). The tombstone of 1 is newest and wins; the one of 3 is older and loses.
  EXPECT_EQ(Ints(all.column(0)), (std::vector<int64_t>{5, 2, 1, 4, 3}));
  EXPECT_EQ(Bools(all.column(3)), (std::vector<bool>{false, false, true, false, false}));
  const Array& names = all.column(1);
  EXPECT_EQ(names.StringValue(1), "n2@1.000000");
  EXPECT_TRUE(names.IsNull(2));
  EXPECT_TRUE(all.column(2).IsNull(2));
  EXPECT_EQ(all.column(2).Value<double>(3), 3.0);
  EXPECT_EQ(all.column(2).Value<double>(0), 0.0);
}

TEST(GenerationTest, DedupAnswersForTheSnapshotNotLaterAppends) {
  auto mem = MemTable::Make(IntShard(), 0);
  ASSERT_OK(mem->Append(IntRows({1, 2}, 0), false, Pos(1)));
  auto snap = mem->Snapshot();
  ASSERT_OK(mem->Append(IntTombstones({1}), true, Pos(2)));
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches, DedupMemTable(*snap));
  ASSERT_OK_AND_ASSIGN(RecordBatch all, Concat(batches));
  EXPECT_EQ(Ints(all.column(0)), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Bools(all.column(3)), (std::vector<bool>{false, false}));
}

TEST(GenerationTest, KeysSharingALongPrefixAreNotMerged) {
  // Two keys identical in their first 200 bytes (so any 64-bit prefix hash would agree).
  const std::string prefix(200, 'x');
  auto mem = MemTable::Make(StringShard(), 0);
  ASSERT_OK(mem->Append(StringRows({prefix + "a", prefix + "b"}, 1), false, Pos(1)));
  ASSERT_OK(mem->Append(StringRows({prefix + "b"}, 2), false, Pos(2)));
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches, DedupMemTable(*mem->Snapshot()));
  ASSERT_OK_AND_ASSIGN(RecordBatch all, Concat(batches));
  ASSERT_EQ(all.num_rows(), 2);
  EXPECT_EQ(all.column(0).StringValue(0), prefix + "a");
  EXPECT_EQ(all.column(1).Value<int64_t>(0), 1);
  EXPECT_EQ(all.column(0).StringValue(1), prefix + "b");
  EXPECT_EQ(all.column(1).Value<int64_t>(1), 2);
}

class GenerationStoreTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      dir_ = std::make_unique<strata::testing::TempDir>("generation");
      LocalObjectStoreOptions options;
      options.sync = false;
      ASSERT_OK_AND_ASSIGN(store_, OpenLocalObjectStore(dir_->str(), options));
    } else {
      store_ = NewMemoryObjectStore();
    }
  }

  Result<pb::Generation> Write(const MemTable& mem, uint64_t generation) {
    return WriteGeneration(store_, kPrefix, shard_, generation, *mem.Snapshot(), options_, &clock_);
  }

  static constexpr const char* kPrefix = "db/";
  std::unique_ptr<strata::testing::TempDir> dir_;
  std::shared_ptr<ObjectStore> store_;
  Uuid shard_ = DeriveShardId("generation-test");
  table::TableOptions options_;
  ManualClock clock_{1'700'000'000'000'000};
};

TEST_P(GenerationStoreTest, WriteGenerationRoundTripsThroughOpenAndScan) {
  auto mem = MixedMemTable();
  ASSERT_OK_AND_ASSIGN(pb::Generation entry, Write(*mem, 7));
  EXPECT_EQ(entry.generation(), 7u);
  EXPECT_EQ(entry.path().rfind("gen/00000000000000000007-", 0), 0u) << entry.path();
  EXPECT_EQ(entry.rows(), 5);
  EXPECT_EQ(entry.tombstones(), 1);
  EXPECT_EQ(entry.sealed_at_micros(), 1'700'000'000'000'000);
  const std::string dir = ShardDir(kPrefix, shard_) + entry.path();
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> objects, store_->List(dir));
  int64_t bytes = 0;
  bool has_bloom = false;
  for (const ObjectMeta& o : objects) {
    bytes += o.size;
    has_bloom = has_bloom || o.key == dir + std::string(kBloomObject);
  }
  EXPECT_TRUE(has_bloom);
  EXPECT_GT(entry.bytes(), 0);
  EXPECT_EQ(entry.bytes(), bytes);

  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> gen,
                       Generation::Open(store_, kPrefix, shard_, entry, options_));
  EXPECT_EQ(gen->shard(), shard_);
  EXPECT_EQ(gen->entry().path(), entry.path());
  EXPECT_EQ(gen->table()->primary_key_column(), std::optional<int>(0));
  ASSERT_OK_AND_ASSIGN(RecordBatch scanned, ScanAll(*gen->table()));
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> dedup, DedupMemTable(*mem->Snapshot()));
  ASSERT_OK_AND_ASSIGN(RecordBatch expected, Concat(dedup));
  EXPECT_TRUE(scanned.Equals(expected)) << scanned.ToString() << "\nvs\n" << expected.ToString();

  // The key index of the generation table finds a row by key.
  ASSERT_OK_AND_ASSIGN(RecordBatch found, gen->table()->LookupKeys({expr::Scalar::Int64(4)}));
  ASSERT_EQ(found.num_rows(), 1);
  EXPECT_EQ(found.GetColumnByName("score").Value<double>(0), 3.0);
}

TEST_P(GenerationStoreTest, BloomHasNoFalseNegativesForWrittenKeys) {
  auto mem = MemTable::Make(IntShard(), 0);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 500; ++i) ids.push_back(i * 7919);
  ASSERT_OK(mem->Append(IntRows(ids, 1), false, Pos(1)));
  ASSERT_OK(mem->Append(IntTombstones({-1, -2}), true, Pos(2)));
  ASSERT_OK_AND_ASSIGN(pb::Generation entry, Write(*mem, 1));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> gen,
                       Generation::Open(store_, kPrefix, shard_, entry, options_));
  ids.push_back(-1);
  ids.push_back(-2);
  Int64Builder b(int64());
  for (int64_t id : ids) b.Append(id);
  ASSERT_OK_AND_ASSIGN(Array keys, b.Finish());
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> encoded, EncodeKeys(keys, "id"));
  for (size_t i = 0; i < encoded.size(); ++i) {
    EXPECT_TRUE(gen->MayContain(encoded[i])) << "id " << ids[i];
  }
  // Most absent keys are rejected (~1% false positives expected at 10 bits per key).
  Int64Builder absent(int64());
  for (int64_t i = 1; i <= 1000; ++i) absent.Append(i * 7919 + 1);
  ASSERT_OK_AND_ASSIGN(Array absent_keys, absent.Finish());
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> absent_encoded, EncodeKeys(absent_keys, "id"));
  int positives = 0;
  for (const std::string& k : absent_encoded) positives += gen->MayContain(k) ? 1 : 0;
  EXPECT_LT(positives, 100);
}

TEST_P(GenerationStoreTest, EmptySnapshotIsInvalidArgument) {
  auto mem = MemTable::Make(IntShard(), 0);
  Result<pb::Generation> entry = Write(*mem, 1);
  EXPECT_TRUE(entry.status().IsInvalidArgument()) << entry.status();
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> objects, store_->List(kPrefix));
  EXPECT_TRUE(objects.empty());
}

TEST_P(GenerationStoreTest, OpenOfDeletedGenerationIsNotFound) {
  auto mem = MixedMemTable();
  ASSERT_OK_AND_ASSIGN(pb::Generation entry, Write(*mem, 2));
  const std::string dir = ShardDir(kPrefix, shard_) + entry.path();
  // Bloom filter gone alone...
  ASSERT_OK(store_->Delete(dir + std::string(kBloomObject)));
  Result<std::shared_ptr<Generation>> opened =
      Generation::Open(store_, kPrefix, shard_, entry, options_);
  EXPECT_TRUE(opened.status().IsNotFound()) << opened.status();
  // ... and everything gone.
  ASSERT_OK_AND_ASSIGN(int64_t removed, store_->DeletePrefix(dir));
  EXPECT_GT(removed, 0);
  opened = Generation::Open(store_, kPrefix, shard_, entry, options_);
  EXPECT_TRUE(opened.status().IsNotFound()) << opened.status();
}

TEST_P(GenerationStoreTest, OpenOfAGenerationMissingItsNewestManifestIsCorruption) {
  auto mem = MixedMemTable();
  ASSERT_OK_AND_ASSIGN(pb::Generation entry, Write(*mem, 3));
  const std::string dir = ShardDir(kPrefix, shard_) + entry.path();
  // Without its newest manifest the generation table opens at an older version, which does
  // not hold the rows the shard manifest recorded.
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> manifests, store_->List(dir + "_versions/"));
  ASSERT_GE(manifests.size(), 2u);
  ASSERT_OK(store_->Delete(manifests.back().key));
  Result<std::shared_ptr<Generation>> opened =
      Generation::Open(store_, kPrefix, shard_, entry, options_);
  EXPECT_TRUE(opened.status().IsCorruption()) << opened.status();
  EXPECT_THAT(opened.status().message(), ::testing::HasSubstr(entry.path()));
  EXPECT_THAT(opened.status().message(), ::testing::HasSubstr("records 5"));
}

TEST_P(GenerationStoreTest, CacheSharesOpenedGenerationsAndReopensAfterForget) {
  auto mem = MixedMemTable();
  ASSERT_OK_AND_ASSIGN(pb::Generation a, Write(*mem, 1));
  ASSERT_OK_AND_ASSIGN(pb::Generation b, Write(*mem, 2));
  GenerationCache cache(store_, kPrefix, options_, /*capacity=*/2);

  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> a1, cache.Get(shard_, a));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> a2, cache.Get(shard_, a));
  EXPECT_EQ(a1.get(), a2.get());
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> b1, cache.Get(shard_, b));
  EXPECT_NE(a1.get(), b1.get());
  EXPECT_EQ(b1->entry().generation(), 2u);

  cache.Forget(shard_, a.path());
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> a3, cache.Get(shard_, a));
  EXPECT_NE(a3.get(), a1.get());
  ASSERT_OK_AND_ASSIGN(RecordBatch rows, ScanAll(*a3->table()));
  EXPECT_EQ(rows.num_rows(), 5);

  // Forgotten and deleted: the cache does not hand out the stale object.
  ASSERT_OK(store_->DeletePrefix(ShardDir(kPrefix, shard_) + b.path()).status());
  cache.Forget(shard_, b.path());
  Result<std::shared_ptr<Generation>> gone = cache.Get(shard_, b);
  EXPECT_TRUE(gone.status().IsNotFound()) << gone.status();
}

TEST_P(GenerationStoreTest, CacheDropsLeastRecentlyUsedBeyondCapacity) {
  auto mem = MixedMemTable();
  ASSERT_OK_AND_ASSIGN(pb::Generation a, Write(*mem, 1));
  ASSERT_OK_AND_ASSIGN(pb::Generation b, Write(*mem, 2));
  ASSERT_OK_AND_ASSIGN(pb::Generation c, Write(*mem, 3));
  GenerationCache cache(store_, kPrefix, options_, /*capacity=*/2);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> a1, cache.Get(shard_, a));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> b1, cache.Get(shard_, b));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> a2, cache.Get(shard_, a));  // a is newest
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> c1, cache.Get(shard_, c));  // drops b
  EXPECT_EQ(a1.get(), a2.get());
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> a3, cache.Get(shard_, a));
  EXPECT_EQ(a1.get(), a3.get());
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> b2, cache.Get(shard_, b));
  EXPECT_NE(b1.get(), b2.get());
}

INSTANTIATE_TEST_SUITE_P(Stores, GenerationStoreTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Local") : std::string("Memory");
                         });

}  // namespace
}  // namespace strata::lsm
