// Binder tests: column resolution, exact error messages, literal coercion and range checks,
// and the bound form's text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "expr/expr_test_util.h"
#include "strata/expr.h"

namespace strata::expr {
namespace {

using testing::BindError;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

SchemaPtr TestSchema() {
  return schema({
      field("id", int64()),                                                                // 0
      field("reward", float64()),                                                          // 1
      field("level", int8()),                                                              // 2
      field("count", uint32()),                                                            // 3
      field("name", utf8()),                                                               // 4
      field("big", large_utf8()),                                                          // 5
      field("tag", dictionary(int32(), utf8())),                                           // 6
      field("blob", binary()),                                                             // 7
      field("done", boolean()),                                                            // 8
      field("ts", timestamp_us()),                                                         // 9
      field("tags", list(utf8())),                                                         // 10
      field("usage", struct_({field("prompt_tokens", int64()), field("model", utf8())})),  // 11
      field("my col", int32()),                                                            // 12
      field("a.b", int32()),                                                               // 13
      field("u64", uint64()),                                                              // 14
  });
}

// The bound form's text, or "error: <message>".
std::string Bound(std::string_view text) {
  Result<BoundExpr> bound = ParseAndBind(text, TestSchema());
  if (!bound.ok()) return "error: " + bound.status().message();
  return bound->ToString();
}

TEST(BinderTest, TypeMismatchNamesColumnTypeAndLiteral) {
  const SchemaPtr s = TestSchema();
  EXPECT_EQ(BindError(s, "reward = 'abc'"),
            "column 'reward' is float64; cannot compare it with string 'abc'");
  EXPECT_EQ(BindError(s, "name = 5"), "column 'name' is utf8; cannot compare it with integer 5");
  EXPECT_EQ(BindError(s, "5 < name"), "column 'name' is utf8; cannot compare it with integer 5");
  EXPECT_EQ(BindError(s, "done = 1"), "column 'done' is bool; cannot compare it with integer 1");
  EXPECT_EQ(BindError(s, "id = TRUE"), "column 'id' is int64; cannot compare it with boolean TRUE");
  EXPECT_EQ(BindError(s, "id = 1.5e0 OR name = 2.5"),
            "column 'name' is utf8; cannot compare it with float 2.5");
  EXPECT_EQ(BindError(s, "ts > 5"),
            "column 'ts' is timestamp[us]; cannot compare it with integer 5");
  EXPECT_THAT(
      BindError(s, "ts > 'yesterday'"),
      HasSubstr("column 'ts' is timestamp[us]; cannot compare it with string 'yesterday': "));
  EXPECT_EQ(BindError(s, "tag = 5"),
            "column 'tag' is dictionary<values=utf8, indices=int32>; cannot compare it with "
            "integer 5");
  EXPECT_EQ(BindError(s, "tags = 'a'"),
            "column 'tags' is list<item: utf8>; cannot compare it with string 'a'");
  EXPECT_EQ(BindError(s, "id IN (1, 'a')"),
            "column 'id' is int64; cannot compare it with string 'a'");
  EXPECT_EQ(BindError(s, "reward = TIMESTAMP '2024-01-01'"),
            "column 'reward' is float64; cannot compare it with timestamp TIMESTAMP "
            "'2024-01-01T00:00:00.000000Z'");
}

TEST(BinderTest, UnknownColumnsSuggestNearbyNames) {
  const SchemaPtr s = TestSchema();
  EXPECT_EQ(BindError(s, "rewrd > 1"), "unknown column 'rewrd'; did you mean 'reward'?");
  EXPECT_EQ(BindError(s, "Name = 'x'"), "unknown column 'Name'; did you mean 'name'?");
  EXPECT_EQ(BindError(s, "tg = 'x'"), "unknown column 'tg'; did you mean 'tag', 'ts' or 'id'?");
  EXPECT_EQ(BindError(s, "zzzzzzzz = 1"),
            "unknown column 'zzzzzzzz'; the columns are: id, reward, level, count, name, big, "
            "tag, blob, done, ts (and 5 more)");
  EXPECT_EQ(BindError(s, "usage.prompt_tokns > 1"),
            "column 'usage' has no field 'prompt_tokns'; did you mean 'prompt_tokens'?");
  EXPECT_EQ(BindError(s, "usage.zzzzzzzzz > 1"),
            "column 'usage' has no field 'zzzzzzzzz'; its fields are: prompt_tokens, model");
  EXPECT_EQ(BindError(s, "name.x = 1"),
            "column 'name' is utf8, not a struct; cannot read field 'x'");
  EXPECT_EQ(BindError(schema({}), "x = 1"), "unknown column 'x'; the schema has no columns");
}

TEST(BinderTest, IntegerLiteralsOutsideTheColumnRangeAreErrors) {
  const SchemaPtr s = TestSchema();
  EXPECT_EQ(BindError(s, "level = 300"),
            "column 'level' is int8; 300 is out of its range [-128, 127]");
  EXPECT_EQ(BindError(s, "level IN (1, -129)"),
            "column 'level' is int8; -129 is out of its range [-128, 127]");
  EXPECT_EQ(BindError(s, "level > 1000.5"),
            "column 'level' is int8; 1000.5 is out of its range [-128, 127]");
  EXPECT_EQ(BindError(s, "count = -1"),
            "column 'count' is uint32; -1 is out of its range [0, 4294967295]");
  EXPECT_EQ(BindError(s, "id = 9223372036854775808"),
            "column 'id' is int64; 9223372036854775808 is out of its range "
            "[-9223372036854775808, 9223372036854775807]");
  EXPECT_EQ(BindError(s, "id < 1e19"),
            "column 'id' is int64; 1e+19 is out of its range "
            "[-9223372036854775808, 9223372036854775807]");
  EXPECT_EQ(BindError(s, "level = 127"), "");
  EXPECT_EQ(BindError(s, "level = -128"), "");
  EXPECT_EQ(BindError(s, "count = 4294967295"), "");
  EXPECT_EQ(BindError(s, "u64 = 18446744073709551615"), "");
  EXPECT_EQ(BindError(s, "id = -9223372036854775808"), "");
}

TEST(BinderTest, OperatorShapeErrors) {
  const SchemaPtr s = TestSchema();
  EXPECT_EQ(BindError(s, "id = name"),
            "cannot compare column 'id' (int64) with column 'name' (utf8)");
  EXPECT_EQ(BindError(s, "done = ts"),
            "cannot compare column 'done' (bool) with column 'ts' (timestamp[us])");
  EXPECT_EQ(BindError(s, "name = blob"),
            "cannot compare column 'name' (utf8) with column 'blob' (binary)");
  EXPECT_EQ(BindError(s, "id"),
            "column 'id' is int64, not bool; a predicate needs a comparison such as 'id = ...'");
  EXPECT_EQ(BindError(s, "5"), "integer 5 is not a predicate (a predicate is boolean)");
  EXPECT_EQ(BindError(s, "'x' AND done"), "string 'x' is not a predicate (a predicate is boolean)");
  EXPECT_EQ(BindError(s, "(id = 1) = TRUE"),
            "the operands of '=' must be columns or literals, found (id = 1)");
  EXPECT_EQ(BindError(s, "(id = 1) IS NULL"), "IS NULL needs a column on its left, found (id = 1)");
  EXPECT_EQ(BindError(s, "id LIKE 'a%'"), "column 'id' is int64; LIKE needs a string column");
  EXPECT_EQ(BindError(s, "name LIKE 'a\\'"),
            "LIKE pattern 'a\\' ends with a lone escape character (\\)");
  EXPECT_EQ(BindError(s, "5 LIKE 'a'"), "LIKE needs a string, found integer 5");
  EXPECT_EQ(BindError(s, "array_has(name, 'a')"),
            "array_has needs a list column as its first argument; column 'name' is utf8");
  EXPECT_EQ(BindError(s, "array_has('a', 'a')"),
            "array_has needs a list column as its first argument, found string 'a'");
  EXPECT_EQ(BindError(s, "array_has(tags, 5)"),
            "column 'tags[]' is utf8; cannot compare it with integer 5");
  EXPECT_EQ(BindError(s, "array_has(tags, name)"),
            "array_has needs a literal as its second argument, found column 'name'");
  EXPECT_EQ(BindError(s, "tags IN (NULL)"),
            "column 'tags' is list<item: utf8>; IN needs a column of scalars");
  EXPECT_EQ(BindError(s, "usage NOT IN (NULL, 1)"),
            "column 'usage' is struct<prompt_tokens: int64, model: utf8>; IN needs a column of "
            "scalars");
  EXPECT_EQ(BindError(s, "1 = 'a'"), "cannot compare integer 1 with string 'a'");
  EXPECT_THAT(BindError(s, "TIMESTAMP '2024-01-01' = 'x'"),
              HasSubstr("cannot compare timestamp TIMESTAMP '2024-01-01T00:00:00.000000Z' with "
                        "string 'x': invalid timestamp"));
}

TEST(BinderTest, FractionsAgainstIntegerColumnsRound) {
  EXPECT_EQ(Bound("level < 1.5"), "level <= 1");
  EXPECT_EQ(Bound("level <= 1.5"), "level <= 1");
  EXPECT_EQ(Bound("level > 1.5"), "level >= 2");
  EXPECT_EQ(Bound("level >= -1.5"), "level >= -1");
  EXPECT_EQ(Bound("level < -0.5"), "level <= -1");
  EXPECT_EQ(Bound("count > 0.5"), "count >= 1");
  EXPECT_EQ(Bound("level = 1.5"), "level = 1.5");  // decided: FALSE unless NULL
  EXPECT_EQ(Bound("level != 1.5"), "level != 1.5");
  EXPECT_EQ(Bound("level = 2.0"), "level = 2");
  EXPECT_EQ(Bound("1.5 < level"), "level >= 2");
  EXPECT_EQ(Bound("level IN (1.5, 2.0, 3)"), "level IN (2, 3)");
}

TEST(BinderTest, LiteralsAreCoercedToTheColumnDomain) {
  EXPECT_EQ(Bound("reward > 1"), "reward > 1.0");
  EXPECT_EQ(Bound("1 < id"), "id > 1");
  EXPECT_EQ(Bound("ts > '2024-05-01'"), "ts > TIMESTAMP '2024-05-01T00:00:00.000000Z'");
  EXPECT_EQ(Bound("ts IN ('2024-05-01T10:00:00+02:00')"),
            "ts IN (TIMESTAMP '2024-05-01T08:00:00.000000Z')");
  EXPECT_EQ(Bound("tag = 'x' AND blob = 'y' AND big >= 'z'"),
            "tag = 'x' AND blob = 'y' AND big >= 'z'");
  EXPECT_EQ(Bound("id IN (3, 1, 3, NULL)"), "id IN (1, 3, NULL)");
  EXPECT_EQ(Bound("id NOT IN (1)"), "NOT id IN (1)");
  EXPECT_EQ(Bound("done"), "done");
  EXPECT_EQ(Bound("done = FALSE"), "done = FALSE");
  EXPECT_EQ(Bound("id = reward"), "id = reward");
  EXPECT_EQ(Bound("array_has(tags, 'a')"), "array_has(tags, 'a')");
  EXPECT_EQ(Bound("usage.prompt_tokens > 5"), "usage.prompt_tokens > 5");
  EXPECT_EQ(Bound("\"my col\" = 1 AND a.b = 2"), "\"my col\" = 1 AND \"a.b\" = 2");
  EXPECT_EQ(Bound("name NOT LIKE 'a\\%'"), "NOT name LIKE 'a\\%'");
  EXPECT_EQ(Bound("name IS NOT NULL"), "NOT name IS NULL");
}

TEST(BinderTest, LiteralOnlyTermsFold) {
  EXPECT_EQ(Bound("1 = 1"), "TRUE");
  EXPECT_EQ(Bound("1 = 1.0"), "TRUE");
  EXPECT_EQ(Bound("2 < 1.5"), "FALSE");
  EXPECT_EQ(Bound("NULL = 1"), "NULL");
  EXPECT_EQ(Bound("id = NULL"), "NULL");
  EXPECT_EQ(Bound("'a' < 'b'"), "TRUE");
  EXPECT_EQ(Bound("TIMESTAMP '2024-01-01' < '2024-01-02'"), "TRUE");
  EXPECT_EQ(Bound("NULL IS NULL AND 5 IS NOT NULL"), "TRUE AND NOT FALSE");
  EXPECT_EQ(Bound("1 IN (2, 1)"), "TRUE");
  EXPECT_EQ(Bound("1 IN (2, NULL)"), "NULL");
  EXPECT_EQ(Bound("1 NOT IN (2, 3)"), "NOT FALSE");
  EXPECT_EQ(Bound("'abc' LIKE 'a%'"), "TRUE");
  EXPECT_EQ(Bound("array_has(tags, NULL)"), "NULL");
  EXPECT_EQ(Bound("TRUE OR NULL"), "TRUE OR NULL");
}

TEST(BinderTest, ReferencedColumns) {
  Result<BoundExpr> bound =
      ParseAndBind("id = 1 AND usage.model = 'x' OR level = reward OR array_has(tags, 'a') OR TRUE",
                   TestSchema());
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_THAT(bound->ReferencedColumns(), ElementsAre(0, 1, 2, 10, 11));
}

TEST(BinderTest, BuiltTreesTooDeepAreRefused) {
  Expr e = Expr::Column("done");
  for (int i = 0; i < 300; ++i) e = Expr::Not(e);
  Result<BoundExpr> bound = Bind(e, TestSchema());
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().message(), "expression nested deeper than 256 levels");
}

}  // namespace
}  // namespace strata::expr
