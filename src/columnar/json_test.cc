// Tests for the JSON codec (strata/json.h): every type in both directions, exact error
// messages, the streaming reader, and random batch -> JSON -> batch round trips.
#include "strata/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "strata/builder.h"
#include "support/temp_dir.h"

namespace strata::json {
namespace {

using ::testing::HasSubstr;

RecordBatch MustRead(const SchemaPtr& schema, std::string_view text,
                     const JsonReadOptions& options = {}) {
  auto result = RowsToBatch(schema, text, options);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return RecordBatch::MakeEmpty(schema);
  EXPECT_TRUE(result->ValidateFull().ok());
  return *std::move(result);
}

// The message of the InvalidArgument error that reading `text` must produce.
std::string ReadError(const SchemaPtr& schema, std::string_view text,
                      const JsonReadOptions& options = {}) {
  auto result = RowsToBatch(schema, text, options);
  EXPECT_FALSE(result.ok()) << "no error for: " << text;
  if (result.ok()) return "";
  EXPECT_TRUE(result.status().IsInvalidArgument()) << result.status();
  return result.status().message();
}

RecordBatch MustFinish(RecordBatchBuilder* builder) {
  auto batch = builder->Finish();
  EXPECT_TRUE(batch.ok()) << batch.status();
  return batch.ok() ? *std::move(batch) : RecordBatch();
}

std::unique_ptr<RecordBatchBuilder> MakeBatchBuilder(const SchemaPtr& schema) {
  auto builder = RecordBatchBuilder::Make(schema);
  EXPECT_TRUE(builder.ok()) << builder.status();
  return builder.ok() ? *std::move(builder) : nullptr;
}

SchemaPtr ScalarSchema() {
  return schema({field("b", boolean()), field("i8", int8()), field("i16", int16()),
                 field("i32", int32()), field("i64", int64()), field("u8", uint8()),
                 field("u16", uint16()), field("u32", uint32()), field("u64", uint64()),
                 field("f32", float32()), field("f64", float64()), field("s", utf8()),
                 field("ls", large_utf8()), field("bin", binary()), field("lbin", large_binary()),
                 field("ts", timestamp_us("UTC")), field("d", dictionary(int32(), utf8()))});
}

// ---------------------------------------------------------------------------------------
// Reading and writing each type.

TEST(JsonReadTest, ReadsEveryScalarType) {
  const SchemaPtr s = ScalarSchema();
  const RecordBatch batch = MustRead(
      s, R"({"b":true,"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807,)"
         R"("u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"f32":1.5,)"
         R"("f64":-2.25e-3,"s":"h\u00e9llo \"q\"\n","ls":"x","bin":"AAH/","lbin":"aGVsbG8=",)"
         R"("ts":"2024-05-01T12:34:56Z","d":"red"})"
         "\n{}\n"
         R"({"b":false,"d":"blue","i8":null,"ts":1714566896000001})");
  ASSERT_EQ(batch.num_rows(), 3);
  EXPECT_TRUE(batch.column(0).BoolValue(0));
  EXPECT_EQ(batch.column(1).Value<int8_t>(0), -128);
  EXPECT_EQ(batch.column(2).Value<int16_t>(0), 32767);
  EXPECT_EQ(batch.column(3).Value<int32_t>(0), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(batch.column(4).Value<int64_t>(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(batch.column(5).Value<uint8_t>(0), 255);
  EXPECT_EQ(batch.column(6).Value<uint16_t>(0), 65535);
  EXPECT_EQ(batch.column(7).Value<uint32_t>(0), 4294967295u);
  EXPECT_EQ(batch.column(8).Value<uint64_t>(0), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(batch.column(9).Value<float>(0), 1.5f);
  EXPECT_EQ(batch.column(10).Value<double>(0), -2.25e-3);
  EXPECT_EQ(batch.column(11).StringValue(0), "h\xC3\xA9llo \"q\"\n");
  EXPECT_EQ(batch.column(12).StringValue(0), "x");
  EXPECT_EQ(batch.column(13).StringValue(0), std::string("\x00\x01\xFF", 3));
  EXPECT_EQ(batch.column(14).StringValue(0), "hello");
  EXPECT_EQ(batch.column(15).Value<int64_t>(0), 1714566896000000);
  EXPECT_EQ(batch.column(16).ValueToString(0), "\"red\"");
  // Row 2 is all null; row 3 has a few values in another key order.
  for (int c = 0; c < batch.num_columns(); ++c) {
    EXPECT_TRUE(batch.column(c).IsNull(1)) << c;
  }
  EXPECT_FALSE(batch.column(0).BoolValue(2));
  EXPECT_TRUE(batch.column(1).IsNull(2));
  EXPECT_EQ(batch.column(15).Value<int64_t>(2), 1714566896000001);
  EXPECT_EQ(batch.column(16).ValueToString(2), "\"blue\"");
  EXPECT_TRUE(batch.column(11).IsNull(2));
}

TEST(JsonWriteTest, WritesEveryScalarType) {
  const SchemaPtr s = ScalarSchema();
  auto builder = MakeBatchBuilder(s);
  ASSERT_NE(builder, nullptr);
  builder->GetAs<BooleanBuilder>(0)->Append(true);
  builder->GetAs<Int8Builder>(1)->Append(-128);
  builder->GetAs<Int16Builder>(2)->Append(32767);
  builder->GetAs<Int32Builder>(3)->Append(std::numeric_limits<int32_t>::min());
  builder->GetAs<Int64Builder>(4)->Append(std::numeric_limits<int64_t>::min());
  builder->GetAs<UInt8Builder>(5)->Append(255);
  builder->GetAs<UInt16Builder>(6)->Append(65535);
  builder->GetAs<UInt32Builder>(7)->Append(4294967295u);
  builder->GetAs<UInt64Builder>(8)->Append(std::numeric_limits<uint64_t>::max());
  builder->GetAs<Float32Builder>(9)->Append(0.1f);
  builder->GetAs<Float64Builder>(10)->Append(1e20);
  ASSERT_TRUE(builder->GetAs<BinaryBuilder>(11)->Append("tab\t \"q\" \\ \x01 \xC3\xA9").ok());
  ASSERT_TRUE(builder->GetAs<LargeBinaryBuilder>(12)->Append("").ok());
  ASSERT_TRUE(builder->GetAs<BinaryBuilder>(13)->Append(std::string("\x00\x01\xFF", 3)).ok());
  ASSERT_TRUE(builder->GetAs<LargeBinaryBuilder>(14)->Append("hello").ok());
  builder->GetAs<TimestampBuilder>(15)->Append(1714566896500000);
  ASSERT_TRUE(builder->GetAs<DictionaryBuilder>(16)->Append("red").ok());
  for (int c = 0; c < s->num_fields(); ++c) builder->builder(c)->AppendNull();
  const RecordBatch batch = MustFinish(builder.get());

  const std::string expected =
      R"({"b":true,"i8":-128,"i16":32767,"i32":-2147483648,"i64":-9223372036854775808,)"
      R"("u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"f32":0.1,)"
      R"("f64":1e+20,"s":"tab\t \"q\" \\ \u0001 )"
      "\xC3\xA9"
      R"(","ls":"","bin":"AAH/","lbin":"aGVsbG8=","ts":"2024-05-01T12:34:56.500000Z",)"
      R"("d":"red"})"
      "\n"
      R"({"b":null,"i8":null,"i16":null,"i32":null,"i64":null,"u8":null,"u16":null,)"
      R"("u32":null,"u64":null,"f32":null,"f64":null,"s":null,"ls":null,"bin":null,)"
      R"("lbin":null,"ts":null,"d":null})"
      "\n";
  EXPECT_EQ(BatchToJsonLines(batch), expected);

  std::string appended = "prefix\n";
  ASSERT_TRUE(AppendRowsToJsonLines(batch, &appended).ok());
  EXPECT_EQ(appended, "prefix\n" + expected);

  // And it reads back to the same batch.
  auto back = RowsToBatch(s, expected);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->Equals(batch)) << back->ToString() << "\n" << batch.ToString();
}

TEST(JsonReadTest, IntegerExtremesAreExact) {
  const SchemaPtr s = schema({field("i", int64()), field("u", uint64())});
  const RecordBatch batch = MustRead(s,
                                     "{\"i\":-9223372036854775808,\"u\":0}\n"
                                     "{\"i\":9223372036854775807,\"u\":18446744073709551615}\n"
                                     "{\"i\":9007199254740993,\"u\":9007199254740993}\n"
                                     "{\"i\":-1.0e3,\"u\":1.8446744073709551615e19}\n");
  ASSERT_EQ(batch.num_rows(), 4);
  EXPECT_EQ(batch.column(0).Value<int64_t>(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(batch.column(0).Value<int64_t>(1), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(batch.column(1).Value<uint64_t>(1), std::numeric_limits<uint64_t>::max());
  // 2^53 + 1 is not a double; it must not pass through one.
  EXPECT_EQ(batch.column(0).Value<int64_t>(2), 9007199254740993);
  EXPECT_EQ(batch.column(1).Value<uint64_t>(2), 9007199254740993u);
  // Integral values written with a fraction or an exponent are exact too.
  EXPECT_EQ(batch.column(0).Value<int64_t>(3), -1000);
  EXPECT_EQ(batch.column(1).Value<uint64_t>(3), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(BatchToJsonLines(batch.Slice(0, 2)),
            "{\"i\":-9223372036854775808,\"u\":0}\n"
            "{\"i\":9223372036854775807,\"u\":18446744073709551615}\n");
}

TEST(JsonReadTest, IntegersRejectFractionsRangeAndStrings) {
  const SchemaPtr s = schema(
      {field("i8", int8()), field("i64", int64()), field("u64", uint64()), field("i32", int32())});
  EXPECT_EQ(ReadError(s, R"({"i8":128})"),
            "row 1, column 'i8': expected int8, found number 128 (out of range)");
  EXPECT_EQ(ReadError(s, R"({"i8":-129})"),
            "row 1, column 'i8': expected int8, found number -129 (out of range)");
  EXPECT_EQ(ReadError(s, R"({"i64":9223372036854775808})"),
            "row 1, column 'i64': expected int64, found number 9223372036854775808 (out of range)");
  EXPECT_EQ(
      ReadError(s, R"({"i64":-9223372036854775809})"),
      "row 1, column 'i64': expected int64, found number -9223372036854775809 (out of range)");
  EXPECT_EQ(
      ReadError(s, R"({"u64":18446744073709551616})"),
      "row 1, column 'u64': expected uint64, found number 18446744073709551616 (out of range)");
  EXPECT_EQ(ReadError(s, R"({"u64":-1})"),
            "row 1, column 'u64': expected uint64, found number -1 (out of range)");
  EXPECT_EQ(ReadError(s, R"({"u64":1e30})"),
            "row 1, column 'u64': expected uint64, found number 1e30 (out of range)");
  EXPECT_EQ(ReadError(s, R"({"i32":1.5})"),
            "row 1, column 'i32': expected int32, found number 1.5 (not an integer)");
  EXPECT_EQ(ReadError(s, R"({"i32":25e-1})"),
            "row 1, column 'i32': expected int32, found number 25e-1 (not an integer)");
  EXPECT_EQ(ReadError(s, R"({"i32":"7"})"),
            "row 1, column 'i32': expected int32, found string \"7\"");
  EXPECT_EQ(ReadError(s, R"({"i32":true})"),
            "row 1, column 'i32': expected int32, found boolean true");
  EXPECT_EQ(ReadError(s, R"({"i32":[1]})"), "row 1, column 'i32': expected int32, found array");

  JsonReadOptions lenient;
  lenient.strings_as_numbers = true;
  const RecordBatch batch =
      MustRead(s, R"({"i8":"-7","i64":"-9223372036854775808","u64":"1e3","i32":"20.0"})", lenient);
  EXPECT_EQ(batch.column(0).Value<int8_t>(0), -7);
  EXPECT_EQ(batch.column(1).Value<int64_t>(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(batch.column(2).Value<uint64_t>(0), 1000u);
  EXPECT_EQ(batch.column(3).Value<int32_t>(0), 20);
  EXPECT_EQ(ReadError(s, R"({"i8":"7x"})", lenient),
            "row 1, column 'i8': expected int8, found string \"7x\" (not a number)");
  EXPECT_EQ(ReadError(s, R"({"i8":" 7"})", lenient),
            "row 1, column 'i8': expected int8, found string \" 7\" (not a number)");
  EXPECT_EQ(ReadError(s, R"({"i8":"300"})", lenient),
            "row 1, column 'i8': expected int8, found string \"300\" (out of range)");
}

TEST(JsonReadTest, FloatsIncludingSpecialValues) {
  const SchemaPtr s = schema({field("f", float64()), field("g", float32())});
  const RecordBatch batch = MustRead(s,
                                     "{\"f\":\"NaN\",\"g\":\"Infinity\"}\n"
                                     "{\"f\":\"-Infinity\",\"g\":\"NaN\"}\n"
                                     "{\"f\":-0.0,\"g\":16777217}\n"
                                     "{\"f\":0.1,\"g\":0.1}\n"
                                     "{\"f\":18446744073709551616,\"g\":1e-50}\n");
  ASSERT_EQ(batch.num_rows(), 5);
  EXPECT_TRUE(std::isnan(batch.column(0).Value<double>(0)));
  EXPECT_EQ(batch.column(1).Value<float>(0), std::numeric_limits<float>::infinity());
  EXPECT_EQ(batch.column(0).Value<double>(1), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(batch.column(1).Value<float>(1)));
  EXPECT_EQ(batch.column(0).Value<double>(2), 0.0);
  EXPECT_TRUE(std::signbit(batch.column(0).Value<double>(2)));
  EXPECT_EQ(batch.column(1).Value<float>(2), 16777216.0f);
  EXPECT_EQ(batch.column(0).Value<double>(3), 0.1);
  EXPECT_EQ(batch.column(1).Value<float>(3), 0.1f);
  EXPECT_EQ(batch.column(0).Value<double>(4), 18446744073709551616.0);
  EXPECT_EQ(batch.column(1).Value<float>(4), 0.0f);

  EXPECT_EQ(BatchToJsonLines(batch),
            "{\"f\":\"NaN\",\"g\":\"Infinity\"}\n"
            "{\"f\":\"-Infinity\",\"g\":\"NaN\"}\n"
            "{\"f\":-0.0,\"g\":16777216}\n"
            "{\"f\":0.1,\"g\":0.1}\n"
            "{\"f\":18446744073709551616,\"g\":0}\n");

  EXPECT_EQ(ReadError(s, R"({"g":1e39})"),
            "row 1, column 'g': expected float32, found number 1e39 (out of range)");
  EXPECT_EQ(ReadError(s, "\n\n{\"f\":\"abc\"}"),
            "row 3, column 'f': expected float64, found string \"abc\"");
  EXPECT_EQ(ReadError(s, R"({"f":"nan"})"),
            "row 1, column 'f': expected float64, found string \"nan\"");
  EXPECT_EQ(ReadError(s, R"({"f":false})"),
            "row 1, column 'f': expected float64, found boolean false");
  JsonReadOptions lenient;
  lenient.strings_as_numbers = true;
  const RecordBatch strings = MustRead(s, R"({"f":"2.5e3","g":"-0.25"})", lenient);
  EXPECT_EQ(strings.column(0).Value<double>(0), 2500.0);
  EXPECT_EQ(strings.column(1).Value<float>(0), -0.25f);
}

TEST(JsonReadTest, FloatUnderflowAndOverflow) {
  const SchemaPtr s = schema({field("f", float64()), field("g", float32())});
  const RecordBatch batch = MustRead(s, R"({"f":1e-400,"g":-1e-400})"
                                        "\n"
                                        R"({"f":1e-310,"g":1e-40})"
                                        "\n"
                                        R"({"f":-0.0e5,"g":3.4028235e38})");
  ASSERT_EQ(batch.num_rows(), 3);
  EXPECT_EQ(batch.column(0).Value<double>(0), 0.0);
  EXPECT_EQ(batch.column(1).Value<float>(0), 0.0f);
  EXPECT_TRUE(std::signbit(batch.column(1).Value<float>(0)));
  EXPECT_EQ(batch.column(0).Value<double>(1), 1e-310);  // subnormal, kept
  EXPECT_EQ(batch.column(1).Value<float>(1), 1e-40f);
  EXPECT_TRUE(std::signbit(batch.column(0).Value<double>(2)));
  EXPECT_EQ(batch.column(1).Value<float>(2), std::numeric_limits<float>::max());
  EXPECT_EQ(ReadError(s, R"({"f":-1.8e308})"),
            "row 1: malformed JSON at column 13: number overflow parsing '-1.8e308'");
  JsonReadOptions lenient;
  lenient.strings_as_numbers = true;
  EXPECT_EQ(ReadError(s, R"({"f":"1e999"})", lenient),
            "row 1, column 'f': expected float64, found string \"1e999\" (out of range)");
  EXPECT_EQ(ReadError(s, R"({"g":"1e39"})", lenient),
            "row 1, column 'g': expected float32, found string \"1e39\" (out of range)");
}

TEST(JsonReadTest, DeeplyNestedValuesDoNotOverflowTheStack) {
  const SchemaPtr s = schema({field("a", int32()), field("l", list(int32()))});
  const int depth = 200000;
  const std::string nested = std::string(depth, '[') + std::string(depth, ']');
  JsonReadOptions options;
  options.ignore_unknown_fields = true;
  const RecordBatch batch = MustRead(s, "{\"skip\":" + nested + ",\"a\":1}", options);
  ASSERT_EQ(batch.num_rows(), 1);
  EXPECT_EQ(batch.column(0).Value<int32_t>(0), 1);
  EXPECT_EQ(ReadError(s, "{\"l\":" + nested + "}"),
            "row 1, column 'l[0]': expected int32, found array");
  EXPECT_THAT(ReadError(s, "{\"skip\":" + std::string(depth, '[') + "}", options),
              HasSubstr("row 1: malformed JSON"));
}

TEST(JsonReadTest, StringsAndBinary) {
  const SchemaPtr s = schema({field("s", utf8()), field("b", binary())});
  const RecordBatch batch = MustRead(s, R"({"s":"\ud83d\ude00 \u0000 \/ \\","b":""})"
                                        "\n"
                                        R"({"s":"","b":"/w=="})");
  EXPECT_EQ(batch.column(0).StringValue(0), std::string("\xF0\x9F\x98\x80 \0 / \\", 10));
  EXPECT_EQ(batch.column(1).StringValue(0), "");
  EXPECT_EQ(batch.column(1).StringValue(1), "\xFF");
  EXPECT_EQ(
      BatchToJsonLines(batch),
      "{\"s\":\"\xF0\x9F\x98\x80 \\u0000 / \\\\\",\"b\":\"\"}\n{\"s\":\"\",\"b\":\"/w==\"}\n");

  EXPECT_EQ(ReadError(s, R"({"s":12})"), "row 1, column 's': expected utf8, found number 12");
  EXPECT_EQ(ReadError(s, R"({"s":{}})"), "row 1, column 's': expected utf8, found object");
  EXPECT_THAT(ReadError(s, R"({"b":"not base64!"})"),
              HasSubstr("row 1, column 'b': expected binary, found string \"not base64!\" "
                        "(not base64: "));
  // Invalid UTF-8 inside a JSON string is malformed JSON.
  EXPECT_THAT(ReadError(s, "{\"s\":\"\xC3\x28\"}"), HasSubstr("row 1: malformed JSON at column"));
  EXPECT_THAT(ReadError(s, "{\"s\":\"\xED\xA0\x80\"}"), HasSubstr("row 1: malformed JSON"));
  EXPECT_THAT(ReadError(s, R"({"s":"\ud800"})"), HasSubstr("row 1: malformed JSON"));
}

TEST(JsonReadTest, LongStringsAreCutInMessages) {
  const SchemaPtr s = schema({field("n", int32())});
  const std::string value(100, 'x');
  EXPECT_EQ(ReadError(s, "{\"n\":\"" + value + "\"}"),
            "row 1, column 'n': expected int32, found string \"" + std::string(40, 'x') + "\"...");
}

TEST(JsonReadTest, TimestampsFromMicrosAndRfc3339) {
  const SchemaPtr s = schema({field("ts", timestamp_us())});
  const RecordBatch batch = MustRead(s,
                                     "{\"ts\":1714566896000000}\n"
                                     "{\"ts\":\"2024-05-01T12:34:56Z\"}\n"
                                     "{\"ts\":\"2024-05-01T14:34:56+02:00\"}\n"
                                     "{\"ts\":\"2024-05-01T12:34:56.25-00:30\"}\n"
                                     "{\"ts\":\"2024-05-01\"}\n"
                                     "{\"ts\":-1}\n"
                                     "{\"ts\":1.714566896000001e15}\n");
  ASSERT_EQ(batch.num_rows(), 7);
  const Array& ts = batch.column(0);
  EXPECT_EQ(ts.Value<int64_t>(0), 1714566896000000);
  EXPECT_EQ(ts.Value<int64_t>(1), 1714566896000000);
  EXPECT_EQ(ts.Value<int64_t>(2), 1714566896000000);
  EXPECT_EQ(ts.Value<int64_t>(3), 1714566896000000 + 1800000000 + 250000);
  EXPECT_EQ(ts.Value<int64_t>(4), 1714521600000000);
  EXPECT_EQ(ts.Value<int64_t>(5), -1);
  EXPECT_EQ(ts.Value<int64_t>(6), 1714566896000000 + 1);

  EXPECT_EQ(BatchToJsonLines(batch.Slice(3, 3)),
            "{\"ts\":\"2024-05-01T13:04:56.250000Z\"}\n"
            "{\"ts\":\"2024-05-01T00:00:00.000000Z\"}\n"
            "{\"ts\":\"1969-12-31T23:59:59.999999Z\"}\n");
  JsonWriteOptions micros;
  micros.timestamps_as_micros = true;
  std::string out;
  ASSERT_TRUE(AppendRowsToJsonLines(batch.Slice(4, 2), &out, micros).ok());
  EXPECT_EQ(out, "{\"ts\":1714521600000000}\n{\"ts\":-1}\n");

  EXPECT_THAT(
      ReadError(s, R"({"ts":"yesterday"})"),
      HasSubstr("row 1, column 'ts': expected timestamp[us], found string \"yesterday\" ("));
  EXPECT_EQ(ReadError(s, R"({"ts":1.5})"),
            "row 1, column 'ts': expected timestamp[us], found number 1.5 (not an integer)");
  EXPECT_EQ(ReadError(s, R"({"ts":true})"),
            "row 1, column 'ts': expected timestamp[us], found boolean true");
}

TEST(JsonReadTest, Dictionaries) {
  const SchemaPtr s =
      schema({field("d", dictionary(int8(), utf8())), field("bd", dictionary(int32(), binary()))});
  const RecordBatch batch =
      MustRead(s, "{\"d\":\"a\",\"bd\":\"AAE=\"}\n{\"d\":\"b\"}\n{\"d\":\"a\",\"bd\":\"AAE=\"}\n");
  ASSERT_EQ(batch.num_rows(), 3);
  EXPECT_EQ(batch.column(0).dictionary().length(), 2);
  EXPECT_EQ(batch.column(0).DictionaryIndex(2), batch.column(0).DictionaryIndex(0));
  EXPECT_TRUE(batch.column(1).IsNull(1));
  EXPECT_EQ(BatchToJsonLines(batch),
            "{\"d\":\"a\",\"bd\":\"AAE=\"}\n{\"d\":\"b\",\"bd\":null}\n"
            "{\"d\":\"a\",\"bd\":\"AAE=\"}\n");
  EXPECT_EQ(ReadError(s, R"({"d":1})"),
            "row 1, column 'd': expected dictionary<values=utf8, indices=int8>, found number 1");
}

// ---------------------------------------------------------------------------------------
// Nested types.

SchemaPtr NestedSchema() {
  const DataTypePtr step = struct_({field("action", utf8(), /*nullable=*/false),
                                    field("reward", float64()), field("tags", list(utf8()))});
  return schema({field("id", int64(), /*nullable=*/false), field("steps", list(step)),
                 field("vec", fixed_size_list(float32(), 3)), field("big", large_list(int16())),
                 field("meta", struct_({field("source", utf8()), field("tags", list(utf8())),
                                        field("at", timestamp_us())}))});
}

TEST(JsonReadTest, NestedListsAndStructs) {
  const SchemaPtr s = NestedSchema();
  const std::string text =
      R"({"id":1,"steps":[{"action":"go","reward":0.5,"tags":["a","b"]},{"action":"stop"}],)"
      R"("vec":[1,2.5,null],"big":[],"meta":{"source":"x","tags":[],"at":"2024-05-01"}})"
      "\n"
      R"({"id":2,"steps":[],"vec":null,"big":[1,null,-3],"meta":null})"
      "\n"
      R"({"id":3,"steps":null,"meta":{"tags":null}})"
      "\n";
  const RecordBatch batch = MustRead(s, text);
  ASSERT_EQ(batch.num_rows(), 3);
  const std::string expected =
      R"({"id":1,"steps":[{"action":"go","reward":0.5,"tags":["a","b"]},)"
      R"({"action":"stop","reward":null,"tags":null}],"vec":[1,2.5,null],"big":[],)"
      R"("meta":{"source":"x","tags":[],"at":"2024-05-01T00:00:00.000000Z"}})"
      "\n"
      R"({"id":2,"steps":[],"vec":null,"big":[1,null,-3],"meta":null})"
      "\n"
      R"({"id":3,"steps":null,"vec":null,"big":null,"meta":{"source":null,"tags":null,)"
      R"("at":null}})"
      "\n";
  EXPECT_EQ(BatchToJsonLines(batch), expected);
  // Slices of nested columns write only their rows.
  EXPECT_EQ(BatchToJsonLines(batch.Slice(1, 1)),
            "{\"id\":2,\"steps\":[],\"vec\":null,\"big\":[1,null,-3],\"meta\":null}\n");
  EXPECT_EQ(BatchToJsonLines(batch.Slice(2, 1)), expected.substr(expected.find("{\"id\":3")));
  auto back = RowsToBatch(s, expected);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->Equals(batch));
}

TEST(JsonReadTest, NestedErrorsNameThePath) {
  const SchemaPtr s = NestedSchema();
  EXPECT_EQ(ReadError(s, R"({"id":1,"meta":{"tags":["a","b",5]}})"),
            "row 1, column 'meta.tags[2]': expected utf8, found number 5");
  EXPECT_EQ(ReadError(s, R"({"id":1,"steps":[{"action":"a"},{"action":"b","tags":[1]}]})"),
            "row 1, column 'steps[1].tags[0]': expected utf8, found number 1");
  EXPECT_EQ(ReadError(s, R"({"id":1,"steps":[{"action":"a"},{"reward":1}]})"),
            "row 1, column 'steps[1].action': expected utf8, key is missing "
            "(column is not nullable)");
  EXPECT_EQ(ReadError(s, R"({"id":1,"steps":[{"action":null}]})"),
            "row 1, column 'steps[0].action': expected utf8, found null (column is not nullable)");
  EXPECT_EQ(ReadError(s, R"({"id":1,"vec":[1,2]})"),
            "row 1, column 'vec': expected fixed_size_list<item: float32>[3], found array of 2 "
            "elements");
  EXPECT_EQ(ReadError(s, R"({"id":1,"vec":[1,2,3,4]})"),
            "row 1, column 'vec': expected fixed_size_list<item: float32>[3], found array of 4 "
            "elements");
  EXPECT_EQ(ReadError(s, R"({"id":1,"meta":"x"})"),
            "row 1, column 'meta': expected struct<source: utf8, tags: list<item: utf8>, at: "
            "timestamp[us]>, found string \"x\"");
  EXPECT_EQ(ReadError(s, R"({"id":1,"big":{"a":1}})"),
            "row 1, column 'big': expected large_list<item: int16>, found object");
  EXPECT_EQ(ReadError(s, R"({"id":1,"meta":{"source":"a","extra":1}})"),
            "row 1: unknown column 'meta.extra' (not in the schema)");
  EXPECT_EQ(ReadError(s, R"({"id":1,"meta":{"source":"a","source":"b"}})"),
            "row 1, column 'meta.source': duplicate key");
  const SchemaPtr strict_items = schema({field("v", list(field("item", int32(), false)))});
  EXPECT_EQ(ReadError(strict_items, R"({"v":[1,null]})"),
            "row 1, column 'v[1]': expected int32, found null (column is not nullable)");
}

// ---------------------------------------------------------------------------------------
// Nulls, keys and malformed input.

TEST(JsonReadTest, MissingAndNullValues) {
  const SchemaPtr s = schema({field("id", int64(), /*nullable=*/false), field("name", utf8())});
  const RecordBatch batch =
      MustRead(s, "{\"id\":1}\n{\"id\":2,\"name\":null}\n{\"name\":\"x\",\"id\":3}");
  ASSERT_EQ(batch.num_rows(), 3);
  EXPECT_EQ(batch.column(1).null_count(), 2);
  EXPECT_EQ(batch.column(1).StringValue(2), "x");
  EXPECT_EQ(ReadError(s, "{\"id\":1}\n{\"name\":\"x\"}"),
            "row 2, column 'id': expected int64, key is missing (column is not nullable)");
  EXPECT_EQ(ReadError(s, "{\"id\":null}"),
            "row 1, column 'id': expected int64, found null (column is not nullable)");
}

TEST(JsonReadTest, UnknownKeysAreErrorsUnlessIgnored) {
  const SchemaPtr s = schema({field("a", int32())});
  EXPECT_EQ(ReadError(s, R"({"a":1,"b":2})"), "row 1: unknown column 'b' (not in the schema)");
  JsonReadOptions options;
  options.ignore_unknown_fields = true;
  const RecordBatch batch = MustRead(
      s, R"({"x":{"a":"nested","y":[1,{"z":[]}]},"a":1,"b":[[],{}],"c":null,"d":"s"})", options);
  ASSERT_EQ(batch.num_rows(), 1);
  EXPECT_EQ(batch.column(0).Value<int32_t>(0), 1);
  // A skipped value must still be well-formed.
  EXPECT_THAT(ReadError(s, R"({"x":[1,}],"a":1})", options), HasSubstr("row 1: malformed JSON"));
}

TEST(JsonReadTest, DuplicateKeysAreErrors) {
  const SchemaPtr s = schema({field("a", int32()), field("b", int32())});
  EXPECT_EQ(ReadError(s, R"({"a":1,"b":2,"a":3})"), "row 1, column 'a': duplicate key");
}

TEST(JsonReadTest, RowsMustBeObjects) {
  const SchemaPtr s = schema({field("a", int32())});
  EXPECT_EQ(ReadError(s, "{\"a\":1}\n[1]"), "row 2: expected a JSON object, found array");
  EXPECT_EQ(ReadError(s, "5"), "row 1: expected a JSON object, found number 5");
  EXPECT_EQ(ReadError(s, "null"), "row 1: expected a JSON object, found null");
  EXPECT_EQ(ReadError(s, "\"a\""), "row 1: expected a JSON object, found string \"a\"");
}

TEST(JsonReadTest, MalformedLinesNameTheLine) {
  const SchemaPtr s = schema({field("a", int32())});
  // Truncated object.
  EXPECT_EQ(ReadError(s, "{\"a\":1}\n{\"a\":2"),
            "row 2: malformed JSON at column 7: syntax error while parsing object - unexpected "
            "end of input; expected '}'");
  // Trailing garbage.
  EXPECT_EQ(ReadError(s, "{\"a\":1}\n\n{\"a\":2} x"),
            "row 3: malformed JSON at column 9: syntax error while parsing value - invalid "
            "literal; last read: '2} x'; expected end of input");
  EXPECT_EQ(ReadError(s, "{\"a\":1}{\"a\":2}"),
            "row 1: malformed JSON at column 8: syntax error while parsing value - unexpected "
            "'{'; expected end of input");
  EXPECT_THAT(ReadError(s, "{\"a\":01}"), HasSubstr("row 1: malformed JSON at column"));
  EXPECT_THAT(ReadError(s, "{a:1}"), HasSubstr("row 1: malformed JSON at column 2"));
  EXPECT_THAT(ReadError(s, "{\"a\":1e400}"),
              HasSubstr("row 1: malformed JSON at column 10: number overflow"));
}

TEST(JsonReadTest, BlankLinesAndCrlf) {
  const SchemaPtr s = schema({field("a", int32())});
  const RecordBatch batch = MustRead(s, "\n  \n{\"a\":1}\r\n\t\r\n{\"a\":2}\r\n\n");
  ASSERT_EQ(batch.num_rows(), 2);
  EXPECT_EQ(batch.column(0).Value<int32_t>(1), 2);
  EXPECT_EQ(MustRead(s, "").num_rows(), 0);
  EXPECT_EQ(ReadError(s, "\n\n\n{\"a\":\"x\"}\r\n"),
            "row 4, column 'a': expected int32, found string \"x\"");
}

TEST(JsonReadTest, EmptySchema) {
  const SchemaPtr s = schema({});
  const RecordBatch batch = MustRead(s, "{}\n{}\n");
  EXPECT_EQ(batch.num_rows(), 2);
  EXPECT_EQ(BatchToJsonLines(batch), "{}\n{}\n");
}

TEST(JsonReadTest, ArrayOfRows) {
  const SchemaPtr s = schema({field("a", int32()), field("b", list(utf8()))});
  auto batch = ArrayOfRowsToBatch(s, " [ {\"a\":1,\"b\":[\"x\"]},\n {\"a\":2}, {} ] ");
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(BatchToJsonLines(*batch),
            "{\"a\":1,\"b\":[\"x\"]}\n{\"a\":2,\"b\":null}\n{\"a\":null,\"b\":null}\n");
  auto empty = ArrayOfRowsToBatch(s, "[]");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->num_rows(), 0);

  const auto error = [&](std::string_view text) {
    auto result = ArrayOfRowsToBatch(s, text);
    EXPECT_TRUE(result.status().IsInvalidArgument()) << result.status();
    return result.status().message();
  };
  EXPECT_EQ(error("[{\"a\":1},{\"a\":\"x\"}]"),
            "row 2, column 'a': expected int32, found string \"x\"");
  EXPECT_EQ(error("[{\"a\":1},[]]"), "row 2: expected a JSON object, found array");
  EXPECT_EQ(error("[{\"a\":1},3]"), "row 2: expected a JSON object, found number 3");
  EXPECT_EQ(error("{\"a\":1}"), "expected a JSON array of objects, found object");
  EXPECT_EQ(error("[{\"a\":1},\n {\"a\":2}"),
            "malformed JSON at line 2, column 9: syntax error while parsing array - unexpected "
            "end of input; expected ']'");
  EXPECT_THAT(error("[{\"a\":1}] x"), HasSubstr("malformed JSON at line 1, column 11"));
}

// ---------------------------------------------------------------------------------------
// Writer specifics.

TEST(JsonReadTest, BinaryAsByteArrays) {
  const SchemaPtr s = schema({field("b", binary()), field("lb", large_binary())});
  // Off (the default): arrays are type errors.
  EXPECT_EQ(ReadError(s, R"({"b": [1, 2]})"), "row 1, column 'b': expected binary, found array");
  JsonReadOptions options;
  options.binary_as_byte_arrays = true;
  const RecordBatch batch =
      MustRead(s, "{\"b\": [1, 2, 3], \"lb\": [0, 255]}\n{\"b\": [], \"lb\": \"AQID\"}\n", options);
  ASSERT_EQ(batch.num_rows(), 2);
  EXPECT_EQ(batch.column(0).StringValue(0), std::string("\x01\x02\x03"));
  EXPECT_EQ(batch.column(1).StringValue(0), std::string("\x00\xFF", 2));
  EXPECT_EQ(batch.column(0).StringValue(1), "");
  EXPECT_EQ(batch.column(1).StringValue(1), "\x01\x02\x03");
  EXPECT_EQ(ReadError(s, R"({"b": [1, 256]})", options),
            "row 1, column 'b[1]': expected a byte (an integer 0..255) of binary, found number "
            "256");
  EXPECT_EQ(ReadError(s, R"({"b": [-1]})", options),
            "row 1, column 'b[0]': expected a byte (an integer 0..255) of binary, found number -1");
  EXPECT_EQ(ReadError(s, R"({"b": [1, 2.5]})", options),
            "row 1, column 'b[1]': expected a byte (an integer 0..255) of binary, found number "
            "2.5");
  EXPECT_EQ(ReadError(s, R"({"lb": [1, "x"]})", options),
            "row 1, column 'lb[1]': expected a byte (an integer 0..255) of large_binary, found "
            "string \"x\"");
  EXPECT_EQ(ReadError(s, R"({"b": [[1]]})", options),
            "row 1, column 'b[0]': expected a byte (an integer 0..255) of binary, found array");
  EXPECT_EQ(ReadError(s, R"({"b": [null]})", options),
            "row 1, column 'b[0]': expected a byte (an integer 0..255) of binary, found null");
}

TEST(JsonReadTest, DescribeValueErrorGetsEachKindOfError) {
  const SchemaPtr s = schema({field("id", utf8(), /*nullable=*/false), field("n", int32()),
                              field("v", fixed_size_list(float32(), 2))});
  std::vector<JsonValueError> seen;
  JsonReadOptions options;
  options.describe_value_error = [&seen](const JsonValueError& e) {
    seen.push_back(e);
    return "custom: " + e.message;
  };
  // Rows before the failing one count in row_index; blank lines do not.
  EXPECT_EQ(ReadError(s, "{\"id\": \"a\"}\n\n{\"id\": \"b\", \"x\": 1}", options),
            "custom: row 3: unknown column 'x' (not in the schema)");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, JsonValueError::Kind::kUnknownKey);
  EXPECT_EQ(seen[0].row, 3);
  EXPECT_EQ(seen[0].row_index, 1);
  EXPECT_EQ(seen[0].column, "x");
  EXPECT_EQ(seen[0].field, nullptr);

  seen.clear();
  EXPECT_EQ(ReadError(s, R"({"n": 1})", options),
            "custom: row 1, column 'id': expected utf8, key is missing (column is not nullable)");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, JsonValueError::Kind::kMissing);
  EXPECT_EQ(seen[0].row_index, 0);
  ASSERT_NE(seen[0].field, nullptr);
  EXPECT_EQ(seen[0].field->name(), "id");

  seen.clear();
  ReadError(s, R"({"id": null})", options);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, JsonValueError::Kind::kNull);
  EXPECT_EQ(seen[0].column, "id");

  seen.clear();
  ReadError(s, R"({"id": "a", "n": 3000000000})", options);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, JsonValueError::Kind::kWrongType);
  EXPECT_EQ(seen[0].column, "n");
  EXPECT_EQ(seen[0].found, "number 3000000000");
  EXPECT_EQ(seen[0].detail, "out of range");
  EXPECT_TRUE(seen[0].field->type()->Equals(*int32()));

  seen.clear();
  ReadError(s, R"({"id": "a", "n": "7"})", options);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].found, "string \"7\"");
  EXPECT_EQ(seen[0].detail, "");

  seen.clear();
  ReadError(s, R"({"id": "a", "v": [1, 2, 3]})", options);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, JsonValueError::Kind::kWrongLength);
  EXPECT_EQ(seen[0].column, "v");
  EXPECT_EQ(seen[0].length, 3);
  EXPECT_EQ(seen[0].field->type()->list_size(), 2);

  seen.clear();
  ReadError(s, R"({"id": "a", "id": "b"})", options);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, JsonValueError::Kind::kDuplicateKey);

  // Malformed JSON is not a value error.
  seen.clear();
  EXPECT_THAT(ReadError(s, "{\"id\": ", options), HasSubstr("malformed JSON"));
  EXPECT_TRUE(seen.empty());
}

TEST(JsonWriteTest, OmitNullsAndNonFiniteAsNull) {
  const SchemaPtr s = schema({field("a", int32()), field("f", float64()),
                              field("l", list(float32())), field("g", float32())});
  const RecordBatch batch =
      MustRead(s, "{\"a\":1,\"f\":\"NaN\",\"l\":[1,null,\"Infinity\"]}\n{\"g\":\"-Infinity\"}\n");
  JsonWriteOptions options;
  options.omit_nulls = true;
  std::string out;
  ASSERT_TRUE(AppendRowsToJsonLines(batch, &out, options).ok());
  EXPECT_EQ(out, "{\"a\":1,\"f\":\"NaN\",\"l\":[1,null,\"Infinity\"]}\n{\"g\":\"-Infinity\"}\n");
  options.non_finite_as_null = true;
  out.clear();
  ASSERT_TRUE(AppendRowsToJsonLines(batch, &out, options).ok());
  EXPECT_EQ(out, "{\"a\":1,\"f\":null,\"l\":[1,null,null]}\n{\"g\":null}\n");
  options.omit_nulls = false;
  out.clear();
  ASSERT_TRUE(AppendRowsToJsonLines(batch, &out, options).ok());
  EXPECT_EQ(out,
            "{\"a\":1,\"f\":null,\"l\":[1,null,null],\"g\":null}\n"
            "{\"a\":null,\"f\":null,\"l\":null,\"g\":null}\n");
}

TEST(JsonWriteTest, InvalidUtf8IsAnErrorOrReplaced) {
  ArrayData data;
  data.type = utf8();
  data.length = 2;
  const std::vector<int32_t> offsets = {0, 2, 5};
  data.buffers = {Buffer(), Buffer::Copy(offsets.data(), sizeof(int32_t) * offsets.size()),
                  Buffer::Copy(std::string_view("ok\xC3\x28!"))};
  auto array = Array::Make(data);
  ASSERT_TRUE(array.ok()) << array.status();
  const SchemaPtr s = schema({field("s", utf8())});
  auto batch = RecordBatch::Make(s, 2, {*array});
  ASSERT_TRUE(batch.ok()) << batch.status();

  std::string out = "keep";
  const Status status = AppendRowsToJsonLines(*batch, &out);
  EXPECT_EQ(status, Status::InvalidArgument("row 2, column 's': invalid UTF-8 in a string value"));
  EXPECT_EQ(out, "keep");
  EXPECT_EQ(BatchToJsonLines(*batch), "{\"s\":\"ok\"}\n{\"s\":\"\xEF\xBF\xBD(!\"}\n");

  // Inside a nested value the error names the path.
  const std::vector<int32_t> list_offsets = {0, 2};
  auto nested = Array::Make(ArrayData{list(utf8()),
                                      1,
                                      0,
                                      0,
                                      {Buffer(), Buffer::Copy(list_offsets.data(), 8)},
                                      {array->data()},
                                      nullptr});
  ASSERT_TRUE(nested.ok()) << nested.status();
  auto nested_batch = RecordBatch::Make(schema({field("l", list(utf8()))}), 1, {*nested});
  ASSERT_TRUE(nested_batch.ok()) << nested_batch.status();
  EXPECT_EQ(AppendRowsToJsonLines(*nested_batch, &out).message(),
            "row 1, column 'l[1]': invalid UTF-8 in a string value");
}

TEST(JsonWriteTest, SlicedBatchWritesOnlyItsRows) {
  const SchemaPtr s = schema({field("a", int32()), field("m", struct_({field("x", utf8())}))});
  const RecordBatch batch = MustRead(
      s, "{\"a\":1,\"m\":{\"x\":\"one\"}}\n{\"a\":2}\n{\"a\":3,\"m\":{\"x\":\"three\"}}\n");
  EXPECT_EQ(BatchToJsonLines(batch.Slice(1, 2)),
            "{\"a\":2,\"m\":null}\n{\"a\":3,\"m\":{\"x\":\"three\"}}\n");
  EXPECT_EQ(BatchToJsonLines(batch.Slice(2, 1)), "{\"a\":3,\"m\":{\"x\":\"three\"}}\n");
  EXPECT_EQ(BatchToJsonLines(batch.Slice(3, 0)), "");
}

TEST(JsonWriteTest, KeysAreEscaped) {
  const SchemaPtr s = schema({field("we\"ird\n", int32())});
  const RecordBatch batch = MustRead(s, "{\"we\\\"ird\\n\":1}");
  EXPECT_EQ(BatchToJsonLines(batch), "{\"we\\\"ird\\n\":1}\n");
}

// ---------------------------------------------------------------------------------------
// Streaming reader.

// A source that hands out at most `max_chunk` bytes per call.
JsonLinesReader::ChunkSource StringSource(std::string text, size_t max_chunk) {
  auto state = std::make_shared<std::pair<std::string, size_t>>(std::move(text), 0);
  return [state, max_chunk](char* dst, size_t capacity) -> Result<size_t> {
    const size_t n = std::min({capacity, max_chunk, state->first.size() - state->second});
    std::memcpy(dst, state->first.data() + state->second, n);
    state->second += n;
    return n;
  };
}

std::string NumberedLines(int n) {
  std::string text;
  for (int i = 0; i < n; ++i)
    text += "{\"i\":" + std::to_string(i) + ",\"s\":\"v" + std::to_string(i) + "\"}\n";
  return text;
}

TEST(JsonLinesReaderTest, SplitsIntoBatchesOfN) {
  const SchemaPtr s = schema({field("i", int64()), field("s", utf8())});
  const std::string text = NumberedLines(10) + "\n";
  std::istringstream input(text);
  JsonReadOptions options;
  options.batch_rows = 3;
  auto reader = JsonLinesReader::Make(s, &input, options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<int64_t> sizes;
  std::vector<RecordBatch> batches;
  while (true) {
    auto next = (*reader)->Next();
    ASSERT_TRUE(next.ok()) << next.status();
    if (!next->has_value()) break;
    sizes.push_back((*next)->num_rows());
    batches.push_back(**next);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 3, 1}));
  EXPECT_EQ((*reader)->lines_read(), 11);
  auto all = ConcatenateBatches(batches);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->Equals(MustRead(s, text)));
  // At the end it keeps saying so.
  auto again = (*reader)->Next();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());
}

TEST(JsonLinesReaderTest, TinyChunksAndNoFinalNewline) {
  const SchemaPtr s = schema({field("i", int64()), field("s", utf8())});
  std::string text = NumberedLines(25);
  text.pop_back();  // no final '\n'
  for (size_t chunk : {1, 2, 7, 64, 100000}) {
    SCOPED_TRACE(chunk);
    JsonReadOptions options;
    options.batch_rows = 4;
    auto reader = JsonLinesReader::Make(s, StringSource(text, chunk), options);
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::vector<RecordBatch> batches;
    while (true) {
      auto next = (*reader)->Next();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      EXPECT_LE((*next)->num_rows(), 4);
      batches.push_back(**next);
    }
    EXPECT_EQ(batches.size(), 7u);
    auto all = ConcatenateBatches(batches);
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_TRUE(all->Equals(MustRead(s, text)));
  }
}

TEST(JsonLinesReaderTest, ErrorsNameTheLineAndAreSticky) {
  const SchemaPtr s = schema({field("i", int64()), field("s", utf8())});
  const std::string text = NumberedLines(5) + "{\"i\":\"bad\"}\n" + NumberedLines(3);
  JsonReadOptions options;
  options.batch_rows = 4;
  auto reader = JsonLinesReader::Make(s, StringSource(text, 5), options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto first = (*reader)->Next();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->num_rows(), 4);
  auto second = (*reader)->Next();
  EXPECT_EQ(second.status(),
            Status::InvalidArgument("row 6, column 'i': expected int64, found string \"bad\""));
  EXPECT_EQ((*reader)->Next().status(), second.status());

  std::istringstream truncated("{\"i\":1}\n{\"i\":");
  auto reader2 = JsonLinesReader::Make(s, &truncated);
  ASSERT_TRUE(reader2.ok());
  EXPECT_THAT((*reader2)->Next().status().message(), HasSubstr("row 2: malformed JSON"));
}

TEST(JsonLinesReaderTest, SourceErrorsAndBadOptions) {
  const SchemaPtr s = schema({field("i", int64())});
  auto failing = JsonLinesReader::Make(
      s, [](char*, size_t) -> Result<size_t> { return Status::IOError("disk on fire"); });
  ASSERT_TRUE(failing.ok());
  EXPECT_EQ((*failing)->Next().status(), Status::IOError("disk on fire"));
  JsonReadOptions zero;
  zero.batch_rows = 0;
  std::istringstream input("");
  EXPECT_TRUE(JsonLinesReader::Make(s, &input, zero).status().IsInvalidArgument());
  EXPECT_TRUE(JsonLinesReader::Make(s, nullptr).status().IsInvalidArgument());
}

// ---------------------------------------------------------------------------------------
// Random round trips.

const char* const kPieces[] = {
    "a",    "Z",    " ", "\"",   "\\",       "\n",           "\t",
    "\x01", "\x1F", "/", "\x7F", "\xC3\xA9", "\xE6\xBC\xA2", "\xF0\x9F\x98\x80",
    "{",    "0"};

void AppendRandom(ArrayBuilder* builder, const Field& field, std::mt19937_64& rng) {
  if (field.nullable() && rng() % 5 == 0) {
    builder->AppendNull();
    return;
  }
  const DataType& type = *field.type();
  const auto random_string = [&](bool bytes) {
    std::string s;
    const size_t n = rng() % 12;
    for (size_t i = 0; i < n; ++i) {
      if (bytes) {
        s.push_back(static_cast<char>(rng()));
      } else {
        s += kPieces[rng() % std::size(kPieces)];
      }
    }
    return s;
  };
  const auto random_double = [&]() {
    switch (rng() % 6) {
      case 0: {
        const uint64_t bits = rng();
        double d;
        std::memcpy(&d, &bits, sizeof(d));
        return d;  // anything, NaN and infinities included
      }
      case 1:
        return static_cast<double>(static_cast<int64_t>(rng()) >> (rng() % 64));
      case 2:
        return -0.0;
      default:
        return std::ldexp(static_cast<double>(rng() % 2000000) - 1e6,
                          static_cast<int>(rng() % 80) - 40);
    }
  };
  switch (type.id()) {
    case TypeId::kBool:
      static_cast<BooleanBuilder*>(builder)->Append(rng() % 2 == 0);
      break;
    case TypeId::kInt8:
      static_cast<Int8Builder*>(builder)->Append(static_cast<int8_t>(rng()));
      break;
    case TypeId::kInt16:
      static_cast<Int16Builder*>(builder)->Append(static_cast<int16_t>(rng()));
      break;
    case TypeId::kInt32:
      static_cast<Int32Builder*>(builder)->Append(static_cast<int32_t>(rng()));
      break;
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      static_cast<Int64Builder*>(builder)->Append(static_cast<int64_t>(rng()) >> (rng() % 64));
      break;
    case TypeId::kUInt8:
      static_cast<UInt8Builder*>(builder)->Append(static_cast<uint8_t>(rng()));
      break;
    case TypeId::kUInt16:
      static_cast<UInt16Builder*>(builder)->Append(static_cast<uint16_t>(rng()));
      break;
    case TypeId::kUInt32:
      static_cast<UInt32Builder*>(builder)->Append(static_cast<uint32_t>(rng()));
      break;
    case TypeId::kUInt64:
      static_cast<UInt64Builder*>(builder)->Append(rng() >> (rng() % 64));
      break;
    case TypeId::kFloat32:
      static_cast<Float32Builder*>(builder)->Append(static_cast<float>(random_double()));
      break;
    case TypeId::kFloat64:
      static_cast<Float64Builder*>(builder)->Append(random_double());
      break;
    case TypeId::kUtf8:
    case TypeId::kBinary:
      ASSERT_TRUE(static_cast<BinaryBuilder*>(builder)
                      ->Append(random_string(type.id() == TypeId::kBinary))
                      .ok());
      break;
    case TypeId::kLargeUtf8:
    case TypeId::kLargeBinary:
      ASSERT_TRUE(static_cast<LargeBinaryBuilder*>(builder)
                      ->Append(random_string(type.id() == TypeId::kLargeBinary))
                      .ok());
      break;
    case TypeId::kList:
    case TypeId::kLargeList: {
      const bool large = type.id() == TypeId::kLargeList;
      ArrayBuilder* values = large ? static_cast<LargeListBuilder*>(builder)->value_builder()
                                   : static_cast<ListBuilder*>(builder)->value_builder();
      large ? static_cast<LargeListBuilder*>(builder)->Append()
            : static_cast<ListBuilder*>(builder)->Append();
      const int n = static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) AppendRandom(values, *type.value_field(), rng);
      break;
    }
    case TypeId::kFixedSizeList: {
      auto* list_builder = static_cast<FixedSizeListBuilder*>(builder);
      list_builder->Append();
      for (int i = 0; i < type.list_size(); ++i) {
        AppendRandom(list_builder->value_builder(), *type.value_field(), rng);
      }
      break;
    }
    case TypeId::kStruct: {
      auto* struct_builder = static_cast<StructBuilder*>(builder);
      struct_builder->Append();
      for (int i = 0; i < struct_builder->num_fields(); ++i) {
        AppendRandom(struct_builder->field_builder(i), *type.fields()[i], rng);
      }
      break;
    }
    case TypeId::kDictionary: {
      static const char* const kWords[] = {"red", "green", "", "\xC3\xA9t\xC3\xA9", "a\"b"};
      ASSERT_TRUE(
          static_cast<DictionaryBuilder*>(builder)->Append(kWords[rng() % std::size(kWords)]).ok());
      break;
    }
  }
}

SchemaPtr RandomSchema(std::mt19937_64& rng) {
  const auto nullable = [&] { return rng() % 3 != 0; };
  const DataTypePtr step =
      struct_({field("a", int32(), nullable()), field("b", list(utf8())),
               field("c", fixed_size_list(float64(), 2)), field("d", large_binary())});
  std::vector<FieldPtr> fields = {
      field("bool", boolean(), nullable()),
      field("i8", int8(), nullable()),
      field("i16", int16(), nullable()),
      field("i32", int32(), nullable()),
      field("i64", int64(), nullable()),
      field("u8", uint8(), nullable()),
      field("u16", uint16(), nullable()),
      field("u32", uint32(), nullable()),
      field("u64", uint64(), nullable()),
      field("f32", float32(), nullable()),
      field("f64", float64(), nullable()),
      field("utf8", utf8(), nullable()),
      field("large_utf8", large_utf8(), nullable()),
      field("binary", binary(), nullable()),
      field("large_binary", large_binary(), nullable()),
      field("ts", timestamp_us(), nullable()),
      field("ts_utc", timestamp_us("UTC"), nullable()),
      field("dict", dictionary(int8(), utf8()), nullable()),
      field("large_dict", dictionary(uint32(), large_utf8()), nullable()),
      field("steps", list(field("item", step, nullable())), nullable()),
      field("big", large_list(int64()), nullable()),
      field("vec", fixed_size_list(field("item", float32(), false), 3), nullable()),
      field("meta",
            struct_({field("at", timestamp_us()), field("bin", binary()),
                     field("inner", struct_({field("x", uint64(), nullable())}))}),
            nullable()),
      field("nested", list(list(int16())), nullable()),
  };
  std::shuffle(fields.begin(), fields.end(), rng);
  fields.resize(1 + rng() % fields.size());
  return schema(std::move(fields));
}

RecordBatch RandomBatch(const SchemaPtr& s, int64_t rows, std::mt19937_64& rng) {
  auto builder = MakeBatchBuilder(s);
  if (builder == nullptr) return RecordBatch::MakeEmpty(s);
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < s->num_fields(); ++c) AppendRandom(builder->builder(c), *s->field(c), rng);
  }
  return MustFinish(builder.get());
}

TEST(JsonRoundTripTest, RandomBatchesSurviveJson) {
  const auto seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int iteration = 0; iteration < 40; ++iteration) {
    SCOPED_TRACE(iteration);
    const SchemaPtr s = RandomSchema(rng);
    const RecordBatch batch = RandomBatch(s, static_cast<int64_t>(rng() % 60), rng);
    ASSERT_FALSE(::testing::Test::HasFailure());

    const std::string text = BatchToJsonLines(batch);
    auto back = RowsToBatch(s, text);
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
    ASSERT_TRUE(back->Equals(batch)) << text << "\n" << back->ToString();

    // Timestamps as integers, and the array-of-rows form.
    JsonWriteOptions micros;
    micros.timestamps_as_micros = true;
    std::string micros_text;
    ASSERT_TRUE(AppendRowsToJsonLines(batch, &micros_text, micros).ok());
    auto from_micros = RowsToBatch(s, micros_text);
    ASSERT_TRUE(from_micros.ok()) << from_micros.status();
    EXPECT_TRUE(from_micros->Equals(batch));
    std::string array_text = "[";
    for (size_t pos = 0; pos < text.size();) {
      const size_t end = text.find('\n', pos);
      if (pos > 0) array_text += ",\n";
      array_text.append(text, pos, end - pos);
      pos = end + 1;
    }
    array_text += "]";
    auto from_array = ArrayOfRowsToBatch(s, array_text);
    ASSERT_TRUE(from_array.ok()) << from_array.status();
    EXPECT_TRUE(from_array->Equals(batch));

    // A slice writes exactly its rows.
    const int64_t offset =
        batch.num_rows() == 0 ? 0 : static_cast<int64_t>(rng() % batch.num_rows());
    const int64_t length = static_cast<int64_t>(rng() % (batch.num_rows() - offset + 1));
    const RecordBatch slice = batch.Slice(offset, length);
    auto slice_back = RowsToBatch(s, BatchToJsonLines(slice));
    ASSERT_TRUE(slice_back.ok()) << slice_back.status();
    EXPECT_EQ(slice_back->num_rows(), length);
    EXPECT_TRUE(slice_back->Equals(slice));

    // The streaming reader gives the same rows in batches.
    JsonReadOptions options;
    options.batch_rows = 1 + static_cast<int64_t>(rng() % 10);
    auto reader = JsonLinesReader::Make(s, StringSource(text, 1 + rng() % 300), options);
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::vector<RecordBatch> batches;
    while (true) {
      auto next = (*reader)->Next();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      batches.push_back(**next);
    }
    if (batch.num_rows() > 0) {
      auto all = ConcatenateBatches(batches);
      ASSERT_TRUE(all.ok()) << all.status();
      EXPECT_TRUE(all->Equals(batch));
    } else {
      EXPECT_TRUE(batches.empty());
    }
  }
}

}  // namespace
}  // namespace strata::json
