// Parser tests: literals, identifiers, precedence, round trips through ToString, and syntax
// errors that name the position.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "strata/expr.h"

namespace strata::expr {
namespace {

using ::testing::HasSubstr;

// The canonical text of the parsed expression, or "error: <message>".
std::string Canon(std::string_view text) {
  Result<Expr> e = Parse(text);
  if (!e.ok()) return "error: " + e.status().message();
  // Whatever parses must read back from its own text as an equal tree.
  Result<Expr> again = Parse(e->ToString());
  EXPECT_TRUE(again.ok()) << e->ToString() << ": " << again.status();
  if (again.ok()) {
    EXPECT_TRUE(again->Equals(*e)) << e->ToString() << " vs " << again->ToString();
  }
  return e->ToString();
}

std::string ParseError(std::string_view text) {
  Result<Expr> e = Parse(text);
  if (e.ok()) return "parsed: " + e->ToString();
  EXPECT_TRUE(e.status().IsInvalidArgument());
  return e.status().message();
}

TEST(ParserTest, IntegerLiterals) {
  EXPECT_EQ(Canon("x = 42"), "x = 42");
  EXPECT_EQ(Canon("x = -42"), "x = -42");
  EXPECT_EQ(Canon("x = - 7"), "x = -7");
  EXPECT_EQ(Canon("x = 9223372036854775807"), "x = 9223372036854775807");
  EXPECT_EQ(Canon("x = -9223372036854775808"), "x = -9223372036854775808");
  EXPECT_EQ(Canon("x = 18446744073709551615"), "x = 18446744073709551615");
  Result<Expr> big = Parse("x = 9223372036854775808");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->operands()[1].literal().kind(), Scalar::Kind::kUInt64);
  Result<Expr> min = Parse("x = -9223372036854775808");
  ASSERT_TRUE(min.ok());
  EXPECT_EQ(min->operands()[1].literal(), Scalar::Int64(INT64_MIN));
  EXPECT_EQ(ParseError("x = 18446744073709551616"),
            "syntax error at position 5: integer literal 18446744073709551616 is out of range");
  EXPECT_EQ(ParseError("x = -9223372036854775809"),
            "syntax error at position 6: integer literal -9223372036854775809 is out of range");
}

TEST(ParserTest, FloatLiterals) {
  EXPECT_EQ(Canon("x = 1.5"), "x = 1.5");
  EXPECT_EQ(Canon("x = 1e-3"), "x = 0.001");
  EXPECT_EQ(Canon("x = 2E3"), "x = 2000.0");
  EXPECT_EQ(Canon("x = .5"), "x = 0.5");
  EXPECT_EQ(Canon("x = 5."), "x = 5.0");
  EXPECT_EQ(Canon("x = -0.0"), "x = -0.0");
  EXPECT_EQ(Canon("x = 1e300"), "x = 1e+300");
  EXPECT_EQ(Canon("x = 0.1"), "x = 0.1");
  Result<Expr> e = Parse("x = 1.0");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->operands()[1].literal().kind(), Scalar::Kind::kDouble);
  EXPECT_EQ(ParseError("x = 1e999"),
            "syntax error at position 5: float literal 1e999 is out of range");
  EXPECT_EQ(ParseError("x = 1e"), "syntax error at position 5: malformed number '1e'");
  EXPECT_EQ(ParseError("x = 12abc"), "syntax error at position 5: malformed number '12abc'");
  EXPECT_EQ(ParseError("x = 1.2.3"), "syntax error at position 5: malformed number '1.2.3'");
}

TEST(ParserTest, StringLiteralsDoubleTheirQuotes) {
  EXPECT_EQ(Canon("s = 'it''s'"), "s = 'it''s'");
  Result<Expr> e = Parse("s = 'it''s'");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->operands()[1].literal().string_value(), "it's");
  EXPECT_EQ(Canon("s = ''"), "s = ''");
  EXPECT_EQ(Canon("s = ''''"), "s = ''''");
  EXPECT_EQ(Canon("s = 'two\nlines \"q\"'"), "s = 'two\nlines \"q\"'");
  EXPECT_EQ(ParseError("s = 'abc"), "syntax error at position 5: unterminated string literal");
  EXPECT_EQ(ParseError("s = 'abc''"), "syntax error at position 5: unterminated string literal");
}

TEST(ParserTest, KeywordLiteralsAreCaseInsensitive) {
  EXPECT_EQ(Canon("b = true"), "b = TRUE");
  EXPECT_EQ(Canon("b = False"), "b = FALSE");
  EXPECT_EQ(Canon("b = null"), "b = NULL");
  EXPECT_EQ(Canon("a and b or not c"), "(a AND b) OR NOT c");
  EXPECT_EQ(Canon("x iS nOt NuLl"), "x IS NOT NULL");
}

TEST(ParserTest, TimestampLiterals) {
  EXPECT_EQ(Canon("ts > TIMESTAMP '2024-05-01T12:00:00Z'"),
            "ts > TIMESTAMP '2024-05-01T12:00:00.000000Z'");
  EXPECT_EQ(Canon("ts > timestamp '2024-05-01T14:00:00+02:00'"),
            "ts > TIMESTAMP '2024-05-01T12:00:00.000000Z'");
  Result<Expr> e = Parse("ts = TIMESTAMP '1970-01-01T00:00:01Z'");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->operands()[1].literal(), Scalar::Timestamp(1000000));
  EXPECT_THAT(ParseError("ts > TIMESTAMP 'yesterday'"),
              HasSubstr("syntax error at position 16: bad TIMESTAMP literal: "));
  EXPECT_EQ(ParseError("ts > TIMESTAMP 5"),
            "syntax error at position 16: expected a string after TIMESTAMP, found '5'");
}

TEST(ParserTest, Identifiers) {
  EXPECT_EQ(Canon("_x9 = 1"), "_x9 = 1");
  EXPECT_EQ(Canon("\"my col\" = 1"), "\"my col\" = 1");
  EXPECT_EQ(Canon("\"say \"\"hi\"\"\" = 1"), "\"say \"\"hi\"\"\" = 1");
  Result<Expr> quoted = Parse("\"say \"\"hi\"\"\" = 1");
  ASSERT_TRUE(quoted.ok());
  EXPECT_EQ(quoted->operands()[0].column_path(), std::vector<std::string>{"say \"hi\""});
  // Keywords and function names used as column names must be quoted, and are written so.
  EXPECT_EQ(Canon("\"and\" = 1"), "\"and\" = 1");
  EXPECT_EQ(Canon("\"array_has\" = 1"), "\"array_has\" = 1");
  EXPECT_EQ(Canon("\"Select\" = 1"), "Select = 1");
  EXPECT_EQ(ParseError("\"\" = 1"), "syntax error at position 1: empty quoted identifier \"\"");
  EXPECT_EQ(ParseError("\"abc = 1"), "syntax error at position 1: unterminated quoted identifier");
}

TEST(ParserTest, StructPaths) {
  Result<Expr> e = Parse("usage.prompt_tokens > 10");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->operands()[0].column_path(), (std::vector<std::string>{"usage", "prompt_tokens"}));
  EXPECT_EQ(Canon("a.\"b c\".d = 1"), "a.\"b c\".d = 1");
  EXPECT_EQ(Canon("a.null = 1"), "a.\"null\" = 1");
  EXPECT_EQ(ParseError("a. = 1"),
            "syntax error at position 4: expected a field name after '.', found '='");
}

TEST(ParserTest, ComparisonOperators) {
  EXPECT_EQ(Canon("a = 1 AND a != 1 AND a <> 1 AND a < 1 AND a <= 1 AND a > 1 AND a >= 1"),
            "a = 1 AND a != 1 AND a != 1 AND a < 1 AND a <= 1 AND a > 1 AND a >= 1");
  EXPECT_EQ(Canon("1 < a"), "1 < a");
  EXPECT_EQ(Canon("a=b"), "a = b");
}

TEST(ParserTest, PrecedenceIsNotThenAndThenOr) {
  Result<Expr> e = Parse("a = 1 OR b = 2 AND NOT c = 3");
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->kind(), Expr::Kind::kOr);
  ASSERT_EQ(e->operands().size(), 2u);
  EXPECT_EQ(e->operands()[0].kind(), Expr::Kind::kCompare);
  const Expr& right = e->operands()[1];
  ASSERT_EQ(right.kind(), Expr::Kind::kAnd);
  EXPECT_EQ(right.operands()[1].kind(), Expr::Kind::kNot);
  EXPECT_EQ(right.operands()[1].operands()[0].kind(), Expr::Kind::kCompare);

  EXPECT_EQ(Canon("(a = 1 OR b = 2) AND c = 3"), "(a = 1 OR b = 2) AND c = 3");
  EXPECT_EQ(Canon("a = 1 OR (b = 2 AND c = 3)"), "a = 1 OR (b = 2 AND c = 3)");
  EXPECT_EQ(Canon("NOT (a = 1 AND b = 2)"), "NOT (a = 1 AND b = 2)");
  EXPECT_EQ(Canon("NOT NOT a"), "NOT NOT a");
  EXPECT_EQ(Canon("((a = 1))"), "a = 1");
  // Chains are flat.
  Result<Expr> chain = Parse("a AND b AND c OR d OR e");
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(chain->operands().size(), 3u);
  EXPECT_EQ(chain->operands()[0].operands().size(), 3u);
}

TEST(ParserTest, InListsTakeLiterals) {
  EXPECT_EQ(Canon("x IN (1, -2, 3.5, 'a', NULL, TRUE, TIMESTAMP '2024-01-01')"),
            "x IN (1, -2, 3.5, 'a', NULL, TRUE, TIMESTAMP '2024-01-01T00:00:00.000000Z')");
  EXPECT_EQ(Canon("x not in (1)"), "x NOT IN (1)");
  EXPECT_EQ(ParseError("x IN ()"),
            "syntax error at position 7: expected a literal (an IN list cannot be empty), found "
            "')'");
  EXPECT_EQ(ParseError("x IN (y)"),
            "syntax error at position 7: expected a literal in the IN list, found 'y'");
  EXPECT_EQ(ParseError("x IN (1, 2"),
            "syntax error at position 11: expected ',' or ')' in the IN list, found end of input");
  EXPECT_EQ(ParseError("x IN 1"), "syntax error at position 6: expected '(' after IN, found '1'");
}

TEST(ParserTest, IsNullAndLike) {
  EXPECT_EQ(Canon("x IS NULL"), "x IS NULL");
  EXPECT_EQ(Canon("x is not null"), "x IS NOT NULL");
  EXPECT_EQ(Canon("s LIKE 'a%'"), "s LIKE 'a%'");
  EXPECT_EQ(Canon("s NOT LIKE 'it''s\\_%'"), "s NOT LIKE 'it''s\\_%'");
  EXPECT_EQ(ParseError("x IS 5"), "syntax error at position 6: expected NULL after IS, found '5'");
  EXPECT_EQ(ParseError("x IS NOT TRUE"),
            "syntax error at position 10: expected NULL after IS NOT, found 'TRUE'");
  EXPECT_EQ(ParseError("s LIKE y"),
            "syntax error at position 8: expected a string pattern after LIKE, found 'y'");
}

TEST(ParserTest, BetweenIsItsAnd) {
  EXPECT_EQ(Canon("x BETWEEN 1 AND 5"), "x >= 1 AND x <= 5");
  EXPECT_EQ(Canon("x NOT BETWEEN 1 AND 5"), "NOT (x >= 1 AND x <= 5)");
  EXPECT_EQ(Canon("x BETWEEN 1 AND 5 AND y = 2"), "(x >= 1 AND x <= 5) AND y = 2");
  EXPECT_EQ(ParseError("x BETWEEN 1 OR 5"),
            "syntax error at position 13: expected AND in BETWEEN ... AND ..., found 'OR'");
}

TEST(ParserTest, ArrayHas) {
  EXPECT_EQ(Canon("array_has(tags, 'a')"), "array_has(tags, 'a')");
  EXPECT_EQ(Canon("ARRAY_CONTAINS(tags, 5) AND x = 1"), "array_has(tags, 5) AND x = 1");
  EXPECT_EQ(Canon("NOT array_has(m.tags, -1.5)"), "NOT array_has(m.tags, -1.5)");
  EXPECT_EQ(ParseError("array_has(tags 'a')"),
            "syntax error at position 16: expected ',' in array_has(), found string 'a'");
  EXPECT_EQ(ParseError("lower(s) = 'a'"),
            "syntax error at position 1: unknown function 'lower' (known: array_has, "
            "array_contains)");
}

TEST(ParserTest, BareOperandsParse) {
  // Type checking, not parsing, decides whether these are predicates.
  EXPECT_EQ(Canon("flag"), "flag");
  EXPECT_EQ(Canon("TRUE"), "TRUE");
  EXPECT_EQ(Canon("NULL"), "NULL");
  EXPECT_EQ(Canon("(a = 1) = TRUE"), "(a = 1) = TRUE");
}

TEST(ParserTest, SyntaxErrorsNameThePosition) {
  EXPECT_EQ(ParseError(""),
            "syntax error at position 1: expected a column, a literal or '(', "
            "found end of input");
  EXPECT_EQ(ParseError("a = "),
            "syntax error at position 5: expected a column, a literal or "
            "'(', found end of input");
  EXPECT_EQ(ParseError("a = 1 b"),
            "syntax error at position 7: expected an operator, AND, OR or "
            "the end of input, found 'b'");
  EXPECT_EQ(ParseError("a = 1 = 2"),
            "syntax error at position 7: expected an operator, AND, OR "
            "or the end of input, found '='");
  EXPECT_EQ(ParseError("(a = 1"), "syntax error at position 7: expected ')', found end of input");
  EXPECT_EQ(ParseError("a AND"),
            "syntax error at position 6: expected a column, a literal or "
            "'(', found end of input");
  EXPECT_EQ(ParseError("a = #"), "syntax error at position 5: unexpected character '#'");
  EXPECT_EQ(ParseError("a = \x01"), "syntax error at position 5: unexpected character byte 0x01");
  EXPECT_EQ(ParseError("a ! 1"), "syntax error at position 3: unexpected character '!'");
  EXPECT_EQ(ParseError("x = -y"),
            "syntax error at position 6: expected a number after '-', "
            "found 'y'");
  EXPECT_EQ(ParseError("AND = 1"),
            "syntax error at position 1: expected a column, a literal or "
            "'(', found 'AND'");
}

TEST(ParserTest, NestingDepthIsBounded) {
  std::string deep(100, '(');
  deep += "a = 1" + std::string(100, ')');
  EXPECT_EQ(Canon(deep), "a = 1");
  std::string too_deep(1000, '(');
  too_deep += "a = 1" + std::string(1000, ')');
  EXPECT_THAT(ParseError(too_deep), HasSubstr("expression nested deeper than 128 levels"));
  std::string nots;
  for (int i = 0; i < 5000; ++i) nots += "NOT ";
  EXPECT_THAT(ParseError(nots + "a"), HasSubstr("expression nested deeper than 128 levels"));
  // Long flat chains are fine.
  std::string chain = "a = 0";
  for (int i = 1; i < 5000; ++i) chain += " AND a = " + std::to_string(i);
  EXPECT_TRUE(Parse(chain).ok());
}

TEST(ParserTest, BuiltTreesPrintParseably) {
  Expr e = Expr::And(
      {Expr::Or({Expr::Compare(CompareOp::kLt, Expr::Column("a"), Expr::Literal(Scalar::Double(2))),
                 Expr::IsNull(Expr::ColumnPath({"s", "t"}), true)}),
       Expr::Not(Expr::Like(Expr::Column("my col"), "x%", false)),
       Expr::In(Expr::Column("k"), {Scalar::Int64(1), Scalar::Null()}),
       Expr::Compare(
           CompareOp::kEq,
           Expr::Compare(CompareOp::kGt, Expr::Column("a"), Expr::Literal(Scalar::Int64(0))),
           Expr::Literal(Scalar::Bool(true)))});
  EXPECT_EQ(e.ToString(),
            "(a < 2.0 OR s.t IS NOT NULL) AND NOT \"my col\" LIKE 'x%' AND k IN (1, NULL) AND "
            "(a > 0) = TRUE");
  Result<Expr> again = Parse(e.ToString());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->Equals(e));
}

TEST(ScalarTest, ToStringAndCompare) {
  EXPECT_EQ(Scalar::Null().ToString(), "NULL");
  EXPECT_EQ(Scalar::UInt64(UINT64_MAX).ToString(), "18446744073709551615");
  EXPECT_EQ(Scalar::Double(std::numeric_limits<double>::quiet_NaN()).ToString(), "NaN");
  EXPECT_EQ(Scalar::String("a'b").ToString(), "'a''b'");
  EXPECT_EQ(*CompareScalars(Scalar::Int64(-1), Scalar::UInt64(0)), -1);
  EXPECT_EQ(*CompareScalars(Scalar::UInt64(UINT64_MAX), Scalar::Int64(INT64_MAX)), 1);
  EXPECT_EQ(*CompareScalars(Scalar::Int64(INT64_MAX), Scalar::Double(9223372036854775808.0)), -1);
  EXPECT_EQ(*CompareScalars(Scalar::Int64(3), Scalar::Double(2.5)), 1);
  EXPECT_EQ(*CompareScalars(Scalar::Int64(3), Scalar::Double(3.0)), 0);
  EXPECT_EQ(*CompareScalars(Scalar::Double(-0.0), Scalar::Double(0.0)), 0);
  const Scalar nan = Scalar::Double(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(*CompareScalars(nan, Scalar::Double(1e308)), 1);
  EXPECT_EQ(*CompareScalars(nan, nan), 0);
  EXPECT_EQ(*CompareScalars(Scalar::UInt64(5), nan), -1);
  EXPECT_EQ(*CompareScalars(Scalar::String("b"), Scalar::String("ab")), 1);
  EXPECT_EQ(*CompareScalars(Scalar::String("\xff"), Scalar::String("a")), 1);  // bytewise
  EXPECT_EQ(*CompareScalars(Scalar::Timestamp(5), Scalar::Int64(4)), 1);
  EXPECT_FALSE(CompareScalars(Scalar::String("1"), Scalar::Int64(1)).has_value());
  EXPECT_FALSE(CompareScalars(Scalar::Null(), Scalar::Null()).has_value());
  EXPECT_FALSE(CompareScalars(Scalar::Bool(true), Scalar::Int64(1)).has_value());
}

}  // namespace
}  // namespace strata::expr
