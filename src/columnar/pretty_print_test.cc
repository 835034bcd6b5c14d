// Tests for Array::ToString / ValueToString, RecordBatch::ToString, FormatTable and
// FormatSchema.
#include "strata/pretty_print.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "strata/builder.h"

namespace strata {
namespace {

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
  BinaryBuilder b(std::move(type));
  for (const auto& v : values) {
    if (v) {
      EXPECT_TRUE(b.Append(*v).ok());
    } else {
      b.AppendNull();
    }
  }
  return ValueOrDie(b.Finish());
}

Array Range(int64_t n) {
  Int64Builder b(int64());
  for (int64_t i = 0; i < n; ++i) b.Append(i);
  return ValueOrDie(b.Finish());
}

TEST(ArrayToStringTest, FlatArrays) {
  EXPECT_EQ(Int64s({1, std::nullopt, 3}).ToString(), "[1, null, 3]");
  EXPECT_EQ(Int64s({}).ToString(), "[]");
  EXPECT_EQ(Strings({"a", std::nullopt, "é"}).ToString(), R"(["a", null, "é"])");
  EXPECT_EQ(Array::MakeNull(boolean(), 2).ToString(), "[null, null]");
  EXPECT_EQ(Array().ToString(), "<null array>");
}

TEST(ArrayToStringTest, SlicesAtUnalignedOffsets) {
  Array a = Int64s({0, 1, std::nullopt, 3, 4, std::nullopt, 6, 7, 8, 9, 10, 11, 12, 13});
  EXPECT_EQ(a.Slice(3, 10).ToString(), "[3, 4, null, 6, 7, 8, 9, 10, 11, 12]");
  BooleanBuilder b;
  for (int i = 0; i < 14; ++i) i % 4 == 0 ? b.AppendNull() : b.Append(i % 3 == 0);
  Array bools = ValueOrDie(b.Finish());
  EXPECT_EQ(bools.Slice(3, 6).ToString(), "[true, null, false, true, false, null]");
}

TEST(ArrayToStringTest, LongArraysAreElidedInTheMiddle) {
  EXPECT_EQ(Range(20).ToString(),
            "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]");
  EXPECT_EQ(Range(21).ToString(),
            "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...1 more..., 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]");
  EXPECT_EQ(Range(1000).Slice(500).ToString(),
            "[500, 501, 502, 503, 504, 505, 506, 507, 508, 509, ...480 more..., 990, 991, 992, "
            "993, 994, 995, 996, 997, 998, 999]");
}

TEST(ArrayToStringTest, NestedValues) {
  auto type = list(struct_({field("a", int64()), field("b", utf8())}));
  auto builder = ValueOrDie(MakeBuilder(type));
  auto* lb = static_cast<ListBuilder*>(builder.get());
  auto* sb = static_cast<StructBuilder*>(lb->value_builder());
  lb->Append();
  sb->Append();
  static_cast<Int64Builder*>(sb->field_builder(0))->Append(1);
  ASSERT_TRUE(static_cast<BinaryBuilder*>(sb->field_builder(1))->Append("x").ok());
  sb->AppendNull();
  lb->AppendNull();
  lb->Append();
  Array a = ValueOrDie(builder->Finish());
  EXPECT_EQ(a.ToString(), R"([[{a: 1, b: "x"}, null], null, []])");
  EXPECT_EQ(a.ValueToString(0), R"([{a: 1, b: "x"}, null])");

  auto lists = ValueOrDie(MakeBuilder(list(int64())));
  auto* ll = static_cast<ListBuilder*>(lists.get());
  ll->Append();
  ASSERT_TRUE(ll->value_builder()->AppendArraySlice(Range(3), 0, 3).ok());
  ll->AppendNull();
  EXPECT_EQ(ValueOrDie(lists->Finish()).ToString(), "[[0, 1, 2], null]");
}

TEST(ArrayToStringTest, FixedSizeListsAndLongNestedLists) {
  auto builder = ValueOrDie(MakeBuilder(fixed_size_list(float32(), 4)));
  auto* fb = static_cast<FixedSizeListBuilder*>(builder.get());
  auto* values = static_cast<Float32Builder*>(fb->value_builder());
  fb->Append();
  for (float v : {0.1f, -2.5f, 3.0f, 1e-7f}) values->Append(v);
  fb->AppendNull();
  EXPECT_EQ(ValueOrDie(builder->Finish()).ToString(), "[[0.1, -2.5, 3, 1e-07], null]");

  auto lists = ValueOrDie(MakeBuilder(large_list(int64())));
  auto* ll = static_cast<LargeListBuilder*>(lists.get());
  ll->Append();
  ASSERT_TRUE(ll->value_builder()->AppendArraySlice(Range(25), 0, 25).ok());
  EXPECT_EQ(ValueOrDie(lists->Finish()).ValueToString(0),
            "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...5 more..., 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]");
}

TEST(ValueToStringTest, StringsAreQuotedAndEscaped) {
  Array a = Strings({std::string("q\"b\\s\n\t\x01 é", 11), std::nullopt});
  EXPECT_EQ(a.ValueToString(0), R"("q\"b\\s\n\t\u0001 é")");
  EXPECT_EQ(a.ValueToString(1), "null");
  LargeBinaryBuilder large(large_utf8());
  ASSERT_TRUE(large.Append("x").ok());
  EXPECT_EQ(ValueOrDie(large.Finish()).ValueToString(0), R"("x")");
}

TEST(ValueToStringTest, BinaryIsBase64) {
  Array a = Strings({std::string("\0\x01\xFF", 3), ""}, binary());
  EXPECT_EQ(a.ValueToString(0), R"("AAH/")");
  EXPECT_EQ(a.ValueToString(1), R"("")");
  LargeBinaryBuilder large(large_binary());
  ASSERT_TRUE(large.Append("hi").ok());
  EXPECT_EQ(ValueOrDie(large.Finish()).ValueToString(0), R"("aGk=")");
}

TEST(ValueToStringTest, TimestampsAreRfc3339) {
  TimestampBuilder b(timestamp_us("Europe/Paris"));
  b.Append(0);
  b.Append(1'714'566'896'123'456);
  b.Append(-1);
  Array a = ValueOrDie(b.Finish());
  EXPECT_EQ(a.ValueToString(0), R"("1970-01-01T00:00:00.000000Z")");
  EXPECT_EQ(a.ValueToString(1), R"("2024-05-01T12:34:56.123456Z")");
  EXPECT_EQ(a.ValueToString(2), R"("1969-12-31T23:59:59.999999Z")");
}

TEST(ValueToStringTest, NumbersAndBooleans) {
  Float64Builder d(float64());
  for (double v :
       {0.1, 1e100, -0.0, std::nan(""), -std::numeric_limits<double>::infinity(), 123456789.125}) {
    d.Append(v);
  }
  EXPECT_EQ(ValueOrDie(d.Finish()).ToString(), "[0.1, 1e+100, -0, NaN, -Infinity, 123456789.125]");
  Float32Builder f(float32());
  f.Append(0.1f);
  f.Append(16777216.0f);
  EXPECT_EQ(ValueOrDie(f.Finish()).ToString(), "[0.1, 16777216]");
  UInt64Builder u(uint64());
  u.Append(std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(ValueOrDie(u.Finish()).ValueToString(0), "18446744073709551615");
  Int8Builder i8(int8());
  i8.Append(-128);
  EXPECT_EQ(ValueOrDie(i8.Finish()).ValueToString(0), "-128");
  BooleanBuilder b;
  b.Append(true);
  b.Append(false);
  EXPECT_EQ(ValueOrDie(b.Finish()).ToString(), "[true, false]");
}

TEST(ValueToStringTest, DictionariesPrintDecodedValues) {
  DictionaryBuilder b(dictionary(int8(), utf8()));
  ASSERT_TRUE(b.Append("red").ok());
  b.AppendNull();
  ASSERT_TRUE(b.Append("red").ok());
  EXPECT_EQ(ValueOrDie(b.Finish()).ToString(), R"(["red", null, "red"])");
}

TEST(RecordBatchToStringTest, SchemaThenRows) {
  auto s = schema({field("id", int64(), false), field("name", utf8())});
  RecordBatch batch =
      ValueOrDie(RecordBatch::Make(s, 2, {Int64s({1, 2}), Strings({"a\"", std::nullopt})}));
  EXPECT_EQ(batch.ToString(),
            "id: int64 not null\n"
            "name: utf8\n"
            "--\n"
            "{id: 1, name: \"a\\\"\"}\n"
            "{id: 2, name: null}\n");
  RecordBatch big = ValueOrDie(RecordBatch::Make(schema({field("n", int64())}), 30, {Range(30)}));
  const std::string text = big.ToString();
  EXPECT_NE(text.find("{n: 9}\n...10 more rows...\n{n: 20}\n"), std::string::npos) << text;
}

TEST(FormatTableTest, AlignsColumns) {
  auto s = schema({field("id", int64()), field("name", utf8()), field("score", float64())});
  Float64Builder scores(float64());
  scores.Append(3.5);
  scores.AppendNull();
  RecordBatch batch = ValueOrDie(RecordBatch::Make(
      s, 2, {Int64s({1, 20}), Strings({"alice", "bo"}), ValueOrDie(scores.Finish())}));
  EXPECT_EQ(FormatTable({batch}),
            " id | name  | score\n"
            "----+-------+-------\n"
            "  1 | alice |   3.5\n"
            " 20 | bo    |  null\n"
            "(2 rows)\n");
}

TEST(FormatTableTest, TruncatesLongCellsAndSpansBatches) {
  auto s = schema({field("text", utf8()), field("n", int32())});
  Int32Builder n(int32());
  n.Append(7);
  RecordBatch a = ValueOrDie(
      RecordBatch::Make(s, 1, {Strings({"héllo wörld, this is long"}), ValueOrDie(n.Finish())}));
  n.Append(-12345);
  RecordBatch b =
      ValueOrDie(RecordBatch::Make(s, 1, {Strings({"line\nbreak"}), ValueOrDie(n.Finish())}));
  TableFormatOptions options;
  options.max_cell_width = 10;
  EXPECT_EQ(FormatTable({a, b}, options),
            " text       |      n\n"
            "------------+--------\n"
            " héllo wör… |      7\n"
            " line\\nbre… | -12345\n"
            "(2 rows)\n");
}

TEST(FormatTableTest, MaxRowsAndEdgeCases) {
  RecordBatch batch = ValueOrDie(RecordBatch::Make(schema({field("n", int64())}), 5, {Range(5)}));
  TableFormatOptions options;
  options.max_rows = 2;
  EXPECT_EQ(FormatTable({batch}, options),
            " n\n"
            "---\n"
            " 0\n"
            " 1\n"
            "… 3 more rows\n"
            "(5 rows)\n");
  EXPECT_EQ(FormatTable({}), "(0 rows)\n");
  EXPECT_EQ(FormatTable({batch.Slice(4, 1)}),
            " n\n"
            "---\n"
            " 4\n"
            "(1 row)\n");
}

TEST(FormatTableTest, NestedAndBinaryCells) {
  auto type = struct_({field("x", int64()), field("tag", utf8())});
  auto builder = ValueOrDie(MakeBuilder(type));
  auto* sb = static_cast<StructBuilder*>(builder.get());
  sb->Append();
  static_cast<Int64Builder*>(sb->field_builder(0))->Append(1);
  ASSERT_TRUE(static_cast<BinaryBuilder*>(sb->field_builder(1))->Append("t").ok());
  auto s = schema({field("s", type), field("b", binary())});
  RecordBatch batch = ValueOrDie(
      RecordBatch::Make(s, 1, {ValueOrDie(builder->Finish()), Strings({"hi"}, binary())}));
  EXPECT_EQ(FormatTable({batch}),
            " s                | b\n"
            "------------------+------\n"
            " {x: 1, tag: \"t\"} | aGk=\n"
            "(1 row)\n");
}

KeyValueMetadata Metadata(std::string key, std::string value) {
  KeyValueMetadata m;
  m.Set(std::move(key), std::move(value));
  return m;
}

TEST(FormatSchemaTest, FieldsAndMetadata) {
  auto s = schema({field("id", int64(), false),
                   field("vec", fixed_size_list(float32(), 4), true, Metadata("unit", "m")),
                   field("at", timestamp_us("UTC"))},
                  Metadata("owner", "team"));
  EXPECT_EQ(FormatSchema(*s),
            "id: int64 not null\n"
            "vec: fixed_size_list<item: float32>[4]\n"
            "  -- unit: m\n"
            "at: timestamp[us, tz=UTC]\n"
            "-- schema metadata --\n"
            "owner: team\n");
}

}  // namespace
}  // namespace strata
