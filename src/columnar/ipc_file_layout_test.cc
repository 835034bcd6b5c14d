// Assembling an IPC file around messages written elsewhere (EncodeFileHeader,
// ScanStreamLayout, EncodeFileFooter), the way the LSM write-ahead log frames its segments.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "columnar/ipc_test_util.h"
#include "strata/builder.h"
#include "support/temp_dir.h"

namespace strata::ipc {
namespace {

using testing::AllTypesSchema;
using testing::BatchDiff;
using testing::Metadata;
using testing::RandomBatchMaker;

bool HoldsDictionary(const DataType& type) {
  if (type.id() == TypeId::kDictionary) return true;
  for (const FieldPtr& f : type.fields()) {
    if (HoldsDictionary(*f->type())) return true;
  }
  return false;
}

// Every type strata supports except dictionaries (nested ones and metadata included).
SchemaPtr NoDictionarySchema() {
  SchemaPtr all = AllTypesSchema();
  std::vector<FieldPtr> fields;
  for (const FieldPtr& f : all->fields()) {
    if (!HoldsDictionary(*f->type())) fields.push_back(f);
  }
  return schema(std::move(fields), all->metadata());
}

SchemaPtr SmallSchema() {
  return schema({field("id", int64(), false), field("name", utf8()),
                 field("tags", list(field("item", utf8())))});
}

std::string Junk(std::mt19937_64& rng, int64_t n) {
  std::string out(static_cast<size_t>(n), '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

uint32_t U32At(std::string_view bytes, int64_t at) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + at, 4);
  return v;
}

// A segment as the write-ahead log writes it: the file header, then per stream a record of a
// 32-byte header, the stream and an 8 to 24-byte trailer (random bytes standing in for
// record headers and checksums), then the footer naming every record batch message and,
// per dictionary id, the longest dictionary message (the streams' dictionaries of one id
// must be prefixes of one growing sequence of values).
struct Segment {
  std::string bytes;
  std::vector<FileBlock> dictionaries;
  std::vector<FileBlock> blocks;
};

Result<Segment> Assemble(const SchemaPtr& schema, const std::vector<Buffer>& streams,
                         const WriteOptions& header_options, std::mt19937_64& rng) {
  Segment segment;
  STRATA_ASSIGN_OR_RETURN(segment.bytes, EncodeFileHeader(*schema, header_options));
  std::map<int64_t, std::pair<int64_t, FileBlock>> longest;  // id -> (length, block)
  for (const Buffer& stream : streams) {
    segment.bytes += Junk(rng, 32);
    const int64_t start = static_cast<int64_t>(segment.bytes.size());
    segment.bytes.append(stream.view());
    segment.bytes += Junk(rng, 8 * static_cast<int64_t>(1 + rng() % 3));
    STRATA_ASSIGN_OR_RETURN(std::vector<MessageLayout> layout, ScanStreamLayout(stream.view()));
    for (const MessageLayout& m : layout) {
      const FileBlock block{start + m.offset, m.metadata_length, m.body_length};
      if (m.kind == MessageLayout::Kind::kRecordBatch) segment.blocks.push_back(block);
      if (m.kind != MessageLayout::Kind::kDictionaryBatch) continue;
      if (m.is_delta) return Status::InvalidArgument("test streams must not carry deltas");
      auto [it, inserted] = longest.try_emplace(m.dictionary_id, m.num_rows, block);
      if (!inserted && m.num_rows > it->second.first) it->second = {m.num_rows, block};
    }
  }
  for (const auto& [id, entry] : longest) segment.dictionaries.push_back(entry.second);
  STRATA_ASSIGN_OR_RETURN(std::string footer,
                          EncodeFileFooter(*schema, segment.dictionaries, segment.blocks));
  segment.bytes += footer;
  return segment;
}

// ---------------------------------------------------------------------------------------
// Header and footer around copied streams

struct AssemblyCase {
  const char* name;
  Compression compression;
  int header_alignment;
  int stream_alignment;
};

class IpcFileLayoutAssemblyTest : public ::testing::TestWithParam<AssemblyCase> {};

TEST_P(IpcFileLayoutAssemblyTest, SegmentWithJunkBetweenMessagesReadsBackEveryBatch) {
  const AssemblyCase& param = GetParam();
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  RandomBatchMaker maker(seed);
  SchemaPtr schema = NoDictionarySchema();
  WriteOptions stream_options;
  stream_options.compression = param.compression;
  stream_options.alignment = param.stream_alignment;
  // Several streams of several batches, a zero-row batch and a slice among them.
  const std::vector<std::vector<int64_t>> rows = {{5, 0, 17}, {1}, {30, 2}};
  std::vector<RecordBatch> expected;
  std::vector<Buffer> streams;
  for (const std::vector<int64_t>& stream_rows : rows) {
    std::vector<RecordBatch> batches;
    for (int64_t n : stream_rows) batches.push_back(maker.Make(schema, n));
    if (batches.size() > 1) batches.back() = batches.back().Slice(1, batches.back().num_rows() - 1);
    auto stream = WriteStreamToBuffer(schema, batches, stream_options);
    ASSERT_TRUE(stream.ok()) << stream.status();
    streams.push_back(*stream);
    expected.insert(expected.end(), batches.begin(), batches.end());
  }
  WriteOptions header_options;
  header_options.alignment = param.header_alignment;
  auto segment = Assemble(schema, streams, header_options, rng);
  ASSERT_TRUE(segment.ok()) << segment.status();
  ASSERT_EQ(segment->blocks.size(), expected.size());

  auto reader = FileReader::Open(SourceFromBuffer(Buffer::Copy(segment->bytes)));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->schema()->Equals(*schema, /*check_metadata=*/true));
  EXPECT_EQ((*reader)->num_dictionaries(), 0);
  ASSERT_EQ((*reader)->num_batches(), static_cast<int>(expected.size()));
  const std::vector<int> projection = {schema->GetFieldIndex("st"), schema->GetFieldIndex("s")};
  for (int i = 0; i < (*reader)->num_batches(); ++i) {
    SCOPED_TRACE("batch " + std::to_string(i));
    auto got = (*reader)->ReadBatch(i);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(BatchDiff(expected[i], *got), "");
    auto projected = (*reader)->ReadBatch(i, projection);
    ASSERT_TRUE(projected.ok()) << projected.status();
    ASSERT_EQ(projected->num_columns(), 2);
    EXPECT_TRUE(projected->column(0).Equals(expected[i].column(projection[0])));
    EXPECT_TRUE(projected->column(1).Equals(expected[i].column(projection[1])));
    auto info = (*reader)->InspectBatch(i);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->num_rows, expected[i].num_rows());
    EXPECT_EQ(info->offset, segment->blocks[i].offset);
    if (expected[i].num_rows() > 0) {
      EXPECT_EQ(info->compression, param.compression);
    }
  }
  // The same bytes read through ReadFile (the convenience path).
  auto all = ReadFile(Buffer::Copy(segment->bytes));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), expected.size());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, IpcFileLayoutAssemblyTest,
    ::testing::Values(AssemblyCase{"lz4_align8", Compression::kLz4Frame, 8, 8},
                      AssemblyCase{"zstd_align64", Compression::kZstd, 64, 64},
                      AssemblyCase{"none_header64_streams8", Compression::kNone, 64, 8},
                      AssemblyCase{"zstd_header8_streams4096", Compression::kZstd, 8, 4096}),
    [](const ::testing::TestParamInfo<AssemblyCase>& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------
// Dictionaries that are prefixes of one growing dictionary

// role: dictionary<int8, utf8> (id 0); tags: list of dictionary<int16, utf8> (id 1).
SchemaPtr DictionarySchema() {
  return schema({field("id", int64(), false), field("role", dictionary(int8(), utf8())),
                 field("tags", list(field("item", dictionary(int16(), utf8()))))});
}

const std::vector<std::string>& Roles() {
  static const std::vector<std::string> roles = {"user", "assistant", "system", "tool", "critic"};
  return roles;
}
const std::vector<std::string>& Tags() {
  static const std::vector<std::string> tags = {"a", "bb", "", "ccc", "dddd", "e", "ff"};
  return tags;
}

// A dictionary array of `type` (utf8 values) whose dictionary is the first `known` entries
// of `canonical` and whose rows index it (-1: null).
Array DictionaryRows(const DataTypePtr& type, const std::vector<std::string>& canonical,
                     int64_t known, const std::vector<int64_t>& rows) {
  BinaryBuilder values(utf8());
  for (int64_t i = 0; i < known; ++i) EXPECT_TRUE(values.Append(canonical[i]).ok());
  Result<Array> dictionary = values.Finish();
  EXPECT_TRUE(dictionary.ok()) << dictionary.status();
  Result<Array> indices = Array();
  if (type->index_type()->id() == TypeId::kInt8) {
    Int8Builder b(int8());
    for (int64_t r : rows) {
      EXPECT_LT(r, known);
      r < 0 ? b.AppendNull() : b.Append(static_cast<int8_t>(r));
    }
    indices = b.Finish();
  } else {
    Int16Builder b(int16());
    for (int64_t r : rows) {
      EXPECT_LT(r, known);
      r < 0 ? b.AppendNull() : b.Append(static_cast<int16_t>(r));
    }
    indices = b.Finish();
  }
  EXPECT_TRUE(indices.ok()) << indices.status();
  ArrayData data = *indices->data();
  data.type = type;
  data.dictionary = dictionary->data();
  Result<Array> out = Array::Make(std::move(data));
  EXPECT_TRUE(out.ok()) << out.status();
  return *out;
}

// A batch of DictionarySchema() whose dictionaries are the first `roles` roles and the first
// `tags` tags; row r uses role (first + r) % roles (null every fifth row) and a list of
// up to three tags.
RecordBatch GrowingBatch(int64_t first, int64_t n, int64_t roles, int64_t tags) {
  const SchemaPtr s = DictionarySchema();
  Int64Builder ids(int64());
  std::vector<int64_t> role_rows;
  std::vector<int64_t> tag_rows;
  Int32Builder offsets(int32());
  offsets.Append(0);
  for (int64_t r = 0; r < n; ++r) {
    ids.Append(first + r);
    role_rows.push_back((first + r) % 5 == 4 ? -1 : (first + r) % roles);
    for (int64_t k = 0; k < (first + r) % 4; ++k) {
      tag_rows.push_back(k == 2 ? -1 : (first + r + k) % tags);
    }
    offsets.Append(static_cast<int32_t>(tag_rows.size()));
  }
  const DataTypePtr& list_type = s->field(2)->type();
  Array items = DictionaryRows(list_type->fields()[0]->type(), Tags(), tags, tag_rows);
  ArrayData list_data;
  list_data.type = list_type;
  list_data.length = n;
  list_data.buffers = {Buffer(), (*offsets.Finish()).data()->buffers[1]};
  list_data.children = {items.data()};
  Result<Array> list = Array::Make(std::move(list_data));
  EXPECT_TRUE(list.ok()) << list.status();
  Result<RecordBatch> batch = RecordBatch::Make(
      s, n, {*ids.Finish(), DictionaryRows(s->field(1)->type(), Roles(), roles, role_rows), *list});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

TEST(IpcFileLayoutTest, GrowingDictionariesReadBackThroughTheLongestOfEachId) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const SchemaPtr schema = DictionarySchema();
  // Per stream: the role and tag prefixes its batches know. The longest role dictionary
  // comes in stream 1, the longest tag dictionary in stream 3: batches before them use
  // shorter ones, and later ones shorter ones again.
  struct StreamSpec {
    int64_t roles;
    int64_t tags;
    std::vector<int64_t> rows;
  };
  const std::vector<StreamSpec> specs = {
      {2, 3, {4, 3}}, {5, 1, {9}}, {3, 6, {0, 7}}, {4, 7, {6}}, {1, 2, {2}}};
  for (const auto& [compression, alignment] :
       {std::pair{Compression::kNone, 8}, std::pair{Compression::kLz4Frame, 64}}) {
    SCOPED_TRACE(::testing::Message() << CompressionName(compression) << ", " << alignment);
    WriteOptions options;
    options.compression = compression;
    options.alignment = alignment;
    std::vector<RecordBatch> expected;
    std::vector<Buffer> streams;
    int64_t first = 0;
    for (const StreamSpec& spec : specs) {
      std::vector<RecordBatch> batches;
      for (int64_t n : spec.rows) {
        batches.push_back(GrowingBatch(first, n, spec.roles, spec.tags));
        first += n;
      }
      auto stream = WriteStreamToBuffer(schema, batches, options);
      ASSERT_TRUE(stream.ok()) << stream.status();
      streams.push_back(*stream);
      expected.insert(expected.end(), batches.begin(), batches.end());
    }
    auto segment = Assemble(schema, streams, options, rng);
    ASSERT_TRUE(segment.ok()) << segment.status();
    ASSERT_EQ(segment->dictionaries.size(), 2u);
    // The footer names the dictionary messages of streams 1 and 3.
    EXPECT_LT(segment->dictionaries[0].offset, segment->blocks[2].offset);
    EXPECT_GT(segment->dictionaries[0].offset, segment->blocks[1].offset);
    EXPECT_GT(segment->dictionaries[1].offset, segment->blocks[4].offset);
    EXPECT_LT(segment->dictionaries[1].offset, segment->blocks[5].offset);

    auto reader = FileReader::Open(SourceFromBuffer(Buffer::Copy(segment->bytes)));
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_TRUE((*reader)->schema()->Equals(*schema, /*check_metadata=*/true));
    EXPECT_EQ((*reader)->num_dictionaries(), 2);
    ASSERT_EQ((*reader)->num_batches(), static_cast<int>(expected.size()));
    for (int i = 0; i < (*reader)->num_batches(); ++i) {
      SCOPED_TRACE("batch " + std::to_string(i));
      auto got = (*reader)->ReadBatch(i);
      ASSERT_TRUE(got.ok()) << got.status();
      // Equal decoded values; the dictionaries are the longest ones.
      EXPECT_EQ(BatchDiff(expected[i], *got), "");
      EXPECT_EQ(got->column(1).dictionary().length(), 5);
      EXPECT_EQ(got->column(2).values_array().dictionary().length(), 7);
      auto roles = (*reader)->ReadBatch(i, {1});
      ASSERT_TRUE(roles.ok()) << roles.status();
      EXPECT_TRUE(roles->column(0).Equals(expected[i].column(1)));
    }
    auto all = ReadFile(Buffer::Copy(segment->bytes));
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(BatchDiff(expected[i], (*all)[i]), "");
  }
}

TEST(IpcFileLayoutTest, ScanReportsDictionaryIdsLengthsAndDeltas) {
  const SchemaPtr schema = DictionarySchema();
  // Batch 0 sends both dictionaries; batch 1 extends the roles (a delta of two values) and
  // keeps the tags (nothing sent); batch 2 replaces the tags with another dictionary.
  RecordBatch replaced = GrowingBatch(20, 3, 4, 5);
  {
    ArrayData list = *replaced.column(2).data();
    ArrayData items = *list.children[0];
    BinaryBuilder other(utf8());
    for (const char* v : {"z", "y", "x", "w", "v"}) ASSERT_TRUE(other.Append(v).ok());
    items.dictionary = (*other.Finish()).data();
    list.children[0] = std::make_shared<ArrayData>(std::move(items));
    auto made = RecordBatch::Make(schema, 3,
                                  {replaced.column(0), replaced.column(1),
                                   Array(std::make_shared<ArrayData>(std::move(list)))});
    ASSERT_TRUE(made.ok()) << made.status();
    replaced = *made;
  }
  auto stream =
      WriteStreamToBuffer(schema, {GrowingBatch(0, 6, 2, 5), GrowingBatch(10, 4, 4, 5), replaced});
  ASSERT_TRUE(stream.ok()) << stream.status();
  auto layout = ScanStreamLayout(stream->view());
  ASSERT_TRUE(layout.ok()) << layout.status();
  using Kind = MessageLayout::Kind;
  struct Want {
    Kind kind;
    int64_t num_rows;
    int64_t dictionary_id;
    bool is_delta;
  };
  const std::vector<Want> want = {
      {Kind::kSchema, 0, -1, false},         {Kind::kDictionaryBatch, 2, 0, false},
      {Kind::kDictionaryBatch, 5, 1, false}, {Kind::kRecordBatch, 6, -1, false},
      {Kind::kDictionaryBatch, 2, 0, true},  {Kind::kRecordBatch, 4, -1, false},
      {Kind::kDictionaryBatch, 5, 1, false}, {Kind::kRecordBatch, 3, -1, false},
  };
  ASSERT_EQ(layout->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("message " + std::to_string(i));
    const MessageLayout& m = (*layout)[i];
    EXPECT_EQ(m.kind, want[i].kind);
    EXPECT_EQ(m.num_rows, want[i].num_rows);
    EXPECT_EQ(m.dictionary_id, want[i].dictionary_id);
    EXPECT_EQ(m.is_delta, want[i].is_delta);
  }
}

TEST(IpcFileLayoutTest, FileWriterBytesAreEncodedHeaderMessagesAndEncodedFooter) {
  // Dictionaries included (top-level and nested): the header numbers their ids as the
  // writer does, and the footer names the writer's dictionary batches.
  SchemaPtr schema = AllTypesSchema();
  RandomBatchMaker maker(11);
  std::vector<RecordBatch> batches = {maker.Make(schema, 7), maker.Make(schema, 0),
                                      maker.Make(schema, 20)};
  for (int alignment : {8, 64}) {
    for (Compression compression : {Compression::kNone, Compression::kLz4Frame}) {
      SCOPED_TRACE(::testing::Message()
                   << "alignment " << alignment << ", " << CompressionName(compression));
      WriteOptions options;
      options.alignment = alignment;
      options.compression = compression;
      auto file = WriteFileToBuffer(schema, batches, options);
      ASSERT_TRUE(file.ok()) << file.status();
      const std::string_view bytes = file->view();
      auto header = EncodeFileHeader(*schema, options);
      ASSERT_TRUE(header.ok()) << header.status();
      EXPECT_EQ(bytes.substr(0, header->size()), *header);

      // The file's messages are a stream after the 8-byte magic; the footer names its
      // record batches.
      auto layout = ScanStreamLayout(bytes.substr(8));
      ASSERT_TRUE(layout.ok()) << layout.status();
      EXPECT_EQ(8 + (*layout)[0].metadata_length, static_cast<int64_t>(header->size()));
      std::vector<FileBlock> dictionaries;
      std::vector<FileBlock> blocks;
      for (const MessageLayout& m : *layout) {
        const FileBlock block{8 + m.offset, m.metadata_length, m.body_length};
        if (m.kind == MessageLayout::Kind::kRecordBatch) blocks.push_back(block);
        if (m.kind == MessageLayout::Kind::kDictionaryBatch) dictionaries.push_back(block);
      }
      ASSERT_EQ(blocks.size(), batches.size());
      ASSERT_FALSE(dictionaries.empty());
      auto footer = EncodeFileFooter(*schema, dictionaries, blocks);
      ASSERT_TRUE(footer.ok()) << footer.status();
      const MessageLayout& last = layout->back();
      const int64_t messages_end = 8 + last.offset + last.metadata_length + last.body_length;
      EXPECT_EQ(messages_end + static_cast<int64_t>(footer->size()), file->size());
      EXPECT_EQ(bytes.substr(messages_end), *footer);
    }
  }
}

TEST(IpcFileLayoutTest, InspectBatchPlacesEachColumnsBuffersInOrderInTheBody) {
  // What data files cut their per-column checksum pieces from: each column's buffers span
  // [body_begin, body_end) of the body, columns in schema order, none overlapping.
  SchemaPtr schema = AllTypesSchema();
  RandomBatchMaker maker(13);
  std::vector<RecordBatch> batches = {maker.Make(schema, 9), maker.Make(schema, 0)};
  for (Compression compression : {Compression::kNone, Compression::kZstd}) {
    SCOPED_TRACE(CompressionName(compression));
    WriteOptions options;
    options.compression = compression;
    auto file = WriteFileToBuffer(schema, batches, options);
    ASSERT_TRUE(file.ok()) << file.status();
    auto reader = FileReader::Open(SourceFromBuffer(*file));
    ASSERT_TRUE(reader.ok()) << reader.status();
    for (int i = 0; i < (*reader)->num_batches(); ++i) {
      SCOPED_TRACE(::testing::Message() << "batch " << i);
      auto full = (*reader)->InspectBatch(i);
      ASSERT_TRUE(full.ok()) << full.status();
      auto metadata_only = (*reader)->InspectBatch(i, /*uncompressed_sizes=*/false);
      ASSERT_TRUE(metadata_only.ok()) << metadata_only.status();
      ASSERT_EQ(full->columns.size(), static_cast<size_t>(schema->num_fields()));
      ASSERT_EQ(metadata_only->columns.size(), full->columns.size());
      int64_t previous_end = 0;
      int64_t stored = 0;
      for (size_t c = 0; c < full->columns.size(); ++c) {
        const ColumnInfo& column = full->columns[c];
        EXPECT_EQ(metadata_only->columns[c].body_begin, column.body_begin) << c;
        EXPECT_EQ(metadata_only->columns[c].body_end, column.body_end) << c;
        EXPECT_EQ(metadata_only->columns[c].stored_bytes, column.stored_bytes) << c;
        EXPECT_EQ(metadata_only->columns[c].uncompressed_bytes,
                  compression == Compression::kNone ? column.uncompressed_bytes : -1)
            << c;
        stored += column.stored_bytes;
        if (column.stored_bytes == 0) {
          EXPECT_EQ(column.body_begin, -1) << c;
          EXPECT_EQ(column.body_end, -1) << c;
          continue;
        }
        EXPECT_GE(column.body_begin, previous_end) << c;
        EXPECT_GE(column.body_end - column.body_begin, column.stored_bytes) << c;
        EXPECT_LE(column.body_end, full->body_length) << c;
        previous_end = column.body_end;
      }
      EXPECT_LE(stored, full->body_length);
    }
  }
}

// ---------------------------------------------------------------------------------------
// EncodeFileHeader / EncodeFileFooter arguments

TEST(IpcFileLayoutTest, HeaderLengthIsAMultipleOfTheAlignmentAndIgnoresCompression) {
  for (const SchemaPtr& schema :
       {NoDictionarySchema(), SmallSchema(), strata::schema(std::vector<FieldPtr>{})}) {
    for (int alignment : {8, 16, 64, 4096}) {
      SCOPED_TRACE(::testing::Message()
                   << schema->num_fields() << " fields, alignment " << alignment);
      WriteOptions options;
      options.alignment = alignment;
      auto header = EncodeFileHeader(*schema, options);
      ASSERT_TRUE(header.ok()) << header.status();
      EXPECT_EQ(header->size() % 8, 0u);
      EXPECT_EQ(header->size() % alignment, 0u);
      EXPECT_EQ(header->substr(0, 8), std::string_view("ARROW1\0\0", 8));
      EXPECT_EQ(U32At(*header, 8), 0xFFFFFFFFu);
      EXPECT_EQ(static_cast<int64_t>(U32At(*header, 12)),
                static_cast<int64_t>(header->size()) - 16);

      options.compression = Compression::kZstd;
      options.compression_threads = 4;
      auto compressed = EncodeFileHeader(*schema, options);
      ASSERT_TRUE(compressed.ok()) << compressed.status();
      EXPECT_EQ(*compressed, *header);

      // Header and footer alone are a file without batches.
      auto footer = EncodeFileFooter(*schema, {}, {});
      ASSERT_TRUE(footer.ok()) << footer.status();
      auto reader = FileReader::Open(SourceFromBuffer(Buffer::Copy(*header + *footer)));
      ASSERT_TRUE(reader.ok()) << reader.status();
      EXPECT_EQ((*reader)->num_batches(), 0);
      EXPECT_TRUE((*reader)->schema()->Equals(*schema, /*check_metadata=*/true));
    }
  }
}

TEST(IpcFileLayoutTest, HeaderWithABadAlignmentIsInvalidArgument) {
  for (int alignment : {0, 4, 12, 8192}) {
    WriteOptions options;
    options.alignment = alignment;
    auto header = EncodeFileHeader(*SmallSchema(), options);
    ASSERT_FALSE(header.ok()) << alignment;
    EXPECT_TRUE(header.status().IsInvalidArgument()) << header.status();
  }
}

TEST(IpcFileLayoutTest, DictionarySchemaHeaderIsTheFileWritersHeader) {
  const SchemaPtr top = schema({field("id", int64()), field("color", dictionary(int32(), utf8()))});
  const SchemaPtr nested =
      schema({field("tags", list(field("item", dictionary(int8(), utf8())))), field("x", int32())});
  for (const SchemaPtr& schema : {top, nested, AllTypesSchema()}) {
    SCOPED_TRACE(schema->ToString());
    auto header = EncodeFileHeader(*schema);
    ASSERT_TRUE(header.ok()) << header.status();
    // The schema message carries the dictionary ids; FileWriter's are the same bytes.
    auto file = WriteFileToBuffer(schema, {});
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ(file->view().substr(0, header->size()), *header);
    auto footer = EncodeFileFooter(*schema, {}, {});
    ASSERT_TRUE(footer.ok()) << footer.status();
    auto reader = FileReader::Open(SourceFromBuffer(Buffer::Copy(*header + *footer)));
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_TRUE((*reader)->schema()->Equals(*schema, /*check_metadata=*/true));
    EXPECT_EQ((*reader)->num_batches(), 0);
    EXPECT_EQ((*reader)->num_dictionaries(), 0);
  }
}

TEST(IpcFileLayoutTest, FooterWithAMisalignedOrNegativeBlockIsInvalidArgument) {
  const SchemaPtr schema = SmallSchema();
  const FileBlock good{64, 136, 256};
  auto ok = EncodeFileFooter(*schema, {}, {good, {400, 8, 0}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  // Misaligned offsets, an offset within the leading magic, negative offset and lengths,
  // metadata too short for the marker and length, lengths that are not multiples of 8.
  const std::vector<FileBlock> bad = {
      {68, 136, 256}, {401, 8, 0},  {0, 136, 256},  {-64, 136, 256}, {64, -136, 256},
      {64, 136, -8},  {64, 4, 256}, {64, 140, 256}, {64, 136, 260},
  };
  for (const FileBlock& block : bad) {
    SCOPED_TRACE(::testing::Message() << "block offset " << block.offset << ", metadata "
                                      << block.metadata_length << ", body " << block.body_length);
    auto footer = EncodeFileFooter(*schema, {}, {good, block});
    ASSERT_FALSE(footer.ok());
    EXPECT_TRUE(footer.status().IsInvalidArgument()) << footer.status();
    EXPECT_NE(footer.status().message().find("record batch block 1"), std::string::npos)
        << footer.status();
    // Dictionary blocks are held to the same rules.
    const SchemaPtr with_dictionary =
        strata::schema({field("id", int64()), field("color", dictionary(int8(), utf8()))});
    footer = EncodeFileFooter(*with_dictionary, {good, block}, {good});
    ASSERT_FALSE(footer.ok());
    EXPECT_TRUE(footer.status().IsInvalidArgument()) << footer.status();
    EXPECT_NE(footer.status().message().find("dictionary block 1"), std::string::npos)
        << footer.status();
  }
  auto with_dictionaries = EncodeFileFooter(*SmallSchema(), {good, {400, 8, 0}}, {good});
  EXPECT_TRUE(with_dictionaries.ok()) << with_dictionaries.status();
}

// ---------------------------------------------------------------------------------------
// ScanStreamLayout

TEST(IpcFileLayoutTest, ScanReportsEveryMessageOfAStream) {
  for (int alignment : {8, 64}) {
    SCOPED_TRACE(::testing::Message() << "alignment " << alignment);
    // Dictionaries included: the scan reports their batches too.
    SchemaPtr schema = AllTypesSchema();
    RandomBatchMaker maker(5);
    std::vector<RecordBatch> batches = {maker.Make(schema, 12), maker.Make(schema, 0),
                                        maker.Make(schema, 3)};
    WriteOptions options;
    options.alignment = alignment;
    options.compression = Compression::kLz4Frame;
    auto stream = WriteStreamToBuffer(schema, batches, options);
    ASSERT_TRUE(stream.ok()) << stream.status();
    const std::string_view bytes = stream->view();
    auto layout = ScanStreamLayout(bytes);
    ASSERT_TRUE(layout.ok()) << layout.status();
    ASSERT_GE(layout->size(), 1 + batches.size());

    EXPECT_EQ((*layout)[0].kind, MessageLayout::Kind::kSchema);
    std::vector<int64_t> rows;
    int dictionaries = 0;
    int64_t expected_offset = 0;
    for (const MessageLayout& m : *layout) {
      SCOPED_TRACE(::testing::Message() << "message at " << m.offset);
      // Messages follow each other; each starts with the marker and its flatbuffer length,
      // and its flatbuffer declares the body length reported.
      EXPECT_EQ(m.offset, expected_offset);
      EXPECT_EQ(m.offset % 8, 0);
      EXPECT_EQ((m.offset + m.metadata_length) % alignment, 0);
      EXPECT_EQ(m.body_length % alignment, 0);  // so EncodeFileFooter accepts its blocks
      ASSERT_LE(m.offset + m.metadata_length + m.body_length, stream->size());
      EXPECT_EQ(U32At(bytes, m.offset), 0xFFFFFFFFu);
      const int32_t length = static_cast<int32_t>(U32At(bytes, m.offset + 4));
      EXPECT_EQ(m.metadata_length, 8 + length);
      auto view = internal::VerifyMessage(stream->Slice(m.offset + 8, length), ReadOptions(), "t");
      ASSERT_TRUE(view.ok()) << view.status();
      EXPECT_EQ(view->message->body_length(), m.body_length);
      expected_offset = m.offset + m.metadata_length + m.body_length;
      if (m.kind == MessageLayout::Kind::kRecordBatch) {
        rows.push_back(m.num_rows);
        EXPECT_EQ(m.dictionary_id, -1);
      } else if (m.kind == MessageLayout::Kind::kDictionaryBatch) {
        ++dictionaries;
        EXPECT_GE(m.dictionary_id, 0);
        EXPECT_EQ(m.num_rows, view->message->header_as_DictionaryBatch()->data()->length());
        EXPECT_EQ(m.is_delta, view->message->header_as_DictionaryBatch()->is_delta());
      } else {
        EXPECT_EQ(m.num_rows, 0);
        EXPECT_EQ(m.dictionary_id, -1);
      }
    }
    EXPECT_EQ(rows, (std::vector<int64_t>{12, 0, 3}));
    EXPECT_GT(dictionaries, 0);
    // Only the end-of-stream marker follows the last message.
    EXPECT_EQ(expected_offset + 8, stream->size());

    // Bytes after the end-of-stream marker are not looked at; without the marker the scan
    // stops at the end of the bytes.
    auto with_trailer = ScanStreamLayout(std::string(bytes) + "not a message at all");
    ASSERT_TRUE(with_trailer.ok()) << with_trailer.status();
    EXPECT_EQ(with_trailer->size(), layout->size());
    auto without_marker = ScanStreamLayout(bytes.substr(0, bytes.size() - 8));
    ASSERT_TRUE(without_marker.ok()) << without_marker.status();
    EXPECT_EQ(without_marker->size(), layout->size());
  }
}

TEST(IpcFileLayoutTest, ScanOfATruncatedStreamIsCorruptionNamingTheMessageOffset) {
  SchemaPtr schema = SmallSchema();
  RandomBatchMaker maker(3);
  auto stream = WriteStreamToBuffer(schema, {maker.Make(schema, 4), maker.Make(schema, 9)});
  ASSERT_TRUE(stream.ok()) << stream.status();
  const std::string_view bytes = stream->view();
  auto layout = ScanStreamLayout(bytes);
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_EQ(layout->size(), 3u);
  const int64_t end = static_cast<int64_t>(bytes.size()) - 8;  // where the marker starts
  size_t message = 0;  // the message that contains byte cut - 1
  for (int64_t cut = 0; cut < end; ++cut) {
    while (message + 1 < layout->size() && (*layout)[message + 1].offset < cut) ++message;
    const MessageLayout& m = (*layout)[message];
    auto scanned = ScanStreamLayout(bytes.substr(0, cut));
    const bool at_boundary = cut > 0 && (cut == m.offset + m.metadata_length + m.body_length);
    if (at_boundary) {
      ASSERT_TRUE(scanned.ok()) << "cut " << cut << ": " << scanned.status();
      EXPECT_EQ(scanned->size(), message + 1) << "cut " << cut;
      continue;
    }
    ASSERT_FALSE(scanned.ok()) << "cut " << cut;
    EXPECT_TRUE(scanned.status().IsCorruption()) << scanned.status();
    const std::string offset = "offset " + std::to_string(m.offset) + ")";
    EXPECT_NE(scanned.status().message().find(offset), std::string::npos)
        << "cut " << cut << ": " << scanned.status();
  }
}

TEST(IpcFileLayoutTest, ScanOfAGarbledStreamIsCorruptionNamingTheMessageOffset) {
  SchemaPtr schema = SmallSchema();
  RandomBatchMaker maker(4);
  auto stream = WriteStreamToBuffer(schema, {maker.Make(schema, 6), maker.Make(schema, 2)});
  ASSERT_TRUE(stream.ok()) << stream.status();
  const std::string bytes(stream->view());
  auto layout = ScanStreamLayout(bytes);
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_EQ(layout->size(), 3u);
  const MessageLayout& batch = (*layout)[2];
  const std::string at_batch = "offset " + std::to_string(batch.offset) + ")";

  auto expect_corruption = [](const std::string& what, const std::string& garbled,
                              const std::string& needle) {
    SCOPED_TRACE(what);
    auto scanned = ScanStreamLayout(garbled);
    ASSERT_FALSE(scanned.ok());
    EXPECT_TRUE(scanned.status().IsCorruption()) << scanned.status();
    EXPECT_NE(scanned.status().message().find(needle), std::string::npos) << scanned.status();
  };

  std::string garbled = bytes;  // the flatbuffer of the last batch overwritten
  std::memset(garbled.data() + batch.offset + 8, 0x5A, batch.metadata_length - 8);
  expect_corruption("garbled flatbuffer", garbled, at_batch);

  garbled = bytes;  // a negative metadata length
  const int32_t negative = -16;
  std::memcpy(garbled.data() + batch.offset + 4, &negative, 4);
  expect_corruption("negative length", garbled, at_batch);

  garbled = bytes;  // a metadata length past the end
  const int32_t huge = static_cast<int32_t>(bytes.size());
  std::memcpy(garbled.data() + batch.offset + 4, &huge, 4);
  expect_corruption("length past the end", garbled, at_batch);

  // A stream must start with its schema message, and has only one.
  const int64_t schema_length = (*layout)[0].metadata_length;
  expect_corruption("no schema", bytes.substr(schema_length), "offset 0)");
  const std::string twice = bytes.substr(0, schema_length) + bytes;
  expect_corruption("second schema", twice, "offset " + std::to_string(schema_length) + ")");
  expect_corruption("empty", "", "offset 0");
  expect_corruption("only the marker", testing::EndOfStream(), "offset 0");
}

}  // namespace
}  // namespace strata::ipc
