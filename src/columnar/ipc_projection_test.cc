// Arrow IPC file reads of a subset of columns: exactly those columns come back, only their
// bytes are read, and InspectBatch reports sizes without decoding.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "columnar/ipc_test_util.h"
#include "strata/json.h"
#include "support/temp_dir.h"

namespace strata::ipc {
namespace {

using testing::AllTypesSchema;
using testing::BatchDiff;
using testing::CountingSource;
using testing::RandomBatchMaker;

class IpcProjectionTest : public ::testing::TestWithParam<Compression> {
 protected:
  WriteOptions options() const {
    WriteOptions o;
    o.compression = GetParam();
    return o;
  }
};

TEST_P(IpcProjectionTest, ReturnsExactlyTheRequestedColumns) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  SchemaPtr schema = AllTypesSchema();
  RandomBatchMaker maker(seed);
  RecordBatch whole = maker.Make(schema, 80);
  std::vector<RecordBatch> batches = {whole.Slice(0, 31), whole.Slice(31, 49),
                                      maker.Make(schema, 0)};
  auto bytes = WriteFileToBuffer(schema, batches, options());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto reader = FileReader::Open(SourceFromBuffer(*bytes));
  ASSERT_TRUE(reader.ok()) << reader.status();
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<int> columns;
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int k = 0; k < n; ++k) columns.push_back(static_cast<int>(rng() % schema->num_fields()));
    std::string trace = "columns";
    for (int c : columns) trace += " " + std::to_string(c);
    SCOPED_TRACE(trace);
    for (int i = 0; i < (*reader)->num_batches(); ++i) {
      auto got = (*reader)->ReadBatch(i, columns);
      ASSERT_TRUE(got.ok()) << got.status();
      auto want = batches[i].Project(columns);
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(BatchDiff(*want, *got), "");
      EXPECT_TRUE(got->schema()->Equals(*want->schema(), /*check_metadata=*/true));
    }
  }
  // Every column in order is the full read; none at all is a batch of no columns.
  std::vector<int> all(schema->num_fields());
  for (int c = 0; c < schema->num_fields(); ++c) all[c] = c;
  auto full = (*reader)->ReadBatch(1, all);
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(full->Equals(batches[1]));
  auto empty = (*reader)->ReadBatch(1, {});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->num_columns(), 0);
  EXPECT_EQ(empty->num_rows(), 49);
}

TEST_P(IpcProjectionTest, ReadsOnlyTheProjectedColumnsBytes) {
  std::vector<FieldPtr> fields;
  for (int c = 0; c < 10; ++c) {
    fields.push_back(field("n" + std::to_string(c), int64()));
    fields.push_back(field("s" + std::to_string(c), utf8()));
  }
  SchemaPtr schema = strata::schema(fields);
  RandomBatchMaker maker(4, 0.1);
  std::vector<RecordBatch> batches = {maker.Make(schema, 3000), maker.Make(schema, 2000)};
  auto bytes = WriteFileToBuffer(schema, batches, options());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto source = std::make_shared<CountingSource>(*bytes);
  auto reader = FileReader::Open(source);
  ASSERT_TRUE(reader.ok()) << reader.status();

  source->Reset();
  auto full = (*reader)->ReadBatch(0);
  ASSERT_TRUE(full.ok());
  const int64_t full_bytes = source->bytes();

  source->Reset();
  auto one = (*reader)->ReadBatch(0, {13});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(one->column(0).Equals(batches[0].column(13)));
  // One of twenty similar columns: well under a tenth of the bytes (metadata included).
  EXPECT_LT(source->bytes() * 10, full_bytes) << source->bytes() << " of " << full_bytes;
  EXPECT_LE(source->reads(), 2);  // metadata, then one coalesced range

  source->Reset();
  auto two = (*reader)->ReadBatch(1, {19, 0});
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_TRUE(two->column(0).Equals(batches[1].column(19)));
  EXPECT_TRUE(two->column(1).Equals(batches[1].column(0)));
  EXPECT_LT(source->bytes() * 5, full_bytes);
}

TEST_P(IpcProjectionTest, InspectReportsSizesPerColumn) {
  SchemaPtr schema = strata::schema({field("zeros", int64()), field("words", utf8())});
  std::string rows;
  for (int i = 0; i < 2000; ++i)
    rows += "{\"zeros\": 0, \"words\": \"w" + std::to_string(i) + "\"}\n";
  auto batch = json::RowsToBatch(schema, rows);
  ASSERT_TRUE(batch.ok());
  auto bytes = WriteFileToBuffer(schema, {*batch}, options());
  ASSERT_TRUE(bytes.ok());
  auto reader = FileReader::Open(SourceFromBuffer(*bytes));
  ASSERT_TRUE(reader.ok());
  auto info = (*reader)->InspectBatch(0);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->num_rows, 2000);
  EXPECT_EQ(info->compression, GetParam());
  ASSERT_EQ(info->columns.size(), 2u);
  EXPECT_EQ(info->columns[0].uncompressed_bytes, 2000 * 8);
  const int64_t text_bytes = batch->column(1).data()->buffers[1].data_as<int32_t>()[2000];
  EXPECT_EQ(info->columns[1].uncompressed_bytes, 2001 * 4 + text_bytes);  // offsets + data
  if (GetParam() == Compression::kNone) {
    EXPECT_EQ(info->columns[0].stored_bytes, info->columns[0].uncompressed_bytes);
  } else {
    EXPECT_LT(info->columns[0].stored_bytes, info->columns[0].uncompressed_bytes / 10);
  }
  EXPECT_GT(info->body_length, 0);
  EXPECT_GT(info->metadata_length, 0);
  EXPECT_TRUE((*reader)->InspectBatch(1).status().IsInvalidArgument());
}

INSTANTIATE_TEST_SUITE_P(IpcCodecs, IpcProjectionTest,
                         ::testing::Values(Compression::kNone, Compression::kLz4Frame,
                                           Compression::kZstd),
                         [](const ::testing::TestParamInfo<Compression>& info) {
                           return std::string(CompressionName(info.param));
                         });

TEST(IpcFileReaderTest, RejectsBadIndices) {
  SchemaPtr schema = strata::schema({field("a", int32())});
  auto bytes = WriteFileToBuffer(schema, {RecordBatch::MakeEmpty(schema)});
  ASSERT_TRUE(bytes.ok());
  auto reader = FileReader::Open(SourceFromBuffer(*bytes));
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->ReadBatch(1).status().IsInvalidArgument());
  EXPECT_TRUE((*reader)->ReadBatch(-1).status().IsInvalidArgument());
  EXPECT_TRUE((*reader)->ReadBatch(0, {1}).status().IsInvalidArgument());
  EXPECT_TRUE((*reader)->ReadBatch(0, {-1}).status().IsInvalidArgument());
}

TEST(IpcFileReaderTest, ConcurrentReadsOfOneReader) {
  SchemaPtr schema = AllTypesSchema();
  RandomBatchMaker maker(8);
  std::vector<RecordBatch> batches;
  for (int i = 0; i < 6; ++i) batches.push_back(maker.Make(schema, 20 + i));
  auto bytes = WriteFileToBuffer(schema, batches, {Compression::kLz4Frame});
  ASSERT_TRUE(bytes.ok());
  auto reader = FileReader::Open(SourceFromBuffer(*bytes));
  ASSERT_TRUE(reader.ok());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 10; ++round) {
        const int i = (t + round) % 6;
        auto got = (*reader)->ReadBatch(i, {t, 21, 24});
        auto want = batches[i].Project({t, 21, 24});
        if (!got.ok() || !want.ok() || !got->Equals(*want)) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace strata::ipc
