// Compaction through the public Table API: merging small fragments, materializing
// deletions, the merged key index, bounded passes, and commits racing a compaction.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/builder.h"
#include "strata/object_store.h"
#include "strata/table.h"

namespace strata::table {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kPrefix = "tbl/";

SchemaPtr IntKeySchema() {
  return schema({field("id", int64(), /*nullable=*/false,
                       KeyValueMetadata({{std::string(kPrimaryKeyMetadata), "true"}})),
                 field("name", utf8()), field("score", float64())});
}

SchemaPtr StringKeySchema() {
  return schema({field("key", utf8(), /*nullable=*/false,
                       KeyValueMetadata({{std::string(kPrimaryKeyMetadata), "true"}})),
                 field("n", int32())});
}

// Rows with ids [first, first + n), names "row<id>" (null for every 7th) and scores id / 2.
RecordBatch Rows(int64_t first, int64_t n) {
  Int64Builder ids(int64());
  BinaryBuilder names(utf8());
  Float64Builder scores(float64());
  for (int64_t i = first; i < first + n; ++i) {
    ids.Append(i);
    if (i % 7 == 0) {
      names.AppendNull();
    } else {
      EXPECT_TRUE(names.Append("row" + std::to_string(i)).ok());
    }
    scores.Append(static_cast<double>(i) / 2);
  }
  Result<RecordBatch> batch =
      RecordBatch::Make(IntKeySchema(), n, {*ids.Finish(), *names.Finish(), *scores.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// Wide rows: an int64 key and a 1000-byte string, about 1 KB uncompressed per row.
SchemaPtr WideSchema() {
  return schema({field("id", int64(), /*nullable=*/false,
                       KeyValueMetadata({{std::string(kPrimaryKeyMetadata), "true"}})),
                 field("payload", utf8())});
}

RecordBatch WideRows(int64_t first, int64_t n) {
  Int64Builder ids(int64());
  BinaryBuilder payloads(utf8());
  for (int64_t i = first; i < first + n; ++i) {
    ids.Append(i);
    std::string payload = std::to_string(i) + ":";
    payload.resize(1000, static_cast<char>('a' + i % 26));
    EXPECT_TRUE(payloads.Append(payload).ok());
  }
  Result<RecordBatch> batch =
      RecordBatch::Make(WideSchema(), n, {*ids.Finish(), *payloads.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// Fragments are cut at 32 KiB uncompressed: a few dozen wide rows.
TableOptions SmallFragmentBytes() {
  TableOptions options;
  options.max_bytes_per_fragment = 32 * 1024;
  options.max_bytes_per_batch = 8 * 1024;
  return options;
}

RecordBatch StringRows(const std::vector<std::string>& keys, int32_t n) {
  BinaryBuilder key_builder(utf8());
  Int32Builder ns(int32());
  for (const std::string& key : keys) {
    EXPECT_TRUE(key_builder.Append(key).ok());
    ns.Append(n);
  }
  Result<RecordBatch> batch = RecordBatch::Make(
      StringKeySchema(), static_cast<int64_t>(keys.size()), {*key_builder.Finish(), *ns.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// Every live row as text, sorted (so contents compare independently of row order).
std::vector<std::string> SortedRows(const Table& table) {
  Result<std::unique_ptr<BatchIterator>> scan = table.Scan();
  EXPECT_TRUE(scan.ok()) << scan.status();
  if (!scan.ok()) return {};
  Result<std::vector<RecordBatch>> batches = (*scan)->ToBatches();
  EXPECT_TRUE(batches.ok()) << batches.status();
  if (!batches.ok()) return {};
  std::vector<std::string> rows;
  for (const RecordBatch& batch : *batches) {
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      std::string row;
      for (int c = 0; c < batch.num_columns(); ++c) row += batch.column(c).ValueToString(r) + "|";
      rows.push_back(std::move(row));
    }
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// The ids LookupKeys returns for `keys`, sorted.
std::vector<int64_t> LookupIds(const Table& table, const std::vector<int64_t>& keys) {
  std::vector<expr::Scalar> scalars;
  for (int64_t key : keys) scalars.push_back(expr::Scalar::Int64(key));
  Result<RecordBatch> batch = table.LookupKeys(scalars, {"id"});
  EXPECT_TRUE(batch.ok()) << batch.status();
  if (!batch.ok()) return {};
  std::vector<int64_t> ids;
  for (int64_t r = 0; r < batch->num_rows(); ++r) ids.push_back(batch->column(0).Value<int64_t>(r));
  std::sort(ids.begin(), ids.end());
  return ids;
}

class CompactionTest : public ::testing::Test {
 protected:
  std::shared_ptr<Table> Create(SchemaPtr s = IntKeySchema(), TableOptions options = {}) {
    Result<std::shared_ptr<Table>> table = Table::Create(store_, std::string(kPrefix), s, options);
    EXPECT_TRUE(table.ok()) << table.status();
    return table.ok() ? *table : nullptr;
  }
  std::shared_ptr<Table> OpenAgain() {
    Result<std::shared_ptr<Table>> table = Table::Open(store_, std::string(kPrefix));
    EXPECT_TRUE(table.ok()) << table.status();
    return table.ok() ? *table : nullptr;
  }
  // `count` appends of `rows` rows each, ids continuing from `first`.
  void AppendMany(Table& table, int64_t first, int count, int64_t rows) {
    for (int i = 0; i < count; ++i) {
      Result<AppendResult> appended = table.Append({Rows(first + i * rows, rows)});
      ASSERT_TRUE(appended.ok()) << appended.status();
    }
  }
  void AppendWide(Table& table, int64_t first, int count, int64_t rows) {
    for (int i = 0; i < count; ++i) {
      Result<AppendResult> appended = table.Append({WideRows(first + i * rows, rows)});
      ASSERT_TRUE(appended.ok()) << appended.status();
    }
  }
  // Compacts until a pass has nothing to do; returns how many passes committed, or -1 when
  // `max_passes` passes did not get there.
  int CompactUntilDone(Table& table, const CompactionOptions& options, int max_passes) {
    for (int passes = 0; passes <= max_passes; ++passes) {
      Result<CompactionResult> result = table.Compact(options);
      EXPECT_TRUE(result.ok()) << result.status();
      if (!result.ok()) return -1;
      if (result->version == 0) return passes;
    }
    return -1;
  }
  TableStats Stats(const Table& table) {
    Result<TableStats> stats = table.Stats();
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? *stats : TableStats{};
  }

  std::shared_ptr<ObjectStore> store_ = NewMemoryObjectStore();
};

TEST_F(CompactionTest, MergesSmallAppendsAndKeepsContents) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 12, 25);
  const std::vector<std::string> before = SortedRows(*table);
  ASSERT_EQ(before.size(), 300u);
  ASSERT_EQ(Stats(*table).num_fragments, 12);
  const uint64_t version = table->version();

  std::vector<std::pair<int64_t, int64_t>> progress;
  CompactionOptions options;
  options.target_rows_per_fragment = 1000;
  options.progress = [&](int64_t done, int64_t total) { progress.emplace_back(done, total); };
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, version + 1);
  EXPECT_EQ(table->version(), version + 1);
  EXPECT_EQ(result->fragments_removed, 12);
  EXPECT_EQ(result->fragments_added, 1);
  EXPECT_EQ(result->files_removed, 12);
  EXPECT_EQ(result->files_added, 1);
  EXPECT_EQ(result->rows_written, 300);
  EXPECT_GT(result->bytes_read, 0);
  EXPECT_GT(result->bytes_written, 0);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), std::make_pair(int64_t{300}, int64_t{300}));
  for (size_t i = 1; i < progress.size(); ++i) EXPECT_GE(progress[i].first, progress[i - 1].first);

  TableStats stats = Stats(*table);
  EXPECT_EQ(stats.num_fragments, 1);
  EXPECT_EQ(stats.num_rows, 300);
  EXPECT_EQ(stats.data_bytes, result->bytes_written);
  EXPECT_EQ(stats.num_index_segments, 1);
  EXPECT_EQ(stats.unindexed_fragments, 0);
  EXPECT_EQ(SortedRows(*table), before);
  // A fresh handle reads the same, and the operation is recorded.
  auto reopened = OpenAgain();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(SortedRows(*reopened), before);
  Result<std::vector<VersionInfo>> versions = reopened->ListVersions();
  ASSERT_TRUE(versions.ok()) << versions.status();
  EXPECT_EQ(versions->back().operation, "compact");
  EXPECT_EQ(versions->back().read_version, version);
}

TEST_F(CompactionTest, GroupsStopAtTheTargetAndSkipLargeFragments) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 3, 40);      // three small fragments
  AppendMany(*table, 1000, 1, 200);  // one at the target: left alone
  AppendMany(*table, 2000, 1, 40);   // a lone small fragment: nothing to merge it with
  const std::vector<std::string> before = SortedRows(*table);
  CompactionOptions options;
  options.target_rows_per_fragment = 100;
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  // 40 + 40 fit under 100; the third starts a group of its own, which has no partner.
  EXPECT_EQ(result->fragments_removed, 2);
  EXPECT_EQ(result->fragments_added, 1);
  EXPECT_EQ(Stats(*table).num_fragments, 4);
  EXPECT_EQ(SortedRows(*table), before);
}

TEST_F(CompactionTest, LargeGroupIsCutIntoSeveralFragmentsWithCorrectKeys) {
  TableOptions table_options;
  table_options.max_rows_per_fragment = 30;
  table_options.max_rows_per_batch = 8;
  auto table = Create(IntKeySchema(), table_options);
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 10, 10);
  ASSERT_TRUE(table->Delete("id IN (0, 10, 20, 30, 40, 50, 60, 70, 80, 90)").ok());
  const std::vector<std::string> before = SortedRows(*table);
  CompactionOptions options;
  options.target_rows_per_fragment = 1000;
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->fragments_removed, 10);
  EXPECT_EQ(result->fragments_added, 3);  // 90 live rows in fragments of at most 30
  EXPECT_EQ(result->rows_written, 90);
  EXPECT_EQ(result->files_removed, 20);  // every source had a deletion file
  TableStats stats = Stats(*table);
  EXPECT_EQ(stats.num_fragments, 3);
  EXPECT_EQ(stats.num_deletion_files, 0);
  EXPECT_EQ(stats.num_index_segments, 1);
  EXPECT_EQ(stats.unindexed_fragments, 0);
  EXPECT_EQ(SortedRows(*table), before);
  // Every key, in every new fragment, is found at the row that holds it.
  std::vector<int64_t> all;
  std::vector<expr::Scalar> keys;
  for (int64_t id = 0; id < 100; ++id) {
    keys.push_back(expr::Scalar::Int64(id));
    if (id % 10 != 0) all.push_back(id);
  }
  EXPECT_EQ(LookupIds(*table, all), all);
  Result<RecordBatch> found = table->LookupKeys(keys, {"id"}, /*with_row_address=*/true);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->num_rows(), 90);
  std::vector<uint64_t> addresses;
  for (int64_t r = 0; r < found->num_rows(); ++r) {
    addresses.push_back(found->column(1).Value<uint64_t>(r));
  }
  Result<RecordBatch> taken = table->Take(addresses, {"id"});
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_TRUE(taken->column(0).Equals(found->column(0)));
}

TEST_F(CompactionTest, ColumnsAddedLaterAreCarriedOver) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 3, 10);
  ASSERT_TRUE(table->AddColumns({field("extra", int32())}).ok());
  Int64Builder ids(int64());
  Int32Builder extra(int32());
  for (int i = 0; i < 5; ++i) {
    ids.Append(100 + i);
    extra.Append(i);
  }
  SchemaPtr partial = schema({field("id", int64(), false), field("extra", int32())});
  Result<RecordBatch> batch = RecordBatch::Make(partial, 5, {*ids.Finish(), *extra.Finish()});
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_TRUE(table->Append({*batch}).ok());
  const std::vector<std::string> before = SortedRows(*table);
  ASSERT_EQ(before.size(), 35u);
  Result<CompactionResult> result = table->Compact();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->fragments_removed, 4);
  EXPECT_EQ(Stats(*table).num_fragments, 1);
  EXPECT_EQ(SortedRows(*table), before);
  EXPECT_EQ(table->CountRows("extra IS NULL").value(), 30);
  EXPECT_EQ(table->CountRows("extra = 3").value(), 1);
}

TEST_F(CompactionTest, MaterializesDeletionsAboveThresholdOnly) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 2, 100);
  ASSERT_TRUE(table->Delete("id < 20").ok());                 // 20% of fragment 1
  ASSERT_TRUE(table->Delete("id >= 100 AND id < 105").ok());  // 5% of fragment 2
  const std::vector<std::string> before = SortedRows(*table);
  ASSERT_EQ(before.size(), 175u);
  TableStats stats = Stats(*table);
  ASSERT_EQ(stats.num_deletion_files, 2);

  CompactionOptions options;
  options.target_rows_per_fragment = 50;  // neither fragment is small
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->fragments_removed, 1);
  EXPECT_EQ(result->fragments_added, 1);
  EXPECT_EQ(result->files_removed, 2);  // data file and deletion file
  EXPECT_EQ(result->rows_written, 80);
  stats = Stats(*table);
  EXPECT_EQ(stats.num_fragments, 2);
  EXPECT_EQ(stats.num_deletion_files, 1);  // the 5% one stays
  EXPECT_EQ(stats.num_deleted_rows, 5);
  EXPECT_EQ(stats.num_rows, 175);
  EXPECT_EQ(SortedRows(*table), before);
  EXPECT_EQ(LookupIds(*table, {0, 19, 20, 99, 100, 104, 105}), (std::vector<int64_t>{20, 99, 105}));

  // With materialization off, nothing qualifies.
  ASSERT_TRUE(table->Delete("id >= 100 AND id < 150").ok());
  options.materialize_deletions = false;
  result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, 0u);
  EXPECT_EQ(Stats(*table).num_deletion_files, 1);
  // Turned back on, the now half-deleted fragment is rewritten.
  options.materialize_deletions = true;
  result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->fragments_removed, 1);
  EXPECT_EQ(result->fragments_added, 1);
  EXPECT_EQ(result->rows_written, 50);
  stats = Stats(*table);
  EXPECT_EQ(stats.num_fragments, 2);
  EXPECT_EQ(stats.num_deletion_files, 0);
  EXPECT_EQ(stats.num_deleted_rows, 0);
  EXPECT_EQ(stats.num_rows, 130);
  EXPECT_EQ(LookupIds(*table, {20, 120, 149, 150, 199}), (std::vector<int64_t>{20, 150, 199}));
}

TEST_F(CompactionTest, KeyLookupsWorkAfterCompactionAndFurtherAppends) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 8, 10);
  AppendMany(*table, 1000, 1, 500);  // large: not rewritten, its index entries are kept
  ASSERT_TRUE(table->Delete("id = 3 OR id = 1004").ok());
  CompactionOptions options;
  options.target_rows_per_fragment = 100;
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->fragments_removed, 8);
  TableStats stats = Stats(*table);
  EXPECT_EQ(stats.num_index_segments, 1);
  EXPECT_EQ(stats.unindexed_fragments, 0);

  EXPECT_EQ(LookupIds(*table, {0, 3, 42, 79, 80, 1000, 1004, 1499, -1}),
            (std::vector<int64_t>{0, 42, 79, 1000, 1499}));
  // Duplicated keys in a later append show up beside the compacted rows.
  ASSERT_TRUE(table->Append({Rows(40, 5)}).ok());
  ASSERT_TRUE(table->Append({Rows(1004, 1)}).ok());
  EXPECT_EQ(LookupIds(*table, {42, 1004, 3}), (std::vector<int64_t>{42, 42, 1004}));
  // And after compacting those appends too (now 1 large + merged + 2 small).
  result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(LookupIds(*table, {42, 1004, 3, 79}), (std::vector<int64_t>{42, 42, 79, 1004}));
  stats = Stats(*table);
  EXPECT_EQ(stats.num_index_segments, 1);
  EXPECT_EQ(stats.unindexed_fragments, 0);
}

TEST_F(CompactionTest, StringKeysAreIndexedAfterCompaction) {
  auto table = Create(StringKeySchema());
  ASSERT_NE(table, nullptr);
  for (int32_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        table->Append({StringRows({"a" + std::to_string(i), "b" + std::to_string(i), "shared"}, i)})
            .ok());
  }
  Result<CompactionResult> result = table->Compact();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->fragments_removed, 5);
  EXPECT_EQ(Stats(*table).unindexed_fragments, 0);
  Result<RecordBatch> found = table->LookupKeys(
      {expr::Scalar::String("shared"), expr::Scalar::String("b3"), expr::Scalar::String("zz")});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->num_rows(), 6);
  std::vector<std::string> keys;
  for (int64_t r = 0; r < found->num_rows(); ++r) {
    keys.emplace_back(found->column(0).StringValue(r));
  }
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"b3", "shared", "shared", "shared", "shared", "shared"}));
}

TEST_F(CompactionTest, MaxSourceFragmentsBoundsAPassAndPassesConverge) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 10, 10);
  const std::vector<std::string> before = SortedRows(*table);
  CompactionOptions options;
  options.target_rows_per_fragment = 1000;
  options.max_source_fragments = 4;
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->fragments_removed, 4);
  EXPECT_EQ(result->fragments_added, 1);
  EXPECT_EQ(Stats(*table).num_fragments, 7);
  int passes = 1;
  while (true) {
    result = table->Compact(options);
    ASSERT_TRUE(result.ok()) << result.status();
    if (result->version == 0) break;
    EXPECT_LE(result->fragments_removed, 4);
    ASSERT_LT(++passes, 10) << "compaction does not converge";
  }
  EXPECT_EQ(passes, 3);  // 10 -> 7 -> 4 -> 1
  EXPECT_EQ(Stats(*table).num_fragments, 1);
  EXPECT_EQ(SortedRows(*table), before);
  EXPECT_EQ(LookupIds(*table, {0, 55, 99}), (std::vector<int64_t>{0, 55, 99}));
}

TEST_F(CompactionTest, ManyKeySegmentsAreMergedWithoutRewritingData) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 16, 20);
  ASSERT_EQ(Stats(*table).num_index_segments, 16);
  CompactionOptions options;
  options.target_rows_per_fragment = 10;  // no fragment is small
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->version, 0u);
  EXPECT_EQ(result->fragments_removed, 0);
  EXPECT_EQ(result->fragments_added, 0);
  EXPECT_EQ(result->rows_written, 0);
  TableStats stats = Stats(*table);
  EXPECT_EQ(stats.num_fragments, 16);
  EXPECT_EQ(stats.num_index_segments, 1);
  EXPECT_EQ(stats.unindexed_fragments, 0);
  EXPECT_EQ(LookupIds(*table, {0, 19, 20, 319, 320}), (std::vector<int64_t>{0, 19, 20, 319}));
  // One segment: nothing left to do.
  result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, 0u);
}

TEST_F(CompactionTest, AppendCommittedDuringCompactionStaysVisible) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 5, 10);
  auto other = OpenAgain();
  ASSERT_NE(other, nullptr);
  uint64_t append_version = 0;
  CompactionOptions options;
  options.target_rows_per_fragment = 1000;
  options.progress = [&](int64_t, int64_t) {
    if (append_version != 0) return;
    Result<AppendResult> appended = other->Append({Rows(500, 10)});
    ASSERT_TRUE(appended.ok()) << appended.status();
    append_version = appended->version;
  };
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_NE(append_version, 0u);
  EXPECT_EQ(result->version, append_version + 1);
  EXPECT_EQ(result->fragments_removed, 5);
  TableStats stats = Stats(*table);
  EXPECT_EQ(stats.num_fragments, 2);  // the merged one and the concurrent append
  EXPECT_EQ(stats.num_rows, 60);
  EXPECT_EQ(stats.unindexed_fragments, 0);
  EXPECT_EQ(SortedRows(*table).size(), 60u);
  EXPECT_EQ(LookupIds(*table, {3, 505}), (std::vector<int64_t>{3, 505}));
  ASSERT_TRUE(other->Refresh().ok());
  EXPECT_EQ(other->version(), result->version);
  EXPECT_EQ(SortedRows(*other), SortedRows(*table));
}

TEST_F(CompactionTest, DeleteOfASourceDuringCompactionMakesItBusy) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 5, 10);
  const TableStats before = Stats(*table);
  auto other = OpenAgain();
  ASSERT_NE(other, nullptr);
  uint64_t delete_version = 0;
  CompactionOptions options;
  options.target_rows_per_fragment = 1000;
  options.progress = [&](int64_t, int64_t) {
    if (delete_version != 0) return;
    Result<DeleteResult> deleted = other->Delete("id = 13");
    ASSERT_TRUE(deleted.ok()) << deleted.status();
    delete_version = deleted->version;
  };
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.status().IsBusy()) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("retry the compaction"));
  Result<uint64_t> latest = table->LatestVersion();
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, delete_version);
  ASSERT_TRUE(table->Refresh().ok());
  TableStats after = Stats(*table);
  EXPECT_EQ(after.num_fragments, before.num_fragments);
  EXPECT_EQ(after.num_rows, 49);
  EXPECT_EQ(after.num_deletion_files, 1);
  EXPECT_TRUE(LookupIds(*table, {13}).empty());
  // Retrying now succeeds and keeps the delete.
  result = table->Compact(CompactionOptions{.target_rows_per_fragment = 1000});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Stats(*table).num_fragments, 1);
  EXPECT_EQ(Stats(*table).num_rows, 49);
  EXPECT_TRUE(LookupIds(*table, {13}).empty());
}

TEST_F(CompactionTest, DeleteOfAnotherFragmentDuringCompactionIsKept) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 4, 10);
  AppendMany(*table, 100, 1, 200);  // not a candidate
  auto other = OpenAgain();
  ASSERT_NE(other, nullptr);
  bool deleted = false;
  CompactionOptions options;
  options.target_rows_per_fragment = 100;
  options.progress = [&](int64_t, int64_t) {
    if (deleted) return;
    deleted = true;
    ASSERT_TRUE(other->Delete("id = 150").ok());
  };
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->fragments_removed, 4);
  EXPECT_EQ(Stats(*table).num_rows, 239);
  EXPECT_EQ(Stats(*table).num_deletion_files, 1);
  EXPECT_EQ(LookupIds(*table, {150, 151, 5}), (std::vector<int64_t>{5, 151}));
}

TEST_F(CompactionTest, NothingToDoLeavesTheVersionUnchanged) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  Result<CompactionResult> result = table->Compact();  // empty table
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, 0u);
  AppendMany(*table, 0, 1, 10);
  const uint64_t version = table->version();
  result = table->Compact();  // a single small fragment has nothing to merge with
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, 0u);
  EXPECT_EQ(result->fragments_removed, 0);
  EXPECT_EQ(result->rows_written, 0);
  EXPECT_EQ(table->version(), version);
  Result<uint64_t> latest = table->LatestVersion();
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(*latest, version);
}

TEST_F(CompactionTest, FragmentsCutAtTheByteLimitAreFullAndLeftAlone) {
  auto table = Create(WideSchema(), SmallFragmentBytes());
  ASSERT_NE(table, nullptr);
  AppendWide(*table, 0, 1, 200);  // one append, cut by bytes long before the row target
  const int64_t fragments = Stats(*table).num_fragments;
  ASSERT_GE(fragments, 4);
  const uint64_t version = table->version();
  // Every fragment but the last is full, and the last has no small neighbour.
  Result<CompactionResult> result = table->Compact();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, 0u);
  EXPECT_EQ(result->fragments_removed, 0);
  EXPECT_EQ(result->rows_written, 0);
  EXPECT_EQ(table->version(), version);
  EXPECT_EQ(Stats(*table).num_fragments, fragments);
}

TEST_F(CompactionTest, WideRowsCompactionIsIdempotentAndConverges) {
  auto table = Create(WideSchema(), SmallFragmentBytes());
  ASSERT_NE(table, nullptr);
  AppendWide(*table, 0, 12, 10);  // twelve fragments of about 10 KB: genuinely small
  ASSERT_EQ(Stats(*table).num_fragments, 12);
  Result<CompactionResult> result = table->Compact();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_NE(result->version, 0u);
  EXPECT_EQ(result->fragments_removed, 12);
  EXPECT_EQ(result->rows_written, 120);
  // 120 KB in fragments cut at 32 KiB.
  EXPECT_GE(result->fragments_added, 3);
  EXPECT_LT(result->fragments_added, 12);
  const uint64_t version = table->version();

  // Right after a compaction there is nothing to do.
  result = table->Compact();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, 0u);
  EXPECT_EQ(result->rows_written, 0);
  Result<uint64_t> latest = table->LatestVersion();
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, version);

  // Byte-cut appends, small appends and a fragment with most rows deleted: a loop until
  // nothing is left to do ends after a pass or two, and the next call does nothing.
  AppendWide(*table, 1000, 1, 100);
  AppendWide(*table, 2000, 3, 5);
  ASSERT_TRUE(table->Delete("id >= 1000 AND id < 1020").ok());
  const std::vector<std::string> before = SortedRows(*table);
  const int passes = CompactUntilDone(*table, {}, 4);
  EXPECT_GE(passes, 1);
  EXPECT_LE(passes, 2);
  result = table->Compact();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, 0u);
  EXPECT_EQ(Stats(*table).num_deletion_files, 0);
  EXPECT_EQ(SortedRows(*table), before);
  EXPECT_EQ(LookupIds(*table, {5, 119, 1019, 1020, 1099, 2014}),
            (std::vector<int64_t>{5, 119, 1020, 1099, 2014}));
}

TEST_F(CompactionTest, TargetBytesBoundsMergesAndAPassRightAfterHasNothingToDo) {
  TableOptions table_options;
  table_options.max_bytes_per_fragment = 1 << 20;
  auto table = Create(WideSchema(), table_options);
  ASSERT_NE(table, nullptr);
  AppendWide(*table, 0, 6, 10);  // about 10.1 KB each
  const std::vector<std::string> before = SortedRows(*table);
  CompactionOptions options;
  options.target_bytes_per_fragment = 25000;  // two fit, three do not
  Result<CompactionResult> result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->fragments_removed, 6);
  EXPECT_EQ(result->fragments_added, 3);
  EXPECT_EQ(Stats(*table).num_fragments, 3);
  // Each new fragment is below the target, but no two fit together.
  result = table->Compact(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, 0u);
  EXPECT_EQ(SortedRows(*table), before);
}

TEST_F(CompactionTest, FragmentsCutAtTheRowLimitAreFullAndLeftAlone) {
  TableOptions table_options;
  table_options.max_rows_per_fragment = 30;
  auto table = Create(IntKeySchema(), table_options);
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 1, 100);  // 30, 30, 30, 10
  ASSERT_EQ(Stats(*table).num_fragments, 4);
  // The default target is above the table's limit, which makes those fragments full.
  Result<CompactionResult> result = table->Compact();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, 0u);
  // Small fragments after the last full one are still merged, once.
  AppendMany(*table, 100, 3, 5);
  const std::vector<std::string> before = SortedRows(*table);
  result = table->Compact();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->fragments_removed, 4);  // 10 + 5 + 5 + 5
  EXPECT_EQ(result->fragments_added, 1);
  EXPECT_EQ(Stats(*table).num_fragments, 4);
  result = table->Compact();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->version, 0u);
  EXPECT_EQ(SortedRows(*table), before);
}

TEST_F(CompactionTest, InvalidOptionsAreRejected) {
  auto table = Create();
  ASSERT_NE(table, nullptr);
  AppendMany(*table, 0, 2, 10);
  EXPECT_TRUE(table->Compact({.target_rows_per_fragment = 0}).status().IsInvalidArgument());
  EXPECT_TRUE(table->Compact({.target_bytes_per_fragment = 0}).status().IsInvalidArgument());
  EXPECT_TRUE(
      table->Compact({.materialize_deletions_threshold = 1.5}).status().IsInvalidArgument());
  EXPECT_TRUE(table->Compact({.max_source_fragments = -1}).status().IsInvalidArgument());
  EXPECT_EQ(Stats(*table).num_fragments, 2);
}

}  // namespace
}  // namespace strata::table
