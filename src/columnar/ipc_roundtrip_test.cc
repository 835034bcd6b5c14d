// Arrow IPC round trips: every type, nulls, slices, empty batches, compression, metadata and
// dictionaries, through both the stream and the file format.
#include <gtest/gtest.h>

#include "columnar/ipc_test_util.h"
#include "strata/json.h"
#include "strata/object_store.h"
#include "support/temp_dir.h"

namespace strata::ipc {
namespace {

using testing::AllTypesSchema;
using testing::BatchDiff;
using testing::Metadata;
using testing::RandomBatchMaker;

struct Format {
  const char* name;
  bool file;
};

Result<std::vector<RecordBatch>> RoundTrip(bool file, const SchemaPtr& schema,
                                           const std::vector<RecordBatch>& batches,
                                           const WriteOptions& options = {},
                                           const ReadOptions& read_options = {}) {
  if (file) {
    STRATA_ASSIGN_OR_RETURN(Buffer bytes, WriteFileToBuffer(schema, batches, options));
    STRATA_ASSIGN_OR_RETURN(auto reader, FileReader::Open(SourceFromBuffer(bytes), read_options));
    if (!reader->schema()->Equals(*schema)) {
      return Status::Internal("schema changed:\n" + reader->schema()->ToString());
    }
    return reader->ReadAll();
  }
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, WriteStreamToBuffer(schema, batches, options));
  STRATA_ASSIGN_OR_RETURN(auto reader, StreamReader::Open(bytes, read_options));
  if (!reader->schema()->Equals(*schema)) {
    return Status::Internal("schema changed:\n" + reader->schema()->ToString());
  }
  std::vector<RecordBatch> out;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(auto batch, reader->Next());
    if (!batch) return out;
    out.push_back(*batch);
  }
}

void ExpectSameBatches(const std::vector<RecordBatch>& want, const std::vector<RecordBatch>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("batch " + std::to_string(i));
    EXPECT_EQ(BatchDiff(want[i], got[i]), "");
    EXPECT_TRUE(got[i].schema()->Equals(*want[i].schema(), /*check_metadata=*/true));
    EXPECT_TRUE(got[i].ValidateFull().ok()) << got[i].ValidateFull();
  }
}

class IpcRoundTripTest : public ::testing::TestWithParam<std::tuple<bool, Compression>> {
 protected:
  bool file() const { return std::get<0>(GetParam()); }
  WriteOptions options() const {
    WriteOptions o;
    o.compression = std::get<1>(GetParam());
    return o;
  }
};

TEST_P(IpcRoundTripTest, EveryTypeWithNulls) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(seed);
  SchemaPtr schema = AllTypesSchema();
  RandomBatchMaker maker(seed);
  std::vector<RecordBatch> batches = {maker.Make(schema, 37), maker.Make(schema, 1),
                                      maker.Make(schema, 200)};
  auto got = RoundTrip(file(), schema, batches, options());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches(batches, *got);
}

TEST_P(IpcRoundTripTest, SlicesAtOddOffsets) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(seed);
  SchemaPtr schema = AllTypesSchema();
  RandomBatchMaker maker(seed, 0.3);
  RecordBatch whole = maker.Make(schema, 64);
  std::vector<RecordBatch> slices = {whole.Slice(3, 17),  whole.Slice(1, 1),  whole.Slice(13, 0),
                                     whole.Slice(20, 44), whole.Slice(63, 1), whole.Slice(9, 9)};
  auto got = RoundTrip(file(), schema, slices, options());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches(slices, *got);
}

TEST_P(IpcRoundTripTest, EmptyBatchesAndNoBatches) {
  SchemaPtr schema = AllTypesSchema();
  std::vector<RecordBatch> empties = {RecordBatch::MakeEmpty(schema),
                                      RandomBatchMaker(7).Make(schema, 0)};
  auto got = RoundTrip(file(), schema, empties, options());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches(empties, *got);

  auto none = RoundTrip(file(), schema, {}, options());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
}

TEST_P(IpcRoundTripTest, AllNullAndNoNullColumns) {
  SchemaPtr schema = AllTypesSchema();
  std::vector<RecordBatch> batches = {RandomBatchMaker(11, 1.0).Make(schema, 19),
                                      RandomBatchMaker(12, 0.0).Make(schema, 23)};
  auto got = RoundTrip(file(), schema, batches, options());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches(batches, *got);
}

TEST_P(IpcRoundTripTest, ZeroColumnSchema) {
  SchemaPtr schema = strata::schema({}, Metadata({{"k", "v"}}));
  auto batch = RecordBatch::Make(schema, 5, {});
  ASSERT_TRUE(batch.ok()) << batch.status();
  auto got = RoundTrip(file(), schema, {*batch, RecordBatch::MakeEmpty(schema)}, options());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].num_rows(), 5);
  EXPECT_EQ((*got)[1].num_rows(), 0);
}

TEST_P(IpcRoundTripTest, DeepestNestingRoundTripsAndDeeperIsRefusedOnWrite) {
  // The limit is what the reader accepts: a schema at the limit (with a dictionary at the
  // bottom, the deepest metadata) reads back; one level more is refused by the writer rather
  // than written as a file nothing can open.
  DataTypePtr deepest = dictionary(int32(), utf8());
  for (int i = 1; i < kMaxTypeNestingDepth; ++i) deepest = list(deepest);
  SchemaPtr schema = strata::schema({field("deep", deepest)});
  const int lists = kMaxTypeNestingDepth - 1;
  std::string value = std::string(lists, '[') + "\"a\"" + std::string(lists, ']');
  auto batch = json::RowsToBatch(schema, "{\"deep\": " + value + "}\n{\"deep\": null}\n");
  ASSERT_TRUE(batch.ok()) << batch.status();
  auto got = RoundTrip(file(), schema, {*batch}, options());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches({*batch}, *got);

  SchemaPtr deeper = strata::schema({field("id", int64()), field("deep", list(deepest))});
  auto refused = RoundTrip(file(), deeper, {}, options());
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().IsInvalidArgument()) << refused.status();
  EXPECT_NE(refused.status().message().find("column 'deep': type nests deeper than 60 levels"),
            std::string::npos)
      << refused.status();
}

TEST_P(IpcRoundTripTest, CompressibleDataSurvives) {
  // Long runs compress far beyond 16x; the reader must not mistake that for an attack.
  SchemaPtr schema = strata::schema({field("zeros", int64()), field("text", utf8())});
  std::string lines;
  for (int i = 0; i < 50000; ++i)
    lines += R"({"zeros": 0, "text": "aaaaaaaaaaaaaaaa"})"
             "\n";
  auto batch = json::RowsToBatch(schema, lines);
  ASSERT_TRUE(batch.ok()) << batch.status();
  auto got = RoundTrip(file(), schema, {*batch}, options());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches({*batch}, *got);
}

INSTANTIATE_TEST_SUITE_P(IpcFormats, IpcRoundTripTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(Compression::kNone,
                                                              Compression::kLz4Frame,
                                                              Compression::kZstd)),
                         [](const ::testing::TestParamInfo<std::tuple<bool, Compression>>& info) {
                           return std::string(std::get<0>(info.param) ? "File" : "Stream") + "_" +
                                  std::string(CompressionName(std::get<1>(info.param)));
                         });

// ---------------------------------------------------------------------------------------
// Dictionaries

RecordBatch DictBatch(const SchemaPtr& schema, const std::vector<std::string>& words) {
  auto builder = RecordBatchBuilder::Make(schema);
  EXPECT_TRUE(builder.ok());
  auto* b = (*builder)->GetAs<DictionaryBuilder>(0);
  for (const std::string& w : words) {
    if (w == "<null>") {
      b->AppendNull();
    } else {
      EXPECT_TRUE(b->Append(w).ok());
    }
  }
  auto batch = (*builder)->Finish();
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

TEST(IpcDictionaryTest, ChangingDictionariesRoundTripInBothFormats) {
  SchemaPtr schema = strata::schema({field("d", dictionary(int8(), utf8()))});
  std::vector<RecordBatch> batches = {
      DictBatch(schema, {"red", "green", "red", "<null>"}),
      DictBatch(schema, {"red", "green", "blue"}),  // extends: a delta
      DictBatch(schema, {"green"}),                 // reordered: replacement / remap
      DictBatch(schema, {}),                        // empty
      DictBatch(schema, {"violet", "red", "<null>"}),
  };
  for (bool file : {false, true}) {
    SCOPED_TRACE(file ? "file" : "stream");
    auto got = RoundTrip(file, schema, batches);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectSameBatches(batches, *got);
  }
}

TEST(IpcDictionaryTest, SharedDictionaryIsSentOnce) {
  SchemaPtr schema = strata::schema({field("d", dictionary(int32(), utf8()))});
  RecordBatch whole = DictBatch(schema, {"a", "b", "c", "a", "b", "c", "d"});
  std::vector<RecordBatch> slices = {whole.Slice(0, 3), whole.Slice(3, 3), whole.Slice(6, 1)};
  auto bytes = WriteFileToBuffer(schema, slices);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto reader = FileReader::Open(SourceFromBuffer(*bytes));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->num_dictionaries(), 1);
  auto got = (*reader)->ReadAll();
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches(slices, *got);
}

TEST(IpcDictionaryTest, FileUnifiesDictionariesWithDeltas) {
  SchemaPtr schema = strata::schema({field("d", dictionary(int16(), utf8()))});
  std::vector<RecordBatch> batches = {DictBatch(schema, {"x", "y"}), DictBatch(schema, {"y", "z"}),
                                      DictBatch(schema, {"z", "x", "w"})};
  auto bytes = WriteFileToBuffer(schema, batches);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto reader = FileReader::Open(SourceFromBuffer(*bytes));
  ASSERT_TRUE(reader.ok()) << reader.status();
  // One full dictionary, then a delta with "z", then one with "w".
  EXPECT_EQ((*reader)->num_dictionaries(), 3);
  auto got = (*reader)->ReadAll();
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches(batches, *got);
  EXPECT_EQ((*got)[2].column(0).dictionary().length(), 4);
}

TEST(IpcDictionaryTest, FileRejectsUnionOutgrowingIndexType) {
  SchemaPtr schema = strata::schema({field("d", dictionary(int8(), utf8()))});
  std::vector<std::string> first, second;
  for (int i = 0; i < 100; ++i) first.push_back("a" + std::to_string(i));
  for (int i = 0; i < 100; ++i) second.push_back("b" + std::to_string(i));
  auto bytes = WriteFileToBuffer(schema, {DictBatch(schema, first), DictBatch(schema, second)});
  ASSERT_FALSE(bytes.ok());
  EXPECT_TRUE(bytes.status().IsInvalidArgument()) << bytes.status();
  // The refused batch writes nothing; the writer goes on as if it had not been offered.
  BufferOutputStream out;
  auto writer = FileWriter::Make(&out, schema);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->WriteBatch(DictBatch(schema, first)).ok());
  EXPECT_TRUE((*writer)->WriteBatch(DictBatch(schema, second)).IsInvalidArgument());
  RecordBatch again = DictBatch(schema, {"a7", "a3", "<null>"});
  ASSERT_TRUE((*writer)->WriteBatch(again).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto file = ReadFile(out.Finish());
  ASSERT_TRUE(file.ok()) << file.status();
  ExpectSameBatches({DictBatch(schema, first), again}, *file);
  // The stream format replaces instead, so it has no such limit.
  auto stream = WriteStreamToBuffer(schema, {DictBatch(schema, first), DictBatch(schema, second)});
  ASSERT_TRUE(stream.ok()) << stream.status();
  auto got = ReadStream(*stream);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches({DictBatch(schema, first), DictBatch(schema, second)}, *got);
}

// ---------------------------------------------------------------------------------------
// Metadata, streams and sources

TEST(IpcMetadataTest, FieldSchemaBatchAndFooterMetadataSurvive) {
  SchemaPtr schema = AllTypesSchema();
  RecordBatch batch = RandomBatchMaker(3).Make(schema, 4);
  BufferOutputStream out;
  auto writer = FileWriter::Make(&out, schema);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->WriteBatch(batch, Metadata({{"batch", "0"}})).ok());
  ASSERT_TRUE((*writer)->Close(Metadata({{"checksum", "abc"}})).ok());
  auto reader = FileReader::Open(SourceFromBuffer(out.Finish()));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->schema()->Equals(*schema, /*check_metadata=*/true));
  EXPECT_EQ((*reader)->schema()->field(4)->metadata().Get("unit"), "points");
  EXPECT_EQ((*reader)->schema()->metadata().Get("ünïcode"), "✓");
  EXPECT_EQ((*reader)->footer_metadata().Get("checksum"), "abc");
  auto info = (*reader)->InspectBatch(0);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->custom_metadata.Get("batch"), "0");
  EXPECT_EQ(info->num_rows, 4);
}

TEST(IpcStreamTest, ReadsFromAnInputCallbackInSmallPieces) {
  SchemaPtr schema = AllTypesSchema();
  RandomBatchMaker maker(5);
  std::vector<RecordBatch> batches = {maker.Make(schema, 10), maker.Make(schema, 3)};
  auto bytes = WriteStreamToBuffer(schema, batches, {Compression::kZstd});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  int64_t pos = 0;
  Buffer data = *bytes;
  auto reader = StreamReader::Open([&](uint8_t* out, int64_t max) -> Result<int64_t> {
    const int64_t n = std::min<int64_t>({max, 7, data.size() - pos});
    std::memcpy(out, data.data() + pos, n);
    pos += n;
    return n;
  });
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<RecordBatch> got;
  while (true) {
    auto next = (*reader)->Next();
    ASSERT_TRUE(next.ok()) << next.status();
    if (!*next) break;
    got.push_back(**next);
  }
  ExpectSameBatches(batches, got);
}

TEST(IpcStreamTest, WriterRejectsBatchOfAnotherSchema) {
  SchemaPtr schema = strata::schema({field("a", int32())});
  SchemaPtr other = strata::schema({field("a", int64())});
  BufferOutputStream out;
  auto writer = StreamWriter::Make(&out, schema);
  ASSERT_TRUE(writer.ok());
  Status st = (*writer)->WriteBatch(RecordBatch::MakeEmpty(other));
  EXPECT_TRUE(st.IsInvalidArgument()) << st;
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_TRUE((*writer)->WriteBatch(RecordBatch::MakeEmpty(schema)).IsInvalidArgument());
}

TEST(IpcStreamTest, FileOutputStreamAndMappedSource) {
  strata::testing::TempDir dir("ipc");
  const std::string path = (dir / "data.arrow").string();
  SchemaPtr schema = AllTypesSchema();
  RecordBatch batch = RandomBatchMaker(9).Make(schema, 50);
  {
    auto out = OpenFileOutputStream(path);
    ASSERT_TRUE(out.ok()) << out.status();
    auto writer = FileWriter::Make(out->get(), schema, {Compression::kLz4Frame});
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->WriteBatch(batch).ok());
    ASSERT_TRUE((*writer)->Close().ok());
    ASSERT_TRUE((*out)->Close().ok());
  }
  auto source = SourceFromFile(path);
  ASSERT_TRUE(source.ok()) << source.status();
  auto reader = FileReader::Open(*source);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto got = (*reader)->ReadAll();
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches({batch}, *got);
}

TEST(IpcStreamTest, ObjectStoreSourceReadsRanges) {
  auto store = NewMemoryObjectStore();
  SchemaPtr schema = AllTypesSchema();
  RecordBatch batch = RandomBatchMaker(21).Make(schema, 30);
  auto bytes = WriteFileToBuffer(schema, {batch, batch.Slice(5, 7)});
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(store->Put("t/f.arrow", bytes->view()).ok());
  auto reader = FileReader::Open(SourceFromObjectStore(store, "t/f.arrow"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto got = (*reader)->ReadAll();
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches({batch, batch.Slice(5, 7)}, *got);
}

TEST(IpcStreamTest, ReaderStopsCleanlyWithoutEndMarker) {
  SchemaPtr schema = strata::schema({field("a", int32())});
  auto batch = json::RowsToBatch(schema, "{\"a\": 1}\n{\"a\": null}\n");
  ASSERT_TRUE(batch.ok());
  auto bytes = WriteStreamToBuffer(schema, {*batch});
  ASSERT_TRUE(bytes.ok());
  auto got = ReadStream(bytes->Slice(0, bytes->size() - 8));  // drop the EOS marker
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBatches({*batch}, *got);
}

}  // namespace
}  // namespace strata::ipc
