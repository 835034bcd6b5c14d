// The C++ interop spec on its own: its batches have the spec's shape, the comparison finds
// differences, and every case survives a strata write/read round trip (no node needed).
#include "interop/interop_spec.h"

#include <gtest/gtest.h>

#include "strata/ipc.h"

namespace strata::interop {
namespace {

ipc::Compression CompressionOf(const Case& c) {
  if (c.compression == "lz4") return ipc::Compression::kLz4Frame;
  if (c.compression == "zstd") return ipc::Compression::kZstd;
  return ipc::Compression::kNone;
}

TEST(InteropSpecTest, CaseBatchesHaveTheSpecRowCounts) {
  for (const Case& c : Cases()) {
    Result<std::vector<RecordBatch>> batches = CaseBatches(c);
    ASSERT_TRUE(batches.ok()) << c.name << ": " << batches.status();
    ASSERT_EQ(batches->size(), c.batch_rows.size()) << c.name;
    for (size_t b = 0; b < batches->size(); ++b) {
      EXPECT_EQ((*batches)[b].num_rows(), c.batch_rows[b]) << c.name << " batch " << b;
      EXPECT_TRUE((*batches)[b].ValidateFull().ok()) << c.name << " batch " << b;
    }
  }
}

TEST(InteropSpecTest, SlicedBatchesHoldTheSameValuesAsBuiltOnes) {
  const Case& sliced = Cases()[3];
  ASSERT_TRUE(sliced.sliced);
  Result<std::vector<RecordBatch>> batches = CaseBatches(sliced);
  ASSERT_TRUE(batches.ok()) << batches.status();
  Result<RecordBatch> built = BuildBatch(sliced.first_row, sliced.batch_rows[0]);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_NE((*batches)[0].column(0).offset(), 0);
  for (int k = 0; k < built->num_columns(); ++k) {
    EXPECT_EQ(DiffArrays(built->column(k), (*batches)[0].column(k)), "") << k;
  }
}

TEST(InteropSpecTest, DiffArraysReportsTheFirstDifferingRow) {
  Result<RecordBatch> a = BuildBatch(0, 30);
  Result<RecordBatch> b = BuildBatch(1, 30);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int k = 0; k < a->num_columns(); ++k) {
    EXPECT_EQ(DiffArrays(a->column(k), a->column(k)), "") << k;
    EXPECT_NE(DiffArrays(a->column(k), b->column(k)), "") << k;
  }
  EXPECT_NE(DiffArrays(a->column(0), a->column(0).Slice(0, 29)), "");
}

TEST(InteropSpecTest, EveryCaseRoundTripsThroughStrataStreamsAndFiles) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    Result<std::vector<RecordBatch>> batches = CaseBatches(c);
    ASSERT_TRUE(batches.ok()) << batches.status();
    ipc::WriteOptions options;
    options.compression = CompressionOf(c);
    options.alignment = c.alignment;
    Result<Buffer> stream = ipc::WriteStreamToBuffer(SpecSchema(), *batches, options);
    ASSERT_TRUE(stream.ok()) << stream.status();
    Result<Buffer> file = ipc::WriteFileToBuffer(SpecSchema(), *batches, options);
    ASSERT_TRUE(file.ok()) << file.status();
    for (auto read : {ipc::ReadStream(*stream), ipc::ReadFile(*file)}) {
      ASSERT_TRUE(read.ok()) << read.status();
      ASSERT_EQ(read->size(), batches->size());
      for (size_t b = 0; b < batches->size(); ++b) {
        EXPECT_TRUE((*read)[b].schema()->Equals(*SpecSchema(), /*check_metadata=*/true));
        for (int k = 0; k < SpecSchema()->num_fields(); ++k) {
          EXPECT_EQ(DiffArrays((*batches)[b].column(k), (*read)[b].column(k)), "")
              << "batch " << b << " column " << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::interop
