// Arrow IPC readers on hostile input: truncations at every byte, random byte flips, lying
// lengths and hand-built malformed messages give Corruption (or NotSupported), never a crash,
// an out-of-bounds read or an absurd allocation.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <limits>
#include <random>

#include "columnar/ipc_test_util.h"
#include "strata/json.h"
#include "support/temp_dir.h"

namespace strata::ipc {
namespace {

namespace fb = internal::fb;
using testing::CraftedBatch;
using testing::CraftMessage;
using testing::EndOfStream;
using testing::RandomBatchMaker;
using testing::SchemaMessage;
using testing::ToBuffer;

SchemaPtr SmallSchema() {
  return schema({field("i", int32()), field("s", utf8()), field("l", list(int16())),
                 field("d", dictionary(int8(), utf8())),
                 field("st", struct_({field("b", boolean()), field("f", float64())}))});
}

std::vector<RecordBatch> SmallBatches() {
  RandomBatchMaker maker(99, 0.3);
  RecordBatch a = maker.Make(SmallSchema(), 5);
  RecordBatch b = maker.Make(SmallSchema(), 3);
  return {a, b.Slice(1, 2)};
}

// OK with valid batches, or an error of the kinds a reader may report for bad bytes.
void ExpectCleanOutcome(const Status& status) {
  EXPECT_TRUE(status.ok() || status.IsCorruption() || status.IsNotSupported()) << status;
}

Status ReadWholeStream(const Buffer& bytes, const ReadOptions& options = {}) {
  STRATA_ASSIGN_OR_RETURN(auto batches, ReadStream(bytes, options));
  for (const RecordBatch& b : batches) STRATA_RETURN_IF_ERROR(b.Validate());
  return Status::OK();
}

Status ReadWholeFile(const Buffer& bytes, const ReadOptions& options = {}) {
  STRATA_ASSIGN_OR_RETURN(auto reader, FileReader::Open(SourceFromBuffer(bytes), options));
  for (int i = 0; i < reader->num_batches(); ++i) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch all, reader->ReadBatch(i));
    STRATA_RETURN_IF_ERROR(all.Validate());
    STRATA_ASSIGN_OR_RETURN(RecordBatch some, reader->ReadBatch(i, {3, 1}));
    STRATA_RETURN_IF_ERROR(some.Validate());
    STRATA_RETURN_IF_ERROR(reader->InspectBatch(i).status());
  }
  return Status::OK();
}

class IpcCorruptionTest : public ::testing::TestWithParam<Compression> {
 protected:
  WriteOptions options() const {
    WriteOptions o;
    o.compression = GetParam();
    o.alignment = 8;  // smaller inputs, more positions that matter
    return o;
  }
};

TEST_P(IpcCorruptionTest, StreamTruncatedAtEveryByte) {
  std::vector<RecordBatch> batches = SmallBatches();
  auto bytes = WriteStreamToBuffer(SmallSchema(), batches, options());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  for (int64_t cut = 0; cut < bytes->size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    // Fresh, exactly sized memory so ASan sees any read past the cut.
    Buffer truncated = Buffer::FromVector(std::vector<uint8_t>(bytes->data(), bytes->data() + cut));
    auto got = ReadStream(truncated);
    if (got.ok()) {
      // Only a cut between messages ends the stream cleanly, with a prefix of the batches.
      ASSERT_LE(got->size(), batches.size());
      for (size_t i = 0; i < got->size(); ++i) EXPECT_TRUE((*got)[i].Equals(batches[i]));
    } else {
      EXPECT_TRUE(got.status().IsCorruption()) << got.status();
    }
  }
}

TEST_P(IpcCorruptionTest, FileTruncatedAtEveryByte) {
  auto bytes = WriteFileToBuffer(SmallSchema(), SmallBatches(), options());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  for (int64_t cut = 0; cut < bytes->size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    Buffer truncated = Buffer::FromVector(std::vector<uint8_t>(bytes->data(), bytes->data() + cut));
    Status st = ReadWholeFile(truncated);
    EXPECT_TRUE(st.IsCorruption()) << st;
  }
}

TEST_P(IpcCorruptionTest, RandomByteFlipsNeverCrash) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  auto stream = WriteStreamToBuffer(SmallSchema(), SmallBatches(), options());
  auto file = WriteFileToBuffer(SmallSchema(), SmallBatches(), options());
  ASSERT_TRUE(stream.ok() && file.ok());
  for (int iteration = 0; iteration < 1500; ++iteration) {
    const bool use_file = iteration % 2 == 1;
    const Buffer& original = use_file ? *file : *stream;
    std::vector<uint8_t> bytes(original.data(), original.data() + original.size());
    const int flips = 1 + static_cast<int>(rng() % 4);
    std::string trace = use_file ? "file" : "stream";
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % bytes.size();
      const uint8_t value = static_cast<uint8_t>(rng());
      trace += " [" + std::to_string(at) + "]=" + std::to_string(value);
      bytes[at] = value;
    }
    SCOPED_TRACE(trace);
    ReadOptions read_options;
    read_options.validate_full = iteration % 4 < 2;
    Buffer input = Buffer::FromVector(std::move(bytes));
    ExpectCleanOutcome(use_file ? ReadWholeFile(input, read_options)
                                : ReadWholeStream(input, read_options));
  }
}

INSTANTIATE_TEST_SUITE_P(IpcCodecs, IpcCorruptionTest,
                         ::testing::Values(Compression::kNone, Compression::kLz4Frame,
                                           Compression::kZstd),
                         [](const ::testing::TestParamInfo<Compression>& info) {
                           return std::string(CompressionName(info.param));
                         });

// ---------------------------------------------------------------------------------------
// Lying lengths

// Rewrites the length prefix of the first non-empty buffer of the first record batch.
Buffer WithDeclaredLength(const Buffer& stream, int64_t declared) {
  std::string bytes(stream.view());
  int64_t pos = 0;
  while (true) {
    int32_t length;
    std::memcpy(&length, bytes.data() + pos + 4, 4);
    auto view =
        internal::VerifyMessage(ToBuffer(bytes.substr(pos + 8, length)), ReadOptions(), "test");
    EXPECT_TRUE(view.ok());
    const int64_t body = pos + 8 + length;
    if (const fb::RecordBatch* rb = view->message->header_as_RecordBatch()) {
      for (const fb::Buffer* b : *rb->buffers()) {
        if (b->length() > 0) {
          std::memcpy(bytes.data() + body + b->offset(), &declared, 8);
          return ToBuffer(bytes);
        }
      }
    }
    pos = body + view->message->body_length();
  }
}

TEST(IpcCorruptionTest, HugeDeclaredUncompressedLengthIsCorruptionNotOom) {
  SchemaPtr schema = strata::schema({field("a", int64())});
  std::string rows;
  for (int i = 0; i < 1000; ++i) rows += "{\"a\": " + std::to_string(i % 3) + "}\n";
  auto batch = json::RowsToBatch(schema, rows);
  ASSERT_TRUE(batch.ok());
  for (Compression codec : {Compression::kLz4Frame, Compression::kZstd}) {
    SCOPED_TRACE(std::string(CompressionName(codec)));
    WriteOptions options;
    options.compression = codec;
    auto stream = WriteStreamToBuffer(schema, {*batch}, options);
    ASSERT_TRUE(stream.ok());
    ASSERT_TRUE(ReadStream(*stream).ok());
    for (int64_t declared :
         {int64_t{1} << 40, int64_t{1} << 62, int64_t{8001}, int64_t{7999}, int64_t{-7}}) {
      SCOPED_TRACE(declared);
      auto got = ReadStream(WithDeclaredLength(*stream, declared));
      ASSERT_FALSE(got.ok());
      EXPECT_TRUE(got.status().IsCorruption()) << got.status();
      // Past the budget, the codec's expansion bound still refuses before allocating.
      ReadOptions generous;
      generous.max_decompressed_bytes = std::numeric_limits<int64_t>::max();
      auto again = ReadStream(WithDeclaredLength(*stream, declared), generous);
      EXPECT_TRUE(again.status().IsCorruption()) << again.status();
    }
    // The budget applies to honest data as well.
    ReadOptions tight;
    tight.max_decompressed_bytes = 4000;
    auto limited = ReadStream(*stream, tight);
    ASSERT_FALSE(limited.ok());
    EXPECT_NE(limited.status().message().find("max_decompressed_bytes"), std::string::npos)
        << limited.status();
  }
}

TEST(IpcCorruptionTest, InspectSurvivesAbsurdDeclaredLengths) {
  SchemaPtr schema = strata::schema({field("a", int64()), field("b", int64())});
  std::string rows;
  for (int i = 0; i < 100; ++i) rows += "{\"a\": 1, \"b\": 2}\n";
  auto batch = json::RowsToBatch(schema, rows);
  ASSERT_TRUE(batch.ok());
  auto file = WriteFileToBuffer(schema, {*batch}, {Compression::kZstd});
  ASSERT_TRUE(file.ok());
  // Both values buffers claim INT64_MAX bytes; inspecting sums without overflow.
  std::string bytes(file->view());
  auto reader = FileReader::Open(SourceFromBuffer(*file));
  ASSERT_TRUE(reader.ok());
  auto info = (*reader)->InspectBatch(0);
  ASSERT_TRUE(info.ok());
  const int64_t body = info->offset + info->metadata_length;
  auto view = internal::VerifyMessage(
      ToBuffer(bytes.substr(info->offset + 8, info->metadata_length - 8)), ReadOptions(), "t");
  ASSERT_TRUE(view.ok());
  const int64_t huge = std::numeric_limits<int64_t>::max();
  for (const fb::Buffer* b : *view->message->header_as_RecordBatch()->buffers()) {
    if (b->length() > 0) std::memcpy(bytes.data() + body + b->offset(), &huge, 8);
  }
  auto patched = FileReader::Open(SourceFromBuffer(ToBuffer(bytes)));
  ASSERT_TRUE(patched.ok());
  auto inspected = (*patched)->InspectBatch(0);
  ASSERT_TRUE(inspected.ok()) << inspected.status();
  EXPECT_EQ(inspected->columns[0].uncompressed_bytes, huge);
  EXPECT_TRUE((*patched)->ReadBatch(0).status().IsCorruption());
}

TEST(IpcCorruptionTest, CallbackInputDoesNotTrustDeclaredBodyLength) {
  SchemaPtr schema = strata::schema({field("a", int32())});
  CraftedBatch batch;
  batch.length = 1;
  batch.nodes = {fb::FieldNode(1, 0)};
  batch.buffers = {fb::Buffer(0, 0), fb::Buffer(0, 4)};
  batch.body = std::string(4, '\x01');
  batch.body_length = int64_t{1} << 60;  // the input holds 8 bytes of body
  std::string bytes = SchemaMessage(schema) + CraftMessage(batch);
  size_t pos = 0;
  auto reader = StreamReader::Open([&](uint8_t* out, int64_t max) -> Result<int64_t> {
    const size_t n = std::min<size_t>(static_cast<size_t>(max), bytes.size() - pos);
    std::memcpy(out, bytes.data() + pos, n);
    pos += n;
    return static_cast<int64_t>(n);
  });
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto next = (*reader)->Next();
  ASSERT_FALSE(next.ok());
  EXPECT_TRUE(next.status().IsCorruption()) << next.status();
  // The error sticks.
  EXPECT_EQ((*reader)->Next().status(), next.status());
}

// ---------------------------------------------------------------------------------------
// Malformed metadata, one rule at a time

class IpcMalformedTest : public ::testing::Test {
 protected:
  SchemaPtr schema_ = strata::schema({field("a", int32()), field("s", utf8())});

  // A valid batch of two rows: a = [7, null], s = ["xy", "z"].
  CraftedBatch Good() {
    CraftedBatch b;
    b.length = 2;
    b.nodes = {fb::FieldNode(2, 1), fb::FieldNode(2, 0)};
    b.buffers = {fb::Buffer(0, 1), fb::Buffer(8, 8), fb::Buffer(16, 0), fb::Buffer(16, 12),
                 fb::Buffer(32, 3)};
    b.body.assign(40, '\0');
    b.body[0] = 0x01;  // row 0 valid, row 1 null
    const int32_t a[2] = {7, 0};
    std::memcpy(b.body.data() + 8, a, 8);
    const int32_t offsets[3] = {0, 2, 3};
    std::memcpy(b.body.data() + 16, offsets, 12);
    std::memcpy(b.body.data() + 32, "xyz", 3);
    return b;
  }

  Status Read(const CraftedBatch& b) {
    return ReadStream(ToBuffer(SchemaMessage(schema_) + CraftMessage(b) + EndOfStream())).status();
  }

  void ExpectCorruption(const CraftedBatch& b, std::string_view mentions) {
    Status st = Read(b);
    EXPECT_TRUE(st.IsCorruption()) << st;
    EXPECT_NE(st.message().find(mentions), std::string::npos) << st;
  }
};

TEST_F(IpcMalformedTest, GoodBatchReads) {
  auto got = ReadStream(ToBuffer(SchemaMessage(schema_) + CraftMessage(Good()) + EndOfStream()));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(json::BatchToJsonLines((*got)[0]),
            "{\"a\":7,\"s\":\"xy\"}\n{\"a\":null,\"s\":\"z\"}\n");
}

TEST_F(IpcMalformedTest, BufferOutsideBody) {
  CraftedBatch b = Good();
  b.buffers[4] = fb::Buffer(32, 9);
  ExpectCorruption(b, "buffer 4 [offset 32, length 9] lies outside the body of 40 bytes");
  b.buffers[4] = fb::Buffer(-8, 3);
  ExpectCorruption(b, "buffer 4");
  b.buffers[4] = fb::Buffer(std::numeric_limits<int64_t>::max(), 3);
  ExpectCorruption(b, "buffer 4");
}

TEST_F(IpcMalformedTest, NodeAndBufferCountsMustMatchSchema) {
  CraftedBatch b = Good();
  b.nodes.pop_back();
  ExpectCorruption(b, "1 field nodes, the schema has 2");
  b = Good();
  b.buffers.push_back(fb::Buffer(0, 0));
  ExpectCorruption(b, "6 buffers, the schema has 5");
}

TEST_F(IpcMalformedTest, NodeLengthsAndNullCounts) {
  CraftedBatch b = Good();
  b.nodes[0] = fb::FieldNode(-1, 0);
  ExpectCorruption(b, "node 0 has length -1");
  b.nodes[0] = fb::FieldNode(2, 3);
  ExpectCorruption(b, "null count 3");
  b = Good();
  b.nodes[1] = fb::FieldNode(3, 0);
  ExpectCorruption(b, "column 1 has 3 rows, the batch 2");
  b = Good();
  b.nodes[0] = fb::FieldNode(2, 0);
  b.nodes[1] = fb::FieldNode(2, 2);  // says two nulls but has no bitmap
  ExpectCorruption(b, "validity buffer 2 has 0 bytes");
  b = Good();
  b.body[0] = 0x03;  // the bitmap has no nulls, the node says one
  ExpectCorruption(b, "declares 1 nulls but validity buffer 0 has 0");
  b = Good();
  b.length = int64_t{1} << 60;
  b.nodes[0] = fb::FieldNode(int64_t{1} << 60, 0);
  b.nodes[1] = fb::FieldNode(int64_t{1} << 60, 0);
  ExpectCorruption(b, "node 0 has length");
}

TEST_F(IpcMalformedTest, ValuesThatBreakTheLayoutAreCaughtByValidation) {
  CraftedBatch b = Good();
  const int32_t bad_offsets[3] = {0, 2, 99};
  std::memcpy(b.body.data() + 16, bad_offsets, 12);
  ExpectCorruption(b, "column 1");
  b = Good();
  b.buffers[1] = fb::Buffer(8, 4);  // two int32 rows need 8 bytes
  ExpectCorruption(b, "column 0");
}

TEST_F(IpcMalformedTest, CompressedBufferTooShortForPrefix) {
  CraftedBatch b = Good();
  b.codec = fb::CompressionType::ZSTD;
  ExpectCorruption(b, "shorter than its 8-byte length prefix");
}

TEST_F(IpcMalformedTest, DecompressedSizeMustMatchDeclared) {
  // A zstd frame of 8 bytes, declared as 9.
  CraftedBatch b;
  b.length = 1;
  b.nodes = {fb::FieldNode(1, 0)};
  b.codec = fb::CompressionType::ZSTD;
  std::string payload(64, '\0');
  const uint64_t value = 0;
  const size_t n = ZSTD_compress(payload.data(), payload.size(), &value, 8, 1);
  ASSERT_FALSE(ZSTD_isError(n));
  payload.resize(n);
  const int64_t declared = 9;
  b.body.assign(reinterpret_cast<const char*>(&declared), 8);
  b.body += payload;
  b.buffers = {fb::Buffer(0, 0), fb::Buffer(0, static_cast<int64_t>(b.body.size()))};
  Status st = ReadStream(ToBuffer(SchemaMessage(schema({field("a", int64())})) + CraftMessage(b) +
                                  EndOfStream()))
                  .status();
  EXPECT_TRUE(st.IsCorruption()) << st;
}

TEST_F(IpcMalformedTest, GarbageMetadataFailsVerification) {
  std::string garbage = std::string("\xff\xff\xff\xff\x10\0\0\0", 8) + std::string(16, '\x7f');
  Status st = ReadStream(ToBuffer(SchemaMessage(schema_) + garbage)).status();
  EXPECT_TRUE(st.IsCorruption()) << st;
  EXPECT_NE(st.message().find("not a valid Arrow Message flatbuffer"), std::string::npos) << st;
  std::string negative = "\xff\xff\xff\xff\xf0\xff\xff\xff";
  st = ReadStream(ToBuffer(SchemaMessage(schema_) + negative)).status();
  EXPECT_TRUE(st.IsCorruption()) << st;
}

TEST_F(IpcMalformedTest, StreamMessageOrder) {
  // A record batch first.
  Status st = ReadStream(ToBuffer(CraftMessage(Good()) + EndOfStream())).status();
  EXPECT_TRUE(st.IsCorruption()) << st;
  // Two schemas.
  st = ReadStream(ToBuffer(SchemaMessage(schema_) + SchemaMessage(schema_) + EndOfStream()))
           .status();
  EXPECT_TRUE(st.IsCorruption()) << st;
  // Nothing at all.
  EXPECT_TRUE(ReadStream(Buffer()).status().IsCorruption());
  EXPECT_TRUE(ReadStream(ToBuffer(EndOfStream())).status().IsCorruption());
}

TEST(IpcMalformedDictionaryTest, DictionaryRules) {
  SchemaPtr schema = strata::schema({field("d", dictionary(int32(), utf8()))});
  CraftedBatch dict;
  dict.dictionary_id = 0;
  dict.length = 2;
  dict.nodes = {fb::FieldNode(2, 0)};
  dict.buffers = {fb::Buffer(0, 0), fb::Buffer(0, 12), fb::Buffer(16, 2)};
  dict.body.assign(24, '\0');
  const int32_t offsets[3] = {0, 1, 2};
  std::memcpy(dict.body.data(), offsets, 12);
  std::memcpy(dict.body.data() + 16, "pq", 2);
  CraftedBatch batch;
  batch.length = 2;
  batch.nodes = {fb::FieldNode(2, 0)};
  batch.buffers = {fb::Buffer(0, 0), fb::Buffer(0, 8)};
  const int32_t indices[2] = {1, 0};
  batch.body.assign(reinterpret_cast<const char*>(indices), 8);
  const std::string head = SchemaMessage(schema);

  auto good = ReadStream(ToBuffer(head + CraftMessage(dict) + CraftMessage(batch) + EndOfStream()));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(json::BatchToJsonLines((*good)[0]), "{\"d\":\"q\"}\n{\"d\":\"p\"}\n");

  // A delta appends.
  CraftedBatch delta = dict;
  delta.is_delta = true;
  const int32_t big[2] = {3, 0};
  CraftedBatch batch3 = batch;
  batch3.body.assign(reinterpret_cast<const char*>(big), 8);
  auto appended = ReadStream(ToBuffer(head + CraftMessage(dict) + CraftMessage(delta) +
                                      CraftMessage(batch3) + EndOfStream()));
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(json::BatchToJsonLines((*appended)[0]), "{\"d\":\"q\"}\n{\"d\":\"p\"}\n");

  // Unknown id, index out of range, no dictionary yet.
  CraftedBatch unknown = dict;
  unknown.dictionary_id = 5;
  Status st = ReadStream(ToBuffer(head + CraftMessage(unknown) + EndOfStream())).status();
  EXPECT_TRUE(st.IsCorruption()) << st;
  EXPECT_NE(st.message().find("id 5"), std::string::npos) << st;
  st = ReadStream(ToBuffer(head + CraftMessage(dict) + CraftMessage(batch3) + EndOfStream()))
           .status();
  EXPECT_TRUE(st.IsCorruption()) << st;
  st = ReadStream(ToBuffer(head + CraftMessage(batch) + EndOfStream())).status();
  EXPECT_TRUE(st.IsCorruption()) << st;
  EXPECT_NE(st.message().find("no dictionary batch"), std::string::npos) << st;
}

TEST(IpcMalformedSchemaTest, UnsupportedTypesAndVersions) {
  auto stream_with = [](auto make_field, fb::MetadataVersion version = fb::MetadataVersion::V5,
                        fb::Endianness endianness = fb::Endianness::Little) {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<fb::Field>> fields = {make_field(fbb)};
    auto schema = fb::CreateSchema(fbb, endianness, fbb.CreateVector(fields));
    fbb.Finish(fb::CreateMessage(fbb, version, fb::MessageHeader::Schema, schema.Union(), 0));
    return ToBuffer(testing::Frame(fbb, "") + EndOfStream());
  };
  auto decimal = [](flatbuffers::FlatBufferBuilder& fbb) {
    auto name = fbb.CreateString("money");
    return fb::CreateField(fbb, name, true, fb::Type::Decimal,
                           fb::CreateDecimal(fbb, 10, 2).Union());
  };
  auto int24 = [](flatbuffers::FlatBufferBuilder& fbb) {
    auto name = fbb.CreateString("odd");
    return fb::CreateField(fbb, name, true, fb::Type::Int, fb::CreateInt(fbb, 24, true).Union());
  };
  auto int32_field = [](flatbuffers::FlatBufferBuilder& fbb) {
    auto name = fbb.CreateString("ok");
    return fb::CreateField(fbb, name, true, fb::Type::Int, fb::CreateInt(fbb, 32, true).Union());
  };
  auto unknown_tag = [](flatbuffers::FlatBufferBuilder& fbb) {
    auto name = fbb.CreateString("future");
    return fb::CreateField(fbb, name, true, static_cast<fb::Type>(99), fb::CreateNull(fbb).Union());
  };
  Status st = ReadStream(stream_with(decimal)).status();
  EXPECT_TRUE(st.IsNotSupported()) << st;
  EXPECT_NE(st.message().find("money"), std::string::npos) << st;
  EXPECT_NE(st.message().find("Decimal"), std::string::npos) << st;
  EXPECT_TRUE(ReadStream(stream_with(int24)).status().IsCorruption());
  EXPECT_TRUE(ReadStream(stream_with(unknown_tag)).status().IsNotSupported());
  EXPECT_TRUE(ReadStream(stream_with(int32_field)).ok());
  EXPECT_TRUE(ReadStream(stream_with(int32_field, fb::MetadataVersion::V4)).ok());
  EXPECT_TRUE(
      ReadStream(stream_with(int32_field, fb::MetadataVersion::V3)).status().IsNotSupported());
  EXPECT_TRUE(ReadStream(stream_with(int32_field, fb::MetadataVersion::V5, fb::Endianness::Big))
                  .status()
                  .IsNotSupported());
}

// ---------------------------------------------------------------------------------------
// File trailer, footer and blocks

class IpcMalformedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto bytes = WriteFileToBuffer(SmallSchema(), SmallBatches());
    ASSERT_TRUE(bytes.ok());
    file_ = std::string(bytes->view());
    std::memcpy(&footer_length_, file_.data() + file_.size() - 10, 4);
    footer_offset_ = static_cast<int64_t>(file_.size()) - 10 - footer_length_;
  }

  Status Open(const std::string& bytes) {
    return FileReader::Open(SourceFromBuffer(ToBuffer(bytes))).status();
  }

  // The file with its footer replaced by `footer` (a finished Footer flatbuffer).
  std::string WithFooter(const flatbuffers::FlatBufferBuilder& fbb) {
    std::string out = file_.substr(0, footer_offset_);
    out.append(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
    const int32_t n = static_cast<int32_t>(fbb.GetSize());
    out.append(reinterpret_cast<const char*>(&n), 4);
    out += "ARROW1";
    return out;
  }

  const fb::Footer* footer() {
    footer_copy_ = ToBuffer(file_.substr(footer_offset_, footer_length_));
    return fb::GetFooter(footer_copy_.data());
  }

  // Rebuilds the footer with changed blocks.
  std::string WithBlocks(std::vector<fb::Block> dictionaries, std::vector<fb::Block> batches) {
    flatbuffers::FlatBufferBuilder fbb;
    // Re-encode the schema through a round trip of the real writer's footer schema bytes.
    auto decoded = internal::SchemaFromFlatbuffer(footer()->schema());
    EXPECT_TRUE(decoded.ok());
    auto schema = internal::SchemaToFlatbuffer(fbb, *decoded->schema, decoded->plan);
    fbb.Finish(fb::CreateFooter(fbb, fb::MetadataVersion::V5, schema,
                                fbb.CreateVectorOfStructs(dictionaries),
                                fbb.CreateVectorOfStructs(batches)));
    return WithFooter(fbb);
  }

  std::vector<fb::Block> Blocks(const flatbuffers::Vector<const fb::Block*>* v) {
    std::vector<fb::Block> out;
    for (const fb::Block* b : *v) out.push_back(*b);
    return out;
  }

  std::string file_;
  int32_t footer_length_ = 0;
  int64_t footer_offset_ = 0;
  Buffer footer_copy_;
};

TEST_F(IpcMalformedFileTest, MagicAndFooterLength) {
  ASSERT_TRUE(Open(file_).ok());
  std::string bad = file_;
  bad[0] = 'X';
  EXPECT_TRUE(Open(bad).IsCorruption());
  bad = file_;
  bad[bad.size() - 1] = 'X';
  EXPECT_TRUE(Open(bad).IsCorruption());
  for (int32_t length : {0, -5, footer_length_ + 1000000, static_cast<int32_t>(file_.size())}) {
    bad = file_;
    std::memcpy(bad.data() + bad.size() - 10, &length, 4);
    Status st = Open(bad);
    EXPECT_TRUE(st.IsCorruption()) << length << ": " << st;
  }
  EXPECT_TRUE(Open("ARROW1").IsCorruption());
}

TEST_F(IpcMalformedFileTest, BlocksMustPointAtMessagesInsideTheFile) {
  std::vector<fb::Block> dictionaries = Blocks(footer()->dictionaries());
  std::vector<fb::Block> batches = Blocks(footer()->record_batches());
  ASSERT_TRUE(Open(WithBlocks(dictionaries, batches)).ok());

  auto expect_bad = [&](std::vector<fb::Block> d, std::vector<fb::Block> r) {
    Status st = Open(WithBlocks(d, r));
    if (st.ok()) {
      auto reader = FileReader::Open(SourceFromBuffer(ToBuffer(WithBlocks(d, r))));
      st = (*reader)->ReadAll().status();
    }
    EXPECT_TRUE(st.IsCorruption()) << st;
  };
  std::vector<fb::Block> r = batches;
  r[0] = fb::Block(footer_offset_ - 8, r[0].meta_data_length(), r[0].body_length());
  expect_bad(dictionaries, r);
  r = batches;
  r[0] = fb::Block(r[0].offset(), r[0].meta_data_length(), r[0].body_length() + 8);
  expect_bad(dictionaries, r);  // body length disagrees with the message
  r = batches;
  r[0] = fb::Block(r[0].offset() + 8, r[0].meta_data_length(), r[0].body_length());
  expect_bad(dictionaries, r);  // not at a message start
  r = batches;
  r[0] = fb::Block(2, 8, 0);
  expect_bad(dictionaries, r);
  r = batches;
  r[1] = dictionaries[0];  // a dictionary message where a batch belongs
  expect_bad(dictionaries, r);
  // A second non-delta dictionary batch for the same id is a replacement: not in files.
  std::vector<fb::Block> d = dictionaries;
  d.push_back(dictionaries[0]);
  expect_bad(d, batches);
}

}  // namespace
}  // namespace strata::ipc
