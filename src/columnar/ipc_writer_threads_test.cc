// IPC writing with body compression on helper threads (WriteOptions::compression_threads):
// the bytes must equal those of the single-threaded writer, in both formats, dictionaries
// included, and a writer abandoned with batches in flight must stop cleanly.
#include <gtest/gtest.h>

#include "columnar/ipc_test_util.h"
#include "support/temp_dir.h"

namespace strata::ipc {
namespace {

using testing::AllTypesSchema;
using testing::RandomBatchMaker;

std::vector<RecordBatch> SomeBatches(const SchemaPtr& schema, uint64_t seed) {
  RandomBatchMaker maker(seed);
  RecordBatch whole = maker.Make(schema, 300);
  // Slices at odd offsets, an empty batch and a single row, so rebased offsets, bitmap copies
  // and dictionary deltas are all queued.
  return {maker.Make(schema, 37), whole.Slice(3, 150),   RecordBatch::MakeEmpty(schema),
          whole.Slice(153, 1),    whole.Slice(154, 146), maker.Make(schema, 90)};
}

TEST(IpcWriterThreadsTest, FileAndStreamBytesEqualSingleThreaded) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(seed);
  SchemaPtr schema = AllTypesSchema();
  std::vector<RecordBatch> batches = SomeBatches(schema, seed);
  for (Compression codec : {Compression::kZstd, Compression::kLz4Frame}) {
    SCOPED_TRACE(std::string(CompressionName(codec)));
    WriteOptions one{.compression = codec};
    auto want_file = WriteFileToBuffer(schema, batches, one);
    auto want_stream = WriteStreamToBuffer(schema, batches, one);
    ASSERT_TRUE(want_file.ok()) << want_file.status();
    ASSERT_TRUE(want_stream.ok()) << want_stream.status();
    for (int threads : {2, 3, 8}) {
      for (int pending : {0, 1, 5}) {
        SCOPED_TRACE(::testing::Message() << threads << " threads, " << pending << " pending");
        WriteOptions many = one;
        many.compression_threads = threads;
        many.max_pending_batches = pending;
        auto file = WriteFileToBuffer(schema, batches, many);
        auto stream = WriteStreamToBuffer(schema, batches, many);
        ASSERT_TRUE(file.ok()) << file.status();
        ASSERT_TRUE(stream.ok()) << stream.status();
        EXPECT_TRUE(file->Equals(*want_file));
        EXPECT_TRUE(stream->Equals(*want_stream));
      }
    }
  }
}

// The IPC file `file` reads back as `batches`.
void ExpectFileHolds(const Buffer& file, const std::vector<RecordBatch>& batches) {
  auto reader = FileReader::Open(SourceFromBuffer(file));
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto got = (*reader)->ReadAll();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    EXPECT_EQ(testing::BatchDiff(batches[i], (*got)[i]), "") << "batch " << i;
  }
}

TEST(IpcWriterThreadsTest, BatchesReachTheStreamByClose) {
  SchemaPtr schema = AllTypesSchema();
  std::vector<RecordBatch> batches = SomeBatches(schema, 5);
  BufferOutputStream out;
  auto writer = FileWriter::Make(
      &out, schema, WriteOptions{.compression = Compression::kZstd, .compression_threads = 2});
  ASSERT_TRUE(writer.ok()) << writer.status();
  const int64_t header = out.Tell();
  ASSERT_TRUE((*writer)->WriteBatch(batches[0]).ok());
  // The first batch is still being compressed: nothing of it is written yet, but it counts.
  EXPECT_EQ(out.Tell(), header);
  EXPECT_EQ((*writer)->num_batches(), 1);
  for (size_t i = 1; i < batches.size(); ++i) ASSERT_TRUE((*writer)->WriteBatch(batches[i]).ok());
  EXPECT_EQ((*writer)->num_batches(), static_cast<int>(batches.size()));
  ASSERT_TRUE((*writer)->Close().ok());
  ExpectFileHolds(out.Finish(), batches);
}

// Batches are written by the caller's thread only, once max_pending_batches (default: the
// thread count) are queued, whatever the helpers have finished meanwhile.
TEST(IpcWriterThreadsTest, MaxPendingBatchesBoundsTheQueue) {
  SchemaPtr schema = AllTypesSchema();
  std::vector<RecordBatch> batches = SomeBatches(schema, 7);
  for (int pending : {0, 4}) {
    SCOPED_TRACE(pending);
    BufferOutputStream out;
    auto writer = FileWriter::Make(&out, schema,
                                   WriteOptions{.compression = Compression::kZstd,
                                                .compression_threads = 2,
                                                .max_pending_batches = pending});
    ASSERT_TRUE(writer.ok()) << writer.status();
    const int64_t header = out.Tell();
    const int queued = pending == 0 ? 2 : pending;
    for (int i = 0; i < queued - 1; ++i) ASSERT_TRUE((*writer)->WriteBatch(batches[i]).ok());
    EXPECT_EQ(out.Tell(), header);  // all still queued
    ASSERT_TRUE((*writer)->WriteBatch(batches[queued - 1]).ok());
    EXPECT_GT(out.Tell(), header);  // the queue was full: the oldest was written
    ASSERT_TRUE((*writer)->Close().ok());
  }
  for (int pending : {-1, 65}) {
    BufferOutputStream out;
    auto writer = FileWriter::Make(&out, schema,
                                   WriteOptions{.compression = Compression::kZstd,
                                                .compression_threads = 2,
                                                .max_pending_batches = pending});
    ASSERT_FALSE(writer.ok()) << pending;
    EXPECT_TRUE(writer.status().IsInvalidArgument()) << writer.status();
    EXPECT_NE(writer.status().message().find("max_pending_batches"), std::string::npos);
  }
}

TEST(IpcWriterThreadsTest, AbandonedWriterWithBatchesInFlightStops) {
  SchemaPtr schema = AllTypesSchema();
  std::vector<RecordBatch> batches = SomeBatches(schema, 9);
  BufferOutputStream out;
  {
    auto writer = StreamWriter::Make(
        &out, schema, WriteOptions{.compression = Compression::kZstd, .compression_threads = 4});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (const RecordBatch& batch : batches) ASSERT_TRUE((*writer)->WriteBatch(batch).ok());
  }  // destroyed without Close(): queued work is dropped and the helpers are joined
  EXPECT_GT(out.Tell(), 0);
}

// min_compressed_buffer_bytes reaches both the caller's and the helpers' compression: with
// every buffer under it the file holds raw buffers only (and reads back the same), with one
// or two threads alike; a negative minimum is refused.
TEST(IpcWriterThreadsTest, BuffersUnderTheMinimumStayRawWithAnyThreadCount) {
  SchemaPtr schema = AllTypesSchema();
  std::vector<RecordBatch> batches = SomeBatches(schema, 5);
  auto write = [&](int threads, int64_t minimum) -> Buffer {
    BufferOutputStream out;
    auto writer = FileWriter::Make(&out, schema,
                                   WriteOptions{.compression = Compression::kZstd,
                                                .min_compressed_buffer_bytes = minimum,
                                                .compression_threads = threads});
    EXPECT_TRUE(writer.ok()) << writer.status();
    for (const RecordBatch& batch : batches) EXPECT_TRUE((*writer)->WriteBatch(batch).ok());
    EXPECT_TRUE((*writer)->Close().ok());
    return out.Finish();
  };
  const Buffer compressed = write(1, 0);
  const Buffer raw = write(1, int64_t{1} << 30);
  EXPECT_GT(raw.size(), compressed.size());
  EXPECT_EQ(write(2, int64_t{1} << 30).view(), raw.view());
  ExpectFileHolds(raw, batches);
  BufferOutputStream out;
  auto refused = FileWriter::Make(
      &out, schema,
      WriteOptions{.compression = Compression::kZstd, .min_compressed_buffer_bytes = -1});
  EXPECT_TRUE(refused.status().IsInvalidArgument()) << refused.status();
}

TEST(IpcWriterThreadsTest, ThreadCountOutOfRangeIsInvalidArgument) {
  SchemaPtr schema = AllTypesSchema();
  for (int threads : {0, -1, 65}) {
    BufferOutputStream out;
    auto writer = FileWriter::Make(
        &out, schema,
        WriteOptions{.compression = Compression::kZstd, .compression_threads = threads});
    ASSERT_FALSE(writer.ok()) << threads;
    EXPECT_TRUE(writer.status().IsInvalidArgument()) << writer.status();
    EXPECT_NE(writer.status().message().find("compression_threads"), std::string::npos);
  }
}

}  // namespace
}  // namespace strata::ipc
