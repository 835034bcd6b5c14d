// Tests for the builders, MakeBuilder, RecordBatchBuilder, Concatenate and Take, including
// sliced inputs at non-byte-aligned offsets and a randomized Concatenate(slices) round trip.
#include "strata/builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

// ---- helpers ----

// Streams extra context like the gtest macros: ASSERT_OK(x) << "why";
#define ASSERT_OK(expr)              \
  if (Status s_ = (expr); s_.ok()) { \
  } else                             \
    FAIL() << #expr << ": " << s_

template <typename T>
T ValueOrDie(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(r).value();
}

Array Int64s(const std::vector<std::optional<int64_t>>& values) {
  Int64Builder b(int64());
  for (const auto& v : values) v ? b.Append(*v) : b.AppendNull();
  return ValueOrDie(b.Finish());
}

Array Strings(const std::vector<std::optional<std::string>>& values, DataTypePtr type = utf8()) {
  auto b = ValueOrDie(MakeBuilder(type));
  for (const auto& v : values) {
    if (v) {
      EXPECT_TRUE(type->id() == TypeId::kDictionary
                      ? static_cast<DictionaryBuilder*>(b.get())->Append(*v).ok()
                  : type->id() == TypeId::kLargeUtf8 || type->id() == TypeId::kLargeBinary
                      ? static_cast<LargeBinaryBuilder*>(b.get())->Append(*v).ok()
                      : static_cast<BinaryBuilder*>(b.get())->Append(*v).ok());
    } else {
      b->AppendNull();
    }
  }
  return ValueOrDie(b->Finish());
}

// Builds random values of any type through the builders.
class RandomArrays {
 public:
  explicit RandomArrays(uint64_t seed) : rng_(seed) {}

  int64_t Uniform(int64_t n) { return static_cast<int64_t>(rng_() % static_cast<uint64_t>(n)); }
  bool Coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  DataTypePtr RandomType(int depth = 0) {
    const int kinds = depth < 3 ? 22 : 16;
    switch (Uniform(kinds)) {
      case 0:
        return boolean();
      case 1:
        return int8();
      case 2:
        return int16();
      case 3:
        return int32();
      case 4:
        return int64();
      case 5:
        return uint8();
      case 6:
        return uint16();
      case 7:
        return uint32();
      case 8:
        return uint64();
      case 9:
        return float32();
      case 10:
        return float64();
      case 11:
        return utf8();
      case 12:
        return large_utf8();
      case 13:
        return binary();
      case 14:
        return large_binary();
      case 15:
        return timestamp_us(Coin(0.5) ? "UTC" : "");
      case 16:
        return list(RandomType(depth + 1));
      case 17:
        return large_list(field("elem", RandomType(depth + 1), Coin(0.5)));
      case 18:
        return fixed_size_list(RandomType(depth + 1), static_cast<int32_t>(Uniform(4)));
      case 19: {
        std::vector<FieldPtr> fields;
        const int64_t n = 1 + Uniform(3);
        for (int64_t i = 0; i < n; ++i) {
          fields.push_back(field("f" + std::to_string(i), RandomType(depth + 1)));
        }
        return struct_(std::move(fields));
      }
      default: {
        const DataTypePtr index[] = {int8(), int16(), uint32(), int64()};
        const DataTypePtr value[] = {utf8(), binary(), large_utf8()};
        return dictionary(index[Uniform(4)], value[Uniform(3)]);
      }
    }
  }

  std::string RandomString(bool utf8_text) {
    static const char* const kPieces[] = {"a", "b", "xyz", "\xC3\xA9", "\xE2\x82\xAC", " ", "\""};
    std::string s;
    const int64_t n = Uniform(5);
    for (int64_t i = 0; i < n; ++i) {
      if (utf8_text) {
        s += kPieces[Uniform(7)];
      } else {
        s += static_cast<char>(Uniform(256));
      }
    }
    return s;
  }

  void AppendRandom(ArrayBuilder* b, const DataType& type, double null_prob) {
    if (Coin(null_prob)) {
      b->AppendNull();
      return;
    }
    switch (type.id()) {
      case TypeId::kBool:
        static_cast<BooleanBuilder*>(b)->Append(Coin(0.5));
        return;
      case TypeId::kInt8:
        static_cast<Int8Builder*>(b)->Append(static_cast<int8_t>(Uniform(256) - 128));
        return;
      case TypeId::kInt16:
        static_cast<Int16Builder*>(b)->Append(static_cast<int16_t>(Uniform(1000) - 500));
        return;
      case TypeId::kInt32:
        static_cast<Int32Builder*>(b)->Append(static_cast<int32_t>(Uniform(1 << 20)) - 1000);
        return;
      case TypeId::kInt64:
      case TypeId::kTimestamp:
        static_cast<Int64Builder*>(b)->Append(static_cast<int64_t>(rng_()) / 1000);
        return;
      case TypeId::kUInt8:
        static_cast<UInt8Builder*>(b)->Append(static_cast<uint8_t>(Uniform(256)));
        return;
      case TypeId::kUInt16:
        static_cast<UInt16Builder*>(b)->Append(static_cast<uint16_t>(Uniform(65536)));
        return;
      case TypeId::kUInt32:
        static_cast<UInt32Builder*>(b)->Append(static_cast<uint32_t>(rng_()));
        return;
      case TypeId::kUInt64:
        static_cast<UInt64Builder*>(b)->Append(rng_());
        return;
      case TypeId::kFloat32: {
        const float special[] = {0.0f, -0.0f, std::nanf(""), 1.5f,
                                 std::numeric_limits<float>::infinity()};
        static_cast<Float32Builder*>(b)->Append(
            Coin(0.2) ? special[Uniform(5)] : static_cast<float>(Uniform(10000)) / 7.0f);
        return;
      }
      case TypeId::kFloat64:
        static_cast<Float64Builder*>(b)->Append(
            Coin(0.1) ? std::nan("") : static_cast<double>(Uniform(1 << 30)) / 3.0);
        return;
      case TypeId::kUtf8:
      case TypeId::kBinary:
        ASSERT_OK(static_cast<BinaryBuilder*>(b)->Append(RandomString(type.is_string())));
        return;
      case TypeId::kLargeUtf8:
      case TypeId::kLargeBinary:
        ASSERT_OK(static_cast<LargeBinaryBuilder*>(b)->Append(RandomString(type.is_string())));
        return;
      case TypeId::kList: {
        auto* lb = static_cast<ListBuilder*>(b);
        lb->Append();
        const int64_t n = Uniform(4);
        for (int64_t i = 0; i < n; ++i) AppendRandom(lb->value_builder(), *type.value_type(), 0.2);
        return;
      }
      case TypeId::kLargeList: {
        auto* lb = static_cast<LargeListBuilder*>(b);
        lb->Append();
        const int64_t n = Uniform(4);
        for (int64_t i = 0; i < n; ++i) AppendRandom(lb->value_builder(), *type.value_type(), 0.2);
        return;
      }
      case TypeId::kFixedSizeList: {
        auto* fb = static_cast<FixedSizeListBuilder*>(b);
        fb->Append();
        for (int32_t i = 0; i < type.list_size(); ++i) {
          AppendRandom(fb->value_builder(), *type.value_type(), 0.2);
        }
        return;
      }
      case TypeId::kStruct: {
        auto* sb = static_cast<StructBuilder*>(b);
        sb->Append();
        for (int k = 0; k < sb->num_fields(); ++k) {
          AppendRandom(sb->field_builder(k), *type.fields()[k]->type(), 0.2);
        }
        return;
      }
      case TypeId::kDictionary: {
        static const char* const kWords[] = {"red", "green", "blue", "", "\xC3\xA9t\xC3\xA9"};
        ASSERT_OK(static_cast<DictionaryBuilder*>(b)->Append(kWords[Uniform(5)]));
        return;
      }
    }
  }

  Array Make(const DataTypePtr& type, int64_t length, double null_prob) {
    auto b = ValueOrDie(MakeBuilder(type));
    for (int64_t i = 0; i < length; ++i) AppendRandom(b.get(), *type, null_prob);
    return ValueOrDie(b->Finish());
  }

 private:
  std::mt19937_64 rng_;
};

std::vector<DataTypePtr> AllTypes() {
  return {boolean(),
          int8(),
          int16(),
          int32(),
          int64(),
          uint8(),
          uint16(),
          uint32(),
          uint64(),
          float32(),
          float64(),
          utf8(),
          large_utf8(),
          binary(),
          large_binary(),
          timestamp_us(),
          timestamp_us("Europe/Paris"),
          list(int32()),
          large_list(utf8()),
          fixed_size_list(float32(), 4),
          fixed_size_list(field("v", int8(), false), 0),
          struct_({field("a", int32()), field("b", utf8())}),
          list(struct_({field("x", int64()), field("tags", list(utf8()))})),
          struct_({field("inner", struct_({field("d", dictionary(int16(), utf8()))}))}),
          dictionary(int8(), utf8()),
          dictionary(uint32(), large_utf8()),
          dictionary(int64(), binary())};
}

// ---- flat builders ----

TEST(BuilderTest, NumericAppendsValuesAndNulls) {
  Int32Builder b(int32());
  b.Append(1);
  b.AppendNull();
  const int32_t more[] = {3, 4, 5};
  b.AppendValues(more, 3);
  EXPECT_EQ(b.length(), 5);
  EXPECT_EQ(b.null_count(), 1);
  Array a = ValueOrDie(b.Finish());
  ASSERT_OK(a.ValidateFull());
  EXPECT_EQ(a.length(), 5);
  EXPECT_EQ(a.null_count(), 1);
  EXPECT_EQ(a.Value<int32_t>(0), 1);
  EXPECT_TRUE(a.IsNull(1));
  EXPECT_EQ(a.Value<int32_t>(4), 5);
}

TEST(BuilderTest, FinishResetsTheBuilder) {
  Int64Builder b(int64());
  b.Append(7);
  b.AppendNull();
  Array first = ValueOrDie(b.Finish());
  EXPECT_EQ(b.length(), 0);
  EXPECT_EQ(b.null_count(), 0);
  b.Append(8);
  Array second = ValueOrDie(b.Finish());
  EXPECT_TRUE(second.Equals(Int64s({8})));
  EXPECT_TRUE(first.Equals(Int64s({7, std::nullopt})));
  EXPECT_EQ(ValueOrDie(b.Finish()).length(), 0);
}

TEST(BuilderTest, ArraysWithoutNullsHaveNoValidityBitmap) {
  Array a = Int64s({1, 2, 3});
  EXPECT_TRUE(a.data()->buffers[0].is_null());
  EXPECT_EQ(a.null_count(), 0);
}

TEST(BuilderTest, BooleanBitsAcrossBytes) {
  BooleanBuilder b;
  std::vector<std::optional<bool>> expect;
  for (int i = 0; i < 21; ++i) {
    if (i % 5 == 4) {
      b.AppendNull();
      expect.push_back(std::nullopt);
    } else {
      b.Append(i % 3 == 0);
      expect.push_back(i % 3 == 0);
    }
  }
  Array a = ValueOrDie(b.Finish());
  ASSERT_OK(a.Validate());
  ASSERT_EQ(a.length(), 21);
  for (int i = 0; i < 21; ++i) {
    ASSERT_EQ(a.IsNull(i), !expect[i].has_value()) << i;
    if (expect[i]) {
      EXPECT_EQ(a.BoolValue(i), *expect[i]) << i;
    }
  }
}

TEST(BuilderTest, TimestampKeepsItsTimeZone) {
  TimestampBuilder b(timestamp_us("Asia/Tokyo"));
  b.Append(1'700'000'000'000'000);
  Array a = ValueOrDie(b.Finish());
  EXPECT_EQ(a.type()->timezone(), "Asia/Tokyo");
  EXPECT_EQ(a.Value<int64_t>(0), 1'700'000'000'000'000);
}

TEST(BuilderTest, NumericBuilderRejectsAMismatchedType) {
  Int32Builder b(int64());
  b.Append(1);
  EXPECT_TRUE(b.Finish().status().IsInvalidArgument());
  Float32Builder f(int32());
  EXPECT_TRUE(f.Finish().status().IsInvalidArgument());
}

TEST(BuilderTest, StringsAndBinary) {
  Array s = Strings({"héllo", std::nullopt, "", "x"});
  ASSERT_OK(s.ValidateFull());
  EXPECT_EQ(s.StringValue(0), "héllo");
  EXPECT_TRUE(s.IsNull(1));
  EXPECT_EQ(s.StringValue(2), "");
  EXPECT_EQ(s.StringValue(3), "x");
  Array large = Strings({"a", "bc"}, large_utf8());
  EXPECT_EQ(large.type_id(), TypeId::kLargeUtf8);
  EXPECT_EQ(large.StringValue(1), "bc");
  Array bytes = Strings({std::string("\0\xFF", 2)}, binary());
  EXPECT_EQ(bytes.StringValue(0), std::string_view("\0\xFF", 2));
}

TEST(BuilderTest, Utf8FinishRejectsInvalidTextNamingTheRow) {
  BinaryBuilder b(utf8());
  ASSERT_OK(b.Append("ok"));
  ASSERT_OK(b.Append("bad \xC3("));
  Status s = b.Finish().status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_THAT(s.message(), HasSubstr("row 1"));
  EXPECT_EQ(b.length(), 0) << "the failed Finish() resets the builder";
  ASSERT_OK(b.Append("fine"));
  EXPECT_TRUE(b.Finish().ok());
  BinaryBuilder raw(binary());
  ASSERT_OK(raw.Append("bad \xC3("));
  EXPECT_TRUE(raw.Finish().ok());
}

TEST(BuilderTest, BinaryBuilderOnTheWrongTypeFails) {
  BinaryBuilder b(large_utf8());
  EXPECT_TRUE(b.Finish().status().IsInvalidArgument());
  LargeBinaryBuilder l(int32());
  EXPECT_TRUE(l.Finish().status().IsInvalidArgument());
}

// ---- nested builders ----

TEST(BuilderTest, ListOfInt32) {
  ListBuilder b(list(int32()), std::make_unique<Int32Builder>(int32()));
  auto* values = static_cast<Int32Builder*>(b.value_builder());
  b.Append();
  values->Append(1);
  values->Append(2);
  b.AppendNull();
  b.Append();  // empty
  b.Append();
  values->AppendNull();
  Array a = ValueOrDie(b.Finish());
  ASSERT_OK(a.Validate());
  ASSERT_EQ(a.length(), 4);
  EXPECT_EQ(a.null_count(), 1);
  EXPECT_EQ(a.ValueRange(0), std::make_pair(int64_t{0}, int64_t{2}));
  EXPECT_EQ(a.ValueRange(1), std::make_pair(int64_t{2}, int64_t{2}));
  EXPECT_EQ(a.ValueRange(2), std::make_pair(int64_t{2}, int64_t{2}));
  EXPECT_EQ(a.ValueRange(3), std::make_pair(int64_t{2}, int64_t{3}));
  EXPECT_TRUE(a.values_array().IsNull(2));
  EXPECT_EQ(b.length(), 0);
  EXPECT_EQ(b.value_builder()->length(), 0);
}

TEST(BuilderTest, ListOfStructs) {
  auto item = struct_({field("id", int64()), field("name", utf8())});
  auto type = list(item);
  auto b = ValueOrDie(MakeBuilder(type));
  auto* lb = static_cast<ListBuilder*>(b.get());
  auto* sb = static_cast<StructBuilder*>(lb->value_builder());
  auto* ids = static_cast<Int64Builder*>(sb->field_builder(0));
  auto* names = static_cast<BinaryBuilder*>(sb->field_builder(1));
  lb->Append();
  sb->Append();
  ids->Append(1);
  ASSERT_OK(names->Append("one"));
  sb->AppendNull();
  lb->AppendNull();
  Array a = ValueOrDie(b->Finish());
  ASSERT_OK(a.ValidateFull());
  EXPECT_EQ(a.length(), 2);
  Array structs = a.values_array();
  EXPECT_EQ(structs.length(), 2);
  EXPECT_TRUE(structs.IsNull(1));
  EXPECT_TRUE(structs.field(1).IsNull(1)) << "a null struct row appends nulls to the fields";
  EXPECT_EQ(structs.field(1).StringValue(0), "one");
}

TEST(BuilderTest, FixedSizeListOfFloat32) {
  auto b = ValueOrDie(MakeBuilder(fixed_size_list(float32(), 4)));
  auto* fb = static_cast<FixedSizeListBuilder*>(b.get());
  auto* values = static_cast<Float32Builder*>(fb->value_builder());
  fb->Append();
  for (float v : {0.5f, 1.5f, 2.5f, 3.5f}) values->Append(v);
  fb->AppendNull();
  EXPECT_EQ(values->length(), 8) << "a null row appends list_size placeholders";
  Array a = ValueOrDie(b->Finish());
  ASSERT_OK(a.Validate());
  EXPECT_EQ(a.ValueRange(1), std::make_pair(int64_t{4}, int64_t{8}));
  EXPECT_FLOAT_EQ(a.values_array().Value<float>(3), 3.5f);

  fb->Append();
  values->Append(1.0f);
  Status s = b->Finish().status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_THAT(s.message(), HasSubstr("1 elements"));
  for (int i = 0; i < 3; ++i) values->Append(1.0f);
  EXPECT_TRUE(b->Finish().ok()) << "the builder was left as it was, so it can be completed";
}

TEST(BuilderTest, StructFieldLengthsMustMatch) {
  auto b = ValueOrDie(MakeBuilder(struct_({field("a", int32()), field("b", utf8())})));
  auto* sb = static_cast<StructBuilder*>(b.get());
  sb->Append();
  static_cast<Int32Builder*>(sb->field_builder(0))->Append(1);
  Status s = b->Finish().status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_THAT(s.message(), HasSubstr("field 'b' has 0"));
  ASSERT_OK(static_cast<BinaryBuilder*>(sb->field_builder(1))->Append("x"));
  Array a = ValueOrDie(b->Finish());
  EXPECT_EQ(a.field(1).StringValue(0), "x");
}

TEST(BuilderTest, DictionaryDeduplicates) {
  DictionaryBuilder b(dictionary(int8(), utf8()));
  for (const char* v : {"b", "a", "b", "b"}) ASSERT_OK(b.Append(v));
  b.AppendNull();
  Array a = ValueOrDie(b.Finish());
  ASSERT_OK(a.ValidateFull());
  EXPECT_EQ(a.dictionary().length(), 2);
  EXPECT_EQ(a.DictionaryIndex(0), 0);
  EXPECT_EQ(a.DictionaryIndex(1), 1);
  EXPECT_EQ(a.DictionaryIndex(3), 0);
  EXPECT_TRUE(a.IsNull(4));
  EXPECT_EQ(a.dictionary().StringValue(1), "a");
}

TEST(BuilderTest, DictionaryOutgrowingItsIndexTypeFails) {
  DictionaryBuilder b(dictionary(int8(), utf8()));
  for (int i = 0; i < 128; ++i) ASSERT_OK(b.Append(std::to_string(i)));
  Status s = b.Append("one more");
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  ASSERT_OK(b.Append("7")) << "existing values still fit";
  DictionaryBuilder u(dictionary(uint8(), utf8()));
  for (int i = 0; i < 256; ++i) ASSERT_OK(u.Append(std::to_string(i)));
  EXPECT_TRUE(u.Append("256").IsInvalidArgument());
}

TEST(BuilderTest, MakeBuilderCoversEveryType) {
  for (const auto& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    auto b = MakeBuilder(type);
    ASSERT_TRUE(b.ok()) << b.status();
    (*b)->AppendNulls(3);
    Array a = ValueOrDie((*b)->Finish());
    ASSERT_OK(a.ValidateFull());
    EXPECT_TRUE(a.type()->Equals(*type));
    EXPECT_EQ(a.null_count(), 3);
    EXPECT_TRUE(a.Equals(Array::MakeNull(type, 3)));
  }
  EXPECT_TRUE(MakeBuilder(dictionary(int32(), int64())).status().IsInvalidArgument());
  EXPECT_TRUE(MakeBuilder(dictionary(float32(), utf8())).status().IsInvalidArgument());
  EXPECT_TRUE(MakeBuilder(nullptr).status().IsInvalidArgument());
}

// ---- AppendArraySlice ----

TEST(BuilderTest, AppendArraySliceAtUnalignedOffsetsForEveryType) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  RandomArrays random(seed);
  for (const auto& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    Array source = random.Make(type, 29, 0.3);
    Array slice = source.Slice(3, 10);
    ASSERT_OK(slice.ValidateFull());
    auto b = ValueOrDie(MakeBuilder(type));
    ASSERT_OK(b->AppendArraySlice(source, 3, 10));
    Array direct = ValueOrDie(b->Finish());
    ASSERT_OK(direct.ValidateFull());
    EXPECT_TRUE(direct.Equals(slice));
    // A slice of a slice, appended at a non-byte-aligned builder position.
    b->AppendNull();
    ASSERT_OK(b->AppendArraySlice(slice, 1, 7));
    ASSERT_OK(b->AppendArraySlice(source, 0, 0));
    Array nested = ValueOrDie(b->Finish());
    ASSERT_OK(nested.ValidateFull());
    ASSERT_EQ(nested.length(), 8);
    EXPECT_TRUE(nested.IsNull(0));
    EXPECT_TRUE(nested.Slice(1).Equals(source.Slice(4, 7)));
  }
}

TEST(BuilderTest, AppendArraySliceChecksTypeAndBounds) {
  Int64Builder b(int64());
  Array ints = Int64s({1, 2, 3});
  EXPECT_TRUE(b.AppendArraySlice(Strings({"a"}), 0, 1).IsInvalidArgument());
  EXPECT_TRUE(b.AppendArraySlice(ints, 2, 2).IsInvalidArgument());
  EXPECT_TRUE(b.AppendArraySlice(ints, -1, 1).IsInvalidArgument());
  EXPECT_TRUE(b.AppendArraySlice(ints, 0, -1).IsInvalidArgument());
  EXPECT_TRUE(b.AppendArraySlice(Array(), 0, 0).IsInvalidArgument());
  EXPECT_EQ(b.length(), 0);
  ASSERT_OK(b.AppendArraySlice(ints, 1, 2));
  EXPECT_TRUE(ValueOrDie(b.Finish()).Equals(Int64s({2, 3})));
}

TEST(BuilderTest, DictionaryBuilderReencodesArraysWithOtherDictionaries) {
  auto type = dictionary(int16(), utf8());
  Array x = Strings({"a", "b", std::nullopt}, type);
  Array y = Strings({"c", "a"}, type);
  DictionaryBuilder b(type);
  ASSERT_OK(b.AppendArraySlice(x, 1, 2));
  ASSERT_OK(b.AppendArraySlice(y, 0, 2));
  ASSERT_OK(b.AppendArraySlice(Strings({"b", std::nullopt}), 0, 2)) << "plain values encode";
  Array a = ValueOrDie(b.Finish());
  EXPECT_TRUE(a.Equals(Strings({"b", std::nullopt, "c", "a", "b", std::nullopt}, type)));
  EXPECT_EQ(a.dictionary().length(), 3);
  EXPECT_TRUE(b.AppendArraySlice(Int64s({1}), 0, 1).IsInvalidArgument());
}

// ---- RecordBatchBuilder ----

TEST(RecordBatchBuilderTest, BuildsABatch) {
  auto s = schema({field("id", int64(), false), field("name", utf8())});
  auto rb = ValueOrDie(RecordBatchBuilder::Make(s));
  for (int i = 0; i < 3; ++i) {
    rb->GetAs<Int64Builder>(0)->Append(i);
    if (i == 1) {
      rb->builder(1)->AppendNull();
    } else {
      ASSERT_OK(rb->GetAs<BinaryBuilder>(1)->Append("n" + std::to_string(i)));
    }
  }
  EXPECT_EQ(rb->num_rows(), 3);
  RecordBatch batch = ValueOrDie(rb->Finish());
  ASSERT_OK(batch.ValidateFull());
  EXPECT_EQ(batch.num_rows(), 3);
  EXPECT_TRUE(batch.column(1).Equals(Strings({"n0", std::nullopt, "n2"})));
  EXPECT_EQ(rb->num_rows(), 0);
}

TEST(RecordBatchBuilderTest, EnforcesNonNullableFields) {
  auto s = schema({field("id", int64(), false)});
  auto rb = ValueOrDie(RecordBatchBuilder::Make(s));
  rb->GetAs<Int64Builder>(0)->Append(1);
  rb->builder(0)->AppendNull();
  Status st = rb->Finish().status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st;
  EXPECT_THAT(st.message(), HasSubstr("not nullable"));
}

TEST(RecordBatchBuilderTest, RejectsColumnsOfDifferentLengths) {
  auto s = schema({field("a", int64()), field("b", int64())});
  auto rb = ValueOrDie(RecordBatchBuilder::Make(s));
  rb->GetAs<Int64Builder>(0)->Append(1);
  Status st = rb->Finish().status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st;
  EXPECT_THAT(st.message(), HasSubstr("column 'b' has 0 rows"));
  rb->GetAs<Int64Builder>(1)->Append(2);
  EXPECT_TRUE(rb->Finish().ok());
}

TEST(RecordBatchBuilderTest, MakeRejectsUnsupportedTypes) {
  auto s = schema({field("d", dictionary(int32(), float64()))});
  Status st = RecordBatchBuilder::Make(s).status();
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_THAT(st.message(), HasSubstr("column 'd'"));
}

// ---- Concatenate ----

TEST(ConcatenateTest, SlicedInputsOfEveryType) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  RandomArrays random(seed);
  for (const auto& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    Array a = random.Make(type, 25, 0.25);
    Array joined = ValueOrDie(Concatenate({a.Slice(0, 3), a.Slice(3, 10), a.Slice(13)}));
    ASSERT_OK(joined.ValidateFull());
    EXPECT_TRUE(joined.Equals(a));
    Array two = ValueOrDie(Concatenate({a.Slice(5, 3), a.Slice(1, 1)}));
    EXPECT_TRUE(two.Slice(0, 3).Equals(a.Slice(5, 3)));
    EXPECT_TRUE(two.Slice(3).Equals(a.Slice(1, 1)));
  }
}

TEST(ConcatenateTest, RejectsBadInput) {
  EXPECT_TRUE(Concatenate({}).status().IsInvalidArgument());
  Status s = Concatenate({Int64s({1}), Strings({"a"})}).status();
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_THAT(s.message(), HasSubstr("input 1"));
}

TEST(ConcatenateTest, SharedDictionaryIsKept) {
  auto type = dictionary(int8(), utf8());
  Array a = Strings({"x", "y", std::nullopt, "x"}, type);
  Array joined = ValueOrDie(Concatenate({a.Slice(2), a, a.Slice(1, 1)}));
  ASSERT_OK(joined.ValidateFull());
  EXPECT_EQ(joined.data()->dictionary, a.data()->dictionary);
  EXPECT_TRUE(joined.Equals(Strings({std::nullopt, "x", "x", "y", std::nullopt, "x", "y"}, type)));
}

TEST(ConcatenateTest, DifferentDictionariesAreUnified) {
  auto type = dictionary(int8(), utf8());
  Array a = Strings({"x", "y"}, type);
  Array b = Strings({"z", "x", std::nullopt}, type);
  Array joined = ValueOrDie(Concatenate({a, b}));
  ASSERT_OK(joined.ValidateFull());
  EXPECT_EQ(joined.dictionary().length(), 3) << "de-duplicated";
  EXPECT_TRUE(joined.Equals(Strings({"x", "y", "z", "x", std::nullopt}, type)));
}

TEST(ConcatenateTest, UnifiedDictionaryMayOutgrowTheIndexType) {
  auto type = dictionary(int8(), utf8());
  std::vector<std::optional<std::string>> first, second;
  for (int i = 0; i < 100; ++i) {
    first.push_back("a" + std::to_string(i));
    second.push_back("b" + std::to_string(i));
  }
  Status s = Concatenate({Strings(first, type), Strings(second, type)}).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
}

TEST(ConcatenateTest, NonStringDictionariesAreAppended) {
  // No builder exists for dictionary<int32, int64>: assemble two by hand.
  auto type = dictionary(int32(), int64());
  auto make = [&](std::vector<int32_t> idx, std::vector<std::optional<int64_t>> dict) {
    ArrayData d;
    d.type = type;
    d.length = static_cast<int64_t>(idx.size());
    d.buffers = {Buffer(), Buffer::Copy(idx.data(), static_cast<int64_t>(idx.size() * 4))};
    d.dictionary = Int64s(dict).data();
    return ValueOrDie(Array::Make(std::move(d)));
  };
  Array a = make({1, 0, 1}, {10, 20});
  Array b = make({0, 0}, {30});
  Array joined = ValueOrDie(Concatenate({a.Slice(1), b}));
  ASSERT_OK(joined.Validate());
  EXPECT_EQ(joined.dictionary().length(), 3);
  Array expect = make({0, 1, 2, 2}, {10, 20, 30});
  EXPECT_TRUE(joined.Equals(expect));
  EXPECT_TRUE(joined.Equals(make({2, 1, 0, 0}, {30, 20, 10})));
}

TEST(ConcatenateTest, Batches) {
  auto s = schema({field("id", int64()), field("tags", list(utf8()))});
  RandomArrays random(1);
  RecordBatch a = ValueOrDie(
      RecordBatch::Make(s, 4, {random.Make(int64(), 4, 0.2), random.Make(list(utf8()), 4, 0.2)}));
  RecordBatch b = a.Slice(1, 2);
  RecordBatch joined = ValueOrDie(ConcatenateBatches({a, b}));
  EXPECT_EQ(joined.num_rows(), 6);
  EXPECT_TRUE(joined.Slice(0, 4).Equals(a));
  EXPECT_TRUE(joined.Slice(4, 2).Equals(b));
  EXPECT_TRUE(ConcatenateBatches({}).status().IsInvalidArgument());
  auto other = schema({field("id", int64())});
  RecordBatch c = ValueOrDie(RecordBatch::Make(other, 1, {Int64s({1})}));
  EXPECT_TRUE(ConcatenateBatches({a, c}).status().IsInvalidArgument());
}

// ---- Take ----

TEST(TakeTest, EveryTypeFromASlice) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  RandomArrays random(seed);
  for (const auto& type : AllTypes()) {
    SCOPED_TRACE(type->ToString());
    Array a = random.Make(type, 30, 0.3).Slice(3, 20);
    std::vector<int64_t> indices = {19, 0, 0, 7, 3, 12, 19};
    Array taken = ValueOrDie(Take(a, indices));
    ASSERT_OK(taken.ValidateFull());
    ASSERT_EQ(taken.length(), 7);
    for (size_t k = 0; k < indices.size(); ++k) {
      EXPECT_TRUE(taken.Slice(k, 1).Equals(a.Slice(indices[k], 1))) << k;
    }
    EXPECT_EQ(ValueOrDie(Take(a, {})).length(), 0);
  }
}

TEST(TakeTest, KeepsTheDictionary) {
  auto type = dictionary(int8(), utf8());
  Array a = Strings({"x", "y", std::nullopt, "z"}, type);
  Array taken = ValueOrDie(Take(a, {3, 2, 0}));
  EXPECT_EQ(taken.data()->dictionary, a.data()->dictionary);
  EXPECT_TRUE(taken.Equals(Strings({"z", std::nullopt, "x"}, type)));
}

TEST(TakeTest, RejectsOutOfRangeIndices) {
  Array a = Int64s({1, 2});
  Status s = Take(a, {0, 2}).status();
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_THAT(s.message(), HasSubstr("index 2 at position 1"));
  EXPECT_TRUE(Take(a, {-1}).status().IsInvalidArgument());
  EXPECT_TRUE(Take(Array(), {}).status().IsInvalidArgument());
}

// ---- randomized ----

TEST(ConcatenateTest, RandomSlicesConcatenateBackToTheOriginal) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  RandomArrays random(seed);
  for (int iter = 0; iter < 150; ++iter) {
    DataTypePtr type = random.RandomType();
    SCOPED_TRACE(::testing::Message() << "iteration " << iter << ", type " << type->ToString());
    const int64_t length = random.Uniform(70);
    Array original = random.Make(type, length, random.Coin(0.5) ? 0.0 : 0.3);
    ASSERT_OK(original.ValidateFull());
    std::vector<Array> pieces;
    int64_t at = 0;
    while (at < length || pieces.empty()) {
      const int64_t n = std::min<int64_t>(random.Uniform(17), length - at);
      pieces.push_back(original.Slice(at, n));
      at += n;
    }
    Array joined = ValueOrDie(Concatenate(pieces));
    ASSERT_OK(joined.ValidateFull());
    ASSERT_TRUE(joined.Equals(original));
    ASSERT_TRUE(original.Equals(joined));
    // Take of every row in order is the identity, also on a slice.
    const int64_t off = length > 0 ? random.Uniform(length) : 0;
    Array slice = original.Slice(off, random.Uniform(length - off + 1));
    std::vector<int64_t> all(slice.length());
    for (int64_t i = 0; i < slice.length(); ++i) all[i] = i;
    Array taken = ValueOrDie(Take(slice, all));
    ASSERT_OK(taken.ValidateFull());
    ASSERT_TRUE(taken.Equals(slice));
    if (length > 1) {
      EXPECT_FALSE(original.Slice(0, length - 1).Equals(original)) << "lengths differ";
    }
  }
}

}  // namespace
}  // namespace strata
