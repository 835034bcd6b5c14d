// Reads: filters (with and without statistics pruning or the key index) against an oracle,
// projections, offset/limit, row addresses and Take, CountRows and LookupKeys.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "strata/expr.h"
#include "strata/table.h"
#include "support/temp_dir.h"
#include "table/commit.h"
#include "table/data_file.h"
#include "table/table_internal.h"
#include "table/table_test_util.h"

namespace strata::table {
namespace {

using testing_util::Int64Column;
using testing_util::KeyedRows;
using testing_util::KeyedSchema;
using testing_util::ReadAll;
using testing_util::UInt64Column;

// Flips a byte in each piece of batch `batch` of fragment `fragment`'s data file, so reading that
// batch (and only that batch: regions are verified when first read) fails with Corruption.
Status CorruptBatch(ObjectStore& store, const std::string& prefix, uint64_t version, int fragment,
                    int batch) {
  STRATA_ASSIGN_OR_RETURN(internal::SnapshotPtr snapshot,
                          internal::LoadVersion(store, prefix, version));
  const pb::DataFile& file = snapshot->manifest.fragments(fragment).files(0);
  const pb::BatchInfo& info = file.batches(batch);
  const pb::Region& region = info.region();
  STRATA_ASSIGN_OR_RETURN(Buffer data, store.Get(prefix + file.path()));
  std::string bytes(reinterpret_cast<const char*>(data.data()), data.size());
  // A byte in every piece (each column's and the message's), so any projection meets one.
  int64_t from = 0;
  for (int p = 0; p <= info.piece_starts_size(); ++p) {
    const int64_t to = p < info.piece_starts_size() ? info.piece_starts(p) : region.length();
    if (to > from) bytes[region.offset() + (from + to) / 2] ^= 0x5a;
    from = to;
  }
  return store.Put(prefix + file.path(), bytes);
}

// The oracle: rows of `data` where `filter` is TRUE, evaluated directly.
RecordBatch Expected(const RecordBatch& data, const std::string& filter) {
  Result<expr::BoundExpr> bound = expr::ParseAndBind(filter, data.schema());
  EXPECT_TRUE(bound.ok()) << bound.status();
  Result<std::vector<int64_t>> rows = expr::Select(*bound, data);
  EXPECT_TRUE(rows.ok()) << rows.status();
  std::vector<Array> columns;
  for (const Array& column : data.columns()) columns.push_back(*Take(column, *rows));
  return *RecordBatch::Make(data.schema(), static_cast<int64_t>(rows->size()), columns);
}

class ScanTest : public ::testing::Test {
 protected:
  // 100 rows in fragments of 30 and batches of 8.
  void SetUp() override {
    store_ = NewMemoryObjectStore();
    TableOptions options;
    options.max_rows_per_fragment = 30;
    options.max_rows_per_batch = 8;
    Result<std::shared_ptr<Table>> table = Table::Create(store_, "t/", KeyedSchema(), options);
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *table;
    data_ = KeyedRows(0, 100);
    ASSERT_OK(table_->Append({data_}).status());
  }

  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<Table> table_;
  RecordBatch data_;
};

TEST_F(ScanTest, FiltersMatchTheOracle) {
  const std::vector<std::string> filters = {
      "id >= 40 AND id < 55",
      "score > 20 OR name IS NULL",
      "name LIKE 'n1%'",
      "id IN (3, 17, 64, 99, 500)",
      "id = 64 AND score IS NULL",
      "id = 63 OR id = 2",
      "NOT (id < 90)",
      "score IS NULL",
      "false",
      "true",
  };
  for (const std::string& filter : filters) {
    SCOPED_TRACE(filter);
    ASSERT_OK_AND_ASSIGN(RecordBatch got, ReadAll(*table_, {.filter = filter}));
    RecordBatch expected = Expected(data_, filter);
    EXPECT_TRUE(got.Equals(expected)) << got.ToString() << "\nexpected\n" << expected.ToString();
    ASSERT_OK_AND_ASSIGN(int64_t count, table_->CountRows(filter));
    EXPECT_EQ(count, expected.num_rows());
  }
}

TEST_F(ScanTest, PruningSkipsBatchesWithoutChangingResults) {
  // Batches of 8 rows: fragment 0 holds ids 0-7, 8-15, 16-23, 24-29; fragment 3 90-97, 98-99.
  ASSERT_OK(CorruptBatch(*store_, "t/", table_->version(), 0, 0));
  ASSERT_OK(CorruptBatch(*store_, "t/", table_->version(), 3, 0));
  ASSERT_OK_AND_ASSIGN(auto table, Table::Open(store_, "t/"));
  const std::string narrow = "score >= 20 AND score < 24";
  ASSERT_OK_AND_ASSIGN(RecordBatch pruned, ReadAll(*table, {.filter = narrow}));
  EXPECT_TRUE(pruned.Equals(Expected(data_, narrow)));
  EXPECT_EQ(Int64Column(pruned, "id"), (std::vector<int64_t>{40, 42, 43, 44, 45, 46, 47}));
  ASSERT_OK_AND_ASSIGN(int64_t count, table->CountRows("id >= 8 AND id < 90"));
  EXPECT_EQ(count, 82);
  // Without pruning the bad batches are read.
  Result<RecordBatch> all = ReadAll(*table, {.filter = "score >= 0"});
  EXPECT_TRUE(all.status().IsCorruption()) << all.status();
  Result<int64_t> counted = table->CountRows("name IS NOT NULL");
  EXPECT_TRUE(counted.status().IsCorruption()) << counted.status();
}

TEST_F(ScanTest, ProjectionOrderAndUnknownColumns) {
  ASSERT_OK_AND_ASSIGN(RecordBatch got,
                       ReadAll(*table_, {.columns = {"score", "id"}, .filter = "id < 3"}));
  ASSERT_EQ(got.num_columns(), 2);
  EXPECT_EQ(got.schema()->field(0)->name(), "score");
  EXPECT_EQ(got.schema()->field(1)->name(), "id");
  EXPECT_EQ(Int64Column(got, "id"), (std::vector<int64_t>{0, 1, 2}));
  Result<std::unique_ptr<BatchIterator>> bad = table_->Scan({.columns = {"id", "nope"}});
  EXPECT_TRUE(bad.status().IsInvalidArgument());
  EXPECT_NE(bad.status().message().find("nope"), std::string::npos) << bad.status();
  Result<std::unique_ptr<BatchIterator>> bad_filter = table_->Scan({.filter = "score = 'x'"});
  EXPECT_TRUE(bad_filter.status().IsInvalidArgument());
  EXPECT_NE(bad_filter.status().message().find("score"), std::string::npos) << bad_filter.status();
  Result<std::unique_ptr<BatchIterator>> syntax = table_->Scan({.filter = "id = = 3"});
  EXPECT_TRUE(syntax.status().IsInvalidArgument());
  EXPECT_TRUE(table_->CountRows("missing > 1").status().IsInvalidArgument());
}

TEST_F(ScanTest, OffsetAndLimitApplyAfterFilteringAcrossBatches) {
  ASSERT_OK_AND_ASSIGN(RecordBatch got,
                       ReadAll(*table_, {.filter = "name IS NOT NULL", .offset = 10, .limit = 20}));
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 100; ++i) {
    if (i % 5 != 4) expected.push_back(i);
  }
  expected = std::vector<int64_t>(expected.begin() + 10, expected.begin() + 30);
  EXPECT_EQ(Int64Column(got, "id"), expected);
  ASSERT_OK_AND_ASSIGN(got, ReadAll(*table_, {.offset = 95}));
  EXPECT_EQ(Int64Column(got, "id"), (std::vector<int64_t>{95, 96, 97, 98, 99}));
  ASSERT_OK_AND_ASSIGN(got, ReadAll(*table_, {.limit = 0}));
  EXPECT_EQ(got.num_rows(), 0);
  ASSERT_OK_AND_ASSIGN(got, ReadAll(*table_, {.offset = 1000}));
  EXPECT_EQ(got.num_rows(), 0);
  // A limit stops reading: a bad later batch is never touched.
  ASSERT_OK(CorruptBatch(*store_, "t/", table_->version(), 1, 0));
  ASSERT_OK_AND_ASSIGN(auto table, Table::Open(store_, "t/"));
  ASSERT_OK_AND_ASSIGN(auto it, table->Scan({.limit = 3}));
  ASSERT_OK_AND_ASSIGN(auto batches, it->ToBatches());
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].num_rows(), 3);
  EXPECT_TRUE(ReadAll(*table).status().IsCorruption());
  // An offset past the bad batch skips it without reading it (rows 30-37, after a delete).
  ASSERT_OK(table->Delete("id = 3").status());
  ASSERT_OK_AND_ASSIGN(got, ReadAll(*table, {.offset = 37, .limit = 2}));
  EXPECT_EQ(Int64Column(got, "id"), (std::vector<int64_t>{38, 39}));
  ASSERT_OK_AND_ASSIGN(got, ReadAll(*table, {.filter = "id > 20", .offset = 17, .limit = 1}));
  EXPECT_EQ(Int64Column(got, "id"), (std::vector<int64_t>{38}));
  EXPECT_TRUE(table_->Scan({.offset = -1}).status().IsInvalidArgument());
}

TEST_F(ScanTest, RowAddressesRoundTripThroughTake) {
  ASSERT_OK_AND_ASSIGN(RecordBatch got, ReadAll(*table_, {.columns = {"id", "name"},
                                                          .filter = "id IN (1, 29, 30, 77)",
                                                          .with_row_address = true}));
  ASSERT_EQ(got.num_columns(), 3);
  EXPECT_EQ(got.schema()->field(2)->name(), kRowAddressColumn);
  std::vector<uint64_t> addresses = UInt64Column(got, kRowAddressColumn);
  EXPECT_EQ(addresses, (std::vector<uint64_t>{MakeRowAddress(0, 1), MakeRowAddress(0, 29),
                                              MakeRowAddress(1, 0), MakeRowAddress(2, 17)}));
  // Take returns rows in the order asked, repeats included.
  std::vector<uint64_t> order = {addresses[3], addresses[0], addresses[3], addresses[2]};
  ASSERT_OK_AND_ASSIGN(RecordBatch taken, table_->Take(order, {"name", "id"}));
  EXPECT_EQ(Int64Column(taken, "id"), (std::vector<int64_t>{77, 1, 77, 30}));
  EXPECT_EQ(taken.column(0).StringValue(0), "n77");
  ASSERT_OK_AND_ASSIGN(taken, table_->Take(std::vector<uint64_t>{}));
  EXPECT_EQ(taken.num_rows(), 0);
  EXPECT_EQ(taken.num_columns(), 3);

  EXPECT_TRUE(table_->Take(std::vector<uint64_t>{MakeRowAddress(9, 0)}).status().IsNotFound());
  EXPECT_TRUE(table_->Take(std::vector<uint64_t>{MakeRowAddress(3, 10)}).status().IsNotFound());
  ASSERT_OK(table_->Delete("id = 30").status());
  Result<RecordBatch> deleted = table_->Take(std::vector<uint64_t>{addresses[0], addresses[2]});
  EXPECT_TRUE(deleted.status().IsNotFound()) << deleted.status();
  ASSERT_OK_AND_ASSIGN(taken, table_->Take(std::vector<uint64_t>{addresses[1]}));
  EXPECT_EQ(Int64Column(taken, "id"), (std::vector<int64_t>{29}));
}

TEST_F(ScanTest, CountRowsWithAndWithoutFilterAfterDeletes) {
  ASSERT_OK(table_->Delete(testing_util::IdsWhere(0, 100, [](int64_t i) { return i % 10 == 0; }))
                .status());
  ASSERT_OK_AND_ASSIGN(int64_t all, table_->CountRows());
  EXPECT_EQ(all, 90);
  ASSERT_OK_AND_ASSIGN(int64_t some, table_->CountRows("id < 25"));
  EXPECT_EQ(some, 22);
  ASSERT_OK_AND_ASSIGN(int64_t everything, table_->CountRows("true"));
  EXPECT_EQ(everything, 90);
  // Statistics say every row of these batches matches; deleted rows are still excluded.
  ASSERT_OK_AND_ASSIGN(int64_t ranged, table_->CountRows("id >= 0"));
  EXPECT_EQ(ranged, 90);
  ASSERT_OK_AND_ASSIGN(int64_t keyed, table_->CountRows("id IN (10, 11, 12)"));
  EXPECT_EQ(keyed, 2);
}

TEST_F(ScanTest, DeletedRowsNeverAppear) {
  ASSERT_OK(table_->Delete("score > 10 AND score < 30").status());
  ASSERT_OK(table_->Delete("id < 8").status());  // a whole batch
  const std::string remaining = "NOT (score > 10 AND score < 30) OR score IS NULL";
  RecordBatch live = Expected(data_, "(" + remaining + ") AND id >= 8");
  ASSERT_OK_AND_ASSIGN(RecordBatch got, ReadAll(*table_));
  EXPECT_TRUE(got.Equals(live)) << got.ToString();
  ASSERT_OK_AND_ASSIGN(got, ReadAll(*table_, {.filter = "id IN (5, 25, 50, 65)"}));
  EXPECT_EQ(Int64Column(got, "id"), (std::vector<int64_t>{65}));
}

TEST_F(ScanTest, KeyFiltersUseTheIndexAndMatchTheOracle) {
  // A second append with repeated keys and a later fragment.
  ASSERT_OK(table_->Append({KeyedRows(50, 5)}).status());
  ASSERT_OK_AND_ASSIGN(RecordBatch both, ConcatenateBatches({data_, KeyedRows(50, 5)}));
  for (const std::string filter :
       {"id = 52", "id IN (3, 52, 99, 1000)", "id = 52 AND score > 25.5", "id = 3 OR id = 51",
        "id IN (1, 2) AND id IN (2, 3)", "id = 1 AND id = 2", "id = 52 OR name = 'n7'"}) {
    SCOPED_TRACE(filter);
    ASSERT_OK_AND_ASSIGN(RecordBatch got, ReadAll(*table_, {.filter = filter}));
    RecordBatch expected = Expected(both, filter);
    EXPECT_TRUE(got.Equals(expected)) << got.ToString() << "\nexpected\n" << expected.ToString();
  }
  // A key lookup reads only the batches holding the keys.
  ASSERT_OK(CorruptBatch(*store_, "t/", table_->version(), 0, 0));
  ASSERT_OK(CorruptBatch(*store_, "t/", table_->version(), 2, 0));
  ASSERT_OK_AND_ASSIGN(auto table, Table::Open(store_, "t/"));
  ASSERT_OK_AND_ASSIGN(RecordBatch one, ReadAll(*table, {.filter = "id = 77"}));
  EXPECT_EQ(Int64Column(one, "id"), (std::vector<int64_t>{77}));
  ASSERT_OK_AND_ASSIGN(int64_t count, table->CountRows("id IN (20, 52, 77)"));
  EXPECT_EQ(count, 4);
  ASSERT_OK_AND_ASSIGN(RecordBatch found, table->LookupKeys({expr::Scalar::Int64(52)}));
  EXPECT_EQ(found.num_rows(), 2);
  EXPECT_TRUE(ReadAll(*table, {.filter = "name IS NOT NULL"}).status().IsCorruption());
}

TEST_F(ScanTest, LookupKeysFindsDuplicatesInAddressOrderAndSkipsDeletedRows) {
  ASSERT_OK(table_->Append({KeyedRows(10, 3)}).status());  // 10, 11, 12 again
  ASSERT_OK_AND_ASSIGN(RecordBatch found,
                       table_->LookupKeys({expr::Scalar::Int64(11), expr::Scalar::Int64(95),
                                           expr::Scalar::Int64(11), expr::Scalar::Int64(-4)},
                                          {"id"}, true));
  EXPECT_EQ(Int64Column(found, "id"), (std::vector<int64_t>{11, 95, 11}));
  EXPECT_EQ(
      UInt64Column(found, kRowAddressColumn),
      (std::vector<uint64_t>{MakeRowAddress(0, 11), MakeRowAddress(3, 5), MakeRowAddress(4, 1)}));
  ASSERT_OK(table_->DeleteKeys({expr::Scalar::Int64(95)}).status());
  ASSERT_OK_AND_ASSIGN(found,
                       table_->LookupKeys({expr::Scalar::Int64(11), expr::Scalar::Int64(95)}));
  EXPECT_EQ(Int64Column(found, "id"), (std::vector<int64_t>{11, 11}));
  EXPECT_EQ(found.num_columns(), 3);
  // Keys of another kind, NULL and fractions match nothing.
  ASSERT_OK_AND_ASSIGN(found, table_->LookupKeys({expr::Scalar::String("11"), expr::Scalar(),
                                                  expr::Scalar::Double(11.5)}));
  EXPECT_EQ(found.num_rows(), 0);
  ASSERT_OK_AND_ASSIGN(found, table_->LookupKeys({}));
  EXPECT_EQ(found.num_rows(), 0);
  EXPECT_TRUE(table_->LookupKeys({expr::Scalar::Int64(1)}, {"nope"}).status().IsInvalidArgument());
}

// KeysPresent answers from the key index what LookupKeys answers by reading rows: keys in
// several fragments, duplicated, deleted, missing, or of a kind that never matches.
TEST_F(ScanTest, KeysPresentAgreesWithLookupKeys) {
  ASSERT_OK(table_->Append({KeyedRows(10, 3)}).status());  // 10, 11, 12 again
  ASSERT_OK(table_->DeleteKeys({expr::Scalar::Int64(95), expr::Scalar::Int64(40)}).status());
  std::vector<expr::Scalar> keys;
  for (int64_t k = -3; k < 105; ++k) keys.push_back(expr::Scalar::Int64(k));
  keys.push_back(expr::Scalar::String("11"));
  keys.push_back(expr::Scalar());
  keys.push_back(expr::Scalar::Double(11.5));
  keys.push_back(expr::Scalar::Double(12.0));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> present, table_->KeysPresent(keys));
  ASSERT_EQ(present.size(), keys.size());
  int found = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(RecordBatch rows, table_->LookupKeys({keys[i]}, {"id"}));
    EXPECT_EQ(present[i] != 0, rows.num_rows() > 0) << keys[i].ToString();
    found += present[i];
  }
  EXPECT_EQ(found, 99);  // 0..99 without 40 and 95, and 12.0
  ASSERT_OK_AND_ASSIGN(present, table_->KeysPresent({}));
  EXPECT_TRUE(present.empty());
  ASSERT_OK_AND_ASSIGN(auto plain, Table::Create(store_, "plain/", schema({field("x", int64())})));
  EXPECT_TRUE(plain->KeysPresent({expr::Scalar::Int64(1)}).status().IsInvalidArgument());
}

TEST(LookupKeysTest, StringKeysAndTablesWithoutKey) {
  auto store = NewMemoryObjectStore();
  SchemaPtr s =
      schema({field("k", utf8(), false, testing_util::PrimaryKey()), field("v", int32())});
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store, "", s));
  ASSERT_OK_AND_ASSIGN(RecordBatch rows,
                       json::RowsToBatch(s,
                                         "{\"k\": \"b\", \"v\": 1}\n{\"k\": \"a\", \"v\": 2}\n"
                                         "{\"k\": \"b\", \"v\": 3}\n{\"k\": \"c\", \"v\": 4}"));
  ASSERT_OK(table->Append({rows}).status());
  ASSERT_OK_AND_ASSIGN(
      RecordBatch found,
      table->LookupKeys({expr::Scalar::String("b"), expr::Scalar::String("z")}, {"v"}));
  ASSERT_EQ(found.num_rows(), 2);
  EXPECT_EQ(found.column(0).Value<int32_t>(0), 1);
  EXPECT_EQ(found.column(0).Value<int32_t>(1), 3);
  ASSERT_OK_AND_ASSIGN(found, table->LookupKeys({expr::Scalar::Int64(1)}));
  EXPECT_EQ(found.num_rows(), 0);
  ASSERT_OK_AND_ASSIGN(RecordBatch scanned, ReadAll(*table, {.filter = "k = 'a' OR k = 'c'"}));
  EXPECT_EQ(scanned.num_rows(), 2);

  ASSERT_OK_AND_ASSIGN(auto plain, Table::Create(store, "plain/", schema({field("x", int64())})));
  Result<RecordBatch> no_key = plain->LookupKeys({expr::Scalar::Int64(1)});
  EXPECT_TRUE(no_key.status().IsInvalidArgument()) << no_key.status();
}

TEST_F(ScanTest, IteratorKeepsTheVersionItStartedAt) {
  ASSERT_OK_AND_ASSIGN(auto it, table_->Scan({.filter = "id < 20"}));
  ASSERT_OK(table_->Delete("id < 20").status());
  ASSERT_OK(table_->Append({KeyedRows(200, 3)}).status());
  ASSERT_OK_AND_ASSIGN(auto batches, it->ToBatches());
  int64_t rows = 0;
  for (const RecordBatch& b : batches) rows += b.num_rows();
  EXPECT_EQ(rows, 20);
  ASSERT_OK_AND_ASSIGN(int64_t now, table_->CountRows("id < 20"));
  EXPECT_EQ(now, 0);
}

TEST_F(ScanTest, RandomFiltersMatchTheOracleAfterDeletes) {
  const unsigned long long seed = testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 random(seed);
  const std::string nines = testing_util::IdsWhere(0, 100, [](int64_t i) { return i % 9 == 4; });
  ASSERT_OK(table_->Delete(nines).status());
  RecordBatch live = Expected(data_, "NOT (" + nines + ")");
  for (int i = 0; i < 20; ++i) {
    const int64_t lo = static_cast<int64_t>(random() % 100);
    const int64_t hi = lo + static_cast<int64_t>(random() % 30);
    const std::string filter =
        random() % 2 ? "id >= " + std::to_string(lo) + " AND id <= " + std::to_string(hi)
                     : "score > " + std::to_string(lo / 2) +
                           " AND (name IS NULL OR id = " + std::to_string(hi) + ")";
    SCOPED_TRACE(filter);
    ASSERT_OK_AND_ASSIGN(RecordBatch got, ReadAll(*table_, {.filter = filter}));
    EXPECT_TRUE(got.Equals(Expected(live, filter))) << got.ToString();
  }
}

}  // namespace
}  // namespace strata::table

namespace strata::table::internal {
namespace {

class FragmentReaderTest : public ::testing::Test {
 protected:
  // Writes columns `columns` of rows 0..19 as one data file with batches of `batch_rows`.
  pb::DataFile WriteFile(const std::vector<int>& columns, int64_t batch_rows) {
    RecordBatch rows = testing_util::KeyedRows(0, 20);
    Result<RecordBatch> projected = rows.Project(columns);
    EXPECT_TRUE(projected.ok());
    std::vector<int32_t> field_ids(columns.begin(), columns.end());
    DataFileWriteOptions options;
    options.max_rows_per_batch = batch_rows;
    auto writer = DataFileWriter::Make(store_, "t/", projected->schema(), field_ids, options);
    EXPECT_TRUE(writer.ok()) << writer.status();
    EXPECT_TRUE((*writer)->Write(*projected).ok());
    Result<pb::DataFile> file = (*writer)->Finish();
    EXPECT_TRUE(file.ok()) << file.status();
    return *file;
  }

  // A version whose schema has the keyed columns plus "extra" (field 3, in no file) and one
  // fragment made of `files`.
  SnapshotPtr MakeVersion(const std::vector<pb::DataFile>& files) {
    SchemaPtr s =
        schema({field("id", int64(), false, testing_util::PrimaryKey()), field("name", utf8()),
                field("score", float64()), field("extra", int32())});
    pb::Manifest manifest;
    manifest.set_version(1);
    *manifest.mutable_schema() = *SchemaToProto(*s);
    manifest.set_next_field_id(4);
    manifest.set_next_fragment_id(1);
    pb::Fragment* fragment = manifest.add_fragments();
    fragment->set_physical_rows(20);
    for (const pb::DataFile& file : files) *fragment->add_files() = file;
    Result<SnapshotPtr> snapshot = MakeSnapshot(std::move(manifest));
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    return *snapshot;
  }

  std::shared_ptr<ObjectStore> store_ = NewMemoryObjectStore();
  TableContext context_{store_, "t/", TableOptions{}};
};

TEST_F(FragmentReaderTest, ColumnsSpreadOverFilesAndMissingColumnsReadAsNull) {
  SnapshotPtr version = MakeVersion({WriteFile({0, 2}, 8), WriteFile({1}, 8)});
  ASSERT_OK_AND_ASSIGN(FragmentReader reader,
                       FragmentReader::Open(context_, *version, version->manifest.fragments(0)));
  ASSERT_EQ(reader.num_batches(), 3);
  EXPECT_EQ(reader.batch_offset(1), 8);
  EXPECT_EQ(reader.batch_rows(2), 4);
  EXPECT_EQ(reader.deletions(), nullptr);
  ASSERT_OK_AND_ASSIGN(RecordBatch batch, reader.ReadBatch(1, {3, 1, 0, 2}));
  ASSERT_EQ(batch.num_rows(), 8);
  EXPECT_EQ(batch.schema()->field(0)->name(), "extra");
  EXPECT_EQ(batch.column(0).null_count(), 8);
  RecordBatch expected = testing_util::KeyedRows(8, 8);
  EXPECT_TRUE(batch.column(1).Equals(expected.column(1)));
  EXPECT_TRUE(batch.column(2).Equals(expected.column(0)));
  EXPECT_TRUE(batch.column(3).Equals(expected.column(2)));
  const expr::ColumnStatistics* id = reader.Statistics(2, 0);
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->min, expr::Scalar::Int64(16));
  EXPECT_EQ(id->max, expr::Scalar::Int64(19));
  const expr::ColumnStatistics* extra = reader.Statistics(0, 3);
  ASSERT_NE(extra, nullptr);
  EXPECT_EQ(extra->null_count, 8);
  EXPECT_EQ(extra->row_count, 8);
  EXPECT_FALSE(extra->min.has_value());
  EXPECT_EQ(reader.Statistics(3, 0), nullptr);
  EXPECT_FALSE(reader.ReadBatch(3, {0}).ok());
}

TEST_F(FragmentReaderTest, FilesWithDifferentBatchesAreCorruption) {
  SnapshotPtr version = MakeVersion({WriteFile({0, 2}, 8), WriteFile({1}, 5)});
  Result<FragmentReader> reader =
      FragmentReader::Open(context_, *version, version->manifest.fragments(0));
  EXPECT_TRUE(reader.status().IsCorruption()) << reader.status();
}

// Statistics are decoded on first use: they must equal what the manifest records for every
// batch and column in any order of asking, and a missing entry still fails Open.
void ExpectSameStatistics(const expr::ColumnStatistics& got, const expr::ColumnStatistics& want) {
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_EQ(got.null_count, want.null_count);
  EXPECT_EQ(got.row_count, want.row_count);
}

TEST_F(FragmentReaderTest, EveryBatchAndColumnInAnyOrderMatchesTheManifest) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  SnapshotPtr version = MakeVersion({WriteFile({2, 0}, 6), WriteFile({1}, 6)});
  const pb::Fragment& fragment = version->manifest.fragments(0);
  ASSERT_OK_AND_ASSIGN(FragmentReader reader, FragmentReader::Open(context_, *version, fragment));
  ASSERT_EQ(reader.num_batches(), 4);  // 6 + 6 + 6 + 2 rows

  // Schema column -> (file, column in file), as written above; "extra" is in no file.
  const std::pair<int, int> source[] = {{0, 1}, {1, 0}, {0, 0}, {-1, -1}};
  std::vector<std::pair<int, int>> asks;
  for (int b = 0; b < reader.num_batches(); ++b) {
    for (int column = 0; column < 4; ++column) asks.emplace_back(b, column);
  }
  std::mt19937_64 rng(seed);
  std::shuffle(asks.begin(), asks.end(), rng);
  std::vector<const expr::ColumnStatistics*> first(asks.size());
  for (size_t i = 0; i < asks.size(); ++i) {
    auto [b, column] = asks[i];
    SCOPED_TRACE(::testing::Message() << "batch " << b << " column " << column);
    const expr::ColumnStatistics* got = reader.Statistics(b, column);
    ASSERT_NE(got, nullptr);
    first[i] = got;
    const int64_t rows = reader.batch_rows(b);
    auto [f, c] = source[column];
    if (f < 0) {
      EXPECT_FALSE(got->min.has_value());
      EXPECT_FALSE(got->max.has_value());
      EXPECT_EQ(got->null_count, rows);
      EXPECT_EQ(got->row_count, rows);
    } else {
      ExpectSameStatistics(*got, StatsFromProto(fragment.files(f).batches(b).stats(c), rows));
    }
  }
  // Known values, independent of the decoding: ids of the last batch are 18 and 19.
  EXPECT_EQ(reader.Statistics(3, 0)->min, expr::Scalar::Int64(18));
  EXPECT_EQ(reader.Statistics(3, 0)->max, expr::Scalar::Int64(19));
  EXPECT_EQ(reader.Statistics(3, 0)->row_count, 2);
  EXPECT_EQ(reader.Statistics(1, 1)->min, expr::Scalar::String("n10"));  // "n10" < "n6"

  // Asking again (also after the reader moved) gives the same, still valid, entries.
  FragmentReader moved = std::move(reader);
  for (size_t i = 0; i < asks.size(); ++i) {
    EXPECT_EQ(moved.Statistics(asks[i].first, asks[i].second), first[i]);
  }
  EXPECT_EQ(moved.Statistics(4, 0), nullptr);
  EXPECT_EQ(moved.Statistics(0, 4), nullptr);
  EXPECT_EQ(moved.Statistics(-1, 0), nullptr);
}

TEST_F(FragmentReaderTest, MissingStatisticsEntryIsCorruptionOnOpen) {
  pb::DataFile names = WriteFile({1}, 8);
  names.mutable_batches(1)->mutable_stats()->RemoveLast();
  SnapshotPtr version = MakeVersion({WriteFile({0, 2}, 8), names});
  Result<FragmentReader> reader =
      FragmentReader::Open(context_, *version, version->manifest.fragments(0));
  ASSERT_TRUE(reader.status().IsCorruption()) << reader.status();
  EXPECT_NE(reader.status().message().find("batch 1 lacks statistics for column 0"),
            std::string::npos)
      << reader.status();
}

}  // namespace
}  // namespace strata::table::internal
