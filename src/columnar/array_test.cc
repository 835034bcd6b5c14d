// Tests for Array::Validate / ValidateFull on hand-made (often malformed) ArrayData, and for
// the UTF-8 validator. Run under ASan: every malformed case must fail without a bad read.
#include "strata/array.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "columnar/columnar_internal.h"
#include "support/temp_dir.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

template <typename T>
Buffer Buf(const std::vector<T>& v) {
  return Buffer::Copy(v.data(), static_cast<int64_t>(v.size() * sizeof(T)));
}

Buffer Bits(const std::vector<int>& bits) {
  std::vector<uint8_t> bytes((bits.size() + 7) / 8, 0);
  for (size_t i = 0; i < bits.size(); ++i) {
    if (bits[i]) bytes[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
  }
  return Buf(bytes);
}

ArrayDataPtr Share(ArrayData d) { return std::make_shared<const ArrayData>(std::move(d)); }

ArrayData Int32s(std::vector<int32_t> values) {
  ArrayData d;
  d.type = int32();
  d.length = static_cast<int64_t>(values.size());
  d.buffers = {Buffer(), Buf(values)};
  return d;
}

// ["a", "bc", null, ""] with an explicit bitmap.
ArrayData Strings() {
  ArrayData d;
  d.type = utf8();
  d.length = 4;
  d.null_count = 1;
  d.buffers = {Bits({1, 1, 0, 1}), Buf<int32_t>({0, 1, 3, 3, 3}), Buffer::Copy("abc")};
  return d;
}

// list<int32>: [[1, 2], [], [3]]
ArrayData ListOfInt32() {
  ArrayData d;
  d.type = list(int32());
  d.length = 3;
  d.buffers = {Buffer(), Buf<int32_t>({0, 2, 2, 3})};
  d.children = {Share(Int32s({1, 2, 3}))};
  return d;
}

// dictionary<int8, utf8>: ["a", "bc", "a", null]
ArrayData DictionaryOfStrings() {
  ArrayData dict = Strings();
  dict.length = 2;
  dict.null_count = 0;
  dict.buffers[0] = Buffer();
  ArrayData d;
  d.type = dictionary(int8(), utf8());
  d.length = 4;
  d.null_count = 1;
  d.buffers = {Bits({1, 1, 1, 0}), Buf<int8_t>({0, 1, 0, 99})};
  d.dictionary = Share(std::move(dict));
  return d;
}

// struct<a: int32, b: utf8>, 4 rows.
ArrayData StructData() {
  ArrayData d;
  d.type = struct_({field("a", int32()), field("b", utf8())});
  d.length = 4;
  d.buffers = {Buffer()};
  d.children = {Share(Int32s({1, 2, 3, 4})), Share(Strings())};
  return d;
}

Status Check(ArrayData d) { return Array(Share(std::move(d))).Validate(); }
Status CheckFull(ArrayData d) { return Array(Share(std::move(d))).ValidateFull(); }

#define EXPECT_CORRUPT(expr, substring)              \
  do {                                               \
    Status s_ = (expr);                              \
    EXPECT_TRUE(s_.IsCorruption()) << s_;            \
    EXPECT_THAT(s_.message(), HasSubstr(substring)); \
  } while (0)

TEST(ArrayValidateTest, WellFormedArraysPass) {
  EXPECT_TRUE(Check(Int32s({1, 2, 3})).ok());
  EXPECT_TRUE(Check(Strings()).ok());
  EXPECT_TRUE(CheckFull(Strings()).ok());
  EXPECT_TRUE(Check(ListOfInt32()).ok());
  EXPECT_TRUE(Check(StructData()).ok());
  EXPECT_TRUE(Check(DictionaryOfStrings()).ok()) << "null index 99 is not looked at";
  for (auto type :
       {boolean(), int8(), uint64(), float32(), utf8(), large_binary(), timestamp_us("UTC"),
        list(utf8()), large_list(int64()), fixed_size_list(float32(), 4),
        struct_({field("x", int16())}), dictionary(int32(), utf8())}) {
    SCOPED_TRACE(type->ToString());
    EXPECT_TRUE(Array::MakeNull(type, 13).Validate().ok());
    EXPECT_TRUE(Array::MakeNull(type, 13).Slice(3, 7).Validate().ok());
    EXPECT_TRUE(Array::MakeEmpty(type).ValidateFull().ok());
  }
}

TEST(ArrayValidateTest, SlicesOfValidArraysPass) {
  Array strings(Share(Strings()));
  for (int64_t off = 0; off <= 4; ++off) {
    for (int64_t len = 0; off + len <= 4; ++len) {
      EXPECT_TRUE(strings.Slice(off, len).ValidateFull().ok()) << off << "+" << len;
    }
  }
  Array s(Share(StructData()));
  EXPECT_TRUE(s.Slice(1, 2).Validate().ok());
}

TEST(ArrayValidateTest, RejectsBadHeader) {
  EXPECT_CORRUPT(Array().Validate(), "no data");
  ArrayData d = Int32s({1, 2});
  d.type = nullptr;
  EXPECT_CORRUPT(Check(d), "type is null");
  d = Int32s({1, 2});
  d.length = -1;
  EXPECT_CORRUPT(Check(d), "negative length");
  d = Int32s({1, 2});
  d.offset = -1;
  EXPECT_CORRUPT(Check(d), "negative offset");
  d = Int32s({1, 2});
  d.offset = kMax;
  d.length = 2;
  EXPECT_CORRUPT(Check(d), "overflows");
  d = Int32s({1, 2});
  d.offset = kMax / 2;
  d.length = 1;
  EXPECT_CORRUPT(Check(d), "overflow");
  d = Int32s({1, 2});
  d.offset = 1;
  d.length = 2;
  EXPECT_CORRUPT(Check(d), "values buffer holds 8 bytes, 12 needed");
}

TEST(ArrayValidateTest, RejectsWrongBufferAndChildCounts) {
  ArrayData d = Int32s({1, 2});
  d.buffers.pop_back();
  EXPECT_CORRUPT(Check(d), "has 1 buffers, expected 2");
  d = Int32s({1, 2});
  d.buffers.push_back(Buffer());
  EXPECT_CORRUPT(Check(d), "expected 2");
  d = Int32s({1, 2});
  d.children.push_back(Share(Int32s({})));
  EXPECT_CORRUPT(Check(d), "children");
  d = Int32s({1, 2});
  d.dictionary = Share(Int32s({}));
  EXPECT_CORRUPT(Check(d), "carries a dictionary");
  d = Int32s({1, 2});
  static const int32_t kData[2] = {1, 2};
  d.buffers[1] = Buffer(reinterpret_cast<const uint8_t*>(kData), -8, nullptr);
  EXPECT_CORRUPT(Check(d), "negative size");
  d = Int32s({1, 2});
  d.buffers[1] = Buffer();
  EXPECT_CORRUPT(Check(d), "holds 0 bytes");
  d = ListOfInt32();
  d.children.clear();
  EXPECT_CORRUPT(Check(d), "0 children, expected 1");
  d = ListOfInt32();
  d.children[0] = nullptr;
  EXPECT_CORRUPT(Check(d), "child 0 is null");
}

TEST(ArrayValidateTest, RejectsBadValidity) {
  ArrayData d = Int32s(std::vector<int32_t>(20, 7));
  d.buffers[0] = Bits({1, 0, 1});  // 1 byte for 20 rows
  d.null_count = 1;
  EXPECT_CORRUPT(Check(d), "validity bitmap holds 1 bytes, 3 needed");
  d = Int32s({1, 2, 3});
  d.buffers[0] = Bits({1, 0, 1});
  d.null_count = 0;
  EXPECT_CORRUPT(Check(d), "null_count is 0 but the validity bitmap has 1 nulls");
  d.null_count = 4;
  EXPECT_CORRUPT(Check(d), "outside [0, length 3]");
  d.null_count = -1;
  EXPECT_CORRUPT(Check(d), "outside");
  d = Int32s({1, 2, 3});
  d.null_count = 1;
  EXPECT_CORRUPT(Check(d), "no validity bitmap");
  // The same bitmap read at an offset covers different bits.
  d = Int32s({1, 2, 3});
  d.buffers[0] = Bits({0, 1, 1});
  d.null_count = 0;
  d.offset = 1;
  d.length = 2;
  EXPECT_TRUE(Check(d).ok());
  d.offset = 0;
  EXPECT_CORRUPT(Check(d), "has 1 nulls");
}

TEST(ArrayValidateTest, ArrayMakeRejectsShortBitmapWhenCountingNulls) {
  ArrayData d = Int32s(std::vector<int32_t>(20, 7));
  d.buffers[0] = Bits({1, 0, 1});
  d.null_count = -1;
  EXPECT_TRUE(Array::Make(d).status().IsCorruption());
  d.offset = kMax;
  EXPECT_TRUE(Array::Make(d).status().IsCorruption());
  d = Int32s({1, 2, 3});
  d.buffers[0] = Bits({1, 0, 1});
  d.null_count = -1;
  auto made = Array::Make(d);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->null_count(), 1);
}

TEST(ArrayValidateTest, RejectsShortBooleanValues) {
  ArrayData d;
  d.type = boolean();
  d.length = 9;
  d.buffers = {Buffer(), Bits({1, 0, 1})};
  EXPECT_CORRUPT(Check(d), "holds 1 bytes, 2 needed");
  d.length = 8;
  EXPECT_TRUE(Check(d).ok());
}

TEST(ArrayValidateTest, RejectsBadStringOffsets) {
  ArrayData d = Strings();
  d.buffers[1] = Buf<int32_t>({0, 1, 3, 3});
  EXPECT_CORRUPT(Check(d), "offsets buffer holds 16 bytes, 20 needed");
  d = Strings();
  d.buffers[1] = Buf<int32_t>({-1, 1, 3, 3, 3});
  EXPECT_CORRUPT(Check(d), "first offset -1 is negative");
  d = Strings();
  d.buffers[1] = Buf<int32_t>({0, 2, 1, 3, 3});
  EXPECT_CORRUPT(Check(d), "offsets decrease at row 1: 2 then 1");
  d = Strings();
  d.buffers[1] = Buf<int32_t>({0, 1, 3, 3, 4});
  EXPECT_CORRUPT(Check(d), "last offset 4 exceeds the data length 3");
  d = Strings();
  d.buffers[1] = Buf<int32_t>({0, 1, 3, 3, std::numeric_limits<int32_t>::max()});
  EXPECT_CORRUPT(Check(d), "exceeds");
  d = Strings();
  d.buffers[2] = Buffer();
  EXPECT_CORRUPT(Check(d), "exceeds the data length 0");
  d = Strings();
  d.buffers[0] = Buffer();
  d.null_count = 0;
  d.offset = kMax - 4;
  EXPECT_CORRUPT(Check(d), "overflow");
  // Misaligned offsets would be undefined behaviour to read.
  std::vector<uint8_t> raw(24, 0);
  d = Strings();
  d.buffers[1] = Buf(raw).Slice(1, 20);
  EXPECT_CORRUPT(Check(d), "aligned");
  // Only the used range is checked: a slice past a bad offset is fine.
  d = Strings();
  d.buffers[1] = Buf<int32_t>({5, 0, 1, 3, 3});
  d.offset = 1;
  d.length = 3;
  d.buffers[0] = Buffer();
  d.null_count = 0;
  EXPECT_TRUE(Check(d).ok());
  // Large offsets are checked against the data length as int64.
  ArrayData large;
  large.type = large_utf8();
  large.length = 1;
  large.buffers = {Buffer(), Buf<int64_t>({0, int64_t{1} << 40}), Buffer::Copy("abc")};
  EXPECT_CORRUPT(Check(large), "last offset 1099511627776 exceeds");
}

TEST(ArrayValidateTest, ValidateFullChecksUtf8OfNonNullRows) {
  ArrayData d = Strings();
  d.buffers[2] = Buffer::Copy("a\xC3\xA9");  // "a", "é"
  EXPECT_TRUE(CheckFull(d).ok());
  d.buffers[2] = Buffer::Copy("a\xC3\x28");
  EXPECT_TRUE(Check(d).ok()) << "Validate() does not look at UTF-8";
  EXPECT_CORRUPT(CheckFull(d), "row 1 is not valid UTF-8");
  // Row 2 is null: its bytes are not looked at.
  d = Strings();
  d.buffers[1] = Buf<int32_t>({0, 1, 3, 4, 4});
  d.buffers[2] = Buffer::Copy("abc\xFF");
  EXPECT_TRUE(CheckFull(d).ok());
  // Binary is not text.
  d.buffers[0] = Buffer();
  d.null_count = 0;
  d.type = binary();
  EXPECT_TRUE(CheckFull(d).ok());
  d.type = utf8();
  EXPECT_CORRUPT(CheckFull(d), "row 2");
}

TEST(ArrayValidateTest, RejectsBadLists) {
  ArrayData d = ListOfInt32();
  d.buffers[1] = Buf<int32_t>({0, 2, 2, 4});
  EXPECT_CORRUPT(Check(d), "last offset 4 exceeds the list values length 3");
  d = ListOfInt32();
  d.children[0] = Share(Strings());
  EXPECT_CORRUPT(Check(d), "list values: has type utf8, expected int32");
  d = ListOfInt32();
  ArrayData bad_child = Int32s({1, 2, 3});
  bad_child.buffers[1] = Buf<int32_t>({1});
  d.children[0] = Share(bad_child);
  EXPECT_CORRUPT(Check(d), "list values: int32 values buffer holds 4 bytes, 12 needed");
  d = ListOfInt32();
  d.type = large_list(int32());
  EXPECT_CORRUPT(Check(d), "offsets buffer holds 16 bytes, 32 needed");
  d.buffers[1] = Buf<int64_t>({0, 2, 2, 3});
  EXPECT_TRUE(Check(d).ok());
}

TEST(ArrayValidateTest, RejectsBadFixedSizeLists) {
  ArrayData d;
  d.type = fixed_size_list(int32(), 2);
  d.length = 2;
  d.buffers = {Buffer()};
  d.children = {Share(Int32s({1, 2, 3}))};
  EXPECT_CORRUPT(Check(d), "values have 3 elements, 4 needed");
  d.children = {Share(Int32s({1, 2, 3, 4}))};
  EXPECT_TRUE(Check(d).ok());
  d.offset = 1;
  EXPECT_CORRUPT(Check(d), "6 needed");
  d.offset = kMax / 2;
  d.length = 1;
  EXPECT_CORRUPT(Check(d), "overflow");
  d.offset = 0;
  d.type = fixed_size_list(int32(), -1);
  EXPECT_CORRUPT(Check(d), "negative list size");
  d.type = fixed_size_list(int32(), std::numeric_limits<int32_t>::max());
  d.length = 1;
  EXPECT_CORRUPT(Check(d), "needed");
}

TEST(ArrayValidateTest, RejectsBadStructs) {
  ArrayData d = StructData();
  d.children.pop_back();
  EXPECT_CORRUPT(Check(d), "1 children, expected 2");
  d = StructData();
  d.children[0] = Share(Int32s({1, 2, 3}));
  EXPECT_CORRUPT(Check(d), "struct field 'a' has 3 rows, 4 needed");
  d = StructData();
  d.children[1] = Share(Int32s({1, 2, 3, 4}));
  EXPECT_CORRUPT(Check(d), "struct field 'b': has type int32, expected utf8");
  d = StructData();
  ArrayData bad = Strings();
  bad.buffers[1] = Buf<int32_t>({0, 1, 3, 3, 9});
  d.children[1] = Share(bad);
  EXPECT_CORRUPT(Check(d), "struct field 'b': last offset 9");
  d = StructData();
  d.offset = 1;  // children are 4 long: rows 1..4 need 5
  EXPECT_CORRUPT(Check(d), "5 needed");
}

TEST(ArrayValidateTest, RejectsBadDictionaries) {
  ArrayData d = DictionaryOfStrings();
  d.dictionary = nullptr;
  EXPECT_CORRUPT(Check(d), "no dictionary");
  d = DictionaryOfStrings();
  d.dictionary = Share(Int32s({1}));
  EXPECT_CORRUPT(Check(d), "dictionary: has type int32, expected utf8");
  d = DictionaryOfStrings();
  d.buffers[1] = Buf<int8_t>({0, 2, 0, 0});
  EXPECT_CORRUPT(Check(d), "dictionary index 2 at row 1 outside [0, 2)");
  d = DictionaryOfStrings();
  d.buffers[1] = Buf<int8_t>({0, -1, 0, 0});
  EXPECT_CORRUPT(Check(d), "index -1");
  d = DictionaryOfStrings();
  d.buffers[1] = Buf<int8_t>({0, 1});
  EXPECT_CORRUPT(Check(d), "indices buffer holds 2 bytes, 4 needed");
  d = DictionaryOfStrings();
  d.type = dictionary(uint64(), utf8());
  d.buffers[1] = Buf<uint64_t>({0, ~uint64_t{0}, 0, 0});
  EXPECT_CORRUPT(Check(d), "index 18446744073709551615");
  d = DictionaryOfStrings();
  d.type = dictionary(float32(), utf8());
  EXPECT_CORRUPT(Check(d), "index type must be an integer type, got float32");
  d = DictionaryOfStrings();
  d.type = dictionary(nullptr, utf8());
  EXPECT_CORRUPT(Check(d), "got null");
  d = DictionaryOfStrings();
  ArrayData bad_dict = *d.dictionary;
  bad_dict.length = 5;
  d.dictionary = Share(bad_dict);
  EXPECT_CORRUPT(Check(d), "dictionary: offsets buffer");
}

TEST(ArrayValidateTest, RejectsMalformedTypes) {
  ArrayData d = ListOfInt32();
  d.type = std::make_shared<const DataType>(TypeId::kList);  // no value field
  EXPECT_CORRUPT(Check(d), "0 value fields");
  d = StructData();
  d.type = struct_({field("a", int32()), nullptr});
  EXPECT_CORRUPT(Check(d), "null field");
  d = StructData();
  d.type = struct_({field("a", int32()), field("b", nullptr)});
  EXPECT_CORRUPT(Check(d), "field 'b': type is null");
  // A child whose own type is malformed must not crash the type comparison.
  d = ListOfInt32();
  d.type = list(struct_({field("x", int32())}));
  ArrayData child = StructData();
  child.type = struct_({nullptr});
  d.children[0] = Share(child);
  EXPECT_CORRUPT(Check(d), "null field");
  // Hostile nesting depth is refused before any recursion over the data.
  DataTypePtr deep = int32();
  for (int i = 0; i < 1000; ++i) deep = list(deep);
  d = ListOfInt32();
  d.type = deep;
  EXPECT_CORRUPT(Check(d), "nesting deeper than 60");
}

// Mutates valid arrays at random; Validate must never read out of bounds (ASan), and when it
// passes, every accessor must stay in bounds too.
TEST(ArrayValidateTest, RandomCorruptionsNeverReadOutOfBounds) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  auto random_int = [&]() -> int64_t {
    switch (pick(4)) {
      case 0:
        return pick(8) - 2;
      case 1:
        return kMax - pick(4);
      case 2:
        return std::numeric_limits<int64_t>::min() + pick(4);
      default:
        return pick(100);
    }
  };
  auto random_buffer = [&]() {
    std::vector<int64_t> words(pick(6));
    for (auto& w : words) w = pick(3) == 0 ? random_int() : pick(8);
    Buffer b = Buf(words);
    int64_t len = pick(b.size() + 1);
    return b.Slice(0, len);
  };
  int passed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    ArrayData d;
    switch (pick(5)) {
      case 0:
        d = Strings();
        break;
      case 1:
        d = ListOfInt32();
        break;
      case 2:
        d = DictionaryOfStrings();
        break;
      case 3:
        d = StructData();
        break;
      default:
        d = Int32s({1, 2, 3});
        break;
    }
    const int mutations = 1 + static_cast<int>(pick(3));
    for (int m = 0; m < mutations; ++m) {
      switch (pick(5)) {
        case 0:
          d.length = random_int();
          break;
        case 1:
          d.offset = random_int();
          break;
        case 2:
          d.null_count = random_int();
          break;
        default:
          if (!d.buffers.empty()) d.buffers[pick(d.buffers.size())] = random_buffer();
          break;
      }
    }
    Array array(Share(d));
    if (!array.ValidateFull().ok()) continue;
    ++passed;
    // Touch every value the layout says is there.
    int64_t sink = 0;
    for (int64_t i = 0; i < array.length(); ++i) {
      if (array.IsNull(i)) continue;
      switch (array.type_id()) {
        case TypeId::kUtf8:
          sink += static_cast<int64_t>(array.StringValue(i).size());
          break;
        case TypeId::kList: {
          auto [b, e] = array.ValueRange(i);
          for (int64_t j = b; j < e; ++j) sink += array.values_array().Value<int32_t>(j);
          break;
        }
        case TypeId::kDictionary:
          sink +=
              static_cast<int64_t>(array.dictionary().StringValue(array.DictionaryIndex(i)).size());
          break;
        case TypeId::kStruct:
          sink += array.field(0).Value<int32_t>(i);
          break;
        default:
          sink += array.Value<int32_t>(i);
          break;
      }
    }
    EXPECT_GE(sink, std::numeric_limits<int64_t>::min());
  }
  EXPECT_GT(passed, 0);
}

// ---- Equals ----

Array Make(ArrayData d) {
  auto r = Array::Make(std::move(d));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : Array();
}

TEST(ArrayEqualsTest, IgnoresBytesUnderNullSlots) {
  ArrayData a = Int32s({1, 111, 3});
  a.buffers[0] = Bits({1, 0, 1});
  a.null_count = 1;
  ArrayData b = a;
  b.buffers[1] = Buf<int32_t>({1, 222, 3});
  EXPECT_TRUE(Make(a).Equals(Make(b)));
  b.buffers[1] = Buf<int32_t>({1, 222, 4});
  EXPECT_FALSE(Make(a).Equals(Make(b)));
  b = a;
  b.buffers[0] = Bits({1, 1, 0});
  EXPECT_FALSE(Make(a).Equals(Make(b))) << "nulls in different rows";
  EXPECT_FALSE(Make(a).Equals(Make(Int32s({1, 111, 3})))) << "null vs value";
}

TEST(ArrayEqualsTest, RespectsOffsets) {
  Array a = Make(Int32s({9, 9, 1, 2, 3}));
  EXPECT_TRUE(a.Slice(2).Equals(Make(Int32s({1, 2, 3}))));
  EXPECT_FALSE(a.Slice(1, 3).Equals(Make(Int32s({1, 2, 3}))));
  EXPECT_FALSE(a.Slice(2, 2).Equals(Make(Int32s({1, 2, 3})))) << "lengths differ";
  Array strings(Share(Strings()));
  ArrayData shifted;
  shifted.type = utf8();
  shifted.length = 2;
  shifted.buffers = {Buffer(), Buf<int32_t>({5, 7, 8}), Buffer::Copy("zzzzzbcx")};
  EXPECT_FALSE(strings.Slice(1, 2).Equals(Make(shifted))) << "row 2 is null in strings";
  shifted.buffers[0] = Bits({1, 0});
  shifted.null_count = 1;
  EXPECT_TRUE(strings.Slice(1, 2).Equals(Make(shifted)));
}

TEST(ArrayEqualsTest, FloatsTreatNaNAsEqual) {
  auto floats = [](std::vector<double> v) {
    ArrayData d;
    d.type = float64();
    d.length = static_cast<int64_t>(v.size());
    d.buffers = {Buffer(), Buf(v)};
    return Make(d);
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(floats({1.5, nan}).Equals(floats({1.5, -nan})));
  EXPECT_TRUE(floats({0.0}).Equals(floats({-0.0})));
  EXPECT_FALSE(floats({nan}).Equals(floats({1.0})));
  EXPECT_FALSE(floats({1.0}).Equals(floats({1.0000001})));
}

TEST(ArrayEqualsTest, ComparesTypes) {
  EXPECT_FALSE(Make(Int32s({1})).Equals(Array::MakeNull(int64(), 1)));
  EXPECT_FALSE(Array::MakeNull(struct_({field("a", int32())}), 1)
                   .Equals(Array::MakeNull(struct_({field("b", int32())}), 1)));
  EXPECT_FALSE(Array::MakeNull(timestamp_us("UTC"), 1).Equals(Array::MakeNull(timestamp_us(), 1)));
  EXPECT_TRUE(Array().Equals(Array()));
  EXPECT_FALSE(Array().Equals(Make(Int32s({}))));
  EXPECT_FALSE(Make(Int32s({})).Equals(Array()));
}

TEST(ArrayEqualsTest, ListsCompareElementsNotOffsets) {
  // [[1, 2], [], [3]] stored with leading garbage elements and a null row covering elements.
  ArrayData other;
  other.type = list(int32());
  other.length = 4;
  other.null_count = 1;
  other.buffers = {Bits({1, 1, 0, 1}), Buf<int32_t>({2, 4, 4, 6, 7})};
  other.children = {Share(Int32s({7, 7, 1, 2, 8, 8, 3}))};
  Array x = Make(other);
  Array list_of_int(Share(ListOfInt32()));
  EXPECT_FALSE(x.Equals(list_of_int));
  EXPECT_TRUE(x.Slice(0, 2).Equals(list_of_int.Slice(0, 2)));
  EXPECT_TRUE(x.Slice(3).Equals(list_of_int.Slice(2)));
  ArrayData y = ListOfInt32();
  y.children = {Share(Int32s({1, 2, 4}))};
  EXPECT_FALSE(Make(y).Equals(list_of_int));
  EXPECT_TRUE(Make(y).Slice(0, 2).Equals(list_of_int.Slice(0, 2)));
}

TEST(ArrayEqualsTest, NullStructRowsIgnoreTheirFields) {
  ArrayData a = StructData();
  a.buffers[0] = Bits({1, 0, 1, 1});
  a.null_count = 1;
  ArrayData b = a;
  b.children[0] = Share(Int32s({1, 99, 3, 4}));
  EXPECT_TRUE(Make(a).Equals(Make(b)));
  b.children[0] = Share(Int32s({1, 2, 3, 5}));
  EXPECT_FALSE(Make(a).Equals(Make(b)));
  EXPECT_TRUE(Make(a).Slice(2, 1).Equals(Make(StructData()).Slice(2, 1)));
}

TEST(ArrayEqualsTest, DictionariesCompareDecodedValues) {
  // ["a", "bc", "a", null] with the dictionary in another order.
  ArrayData a = DictionaryOfStrings();
  ArrayData b = a;
  ArrayData dict = *a.dictionary;
  dict.buffers = {Buffer(), Buf<int32_t>({0, 2, 3}), Buffer::Copy("bca")};
  b.dictionary = Share(dict);
  b.buffers[1] = Buf<int8_t>({1, 0, 1, 0});
  EXPECT_TRUE(Make(a).Equals(Make(b)));
  b.buffers[1] = Buf<int8_t>({1, 0, 0, 0});
  EXPECT_FALSE(Make(a).Equals(Make(b)));
  // An index to a null dictionary entry decodes to null.
  ArrayData c = DictionaryOfStrings();
  ArrayData with_null = Strings();  // entry 2 is null
  c.dictionary = Share(with_null);
  c.buffers[0] = Buffer();
  c.null_count = 0;
  c.buffers[1] = Buf<int8_t>({0, 1, 0, 2});
  EXPECT_TRUE(Make(c).Equals(Make(a)));
}

// A plain decoder as the oracle for the fast validator.
bool ReferenceUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    int n;
    uint32_t cp;
    if (c < 0x80) {
      n = 0;
      cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n > 0 && i + n >= s.size()) return false;
    for (int k = 1; k <= n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

TEST(Utf8Test, KnownCases) {
  using columnar_internal::IsValidUtf8;
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii, longer than eight bytes"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));   // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation
  EXPECT_FALSE(IsValidUtf8("abcdefgh\xE2\x82"));  // truncated at the end
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8(std::string_view("ab\xC3", 3)));
}

TEST(Utf8Test, MatchesReferenceDecoderOnRandomBytes) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const std::vector<std::string> pieces = {
      "a",    "xyzxyzxyz", "\xC3\xA9",     "\xE2\x82\xAC",     "\xF0\x9F\x98\x80",
      "\x80", "\xC3",      "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE0\x9F\xBF",
      "\xF5"};
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s;
    const int n = static_cast<int>(rng() % 8);
    for (int k = 0; k < n; ++k) {
      if (rng() % 4 == 0) {
        s += static_cast<char>(rng() & 0xFF);
      } else {
        s += pieces[rng() % pieces.size()];
      }
    }
    ASSERT_EQ(columnar_internal::IsValidUtf8(s), ReferenceUtf8(s)) << ::testing::PrintToString(s);
  }
}

}  // namespace
}  // namespace strata
