#include "strata/schema_json.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(SchemaJsonTest, EveryTypeRoundTripsThroughItsText) {
  std::vector<DataTypePtr> types = {
      boolean(),
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
      timestamp_us("Europe/Berlin"),
      timestamp_us("+01:00"),
      fixed_size_list(float32(), 1536),
      fixed_size_list(field("x", float32(), false), 3),
      list(int32()),
      large_list(utf8()),
      list(struct_({field("a", int64(), false), field("b", list(utf8()))})),
      struct_({}),
      dictionary(int32(), utf8()),
      dictionary(int8(), large_utf8(), true)};
  for (const auto& t : types) {
    SCOPED_TRACE(t->ToString());
    Result<DataTypePtr> parsed = ParseDataType(t->ToString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE((*parsed)->Equals(*t)) << (*parsed)->ToString();
  }
}

TEST(SchemaJsonTest, ShorthandsAndAliases) {
  EXPECT_TRUE((*ParseDataType("list<int32>"))->Equals(*list(int32())));
  EXPECT_TRUE((*ParseDataType(" string "))->Equals(*utf8()));
  EXPECT_TRUE((*ParseDataType("double"))->Equals(*float64()));
  EXPECT_TRUE((*ParseDataType("timestamp"))->Equals(*timestamp_us()));
  EXPECT_TRUE((*ParseDataType("dictionary<utf8>"))->Equals(*dictionary(int32(), utf8())));
  EXPECT_TRUE(
      (*ParseDataType("fixed_size_list<float32>[4]"))->Equals(*fixed_size_list(float32(), 4)));
}

TEST(SchemaJsonTest, BadTypesNameThePosition) {
  for (const char* bad : {"", "int65", "list<", "list<int32", "fixed_size_list<int8>",
                          "fixed_size_list<int8>[-1]", "timestamp[ms]", "struct<int32>",
                          "dictionary<values=utf8, indices=float32>", "int32 trailing"}) {
    SCOPED_TRACE(bad);
    Result<DataTypePtr> r = ParseDataType(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_NE(r.status().message().find("position"), std::string::npos) << r.status();
  }
}

TEST(SchemaJsonTest, SchemaRoundTripsWithMetadataAndNullability) {
  KeyValueMetadata fmd({{"strata:primary_key", "true"}});
  SchemaPtr s = schema(
      {field("id", utf8(), false, fmd), field("reward", float64()), field("tokens", list(int32()))},
      KeyValueMetadata({{"store", "rollouts"}}));
  Result<SchemaPtr> back = SchemaFromJson(SchemaToJson(*s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE((*back)->Equals(*s)) << (*back)->ToString();
}

TEST(SchemaJsonTest, SchemaErrorsNameTheField) {
  Result<SchemaPtr> r =
      SchemaFromJson(R"({"fields": [{"name": "a", "type": "int32"}, {"name": "b", "type": "x"}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("schema field 'b'"), std::string::npos) << r.status();
  EXPECT_TRUE(SchemaFromJson("{").status().IsInvalidArgument());
  EXPECT_TRUE(SchemaFromJson(R"({"fields": [{"name": "a"}]})").status().IsInvalidArgument());
  Result<SchemaPtr> dup = SchemaFromJson(
      R"({"fields": [{"name": "a", "type": "int32"}, {"name": "a", "type": "utf8"}]})");
  EXPECT_NE(dup.status().message().find("two fields named 'a'"), std::string::npos);
  Result<SchemaPtr> nullable =
      SchemaFromJson(R"({"fields": [{"name": "a", "type": "int32", "nullable": "no"}]})");
  EXPECT_TRUE(nullable.status().IsInvalidArgument());
}

std::string NestedLists(int levels, std::string_view leaf) {
  std::string text;
  for (int i = 0; i < levels; ++i) text += "list<";
  text += leaf;
  return text + std::string(levels, '>');
}

TEST(SchemaJsonTest, TypesNestDeeperThanTheLimitAreRefused) {
  Result<DataTypePtr> deepest = ParseDataType(NestedLists(kMaxTypeNestingDepth, "int64"));
  ASSERT_TRUE(deepest.ok()) << deepest.status();
  EXPECT_TRUE(CheckTypeNesting(**deepest).ok());
  EXPECT_FALSE(CheckTypeNesting(*list(*deepest)).ok());
  // Dictionaries and structs count as levels too.
  EXPECT_FALSE(ParseDataType(NestedLists(kMaxTypeNestingDepth, "dictionary<utf8>")).ok());
  EXPECT_FALSE(
      ParseDataType(NestedLists(kMaxTypeNestingDepth - 1, "struct<a: struct<b: int64>>")).ok());

  Result<SchemaPtr> deeper =
      SchemaFromJson(fmt::format(R"({{"fields": [{{"name": "id", "type": "int64"}},
                                  {{"name": "deep", "type": "{}"}}]}})",
                                 NestedLists(kMaxTypeNestingDepth + 1, "int64")));
  ASSERT_FALSE(deeper.ok());
  EXPECT_TRUE(deeper.status().IsInvalidArgument());
  // Short: the column and the limit, not the (long) type text.
  EXPECT_NE(deeper.status().message().find(
                "schema field 'deep': type nests deeper than 60 levels, the most supported"),
            std::string::npos)
      << deeper.status();
  EXPECT_LT(deeper.status().message().size(), 200u) << deeper.status();

  // Hostile depth fails cleanly instead of exhausting the parser's stack.
  EXPECT_TRUE(ParseDataType(NestedLists(200000, "int64")).status().IsInvalidArgument());
}

TEST(SchemaJsonTest, StructsWithTwoFieldsOfOneNameAreRefused) {
  Result<SchemaPtr> dup = SchemaFromJson(
      R"({"fields": [{"name": "s", "type": "list<struct<a: int64, b: utf8, a: utf8>>"}]})");
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(dup.status().IsInvalidArgument());
  EXPECT_NE(dup.status().message().find("schema field 's'"), std::string::npos) << dup.status();
  EXPECT_NE(dup.status().message().find("struct has two fields named 'a'"), std::string::npos)
      << dup.status();
  EXPECT_TRUE(ParseDataType("struct<a: int64, b: struct<a: int64>>").ok());
}

}  // namespace
}  // namespace strata
