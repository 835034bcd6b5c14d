// Helpers shared by the Arrow IPC tests: a schema with every supported type, random batches
// built with the builders, a RandomAccessSource that counts the bytes it serves, and
// hand-built messages for feeding malformed metadata to the readers.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "columnar/ipc_internal.h"
#include "strata/builder.h"
#include "strata/ipc.h"
#include "strata/record_batch.h"
#include "strata/type.h"

namespace strata::ipc::testing {

// KeyValueMetadata from pairs (a braced single pair is ambiguous with the copy constructor).
inline KeyValueMetadata Metadata(std::vector<std::pair<std::string, std::string>> entries) {
  return KeyValueMetadata(std::move(entries));
}

// Every type strata supports, nested ones and dictionaries included, with metadata.
inline SchemaPtr AllTypesSchema() {
  KeyValueMetadata field_meta = Metadata({{"unit", "points"}, {"empty", ""}});
  auto point = struct_({field("x", float64(), false), field("label", utf8())});
  return schema(
      {
          field("b", boolean()),
          field("i8", int8()),
          field("i16", int16()),
          field("i32", int32(), /*nullable=*/false),
          field("i64", int64(), true, field_meta),
          field("u8", uint8()),
          field("u16", uint16()),
          field("u32", uint32()),
          field("u64", uint64()),
          field("f32", float32()),
          field("f64", float64()),
          field("s", utf8()),
          field("ls", large_utf8()),
          field("bin", binary()),
          field("lbin", large_binary()),
          field("ts", timestamp_us()),
          field("ts_tz", timestamp_us("Europe/Paris")),
          field("emb", fixed_size_list(float32(), 3)),
          field("li", list(int32())),
          field("lli", large_list(field("element", utf8(), false))),
          field("st", struct_({field("a", int32(), false), field("b", utf8()),
                               field("pts", list(point))})),
          field("d8", dictionary(int8(), utf8())),
          field("d32", dictionary(int32(), large_utf8())),
          field("dbin", dictionary(uint16(), binary())),
          field("ldict", list(dictionary(int32(), utf8()))),
          field("fsl_bool", fixed_size_list(boolean(), 2)),
      },
      Metadata({{"origin", "ipc_test"}, {"ünïcode", "✓"}}));
}

class RandomBatchMaker {
 public:
  explicit RandomBatchMaker(uint64_t seed, double null_probability = 0.2)
      : rng_(seed), null_probability_(null_probability) {}

  RecordBatch Make(const SchemaPtr& schema, int64_t rows) {
    auto builder = RecordBatchBuilder::Make(schema);
    EXPECT_TRUE(builder.ok()) << builder.status();
    for (int c = 0; c < schema->num_fields(); ++c) {
      for (int64_t r = 0; r < rows; ++r) {
        Append((*builder)->builder(c), *schema->field(c)->type(), schema->field(c)->nullable());
      }
    }
    auto batch = (*builder)->Finish();
    EXPECT_TRUE(batch.ok()) << batch.status();
    return batch.ok() ? *batch : RecordBatch();
  }

 private:
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  std::string Text(int64_t max_length) {
    static const char* kPieces[] = {"a", "b", "xyz", "é", "日本", "🙂", " ", "q"};
    std::string s;
    const int64_t n = Uniform(0, max_length);
    for (int64_t i = 0; i < n; ++i) s += kPieces[Uniform(0, 7)];
    return s;
  }

  std::string Bytes(int64_t max_length) {
    std::string s(static_cast<size_t>(Uniform(0, max_length)), '\0');
    for (char& ch : s) ch = static_cast<char>(Uniform(0, 255));
    return s;
  }

  template <typename T>
  void Numeric(ArrayBuilder* b, T value) {
    static_cast<NumericBuilder<T>*>(b)->Append(value);
  }

  void Append(ArrayBuilder* b, const DataType& type, bool nullable) {
    if (nullable && std::bernoulli_distribution(null_probability_)(rng_)) {
      b->AppendNull();
      return;
    }
    switch (type.id()) {
      case TypeId::kBool:
        static_cast<BooleanBuilder*>(b)->Append(Uniform(0, 1) == 1);
        break;
      case TypeId::kInt8:
        Numeric<int8_t>(b, static_cast<int8_t>(Uniform(-128, 127)));
        break;
      case TypeId::kInt16:
        Numeric<int16_t>(b, static_cast<int16_t>(Uniform(-32768, 32767)));
        break;
      case TypeId::kInt32:
        Numeric<int32_t>(b, static_cast<int32_t>(Uniform(INT32_MIN, INT32_MAX)));
        break;
      case TypeId::kInt64:
      case TypeId::kTimestamp:
        Numeric<int64_t>(b, Uniform(INT64_MIN, INT64_MAX));
        break;
      case TypeId::kUInt8:
        Numeric<uint8_t>(b, static_cast<uint8_t>(Uniform(0, 255)));
        break;
      case TypeId::kUInt16:
        Numeric<uint16_t>(b, static_cast<uint16_t>(Uniform(0, 65535)));
        break;
      case TypeId::kUInt32:
        Numeric<uint32_t>(b, static_cast<uint32_t>(Uniform(0, UINT32_MAX)));
        break;
      case TypeId::kUInt64:
        Numeric<uint64_t>(b, static_cast<uint64_t>(Uniform(INT64_MIN, INT64_MAX)));
        break;
      case TypeId::kFloat32:
        Numeric<float>(b, static_cast<float>(Uniform(-1000000, 1000000)) / 7.0f);
        break;
      case TypeId::kFloat64:
        Numeric<double>(b, static_cast<double>(Uniform(INT64_MIN / 2, INT64_MAX / 2)) / 3.0);
        break;
      case TypeId::kUtf8:
      case TypeId::kBinary:
        EXPECT_TRUE(static_cast<BinaryBuilder*>(b)
                        ->Append(type.id() == TypeId::kUtf8 ? Text(6) : Bytes(12))
                        .ok());
        break;
      case TypeId::kLargeUtf8:
      case TypeId::kLargeBinary:
        EXPECT_TRUE(static_cast<LargeBinaryBuilder*>(b)
                        ->Append(type.id() == TypeId::kLargeUtf8 ? Text(6) : Bytes(12))
                        .ok());
        break;
      case TypeId::kFixedSizeList: {
        auto* fsl = static_cast<FixedSizeListBuilder*>(b);
        fsl->Append();
        for (int i = 0; i < type.list_size(); ++i) {
          Append(fsl->value_builder(), *type.value_type(), type.value_field()->nullable());
        }
        break;
      }
      case TypeId::kList:
      case TypeId::kLargeList: {
        const int64_t n = Uniform(0, 4);
        ArrayBuilder* values;
        if (type.id() == TypeId::kList) {
          static_cast<ListBuilder*>(b)->Append();
          values = static_cast<ListBuilder*>(b)->value_builder();
        } else {
          static_cast<LargeListBuilder*>(b)->Append();
          values = static_cast<LargeListBuilder*>(b)->value_builder();
        }
        for (int64_t i = 0; i < n; ++i) {
          Append(values, *type.value_type(), type.value_field()->nullable());
        }
        break;
      }
      case TypeId::kStruct: {
        auto* st = static_cast<StructBuilder*>(b);
        st->Append();
        for (int k = 0; k < st->num_fields(); ++k) {
          Append(st->field_builder(k), *type.fields()[k]->type(), type.fields()[k]->nullable());
        }
        break;
      }
      case TypeId::kDictionary: {
        static const char* kWords[] = {"red", "green", "blue", "ünïcødé", "", "violet", "x"};
        const std::string word = type.dictionary_value_type()->id() == TypeId::kBinary
                                     ? std::string("\x00\xff", 2) + kWords[Uniform(0, 6)]
                                     : kWords[Uniform(0, 6)];
        EXPECT_TRUE(static_cast<DictionaryBuilder*>(b)->Append(word).ok());
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  double null_probability_;
};

// Serves a buffer and counts what it was asked for.
class CountingSource final : public RandomAccessSource {
 public:
  explicit CountingSource(Buffer buffer) : inner_(SourceFromBuffer(std::move(buffer))) {}
  Result<int64_t> Size() override { return inner_->Size(); }
  Result<Buffer> ReadAt(int64_t offset, int64_t length) override {
    bytes_ += length;
    reads_ += 1;
    return inner_->ReadAt(offset, length);
  }
  int64_t bytes() const { return bytes_; }
  int64_t reads() const { return reads_; }
  void Reset() {
    bytes_ = 0;
    reads_ = 0;
  }

 private:
  std::shared_ptr<RandomAccessSource> inner_;
  std::atomic<int64_t> bytes_{0};
  std::atomic<int64_t> reads_{0};
};

// A RecordBatch (or DictionaryBatch) message assembled field by field.
struct CraftedBatch {
  int64_t length = 0;
  std::vector<internal::fb::FieldNode> nodes;
  std::vector<internal::fb::Buffer> buffers;
  std::string body;
  std::optional<internal::fb::CompressionType> codec;
  std::optional<int64_t> dictionary_id;
  bool is_delta = false;
  std::optional<int64_t> body_length;  // declared; the body's size by default
};

// Continuation marker, length, flatbuffer padded to 8, then `body` padded to 8.
inline std::string Frame(const flatbuffers::FlatBufferBuilder& fbb, std::string_view body) {
  std::string out;
  const int64_t padded = internal::AlignUp(fbb.GetSize(), 8);
  const uint32_t marker = internal::kContinuation;
  const int32_t length = static_cast<int32_t>(padded);
  out.append(reinterpret_cast<const char*>(&marker), 4);
  out.append(reinterpret_cast<const char*>(&length), 4);
  out.append(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
  out.append(padded - fbb.GetSize(), '\0');
  out.append(body);
  out.append(internal::AlignUp(body.size(), 8) - body.size(), '\0');
  return out;
}

inline std::string CraftMessage(const CraftedBatch& c) {
  namespace fb = internal::fb;
  flatbuffers::FlatBufferBuilder fbb;
  auto nodes = fbb.CreateVectorOfStructs(c.nodes);
  auto buffers = fbb.CreateVectorOfStructs(c.buffers);
  flatbuffers::Offset<fb::BodyCompression> compression;
  if (c.codec) compression = fb::CreateBodyCompression(fbb, *c.codec);
  auto batch = fb::CreateRecordBatch(fbb, c.length, nodes, buffers, compression);
  fb::MessageHeader type = fb::MessageHeader::RecordBatch;
  flatbuffers::Offset<void> header = batch.Union();
  if (c.dictionary_id) {
    type = fb::MessageHeader::DictionaryBatch;
    header = fb::CreateDictionaryBatch(fbb, *c.dictionary_id, batch, c.is_delta).Union();
  }
  const int64_t body_length = c.body_length.value_or(internal::AlignUp(c.body.size(), 8));
  fbb.Finish(fb::CreateMessage(fbb, fb::MetadataVersion::V5, type, header, body_length));
  return Frame(fbb, c.body);
}

// The schema message strata writes for `schema` (a stream without batches or end marker).
inline std::string SchemaMessage(const SchemaPtr& schema) {
  WriteOptions options;
  options.alignment = 8;
  auto bytes = WriteStreamToBuffer(schema, {}, options);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return std::string(bytes->view().substr(0, bytes->size() - 8));
}

inline std::string EndOfStream() { return std::string("\xff\xff\xff\xff\0\0\0\0", 8); }

inline Buffer ToBuffer(const std::string& bytes) { return Buffer::Copy(bytes); }

inline std::string BatchDiff(const RecordBatch& want, const RecordBatch& got) {
  if (want.Equals(got)) return "";
  std::string out = "batches differ\n";
  for (int c = 0; c < std::min(want.num_columns(), got.num_columns()); ++c) {
    if (!want.column(c).Equals(got.column(c))) {
      out += "column " + want.schema()->field(c)->name() + ":\n want " + want.column(c).ToString() +
             "\n got  " + got.column(c).ToString() + "\n";
    }
  }
  if (want.schema() && got.schema() && !want.schema()->Equals(*got.schema(), false)) {
    out += "schemas:\n" + want.schema()->ToString() + "\n---\n" + got.schema()->ToString();
  }
  return out;
}

}  // namespace strata::ipc::testing
