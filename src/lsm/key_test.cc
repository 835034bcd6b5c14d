// Tests of the order-preserving key encoding (key.h).
#include "lsm/key.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "strata/builder.h"
#include "strata/type.h"
#include "support/status_assertions.h"

namespace strata::lsm {
namespace {

template <typename T>
Array MakeNumeric(DataTypePtr type, const std::vector<T>& values) {
  NumericBuilder<T> builder(std::move(type));
  for (T v : values) builder.Append(v);
  Result<Array> array = builder.Finish();
  EXPECT_TRUE(array.ok()) << array.status();
  return *array;
}

Array MakeStrings(DataTypePtr type, const std::vector<std::string>& values) {
  Result<Array> array = Status::Internal("unset");
  if (type->id() == TypeId::kLargeUtf8) {
    LargeBinaryBuilder builder(type);
    for (const std::string& v : values) EXPECT_TRUE(builder.Append(v).ok());
    array = builder.Finish();
  } else {
    BinaryBuilder builder(type);
    for (const std::string& v : values) EXPECT_TRUE(builder.Append(v).ok());
    array = builder.Finish();
  }
  EXPECT_TRUE(array.ok()) << array.status();
  return *array;
}

// Encoded keys sort exactly like the values they encode.
template <typename T>
void ExpectOrderPreserved(DataTypePtr type, std::vector<T> values) {
  std::sort(values.begin(), values.end());
  Array column = MakeNumeric<T>(type, values);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> keys, EncodeKeys(column, "k"));
  ASSERT_EQ(keys.size(), values.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(keys[i].size(), 8u) << type->ToString();
    if (i > 0) {
      EXPECT_LT(keys[i - 1], keys[i])
          << type->ToString() << ": " << +values[i - 1] << " vs " << +values[i];
    }
  }
}

TEST(KeyTest, SupportedTypesAreTheTablePrimaryKeyTypes) {
  for (const DataTypePtr& t : {utf8(), large_utf8(), int8(), int16(), int32(), int64(), uint8(),
                               uint16(), uint32(), timestamp_us(), timestamp_us("UTC")}) {
    EXPECT_TRUE(IsSupportedKeyType(*t)) << t->ToString();
  }
  for (const DataTypePtr& t :
       {boolean(), uint64(), float32(), float64(), binary(), large_binary(), list(int32())}) {
    EXPECT_FALSE(IsSupportedKeyType(*t)) << t->ToString();
  }
}

TEST(KeyTest, SignedIntegerEncodingPreservesOrderIncludingNegatives) {
  ExpectOrderPreserved<int64_t>(
      int64(), {std::numeric_limits<int64_t>::min(), -1'000'000'000'000, -256, -255, -1, 0, 1, 255,
                256, 1'000'000'000'000, std::numeric_limits<int64_t>::max()});
  ExpectOrderPreserved<int32_t>(int32(), {std::numeric_limits<int32_t>::min(), -70000, -1, 0, 1,
                                          70000, std::numeric_limits<int32_t>::max()});
  ExpectOrderPreserved<int16_t>(int16(), {-32768, -129, -128, -1, 0, 127, 128, 32767});
  ExpectOrderPreserved<int8_t>(int8(), {-128, -127, -1, 0, 1, 126, 127});
  ExpectOrderPreserved<int64_t>(timestamp_us(), {-86'400'000'000, -1, 0, 1, 1'700'000'000'000'000});
}

TEST(KeyTest, UnsignedIntegerEncodingPreservesOrder) {
  ExpectOrderPreserved<uint32_t>(
      uint32(), {0, 1, 255, 256, 65535, 65536, std::numeric_limits<uint32_t>::max()});
  ExpectOrderPreserved<uint16_t>(uint16(), {0, 1, 255, 256, 65535});
  ExpectOrderPreserved<uint8_t>(uint8(), {0, 1, 127, 128, 255});
}

TEST(KeyTest, SignedEncodingIsBigEndianWithSignBitFlipped) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> keys,
                       EncodeKeys(MakeNumeric<int64_t>(int64(), {-1, 0, 258}), "id"));
  EXPECT_EQ(keys[0], std::string("\x7f\xff\xff\xff\xff\xff\xff\xff", 8));
  EXPECT_EQ(keys[1], std::string("\x80\x00\x00\x00\x00\x00\x00\x00", 8));
  EXPECT_EQ(keys[2], std::string("\x80\x00\x00\x00\x00\x00\x01\x02", 8));
  ASSERT_OK_AND_ASSIGN(keys, EncodeKeys(MakeNumeric<uint8_t>(uint8(), {200}), "id"));
  EXPECT_EQ(keys[0], std::string("\x00\x00\x00\x00\x00\x00\x00\xc8", 8));
}

TEST(KeyTest, StringsRoundTripIncludingEmbeddedNulAndUnicode) {
  const std::vector<std::string> values = {"",
                                           std::string("a\0b", 3),
                                           std::string("\0", 1),
                                           "plain",
                                           "\xc3\xa9t\xc3\xa9",         // "été"
                                           "\xe6\x97\xa5\xe6\x9c\xac",  // "日本"
                                           "\xf0\x9f\x98\x80"};         // emoji
  for (const DataTypePtr& type : {utf8(), large_utf8()}) {
    Array column = MakeStrings(type, values);
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> keys, EncodeKeys(column, "name"));
    ASSERT_EQ(keys.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(keys[i], values[i]) << type->ToString() << " row " << i;
      ASSERT_OK_AND_ASSIGN(expr::Scalar decoded, DecodeKey(keys[i], *type));
      EXPECT_EQ(decoded, expr::Scalar::String(values[i]));
      ASSERT_OK_AND_ASSIGN(expr::Scalar scalar, KeyScalar(column, static_cast<int64_t>(i)));
      EXPECT_EQ(scalar, decoded);
      ASSERT_OK_AND_ASSIGN(std::string again, EncodeKeyScalar(scalar, *type));
      EXPECT_EQ(again, keys[i]);
    }
  }
  // Byte order: a prefix sorts first, and the NUL byte sorts below every other byte.
  EXPECT_LT(std::string("a"), std::string("a\0b", 3));
  EXPECT_LT(std::string("a\0b", 3), std::string("ab"));
}

TEST(KeyTest, NullKeyIsRejectedNamingColumnAndRow) {
  Int64Builder builder(int64());
  builder.Append(1);
  builder.Append(2);
  builder.AppendNull();
  ASSERT_OK_AND_ASSIGN(Array column, builder.Finish());
  Result<std::vector<std::string>> keys = EncodeKeys(column, "user_id");
  ASSERT_FALSE(keys.ok());
  EXPECT_TRUE(keys.status().IsInvalidArgument()) << keys.status();
  EXPECT_NE(keys.status().message().find("user_id"), std::string::npos) << keys.status();
  EXPECT_NE(keys.status().message().find("row 2"), std::string::npos) << keys.status();

  Result<expr::Scalar> scalar = KeyScalar(column, 2);
  EXPECT_TRUE(scalar.status().IsInvalidArgument()) << scalar.status();
  EXPECT_TRUE(EncodeKeyScalar(expr::Scalar::Null(), *int64()).status().IsInvalidArgument());
}

TEST(KeyTest, UnsupportedTypeIsRejectedNamingColumn) {
  Array column = MakeNumeric<double>(float64(), {1.5});
  Result<std::vector<std::string>> keys = EncodeKeys(column, "score");
  EXPECT_TRUE(keys.status().IsInvalidArgument()) << keys.status();
  EXPECT_NE(keys.status().message().find("score"), std::string::npos) << keys.status();
  EXPECT_TRUE(KeyScalar(column, 0).status().IsInvalidArgument());
  EXPECT_TRUE(DecodeKey(std::string(8, '\0'), *float64()).status().IsInvalidArgument());
}

TEST(KeyTest, KeyScalarDecodeAndEncodeScalarRoundTripForIntegers) {
  struct Case {
    Array column;
    expr::Scalar::Kind kind;
  };
  std::vector<Case> cases = {
      {MakeNumeric<int8_t>(int8(), {-128, -1, 0, 127}), expr::Scalar::Kind::kInt64},
      {MakeNumeric<int16_t>(int16(), {-32768, 7, 32767}), expr::Scalar::Kind::kInt64},
      {MakeNumeric<int32_t>(int32(), {std::numeric_limits<int32_t>::min(), 0, 99}),
       expr::Scalar::Kind::kInt64},
      {MakeNumeric<int64_t>(
           int64(), {std::numeric_limits<int64_t>::min(), -5, std::numeric_limits<int64_t>::max()}),
       expr::Scalar::Kind::kInt64},
      {MakeNumeric<uint8_t>(uint8(), {0, 255}), expr::Scalar::Kind::kUInt64},
      {MakeNumeric<uint16_t>(uint16(), {0, 65535}), expr::Scalar::Kind::kUInt64},
      {MakeNumeric<uint32_t>(uint32(), {0, 4'000'000'000u}), expr::Scalar::Kind::kUInt64},
      {MakeNumeric<int64_t>(timestamp_us("UTC"), {-1, 0, 1'700'000'000'000'000}),
       expr::Scalar::Kind::kTimestamp},
  };
  for (const Case& c : cases) {
    const DataType& type = *c.column.type();
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> keys, EncodeKeys(c.column, "k"));
    for (int64_t row = 0; row < c.column.length(); ++row) {
      ASSERT_OK_AND_ASSIGN(expr::Scalar scalar, KeyScalar(c.column, row));
      EXPECT_EQ(scalar.kind(), c.kind) << type.ToString();
      ASSERT_OK_AND_ASSIGN(std::string encoded, EncodeKeyScalar(scalar, type));
      EXPECT_EQ(encoded, keys[static_cast<size_t>(row)]) << type.ToString() << " row " << row;
      ASSERT_OK_AND_ASSIGN(expr::Scalar decoded, DecodeKey(encoded, type));
      EXPECT_EQ(decoded, scalar) << type.ToString() << " row " << row;
    }
  }
}

TEST(KeyTest, EncodeKeyScalarAcceptsAnyIntegralKindInRange) {
  ASSERT_OK_AND_ASSIGN(std::string from_int, EncodeKeyScalar(expr::Scalar::Int64(7), *uint16()));
  ASSERT_OK_AND_ASSIGN(std::string from_uint, EncodeKeyScalar(expr::Scalar::UInt64(7), *uint16()));
  EXPECT_EQ(from_int, from_uint);
  ASSERT_OK_AND_ASSIGN(std::string signed_int, EncodeKeyScalar(expr::Scalar::UInt64(7), *int64()));
  ASSERT_OK_AND_ASSIGN(std::string signed_ts,
                       EncodeKeyScalar(expr::Scalar::Timestamp(7), *timestamp_us()));
  EXPECT_EQ(signed_int, signed_ts);
}

TEST(KeyTest, EncodeKeyScalarRejectsWrongKindAndOutOfRange) {
  EXPECT_TRUE(EncodeKeyScalar(expr::Scalar::Int64(300), *int8()).status().IsInvalidArgument());
  EXPECT_TRUE(EncodeKeyScalar(expr::Scalar::Int64(-1), *uint32()).status().IsInvalidArgument());
  EXPECT_TRUE(EncodeKeyScalar(expr::Scalar::UInt64(std::numeric_limits<uint64_t>::max()), *int64())
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(EncodeKeyScalar(expr::Scalar::String("1"), *int64()).status().IsInvalidArgument());
  EXPECT_TRUE(EncodeKeyScalar(expr::Scalar::Int64(1), *utf8()).status().IsInvalidArgument());
  EXPECT_TRUE(EncodeKeyScalar(expr::Scalar::Double(1.0), *int64()).status().IsInvalidArgument());
}

TEST(KeyTest, DecodeKeyRejectsWrongLengthAndOutOfRangeBytes) {
  EXPECT_TRUE(DecodeKey("abc", *int64()).status().IsCorruption());
  EXPECT_TRUE(DecodeKey(std::string(9, '\x80'), *int32()).status().IsCorruption());
  // 2^32 does not fit uint32; 128 does not fit int8.
  EXPECT_TRUE(DecodeKey(std::string("\x00\x00\x00\x01\x00\x00\x00\x00", 8), *uint32())
                  .status()
                  .IsCorruption());
  EXPECT_TRUE(DecodeKey(std::string("\x80\x00\x00\x00\x00\x00\x00\x80", 8), *int8())
                  .status()
                  .IsCorruption());
}

TEST(KeyTest, SlicedColumnEncodesItsOwnRows) {
  Array column = MakeNumeric<int32_t>(int32(), {10, 20, 30, 40}).Slice(1, 2);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> keys, EncodeKeys(column, "k"));
  ASSERT_EQ(keys.size(), 2u);
  ASSERT_OK_AND_ASSIGN(expr::Scalar first, DecodeKey(keys[0], *int32()));
  EXPECT_EQ(first, expr::Scalar::Int64(20));
  ASSERT_OK_AND_ASSIGN(expr::Scalar last, KeyScalar(column, 1));
  EXPECT_EQ(last, expr::Scalar::Int64(30));
  EXPECT_TRUE(KeyScalar(column, 2).status().IsInvalidArgument());
}

}  // namespace
}  // namespace strata::lsm
