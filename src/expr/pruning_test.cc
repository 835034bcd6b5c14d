// Statistics, pruning and key extraction tests: ComputeStatistics per type (NaN, long strings,
// dictionaries, slices), CanMatch for every operator, and ExtractKeyEqualities.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>

#include "expr/expr_test_util.h"
#include "strata/builder.h"
#include "strata/expr.h"

namespace strata::expr {
namespace {

using testing::BatchFromJson;
using ::testing::ElementsAre;

ColumnStatistics Stats(const Array& array) {
  Result<ColumnStatistics> stats = ComputeStatistics(array);
  EXPECT_TRUE(stats.ok()) << stats.status();
  return stats.ok() ? *stats : ColumnStatistics{};
}

TEST(StatisticsTest, NumbersBoolsAndTimestamps) {
  SchemaPtr s = schema({field("i", int16()), field("u", uint64()), field("f", float32()),
                        field("b", boolean()), field("ts", timestamp_us())});
  const RecordBatch batch =
      BatchFromJson(s,
                    "{\"i\": 5, \"u\": 18446744073709551615, \"f\": 1.5, \"b\": true, \"ts\": 10}\n"
                    "{\"i\": null, \"u\": null, \"f\": null, \"b\": null, \"ts\": null}\n"
                    "{\"i\": -7, \"u\": 3, \"f\": -2.5, \"b\": true, \"ts\": -10}\n");
  ColumnStatistics i = Stats(batch.column(0));
  EXPECT_EQ(i.min, Scalar::Int64(-7));
  EXPECT_EQ(i.max, Scalar::Int64(5));
  EXPECT_EQ(i.null_count, 1);
  EXPECT_EQ(i.row_count, 3);
  ColumnStatistics u = Stats(batch.column(1));
  EXPECT_EQ(u.min, Scalar::UInt64(3));
  EXPECT_EQ(u.max, Scalar::UInt64(UINT64_MAX));
  ColumnStatistics f = Stats(batch.column(2));
  EXPECT_EQ(f.min, Scalar::Double(-2.5));
  EXPECT_EQ(f.max, Scalar::Double(1.5));
  ColumnStatistics b = Stats(batch.column(3));
  EXPECT_EQ(b.min, Scalar::Bool(true));
  EXPECT_EQ(b.max, Scalar::Bool(true));
  ColumnStatistics ts = Stats(batch.column(4));
  EXPECT_EQ(ts.min, Scalar::Timestamp(-10));
  EXPECT_EQ(ts.max, Scalar::Timestamp(10));
  // Sliced: only the slice's rows count.
  ColumnStatistics sliced = Stats(batch.column(0).Slice(1, 1));
  EXPECT_FALSE(sliced.min.has_value());
  EXPECT_FALSE(sliced.max.has_value());
  EXPECT_EQ(sliced.null_count, 1);
  EXPECT_EQ(sliced.row_count, 1);
  ColumnStatistics tail = Stats(batch.column(0).Slice(2, 1));
  EXPECT_EQ(tail.min, Scalar::Int64(-7));
  EXPECT_EQ(tail.max, Scalar::Int64(-7));
  EXPECT_EQ(tail.null_count, 0);
}

TEST(StatisticsTest, NaNOrdersAboveEveryNumber) {
  SchemaPtr s = schema({field("f", float64())});
  const RecordBatch batch =
      BatchFromJson(s, "{\"f\": 1}\n{\"f\": \"NaN\"}\n{\"f\": \"-Infinity\"}\n");
  ColumnStatistics f = Stats(batch.column(0));
  EXPECT_EQ(f.min, Scalar::Double(-std::numeric_limits<double>::infinity()));
  ASSERT_TRUE(f.max.has_value());
  EXPECT_TRUE(std::isnan(f.max->double_value()));
  ColumnStatistics only_nan = Stats(batch.column(0).Slice(1, 1));
  ASSERT_TRUE(only_nan.min.has_value());
  EXPECT_TRUE(std::isnan(only_nan.min->double_value()));
}

TEST(StatisticsTest, LongStringsGetTruncatedBounds) {
  const std::string long_a(100, 'a');
  const std::string long_b = std::string(70, 'b') + "c";
  SchemaPtr s = schema({field("s", utf8()), field("bin", binary())});
  const RecordBatch batch =
      BatchFromJson(s, fmt::format("{{\"s\": \"{}\"}}\n{{\"s\": \"{}\"}}\n", long_a, long_b));
  ColumnStatistics st = Stats(batch.column(0));
  EXPECT_EQ(st.min, Scalar::String(std::string(64, 'a')));
  EXPECT_EQ(st.max, Scalar::String(std::string(63, 'b') + "c"));
  // Bounds stay bounds.
  EXPECT_LE(*CompareScalars(*st.min, Scalar::String(long_a)), 0);
  EXPECT_GT(*CompareScalars(*st.max, Scalar::String(long_b)), 0);

  BinaryBuilder builder(binary());
  ASSERT_TRUE(builder.Append(std::string(80, '\xff')).ok());
  ASSERT_TRUE(builder.Append(std::string(60, 'x') + std::string(10, '\xff')).ok());
  Result<Array> bytes = builder.Finish();
  ASSERT_TRUE(bytes.ok());
  ColumnStatistics all_ff = Stats(bytes->Slice(0, 1));
  EXPECT_EQ(all_ff.min, Scalar::String(std::string(64, '\xff')));
  EXPECT_FALSE(all_ff.max.has_value());  // no short upper bound exists
  ColumnStatistics carry = Stats(bytes->Slice(1, 1));
  EXPECT_EQ(carry.max, Scalar::String(std::string(59, 'x') + "y"));
}

TEST(StatisticsTest, DictionariesUseOnlyReferencedEntries) {
  SchemaPtr s = schema({field("d", dictionary(int32(), utf8()))});
  const RecordBatch batch = BatchFromJson(
      s, "{\"d\": \"zebra\"}\n{\"d\": \"mango\"}\n{\"d\": null}\n{\"d\": \"apple\"}\n");
  ColumnStatistics all = Stats(batch.column(0));
  EXPECT_EQ(all.min, Scalar::String("apple"));
  EXPECT_EQ(all.max, Scalar::String("zebra"));
  EXPECT_EQ(all.null_count, 1);
  ColumnStatistics middle = Stats(batch.column(0).Slice(1, 2));
  EXPECT_EQ(middle.min, Scalar::String("mango"));
  EXPECT_EQ(middle.max, Scalar::String("mango"));
  EXPECT_EQ(middle.null_count, 1);
}

TEST(StatisticsTest, NestedTypesGetCountsOnly) {
  SchemaPtr s = schema({field("l", list(int32()))});
  const RecordBatch batch = BatchFromJson(s, "{\"l\": [1]}\n{\"l\": null}\n");
  ColumnStatistics l = Stats(batch.column(0));
  EXPECT_FALSE(l.min.has_value());
  EXPECT_EQ(l.null_count, 1);
  EXPECT_EQ(l.row_count, 2);
}

// Statistics for columns by name; CanMatch of `predicate` against them.
class PruneTest : public ::testing::Test {
 protected:
  SchemaPtr schema_ = schema({field("x", int32()), field("s", utf8()), field("f", float64()),
                              field("b", boolean()), field("tags", list(utf8())),
                              field("st", struct_({field("y", int32())})), field("u", uint8())});

  void Set(const std::string& column, std::optional<Scalar> min, std::optional<Scalar> max,
           int64_t null_count = 0, int64_t row_count = 10) {
    stats_[schema_->GetFieldIndex(column)] = {std::move(min), std::move(max), null_count,
                                              row_count};
  }

  std::string_view Prune(std::string_view predicate) {
    Result<BoundExpr> bound = ParseAndBind(predicate, schema_);
    EXPECT_TRUE(bound.ok()) << bound.status();
    if (!bound.ok()) return "error";
    return PruneResultName(CanMatch(*bound, [this](int column) -> const ColumnStatistics* {
      auto it = stats_.find(column);
      return it == stats_.end() ? nullptr : &it->second;
    }));
  }

  std::map<int, ColumnStatistics> stats_;
};

TEST_F(PruneTest, Comparisons) {
  Set("x", Scalar::Int64(10), Scalar::Int64(20));
  EXPECT_EQ(Prune("x = 5"), "none");
  EXPECT_EQ(Prune("x = 10"), "maybe");
  EXPECT_EQ(Prune("x = 21"), "none");
  EXPECT_EQ(Prune("x != 5"), "all");
  EXPECT_EQ(Prune("x < 10"), "none");
  EXPECT_EQ(Prune("x < 11"), "maybe");
  EXPECT_EQ(Prune("x < 21"), "all");
  EXPECT_EQ(Prune("x <= 9"), "none");
  EXPECT_EQ(Prune("x <= 20"), "all");
  EXPECT_EQ(Prune("x > 20"), "none");
  EXPECT_EQ(Prune("x > 9"), "all");
  EXPECT_EQ(Prune("x >= 21"), "none");
  EXPECT_EQ(Prune("x >= 10"), "all");
  EXPECT_EQ(Prune("5 < x"), "all");
  EXPECT_EQ(Prune("x > 9.5"), "all");     // x >= 10
  EXPECT_EQ(Prune("x < 10.5"), "maybe");  // x <= 10
  EXPECT_EQ(Prune("x = 15.5"), "none");
  EXPECT_EQ(Prune("x != 15.5"), "all");
  EXPECT_EQ(Prune("x BETWEEN 0 AND 9"), "none");
  EXPECT_EQ(Prune("x BETWEEN 0 AND 30"), "all");
  Set("x", Scalar::Int64(7), Scalar::Int64(7));
  EXPECT_EQ(Prune("x = 7"), "all");
  EXPECT_EQ(Prune("x != 7"), "none");
  EXPECT_EQ(Prune("x = x"), "maybe");  // column pairs are not pruned
}

TEST_F(PruneTest, NullsMakeAllIntoMaybe) {
  Set("x", Scalar::Int64(10), Scalar::Int64(20), /*null_count=*/3);
  EXPECT_EQ(Prune("x >= 10"), "maybe");
  EXPECT_EQ(Prune("x < 10"), "none");
  EXPECT_EQ(Prune("x IS NULL"), "maybe");
  EXPECT_EQ(Prune("x IS NOT NULL"), "maybe");
  EXPECT_EQ(Prune("NOT x < 10"), "maybe");       // NULL rows stay NULL under NOT
  Set("x", std::nullopt, std::nullopt, 10, 10);  // all null
  EXPECT_EQ(Prune("x = 5"), "none");
  EXPECT_EQ(Prune("x != 5"), "none");
  EXPECT_EQ(Prune("NOT x = 5"), "none");
  EXPECT_EQ(Prune("x IS NULL"), "all");
  EXPECT_EQ(Prune("x IS NOT NULL"), "none");
  EXPECT_EQ(Prune("x IS NULL OR x = 1"), "all");  // the NULL side never meets a FALSE
  Set("x", Scalar::Int64(1), Scalar::Int64(2), 0, 10);
  EXPECT_EQ(Prune("x IS NULL"), "none");
  EXPECT_EQ(Prune("x IS NOT NULL"), "all");
  Set("x", std::nullopt, std::nullopt, 0, 0);  // no rows
  EXPECT_EQ(Prune("x = 1"), "none");
}

TEST_F(PruneTest, UnknownStatisticsAreMaybe) {
  EXPECT_EQ(Prune("x = 5"), "maybe");
  Set("x", std::nullopt, Scalar::Int64(20));
  EXPECT_EQ(Prune("x = 5"), "maybe");
  EXPECT_EQ(Prune("x > 20"), "none");
  EXPECT_EQ(Prune("x < 21"), "all");
  // Statistics of a different family are ignored rather than misread.
  Set("x", Scalar::String("a"), Scalar::String("b"));
  EXPECT_EQ(Prune("x = 5"), "maybe");
}

TEST_F(PruneTest, LogicalOperators) {
  Set("x", Scalar::Int64(10), Scalar::Int64(20));
  Set("s", Scalar::String("b"), Scalar::String("d"));
  EXPECT_EQ(Prune("x = 5 AND s = 'c'"), "none");
  EXPECT_EQ(Prune("x = 15 AND s = 'c'"), "maybe");
  EXPECT_EQ(Prune("x > 5 AND s >= 'a'"), "all");
  EXPECT_EQ(Prune("x = 5 OR s = 'z'"), "none");
  EXPECT_EQ(Prune("x = 5 OR s = 'c'"), "maybe");
  EXPECT_EQ(Prune("x = 5 OR s >= 'a'"), "all");
  EXPECT_EQ(Prune("NOT x = 5"), "all");
  EXPECT_EQ(Prune("NOT x > 5"), "none");
  EXPECT_EQ(Prune("NOT (x = 5 OR s = 'z')"), "all");
  EXPECT_EQ(Prune("TRUE"), "all");
  EXPECT_EQ(Prune("FALSE OR x = 5"), "none");
  EXPECT_EQ(Prune("NULL OR x > 5"), "all");
  EXPECT_EQ(Prune("NULL AND x > 5"), "none");
  EXPECT_EQ(Prune("NOT NULL"), "none");
}

TEST_F(PruneTest, InLists) {
  Set("x", Scalar::Int64(10), Scalar::Int64(20));
  EXPECT_EQ(Prune("x IN (1, 2, 30)"), "none");
  EXPECT_EQ(Prune("x IN (1, 15)"), "maybe");
  EXPECT_EQ(Prune("x NOT IN (1, 2)"), "all");
  EXPECT_EQ(Prune("x IN (1, NULL)"), "none");
  EXPECT_EQ(Prune("x NOT IN (1, NULL)"), "none");  // NULL, never TRUE
  EXPECT_EQ(Prune("x IN (15, NULL)"), "maybe");
  Set("x", Scalar::Int64(7), Scalar::Int64(7));
  EXPECT_EQ(Prune("x IN (7, 8)"), "all");
  EXPECT_EQ(Prune("x NOT IN (7)"), "none");
  EXPECT_EQ(Prune("x IN (7.5)"), "none");
}

TEST_F(PruneTest, LikeUsesTheLiteralPrefix) {
  Set("s", Scalar::String("apple"), Scalar::String("apricot"));
  EXPECT_EQ(Prune("s LIKE 'ap%'"), "all");
  EXPECT_EQ(Prune("s LIKE 'a%'"), "all");
  EXPECT_EQ(Prune("s LIKE '%'"), "all");
  EXPECT_EQ(Prune("s LIKE 'apr%'"), "maybe");
  EXPECT_EQ(Prune("s LIKE 'b%'"), "none");
  EXPECT_EQ(Prune("s LIKE 'aa%'"), "none");
  EXPECT_EQ(Prune("s LIKE 'apq%'"), "maybe");  // between apple and apricot
  EXPECT_EQ(Prune("s LIKE 'ap_le'"), "maybe");
  EXPECT_EQ(Prune("s LIKE 'b_'"), "none");
  EXPECT_EQ(Prune("s LIKE '%x'"), "maybe");
  EXPECT_EQ(Prune("s LIKE 'apple'"), "maybe");
  EXPECT_EQ(Prune("s LIKE 'zebra'"), "none");
  EXPECT_EQ(Prune("s NOT LIKE 'ap%'"), "none");
  EXPECT_EQ(Prune("s NOT LIKE 'b%'"), "all");
  Set("s", Scalar::String("ab\xff"), Scalar::String("ab\xff\xff"));
  EXPECT_EQ(Prune("s LIKE 'ab\xff%'"), "all");
  EXPECT_EQ(Prune("s LIKE 'ac%'"), "none");
}

TEST_F(PruneTest, FloatsBoolsAndUnsupportedShapes) {
  Set("f", Scalar::Double(1.0), Scalar::Double(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_EQ(Prune("f > 1e300"), "maybe");  // NaN is above every number
  EXPECT_EQ(Prune("f < 1"), "none");
  Set("f", Scalar::Double(-0.0), Scalar::Double(0.0));
  EXPECT_EQ(Prune("f = 0"), "all");
  Set("b", Scalar::Bool(false), Scalar::Bool(false));
  EXPECT_EQ(Prune("b"), "none");
  EXPECT_EQ(Prune("NOT b"), "all");
  EXPECT_EQ(Prune("b = FALSE"), "all");
  Set("b", Scalar::Bool(false), Scalar::Bool(true));
  EXPECT_EQ(Prune("b"), "maybe");
  Set("tags", std::nullopt, std::nullopt, 0, 10);
  EXPECT_EQ(Prune("array_has(tags, 'a')"), "maybe");
  Set("tags", std::nullopt, std::nullopt, 10, 10);
  EXPECT_EQ(Prune("array_has(tags, 'a')"), "none");
  Set("st", std::nullopt, std::nullopt, 10, 10);
  EXPECT_EQ(Prune("st.y = 1"), "maybe");  // fields have no statistics of their own
  Set("u", Scalar::UInt64(0), Scalar::UInt64(200));
  EXPECT_EQ(Prune("u > 200"), "none");
  EXPECT_EQ(Prune("u >= 0"), "all");
}

// Key values of `predicate` for column "k" (index 0), as text, or "none".
std::string Keys(std::string_view predicate) {
  SchemaPtr s = schema({field("k", int64()), field("other", utf8()), field("name", utf8())});
  Result<BoundExpr> bound = ParseAndBind(predicate, s);
  EXPECT_TRUE(bound.ok()) << bound.status();
  if (!bound.ok()) return "error";
  std::optional<std::vector<Scalar>> keys = ExtractKeyEqualities(*bound, 0);
  if (!keys.has_value()) return "none";
  std::string out = "[";
  for (size_t i = 0; i < keys->size(); ++i) out += (i ? ", " : "") + (*keys)[i].ToString();
  return out + "]";
}

TEST(KeyEqualitiesTest, ExtractsEqualitiesAndInLists) {
  EXPECT_EQ(Keys("k = 5"), "[5]");
  EXPECT_EQ(Keys("5 = k"), "[5]");
  EXPECT_EQ(Keys("k = 5.0"), "[5]");
  EXPECT_EQ(Keys("k IN (3, 1, 2, 1, NULL)"), "[1, 2, 3]");
  EXPECT_EQ(Keys("k = 5 AND other = 'x'"), "[5]");
  EXPECT_EQ(Keys("other = 'x' AND (k = 5 OR k = 7)"), "[5, 7]");
  EXPECT_EQ(Keys("k IN (1, 2, 3) AND k IN (2, 3, 4)"), "[2, 3]");
  EXPECT_EQ(Keys("k = 1 AND k = 2"), "[]");
  EXPECT_EQ(Keys("k = 1.5"), "[]");
  EXPECT_EQ(Keys("FALSE"), "[]");
  EXPECT_EQ(Keys("k = NULL"), "[]");
  EXPECT_EQ(Keys("k = 1 OR k IN (2, 1)"), "[1, 2]");
}

TEST(KeyEqualitiesTest, OtherShapesDoNotRestrictTheKey) {
  EXPECT_EQ(Keys("k > 5"), "none");
  EXPECT_EQ(Keys("k != 5"), "none");
  EXPECT_EQ(Keys("NOT k = 5"), "none");
  EXPECT_EQ(Keys("k NOT IN (1, 2)"), "none");
  EXPECT_EQ(Keys("k = 5 OR other = 'x'"), "none");
  EXPECT_EQ(Keys("other = 'x'"), "none");
  EXPECT_EQ(Keys("other = name"), "none");
  EXPECT_EQ(Keys("TRUE"), "none");
  EXPECT_EQ(Keys("k IS NULL"), "none");
}

TEST(KeyEqualitiesTest, StringKeys) {
  SchemaPtr s = schema({field("id", dictionary(int32(), utf8())), field("n", int32())});
  Result<BoundExpr> bound = ParseAndBind("n > 1 AND id IN ('b', 'a')", s);
  ASSERT_TRUE(bound.ok());
  std::optional<std::vector<Scalar>> keys = ExtractKeyEqualities(*bound, 0);
  ASSERT_TRUE(keys.has_value());
  EXPECT_THAT(*keys, ElementsAre(Scalar::String("a"), Scalar::String("b")));
  EXPECT_FALSE(ExtractKeyEqualities(*bound, 1).has_value());
}

}  // namespace
}  // namespace strata::expr
