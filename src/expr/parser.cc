// Recursive-descent parser for predicates: OR < AND < NOT < comparison / IN / IS / LIKE /
// BETWEEN < operands (literals, columns, array_has(...), parenthesised expressions).
#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "expr/lexer.h"
#include "strata/expr.h"
#include "util/text_codec.h"

namespace strata::expr {
namespace {

using internal::IsKeyword;
using internal::Token;
using internal::TokenKind;

// Parentheses, NOTs and function calls nest at most this deep, so recursion is bounded.
constexpr int kMaxDepth = 128;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Result<Expr> ParseAll() {
    STRATA_ASSIGN_OR_RETURN(Expr e, ParseOr(0));
    if (Peek().kind != TokenKind::kEnd) {
      return Expected("an operator, AND, OR or the end of input");
    }
    return e;
  }

 private:
  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  bool AtKeyword(std::string_view upper, size_t ahead = 0) const {
    const Token& t = Peek(ahead);
    return t.kind == TokenKind::kIdentifier && IsKeyword(t.text, upper);
  }
  Status ErrorAt(const Token& token, std::string_view what) const {
    return Status::InvalidArgument(
        fmt::format("syntax error at position {}: {}", token.position, what));
  }
  Status Expected(std::string_view what) const {
    return ErrorAt(Peek(), fmt::format("expected {}, found {}", what, DescribeToken(Peek())));
  }
  Status Expect(TokenKind kind, std::string_view what) {
    if (Peek().kind != kind) return Expected(what);
    ++pos_;
    return Status::OK();
  }
  Status CheckDepth(int depth) const {
    if (depth > kMaxDepth) {
      return ErrorAt(Peek(), fmt::format("expression nested deeper than {} levels", kMaxDepth));
    }
    return Status::OK();
  }

  Result<Expr> ParseOr(int depth) {
    STRATA_RETURN_IF_ERROR(CheckDepth(depth));
    std::vector<Expr> terms;
    STRATA_ASSIGN_OR_RETURN(Expr first, ParseAnd(depth));
    terms.push_back(std::move(first));
    while (AtKeyword("OR")) {
      ++pos_;
      STRATA_ASSIGN_OR_RETURN(Expr next, ParseAnd(depth));
      terms.push_back(std::move(next));
    }
    if (terms.size() == 1) return std::move(terms[0]);
    return Expr::Or(std::move(terms));
  }

  Result<Expr> ParseAnd(int depth) {
    std::vector<Expr> terms;
    STRATA_ASSIGN_OR_RETURN(Expr first, ParseNot(depth));
    terms.push_back(std::move(first));
    while (AtKeyword("AND")) {
      ++pos_;
      STRATA_ASSIGN_OR_RETURN(Expr next, ParseNot(depth));
      terms.push_back(std::move(next));
    }
    if (terms.size() == 1) return std::move(terms[0]);
    return Expr::And(std::move(terms));
  }

  Result<Expr> ParseNot(int depth) {
    if (AtKeyword("NOT")) {
      ++pos_;
      STRATA_RETURN_IF_ERROR(CheckDepth(depth + 1));
      STRATA_ASSIGN_OR_RETURN(Expr operand, ParseNot(depth + 1));
      return Expr::Not(std::move(operand));
    }
    return ParsePredicate(depth);
  }

  Result<Expr> ParsePredicate(int depth) {
    STRATA_ASSIGN_OR_RETURN(Expr left, ParseOperand(depth));
    const Token& t = Peek();
    std::optional<CompareOp> op;
    switch (t.kind) {
      case TokenKind::kEq:
        op = CompareOp::kEq;
        break;
      case TokenKind::kNe:
        op = CompareOp::kNe;
        break;
      case TokenKind::kLt:
        op = CompareOp::kLt;
        break;
      case TokenKind::kLe:
        op = CompareOp::kLe;
        break;
      case TokenKind::kGt:
        op = CompareOp::kGt;
        break;
      case TokenKind::kGe:
        op = CompareOp::kGe;
        break;
      default:
        break;
    }
    if (op.has_value()) {
      ++pos_;
      STRATA_ASSIGN_OR_RETURN(Expr right, ParseOperand(depth));
      return Expr::Compare(*op, std::move(left), std::move(right));
    }
    if (AtKeyword("IS")) {
      ++pos_;
      bool negated = false;
      if (AtKeyword("NOT")) {
        ++pos_;
        negated = true;
      }
      if (!AtKeyword("NULL")) return Expected(negated ? "NULL after IS NOT" : "NULL after IS");
      ++pos_;
      return Expr::IsNull(std::move(left), negated);
    }
    bool negated = false;
    if (AtKeyword("NOT") &&
        (AtKeyword("IN", 1) || AtKeyword("LIKE", 1) || AtKeyword("BETWEEN", 1))) {
      ++pos_;
      negated = true;
    }
    if (AtKeyword("IN")) {
      ++pos_;
      return ParseInList(std::move(left), negated);
    }
    if (AtKeyword("LIKE")) {
      ++pos_;
      if (Peek().kind != TokenKind::kString) return Expected("a string pattern after LIKE");
      std::string pattern = Peek().text;
      ++pos_;
      return Expr::Like(std::move(left), std::move(pattern), negated);
    }
    if (AtKeyword("BETWEEN")) {
      ++pos_;
      STRATA_ASSIGN_OR_RETURN(Expr low, ParseOperand(depth));
      if (!AtKeyword("AND")) return Expected("AND in BETWEEN ... AND ...");
      ++pos_;
      STRATA_ASSIGN_OR_RETURN(Expr high, ParseOperand(depth));
      // x BETWEEN a AND b is x >= a AND x <= b, in SQL and here.
      Expr both = Expr::And({Expr::Compare(CompareOp::kGe, left, std::move(low)),
                             Expr::Compare(CompareOp::kLe, left, std::move(high))});
      return negated ? Expr::Not(std::move(both)) : both;
    }
    return left;
  }

  Result<Expr> ParseInList(Expr operand, bool negated) {
    STRATA_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "'(' after IN"));
    std::vector<Scalar> values;
    while (true) {
      if (values.empty() && Peek().kind == TokenKind::kRParen) {
        return Expected("a literal (an IN list cannot be empty)");
      }
      STRATA_ASSIGN_OR_RETURN(std::optional<Scalar> value, ParseLiteral());
      if (!value.has_value()) return Expected("a literal in the IN list");
      values.push_back(std::move(*value));
      if (Peek().kind == TokenKind::kComma) {
        ++pos_;
        continue;
      }
      STRATA_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "',' or ')' in the IN list"));
      break;
    }
    return Expr::In(std::move(operand), std::move(values), negated);
  }

  // A literal at the current token, std::nullopt when there is none (nothing consumed).
  Result<std::optional<Scalar>> ParseLiteral() {
    const Token& t = Peek();
    if (t.kind == TokenKind::kMinus) {
      const Token& number = Peek(1);
      if (number.kind != TokenKind::kInteger && number.kind != TokenKind::kFloat) {
        ++pos_;
        return Expected("a number after '-'");
      }
      ++pos_;
      return ParseNumber(/*negative=*/true);
    }
    if (t.kind == TokenKind::kInteger || t.kind == TokenKind::kFloat) {
      return ParseNumber(/*negative=*/false);
    }
    if (t.kind == TokenKind::kString) {
      ++pos_;
      return std::optional<Scalar>(Scalar::String(t.text));
    }
    if (t.kind != TokenKind::kIdentifier) return std::optional<Scalar>();
    if (IsKeyword(t.text, "TRUE") || IsKeyword(t.text, "FALSE")) {
      ++pos_;
      return std::optional<Scalar>(Scalar::Bool(IsKeyword(t.text, "TRUE")));
    }
    if (IsKeyword(t.text, "NULL")) {
      ++pos_;
      return std::optional<Scalar>(Scalar::Null());
    }
    if (IsKeyword(t.text, "TIMESTAMP")) {
      ++pos_;
      const Token& text = Peek();
      if (text.kind != TokenKind::kString) return Expected("a string after TIMESTAMP");
      Result<int64_t> micros = ParseTimestampMicros(text.text);
      if (!micros.ok()) {
        return ErrorAt(text, "bad TIMESTAMP literal: " + micros.status().message());
      }
      ++pos_;
      return std::optional<Scalar>(Scalar::Timestamp(*micros));
    }
    return std::optional<Scalar>();
  }

  Result<std::optional<Scalar>> ParseNumber(bool negative) {
    const Token& t = Peek();
    const char* begin = t.text.data();
    const char* end = begin + t.text.size();
    const std::string shown = (negative ? "-" : "") + t.text;
    if (t.kind == TokenKind::kInteger) {
      uint64_t magnitude = 0;
      auto [ptr, ec] = std::from_chars(begin, end, magnitude);
      constexpr uint64_t kInt64Limit = uint64_t{1} << 63;  // |INT64_MIN|
      if (ec != std::errc() || ptr != end || (negative && magnitude > kInt64Limit)) {
        return ErrorAt(t, fmt::format("integer literal {} is out of range", shown));
      }
      ++pos_;
      if (negative) {
        // -magnitude computed in unsigned arithmetic, then reinterpreted: exact for 2^63.
        return std::optional<Scalar>(Scalar::Int64(static_cast<int64_t>(0 - magnitude)));
      }
      if (magnitude <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::optional<Scalar>(Scalar::Int64(static_cast<int64_t>(magnitude)));
      }
      return std::optional<Scalar>(Scalar::UInt64(magnitude));
    }
    double value = 0;
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec == std::errc::result_out_of_range) {
      return ErrorAt(t, fmt::format("float literal {} is out of range", shown));
    }
    if (ec != std::errc() || ptr != end) {
      return ErrorAt(t, fmt::format("malformed number '{}'", shown));
    }
    ++pos_;
    return std::optional<Scalar>(Scalar::Double(negative ? -value : value));
  }

  Result<Expr> ParseOperand(int depth) {
    const Token& t = Peek();
    if (t.kind == TokenKind::kLParen) {
      ++pos_;
      STRATA_ASSIGN_OR_RETURN(Expr inner, ParseOr(depth + 1));
      STRATA_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "')'"));
      return inner;
    }
    STRATA_ASSIGN_OR_RETURN(std::optional<Scalar> literal, ParseLiteral());
    if (literal.has_value()) return Expr::Literal(std::move(*literal));
    if (t.kind == TokenKind::kIdentifier && Peek(1).kind == TokenKind::kLParen) {
      return ParseFunction(depth);
    }
    if (t.kind == TokenKind::kQuotedIdentifier ||
        (t.kind == TokenKind::kIdentifier && !internal::IsReservedWord(t.text))) {
      return ParseColumn();
    }
    return Expected("a column, a literal or '('");
  }

  Result<Expr> ParseColumn() {
    std::vector<std::string> path;
    path.push_back(Peek().text);
    ++pos_;
    while (Peek().kind == TokenKind::kDot) {
      ++pos_;
      const Token& t = Peek();
      if (t.kind != TokenKind::kIdentifier && t.kind != TokenKind::kQuotedIdentifier) {
        return Expected("a field name after '.'");
      }
      path.push_back(t.text);
      ++pos_;
    }
    return Expr::ColumnPath(std::move(path));
  }

  Result<Expr> ParseFunction(int depth) {
    const Token& name = Peek();
    if (!IsKeyword(name.text, "ARRAY_HAS") && !IsKeyword(name.text, "ARRAY_CONTAINS")) {
      return ErrorAt(
          name, fmt::format("unknown function '{}' (known: array_has, array_contains)", name.text));
    }
    STRATA_RETURN_IF_ERROR(CheckDepth(depth + 1));
    pos_ += 2;  // name and '('
    STRATA_ASSIGN_OR_RETURN(Expr list, ParseOperand(depth + 1));
    STRATA_RETURN_IF_ERROR(Expect(TokenKind::kComma, fmt::format("',' in {}()", name.text)));
    STRATA_ASSIGN_OR_RETURN(Expr value, ParseOperand(depth + 1));
    STRATA_RETURN_IF_ERROR(Expect(TokenKind::kRParen, fmt::format("')' after {}(...", name.text)));
    return Expr::ArrayHas(std::move(list), std::move(value));
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace

Result<Expr> Parse(std::string_view text) {
  STRATA_ASSIGN_OR_RETURN(std::vector<Token> tokens, internal::Tokenize(text));
  return Parser(std::move(tokens)).ParseAll();
}

}  // namespace strata::expr
