// Arrow IPC byte layout: strata reads files written by apache-arrow (JS), and what strata
// writes has the framing, alignment, padding and buffer forms the Arrow spec prescribes.
#include <gtest/gtest.h>

#include <cstring>

#include "columnar/ipc_internal.h"
#include "columnar/ipc_test_util.h"
#include "strata/json.h"

namespace strata::ipc {
namespace {

namespace fb = internal::fb;
using testing::AllTypesSchema;
using testing::Metadata;
using testing::RandomBatchMaker;

// 2144 bytes written by apache-arrow 21.2.0 (JS), tableToIPC(table, "stream").
constexpr std::string_view kJsStreamHex =
    "ffffffff280200001000000000000a0010000e00070008000a00000000000001080000000000040088feffff0400"
    "000008000000c40100008401000038010000c4000000980000006000000030000000040000006cfeffff14000000"
    "00000001140000000000000a1000000002000000747300000000000098feffff94feffff14000000000000011400"
    "00000000000a1000000003000000746e730000000000d2ffffff00000300c0feffff140000000000000114000000"
    "0000000a1800000003000000746d73000000000000000600080006000600000000000100f4feffff140000000000"
    "000114000000000000061000000001000000620000000000000020ffffff1cffffff140000000000000114000000"
    "0000000c48000000010000006c000000010000000400000044ffffff140000000000000118000000000000021400"
    "0000040000006974656d000000000000000038ffffff000000012000000080ffffff10001c0008000f0017001800"
    "0400100010000000300000001400000000000001140000000000000510000000010000006400000000000000bcff"
    "ffff0800080000000400080000000400000094ffffff0000000120000000d4ffffff140000000000000114000000"
    "000000051400000001000000730000000000000004000400040000001000180004000b001300140000000c001000"
    "0000140000000000000114000000000000021800000001000000690000000000000008000c000800070008000000"
    "0000000120000000ffffffffb000000014000000000000000c001c001a001300140004000c000000180000000000"
    "00000000000000000002100000000000040008000a0000000400080000001000000000000a0018000c0008000400"
    "0a000000140000004800000002000000000000000000000003000000000000000000000000000000000000000000"
    "00000000000010000000000000001000000000000000080000000000000000000000010000000200000000000000"
    "0000000000000000000000000100000002000000000000007879000000000000ffffffff18020000140000000000"
    "00000c00160014000f00100004000c0000003803000000000000000000031000000004000a0018000c0008000400"
    "0a000000140000004801000005000000000000000000000013000000000000000000000040000000000000004000"
    "00000000000018000000000000005800000000000000400000000000000098000000000000001800000000000000"
    "b0000000000000000800000000000000b8000000000000004000000000000000f800000000000000180000000000"
    "00001001000000000000400000000000000050010000000000001800000000000000680100000000000040000000"
    "00000000a8010000000000001000000000000000b8010000000000004000000000000000f8010000000000004000"
    "0000000000003802000000000000400000000000000078020000000000002800000000000000a002000000000000"
    "0800000000000000a8020000000000002800000000000000d0020000000000004000000000000000100300000000"
    "00002800000000000000000000000900000005000000000000000100000000000000050000000000000001000000"
    "00000000050000000000000001000000000000000500000000000000010000000000000004000000000000000100"
    "00000000000005000000000000000100000000000000050000000000000001000000000000000500000000000000"
    "0100000000000000050000000000000001000000000000001d000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000001000000"
    "00000000fdffffffffffff7f00000000000000001b00000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000001000000"
    "070000000700000007000000080000006168c3a96c6c6f7a17000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "01000000000000000000000001000000000000001b00000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000002000000"
    "02000000020000000300000004000000070000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000010000000200000003000000"
    "000000001b0000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000090000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000170000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000dc05000000000000ffffffffffffffff00000000000000007b68"
    "e5cf8b01000017000000000000000000000000000000cf07000000000000ffffffffffffffff4d00000000000000"
    "15cd853dfe9c97171700000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000100000000000000ffffffff"
    "ffffffff000000000000000000f1536500000000ffffffff00000000";
// 2218 bytes written by apache-arrow 21.2.0 (JS), tableToIPC(table, "file").
constexpr std::string_view kJsFileHex =
    "4152524f57310000ffffffffb000000014000000000000000c001c001a001300140004000c000000180000000000"
    "00000000000000000002100000000000040008000a0000000400080000001000000000000a0018000c0008000400"
    "0a000000140000004800000002000000000000000000000003000000000000000000000000000000000000000000"
    "00000000000010000000000000001000000000000000080000000000000000000000010000000200000000000000"
    "0000000000000000000000000100000002000000000000007879000000000000ffffffff18020000140000000000"
    "00000c00160014000f00100004000c0000003803000000000000000000031000000004000a0018000c0008000400"
    "0a000000140000004801000005000000000000000000000013000000000000000000000040000000000000004000"
    "00000000000018000000000000005800000000000000400000000000000098000000000000001800000000000000"
    "b0000000000000000800000000000000b8000000000000004000000000000000f800000000000000180000000000"
    "00001001000000000000400000000000000050010000000000001800000000000000680100000000000040000000"
    "00000000a8010000000000001000000000000000b8010000000000004000000000000000f8010000000000004000"
    "0000000000003802000000000000400000000000000078020000000000002800000000000000a002000000000000"
    "0800000000000000a8020000000000002800000000000000d0020000000000004000000000000000100300000000"
    "00002800000000000000000000000900000005000000000000000100000000000000050000000000000001000000"
    "00000000050000000000000001000000000000000500000000000000010000000000000004000000000000000100"
    "00000000000005000000000000000100000000000000050000000000000001000000000000000500000000000000"
    "0100000000000000050000000000000001000000000000001d000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000001000000"
    "00000000fdffffffffffff7f00000000000000001b00000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000001000000"
    "070000000700000007000000080000006168c3a96c6c6f7a17000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "01000000000000000000000001000000000000001b00000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000002000000"
    "02000000020000000300000004000000070000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000010000000200000003000000"
    "000000001b0000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000090000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000170000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000dc05000000000000ffffffffffffffff00000000000000007b68"
    "e5cf8b01000017000000000000000000000000000000cf07000000000000ffffffffffffffff4d00000000000000"
    "15cd853dfe9c97171700000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000100000000000000ffffffff"
    "ffffffff000000000000000000f1536500000000ffffffff00000000100000000c0014000e001000040008000c00"
    "0000100000002c0000000000040040000000010000000800000000000000b8000000000000001800000000000000"
    "0000000001000000d8000000000000002002000000000000380300000000000088feffff0400000008000000c401"
    "00008401000038010000c4000000980000006000000030000000040000006cfeffff140000000000000114000000"
    "0000000a1000000002000000747300000000000098feffff94feffff1400000000000001140000000000000a1000"
    "000003000000746e730000000000d2ffffff00000300c0feffff1400000000000001140000000000000a18000000"
    "03000000746d73000000000000000600080006000600000000000100f4feffff1400000000000001140000000000"
    "00061000000001000000620000000000000020ffffff1cffffff1400000000000001140000000000000c48000000"
    "010000006c000000010000000400000044ffffff1400000000000001180000000000000214000000040000006974"
    "656d000000000000000038ffffff000000012000000080ffffff10001c0008000f00170018000400100010000000"
    "300000001400000000000001140000000000000510000000010000006400000000000000bcffffff080008000000"
    "0400080000000400000094ffffff0000000120000000d4ffffff1400000000000001140000000000000514000000"
    "01000000730000000000000004000400040000001000180004000b001300140000000c0010000000140000000000"
    "000114000000000000021800000001000000690000000000000008000c0008000700080000000000000120000000"
    "680200004152524f5731";

// 1578 bytes: the file below as strata wrote it (alignment 8, no compression) when this test
// was added. Readers must keep opening it; the writer must keep producing it byte for byte.
constexpr std::string_view kStrataFileV1Hex =
    "4152524f57310000ffffffffa00100001000000000000a000e000600050008000a00000000010400100000000000"
    "0a000c000000040008000a0000003800000004000000010000000c00000008000c00040008000800000010000000"
    "04000000020000007631000006000000676f6c64656e00000400000004010000c8000000700000000400000054ff"
    "ffff0000010c0c0000001000000010000000010000006c00000044ffffff01000000040000007cffffff00000102"
    "0c000000140000001c000000040000006974656d0000000038ffffff000000014000000000000000100018000800"
    "060007000c001000140010000000000001051000000030000000180000002c000000010000006400000008000800"
    "00000400080000000400000088ffffff0000000108000000ccffffff00000000100014000800060007000c000000"
    "100010000000000001050c0000001400000014000000010000007300000004000400040000000000000010001400"
    "0800000007000c000000100010000000000000020c0000001800000020000000010000006900000008000c000800"
    "070008000000000000012000000000000000ffffffffa800000014000000000000000c0014000600050008000c00"
    "0c0000000002040014000000180000000000000008000a0000000400080000001000000000000a0018000c000400"
    "08000a0000004c000000100000000200000000000000000000000300000000000000000000000000000000000000"
    "00000000000000000c00000000000000100000000000000002000000000000000000000001000000020000000000"
    "00000000000000000000000000000100000002000000000000007879000000000000ffffffff5801000014000000"
    "000000000c0016000600050008000c000c0000000003040018000000580000000000000000000a0018000c000400"
    "08000a000000cc000000100000000300000000000000000000000b00000000000000000000000000000000000000"
    "00000000000000000c00000000000000100000000000000001000000000000001800000000000000100000000000"
    "00002800000000000000040000000000000030000000000000000000000000000000300000000000000003000000"
    "00000000380000000000000001000000000000004000000000000000100000000000000050000000000000000000"
    "00000000000050000000000000000800000000000000000000000500000003000000000000000000000000000000"
    "03000000000000000100000000000000030000000000000000000000000000000300000000000000010000000000"
    "00000100000000000000000000000000000001000000020000000300000000000000050000000000000000000000"
    "01000000010000000400000061636363000000000001000000000000030000000000000000000000010000000100"
    "0000010000000100000000000000ffffffff00000000100000000c001400060008000c0010000c00000000000400"
    "58000000280000000400000001000000780200000000000060010000000000005800000000000000000000000100"
    "0000b001000000000000b00000000000000018000000000000000000000000000a000c000000040008000a000000"
    "3800000004000000010000000c00000008000c000400080008000000100000000400000002000000763100000600"
    "0000676f6c64656e00000400000004010000c8000000700000000400000054ffffff0000010c0c00000010000000"
    "10000000010000006c00000044ffffff01000000040000007cffffff000001020c000000140000001c0000000400"
    "00006974656d0000000038ffffff000000014000000000000000100018000800060007000c001000140010000000"
    "000001051000000030000000180000002c00000001000000640000000800080000000400080000000400000088ff"
    "ffff0000000108000000ccffffff00000000100014000800060007000c000000100010000000000001050c000000"
    "14000000140000000100000073000000040004000400000000000000100014000800000007000c00000010001000"
    "0000000000020c0000001800000020000000010000006900000008000c0008000700080000000000000120000000"
    "00000000e80100004152524f5731";

Buffer FromHex(std::string_view hex) {
  std::string bytes(hex.size() / 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(std::stoi(std::string(hex.substr(2 * i, 2)), nullptr, 16));
  }
  return Buffer::Copy(bytes);
}

std::string AsJson(const RecordBatch& batch) {
  std::string out;
  json::JsonWriteOptions options;
  options.timestamps_as_micros = true;
  EXPECT_TRUE(json::AppendRowsToJsonLines(batch, &out, options).ok());
  return out;
}

// The table behind the apache-arrow golden bytes (timestamps converted to microseconds:
// milliseconds multiplied, nanoseconds floor-divided, seconds multiplied).
constexpr std::string_view kJsRows =
    R"({"i":1,"s":"a","d":"x","l":[1,2],"b":true,"tms":0,"tns":0,"ts":0})"
    "\n"
    R"({"i":null,"s":"héllo","d":"y","l":[],"b":false,"tms":1500000,"tns":1,"ts":1000000})"
    "\n"
    R"({"i":-3,"s":null,"d":"x","l":null,"b":null,"tms":-1000,"tns":-1,"ts":-1000000})"
    "\n"
    R"({"i":2147483647,"s":"","d":null,"l":[3],"b":true,"tms":null,"tns":null,"ts":null})"
    "\n"
    R"({"i":0,"s":"z","d":"y","l":[null],"b":false,"tms":1700000000123000,)"
    R"("tns":1700000000123456,"ts":1700000000000000})"
    "\n";

void ExpectJsTable(const std::vector<RecordBatch>& batches) {
  ASSERT_EQ(batches.size(), 1u);
  const RecordBatch& batch = batches[0];
  EXPECT_EQ(batch.schema()->ToString(),
            "i: int32\ns: utf8\nd: dictionary<values=utf8, indices=int32>\nl: list<item: int32>\n"
            "b: bool\ntms: timestamp[us]\ntns: timestamp[us]\nts: timestamp[us]\n");
  EXPECT_EQ(AsJson(batch), kJsRows);
  EXPECT_TRUE(batch.ValidateFull().ok());
}

TEST(IpcFormatTest, ReadsStreamWrittenByArrowJs) {
  auto batches = ReadStream(FromHex(kJsStreamHex));
  ASSERT_TRUE(batches.ok()) << batches.status();
  ExpectJsTable(*batches);
}

TEST(IpcFormatTest, ReadsFileWrittenByArrowJs) {
  auto batches = ReadFile(FromHex(kJsFileHex));
  ASSERT_TRUE(batches.ok()) << batches.status();
  ExpectJsTable(*batches);
}

// ---------------------------------------------------------------------------------------
// What strata writes

uint32_t U32(const Buffer& b, int64_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
int64_t I64(const Buffer& b, int64_t at) {
  int64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

struct WalkedMessage {
  int64_t offset = 0;
  int64_t metadata_length = 0;  // marker, length, flatbuffer, padding
  int64_t body_length = 0;
  internal::MessageView view;
  Buffer body;
};

// Parses the messages of a stream starting at `start`; *end is the offset after the
// end-of-stream marker.
std::vector<WalkedMessage> Walk(const Buffer& bytes, int64_t start, int64_t* end) {
  std::vector<WalkedMessage> out;
  int64_t pos = start;
  while (true) {
    EXPECT_EQ(U32(bytes, pos), 0xFFFFFFFFu) << "at " << pos;
    const int32_t length = static_cast<int32_t>(U32(bytes, pos + 4));
    if (length == 0) {
      *end = pos + 8;
      return out;
    }
    WalkedMessage m;
    m.offset = pos;
    m.metadata_length = 8 + length;
    auto view = internal::VerifyMessage(bytes.Slice(pos + 8, length), ReadOptions(), "test");
    EXPECT_TRUE(view.ok()) << view.status();
    if (!view.ok()) return out;
    m.view = *view;
    m.body_length = view->message->body_length();
    m.body = bytes.Slice(pos + m.metadata_length, m.body_length);
    pos += m.metadata_length + m.body_length;
    out.push_back(m);
  }
}

void ExpectAlignedAndZeroPadded(const std::vector<WalkedMessage>& messages, int alignment) {
  for (const WalkedMessage& m : messages) {
    SCOPED_TRACE("message at " + std::to_string(m.offset));
    EXPECT_EQ(m.view.message->version(), fb::MetadataVersion::V5);
    EXPECT_EQ(m.offset % 8, 0);
    EXPECT_EQ((m.offset + m.metadata_length) % alignment, 0);  // body starts aligned
    EXPECT_EQ(m.body_length % alignment, 0);
    const fb::RecordBatch* batch = m.view.message->header_as_RecordBatch();
    if (const fb::DictionaryBatch* d = m.view.message->header_as_DictionaryBatch()) {
      batch = d->data();
    }
    if (batch == nullptr) continue;
    int64_t expected_offset = 0;
    for (const fb::Buffer* b : *batch->buffers()) {
      EXPECT_EQ(b->offset(), expected_offset);
      EXPECT_EQ(b->offset() % alignment, 0);
      const int64_t padded_end = internal::AlignUp(b->offset() + b->length(), alignment);
      for (int64_t i = b->offset() + b->length(); i < padded_end; ++i) {
        ASSERT_EQ(m.body.data()[i], 0) << "padding byte " << i;
      }
      expected_offset = padded_end;
    }
    EXPECT_EQ(expected_offset, m.body_length);
  }
}

class IpcLayoutTest : public ::testing::TestWithParam<int> {};

TEST_P(IpcLayoutTest, StreamFramingAlignmentAndEndMarker) {
  WriteOptions options;
  options.alignment = GetParam();
  SchemaPtr schema = AllTypesSchema();
  RandomBatchMaker maker(1);
  RecordBatch batch = maker.Make(schema, 33);
  auto bytes = WriteStreamToBuffer(schema, {batch, batch.Slice(5, 11)}, options);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  int64_t end = 0;
  std::vector<WalkedMessage> messages = Walk(*bytes, 0, &end);
  EXPECT_EQ(end, bytes->size());  // the end-of-stream marker is the last thing
  ASSERT_GE(messages.size(), 3u);
  EXPECT_EQ(messages[0].view.message->header_type(), fb::MessageHeader::Schema);
  EXPECT_EQ(messages[0].body_length, 0);
  EXPECT_EQ(messages.back().view.message->header_type(), fb::MessageHeader::RecordBatch);
  ExpectAlignedAndZeroPadded(messages, GetParam());
}

TEST_P(IpcLayoutTest, FileIsMagicStreamFooterLengthMagic) {
  WriteOptions options;
  options.alignment = GetParam();
  SchemaPtr schema = AllTypesSchema();
  RandomBatchMaker maker(2);
  std::vector<RecordBatch> batches = {maker.Make(schema, 9), maker.Make(schema, 4)};
  auto bytes = WriteFileToBuffer(schema, batches, options);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const Buffer& file = *bytes;
  EXPECT_EQ(file.view().substr(0, 8), std::string_view("ARROW1\0\0", 8));
  EXPECT_EQ(file.view().substr(file.size() - 6), "ARROW1");
  const int32_t footer_length = static_cast<int32_t>(U32(file, file.size() - 10));
  const int64_t footer_offset = file.size() - 10 - footer_length;

  int64_t stream_end = 0;
  std::vector<WalkedMessage> messages = Walk(file, 8, &stream_end);
  EXPECT_EQ(stream_end, footer_offset);  // the footer follows the end-of-stream marker
  ExpectAlignedAndZeroPadded(messages, GetParam());

  auto footer = internal::VerifyFooter(file.Slice(footer_offset, footer_length), ReadOptions());
  ASSERT_TRUE(footer.ok()) << footer.status();
  EXPECT_EQ(footer->footer->version(), fb::MetadataVersion::V5);
  // Every block points at the message the stream walk found, with the same sizes.
  std::vector<const WalkedMessage*> dictionaries, records;
  for (const WalkedMessage& m : messages) {
    if (m.view.message->header_type() == fb::MessageHeader::DictionaryBatch) {
      dictionaries.push_back(&m);
    } else if (m.view.message->header_type() == fb::MessageHeader::RecordBatch) {
      records.push_back(&m);
    }
  }
  auto check_blocks = [](const flatbuffers::Vector<const fb::Block*>* blocks,
                         const std::vector<const WalkedMessage*>& expected) {
    ASSERT_NE(blocks, nullptr);
    ASSERT_EQ(blocks->size(), expected.size());
    for (flatbuffers::uoffset_t i = 0; i < blocks->size(); ++i) {
      EXPECT_EQ(blocks->Get(i)->offset(), expected[i]->offset);
      EXPECT_EQ(blocks->Get(i)->meta_data_length(), expected[i]->metadata_length);
      EXPECT_EQ(blocks->Get(i)->body_length(), expected[i]->body_length);
    }
  };
  check_blocks(footer->footer->dictionaries(), dictionaries);
  check_blocks(footer->footer->record_batches(), records);
  EXPECT_EQ(records.size(), 2u);

  // The part between the magic and the footer is a complete stream.
  auto streamed = ReadStream(file.Slice(8, footer_offset - 8));
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  ASSERT_EQ(streamed->size(), 2u);
  EXPECT_TRUE((*streamed)[1].Equals(batches[1]));
}

INSTANTIATE_TEST_SUITE_P(IpcAlignments, IpcLayoutTest, ::testing::Values(8, 64));

TEST(IpcFormatTest, SlicedColumnsAreRebasedAndValidityOmittedWithoutNulls) {
  SchemaPtr schema =
      strata::schema({field("flag", boolean(), false), field("s", utf8()),
                      field("l", list(int32())), field("st", struct_({field("x", int32())}))});
  std::string rows;
  for (int i = 0; i < 40; ++i) {
    rows += "{\"flag\": " + std::string(i % 3 == 0 ? "true" : "false") +
            ", \"s\": " + (i % 5 == 0 ? std::string("null") : "\"v" + std::to_string(i) + "\"") +
            ", \"l\": [" + (i % 2 ? "1, 2" : "") + "], \"st\": {\"x\": " + std::to_string(i) +
            "}}\n";
  }
  auto whole = json::RowsToBatch(schema, rows);
  ASSERT_TRUE(whole.ok()) << whole.status();
  RecordBatch slice = whole->Slice(3, 17);
  WriteOptions options;
  options.alignment = 8;
  auto bytes = WriteStreamToBuffer(schema, {slice}, options);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  int64_t end = 0;
  std::vector<WalkedMessage> messages = Walk(*bytes, 0, &end);
  ASSERT_EQ(messages.size(), 2u);
  const fb::RecordBatch* batch = messages[1].view.message->header_as_RecordBatch();
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(batch->length(), 17);
  const auto* nodes = batch->nodes();
  const auto* buffers = batch->buffers();
  const Buffer& body = messages[1].body;
  // flag: no nulls -> empty validity; 17 bits of values starting at row 3.
  EXPECT_EQ(buffers->Get(0)->length(), 0);
  ASSERT_EQ(buffers->Get(1)->length(), 3);
  for (int i = 0; i < 17; ++i) {
    EXPECT_EQ(bit_util::GetBit(body.data() + buffers->Get(1)->offset(), i), (i + 3) % 3 == 0);
  }
  // s: nulls at rows 5, 10, 15 -> a validity bitmap; offsets rebased to start at 0.
  EXPECT_EQ(nodes->Get(1)->null_count(), 3);
  EXPECT_EQ(buffers->Get(2)->length(), 3);
  ASSERT_EQ(buffers->Get(3)->length(), 18 * 4);
  const int32_t* offsets =
      reinterpret_cast<const int32_t*>(body.data() + buffers->Get(3)->offset());
  EXPECT_EQ(offsets[0], 0);
  EXPECT_EQ(offsets[17], buffers->Get(4)->length());
  // l: rebased offsets; the child holds exactly the sliced rows' elements.
  const int32_t* list_offsets =
      reinterpret_cast<const int32_t*>(body.data() + buffers->Get(6)->offset());
  EXPECT_EQ(list_offsets[0], 0);
  EXPECT_EQ(nodes->Get(3)->length(), list_offsets[17]);
  EXPECT_EQ(list_offsets[17], 2 * 9);  // odd rows 3..19
  // st: the child is cut to the 17 rows, starting at x = 3.
  EXPECT_EQ(nodes->Get(5)->length(), 17);
  EXPECT_EQ(reinterpret_cast<const int32_t*>(body.data() + buffers->Get(10)->offset())[0], 3);
}

TEST(IpcFormatTest, CompressedBuffersCarryLengthPrefixes) {
  SchemaPtr schema =
      strata::schema({field("zeros", int64()), field("noise", binary()), field("empty", utf8())});
  std::string rows;
  for (int i = 0; i < 300; ++i) {
    std::string noise;
    for (int k = 0; k < 8; ++k) noise += "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[(i * 7 + k * 13) % 26];
    rows += "{\"zeros\": 0, \"noise\": \"" + noise + "\", \"empty\": \"\"}\n";
  }
  auto batch = json::RowsToBatch(schema, rows);
  ASSERT_TRUE(batch.ok()) << batch.status();
  for (Compression codec : {Compression::kLz4Frame, Compression::kZstd}) {
    SCOPED_TRACE(std::string(CompressionName(codec)));
    WriteOptions options;
    options.compression = codec;
    auto bytes = WriteStreamToBuffer(schema, {*batch}, options);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    int64_t end = 0;
    std::vector<WalkedMessage> messages = Walk(*bytes, 0, &end);
    ASSERT_EQ(messages.size(), 2u);
    const fb::RecordBatch* rb = messages[1].view.message->header_as_RecordBatch();
    ASSERT_NE(rb->compression(), nullptr);
    EXPECT_EQ(rb->compression()->codec(), codec == Compression::kZstd
                                              ? fb::CompressionType::ZSTD
                                              : fb::CompressionType::LZ4_FRAME);
    EXPECT_EQ(rb->compression()->method(), fb::BodyCompressionMethod::BUFFER);
    const auto* buffers = rb->buffers();
    const Buffer& body = messages[1].body;
    // Validity buffers are omitted (no nulls) and stay empty.
    EXPECT_EQ(buffers->Get(0)->length(), 0);
    // zeros: 2400 bytes compress well -> prefix is the uncompressed length.
    EXPECT_EQ(I64(body, buffers->Get(1)->offset()), 300 * 8);
    EXPECT_LT(buffers->Get(1)->length(), 300 * 8);
    // empty's data buffer has no bytes at all, so no prefix either.
    EXPECT_EQ(buffers->Get(7)->length(), 0);
  }
  // A tiny buffer does not shrink: stored raw behind a -1 prefix.
  auto one = json::RowsToBatch(schema, "{\"zeros\": 5, \"noise\": \"UQ==\", \"empty\": \"\"}\n");
  ASSERT_TRUE(one.ok());
  auto bytes = WriteStreamToBuffer(schema, {*one}, {Compression::kZstd});
  ASSERT_TRUE(bytes.ok());
  int64_t end = 0;
  std::vector<WalkedMessage> messages = Walk(*bytes, 0, &end);
  const auto* buffers = messages[1].view.message->header_as_RecordBatch()->buffers();
  EXPECT_EQ(I64(messages[1].body, buffers->Get(1)->offset()), -1);
  EXPECT_EQ(buffers->Get(1)->length(), 8 + 8);
  EXPECT_EQ(I64(messages[1].body, buffers->Get(1)->offset() + 8), 5);
}

TEST(IpcFormatTest, SchemaMetadataUsesArrowEncodings) {
  auto bytes = WriteStreamToBuffer(AllTypesSchema(), {});
  ASSERT_TRUE(bytes.ok());
  int64_t end = 0;
  std::vector<WalkedMessage> messages = Walk(*bytes, 0, &end);
  ASSERT_EQ(messages.size(), 1u);
  const fb::Schema* schema = messages[0].view.message->header_as_Schema();
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->endianness(), fb::Endianness::Little);
  auto find = [&](std::string_view name) -> const fb::Field* {
    for (const fb::Field* f : *schema->fields()) {
      if (f->name()->string_view() == name) return f;
    }
    return nullptr;
  };
  const fb::Field* i32 = find("i32");
  ASSERT_NE(i32, nullptr);
  EXPECT_FALSE(i32->nullable());
  EXPECT_EQ(i32->type_type(), fb::Type::Int);
  EXPECT_EQ(i32->type_as_Int()->bit_width(), 32);
  EXPECT_TRUE(i32->type_as_Int()->is_signed());
  EXPECT_FALSE(find("u16")->type_as_Int()->is_signed());
  const fb::Field* ts = find("ts_tz");
  EXPECT_EQ(ts->type_as_Timestamp()->unit(), fb::TimeUnit::MICROSECOND);
  EXPECT_EQ(ts->type_as_Timestamp()->timezone()->str(), "Europe/Paris");
  EXPECT_EQ(find("ts")->type_as_Timestamp()->timezone(), nullptr);
  EXPECT_EQ(find("emb")->type_as_FixedSizeList()->list_size(), 3);
  EXPECT_EQ(find("emb")->children()->Get(0)->type_type(), fb::Type::FloatingPoint);
  EXPECT_EQ(find("lli")->type_type(), fb::Type::LargeList);
  EXPECT_EQ(find("lli")->children()->Get(0)->name()->str(), "element");
  EXPECT_FALSE(find("lli")->children()->Get(0)->nullable());
  const fb::Field* d8 = find("d8");
  EXPECT_EQ(d8->type_type(), fb::Type::Utf8);
  ASSERT_NE(d8->dictionary(), nullptr);
  EXPECT_EQ(d8->dictionary()->index_type()->bit_width(), 8);
  EXPECT_EQ(find("d32")->type_type(), fb::Type::LargeUtf8);
  EXPECT_NE(d8->dictionary()->id(), find("d32")->dictionary()->id());
  EXPECT_EQ(find("i64")->custom_metadata()->Get(0)->key()->str(), "unit");
  EXPECT_EQ(schema->custom_metadata()->size(), 2u);
}

// A stream whose schema says timestamp[s] and whose value does not fit microseconds.
TEST(IpcFormatTest, ForeignTimestampOverflowIsReported) {
  flatbuffers::FlatBufferBuilder fbb;
  auto ts = fb::CreateTimestamp(fbb, fb::TimeUnit::SECOND);
  auto name = fbb.CreateString("t");
  std::vector<flatbuffers::Offset<fb::Field>> fields = {
      fb::CreateField(fbb, name, true, fb::Type::Timestamp, ts.Union())};
  auto schema = fb::CreateSchema(fbb, fb::Endianness::Little, fbb.CreateVector(fields));
  fbb.Finish(fb::CreateMessage(fbb, fb::MetadataVersion::V5, fb::MessageHeader::Schema,
                               schema.Union(), 0));
  std::string stream = testing::Frame(fbb, "");
  testing::CraftedBatch batch;
  batch.length = 2;
  batch.nodes = {fb::FieldNode(2, 0)};
  batch.buffers = {fb::Buffer(0, 0), fb::Buffer(0, 16)};
  const int64_t values[2] = {-5, int64_t{1} << 50};  // 2^50 s overflows int64 microseconds
  batch.body.assign(reinterpret_cast<const char*>(values), 16);
  stream += testing::CraftMessage(batch) + testing::EndOfStream();
  auto got = ReadStream(testing::ToBuffer(stream));
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(got.status().IsNotSupported()) << got.status();

  batch.body.assign(reinterpret_cast<const char*>(values), 8);
  batch.body.append(8, '\0');
  std::string ok_stream = stream.substr(0, testing::Frame(fbb, "").size()) +
                          testing::CraftMessage(batch) + testing::EndOfStream();
  auto ok = ReadStream(testing::ToBuffer(ok_stream));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)[0].column(0).Value<int64_t>(0), -5000000);
}

TEST(IpcFormatTest, GoldenFileStillReadsAndIsStillWritten) {
  SchemaPtr schema =
      strata::schema({field("i", int32(), false), field("s", utf8()),
                      field("d", dictionary(int8(), utf8())), field("l", list(int64()))},
                     Metadata({{"golden", "v1"}}));
  auto batch = json::RowsToBatch(schema,
                                 "{\"i\":1,\"s\":\"a\",\"d\":\"x\",\"l\":[1]}\n"
                                 "{\"i\":2,\"s\":null,\"d\":\"y\",\"l\":[]}\n"
                                 "{\"i\":3,\"s\":\"ccc\",\"d\":\"x\",\"l\":null}\n");
  ASSERT_TRUE(batch.ok()) << batch.status();
  Buffer golden = FromHex(kStrataFileV1Hex);
  auto reader = FileReader::Open(SourceFromBuffer(golden));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->schema()->Equals(*schema, /*check_metadata=*/true));
  auto got = (*reader)->ReadAll();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_TRUE((*got)[0].Equals(*batch));

  WriteOptions options;
  options.alignment = 8;
  auto written = WriteFileToBuffer(schema, {*batch}, options);
  ASSERT_TRUE(written.ok());
  EXPECT_TRUE(written->Equals(golden)) << "the writer's output changed; if on purpose, add a "
                                          "new golden file and keep reading this one";
}

}  // namespace
}  // namespace strata::ipc
