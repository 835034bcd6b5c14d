// Table handles and changes: create/open, appends (schema checks, fragment cutting),
// deletes (by filter and key, concurrent ones merged), schema and metadata updates, time
// travel and reopening.
#include "strata/table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/forwarding_object_store.h"
#include "support/temp_dir.h"
#include "table/table_test_util.h"

namespace strata::table {
namespace {

using testing_util::Int64Column;
using testing_util::KeyedRows;
using testing_util::KeyedSchema;
using testing_util::PrimaryKey;
using testing_util::ReadAll;

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(i);
  return out;
}

class TableTest : public ::testing::Test {
 protected:
  std::shared_ptr<ObjectStore> store_ = NewMemoryObjectStore();
};

TEST_F(TableTest, CreateThenOpenSeesEmptyVersionOne) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  EXPECT_EQ(table->version(), 1u);
  EXPECT_EQ(table->primary_key_column(), 0);
  EXPECT_FALSE(table->read_only());
  ASSERT_OK_AND_ASSIGN(auto opened, Table::Open(store_, "t/"));
  EXPECT_EQ(opened->version(), 1u);
  EXPECT_TRUE(opened->schema()->Equals(*KeyedSchema()));
  ASSERT_OK_AND_ASSIGN(int64_t rows, opened->CountRows());
  EXPECT_EQ(rows, 0);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*opened));
  EXPECT_EQ(all.num_rows(), 0);
  EXPECT_EQ(all.num_columns(), 3);
  ASSERT_OK_AND_ASSIGN(TableStats stats, opened->Stats());
  EXPECT_EQ(stats.version, 1u);
  EXPECT_EQ(stats.num_fragments, 0);
}

TEST_F(TableTest, CreateTwiceIsAlreadyExistsAndMissingIsNotFound) {
  ASSERT_OK_AND_ASSIGN(bool exists, Table::Exists(*store_, "t/"));
  EXPECT_FALSE(exists);
  Result<std::shared_ptr<Table>> missing = Table::Open(store_, "t/");
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status();
  ASSERT_OK(Table::Create(store_, "t/", KeyedSchema()).status());
  ASSERT_OK_AND_ASSIGN(exists, Table::Exists(*store_, "t/"));
  EXPECT_TRUE(exists);
  Result<std::shared_ptr<Table>> again = Table::Create(store_, "t/", KeyedSchema());
  EXPECT_TRUE(again.status().IsAlreadyExists()) << again.status();
  // A table at the root prefix is a different table.
  ASSERT_OK(Table::Create(store_, "", KeyedSchema()).status());
}

TEST_F(TableTest, BadSchemasAreInvalidArgumentNamingTheColumn) {
  struct Case {
    SchemaPtr schema;
    std::string mention;
  };
  std::vector<Case> cases = {
      {schema({field("id", int64(), true, PrimaryKey())}), "id"},
      {schema({field("a", int64()), field("a", utf8())}), "a"},
      {schema({field("_rowaddr", int64())}), "_rowaddr"},
      {schema({field("k", float64(), false, PrimaryKey())}), "k"},
      {schema(
           {field("k1", int64(), false, PrimaryKey()), field("k2", utf8(), false, PrimaryKey())}),
       "k2"},
      {schema({}), "column"},
  };
  for (const Case& c : cases) {
    Result<std::shared_ptr<Table>> t = Table::Create(store_, "bad/", c.schema);
    EXPECT_TRUE(t.status().IsInvalidArgument()) << c.schema->ToString() << ": " << t.status();
    EXPECT_NE(t.status().message().find(c.mention), std::string::npos) << t.status();
  }
  ASSERT_OK_AND_ASSIGN(bool exists, Table::Exists(*store_, "bad/"));
  EXPECT_FALSE(exists);
  EXPECT_TRUE(Table::Create(store_, "no-slash", KeyedSchema()).status().IsInvalidArgument());
}

TEST_F(TableTest, AppendThenScanReturnsTheInput) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  RecordBatch first = KeyedRows(0, 30);
  RecordBatch second = KeyedRows(30, 12);
  ASSERT_OK_AND_ASSIGN(AppendResult r, table->Append({first, second}));
  EXPECT_EQ(r.version, 2u);
  EXPECT_EQ(r.rows, 42);
  EXPECT_EQ(r.fragments, 1);
  EXPECT_GT(r.bytes_written, 0);
  EXPECT_EQ(table->version(), 2u);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
  ASSERT_OK_AND_ASSIGN(RecordBatch expected, ConcatenateBatches({first, second}));
  EXPECT_TRUE(all.Equals(expected)) << all.ToString();
  ASSERT_OK_AND_ASSIGN(int64_t rows, table->CountRows());
  EXPECT_EQ(rows, 42);
}

TEST_F(TableTest, AppendReportsProgressAndEmptyAppendCommitsNothing) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK_AND_ASSIGN(AppendResult none, table->Append({RecordBatch::MakeEmpty(KeyedSchema())}));
  EXPECT_EQ(none.version, 1u);
  EXPECT_EQ(none.rows, 0);
  ASSERT_OK_AND_ASSIGN(none, table->Append({}));
  EXPECT_EQ(none.version, 1u);
  std::vector<std::pair<int64_t, int64_t>> calls;
  ASSERT_OK_AND_ASSIGN(AppendResult r, table->Append({KeyedRows(0, 5), KeyedRows(5, 7)},
                                                     [&](int64_t done, int64_t total) {
                                                       calls.emplace_back(done, total);
                                                     }));
  EXPECT_EQ(r.version, 2u);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], std::make_pair(int64_t{5}, int64_t{12}));
  EXPECT_EQ(calls[1], std::make_pair(int64_t{12}, int64_t{12}));
  ASSERT_OK_AND_ASSIGN(auto versions, table->ListVersions());
  EXPECT_EQ(versions.size(), 2u);
}

TEST_F(TableTest, AppendOfNullableSubsetReadsMissingColumnsAsNull) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  RecordBatch full = KeyedRows(0, 10);
  // Only id and score, in a different order than the table.
  ASSERT_OK_AND_ASSIGN(RecordBatch subset, full.Project({2, 0}));
  ASSERT_OK(table->Append({subset}).status());
  // Batches with different column sets in one append are aligned.
  ASSERT_OK_AND_ASSIGN(RecordBatch only_id, KeyedRows(10, 3).Project({0}));
  ASSERT_OK(table->Append({KeyedRows(13, 2), only_id}).status());
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
  ASSERT_EQ(all.num_rows(), 15);
  EXPECT_EQ(Int64Column(all, "id"),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14, 10, 11, 12}));
  Array names = all.GetColumnByName("name");
  Array scores = all.GetColumnByName("score");
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_TRUE(names.IsNull(i)) << i;
    EXPECT_EQ(scores.IsNull(i), i % 7 == 6) << i;
  }
  EXPECT_EQ(names.StringValue(10), "n13");
  for (int64_t i = 12; i < 15; ++i) {
    EXPECT_TRUE(names.IsNull(i));
    EXPECT_TRUE(scores.IsNull(i));
  }
}

TEST_F(TableTest, AppendRejectsMismatchedSchemasNamingColumnAndTypes) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  auto expect_invalid = [&](const RecordBatch& batch, std::vector<std::string> mentions) {
    Result<AppendResult> r = table->Append({batch});
    EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
    for (const std::string& m : mentions) {
      EXPECT_NE(r.status().message().find(m), std::string::npos) << r.status();
    }
  };
  ASSERT_OK_AND_ASSIGN(
      RecordBatch wrong_type,
      json::RowsToBatch(schema({field("id", int64(), false), field("score", utf8())}),
                        R"({"id": 1, "score": "x"})"));
  expect_invalid(wrong_type, {"score", "float64", "utf8"});
  ASSERT_OK_AND_ASSIGN(
      RecordBatch unknown,
      json::RowsToBatch(schema({field("id", int64(), false), field("extra", int64())}),
                        R"({"id": 1, "extra": 2})"));
  expect_invalid(unknown, {"extra"});
  ASSERT_OK_AND_ASSIGN(RecordBatch no_key,
                       json::RowsToBatch(schema({field("name", utf8())}), R"({"name": "a"})"));
  expect_invalid(no_key, {"id", "non-nullable"});
  ASSERT_OK_AND_ASSIGN(RecordBatch null_key,
                       json::RowsToBatch(schema({field("id", int64(), true)}), R"({"id": null})"));
  expect_invalid(null_key, {"id"});
  EXPECT_EQ(table->version(), 1u);
  // Field metadata does not matter.
  ASSERT_OK_AND_ASSIGN(RecordBatch plain_key,
                       json::RowsToBatch(schema({field("id", int64(), false)}), R"({"id": 7})"));
  ASSERT_OK(table->Append({plain_key}).status());
  EXPECT_EQ(table->version(), 2u);
}

TEST_F(TableTest, AppendCutsFragmentsByRowsAndBatchesByRows) {
  TableOptions options;
  options.max_rows_per_fragment = 10;
  options.max_rows_per_batch = 4;
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema(), options));
  ASSERT_OK_AND_ASSIGN(AppendResult r, table->Append({KeyedRows(0, 7), KeyedRows(7, 28)}));
  EXPECT_EQ(r.fragments, 4);
  ASSERT_OK_AND_ASSIGN(TableStats stats, table->Stats());
  EXPECT_EQ(stats.num_fragments, 4);
  EXPECT_EQ(stats.num_rows, 35);
  EXPECT_EQ(stats.num_data_files, 4);
  EXPECT_EQ(stats.num_index_segments, 1);
  EXPECT_EQ(stats.unindexed_fragments, 0);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table, {.with_row_address = true}));
  EXPECT_EQ(Int64Column(all, "id"), Range(0, 35));
  // Fragments hold 10, 10, 10, 5 rows: addresses restart at each fragment.
  std::vector<uint64_t> addresses = testing_util::UInt64Column(all, kRowAddressColumn);
  EXPECT_EQ(addresses[9], MakeRowAddress(0, 9));
  EXPECT_EQ(addresses[10], MakeRowAddress(1, 0));
  EXPECT_EQ(addresses[34], MakeRowAddress(3, 4));
  // Batches of at most 4 rows.
  ASSERT_OK_AND_ASSIGN(auto it, table->Scan());
  ASSERT_OK_AND_ASSIGN(auto batches, it->ToBatches());
  EXPECT_EQ(batches.size(), 11u);  // 4+4+2 per full fragment, 4+1 for the last
  for (const RecordBatch& b : batches) EXPECT_LE(b.num_rows(), 4);
  // A second append continues the fragment ids.
  ASSERT_OK_AND_ASSIGN(r, table->Append({KeyedRows(35, 3)}));
  ASSERT_OK_AND_ASSIGN(all, ReadAll(*table, {.with_row_address = true}));
  EXPECT_EQ(testing_util::UInt64Column(all, kRowAddressColumn).back(), MakeRowAddress(4, 2));
}

// AppendStream: batches pulled one at a time, cut and indexed as Append cuts them, in one
// version; an error from the source commits nothing.
TEST_F(TableTest, AppendStreamWritesWhatItPullsInOneVersionAndStopsOnAnError) {
  TableOptions options;
  options.max_rows_per_fragment = 10;
  options.max_rows_per_batch = 4;
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema(), options));
  int pulled = 0;
  auto from = [&](std::vector<RecordBatch> batches) {
    return [&pulled, batches = std::move(batches)]() -> Result<std::optional<RecordBatch>> {
      if (pulled == static_cast<int>(batches.size())) return std::optional<RecordBatch>();
      return std::optional<RecordBatch>(batches[static_cast<size_t>(pulled++)]);
    };
  };
  ASSERT_OK_AND_ASSIGN(
      AppendResult r,
      table->AppendStream(
          from({KeyedRows(0, 7), RecordBatch::MakeEmpty(KeyedSchema()), KeyedRows(7, 28)})));
  EXPECT_EQ(pulled, 3);
  EXPECT_EQ(r.version, 2u);
  EXPECT_EQ(r.rows, 35);
  EXPECT_EQ(r.fragments, 4);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
  EXPECT_EQ(Int64Column(all, "id"), Range(0, 35));
  ASSERT_OK_AND_ASSIGN(RecordBatch found, table->LookupKeys({expr::Scalar::Int64(33)}));
  EXPECT_EQ(Int64Column(found, "id"), std::vector<int64_t>{33});

  // Nothing to pull: no version.
  pulled = 0;
  ASSERT_OK_AND_ASSIGN(r, table->AppendStream(from({})));
  EXPECT_EQ(r.version, 2u);
  EXPECT_EQ(r.rows, 0);

  // A failing source, and batches whose columns differ from the first's: nothing committed.
  pulled = 0;
  int calls = 0;
  Result<AppendResult> failed = table->AppendStream([&]() -> Result<std::optional<RecordBatch>> {
    if (calls++ < 2) return std::optional<RecordBatch>(KeyedRows(100 + calls * 10, 10));
    return Status::Aborted("cancelled");
  });
  EXPECT_TRUE(failed.status().IsAborted()) << failed.status();
  ASSERT_OK_AND_ASSIGN(RecordBatch ids_only, KeyedRows(200, 3).Project({0}));
  pulled = 0;
  Result<AppendResult> mixed = table->AppendStream(from({KeyedRows(300, 3), ids_only}));
  EXPECT_TRUE(mixed.status().IsInvalidArgument()) << mixed.status();
  EXPECT_NE(mixed.status().message().find("id, name, score"), std::string::npos) << mixed.status();
  ASSERT_OK(table->Refresh());
  EXPECT_EQ(table->version(), 2u);
  ASSERT_OK_AND_ASSIGN(int64_t rows, table->CountRows());
  EXPECT_EQ(rows, 35);
}

// TableOptions::min_compressed_buffer_bytes reaches the data files: with every buffer under
// it nothing is compressed (the files are larger), and the rows read the same.
TEST_F(TableTest, BuffersUnderTheMinimumCompressedSizeAreWrittenRaw) {
  std::map<int64_t, int64_t> bytes;
  for (int64_t minimum : {int64_t{0}, int64_t{1} << 30}) {
    TableOptions options;
    options.min_compressed_buffer_bytes = minimum;
    const std::string prefix = "t" + std::to_string(minimum) + "/";
    ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, prefix, KeyedSchema(), options));
    ASSERT_OK_AND_ASSIGN(AppendResult r, table->Append({KeyedRows(0, 3000)}));
    bytes[minimum] = r.bytes_written;
    ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
    EXPECT_TRUE(all.Equals(KeyedRows(0, 3000))) << minimum;
  }
  EXPECT_GT(bytes[int64_t{1} << 30], bytes[0]);
}

// Fragments cut in the middle of the rows are finished (put) on a thread of their own while
// the next one is written: every key still finds its row, and a put that fails fails the
// append, which then commits nothing.
TEST_F(TableTest, FragmentsFinishedInTheBackgroundAreIndexedInOrderAndFailTheAppend) {
  TableOptions options;
  options.max_rows_per_fragment = 16;
  options.max_rows_per_batch = 4;
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema(), options));
  ASSERT_OK_AND_ASSIGN(AppendResult r, table->Append({KeyedRows(0, 100)}));
  EXPECT_EQ(r.fragments, 7);
  std::vector<expr::Scalar> keys;
  for (int64_t id = 99; id >= 0; id -= 3) keys.push_back(expr::Scalar::Int64(id));
  ASSERT_OK_AND_ASSIGN(RecordBatch found, table->LookupKeys(keys, {"id"}, true));
  std::vector<int64_t> want;
  for (const expr::Scalar& key : keys) want.push_back(key.int64_value());
  std::vector<int64_t> got = Int64Column(found, "id");
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
  std::vector<uint64_t> addresses = testing_util::UInt64Column(found, kRowAddressColumn);
  std::vector<int64_t> ids = Int64Column(found, "id");
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(addresses[i], MakeRowAddress(static_cast<uint32_t>(ids[i] / 16),
                                           static_cast<uint32_t>(ids[i] % 16)))
        << ids[i];
  }

  // The n-th data file's put fails.
  class FailingStore final : public strata::testing::ForwardingObjectStore {
   public:
    FailingStore(std::shared_ptr<ObjectStore> base, int fail_put)
        : ForwardingObjectStore(std::move(base)), fail_put_(fail_put) {}
    Status Put(std::string_view key, std::string_view data) override {
      if (key.find("/data/") != std::string_view::npos && ++data_puts_ == fail_put_) {
        return Status::IOError("injected: disk full");
      }
      return ForwardingObjectStore::Put(key, data);
    }

   private:
    const int fail_put_;
    std::atomic<int> data_puts_{0};
  };
  // The third fails while the fourth fragment is written (the next cut reports it); with 96
  // rows the sixth and last fragment is cut inside the Write, so only Finish can report it.
  for (auto [rows, fail_put] : {std::pair{100, 3}, std::pair{96, 6}}) {
    SCOPED_TRACE(::testing::Message() << rows << " rows, put " << fail_put << " fails");
    auto failing = std::make_shared<FailingStore>(store_, fail_put);
    ASSERT_OK_AND_ASSIGN(auto other, Table::Open(failing, "t/", options));
    Result<AppendResult> failed = other->Append({KeyedRows(100, rows)});
    ASSERT_TRUE(failed.status().IsIOError()) << failed.status();
    EXPECT_NE(failed.status().message().find("disk full"), std::string::npos) << failed.status();
    ASSERT_OK_AND_ASSIGN(uint64_t latest, table->LatestVersion());
    EXPECT_EQ(latest, 2u);
    ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
    EXPECT_EQ(Int64Column(all, "id"), Range(0, 100));
  }
}

TEST_F(TableTest, AppendCutsFragmentsByBytes) {
  TableOptions options;
  options.max_bytes_per_fragment = 2000;
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema(), options));
  ASSERT_OK_AND_ASSIGN(AppendResult r, table->Append({KeyedRows(0, 1000)}));
  EXPECT_GT(r.fragments, 3);
  EXPECT_LT(r.fragments, 100);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
  EXPECT_EQ(Int64Column(all, "id"), Range(0, 1000));
}

TEST_F(TableTest, DeleteByFilterAndNoMatchMakesNoCommit) {
  TableOptions options;
  options.max_rows_per_fragment = 10;
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema(), options));
  ASSERT_OK(table->Append({KeyedRows(0, 30)}).status());
  ASSERT_OK_AND_ASSIGN(DeleteResult d, table->Delete("id >= 5 AND id < 12"));
  EXPECT_EQ(d.version, 3u);
  EXPECT_EQ(d.rows_deleted, 7);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
  std::vector<int64_t> expected = Range(0, 5);
  for (int64_t i = 12; i < 30; ++i) expected.push_back(i);
  EXPECT_EQ(Int64Column(all, "id"), expected);
  ASSERT_OK_AND_ASSIGN(TableStats stats, table->Stats());
  EXPECT_EQ(stats.num_deleted_rows, 7);
  EXPECT_EQ(stats.num_deletion_files, 2);
  // Already deleted rows and non-matching filters commit nothing.
  ASSERT_OK_AND_ASSIGN(d, table->Delete("id >= 5 AND id < 12"));
  EXPECT_EQ(d.version, 3u);
  EXPECT_EQ(d.rows_deleted, 0);
  ASSERT_OK_AND_ASSIGN(d, table->Delete("id > 1000"));
  EXPECT_EQ(d.version, 3u);
  ASSERT_OK_AND_ASSIGN(uint64_t latest, table->LatestVersion());
  EXPECT_EQ(latest, 3u);
  // Deleting the remaining rows of a fragment removes it.
  ASSERT_OK_AND_ASSIGN(d, table->Delete("id < 5"));
  EXPECT_EQ(d.rows_deleted, 5);
  ASSERT_OK_AND_ASSIGN(stats, table->Stats());
  EXPECT_EQ(stats.num_fragments, 2);
  EXPECT_EQ(stats.num_rows, 18);
  Result<DeleteResult> empty = table->Delete("");
  EXPECT_TRUE(empty.status().IsInvalidArgument());
  Result<DeleteResult> bad = table->Delete("nope = 1");
  EXPECT_TRUE(bad.status().IsInvalidArgument());
  EXPECT_NE(bad.status().message().find("nope"), std::string::npos) << bad.status();
}

TEST_F(TableTest, DeleteEverything) {
  TableOptions options;
  options.max_rows_per_fragment = 8;
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema(), options));
  ASSERT_OK(table->Append({KeyedRows(0, 20)}).status());
  ASSERT_OK_AND_ASSIGN(DeleteResult d, table->Delete("true"));
  EXPECT_EQ(d.rows_deleted, 20);
  ASSERT_OK_AND_ASSIGN(TableStats stats, table->Stats());
  EXPECT_EQ(stats.num_fragments, 0);
  EXPECT_EQ(stats.num_rows, 0);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
  EXPECT_EQ(all.num_rows(), 0);
  ASSERT_OK_AND_ASSIGN(auto versions, table->ListVersions());
  EXPECT_EQ(versions.back().operation, "delete");
  // Keys of deleted rows are found no more; appends after it work.
  ASSERT_OK_AND_ASSIGN(RecordBatch found, table->LookupKeys({expr::Scalar::Int64(3)}));
  EXPECT_EQ(found.num_rows(), 0);
  ASSERT_OK(table->Append({KeyedRows(3, 1)}).status());
  ASSERT_OK_AND_ASSIGN(found, table->LookupKeys({expr::Scalar::Int64(3)}));
  EXPECT_EQ(found.num_rows(), 1);
}

TEST_F(TableTest, DeleteKeysDeletesEveryRowWithTheKey) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 10)}).status());
  ASSERT_OK(table->Append({KeyedRows(5, 3)}).status());  // 5, 6, 7 twice
  ASSERT_OK_AND_ASSIGN(DeleteResult d,
                       table->DeleteKeys({expr::Scalar::Int64(6), expr::Scalar::Int64(2),
                                          expr::Scalar::Int64(100), expr::Scalar::String("x")}));
  EXPECT_EQ(d.rows_deleted, 3);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
  EXPECT_EQ(Int64Column(all, "id"), (std::vector<int64_t>{0, 1, 3, 4, 5, 7, 8, 9, 5, 7}));
  ASSERT_OK_AND_ASSIGN(d, table->DeleteKeys({expr::Scalar::Int64(6)}));
  EXPECT_EQ(d.rows_deleted, 0);
  EXPECT_EQ(d.version, table->version());

  ASSERT_OK_AND_ASSIGN(auto unkeyed, Table::Create(store_, "u/", schema({field("a", int64())})));
  EXPECT_TRUE(unkeyed->DeleteKeys({expr::Scalar::Int64(1)}).status().IsInvalidArgument());
}

TEST_F(TableTest, ConcurrentDeletesOfOneFragmentBothLand) {
  ASSERT_OK_AND_ASSIGN(auto a, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(a->Append({KeyedRows(0, 20)}).status());
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  ASSERT_OK_AND_ASSIGN(DeleteResult da, a->Delete("id < 5"));
  // b still reads version 2 and deletes different rows plus two that a already deleted.
  ASSERT_OK_AND_ASSIGN(DeleteResult db, b->Delete("id >= 3 AND id < 10"));
  EXPECT_EQ(da.rows_deleted, 5);
  EXPECT_EQ(db.rows_deleted, 5);  // 3 and 4 were gone already
  EXPECT_EQ(db.version, 4u);
  ASSERT_OK(a->Refresh());
  for (auto* t : {a.get(), b.get()}) {
    ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*t));
    EXPECT_EQ(Int64Column(all, "id"), Range(10, 20));
  }
  // The remaining rows, deleted concurrently by both, remove the fragment exactly once.
  ASSERT_OK_AND_ASSIGN(auto c, Table::Open(store_, "t/"));
  ASSERT_OK_AND_ASSIGN(da, a->Delete("id >= 10"));
  ASSERT_OK_AND_ASSIGN(DeleteResult dc, c->Delete("id >= 15"));
  EXPECT_EQ(da.rows_deleted, 10);
  EXPECT_EQ(dc.rows_deleted, 0);
  EXPECT_EQ(dc.version, 4u);  // nothing committed; the handle stays where it was
  ASSERT_OK(c->Refresh());
  ASSERT_OK_AND_ASSIGN(int64_t rows, c->CountRows());
  EXPECT_EQ(rows, 0);
}

TEST_F(TableTest, AppendRacingDeleteBothLand) {
  ASSERT_OK_AND_ASSIGN(auto a, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(a->Append({KeyedRows(0, 10)}).status());
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  ASSERT_OK(a->Delete("id IN (0, 2, 4, 6, 8)").status());
  ASSERT_OK_AND_ASSIGN(AppendResult r, b->Append({KeyedRows(10, 4)}));
  EXPECT_EQ(r.version, 4u);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*b));
  EXPECT_EQ(Int64Column(all, "id"), (std::vector<int64_t>{1, 3, 5, 7, 9, 10, 11, 12, 13}));
  // The rebased append's keys are indexed under its final fragment id.
  ASSERT_OK_AND_ASSIGN(RecordBatch found, b->LookupKeys({expr::Scalar::Int64(12)}, {"id"}, true));
  ASSERT_EQ(found.num_rows(), 1);
  EXPECT_EQ(testing_util::UInt64Column(found, kRowAddressColumn)[0], MakeRowAddress(1, 2));
  // And in the other order: an append committed while a delete was computed.
  ASSERT_OK(a->Append({KeyedRows(20, 2)}).status());
  ASSERT_OK_AND_ASSIGN(DeleteResult d, b->Delete("id > 10"));
  EXPECT_EQ(d.rows_deleted, 3);  // 11, 12, 13: b did not see 20 and 21
  ASSERT_OK_AND_ASSIGN(all, ReadAll(*b));
  EXPECT_EQ(Int64Column(all, "id"), (std::vector<int64_t>{1, 3, 5, 7, 9, 10, 20, 21}));
}

TEST_F(TableTest, DeleteOfFragmentCompactedMeanwhileIsBusy) {
  ASSERT_OK_AND_ASSIGN(auto a, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(a->Append({KeyedRows(0, 5)}).status());
  ASSERT_OK(a->Append({KeyedRows(5, 5)}).status());
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  ASSERT_OK_AND_ASSIGN(CompactionResult compacted, a->Compact());
  ASSERT_EQ(compacted.fragments_removed, 2);
  Result<DeleteResult> conflict = b->Delete("id = 1");
  EXPECT_TRUE(conflict.status().IsBusy()) << conflict.status();
  EXPECT_NE(conflict.status().message().find("retry the delete"), std::string::npos)
      << conflict.status();
  EXPECT_EQ(b->version(), 3u);
  // Retrying on the new version works, through the merged key index too.
  ASSERT_OK(b->Refresh());
  ASSERT_OK_AND_ASSIGN(DeleteResult d, b->DeleteKeys({expr::Scalar::Int64(1)}));
  EXPECT_EQ(d.rows_deleted, 1);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*b));
  std::vector<int64_t> expected = Range(0, 10);
  expected.erase(expected.begin() + 1);
  EXPECT_EQ(Int64Column(all, "id"), expected);
}

TEST_F(TableTest, ThreadsDeletingRowsOfOneFragmentThroughOwnHandlesAllLand) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 40)}).status());
  std::vector<std::shared_ptr<Table>> handles;
  for (int t = 0; t < 3; ++t) {
    ASSERT_OK_AND_ASSIGN(auto h, Table::Open(store_, "t/"));
    handles.push_back(h);
  }
  std::vector<Result<DeleteResult>> results(3, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      results[t] =
          handles[t]->Delete(testing_util::IdsWhere(0, 40, [t](int64_t i) { return i % 4 == t; }));
    });
  }
  for (std::thread& thread : threads) thread.join();
  int64_t deleted = 0;
  for (const auto& r : results) {
    ASSERT_OK(r.status());
    deleted += r->rows_deleted;
  }
  EXPECT_EQ(deleted, 30);
  ASSERT_OK(table->Refresh());
  EXPECT_EQ(table->version(), 5u);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
  std::vector<int64_t> expected;
  for (int64_t i = 3; i < 40; i += 4) expected.push_back(i);
  EXPECT_EQ(Int64Column(all, "id"), expected);
}

TEST_F(TableTest, OneHandleAppendingFromManyThreads) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  std::vector<std::thread> threads;
  std::vector<Status> statuses(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { statuses[t] = table->Append({KeyedRows(t * 10, 10)}).status(); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& st : statuses) ASSERT_OK(st);
  EXPECT_EQ(table->version(), 5u);
  ASSERT_OK_AND_ASSIGN(int64_t rows, table->CountRows());
  EXPECT_EQ(rows, 40);
  ASSERT_OK_AND_ASSIGN(RecordBatch found,
                       table->LookupKeys({expr::Scalar::Int64(5), expr::Scalar::Int64(35)}));
  EXPECT_EQ(found.num_rows(), 2);
}

TEST_F(TableTest, AddColumnsReadsOldRowsAsNullAndStoresNewValues) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 3)}).status());
  ASSERT_OK_AND_ASSIGN(uint64_t v, table->AddColumns({field("tag", utf8()), field("n", int32())}));
  EXPECT_EQ(v, 3u);
  EXPECT_EQ(table->schema()->num_fields(), 5);
  SchemaPtr wide = table->schema();
  ASSERT_OK_AND_ASSIGN(RecordBatch new_rows,
                       json::RowsToBatch(schema({field("id", int64(), false), field("tag", utf8()),
                                                 field("n", int32())}),
                                         R"({"id": 10, "tag": "t", "n": 4})"));
  ASSERT_OK(table->Append({new_rows}).status());
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table, {.columns = {"id", "tag", "n"}}));
  ASSERT_EQ(all.num_rows(), 4);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(all.column(1).IsNull(i));
    EXPECT_TRUE(all.column(2).IsNull(i));
  }
  EXPECT_EQ(all.column(1).StringValue(3), "t");
  EXPECT_EQ(all.column(2).Value<int32_t>(3), 4);
  ASSERT_OK_AND_ASSIGN(int64_t tagged, table->CountRows("tag IS NOT NULL"));
  EXPECT_EQ(tagged, 1);

  auto expect_invalid = [&](std::vector<FieldPtr> fields, const std::string& mention) {
    Result<uint64_t> r = table->AddColumns(fields);
    EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
    EXPECT_NE(r.status().message().find(mention), std::string::npos) << r.status();
  };
  expect_invalid({field("strict", int64(), false)}, "strict");
  expect_invalid({field("tag", int64())}, "tag");
  expect_invalid({field("x", int64()), field("x", int64())}, "x");
  expect_invalid({}, "no columns");
  EXPECT_EQ(table->version(), 4u);
  ASSERT_OK_AND_ASSIGN(auto reopened, Table::Open(store_, "t/"));
  EXPECT_TRUE(reopened->schema()->Equals(*wide));
}

TEST_F(TableTest, UpdateMetadataSetsAndRemovesKeys) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  EXPECT_TRUE(table->metadata().empty());
  ASSERT_OK_AND_ASSIGN(uint64_t v, table->UpdateMetadata({{"owner", "ana"}, {"tier", "hot"}}));
  EXPECT_EQ(v, 2u);
  ASSERT_OK_AND_ASSIGN(v, table->UpdateMetadata({{"owner", ""}, {"tier", "cold"}}));
  EXPECT_EQ(v, 3u);
  ASSERT_OK_AND_ASSIGN(auto reopened, Table::Open(store_, "t/"));
  KeyValueMetadata m = reopened->metadata();
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.Get("tier"), "cold");
  EXPECT_FALSE(m.Get("owner").has_value());
}

TEST_F(TableTest, CheckoutReadsOldVersionsAndRefusesChanges) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 5)}).status());
  ASSERT_OK(table->Delete("id = 2").status());
  ASSERT_OK(table->AddColumns({field("extra", utf8())}).status());
  ASSERT_OK_AND_ASSIGN(auto versions, table->ListVersions());
  ASSERT_EQ(versions.size(), 4u);
  std::vector<std::string> operations;
  for (const VersionInfo& info : versions) operations.push_back(info.operation);
  EXPECT_EQ(operations, (std::vector<std::string>{"create", "append", "delete", "add_columns"}));
  EXPECT_EQ(versions[1].num_rows, 5);
  EXPECT_EQ(versions[2].num_rows, 4);
  EXPECT_EQ(versions[2].read_version, 2u);
  EXPECT_GT(versions[3].timestamp_micros, 0);

  ASSERT_OK_AND_ASSIGN(auto old, table->Checkout(2));
  EXPECT_TRUE(old->read_only());
  EXPECT_EQ(old->version(), 2u);
  EXPECT_EQ(old->schema()->num_fields(), 3);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*old));
  EXPECT_EQ(Int64Column(all, "id"), Range(0, 5));
  Result<AppendResult> refused = old->Append({KeyedRows(9, 1)});
  EXPECT_TRUE(refused.status().IsInvalidArgument());
  EXPECT_NE(refused.status().message().find("checked out at version 2 (read-only)"),
            std::string::npos)
      << refused.status();
  EXPECT_TRUE(old->Delete("true").status().IsInvalidArgument());
  EXPECT_TRUE(old->UpdateMetadata({{"a", "b"}}).status().IsInvalidArgument());
  EXPECT_TRUE(old->AddColumns({field("z", utf8())}).status().IsInvalidArgument());
  EXPECT_TRUE(old->Refresh().IsInvalidArgument());
  EXPECT_EQ(old->version(), 2u);
  ASSERT_OK_AND_ASSIGN(uint64_t latest, old->LatestVersion());
  EXPECT_EQ(latest, 4u);
  EXPECT_TRUE(table->Checkout(99).status().IsNotFound());
}

TEST_F(TableTest, PinHoldsTheCurrentVersionWhileTheHandleMovesOn) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 5)}).status());
  ASSERT_OK(table->UpdateMetadata({{"m", "2"}}).status());
  std::shared_ptr<Table> pinned = table->Pin();
  const uint64_t at = table->version();
  // Another handle commits; this one refreshes past the pin.
  ASSERT_OK_AND_ASSIGN(auto other, Table::Open(store_, "t/"));
  ASSERT_OK(other->Append({KeyedRows(5, 3)}).status());
  ASSERT_OK(other->UpdateMetadata({{"m", "4"}}).status());
  ASSERT_OK(table->Refresh());
  EXPECT_EQ(table->version(), at + 2);
  EXPECT_TRUE(pinned->read_only());
  EXPECT_EQ(pinned->version(), at);
  EXPECT_EQ(pinned->metadata().Get("m"), "2");
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*pinned));
  EXPECT_EQ(Int64Column(all, "id"), Range(0, 5));
  EXPECT_TRUE(pinned->Append({KeyedRows(9, 1)}).status().IsInvalidArgument());
}

TEST_F(TableTest, CheckoutBeforeCompactionStillReadsAndLooksUpOldFragments) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  for (int64_t i = 0; i < 4; ++i) ASSERT_OK(table->Append({KeyedRows(i * 5, 5)}).status());
  ASSERT_OK(table->Delete("id = 7").status());
  const uint64_t before = table->version();
  ASSERT_OK_AND_ASSIGN(CompactionResult compacted, table->Compact());
  EXPECT_GT(compacted.version, before);
  ASSERT_OK_AND_ASSIGN(auto old, table->Checkout(before));
  for (auto* t : {table.get(), old.get()}) {
    SCOPED_TRACE(t->version());
    ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*t, {.filter = "id >= 5 AND id < 10"}));
    EXPECT_EQ(Int64Column(all, "id"), (std::vector<int64_t>{5, 6, 8, 9}));
    ASSERT_OK_AND_ASSIGN(
        RecordBatch found,
        t->LookupKeys({expr::Scalar::Int64(7), expr::Scalar::Int64(13)}, {"id"}, true));
    EXPECT_EQ(Int64Column(found, "id"), (std::vector<int64_t>{13}));
    std::vector<uint64_t> addresses = testing_util::UInt64Column(found, kRowAddressColumn);
    ASSERT_OK_AND_ASSIGN(RecordBatch taken, t->Take(addresses, {"name"}));
    EXPECT_EQ(taken.column(0).StringValue(0), "n13");
  }
  ASSERT_OK_AND_ASSIGN(TableStats stats, table->Stats());
  EXPECT_EQ(stats.num_fragments, 1);
  EXPECT_EQ(stats.num_rows, 19);
  EXPECT_GT(stats.data_bytes, 0);
}

TEST_F(TableTest, RefreshMovesToTheNewestVersion) {
  ASSERT_OK_AND_ASSIGN(auto a, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  ASSERT_OK(a->Append({KeyedRows(0, 4)}).status());
  EXPECT_EQ(b->version(), 1u);
  ASSERT_OK_AND_ASSIGN(int64_t rows, b->CountRows());
  EXPECT_EQ(rows, 0);
  ASSERT_OK(b->Refresh());
  EXPECT_EQ(b->version(), 2u);
  ASSERT_OK_AND_ASSIGN(rows, b->CountRows());
  EXPECT_EQ(rows, 4);
}

TEST(TableLocalStoreTest, ReopenSeesEveryChange) {
  testing::TempDir dir("table");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ObjectStore> store, OpenLocalObjectStore(dir.str()));
  {
    TableOptions options;
    options.max_rows_per_fragment = 16;
    options.max_rows_per_batch = 5;
    ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store, "db/t/", KeyedSchema(), options));
    ASSERT_OK(table->Append({KeyedRows(0, 40)}).status());
    ASSERT_OK(table->Delete(testing_util::IdsWhere(0, 40, [](int64_t i) { return i % 3 == 0; }))
                  .status());
    ASSERT_OK(table->AddColumns({field("note", utf8())}).status());
    ASSERT_OK(table->UpdateMetadata({{"k", "v"}}).status());
  }
  ASSERT_OK_AND_ASSIGN(store, OpenLocalObjectStore(dir.str()));
  ASSERT_OK_AND_ASSIGN(auto table, Table::Open(store, "db/t/"));
  EXPECT_EQ(table->version(), 5u);
  EXPECT_EQ(table->metadata().Get("k"), "v");
  EXPECT_EQ(table->schema()->num_fields(), 4);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table));
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 40; ++i) {
    if (i % 3 != 0) expected.push_back(i);
  }
  EXPECT_EQ(Int64Column(all, "id"), expected);
  ASSERT_OK_AND_ASSIGN(RecordBatch found, table->LookupKeys({expr::Scalar::Int64(20)}));
  ASSERT_EQ(found.num_rows(), 1);
  EXPECT_EQ(found.column(1).StringValue(0), "n20");
  ASSERT_OK_AND_ASSIGN(VerifyReport report, table->Verify());
  EXPECT_TRUE(report.ok()) << (report.problems.empty() ? "" : report.problems[0]);
}

}  // namespace
}  // namespace strata::table
