// Tests of generations linked from the WAL: format 2 segments hard-linked into the
// generation table with deletion files for the rows that are not the memtable's, read
// exactly as a generation that rewrites its rows.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lsm/generation.h"
#include "lsm/key.h"
#include "lsm/layout.h"
#include "lsm/wal.h"
#include "strata/builder.h"
#include "strata/ipc.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::lsm {
namespace {

KeyValueMetadata PrimaryKey() { return KeyValueMetadata({{"strata:primary-key", "true"}}); }

SchemaPtr Shard() {
  return schema({field("id", utf8(), false, PrimaryKey()), field("step", int64(), false),
                 field("text", utf8())});
}

// Rows with keys "k<id>", `step` and a text that makes every version distinguishable.
RecordBatch Rows(const std::vector<int>& ids, int64_t step) {
  BinaryBuilder keys(utf8());
  Int64Builder steps(int64());
  BinaryBuilder texts(utf8());
  for (int id : ids) {
    EXPECT_TRUE(keys.Append("k" + std::to_string(id)).ok());
    steps.Append(step);
    if (id % 5 == 0) {
      texts.AppendNull();
    } else {
      EXPECT_TRUE(texts.Append(std::string(40 + id % 13, 'a' + id % 26)).ok());
    }
  }
  Result<RecordBatch> batch = RecordBatch::Make(Shard(), static_cast<int64_t>(ids.size()),
                                                {*keys.Finish(), *steps.Finish(), *texts.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

Result<RecordBatch> ScanAll(const table::Table& t, std::vector<std::string> columns = {}) {
  table::ScanOptions options;
  options.columns = std::move(columns);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it, t.Scan(options));
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, it->ToBatches());
  if (batches.empty()) return Status::NotFound("no rows");
  return ConcatenateBatches(batches);
}

class LinkedGenerationTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      dir_ = std::make_unique<strata::testing::TempDir>("linked-generation");
      LocalObjectStoreOptions options;
      options.sync = false;
      ASSERT_OK_AND_ASSIGN(store_, OpenLocalObjectStore(dir_->str(), options));
    } else {
      store_ = NewMemoryObjectStore();
    }
    WalWriterOptions options;
    options.max_segment_bytes = 4096;  // a few records per segment
    options.file_schema = Shard();
    ASSERT_OK_AND_ASSIGN(wal_, WalWriter::Open(store_, kPrefix, shard_, 1, 0, options));
  }

  // Appends `batches` as one WAL rows record and then to `mem`, as the shard writer does.
  void Put(MemTable& mem, const std::vector<RecordBatch>& batches) {
    ASSERT_OK_AND_ASSIGN(Buffer payload, ipc::WriteStreamToBuffer(Shard(), batches));
    Status appended_to_mem;
    ASSERT_OK(wal_->AppendView(WalRecordKind::kRows, payload.view(),
                               [&](const pb::WalPosition& end) {
                                 const auto start =
                                     static_cast<int64_t>(end.offset() - kWalHeaderSize -
                                                          payload.size() - kWalTrailerSize);
                                 for (const RecordBatch& b : batches) {
                                   Status st = mem.Append(b, false, end, start);
                                   if (appended_to_mem.ok()) appended_to_mem = st;
                                 }
                               })
                  .status());
    ASSERT_OK(appended_to_mem);
  }

  Result<std::shared_ptr<Generation>> Open(const pb::Generation& entry) {
    return Generation::Open(store_, kPrefix, shard_, entry, options_);
  }

  static constexpr const char* kPrefix = "db/";
  std::unique_ptr<strata::testing::TempDir> dir_;
  std::shared_ptr<ObjectStore> store_;
  Uuid shard_ = DeriveShardId("linked-generation-test");
  std::unique_ptr<WalWriter> wal_;
  table::TableOptions options_;
  ManualClock clock_{1'700'000'000'000'000};
};

// The rows of `mem` as WriteGeneration writes them, without the tombstone column.
Result<RecordBatch> Expected(const MemTable& mem) {
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> dedup, DedupMemTable(*mem.Snapshot()));
  STRATA_ASSIGN_OR_RETURN(RecordBatch all, ConcatenateBatches(dedup));
  return all.Project({0, 1, 2});
}

TEST_P(LinkedGenerationTest, ReadsExactlyLikeARewrittenGeneration) {
  auto mem = MemTable::Make(Shard(), 0);
  std::mt19937_64 rng(strata::testing::TestSeed());
  // Overwrites within the memtable, across batches and segments.
  for (int put = 0; put < 30; ++put) {
    std::vector<RecordBatch> batches;
    for (int b = 0; b < 1 + put % 3; ++b) {
      std::vector<int> ids;
      for (int r = 0; r < 3 + static_cast<int>(rng() % 6); ++r) {
        ids.push_back(static_cast<int>(rng() % 60));
      }
      batches.push_back(Rows(ids, put * 10 + b));
    }
    Put(*mem, batches);
  }
  ASSERT_OK(wal_->RollSegment().status());
  ASSERT_TRUE(CanLinkWal(*mem->Snapshot()));
  ASSERT_GT(mem->wal_end().segment(), 2u) << "the test wants several segments";

  ASSERT_OK_AND_ASSIGN(
      pb::Generation linked_entry,
      WriteLinkedGeneration(store_, kPrefix, shard_, 3, *mem->Snapshot(), options_, &clock_));
  ASSERT_OK_AND_ASSIGN(
      pb::Generation rewritten_entry,
      WriteGeneration(store_, kPrefix, shard_, 4, *mem->Snapshot(), options_, &clock_));
  EXPECT_EQ(linked_entry.rows(), rewritten_entry.rows());
  EXPECT_EQ(linked_entry.tombstones(), 0);
  EXPECT_EQ(linked_entry.generation(), 3u);
  EXPECT_EQ(linked_entry.sealed_at_micros(), 1'700'000'000'000'000);

  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> linked, Open(linked_entry));
  ASSERT_OK_AND_ASSIGN(RecordBatch expected, Expected(*mem));
  ASSERT_OK_AND_ASSIGN(RecordBatch scanned, ScanAll(*linked->table(), {"id", "step", "text"}));
  EXPECT_TRUE(scanned.Equals(expected)) << scanned.ToString() << "\nvs\n" << expected.ToString();
  // The tombstone column is not in the data files: it reads as null, never true.
  ASSERT_OK_AND_ASSIGN(RecordBatch tombstones,
                       ScanAll(*linked->table(), {std::string(kTombstoneColumn)}));
  EXPECT_EQ(tombstones.column(0).null_count(), tombstones.num_rows());

  // Every key is found through the key index (the newest version only) and the bloom filter.
  for (int64_t r = 0; r < expected.num_rows(); ++r) {
    const std::string key(expected.column(0).StringValue(r));
    ASSERT_OK_AND_ASSIGN(RecordBatch found,
                         linked->table()->LookupKeys({expr::Scalar::String(key)}));
    ASSERT_EQ(found.num_rows(), 1) << key;
    EXPECT_EQ(found.GetColumnByName("step").Value<int64_t>(0), expected.column(1).Value<int64_t>(r))
        << key;
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> encoded, EncodeKeys(found.column(0), "id"));
    EXPECT_TRUE(linked->MayContain(encoded[0])) << key;
  }
  ASSERT_OK_AND_ASSIGN(RecordBatch absent,
                       linked->table()->LookupKeys({expr::Scalar::String("k999")}));
  EXPECT_EQ(absent.num_rows(), 0);
  ASSERT_OK_AND_ASSIGN(table::VerifyReport report, linked->table()->Verify());
  EXPECT_TRUE(report.ok()) << report.problems.front();
}

TEST_P(LinkedGenerationTest, RowsOfNeighbouringMemtablesAreNotInTheGeneration) {
  // Three memtables share segments: each generation holds its own rows only.
  std::vector<std::shared_ptr<MemTable>> mems;
  int next_id = 0;
  for (int m = 0; m < 3; ++m) {
    mems.push_back(MemTable::Make(Shard(), 0));
    for (int put = 0; put < 4 + 3 * m; ++put) {
      std::vector<int> ids;
      for (int r = 0; r < 5; ++r) ids.push_back(next_id++);
      Put(*mems.back(), {Rows(ids, m)});
    }
  }
  ASSERT_OK(wal_->RollSegment().status());
  for (size_t m = 0; m < mems.size(); ++m) {
    ASSERT_OK_AND_ASSIGN(pb::Generation entry,
                         WriteLinkedGeneration(store_, kPrefix, shard_, m + 1, *mems[m]->Snapshot(),
                                               options_, &clock_));
    EXPECT_EQ(entry.rows(), mems[m]->rows());
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> gen, Open(entry));
    ASSERT_OK_AND_ASSIGN(RecordBatch expected, Expected(*mems[m]));
    ASSERT_OK_AND_ASSIGN(RecordBatch scanned, ScanAll(*gen->table(), {"id", "step", "text"}));
    EXPECT_TRUE(scanned.Equals(expected)) << "memtable " << m << ": " << scanned.ToString();
    // A key of the next memtable, in the same segment, is not found.
    if (m + 1 < mems.size()) {
      const std::string other(
          mems[m + 1]->Snapshot()->batches().front()->batch.column(0).StringValue(0));
      ASSERT_OK_AND_ASSIGN(RecordBatch found,
                           gen->table()->LookupKeys({expr::Scalar::String(other)}));
      EXPECT_EQ(found.num_rows(), 0) << other;
    }
  }
}

TEST_P(LinkedGenerationTest, TheGenerationOutlivesItsWalSegments) {
  auto mem = MemTable::Make(Shard(), 0);
  for (int put = 0; put < 12; ++put) Put(*mem, {Rows({put * 2, put * 2 + 1}, put)});
  ASSERT_OK(wal_->RollSegment().status());
  ASSERT_OK_AND_ASSIGN(
      pb::Generation entry,
      WriteLinkedGeneration(store_, kPrefix, shard_, 1, *mem->Snapshot(), options_, &clock_));
  const std::string dir = ShardDir(kPrefix, shard_) + entry.path();
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store_, kPrefix, shard_));
  ASSERT_FALSE(segments.empty());
  if (GetParam()) {
    // On a local store the data files are hard links of the segments: no bytes copied.
    const std::filesystem::path first = std::filesystem::path(dir_->str()) / segments.front().key;
    EXPECT_EQ(std::filesystem::hard_link_count(first), 2u) << first;
  }
  for (const WalSegment& segment : segments) ASSERT_OK(store_->Delete(segment.key));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> gen, Open(entry));
  ASSERT_OK_AND_ASSIGN(RecordBatch scanned, ScanAll(*gen->table(), {"id", "step", "text"}));
  ASSERT_OK_AND_ASSIGN(RecordBatch expected, Expected(*mem));
  EXPECT_TRUE(scanned.Equals(expected));
}

TEST_P(LinkedGenerationTest, OnlyMemtablesOfWalRowsWithoutTombstonesCanLink) {
  auto replayed = MemTable::Make(Shard(), 0);
  ASSERT_OK(replayed->Append(Rows({1}, 1), false, MakeWalPosition(1, 0, 100)));
  EXPECT_FALSE(CanLinkWal(*replayed->Snapshot()));  // no record offset: replayed rows
  Result<pb::Generation> refused =
      WriteLinkedGeneration(store_, kPrefix, shard_, 1, *replayed->Snapshot(), options_, &clock_);
  EXPECT_TRUE(refused.status().IsInvalidArgument()) << refused.status();

  auto with_delete = MemTable::Make(Shard(), 0);
  Put(*with_delete, {Rows({1, 2}, 1)});
  EXPECT_TRUE(CanLinkWal(*with_delete->Snapshot()));
  ASSERT_OK(with_delete->Append(Rows({2}, 2), true, MakeWalPosition(1, 0, 9000), 8000));
  EXPECT_FALSE(CanLinkWal(*with_delete->Snapshot()));
  EXPECT_FALSE(CanLinkWal(*MemTable::Make(Shard(), 0)->Snapshot()));  // empty
}

TEST_P(LinkedGenerationTest, ARecodedGenerationReadsLikeTheLinkedOneFromCompressedFiles) {
  auto mem = MemTable::Make(Shard(), 0);
  std::mt19937_64 rng(strata::testing::TestSeed());
  for (int put = 0; put < 30; ++put) {
    std::vector<int> ids;
    for (int r = 0; r < 3 + static_cast<int>(rng() % 6); ++r)
      ids.push_back(static_cast<int>(rng() % 80));
    Put(*mem, {Rows(ids, put)});
  }
  ASSERT_OK(wal_->RollSegment().status());
  ASSERT_OK_AND_ASSIGN(
      pb::Generation linked_entry,
      WriteLinkedGeneration(store_, kPrefix, shard_, 7, *mem->Snapshot(), options_, &clock_));
  *linked_entry.mutable_wal_end() = mem->wal_end();
  EXPECT_TRUE(linked_entry.linked());
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> linked, Open(linked_entry));

  table::TableOptions recode_options;
  recode_options.compression = ipc::Compression::kZstd;
  recode_options.max_rows_per_batch = 16;
  const std::string path = NewGenerationPath(7);
  ASSERT_OK_AND_ASSIGN(pb::Generation entry,
                       RecodeGeneration(store_, kPrefix, *linked, path, recode_options));
  // The same generation, at the new path, no longer linked.
  EXPECT_EQ(entry.path(), path);
  EXPECT_FALSE(entry.linked());
  EXPECT_EQ(entry.generation(), 7u);
  EXPECT_EQ(entry.rows(), linked_entry.rows());
  EXPECT_EQ(entry.tombstones(), 0);
  EXPECT_EQ(entry.sealed_at_micros(), linked_entry.sealed_at_micros());
  EXPECT_EQ(CompareWalPositions(entry.wal_end(), mem->wal_end()), 0);
  EXPECT_LT(entry.bytes(), linked_entry.bytes()) << "compressed, without the other memtables' rows";

  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> recoded, Open(entry));
  ASSERT_OK_AND_ASSIGN(RecordBatch expected, Expected(*mem));
  ASSERT_OK_AND_ASSIGN(RecordBatch scanned, ScanAll(*recoded->table(), {"id", "step", "text"}));
  EXPECT_TRUE(scanned.Equals(expected)) << scanned.ToString() << "\nvs\n" << expected.ToString();
  // The tombstone column is written now, false for every row.
  ASSERT_OK_AND_ASSIGN(RecordBatch tombstones,
                       ScanAll(*recoded->table(), {std::string(kTombstoneColumn)}));
  EXPECT_EQ(tombstones.column(0).null_count(), 0);
  for (int64_t r = 0; r < tombstones.num_rows(); ++r)
    EXPECT_FALSE(tombstones.column(0).BoolValue(r));
  // Keys through the new key index and the copied bloom filter.
  for (int64_t r = 0; r < expected.num_rows(); ++r) {
    const std::string key(expected.column(0).StringValue(r));
    ASSERT_OK_AND_ASSIGN(RecordBatch found,
                         recoded->table()->LookupKeys({expr::Scalar::String(key)}));
    ASSERT_EQ(found.num_rows(), 1) << key;
    EXPECT_EQ(found.GetColumnByName("step").Value<int64_t>(0),
              expected.column(1).Value<int64_t>(r));
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> encoded, EncodeKeys(found.column(0), "id"));
    EXPECT_TRUE(recoded->MayContain(encoded[0])) << key;
  }
  ASSERT_OK_AND_ASSIGN(table::VerifyReport report, recoded->table()->Verify());
  EXPECT_TRUE(report.ok()) << report.problems.front();
  // Its data files are its own, none of them a WAL segment.
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> files,
                       store_->List(ShardDir(kPrefix, shard_) + path + "data/"));
  ASSERT_FALSE(files.empty());
  for (const ObjectMeta& file : files)
    EXPECT_EQ(file.key.find("/data/wal-"), std::string::npos) << file.key;
  // The linked generation is untouched (readers may still be on it).
  ASSERT_OK_AND_ASSIGN(RecordBatch again, ScanAll(*linked->table(), {"id", "step", "text"}));
  EXPECT_TRUE(again.Equals(expected));
}

TEST_P(LinkedGenerationTest, ARecodeStopsWhenCancelledAndRefusesAPathOfAnotherGeneration) {
  auto mem = MemTable::Make(Shard(), 0);
  for (int put = 0; put < 12; ++put) Put(*mem, {Rows({put * 2, put * 2 + 1}, put)});
  ASSERT_OK(wal_->RollSegment().status());
  ASSERT_OK_AND_ASSIGN(
      pb::Generation linked_entry,
      WriteLinkedGeneration(store_, kPrefix, shard_, 2, *mem->Snapshot(), options_, &clock_));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> linked, Open(linked_entry));
  Result<pb::Generation> wrong_path =
      RecodeGeneration(store_, kPrefix, *linked, NewGenerationPath(3), options_);
  EXPECT_TRUE(wrong_path.status().IsInvalidArgument()) << wrong_path.status();
  Result<pb::Generation> cancelled = RecodeGeneration(
      store_, kPrefix, *linked, NewGenerationPath(2), options_, [] { return true; });
  EXPECT_TRUE(cancelled.status().IsAborted()) << cancelled.status();
}

INSTANTIATE_TEST_SUITE_P(Stores, LinkedGenerationTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Local") : std::string("Memory");
                         });

}  // namespace
}  // namespace strata::lsm
