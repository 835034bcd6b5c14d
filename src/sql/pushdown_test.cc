// The filter terms SQLite constraints become (pushdown.h): exact where the languages agree,
// widened or left out where they do not. Every pushed term must also bind against the schema.
#include "sql/pushdown.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sql/column_values.h"
#include "strata/expr.h"
#include "strata/type.h"

namespace strata::sql {
namespace {

const SchemaPtr& Columns() {
  static const SchemaPtr columns =
      schema({field("id", utf8(), false), field("i8", int8()), field("i64", int64()),
              field("u64", uint64()), field("f32", float32()), field("f64", float64()),
              field("b", boolean()), field("ts", timestamp_us()), field("bin", binary()),
              field("tags", list(utf8())), field("dict", dictionary(int32(), utf8())),
              field("odd \"name\"", utf8())});
  return columns;
}

const Field& Col(const std::string& name) { return *Columns()->GetFieldByName(name); }

// The pushed text, "<none>" when nothing is pushed, "<never>" when nothing can match; every
// text must bind.
std::string Push(const std::string& column, ConstraintOp op, const Value& value) {
  std::optional<PushedTerm> term = PushTerm(Col(column), op, value);
  if (!term) return "<none>";
  if (term->never_true) return "<never>";
  Result<expr::BoundExpr> bound = expr::ParseAndBind(term->text, Columns());
  EXPECT_TRUE(bound.ok()) << term->text << ": " << bound.status();
  return term->text;
}

std::string In(const std::string& column, const std::vector<Value>& values) {
  std::optional<PushedTerm> term = PushIn(Col(column), values);
  if (!term) return "<none>";
  if (term->never_true) return "<never>";
  Result<expr::BoundExpr> bound = expr::ParseAndBind(term->text, Columns());
  EXPECT_TRUE(bound.ok()) << term->text << ": " << bound.status();
  return term->text;
}

Value Text(std::string s) { return Value(std::move(s)); }
Value Int(int64_t i) { return Value(i); }

TEST(PushdownTest, IntegersPushInRangeLiteralsOnly) {
  EXPECT_EQ(Push("i64", ConstraintOp::kGt, Int(5)), "\"i64\" > 5");
  EXPECT_EQ(Push("i64", ConstraintOp::kLe, Value(1.5)), "\"i64\" <= 1.5");
  EXPECT_EQ(Push("i64", ConstraintOp::kEq, Int(std::numeric_limits<int64_t>::min())),
            "\"i64\" = -9223372036854775808");
  EXPECT_EQ(Push("i64", ConstraintOp::kLt, Value(9.3e18)), "<none>");  // past INT64_MAX
  EXPECT_EQ(Push("i8", ConstraintOp::kEq, Int(127)), "\"i8\" = 127");
  EXPECT_EQ(Push("i8", ConstraintOp::kLt, Int(300)), "<none>");  // strata refuses 300 for int8
  EXPECT_EQ(Push("i8", ConstraintOp::kGt, Value(-128.5)), "<none>");
  // Text against a number: SQLite's affinity converts it; not pushed.
  EXPECT_EQ(Push("i64", ConstraintOp::kEq, Text("5")), "<none>");
  EXPECT_EQ(Push("i64", ConstraintOp::kEq, Value()), "<never>");
  // uint64 values past INT64_MAX show as REAL: comparisons stay with SQLite.
  EXPECT_EQ(Push("u64", ConstraintOp::kEq, Int(1)), "<none>");
  EXPECT_EQ(Push("u64", ConstraintOp::kIsNull, Value()), "\"u64\" IS NULL");
}

TEST(PushdownTest, Float32ComparisonsWidenToTheRoundedBound) {
  // SQLite sees 0.92 for 0.92f (0.9200000166893005 as a double): `<= 0.92` must keep it.
  EXPECT_EQ(Push("f32", ConstraintOp::kLe, Value(0.92)), "\"f32\" <= 0.9200000166893005");
  EXPECT_EQ(Push("f32", ConstraintOp::kLt, Value(0.92)), "\"f32\" <= 0.9200000166893005");
  EXPECT_EQ(Push("f32", ConstraintOp::kGt, Value(0.92)), "\"f32\" >= 0.9200000166893005");
  EXPECT_EQ(Push("f32", ConstraintOp::kEq, Int(3)), "\"f32\" = 3.0");
  EXPECT_EQ(Push("f32", ConstraintOp::kNe, Value(0.5)), "<none>");
  EXPECT_EQ(Push("f32", ConstraintOp::kLt, Value(1e300)), "<none>");  // past float32
  EXPECT_EQ(Float32AsShownDouble(0.92f), 0.92);
  EXPECT_EQ(Float32AsShownDouble(16777216.0f), 16777216.0);
}

TEST(PushdownTest, Float64PushesExactComparisonsButNotIsNull) {
  EXPECT_EQ(Push("f64", ConstraintOp::kNe, Value(2.5)), "\"f64\" != 2.5");
  EXPECT_EQ(Push("f64", ConstraintOp::kGe, Int(9007199254740992)), "\"f64\" >= 9007199254740992.0");
  // strata would round 2^53 + 1 to a double; SQLite compares it exactly.
  EXPECT_EQ(Push("f64", ConstraintOp::kGe, Int(9007199254740993)), "<none>");
  // NaN is NULL to SQLite, a number to strata.
  EXPECT_EQ(Push("f64", ConstraintOp::kIsNull, Value()), "<none>");
  EXPECT_EQ(Push("f64", ConstraintOp::kIsNotNull, Value()), "\"f64\" IS NOT NULL");
}

TEST(PushdownTest, BoolsStringsAndBlobs) {
  EXPECT_EQ(Push("b", ConstraintOp::kEq, Int(1)), "\"b\" = TRUE");
  EXPECT_EQ(Push("b", ConstraintOp::kNe, Int(0)), "\"b\" != FALSE");
  EXPECT_EQ(Push("b", ConstraintOp::kEq, Int(2)), "<none>");
  EXPECT_EQ(Push("b", ConstraintOp::kLt, Int(1)), "<none>");
  EXPECT_EQ(Push("id", ConstraintOp::kGe, Text("it's")), "\"id\" >= 'it''s'");
  EXPECT_EQ(Push("id", ConstraintOp::kEq, Int(5)), "<none>");
  EXPECT_EQ(Push("dict", ConstraintOp::kEq, Text("x")), "\"dict\" = 'x'");
  EXPECT_EQ(Push("odd \"name\"", ConstraintOp::kEq, Text("x")), "\"odd \"\"name\"\"\" = 'x'");
  EXPECT_EQ(Push("bin", ConstraintOp::kEq, Value(Blob{"ab"})), "\"bin\" = 'ab'");
  EXPECT_EQ(Push("bin", ConstraintOp::kEq, Text("ab")), "<none>");  // TEXT never equals a BLOB
  EXPECT_EQ(Push("tags", ConstraintOp::kEq, Text("[]")), "<none>");
  EXPECT_EQ(Push("tags", ConstraintOp::kIsNull, Value()), "\"tags\" IS NULL");
}

TEST(PushdownTest, TimestampsPushCanonicalTextAndDatePrefixes) {
  const std::string late = "\"ts\" > TIMESTAMP '9999-12-31T23:59:59.999999Z'";
  EXPECT_EQ(Push("ts", ConstraintOp::kEq, Text("2024-05-01T12:00:00.000000Z")),
            "\"ts\" = TIMESTAMP '2024-05-01T12:00:00.000000Z'");
  EXPECT_EQ(Push("ts", ConstraintOp::kGt, Text("2024-05-01T12:00:00.000000Z")),
            "\"ts\" > TIMESTAMP '2024-05-01T12:00:00.000000Z'");
  EXPECT_EQ(Push("ts", ConstraintOp::kLe, Text("2024-05-01T12:00:00.000000Z")),
            "(\"ts\" <= TIMESTAMP '2024-05-01T12:00:00.000000Z' OR " + late + ")");
  EXPECT_EQ(Push("ts", ConstraintOp::kGe, Text("2024-05-01")),
            "\"ts\" >= TIMESTAMP '2024-05-01T00:00:00.000000Z'");
  EXPECT_EQ(Push("ts", ConstraintOp::kGt, Text("2024-05-01")),
            "\"ts\" >= TIMESTAMP '2024-05-01T00:00:00.000000Z'");
  EXPECT_EQ(Push("ts", ConstraintOp::kLe, Text("2024-05-01T10:00:00")),
            "(\"ts\" < TIMESTAMP '2024-05-01T10:00:00.000000Z' OR " + late + ")");
  // Not the shown form: SQLite compares the text, which need not order as time.
  EXPECT_EQ(Push("ts", ConstraintOp::kEq, Text("2024-05-01")), "<none>");
  EXPECT_EQ(Push("ts", ConstraintOp::kGt, Text("2024-05-01 10:00:00")), "<none>");
  EXPECT_EQ(Push("ts", ConstraintOp::kGt, Text("2024-05-01T12:00:00Z")), "<none>");
  EXPECT_EQ(Push("ts", ConstraintOp::kLt, Text("+10000-01-01T00:00:00.000000Z")), "<none>");
  EXPECT_EQ(Push("ts", ConstraintOp::kGt, Int(5)), "<none>");
}

TEST(PushdownTest, LikeWithoutLettersAndGlobWithoutClasses) {
  EXPECT_EQ(Push("id", ConstraintOp::kLike, Text("12_%")), "\"id\" LIKE '12_%'");
  EXPECT_EQ(Push("id", ConstraintOp::kLike, Text("1\\2")), "\"id\" LIKE '1\\\\2'");
  EXPECT_EQ(Push("id", ConstraintOp::kLike, Text("ab%")), "<none>");  // SQLite ignores case
  EXPECT_EQ(Push("id", ConstraintOp::kGlob, Text("ab*?")), "\"id\" LIKE 'ab%_'");
  EXPECT_EQ(Push("id", ConstraintOp::kGlob, Text("5%_\\*")), "\"id\" LIKE '5\\%\\_\\\\%'");
  EXPECT_EQ(Push("id", ConstraintOp::kGlob, Text("[ab]*")), "<none>");
  EXPECT_EQ(Push("id", ConstraintOp::kGlob, Value()), "<never>");
  EXPECT_EQ(Push("i64", ConstraintOp::kLike, Text("1%")), "<none>");
}

TEST(PushdownTest, InListsDropNullsAndNeedEveryValuePushable) {
  EXPECT_EQ(In("id", {Text("a"), Value(), Text("b")}), "\"id\" IN ('a', 'b')");
  EXPECT_EQ(In("i64", {Int(1), Value(2.5)}), "\"i64\" IN (1, 2.5)");
  EXPECT_EQ(In("i64", {Int(1), Text("2")}), "<none>");
  EXPECT_EQ(In("f32", {Value(0.1)}), "\"f32\" IN (0.10000000149011612)");
  EXPECT_EQ(In("ts", {Text("2024-05-01")}), "<none>");
  EXPECT_EQ(In("id", {Value()}), "<never>");
  EXPECT_EQ(In("id", {}), "<never>");
}

TEST(PushdownTest, KeysForLookups) {
  EXPECT_EQ(KeyForLookup(Col("id"), Text("k1")), expr::Scalar::String("k1"));
  EXPECT_EQ(KeyForLookup(Col("id"), Int(1)), std::nullopt);
  EXPECT_EQ(KeyForLookup(Col("id"), Value()), std::nullopt);
  EXPECT_EQ(KeyForLookup(Col("i8"), Int(7)), expr::Scalar::Int64(7));
  EXPECT_EQ(KeyForLookup(Col("i8"), Value(7.0)), expr::Scalar::Int64(7));
  EXPECT_EQ(KeyForLookup(Col("i8"), Value(7.5)), std::nullopt);
  EXPECT_EQ(KeyForLookup(Col("i8"), Int(700)), std::nullopt);
  EXPECT_EQ(KeyForLookup(Col("ts"), Text("1970-01-01T00:00:00.000001Z")),
            expr::Scalar::Timestamp(1));
  EXPECT_EQ(KeyForLookup(Col("ts"), Text("1970-01-01")), std::nullopt);
}

}  // namespace
}  // namespace strata::sql
