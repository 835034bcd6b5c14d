// DescribeDataFile: manifest entries for Arrow IPC files written by something other than
// DataFileWriter match what the writer records, and bad objects are rejected.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "strata/json.h"
#include "strata/schema_json.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "table/data_file.h"

namespace strata::table::internal {
namespace {

constexpr const char* kPrefix = "t/";

SchemaPtr NestedSchema() {
  Result<SchemaPtr> s = SchemaFromJson(R"({"fields": [
    {"name": "id", "type": "int64", "nullable": false}, {"name": "s", "type": "utf8"},
    {"name": "tags", "type": "list<utf8>"},
    {"name": "point", "type": "struct<x: float64, label: utf8>"},
    {"name": "vec", "type": "fixed_size_list<float32>[3]"}, {"name": "flag", "type": "bool"},
    {"name": "ts", "type": "timestamp[us, tz=UTC]"}]})");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : nullptr;
}

// NestedSchema plus a dictionary column (files with dictionaries hold dictionary messages
// between record batches).
SchemaPtr WithDictionary(const SchemaPtr& s) {
  std::vector<FieldPtr> fields = s->fields();
  fields.push_back(field("cat", dictionary(int32(), utf8())));
  return schema(std::move(fields));
}

// `n` random rows from id `first` on, with nulls at every level (list items, struct fields,
// fixed-size-list values), for a schema made by NestedSchema (and WithDictionary).
RecordBatch RandomRows(const SchemaPtr& s, std::mt19937_64& rng, int64_t first, int64_t n) {
  auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };
  auto word = [&] { return fmt::format("\"w{}\"", rng() % 50); };
  const bool dictionary = s->GetFieldIndex("cat") >= 0;
  std::string lines;
  for (int64_t i = first; i < first + n; ++i) {
    std::string row = fmt::format("{{\"id\": {}", i);
    if (!chance(30)) row += ", \"s\": " + word();
    if (!chance(25)) {
      row += ", \"tags\": [";
      const int items = static_cast<int>(rng() % 4);
      for (int k = 0; k < items; ++k) row += (k ? ", " : "") + (chance(20) ? "null" : word());
      row += "]";
    }
    if (!chance(25)) {
      row += fmt::format(", \"point\": {{\"x\": {}, \"label\": {}}}",
                         chance(30) ? "null" : fmt::format("{}.5", rng() % 100),
                         chance(30) ? "null" : word());
    }
    if (!chance(40)) {
      row += fmt::format(", \"vec\": [{}, {}, {}]", rng() % 9, chance(30) ? "null" : "1.25",
                         rng() % 7);
    }
    if (!chance(20)) row += chance(50) ? ", \"flag\": true" : ", \"flag\": false";
    if (!chance(20)) row += fmt::format(", \"ts\": {}", rng() % 1000000);
    if (dictionary && !chance(20)) row += fmt::format(", \"cat\": \"c{}\"", rng() % 6);
    lines += row + "}\n";
  }
  Result<RecordBatch> batch = json::RowsToBatch(s, lines);
  EXPECT_TRUE(batch.ok()) << batch.status();
  return batch.ok() ? *batch : RecordBatch::MakeEmpty(s);
}

std::vector<int32_t> Ids(int n) {
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = 3 * i + 1;
  return ids;
}

std::vector<int> AllColumns(const Schema& schema) {
  std::vector<int> out(schema.num_fields());
  for (int i = 0; i < schema.num_fields(); ++i) out[i] = i;
  return out;
}

std::string AsJson(const std::vector<RecordBatch>& batches) {
  std::string out;
  for (const RecordBatch& batch : batches) out += json::BatchToJsonLines(batch);
  return out;
}

// Every batch of the data file, read through DataFileReader.
Result<std::vector<RecordBatch>> ReadBack(const std::shared_ptr<ObjectStore>& store,
                                          const pb::DataFile& entry) {
  STRATA_ASSIGN_OR_RETURN(auto reader, DataFileReader::Open(store, kPrefix, entry));
  std::vector<RecordBatch> batches;
  for (int i = 0; i < reader->num_batches(); ++i) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, reader->ReadBatch(i, AllColumns(*reader->schema())));
    batches.push_back(std::move(batch));
  }
  return batches;
}

// Writes `input` with DataFileWriter (small batches, zstd) and returns the entry.
Result<pb::DataFile> WriteWithWriter(const std::shared_ptr<ObjectStore>& store, const SchemaPtr& s,
                                     const std::vector<RecordBatch>& input) {
  DataFileWriteOptions options;
  options.compression = ipc::Compression::kZstd;
  options.max_rows_per_batch = 7;
  options.max_bytes_per_batch = 700;
  STRATA_ASSIGN_OR_RETURN(auto writer,
                          DataFileWriter::Make(store, kPrefix, s, Ids(s->num_fields()), options));
  for (const RecordBatch& batch : input) STRATA_RETURN_IF_ERROR(writer->Write(batch));
  return writer->Finish();
}

void ExpectSameEntry(const pb::DataFile& described, const pb::DataFile& written) {
  EXPECT_EQ(described.SerializeAsString(), written.SerializeAsString())
      << "described:\n"
      << described.DebugString() << "written:\n"
      << written.DebugString();
}

TEST(DataFileDescribeTest, WriterFileIsDescribedAsTheWriterRecordedIt) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937_64 rng(seed);
  auto store = NewMemoryObjectStore();
  for (const SchemaPtr& s : {NestedSchema(), WithDictionary(NestedSchema())}) {
    SCOPED_TRACE(s->ToString());
    // Inputs of varied sizes: some are cut into several batches (slices sharing nested
    // children with rows of other batches), some are joined with others into one batch.
    std::vector<RecordBatch> input;
    int64_t next_id = 0;
    for (int64_t n : {1, 3, 40, 2, 17, 5, 9}) {
      input.push_back(RandomRows(s, rng, next_id, n));
      next_id += n;
    }
    ASSERT_OK_AND_ASSIGN(pb::DataFile written, WriteWithWriter(store, s, input));
    ASSERT_GE(written.batches_size(), 8);
    ASSERT_TRUE(written.has_uncompressed_bytes());

    ASSERT_OK_AND_ASSIGN(pb::DataFile described, DescribeDataFile(*store, kPrefix, written.path(),
                                                                  *s, Ids(s->num_fields())));
    ExpectSameEntry(described, written);

    // The same bytes under another name: every field but the path.
    ASSERT_OK_AND_ASSIGN(Buffer bytes, store->Get(kPrefix + written.path()));
    ASSERT_OK(store->Put(std::string(kPrefix) + "data/copy.arrow", bytes.view()));
    ASSERT_OK_AND_ASSIGN(pb::DataFile copy, DescribeDataFile(*store, kPrefix, "data/copy.arrow", *s,
                                                             Ids(s->num_fields())));
    EXPECT_EQ(copy.path(), "data/copy.arrow");
    copy.set_path(written.path());
    ExpectSameEntry(copy, written);
    ASSERT_OK(VerifyDataFile(*store, kPrefix, copy));
  }
}

TEST(DataFileDescribeTest, FileFromTheIpcWriterIsReadableThroughItsEntry) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937_64 rng(seed + 1);
  auto store = NewMemoryObjectStore();
  const SchemaPtr s = WithDictionary(NestedSchema());
  const std::vector<RecordBatch> input = {RandomRows(s, rng, 0, 6), RandomRows(s, rng, 6, 1),
                                          RandomRows(s, rng, 7, 12)};
  ipc::WriteOptions options;
  options.compression = ipc::Compression::kLz4Frame;
  ASSERT_OK_AND_ASSIGN(Buffer file, ipc::WriteFileToBuffer(s, input, options));
  ASSERT_OK(store->Put(std::string(kPrefix) + "data/ipc.arrow", file.view()));
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, DescribeDataFile(*store, kPrefix, "data/ipc.arrow", *s,
                                                            Ids(s->num_fields())));
  EXPECT_EQ(entry.size(), file.size());
  ASSERT_EQ(entry.batches_size(), 3);
  EXPECT_EQ(entry.batches(0).num_rows(), 6);
  EXPECT_EQ(entry.batches(1).num_rows(), 1);
  EXPECT_EQ(entry.batches(2).num_rows(), 12);
  EXPECT_EQ(entry.batches(0).stats(0).min().int64_value(), 0);
  EXPECT_EQ(entry.batches(2).stats(0).max().int64_value(), 18);
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> back, ReadBack(store, entry));
  EXPECT_EQ(AsJson(back), AsJson(input));
  ASSERT_OK(VerifyDataFile(*store, kPrefix, entry));
}

// A write-ahead-log segment in miniature: the file header, then per stream random framing
// bytes, the stream (its own schema message, record batches, end-of-stream marker) and a
// trailer, then a footer naming the record batch messages.
struct Segment {
  std::string bytes;
  int64_t header_size = 0;
  std::vector<ipc::FileBlock> blocks;
};

Result<Segment> AssembleSegment(const SchemaPtr& s,
                                const std::vector<std::vector<RecordBatch>>& streams,
                                std::mt19937_64& rng) {
  auto junk = [&](int64_t n) {
    std::string out(static_cast<size_t>(n), '\0');
    for (char& c : out) c = static_cast<char>(rng());
    return out;
  };
  Segment segment;
  ipc::WriteOptions header_options;
  header_options.alignment = 64;
  STRATA_ASSIGN_OR_RETURN(segment.bytes, ipc::EncodeFileHeader(*s, header_options));
  segment.header_size = static_cast<int64_t>(segment.bytes.size());
  ipc::WriteOptions stream_options;
  stream_options.compression = ipc::Compression::kZstd;
  for (const std::vector<RecordBatch>& batches : streams) {
    segment.bytes += junk(8 * static_cast<int64_t>(1 + rng() % 4));
    const auto start = static_cast<int64_t>(segment.bytes.size());
    STRATA_ASSIGN_OR_RETURN(Buffer stream, ipc::WriteStreamToBuffer(s, batches, stream_options));
    segment.bytes.append(stream.view());
    segment.bytes += junk(16);
    STRATA_ASSIGN_OR_RETURN(std::vector<ipc::MessageLayout> layout,
                            ipc::ScanStreamLayout(stream.view()));
    for (const ipc::MessageLayout& m : layout) {
      if (m.kind != ipc::MessageLayout::Kind::kRecordBatch) continue;
      segment.blocks.push_back({start + m.offset, m.metadata_length, m.body_length});
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::string footer, ipc::EncodeFileFooter(*s, {}, segment.blocks));
  segment.bytes += footer;
  return segment;
}

TEST(DataFileDescribeTest, SegmentWithBytesBetweenMessagesIsCutAroundThem) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937_64 rng(seed + 2);
  auto store = NewMemoryObjectStore();
  const SchemaPtr s = NestedSchema();
  const std::vector<std::vector<RecordBatch>> streams = {
      {RandomRows(s, rng, 0, 5), RandomRows(s, rng, 5, 11)},
      {RandomRows(s, rng, 16, 1)},
      {RandomRows(s, rng, 17, 23).Slice(2, 20)},
  };
  std::vector<RecordBatch> input;
  for (const auto& stream : streams) input.insert(input.end(), stream.begin(), stream.end());
  ASSERT_OK_AND_ASSIGN(Segment segment, AssembleSegment(s, streams, rng));
  ASSERT_EQ(segment.blocks.size(), input.size());
  ASSERT_OK(store->Put(std::string(kPrefix) + "data/wal.arrow", segment.bytes));

  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, DescribeDataFile(*store, kPrefix, "data/wal.arrow", *s,
                                                            Ids(s->num_fields())));
  EXPECT_EQ(entry.path(), "data/wal.arrow");
  EXPECT_EQ(entry.size(), static_cast<int64_t>(segment.bytes.size()));
  // Bytes between messages belong to the batch after them; the footer starts where the
  // last batch message ends.
  EXPECT_EQ(entry.header().offset(), 0);
  EXPECT_EQ(entry.header().length(), segment.header_size);
  ASSERT_EQ(entry.batches_size(), static_cast<int>(input.size()));
  int64_t start = segment.header_size;
  for (int i = 0; i < entry.batches_size(); ++i) {
    const ipc::FileBlock& block = segment.blocks[i];
    const pb::Region& region = entry.batches(i).region();
    EXPECT_EQ(region.offset(), start) << i;
    start = block.offset + block.metadata_length + block.body_length;
    EXPECT_EQ(region.offset() + region.length(), start) << i;
    // A stream's first batch is preceded by framing and the stream's schema message; the
    // next batches of a stream follow the previous message directly.
    const bool starts_stream = i == 0 || i == 2 || i == 3;
    EXPECT_EQ(region.offset() < block.offset, starts_stream) << i;
  }
  EXPECT_EQ(entry.footer().offset(), start);
  EXPECT_EQ(entry.footer().offset() + entry.footer().length(), entry.size());

  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> back, ReadBack(store, entry));
  EXPECT_EQ(AsJson(back), AsJson(input));
  ASSERT_OK(VerifyDataFile(*store, kPrefix, entry));

  // Row counts, statistics and uncompressed bytes are what DataFileWriter records for the
  // same batches.
  int64_t uncompressed_bytes = 0;
  DataFileWriteOptions one_batch;
  one_batch.max_rows_per_batch = 1000;
  for (size_t i = 0; i < input.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(auto writer,
                         DataFileWriter::Make(store, kPrefix, s, Ids(s->num_fields()), one_batch));
    ASSERT_OK(writer->Write(input[i]));
    ASSERT_OK_AND_ASSIGN(pb::DataFile written, writer->Finish());
    ASSERT_EQ(written.batches_size(), 1);
    // Regions and their pieces depend on where the batch lies in the file; both are cut,
    // one piece per column after the message's.
    pb::BatchInfo expected = written.batches(0);
    pb::BatchInfo got = entry.batches(static_cast<int>(i));
    EXPECT_EQ(got.piece_starts_size(), s->num_fields()) << i;
    EXPECT_EQ(got.piece_xxh3_size(), s->num_fields() + 1) << i;
    EXPECT_EQ(expected.piece_starts_size(), s->num_fields()) << i;
    for (pb::BatchInfo* info : {&expected, &got}) {
      info->clear_region();
      info->clear_piece_starts();
      info->clear_piece_xxh3();
    }
    EXPECT_EQ(got.SerializeAsString(), expected.SerializeAsString())
        << i << "\n"
        << got.DebugString() << expected.DebugString();
    uncompressed_bytes += written.uncompressed_bytes();
  }
  EXPECT_EQ(entry.uncompressed_bytes(), uncompressed_bytes);

  // A flipped byte in the bytes before a batch (the previous stream's end-of-stream marker
  // and trailer, framing, the next stream's schema message) fails that batch's checksum.
  std::string flipped = segment.bytes;
  const int64_t framing = entry.batches(2).region().offset() + 1;
  flipped[framing] = static_cast<char>(~flipped[framing]);
  ASSERT_OK(store->Put(std::string(kPrefix) + "data/wal.arrow", flipped));
  ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store, kPrefix, entry));
  ASSERT_OK(reader->ReadBatch(1, AllColumns(*s)).status());
  Status status = reader->ReadBatch(2, AllColumns(*s)).status();
  EXPECT_TRUE(status.IsCorruption()) << status;
}

TEST(DataFileDescribeTest, SchemaMismatchIsInvalidArgument) {
  auto store = NewMemoryObjectStore();
  std::mt19937_64 rng(7);
  const SchemaPtr s = NestedSchema();
  ASSERT_OK_AND_ASSIGN(pb::DataFile written, WriteWithWriter(store, s, {RandomRows(s, rng, 0, 9)}));
  const int n = s->num_fields();
  auto describe = [&](const Schema& expected, std::vector<int32_t> ids) {
    return DescribeDataFile(*store, kPrefix, written.path(), expected, std::move(ids)).status();
  };
  // A renamed column, a column of another type, a missing column.
  std::vector<FieldPtr> renamed = s->fields();
  renamed[1] = field("t", utf8());
  EXPECT_TRUE(describe(Schema(renamed), Ids(n)).IsInvalidArgument());
  std::vector<FieldPtr> retyped = s->fields();
  retyped[0] = field("id", int32(), false);
  Status status = describe(Schema(retyped), Ids(n));
  EXPECT_TRUE(status.IsInvalidArgument()) << status;
  EXPECT_NE(status.message().find("id"), std::string::npos) << status;
  std::vector<FieldPtr> fewer(s->fields().begin(), s->fields().end() - 1);
  EXPECT_TRUE(describe(Schema(fewer), Ids(n - 1)).IsInvalidArgument());
  // Field ids: one per column, distinct, non-negative.
  EXPECT_TRUE(describe(*s, Ids(n - 1)).IsInvalidArgument());
  std::vector<int32_t> repeated = Ids(n);
  repeated[1] = repeated[0];
  EXPECT_TRUE(describe(*s, repeated).IsInvalidArgument());
  // Nullability and field metadata do not matter.
  std::vector<FieldPtr> relaxed = s->fields();
  relaxed[0] = field("id", int64(), true, KeyValueMetadata({{"k", "v"}}));
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry,
                       DescribeDataFile(*store, kPrefix, written.path(), Schema(relaxed), Ids(n)));
  ExpectSameEntry(entry, written);
}

TEST(DataFileDescribeTest, MissingObjectIsNotFound) {
  auto store = NewMemoryObjectStore();
  const SchemaPtr s = NestedSchema();
  Status status =
      DescribeDataFile(*store, kPrefix, "data/nope.arrow", *s, Ids(s->num_fields())).status();
  EXPECT_TRUE(status.IsNotFound()) << status;
  EXPECT_NE(status.message().find("t/data/nope.arrow"), std::string::npos) << status;
}

TEST(DataFileDescribeTest, UnreadableObjectIsCorruption) {
  auto store = NewMemoryObjectStore();
  std::mt19937_64 rng(11);
  const SchemaPtr s = NestedSchema();
  ASSERT_OK_AND_ASSIGN(pb::DataFile written,
                       WriteWithWriter(store, s, {RandomRows(s, rng, 0, 20)}));
  ASSERT_OK_AND_ASSIGN(Buffer good, store->Get(kPrefix + written.path()));
  const std::string bytes(good.view());
  auto describe = [&](const std::string& object) {
    EXPECT_TRUE(store->Put(std::string(kPrefix) + "data/bad.arrow", object).ok());
    return DescribeDataFile(*store, kPrefix, "data/bad.arrow", *s, Ids(s->num_fields())).status();
  };
  auto flipped = [&](int64_t offset) {
    std::string copy = bytes;
    copy[offset] = static_cast<char>(~copy[offset]);
    return copy;
  };
  const pb::Region& batch1 = written.batches(1).region();
  const pb::Region& footer = written.footer();
  struct Case {
    std::string name;
    std::string object;
  };
  const std::vector<Case> cases = {
      {"empty", ""},
      {"not arrow", "just some bytes that are not an arrow file at all"},
      {"only the header", bytes.substr(0, written.header().length())},
      {"truncated by 10", bytes.substr(0, bytes.size() - 10)},
      {"truncated mid batch", bytes.substr(0, batch1.offset() + batch1.length() / 2)},
      // (A flipped byte inside a body buffer is not structural: bodies that compress by less
      // than WriteOptions::min_space_savings are stored raw, so only the checksums Describe
      // records would tell.)
      {"batch message length", flipped(batch1.offset() + 5)},
      {"footer", flipped(footer.offset() + footer.length() / 2)},
      {"schema message length", flipped(13)},
      {"trailing magic", flipped(bytes.size() - 2)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status status = describe(c.object);
    EXPECT_TRUE(status.IsCorruption()) << status;
  }
  // A batch without rows.
  ASSERT_OK_AND_ASSIGN(Buffer empty_batch, ipc::WriteFileToBuffer(s, {RandomRows(s, rng, 0, 3),
                                                                      RecordBatch::MakeEmpty(s)}));
  Status status = describe(std::string(empty_batch.view()));
  EXPECT_TRUE(status.IsCorruption()) << status;
  EXPECT_NE(status.message().find("batch 1 has no rows"), std::string::npos) << status;
}

TEST(DataFileDescribeTest, FileWithoutBatchesHasHeaderAndFooterOnly) {
  auto store = NewMemoryObjectStore();
  const SchemaPtr s = NestedSchema();
  ASSERT_OK_AND_ASSIGN(pb::DataFile written, WriteWithWriter(store, s, {}));
  ASSERT_OK_AND_ASSIGN(pb::DataFile described,
                       DescribeDataFile(*store, kPrefix, written.path(), *s, Ids(s->num_fields())));
  EXPECT_EQ(described.batches_size(), 0);
  EXPECT_EQ(described.uncompressed_bytes(), 0);
  ExpectSameEntry(described, written);
  ASSERT_OK(VerifyDataFile(*store, kPrefix, described));
}

}  // namespace
}  // namespace strata::table::internal
