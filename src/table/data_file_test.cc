// Data files: batch cutting, per-batch statistics, round trips of every storable column type
// and detection of corrupted, truncated or missing files.
#include "table/data_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "strata/builder.h"
#include "strata/json.h"
#include "strata/schema_json.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "table/format.h"
#include "util/checksum.h"

namespace strata::table::internal {
namespace {

constexpr const char* kPrefix = "t/";

SchemaPtr ParseSchema(std::string_view json) {
  Result<SchemaPtr> schema = SchemaFromJson(json);
  EXPECT_TRUE(schema.ok()) << schema.status();
  return schema.ok() ? *schema : nullptr;
}

RecordBatch Rows(const SchemaPtr& schema, std::string_view lines) {
  Result<RecordBatch> batch = json::RowsToBatch(schema, lines);
  EXPECT_TRUE(batch.ok()) << batch.status();
  return batch.ok() ? *batch : RecordBatch::MakeEmpty(schema);
}

// `n` rows {"id": first + i, "name": "n<i>"}, "name" null on every 4th row.
SchemaPtr IdNameSchema() { return schema({field("id", int64(), false), field("name", utf8())}); }
RecordBatch IdNameRows(int64_t first, int64_t n) {
  std::string lines;
  for (int64_t i = first; i < first + n; ++i) {
    if (i % 4 == 3) {
      lines += "{\"id\": " + std::to_string(i) + ", \"name\": null}\n";
    } else {
      lines += "{\"id\": " + std::to_string(i) + ", \"name\": \"n" + std::to_string(i) + "\"}\n";
    }
  }
  return Rows(IdNameSchema(), lines);
}

std::vector<int32_t> Ids(int n) {
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = i + 10;
  return ids;
}

std::vector<int> AllColumns(const Schema& schema) {
  std::vector<int> out(schema.num_fields());
  for (int i = 0; i < schema.num_fields(); ++i) out[i] = i;
  return out;
}

Result<pb::DataFile> WriteFile(const std::shared_ptr<ObjectStore>& store, const SchemaPtr& schema,
                               const std::vector<RecordBatch>& batches,
                               DataFileWriteOptions options = {}) {
  STRATA_ASSIGN_OR_RETURN(auto writer, DataFileWriter::Make(store, kPrefix, schema,
                                                            Ids(schema->num_fields()), options));
  for (const RecordBatch& batch : batches) STRATA_RETURN_IF_ERROR(writer->Write(batch));
  return writer->Finish();
}

// Every batch of the file, read through a fresh reader, as one batch.
Result<RecordBatch> ReadAll(const std::shared_ptr<ObjectStore>& store, const pb::DataFile& entry) {
  STRATA_ASSIGN_OR_RETURN(auto reader, DataFileReader::Open(store, kPrefix, entry));
  std::vector<RecordBatch> batches;
  for (int i = 0; i < reader->num_batches(); ++i) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, reader->ReadBatch(i, AllColumns(*reader->schema())));
    batches.push_back(std::move(batch));
  }
  if (batches.empty()) return RecordBatch::MakeEmpty(reader->schema());
  return ConcatenateBatches(batches);
}

std::string AsJson(const RecordBatch& batch) { return json::BatchToJsonLines(batch); }

std::string AsJson(const std::vector<RecordBatch>& batches) {
  std::string out;
  for (const RecordBatch& batch : batches) out += json::BatchToJsonLines(batch);
  return out;
}

// Replaces the object's byte at `offset` with its complement.
void FlipByte(ObjectStore& store, const std::string& key, int64_t offset) {
  Result<Buffer> bytes = store.Get(key);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  std::string data(bytes->view());
  ASSERT_LT(offset, static_cast<int64_t>(data.size()));
  data[offset] = static_cast<char>(~data[offset]);
  ASSERT_OK(store.Put(key, data));
}

std::string Key(const pb::DataFile& entry) { return kPrefix + entry.path(); }

std::vector<int64_t> BatchRows(const pb::DataFile& entry) {
  std::vector<int64_t> rows;
  for (const pb::BatchInfo& b : entry.batches()) rows.push_back(b.num_rows());
  return rows;
}

// ---------------------------------------------------------------------------------------

TEST(DataFileTest, CutsBatchesByRows) {
  auto store = NewMemoryObjectStore();
  DataFileWriteOptions options;
  options.max_rows_per_batch = 10;
  ASSERT_OK_AND_ASSIGN(auto writer,
                       DataFileWriter::Make(store, kPrefix, IdNameSchema(), Ids(2), options));
  const std::vector<RecordBatch> input = {IdNameRows(0, 7), IdNameRows(7, 5), IdNameRows(12, 13)};
  for (const RecordBatch& batch : input) ASSERT_OK(writer->Write(batch));
  EXPECT_EQ(writer->rows_written(), 20);  // the last 5 rows are still pending
  EXPECT_GT(writer->bytes_buffered(), 25 * 8);
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, writer->Finish());
  EXPECT_EQ(writer->rows_written(), 25);
  EXPECT_EQ(BatchRows(entry), (std::vector<int64_t>{10, 10, 5}));
  EXPECT_EQ(entry.path().rfind("data/", 0), 0u) << entry.path();
  EXPECT_EQ(entry.field_ids_size(), 2);
  EXPECT_EQ(entry.field_ids(1), 11);
  ASSERT_OK_AND_ASSIGN(ObjectMeta meta, store->Head(Key(entry)));
  EXPECT_EQ(meta.size, entry.size());
  ASSERT_OK_AND_ASSIGN(RecordBatch back, ReadAll(store, entry));
  EXPECT_EQ(AsJson(back), AsJson(input));
}

TEST(DataFileTest, CutsBatchesByBytes) {
  // int64 without nulls: exactly 8 bytes per row, so 80 bytes hold 10 rows.
  auto store = NewMemoryObjectStore();
  SchemaPtr s = schema({field("v", int64(), false)});
  std::string lines;
  for (int i = 0; i < 35; ++i) lines += "{\"v\": " + std::to_string(i) + "}\n";
  DataFileWriteOptions options;
  options.max_bytes_per_batch = 80;
  ASSERT_OK_AND_ASSIGN(auto writer, DataFileWriter::Make(store, kPrefix, s, Ids(1), options));
  RecordBatch batch = Rows(s, lines);
  ASSERT_OK(writer->Write(batch.Slice(0, 3)));
  ASSERT_OK(writer->Write(batch.Slice(3, 32)));
  EXPECT_EQ(writer->bytes_buffered(), 35 * 8);
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, writer->Finish());
  EXPECT_EQ(BatchRows(entry), (std::vector<int64_t>{10, 10, 10, 5}));
  ASSERT_OK_AND_ASSIGN(RecordBatch back, ReadAll(store, entry));
  EXPECT_EQ(AsJson(back), AsJson(batch));
}

TEST(DataFileTest, RowLargerThanByteLimitGetsItsOwnBatch) {
  // utf8 without nulls: 4 offset bytes + the string per row.
  auto store = NewMemoryObjectStore();
  SchemaPtr s = schema({field("s", utf8(), false)});
  const std::string big(500, 'x');
  std::string lines = "{\"s\": \"aaaaaa\"}\n{\"s\": \"bbbbbb\"}\n{\"s\": \"" + big +
                      "\"}\n{\"s\": \"cccccc\"}\n{\"s\": \"" + big + "\"}\n";
  DataFileWriteOptions options;
  options.max_bytes_per_batch = 100;
  RecordBatch batch = Rows(s, lines);
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, WriteFile(store, s, {batch}, options));
  EXPECT_EQ(BatchRows(entry), (std::vector<int64_t>{2, 1, 1, 1}));
  ASSERT_OK_AND_ASSIGN(RecordBatch back, ReadAll(store, entry));
  EXPECT_EQ(AsJson(back), AsJson(batch));
}

TEST(DataFileTest, CutsBatchesByBytesOfNestedRows) {
  // Without nulls a list<utf8> row is exactly 4 (list offset) + sum(4 + length) bytes.
  const unsigned long long seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 random(seed);
  SchemaPtr s = schema({field("tags", list(field("item", utf8(), false)), false)});
  std::vector<RecordBatch> input;
  std::vector<int64_t> row_bytes;
  for (int b = 0; b < 5; ++b) {
    std::string lines;
    const int rows = 1 + static_cast<int>(random() % 12);
    for (int r = 0; r < rows; ++r) {
      int64_t bytes = 4;
      lines += "{\"tags\": [";
      const int elements = static_cast<int>(random() % 4);
      for (int e = 0; e < elements; ++e) {
        const size_t length = random() % 40;
        lines += (e > 0 ? ", \"" : "\"") + std::string(length, 'a' + e) + "\"";
        bytes += 4 + static_cast<int64_t>(length);
      }
      lines += "]}\n";
      row_bytes.push_back(bytes);
    }
    input.push_back(Rows(s, lines));
  }
  constexpr int64_t kLimit = 120;
  auto store = NewMemoryObjectStore();
  DataFileWriteOptions options;
  options.max_bytes_per_batch = kLimit;
  ASSERT_OK_AND_ASSIGN(auto writer, DataFileWriter::Make(store, kPrefix, s, Ids(1), options));
  for (const RecordBatch& batch : input) ASSERT_OK(writer->Write(batch));
  int64_t total = 0;
  for (int64_t bytes : row_bytes) total += bytes;
  EXPECT_EQ(writer->bytes_buffered(), total);
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, writer->Finish());
  // Each batch is within the limit (or one oversized row), and it ends either where the
  // next row would not fit, or (at least half full) where the next input batch starts and
  // does not fit whole beside it: inputs are then written uncut.
  std::vector<size_t> input_end;  // row index just past each input batch
  for (const RecordBatch& batch : input) {
    input_end.push_back((input_end.empty() ? 0 : input_end.back()) +
                        static_cast<size_t>(batch.num_rows()));
  }
  size_t row = 0;
  for (int i = 0; i < entry.batches_size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "batch " << i);
    int64_t bytes = 0;
    for (int64_t r = 0; r < entry.batches(i).num_rows(); ++r) bytes += row_bytes.at(row++);
    if (entry.batches(i).num_rows() > 1) {
      EXPECT_LE(bytes, kLimit);
    }
    if (row < row_bytes.size() && bytes + row_bytes[row] <= kLimit) {
      auto end = std::find(input_end.begin(), input_end.end(), row);
      ASSERT_NE(end, input_end.end()) << "cut inside an input batch with room for its next row";
      EXPECT_GE(2 * bytes, kLimit);
      int64_t next_input = 0;
      for (size_t r = row; r < *(end + 1); ++r) next_input += row_bytes[r];
      EXPECT_GT(bytes + next_input, kLimit);
    }
  }
  EXPECT_EQ(row, row_bytes.size());
  ASSERT_OK_AND_ASSIGN(RecordBatch back, ReadAll(store, entry));
  EXPECT_EQ(AsJson(back), AsJson(input));
}

TEST(DataFileTest, RecordsStatisticsPerBatch) {
  auto store = NewMemoryObjectStore();
  SchemaPtr s = schema({field("i", int64()), field("f", float64()), field("s", utf8())});
  RecordBatch batch = Rows(s,
                           "{\"i\": 5, \"f\": 1.5, \"s\": \"pear\"}\n"
                           "{\"i\": null, \"f\": -2.0, \"s\": \"apple\"}\n"
                           "{\"i\": -3, \"f\": null, \"s\": null}\n"
                           "{\"i\": 9, \"f\": 0.25, \"s\": null}\n"
                           "{\"i\": null, \"f\": null, \"s\": null}\n");
  DataFileWriteOptions options;
  options.max_rows_per_batch = 3;
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, WriteFile(store, s, {batch}, options));
  ASSERT_EQ(entry.batches_size(), 2);
  const pb::BatchInfo& b0 = entry.batches(0);
  const pb::BatchInfo& b1 = entry.batches(1);
  ASSERT_EQ(b0.stats_size(), 3);
  ASSERT_EQ(b1.stats_size(), 3);
  EXPECT_EQ(b0.stats(0).min().int64_value(), -3);
  EXPECT_EQ(b0.stats(0).max().int64_value(), 5);
  EXPECT_EQ(b0.stats(0).null_count(), 1);
  EXPECT_EQ(b0.stats(1).min().double_value(), -2.0);
  EXPECT_EQ(b0.stats(1).max().double_value(), 1.5);
  EXPECT_EQ(b0.stats(1).null_count(), 1);
  EXPECT_EQ(b0.stats(2).min().string_value(), "apple");
  EXPECT_EQ(b0.stats(2).max().string_value(), "pear");
  EXPECT_EQ(b0.stats(2).null_count(), 1);
  EXPECT_EQ(b1.stats(0).min().int64_value(), 9);
  EXPECT_EQ(b1.stats(0).max().int64_value(), 9);
  EXPECT_EQ(b1.stats(0).null_count(), 1);
  EXPECT_EQ(b1.stats(1).min().double_value(), 0.25);
  EXPECT_EQ(b1.stats(1).null_count(), 1);
  // An all-null batch column has no bounds.
  EXPECT_FALSE(b1.stats(2).has_min());
  EXPECT_FALSE(b1.stats(2).has_max());
  EXPECT_EQ(b1.stats(2).null_count(), 2);
}

constexpr std::string_view kAllTypesSchema = R"({"fields": [
  {"name": "i8", "type": "int8"}, {"name": "i32", "type": "int32"},
  {"name": "i64", "type": "int64", "nullable": false}, {"name": "u16", "type": "uint16"},
  {"name": "u64", "type": "uint64"}, {"name": "f32", "type": "float32"},
  {"name": "f64", "type": "float64"}, {"name": "b", "type": "bool"},
  {"name": "s", "type": "utf8"}, {"name": "bin", "type": "binary"},
  {"name": "ls", "type": "large_utf8"},
  {"name": "ts", "type": "timestamp[us, tz=UTC]"}, {"name": "tags", "type": "list<utf8>"},
  {"name": "point", "type": "struct<x: float64, label: utf8>"},
  {"name": "vec", "type": "fixed_size_list<float32>[3]"},
  {"name": "cat", "type": "dictionary<utf8>"}]})";

std::vector<RecordBatch> AllTypesBatches(const SchemaPtr& s) {
  return {
      Rows(
          s,
          R"({"i8": -1, "i32": 7, "i64": 1, "u16": 3, "u64": 18446744073709551615, "f32": 1.5, "f64": -0.5, "b": true, "s": "héllo", "bin": "AAEC", "ls": "x", "ts": "2024-05-01T12:00:00Z", "tags": ["a", null, "b"], "point": {"x": 1.0, "label": "p"}, "vec": [1, 2, 3], "cat": "red"}
{"i64": 2, "tags": [], "point": null, "vec": null, "cat": null}
{"i8": 127, "i32": -7, "i64": 3, "f64": "NaN", "b": false, "s": "", "bin": "", "ts": 0, "tags": null, "point": {"x": null, "label": null}, "vec": [0.5, null, -1], "cat": "green"}
)"),
      Rows(s,
           R"({"i64": 4, "s": "second", "tags": ["c"], "cat": "blue"}
{"i64": 5, "u16": 65535, "cat": "red", "vec": [9, 9, 9], "point": {"x": 2.5, "label": "q"}}
)"),
      Rows(s, R"({"i64": 6, "cat": "violet", "f32": "-Infinity", "tags": ["d", "e"]}
)"),
  };
}

class DataFileStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() != "memory") {
      dir_ = std::make_unique<testing::TempDir>("data-file");
      LocalObjectStoreOptions options;
      options.sync = false;
      if (GetParam() == "local_mmap") options.mmap_threshold = 1;  // map every object
      Result<std::shared_ptr<ObjectStore>> store = OpenLocalObjectStore(dir_->str(), options);
      ASSERT_TRUE(store.ok()) << store.status();
      store_ = *store;
    } else {
      store_ = NewMemoryObjectStore();
    }
  }
  std::unique_ptr<testing::TempDir> dir_;
  std::shared_ptr<ObjectStore> store_;
};

TEST_P(DataFileStoreTest, RoundTripsEveryColumnTypeWithNulls) {
  SchemaPtr s = ParseSchema(kAllTypesSchema);
  ASSERT_NE(s, nullptr);
  const std::vector<RecordBatch> input = AllTypesBatches(s);
  for (ipc::Compression compression :
       {ipc::Compression::kZstd, ipc::Compression::kNone, ipc::Compression::kLz4Frame}) {
    SCOPED_TRACE(std::string(ipc::CompressionName(compression)));
    DataFileWriteOptions options;
    options.compression = compression;
    options.max_rows_per_batch = 2;
    ASSERT_OK_AND_ASSIGN(pb::DataFile entry, WriteFile(store_, s, input, options));
    EXPECT_EQ(BatchRows(entry), (std::vector<int64_t>{2, 2, 2}));
    ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store_, kPrefix, entry));
    EXPECT_TRUE(reader->schema()->Equals(*s));
    EXPECT_GT(reader->memory_bytes(), 0);
    ASSERT_OK_AND_ASSIGN(RecordBatch back, ReadAll(store_, entry));
    EXPECT_EQ(AsJson(back), AsJson(input));
    ASSERT_OK(VerifyDataFile(*store_, kPrefix, entry));
    // The dictionary column's statistics cover the entries each batch uses.
    const int cat = s->GetFieldIndex("cat");
    EXPECT_EQ(entry.batches(0).stats(cat).min().string_value(), "red");
    EXPECT_EQ(entry.batches(0).stats(cat).null_count(), 1);
    EXPECT_EQ(entry.batches(2).stats(cat).max().string_value(), "violet");
  }
}

TEST_P(DataFileStoreTest, ReadsProjectedColumns) {
  SchemaPtr s = ParseSchema(kAllTypesSchema);
  ASSERT_NE(s, nullptr);
  const std::vector<RecordBatch> input = AllTypesBatches(s);
  DataFileWriteOptions options;
  options.max_rows_per_batch = 4;
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, WriteFile(store_, s, input, options));
  ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store_, kPrefix, entry));
  ASSERT_EQ(reader->num_batches(), 2);
  const std::vector<int> columns = {s->GetFieldIndex("cat"), s->GetFieldIndex("i64"),
                                    s->GetFieldIndex("tags")};
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ConcatenateBatches(input));
  ASSERT_OK_AND_ASSIGN(RecordBatch expected, all.Project(columns));
  ASSERT_OK_AND_ASSIGN(RecordBatch b1, reader->ReadBatch(1, columns));
  ASSERT_EQ(b1.num_columns(), 3);
  EXPECT_EQ(b1.schema()->field(0)->name(), "cat");
  EXPECT_EQ(b1.schema()->field(1)->name(), "i64");
  EXPECT_EQ(AsJson(b1), AsJson(expected.Slice(4, 2)));
  // No columns: just the row count.
  ASSERT_OK_AND_ASSIGN(RecordBatch none, reader->ReadBatch(0, {}));
  EXPECT_EQ(none.num_columns(), 0);
  EXPECT_EQ(none.num_rows(), 4);
  EXPECT_FALSE(reader->ReadBatch(0, {99}).ok());
  EXPECT_TRUE(reader->ReadBatch(2, columns).status().IsInvalidArgument());
  EXPECT_TRUE(reader->ReadBatch(-1, columns).status().IsInvalidArgument());
}

// Prefetch asks for a batch's message and the pieces of the columns asked for, joining
// pieces a few pages apart, and the asked-for reads return what a read without it returns.
TEST_P(DataFileStoreTest, PrefetchAsksForTheMessageAndTheColumnsPieces) {
  // Columns a, c and d are small; b holds 32 KiB of text per batch, stored raw.
  SchemaPtr s = schema(
      {field("a", int64(), false), field("b", utf8()), field("c", int64()), field("d", int64())});
  std::string lines;
  for (int i = 0; i < 8; ++i) {
    lines += fmt::format("{{\"a\": {}, \"b\": \"{}\", \"c\": {}, \"d\": {}}}\n", i,
                         std::string(8192, static_cast<char>('a' + i)), -i, 2 * i);
  }
  const RecordBatch rows = Rows(s, lines);
  DataFileWriteOptions options;
  options.compression = ipc::Compression::kNone;
  options.max_rows_per_batch = 4;
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, WriteFile(store_, s, {rows}, options));
  ASSERT_EQ(entry.batches_size(), 2);
  ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store_, kPrefix, entry));
  for (int batch = 0; batch < 2; ++batch) {
    const pb::BatchInfo& info = entry.batches(batch);
    ASSERT_EQ(info.piece_starts_size(), 4);
    const int64_t message = info.piece_starts(0);
    const int64_t a = info.piece_starts(1) - info.piece_starts(0);
    const int64_t b = info.piece_starts(2) - info.piece_starts(1);
    const int64_t c = info.piece_starts(3) - info.piece_starts(2);
    const int64_t d = info.region().length() - info.piece_starts(3);
    ASSERT_GT(b, 16 << 10);
    ASSERT_LT(a, 16 << 10);
    ASSERT_LT(c, 16 << 10);
    EXPECT_EQ(reader->Prefetch(batch, {}), message);
    EXPECT_EQ(reader->Prefetch(batch, {0}), message + a);
    // Column b lies between a and c: too far to join, so it is skipped over.
    EXPECT_EQ(reader->Prefetch(batch, {2, 0}), message + a + c);
    EXPECT_EQ(reader->Prefetch(batch, {2}), message + c);
    EXPECT_EQ(reader->Prefetch(batch, {3}), message + d);
    // a and c lie within 16 KiB of wanted pieces: read with them, and counted.
    EXPECT_EQ(reader->Prefetch(batch, {3, 1}), info.region().length());
    EXPECT_EQ(reader->Prefetch(batch, {0, 1, 2, 1}), message + a + b + c);
    ASSERT_OK_AND_ASSIGN(RecordBatch read, reader->ReadBatch(batch, {2, 1}));
    ASSERT_OK_AND_ASSIGN(RecordBatch expected, rows.Slice(4 * batch, 4).Project({2, 1}));
    EXPECT_EQ(AsJson(read), AsJson(expected));
  }
  EXPECT_EQ(reader->Prefetch(-1, {0}), 0);
  EXPECT_EQ(reader->Prefetch(2, {0}), 0);
  EXPECT_EQ(reader->Prefetch(0, {-1, 4}), entry.batches(0).piece_starts(0)) << "message only";
}

TEST_P(DataFileStoreTest, MissingObjectIsNotFound) {
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, WriteFile(store_, IdNameSchema(), {IdNameRows(0, 5)}));
  ASSERT_OK(store_->Delete(Key(entry)));
  Result<std::shared_ptr<DataFileReader>> reader = DataFileReader::Open(store_, kPrefix, entry);
  ASSERT_TRUE(reader.status().IsNotFound()) << reader.status();
  EXPECT_NE(reader.status().message().find(Key(entry)), std::string::npos) << reader.status();
  EXPECT_TRUE(VerifyDataFile(*store_, kPrefix, entry).IsNotFound());
}

INSTANTIATE_TEST_SUITE_P(Stores, DataFileStoreTest,
                         ::testing::Values("local", "local_mmap", "memory"));

// Four batches of 5 rows.
Result<pb::DataFile> FourBatchFile(const std::shared_ptr<ObjectStore>& store) {
  DataFileWriteOptions options;
  options.max_rows_per_batch = 5;
  return WriteFile(store, IdNameSchema(), {IdNameRows(0, 20)}, options);
}

TEST(DataFileTest, FlippedByteInBatchIsCorruption) {
  auto store = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, FourBatchFile(store));
  ASSERT_EQ(entry.batches_size(), 4);
  // Batch regions are cut into pieces: the message, then one per column.
  const pb::BatchInfo& info = entry.batches(2);
  ASSERT_EQ(info.piece_starts_size(), 2);
  ASSERT_EQ(info.piece_xxh3_size(), 3);
  const pb::Region& region = info.region();
  const int64_t name_begin = region.offset() + info.piece_starts(1);
  ASSERT_LT(name_begin, region.offset() + region.length());
  FlipByte(*store, Key(entry), name_begin);
  // Open checks only the header and footer.
  ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store, kPrefix, entry));
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (const std::vector<int>& columns : {std::vector<int>{0, 1}, std::vector<int>{1}}) {
      Result<RecordBatch> bad = reader->ReadBatch(2, columns);
      ASSERT_TRUE(bad.status().IsCorruption()) << bad.status();
      const std::string message = bad.status().message();
      EXPECT_NE(message.find(Key(entry)), std::string::npos) << message;
      EXPECT_NE(message.find("batch 2 column 1"), std::string::npos) << message;
      EXPECT_NE(message.find(fmt::format("{:016x}", info.piece_xxh3(2))), std::string::npos)
          << message;
    }
  }
  // A projection that leaves the damaged column out reads it: only what is decoded is hashed.
  ASSERT_OK_AND_ASSIGN(RecordBatch ids, reader->ReadBatch(2, {0}));
  ASSERT_OK_AND_ASSIGN(RecordBatch ids_only, IdNameRows(10, 5).Project({0}));
  EXPECT_EQ(AsJson(ids), AsJson(ids_only));
  for (int i : {0, 1, 3}) {
    ASSERT_OK_AND_ASSIGN(RecordBatch batch, reader->ReadBatch(i, {0, 1}));
    EXPECT_EQ(AsJson(batch), AsJson(IdNameRows(5 * i, 5)));
  }
  Status verify = VerifyDataFile(*store, kPrefix, entry);
  EXPECT_TRUE(verify.IsCorruption()) << verify;
  EXPECT_NE(verify.message().find("batch 2"), std::string::npos) << verify;
}

TEST(DataFileTest, FlippedByteInBatchMessageFailsEveryProjection) {
  auto store = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, FourBatchFile(store));
  const pb::BatchInfo& info = entry.batches(1);
  ASSERT_GT(info.piece_starts(0), 8);
  FlipByte(*store, Key(entry), info.region().offset() + info.piece_starts(0) - 8);
  ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store, kPrefix, entry));
  for (const std::vector<int>& columns :
       {std::vector<int>{0}, std::vector<int>{1}, std::vector<int>{}}) {
    Status st = reader->ReadBatch(1, columns).status();
    EXPECT_TRUE(st.IsCorruption()) << st;
    EXPECT_NE(st.message().find("batch 1 message"), std::string::npos) << st;
  }
  ASSERT_OK(reader->ReadBatch(0, {0, 1}).status());
}

TEST(DataFileTest, BatchesWithoutPiecesAreVerifiedWhole) {
  // Files written before batches were cut into pieces checksum each batch region whole.
  auto store = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, FourBatchFile(store));
  ASSERT_OK_AND_ASSIGN(Buffer bytes, store->Get(Key(entry)));
  for (pb::BatchInfo& info : *entry.mutable_batches()) {
    // The region keeps its whole checksum beside the pieces: what such a reader checks.
    const pb::Region& region = info.region();
    EXPECT_EQ(info.region().xxh3(),
              XxHash3_64(bytes.view().substr(static_cast<size_t>(region.offset()),
                                             static_cast<size_t>(region.length()))));
    info.clear_piece_starts();
    info.clear_piece_xxh3();
  }
  ASSERT_OK(VerifyDataFile(*store, kPrefix, entry));
  ASSERT_OK_AND_ASSIGN(RecordBatch back, ReadAll(store, entry));
  EXPECT_EQ(AsJson(back), AsJson(IdNameRows(0, 20)));
  const pb::Region& region = entry.batches(2).region();
  FlipByte(*store, Key(entry), region.offset() + region.length() - 1);
  ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store, kPrefix, entry));
  // The whole region is hashed, so even a projection without the damaged bytes fails.
  for (const std::vector<int>& columns : {std::vector<int>{0}, std::vector<int>{1}}) {
    Status st = reader->ReadBatch(2, columns).status();
    EXPECT_TRUE(st.IsCorruption()) << st;
    EXPECT_NE(st.message().find(fmt::format("{:016x}", region.xxh3())), std::string::npos) << st;
  }
  ASSERT_OK(reader->ReadBatch(1, {0, 1}).status());
}

TEST(DataFileTest, MalformedPiecesAreCorruption) {
  auto store = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, FourBatchFile(store));
  {
    pb::DataFile missing = entry;
    missing.mutable_batches(1)->mutable_piece_xxh3()->RemoveLast();
    Status st = DataFileReader::Open(store, kPrefix, missing).status();
    EXPECT_TRUE(st.IsCorruption()) << st;
    EXPECT_NE(st.message().find("batch 1 has 2 piece starts and 2 piece checksums"),
              std::string::npos)
        << st;
  }
  {
    pb::DataFile decreasing = entry;
    pb::BatchInfo* info = decreasing.mutable_batches(3);
    info->set_piece_starts(1, info->piece_starts(0) - 1);
    Status st = DataFileReader::Open(store, kPrefix, decreasing).status();
    EXPECT_TRUE(st.IsCorruption()) << st;
  }
  {
    // Pieces need columns to cut: one checksum and no starts for no columns is refused.
    pb::DataFile no_columns = entry;
    no_columns.clear_field_ids();
    for (pb::BatchInfo& info : *no_columns.mutable_batches()) {
      info.clear_piece_starts();
      info.clear_piece_xxh3();
      info.add_piece_xxh3(0);
    }
    EXPECT_TRUE(DataFileReader::Open(store, kPrefix, no_columns).status().IsCorruption());
  }
  {
    pb::DataFile outside = entry;
    pb::BatchInfo* info = outside.mutable_batches(0);
    info->set_piece_starts(1, info->region().length() + 1);
    EXPECT_TRUE(DataFileReader::Open(store, kPrefix, outside).status().IsCorruption());
  }
  {
    // Pieces that do not match the message: column 0's buffers said to start in piece 0. The
    // checksums are recomputed so only the cut is wrong.
    pb::DataFile shifted = entry;
    ASSERT_OK_AND_ASSIGN(Buffer bytes, store->Get(Key(entry)));
    pb::BatchInfo* info = shifted.mutable_batches(2);
    const int64_t offset = info->region().offset();
    info->set_piece_starts(0, info->piece_starts(0) + 8);
    auto hash = [&](int64_t from, int64_t to) {
      return XxHash3_64(
          bytes.view().substr(static_cast<size_t>(from), static_cast<size_t>(to - from)));
    };
    info->set_piece_xxh3(0, hash(offset, offset + info->piece_starts(0)));
    info->set_piece_xxh3(1, hash(offset + info->piece_starts(0), offset + info->piece_starts(1)));
    ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store, kPrefix, shifted));
    Status st = reader->ReadBatch(2, {1}).status();
    EXPECT_TRUE(st.IsCorruption()) << st;
    EXPECT_NE(st.message().find("lie outside its piece"), std::string::npos) << st;
  }
}

TEST(DataFileTest, FlippedByteInHeaderOrFooterFailsOpen) {
  for (const char* where : {"header", "footer"}) {
    SCOPED_TRACE(where);
    auto store = NewMemoryObjectStore();
    ASSERT_OK_AND_ASSIGN(pb::DataFile entry, FourBatchFile(store));
    const pb::Region& region =
        std::string_view(where) == "header" ? entry.header() : entry.footer();
    FlipByte(*store, Key(entry), region.offset() + region.length() - 1);
    Result<std::shared_ptr<DataFileReader>> reader = DataFileReader::Open(store, kPrefix, entry);
    ASSERT_TRUE(reader.status().IsCorruption()) << reader.status();
    EXPECT_NE(reader.status().message().find(where), std::string::npos) << reader.status();
  }
}

TEST(DataFileTest, DictionaryFileVerifiesBatchesAtOpen) {
  // The IPC reader loads dictionaries at open, so a bad batch region fails the open.
  auto store = NewMemoryObjectStore();
  SchemaPtr s = schema({field("cat", dictionary(int32(), utf8()))});
  DataFileWriteOptions options;
  options.max_rows_per_batch = 2;
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry,
                       WriteFile(store, s,
                                 {Rows(s,
                                       "{\"cat\": \"a\"}\n{\"cat\": \"b\"}\n{\"cat\": \"c\"}\n"
                                       "{\"cat\": null}\n")},
                                 options));
  ASSERT_EQ(entry.batches_size(), 2);
  ASSERT_OK(DataFileReader::Open(store, kPrefix, entry).status());
  FlipByte(*store, Key(entry), entry.batches(1).region().offset() + 3);
  Result<std::shared_ptr<DataFileReader>> reader = DataFileReader::Open(store, kPrefix, entry);
  ASSERT_TRUE(reader.status().IsCorruption()) << reader.status();
  EXPECT_NE(reader.status().message().find("batch 1"), std::string::npos) << reader.status();
}

TEST(DataFileTest, WrongSizeIsCorruption) {
  auto store = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, FourBatchFile(store));
  pb::DataFile bigger = entry;
  bigger.set_size(entry.size() + 1);
  EXPECT_TRUE(DataFileReader::Open(store, kPrefix, bigger).status().IsCorruption());
  EXPECT_TRUE(VerifyDataFile(*store, kPrefix, bigger).IsCorruption());
  // A truncated object.
  ASSERT_OK_AND_ASSIGN(Buffer bytes, store->Get(Key(entry)));
  ASSERT_OK(store->Put(Key(entry), bytes.view().substr(0, bytes.size() - 1)));
  Result<std::shared_ptr<DataFileReader>> reader = DataFileReader::Open(store, kPrefix, entry);
  ASSERT_TRUE(reader.status().IsCorruption()) << reader.status();
  EXPECT_NE(reader.status().message().find(Key(entry)), std::string::npos) << reader.status();
}

TEST(DataFileTest, RegionsThatDoNotTileTheFileAreCorruption) {
  auto store = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, FourBatchFile(store));
  ASSERT_OK(DataFileReader::Open(store, kPrefix, entry).status());
  {
    pb::DataFile gap = entry;
    gap.mutable_batches(1)->mutable_region()->set_length(entry.batches(1).region().length() - 8);
    Status st = DataFileReader::Open(store, kPrefix, gap).status();
    EXPECT_TRUE(st.IsCorruption()) << st;
    EXPECT_NE(st.message().find("batch 2"), std::string::npos) << st;
  }
  {
    pb::DataFile swapped = entry;
    swapped.mutable_batches()->SwapElements(0, 1);
    EXPECT_TRUE(DataFileReader::Open(store, kPrefix, swapped).status().IsCorruption());
  }
  {
    pb::DataFile missing_batch = entry;
    missing_batch.mutable_batches()->RemoveLast();
    EXPECT_TRUE(DataFileReader::Open(store, kPrefix, missing_batch).status().IsCorruption());
  }
  {
    // Row counts are checked when a batch is first read.
    pb::DataFile wrong_rows = entry;
    wrong_rows.mutable_batches(3)->set_num_rows(6);
    ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store, kPrefix, wrong_rows));
    ASSERT_OK(reader->ReadBatch(2, {0}).status());
    Status st = reader->ReadBatch(3, {0}).status();
    EXPECT_TRUE(st.IsCorruption()) << st;
    EXPECT_NE(st.message().find("batch 3 has 5 rows"), std::string::npos) << st;
    EXPECT_TRUE(VerifyDataFile(*store, kPrefix, wrong_rows).IsCorruption());
  }
  {
    pb::DataFile extra_column = entry;
    extra_column.add_field_ids(99);
    EXPECT_TRUE(DataFileReader::Open(store, kPrefix, extra_column).status().IsCorruption());
  }
}

TEST(DataFileTest, VerifyCatchesAFlipAnywhere) {
  const unsigned long long seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 random(seed);
  auto store = NewMemoryObjectStore();
  SchemaPtr s = ParseSchema(kAllTypesSchema);
  ASSERT_NE(s, nullptr);
  DataFileWriteOptions options;
  options.max_rows_per_batch = 2;
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, WriteFile(store, s, AllTypesBatches(s), options));
  ASSERT_OK(VerifyDataFile(*store, kPrefix, entry));
  ASSERT_OK_AND_ASSIGN(Buffer clean, store->Get(Key(entry)));
  const std::string original(clean.view());
  for (int round = 0; round < 24; ++round) {
    const int64_t offset = static_cast<int64_t>(random() % original.size());
    SCOPED_TRACE(::testing::Message() << "offset " << offset);
    std::string data = original;
    data[offset] = static_cast<char>(data[offset] ^ (1 + random() % 255));
    ASSERT_OK(store->Put(Key(entry), data));
    Status st = VerifyDataFile(*store, kPrefix, entry);
    EXPECT_TRUE(st.IsCorruption()) << st;
  }
}

TEST(DataFileTest, AbandonedWriterLeavesNoObject) {
  auto store = NewMemoryObjectStore();
  {
    DataFileWriteOptions options;
    options.max_rows_per_batch = 3;
    ASSERT_OK_AND_ASSIGN(auto writer,
                         DataFileWriter::Make(store, kPrefix, IdNameSchema(), Ids(2), options));
    ASSERT_OK(writer->Write(IdNameRows(0, 10)));
    EXPECT_EQ(writer->rows_written(), 9);
  }
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> objects, store->List(""));
  EXPECT_TRUE(objects.empty());
}

TEST(DataFileTest, SchemaMismatchIsInvalidArgument) {
  auto store = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(auto writer, DataFileWriter::Make(store, kPrefix, IdNameSchema(), Ids(2)));
  SchemaPtr wrong_type = schema({field("id", int64(), false), field("name", binary())});
  Status st = writer->Write(RecordBatch::MakeEmpty(wrong_type));
  ASSERT_TRUE(st.IsInvalidArgument()) << st;
  EXPECT_NE(st.message().find("name"), std::string::npos) << st;
  SchemaPtr fewer = schema({field("id", int64(), false)});
  st = writer->Write(RecordBatch::MakeEmpty(fewer));
  ASSERT_TRUE(st.IsInvalidArgument()) << st;
  EXPECT_NE(st.message().find("1 columns"), std::string::npos) << st;
  // Field metadata does not matter, and the writer is still usable after a rejected batch.
  RecordBatch rows = IdNameRows(0, 3);
  SchemaPtr with_metadata =
      schema({field("id", int64(), false, KeyValueMetadata({{"k", "v"}})), field("name", utf8())});
  ASSERT_OK_AND_ASSIGN(RecordBatch tagged, RecordBatch::Make(with_metadata, 3, rows.columns()));
  ASSERT_OK(writer->Write(tagged));
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, writer->Finish());
  EXPECT_EQ(BatchRows(entry), (std::vector<int64_t>{3}));
}

TEST(DataFileTest, MakeValidatesArguments) {
  auto store = NewMemoryObjectStore();
  EXPECT_TRUE(DataFileWriter::Make(store, kPrefix, schema(std::vector<FieldPtr>{}), {})
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(
      DataFileWriter::Make(store, kPrefix, IdNameSchema(), {1}).status().IsInvalidArgument());
  EXPECT_TRUE(
      DataFileWriter::Make(store, kPrefix, IdNameSchema(), {1, 1}).status().IsInvalidArgument());
  DataFileWriteOptions no_rows;
  no_rows.max_rows_per_batch = 0;
  EXPECT_TRUE(DataFileWriter::Make(store, kPrefix, IdNameSchema(), Ids(2), no_rows)
                  .status()
                  .IsInvalidArgument());
  DataFileWriteOptions no_bytes;
  no_bytes.max_bytes_per_batch = -1;
  EXPECT_TRUE(DataFileWriter::Make(store, kPrefix, IdNameSchema(), Ids(2), no_bytes)
                  .status()
                  .IsInvalidArgument());
}

TEST(DataFileTest, FinishedWriterRejectsFurtherUse) {
  auto store = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(auto writer, DataFileWriter::Make(store, kPrefix, IdNameSchema(), Ids(2)));
  ASSERT_OK(writer->Write(IdNameRows(0, 2)));
  ASSERT_OK(writer->Finish().status());
  EXPECT_TRUE(writer->Write(IdNameRows(2, 2)).IsInvalidArgument());
  EXPECT_TRUE(writer->Finish().status().IsInvalidArgument());
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> objects, store->List(""));
  EXPECT_EQ(objects.size(), 1u);
}

TEST(DataFileTest, EmptyFileHasNoBatches) {
  auto store = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, WriteFile(store, IdNameSchema(), {IdNameRows(0, 0)}));
  EXPECT_EQ(entry.batches_size(), 0);
  ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store, kPrefix, entry));
  EXPECT_EQ(reader->num_batches(), 0);
  ASSERT_OK(VerifyDataFile(*store, kPrefix, entry));
}

TEST(DataFileTest, ConcurrentReadsVerifyEachRegion) {
  auto store = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(pb::DataFile entry, FourBatchFile(store));
  FlipByte(*store, Key(entry), entry.batches(1).region().offset() + 1);
  ASSERT_OK_AND_ASSIGN(auto reader, DataFileReader::Open(store, kPrefix, entry));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (int i = 0; i < 4; ++i) {
          Result<RecordBatch> batch = reader->ReadBatch(i, {0});
          if (i == 1 ? !batch.status().IsCorruption() : !batch.ok()) ++failures[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures, (std::vector<int>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace strata::table::internal
