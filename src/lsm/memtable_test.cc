// Tests of the memtable: newest-row lookups, snapshot cutoffs, accounting, input checks and
// one appender racing many readers.
#include "lsm/memtable.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "lsm/key.h"
#include "lsm/layout.h"
#include "strata/builder.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::lsm {
namespace {

KeyValueMetadata PrimaryKey() { return KeyValueMetadata({{"strata:primary-key", "true"}}); }

// id int64 (key), name utf8, score float64.
SchemaPtr ShardSchema() {
  return schema({field("id", int64(), false, PrimaryKey()), field("name", utf8()),
                 field("score", float64())});
}

// One row per id; score = `version` for every row, name "v<version>".
RecordBatch Rows(const std::vector<int64_t>& ids, double version,
                 const SchemaPtr& s = ShardSchema()) {
  Int64Builder id_builder(int64());
  BinaryBuilder names(utf8());
  Float64Builder scores(float64());
  for (int64_t id : ids) {
    id_builder.Append(id);
    EXPECT_TRUE(names.Append("v" + std::to_string(static_cast<int64_t>(version))).ok());
    scores.Append(version);
  }
  Result<RecordBatch> batch =
      RecordBatch::Make(s, static_cast<int64_t>(ids.size()),
                        {*id_builder.Finish(), *names.Finish(), *scores.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// Tombstones for `ids`: key column set, the others null.
RecordBatch Tombstones(const std::vector<int64_t>& ids) {
  Int64Builder id_builder(int64());
  for (int64_t id : ids) id_builder.Append(id);
  const auto n = static_cast<int64_t>(ids.size());
  Result<RecordBatch> batch = RecordBatch::Make(
      ShardSchema(), n,
      {*id_builder.Finish(), Array::MakeNull(utf8(), n), Array::MakeNull(float64(), n)});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

std::string Key(int64_t id) {
  Int64Builder b(int64());
  b.Append(id);
  Result<std::vector<std::string>> keys = EncodeKeys(*b.Finish(), "id");
  EXPECT_TRUE(keys.ok()) << keys.status();
  return keys.ok() ? keys->at(0) : std::string();
}

// The id and score of a referenced row.
std::pair<int64_t, double> RowAt(const MemTableSnapshot& snapshot, MemRowRef ref) {
  const RecordBatch& batch = snapshot.batches().at(ref.batch)->batch;
  return {batch.column(0).Value<int64_t>(ref.row), batch.column(2).Value<double>(ref.row)};
}

int64_t BufferBytes(const RecordBatch& batch) {
  int64_t bytes = 0;
  for (const Array& column : batch.columns()) {
    for (const Buffer& buffer : column.data()->buffers) bytes += buffer.size();
  }
  return bytes;
}

TEST(MemTableTest, LookupReturnsNewestRowOfKey) {
  auto mem = MemTable::Make(ShardSchema(), 0);
  ASSERT_OK(mem->Append(Rows({1, 2, 3}, 0), false, MakeWalPosition(1, 0, 10)));
  ASSERT_OK(mem->Append(Rows({2, 4, 2}, 1), false, MakeWalPosition(1, 0, 20)));
  auto snap = mem->Snapshot();

  std::optional<MemRowRef> r2 = snap->Lookup(Key(2));
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(r2->batch, 1u);
  EXPECT_EQ(r2->row, 2u);  // the later of the two rows of key 2 in batch 1
  std::optional<MemRowRef> r1 = snap->Lookup(Key(1));
  ASSERT_TRUE(r1.has_value());
  EXPECT_EQ(RowAt(*snap, *r1), std::make_pair(int64_t{1}, 0.0));
  EXPECT_FALSE(snap->Lookup(Key(99)).has_value());
}

TEST(MemTableTest, SnapshotLookupAnswersForItsCutoffAfterLaterAppends) {
  auto mem = MemTable::Make(ShardSchema(), 0);
  ASSERT_OK(mem->Append(Rows({1, 2, 3}, 0), false, MakeWalPosition(1, 0, 10)));
  ASSERT_OK(mem->Append(Rows({2}, 1), false, MakeWalPosition(1, 0, 20)));
  auto old_snap = mem->Snapshot();
  ASSERT_OK(mem->Append(Rows({2, 5}, 2), false, MakeWalPosition(1, 0, 30)));
  ASSERT_OK(mem->Append(Tombstones({1}), true, MakeWalPosition(1, 0, 40)));
  auto new_snap = mem->Snapshot();

  // Key 2's newest row is in batch 2, past the old snapshot: it sees batch 1's.
  std::optional<MemRowRef> old2 = old_snap->Lookup(Key(2));
  ASSERT_TRUE(old2.has_value());
  EXPECT_EQ(RowAt(*old_snap, *old2), std::make_pair(int64_t{2}, 1.0));
  std::optional<MemRowRef> new2 = new_snap->Lookup(Key(2));
  ASSERT_TRUE(new2.has_value());
  EXPECT_EQ(RowAt(*new_snap, *new2), std::make_pair(int64_t{2}, 2.0));

  // Key 5 did not exist at the old cutoff.
  EXPECT_FALSE(old_snap->Lookup(Key(5)).has_value());
  EXPECT_TRUE(new_snap->Lookup(Key(5)).has_value());

  // Key 1: a row in the old snapshot, a tombstone (which counts) in the new one.
  std::optional<MemRowRef> old1 = old_snap->Lookup(Key(1));
  ASSERT_TRUE(old1.has_value());
  EXPECT_FALSE(old_snap->batches()[old1->batch]->tombstone);
  std::optional<MemRowRef> new1 = new_snap->Lookup(Key(1));
  ASSERT_TRUE(new1.has_value());
  EXPECT_EQ(new1->batch, 3u);
  EXPECT_TRUE(new_snap->batches()[new1->batch]->tombstone);
}

TEST(MemTableTest, SnapshotIsUnaffectedByLaterAppends) {
  auto mem = MemTable::Make(ShardSchema(), 0);
  ASSERT_OK(mem->Append(Rows({1, 2}, 0), false, MakeWalPosition(1, 0, 10)));
  auto snap = mem->Snapshot();
  const MemTableBatch* first = snap->batches()[0].get();
  for (int i = 1; i <= 20; ++i) {
    ASSERT_OK(mem->Append(Rows({1, 2, 3}, i), false, MakeWalPosition(1, 0, 10 + i)));
  }
  EXPECT_EQ(snap->batches().size(), 1u);
  EXPECT_EQ(snap->rows(), 2);
  EXPECT_EQ(snap->batches()[0].get(), first);  // shared, not copied
  EXPECT_EQ(snap->batches()[0]->batch.num_rows(), 2);
  EXPECT_EQ(snap->schema(), mem->schema());
  EXPECT_EQ(snap->key_column(), 0);
  EXPECT_EQ(mem->rows(), 2 + 20 * 3);
  EXPECT_EQ(mem->Snapshot()->batches().size(), 21u);
  EXPECT_EQ(mem->Snapshot()->batches()[0].get(), first);
}

TEST(MemTableTest, CountsRowsBytesAndWalEnd) {
  auto mem = MemTable::Make(ShardSchema(), 0);
  EXPECT_TRUE(mem->empty());
  EXPECT_EQ(mem->bytes(), 0);
  EXPECT_EQ(CompareWalPositions(mem->wal_end(), pb::WalPosition()), 0);

  RecordBatch a = Rows({1, 2, 3, 4}, 0);
  RecordBatch b = Tombstones({7, 8});
  ASSERT_OK(mem->Append(a, false, MakeWalPosition(2, 1, 100)));
  ASSERT_OK(mem->Append(b, true, MakeWalPosition(2, 3, 50)));
  EXPECT_FALSE(mem->empty());
  EXPECT_EQ(mem->rows(), 6);
  EXPECT_EQ(mem->bytes(), BufferBytes(a) + BufferBytes(b));
  EXPECT_GE(mem->bytes(), 4 * 8 + 4 * 8 + 2 * 8);  // at least the id and score values
  EXPECT_EQ(CompareWalPositions(mem->wal_end(), MakeWalPosition(2, 3, 50)), 0);
  auto snap = mem->Snapshot();
  EXPECT_EQ(snap->rows(), 6);
  EXPECT_EQ(snap->batches()[0]->keys.size(), 4u);
  EXPECT_EQ(snap->batches()[0]->keys[2], Key(3));
  EXPECT_TRUE(snap->batches()[1]->tombstone);
}

TEST(MemTableTest, NullKeyIsInvalidArgumentAndAppendsNothing) {
  // A schema whose key column admits nulls, so such a batch can be built at all.
  SchemaPtr s =
      schema({field("id", int64(), true), field("name", utf8()), field("score", float64())});
  auto mem = MemTable::Make(s, 0);
  ASSERT_OK(mem->Append(Rows({1}, 0, s), false, MakeWalPosition(1, 0, 10)));

  Int64Builder ids(int64());
  ids.Append(5);
  ids.AppendNull();
  ASSERT_OK_AND_ASSIGN(
      RecordBatch bad,
      RecordBatch::Make(
          s, 2, {*ids.Finish(), Array::MakeNull(utf8(), 2), Array::MakeNull(float64(), 2)}));
  Status st = mem->Append(bad, false, MakeWalPosition(1, 0, 20));
  EXPECT_TRUE(st.IsInvalidArgument()) << st;
  EXPECT_EQ(mem->rows(), 1);
  EXPECT_EQ(mem->Snapshot()->batches().size(), 1u);
  EXPECT_FALSE(mem->Snapshot()->Lookup(Key(5)).has_value());
  EXPECT_EQ(CompareWalPositions(mem->wal_end(), MakeWalPosition(1, 0, 10)), 0);
}

TEST(MemTableTest, BatchOfAnotherSchemaIsInvalidArgument) {
  auto mem = MemTable::Make(ShardSchema(), 0);
  SchemaPtr other =
      schema({field("id", int64(), false), field("other", utf8()), field("score", float64())});
  Status st = mem->Append(Rows({1}, 0, other), false, MakeWalPosition(1, 0, 10));
  EXPECT_TRUE(st.IsInvalidArgument()) << st;
  EXPECT_TRUE(mem->empty());
}

// Batch j holds key k unless (k + j) % 3 == 0, with score j. The newest row of k among the
// first n batches is the largest such j < n.
bool BatchHasKey(int64_t j, int64_t k) { return (k + j) % 3 != 0; }

TEST(MemTableTest, ConcurrentReadersSeeConsistentRowsWhileOneThreadAppends) {
  const unsigned long long seed = strata::testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int64_t kKeys = 24;
  const int64_t kBatches = 200 * strata::testing::StressScale();
  auto mem = MemTable::Make(ShardSchema(), 0);

  std::atomic<bool> done{false};
  std::atomic<int64_t> failures{0};
  std::atomic<int64_t> checks{0};
  auto reader = [&](uint64_t reader_seed) {
    std::mt19937_64 rng(reader_seed);
    std::shared_ptr<const MemTableSnapshot> snap;
    while (true) {
      const bool finished = done.load();
      // Keep some snapshots across later appends so lookups take the older-rows path.
      if (snap == nullptr || rng() % 4 == 0) snap = mem->Snapshot();
      const auto n = static_cast<int64_t>(snap->batches().size());
      int64_t rows = 0;
      for (const auto& b : snap->batches()) rows += b->batch.num_rows();
      if (rows != snap->rows()) failures.fetch_add(1);
      for (int i = 0; i < 8; ++i) {
        const auto k = static_cast<int64_t>(rng() % kKeys);
        int64_t want = -1;
        for (int64_t j = n - 1; j >= 0; --j) {
          if (BatchHasKey(j, k)) {
            want = j;
            break;
          }
        }
        std::optional<MemRowRef> ref = snap->Lookup(Key(k));
        if (want < 0) {
          if (ref.has_value()) failures.fetch_add(1);
          continue;
        }
        if (!ref.has_value() || static_cast<int64_t>(ref->batch) != want ||
            RowAt(*snap, *ref) != std::make_pair(k, static_cast<double>(want))) {
          failures.fetch_add(1);
        }
        checks.fetch_add(1);
      }
      if (finished) break;
    }
  };
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) readers.emplace_back(reader, seed + static_cast<uint64_t>(r));
  for (int64_t j = 0; j < kBatches; ++j) {
    std::vector<int64_t> ids;
    for (int64_t k = 0; k < kKeys; ++k) {
      if (BatchHasKey(j, k)) ids.push_back(k);
    }
    ASSERT_OK(mem->Append(Rows(ids, static_cast<double>(j)), false,
                          MakeWalPosition(1, 0, static_cast<uint64_t>(j + 1))));
  }
  done.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(checks.load(), 0);
  EXPECT_EQ(mem->Snapshot()->batches().size(), static_cast<size_t>(kBatches));
}

}  // namespace
}  // namespace strata::lsm
