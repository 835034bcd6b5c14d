// AppendWrittenFragments: committing data files written elsewhere (described with
// DescribeDataFile), with deletion files and a key segment, and what reads, deletes,
// appends and compaction make of them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "strata/ipc.h"
#include "table/commit.h"
#include "table/table_internal.h"
#include "table/table_test_util.h"

namespace strata::table::internal {
namespace {

using testing_util::Int64Column;
using testing_util::KeyedRows;
using testing_util::KeyedSchema;
using testing_util::ReadAll;
using testing_util::UInt64Column;

constexpr const char* kPrefix = "t/";

class AppendWrittenFragmentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::shared_ptr<Table>> table = Table::Create(store_, kPrefix, KeyedSchema());
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *table;
  }

  // The table's field ids of the named columns.
  std::vector<int32_t> FieldIds(const std::vector<std::string>& names) {
    Result<SnapshotPtr> snapshot = LoadVersion(*store_, kPrefix, table_->version());
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    std::vector<int32_t> ids;
    for (const std::string& name : names) {
      const int column = (*snapshot)->schema->GetFieldIndex(name);
      EXPECT_GE(column, 0) << name;
      ids.push_back((*snapshot)->field_ids[column]);
    }
    return ids;
  }

  // Puts columns `names` of `rows` as an Arrow IPC file of batches of `batch_rows` rows
  // (written by the IPC writer, not DataFileWriter) and describes it.
  pb::DataFile PutFile(const std::string& name, const RecordBatch& rows,
                       const std::vector<std::string>& names, int64_t batch_rows) {
    std::vector<int> columns;
    for (const std::string& column : names) columns.push_back(rows.schema()->GetFieldIndex(column));
    Result<RecordBatch> projected = rows.Project(columns);
    EXPECT_TRUE(projected.ok()) << projected.status();
    std::vector<RecordBatch> batches;
    for (int64_t i = 0; i < rows.num_rows(); i += batch_rows) {
      batches.push_back(projected->Slice(i, batch_rows));
    }
    ipc::WriteOptions options;
    options.compression = ipc::Compression::kZstd;
    Result<Buffer> file = ipc::WriteFileToBuffer(projected->schema(), batches, options);
    EXPECT_TRUE(file.ok()) << file.status();
    const std::string path = "data/" + name + ".arrow";
    EXPECT_TRUE(store_->Put(kPrefix + path, file->view()).ok());
    Result<pb::DataFile> entry =
        DescribeDataFile(*store_, kPrefix, path, *projected->schema(), FieldIds(names));
    EXPECT_TRUE(entry.ok()) << entry.status();
    return entry.ok() ? *entry : pb::DataFile();
  }

  // Ids 0..29 in one file (batches of 10) with rows `deleted` deleted, ids 30..44 in two
  // files ({id, name} and {score}, batches of 8), and a key segment over both.
  WrittenFragments TwoFragments() {
    WrittenFragments written;
    const RecordBatch first = KeyedRows(0, 30);
    const RecordBatch second = KeyedRows(30, 15);
    pb::Fragment a;
    a.set_physical_rows(30);
    *a.add_files() = PutFile("a", first, {"id", "name", "score"}, 10);
    DeletionVector deleted;
    for (uint32_t row : kDeletedRows) deleted.Add(row);
    // Written before the fragment has its id: any id in the name will do.
    Result<pb::DeletionFile> deletion =
        WriteDeletionFile(*store_, kPrefix, 999, table_->version(), 30, deleted);
    EXPECT_TRUE(deletion.ok()) << deletion.status();
    *a.mutable_deletion() = *deletion;
    pb::Fragment b;
    b.set_physical_rows(15);
    *b.add_files() = PutFile("b_keys", second, {"id", "name"}, 8);
    *b.add_files() = PutFile("b_scores", second, {"score"}, 8);
    KeySegmentBuilder keys(KeyKind::kInteger);
    EXPECT_TRUE(keys.Add(0, 0, first.column(0)).ok());
    EXPECT_TRUE(keys.Add(1, 0, second.column(0)).ok());
    Result<pb::KeySegment> segment = keys.Finish(*store_, kPrefix, {0, 0});
    EXPECT_TRUE(segment.ok()) << segment.status();
    written.key_segment = *segment;
    for (const pb::Fragment* f : {&a, &b}) {
      for (const pb::DataFile& file : f->files()) written.bytes_written += file.size();
    }
    written.bytes_written += deletion->size() + segment->size();
    written.fragments = {a, b};
    written.rows = 38;  // live rows
    return written;
  }

  // KeyedRows of the ids given, in order.
  static std::string ExpectedJson(const std::vector<int64_t>& ids) {
    std::string out;
    for (int64_t id : ids) out += json::BatchToJsonLines(KeyedRows(id, 1));
    return out;
  }

  static bool IsDeleted(int64_t id) {
    for (uint32_t row : kDeletedRows) {
      if (row == id) return true;
    }
    return false;
  }

  static constexpr uint32_t kDeletedRows[] = {3, 7, 20, 21, 22, 23, 24};
  std::shared_ptr<ObjectStore> store_ = NewMemoryObjectStore();
  std::shared_ptr<Table> table_;
};

std::vector<expr::Scalar> Keys(const std::vector<int64_t>& ids) {
  std::vector<expr::Scalar> keys;
  for (int64_t id : ids) keys.push_back(expr::Scalar::Int64(id));
  return keys;
}

TEST_F(AppendWrittenFragmentsTest, ReadsSkipDeletedRowsOfAppendedFragments) {
  WrittenFragments written = TwoFragments();
  const int64_t bytes = written.bytes_written;
  ASSERT_OK_AND_ASSIGN(AppendResult appended, AppendWrittenFragments(*table_, written));
  EXPECT_EQ(appended.version, 2u);
  EXPECT_EQ(table_->version(), 2u);
  EXPECT_EQ(appended.fragments, 2);
  EXPECT_EQ(appended.rows, 38);
  EXPECT_EQ(appended.bytes_written, bytes);

  std::vector<int64_t> live;
  for (int64_t id = 0; id < 45; ++id) {
    if (!IsDeleted(id)) live.push_back(id);
  }
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table_));
  EXPECT_EQ(Int64Column(all, "id"), live);
  EXPECT_EQ(json::BatchToJsonLines(all), ExpectedJson(live));
  ASSERT_OK_AND_ASSIGN(int64_t count, table_->CountRows());
  EXPECT_EQ(count, 38);
  ASSERT_OK_AND_ASSIGN(count, table_->CountRows("id < 10 OR score > 20"));
  EXPECT_EQ(count, 8 + 3);  // 0..9 without 3 and 7; 42..44 (41's score is null)

  // The key index finds live rows of both fragments and none of the deleted ones.
  ASSERT_OK_AND_ASSIGN(RecordBatch found, table_->LookupKeys(Keys({3, 5, 22, 40, 7, 29, 30})));
  EXPECT_EQ(Int64Column(found, "id"), (std::vector<int64_t>{5, 29, 30, 40}));
  EXPECT_EQ(json::BatchToJsonLines(found), ExpectedJson({5, 29, 30, 40}));
  ASSERT_OK_AND_ASSIGN(found, table_->LookupKeys(Keys({20, 21, 24})));
  EXPECT_EQ(found.num_rows(), 0);

  // Take refuses a deleted row.
  ScanOptions with_address;
  with_address.with_row_address = true;
  with_address.limit = 1;
  ASSERT_OK_AND_ASSIGN(RecordBatch first, ReadAll(*table_, with_address));
  const uint64_t row0 = UInt64Column(first, std::string(kRowAddressColumn)).at(0);
  ASSERT_OK_AND_ASSIGN(RecordBatch taken, table_->Take(std::vector<uint64_t>{row0 + 4}));
  EXPECT_EQ(Int64Column(taken, "id"), (std::vector<int64_t>{4}));
  EXPECT_TRUE(table_->Take(std::vector<uint64_t>{row0 + 3}).status().IsNotFound());

  ASSERT_OK_AND_ASSIGN(TableStats stats, table_->Stats());
  EXPECT_EQ(stats.num_rows, 38);
  EXPECT_EQ(stats.num_deleted_rows, 7);
  EXPECT_EQ(stats.num_fragments, 2);
  EXPECT_EQ(stats.num_data_files, 3);
  EXPECT_EQ(stats.num_deletion_files, 1);
  EXPECT_EQ(stats.unindexed_fragments, 0);
  ASSERT_OK_AND_ASSIGN(VerifyReport report, table_->Verify());
  EXPECT_TRUE(report.ok()) << fmt::format("{}", fmt::join(report.problems, "\n"));
  EXPECT_EQ(report.files_checked, 5);  // 3 data files, the deletion file, the key segment

  // A reopened handle sees the same.
  ASSERT_OK_AND_ASSIGN(auto reopened, Table::Open(store_, kPrefix));
  ASSERT_OK_AND_ASSIGN(RecordBatch again, ReadAll(*reopened));
  EXPECT_EQ(Int64Column(again, "id"), live);
}

TEST_F(AppendWrittenFragmentsTest, LaterChangesAndCompactionKeepTheDeletions) {
  ASSERT_OK(AppendWrittenFragments(*table_, TwoFragments()).status());
  // A second append (through Table::Append), then a delete merged into the appended
  // deletion file (3 is deleted already).
  ASSERT_OK_AND_ASSIGN(AppendResult appended, table_->Append({KeyedRows(100, 10)}));
  EXPECT_EQ(appended.version, 3u);
  ASSERT_OK_AND_ASSIGN(DeleteResult deleted, table_->Delete("id = 3 OR id = 10 OR id = 104"));
  EXPECT_EQ(deleted.rows_deleted, 2);

  std::vector<int64_t> live;
  for (int64_t id = 0; id < 45; ++id) {
    if (!IsDeleted(id) && id != 10) live.push_back(id);
  }
  for (int64_t id = 100; id < 110; ++id) {
    if (id != 104) live.push_back(id);
  }
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table_));
  EXPECT_EQ(Int64Column(all, "id"), live);
  ASSERT_OK_AND_ASSIGN(RecordBatch found, table_->LookupKeys(Keys({3, 10, 11, 40, 104, 105})));
  EXPECT_EQ(Int64Column(found, "id"), (std::vector<int64_t>{11, 40, 105}));

  ASSERT_OK_AND_ASSIGN(CompactionResult compacted, table_->Compact());
  EXPECT_GT(compacted.version, 0u);
  EXPECT_GT(compacted.fragments_removed, 0);
  ASSERT_OK_AND_ASSIGN(RecordBatch after, ReadAll(*table_));
  EXPECT_EQ(Int64Column(after, "id"), live);
  EXPECT_EQ(json::BatchToJsonLines(after), ExpectedJson(live));
  ASSERT_OK_AND_ASSIGN(found, table_->LookupKeys(Keys({3, 10, 11, 22, 40, 104, 105})));
  EXPECT_EQ(Int64Column(found, "id"), (std::vector<int64_t>{11, 40, 105}));
  ASSERT_OK_AND_ASSIGN(TableStats stats, table_->Stats());
  EXPECT_EQ(stats.num_rows, static_cast<int64_t>(live.size()));
  EXPECT_EQ(stats.num_deleted_rows, 0);
  ASSERT_OK_AND_ASSIGN(VerifyReport report, table_->Verify(VerifyOptions{.all_versions = true}));
  EXPECT_TRUE(report.ok()) << fmt::format("{}", fmt::join(report.problems, "\n"));
}

TEST_F(AppendWrittenFragmentsTest, UpsertReplacesOnlyLiveRowsOfAppendedFragments) {
  ASSERT_OK(AppendWrittenFragments(*table_, TwoFragments()).status());
  // Key 3 is deleted by the appended deletion file: upserting it deletes nothing.
  ASSERT_OK_AND_ASSIGN(RecordBatch rows,
                       ConcatenateBatches({KeyedRows(3, 1), KeyedRows(5, 1), KeyedRows(33, 1)}));
  ASSERT_OK_AND_ASSIGN(UpsertResult upserted, table_->Upsert({rows}));
  EXPECT_EQ(upserted.rows_deleted, 2);
  EXPECT_EQ(upserted.rows_appended, 3);
  ASSERT_OK_AND_ASSIGN(RecordBatch found, table_->LookupKeys(Keys({3, 5, 33, 7})));
  EXPECT_EQ(Int64Column(found, "id"), (std::vector<int64_t>{3, 5, 33}));
  ASSERT_OK_AND_ASSIGN(int64_t count, table_->CountRows());
  EXPECT_EQ(count, 38 + 1);
}

TEST_F(AppendWrittenFragmentsTest, StaleHandleRebasesOntoAConcurrentAppend) {
  ASSERT_OK_AND_ASSIGN(auto other, Table::Open(store_, kPrefix));
  WrittenFragments written = TwoFragments();
  ASSERT_OK(other->Append({KeyedRows(200, 5)}).status());
  ASSERT_OK_AND_ASSIGN(AppendResult appended, AppendWrittenFragments(*table_, written));
  EXPECT_EQ(appended.version, 3u);
  ASSERT_OK_AND_ASSIGN(TableStats stats, table_->Stats());
  EXPECT_EQ(stats.num_rows, 5 + 38);
  EXPECT_EQ(stats.unindexed_fragments, 0);
  ASSERT_OK_AND_ASSIGN(RecordBatch found, table_->LookupKeys(Keys({202, 3, 31, 23})));
  EXPECT_EQ(Int64Column(found, "id"), (std::vector<int64_t>{202, 31}));
  ASSERT_OK_AND_ASSIGN(VerifyReport report, table_->Verify());
  EXPECT_TRUE(report.ok()) << fmt::format("{}", fmt::join(report.problems, "\n"));
}

TEST_F(AppendWrittenFragmentsTest, EntriesThatDoNotFitTheTableAreInvalidArgument) {
  const WrittenFragments good = TwoFragments();
  auto expect_rejected = [&](const WrittenFragments& written, std::string_view expected) {
    Result<AppendResult> result = AppendWrittenFragments(*table_, written);
    EXPECT_TRUE(result.status().IsInvalidArgument()) << result.status();
    EXPECT_NE(result.status().message().find(expected), std::string::npos) << result.status();
    EXPECT_EQ(table_->version(), 1u);
  };
  {
    WrittenFragments w = good;
    w.fragments[0].mutable_deletion()->set_num_deleted(31);
    expect_rejected(w, "deletes 31 of 30 rows");
  }
  {
    WrittenFragments w = good;
    w.fragments[1].mutable_files(1)->set_field_ids(0, 77);
    expect_rejected(w, "field 77");
  }
  {
    WrittenFragments w = good;
    w.fragments[1].mutable_files(1)->set_field_ids(0, w.fragments[1].files(0).field_ids(1));
    expect_rejected(w, "more than one data file");
  }
  {
    WrittenFragments w = good;
    w.fragments[1].mutable_files()->DeleteSubrange(0, 1);  // leaves {score}: no key column
    expect_rejected(w, "no data file holds the key column 'id'");
  }
  {
    WrittenFragments w = good;
    w.fragments[1].set_physical_rows(16);
    expect_rejected(w, "has 15 rows, the fragment 16");
  }
  {
    WrittenFragments w = good;
    w.rows = 44;
    expect_rejected(w, "WrittenFragments::rows says 44");
  }
  {
    WrittenFragments w = good;
    w.key_segment->add_fragment_ids(0);
    expect_rejected(w, "lists 3 fragments, 2 are appended");
  }
  // Nothing to append: no commit.
  ASSERT_OK_AND_ASSIGN(AppendResult none, AppendWrittenFragments(*table_, WrittenFragments{}));
  EXPECT_EQ(none.version, 1u);
  EXPECT_EQ(table_->version(), 1u);
  // Read-only handles refuse.
  ASSERT_OK_AND_ASSIGN(auto checkout, table_->Checkout(1));
  EXPECT_TRUE(AppendWrittenFragments(*checkout, good).status().IsInvalidArgument());
  // The good entries still commit.
  ASSERT_OK_AND_ASSIGN(AppendResult appended, AppendWrittenFragments(*table_, good));
  EXPECT_EQ(appended.version, 2u);
}

TEST_F(AppendWrittenFragmentsTest, KeySegmentNeedsAKeyColumn) {
  ASSERT_OK_AND_ASSIGN(
      auto plain,
      Table::Create(store_, "plain/", schema({field("id", int64()), field("v", utf8())})));
  const WrittenFragments keyed = TwoFragments();
  WrittenFragments w;
  w.fragments = {keyed.fragments[1]};
  w.fragments[0].mutable_files()->DeleteSubrange(1, 1);  // {id, name}: field ids 0 and 1
  w.rows = 15;
  w.key_segment = keyed.key_segment;
  Result<AppendResult> result = AppendWrittenFragments(*plain, w);
  EXPECT_TRUE(result.status().IsInvalidArgument()) << result.status();
  EXPECT_NE(result.status().message().find("no primary-key column"), std::string::npos)
      << result.status();
  EXPECT_EQ(plain->version(), 1u);
}

TEST_F(AppendWrittenFragmentsTest, FragmentWithoutANonNullableColumnIsRefused) {
  // Reads refuse nulls in a non-nullable column, so such a fragment is never committed.
  ASSERT_OK_AND_ASSIGN(
      auto strict,
      Table::Create(store_, "strict/",
                    schema({field("id", int64(), false, testing_util::PrimaryKey()),
                            field("name", utf8()), field("score", float64(), false)})));
  WrittenFragments w;
  w.fragments = {TwoFragments().fragments[1]};
  w.fragments[0].mutable_files()->DeleteSubrange(1, 1);  // {id, name} only
  w.rows = 15;
  Result<AppendResult> result = AppendWrittenFragments(*strict, w);
  EXPECT_TRUE(result.status().IsInvalidArgument()) << result.status();
  EXPECT_NE(result.status().message().find("no data file holds the non-nullable column 'score'"),
            std::string::npos)
      << result.status();
  EXPECT_EQ(strict->version(), 1u);
  // Without the nullable column it is fine: those rows read it as null.
  ASSERT_OK(AppendWrittenFragments(*table_, w).status());
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table_));
  EXPECT_EQ(all.num_rows(), 15);
  EXPECT_EQ(all.GetColumnByName("score").null_count(), 15);
}

}  // namespace
}  // namespace strata::table::internal
