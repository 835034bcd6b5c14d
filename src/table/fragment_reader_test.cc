// FragmentReader statistics: decoded on first use, they must equal what the manifest records
// for every batch and column in any order of asking, and a missing entry still fails Open.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "strata/expr.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "table/data_file.h"
#include "table/table_internal.h"
#include "table/table_test_util.h"

namespace strata::table::internal {
namespace {

void ExpectSameStatistics(const expr::ColumnStatistics& got, const expr::ColumnStatistics& want) {
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_EQ(got.null_count, want.null_count);
  EXPECT_EQ(got.row_count, want.row_count);
}

class FragmentReaderStatisticsTest : public ::testing::Test {
 protected:
  // Columns `columns` of rows 0..19 as one data file with batches of `batch_rows`.
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

  // Schema id, name, score (fields 0-2) plus "extra" (field 3, in no file); one fragment of
  // `files`.
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

TEST_F(FragmentReaderStatisticsTest, EveryBatchAndColumnInAnyOrderMatchesTheManifest) {
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

TEST_F(FragmentReaderStatisticsTest, MissingStatisticsEntryIsCorruptionOnOpen) {
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
