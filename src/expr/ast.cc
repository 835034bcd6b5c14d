// Expr: the parsed expression tree, its factories, SQL text and structural equality.
#include <cassert>
#include <string>

#include "expr/lexer.h"
#include "strata/expr.h"

namespace strata::expr {

struct Expr::Node {
  Kind kind = Kind::kLiteral;
  Scalar literal;
  std::vector<std::string> path;
  CompareOp op = CompareOp::kEq;
  bool negated = false;
  std::vector<Expr> operands;
  std::vector<Scalar> values;
  std::string pattern;
};

namespace {

std::shared_ptr<Expr::Node> NewNode(Expr::Kind kind) {
  auto node = std::make_shared<Expr::Node>();
  node->kind = kind;
  return node;
}

// An operand of a comparison, IN, IS NULL or LIKE: parenthesised unless it is atomic.
std::string OperandText(const Expr& e) {
  switch (e.kind()) {
    case Expr::Kind::kLiteral:
    case Expr::Kind::kColumn:
    case Expr::Kind::kArrayHas:
      return e.ToString();
    default:
      return "(" + e.ToString() + ")";
  }
}

// An operand of AND / OR / NOT: nested AND / OR are parenthesised.
std::string LogicalOperandText(const Expr& e) {
  if (e.kind() == Expr::Kind::kAnd || e.kind() == Expr::Kind::kOr) {
    return "(" + e.ToString() + ")";
  }
  return e.ToString();
}

}  // namespace

Expr Expr::Literal(Scalar value) {
  auto node = NewNode(Kind::kLiteral);
  node->literal = std::move(value);
  return Expr(std::move(node));
}

Expr Expr::ColumnPath(std::vector<std::string> path) {
  auto node = NewNode(Kind::kColumn);
  node->path = std::move(path);
  return Expr(std::move(node));
}

Expr Expr::Compare(CompareOp op, Expr left, Expr right) {
  auto node = NewNode(Kind::kCompare);
  node->op = op;
  node->operands = {std::move(left), std::move(right)};
  return Expr(std::move(node));
}

Expr Expr::In(Expr operand, std::vector<Scalar> values, bool negated) {
  auto node = NewNode(Kind::kIn);
  node->operands = {std::move(operand)};
  node->values = std::move(values);
  node->negated = negated;
  return Expr(std::move(node));
}

Expr Expr::IsNull(Expr operand, bool negated) {
  auto node = NewNode(Kind::kIsNull);
  node->operands = {std::move(operand)};
  node->negated = negated;
  return Expr(std::move(node));
}

Expr Expr::Like(Expr operand, std::string pattern, bool negated) {
  auto node = NewNode(Kind::kLike);
  node->operands = {std::move(operand)};
  node->pattern = std::move(pattern);
  node->negated = negated;
  return Expr(std::move(node));
}

Expr Expr::ArrayHas(Expr list, Expr value) {
  auto node = NewNode(Kind::kArrayHas);
  node->operands = {std::move(list), std::move(value)};
  return Expr(std::move(node));
}

Expr Expr::And(std::vector<Expr> operands) {
  assert(!operands.empty());
  auto node = NewNode(Kind::kAnd);
  node->operands = std::move(operands);
  return Expr(std::move(node));
}

Expr Expr::Or(std::vector<Expr> operands) {
  assert(!operands.empty());
  auto node = NewNode(Kind::kOr);
  node->operands = std::move(operands);
  return Expr(std::move(node));
}

Expr Expr::Not(Expr operand) {
  auto node = NewNode(Kind::kNot);
  node->operands = {std::move(operand)};
  return Expr(std::move(node));
}

Expr::Kind Expr::kind() const { return node_->kind; }
const Scalar& Expr::literal() const { return node_->literal; }
const std::vector<std::string>& Expr::column_path() const { return node_->path; }
CompareOp Expr::op() const { return node_->op; }
bool Expr::negated() const { return node_->negated; }
const std::vector<Expr>& Expr::operands() const { return node_->operands; }
const std::vector<Scalar>& Expr::values() const { return node_->values; }
const std::string& Expr::pattern() const { return node_->pattern; }

std::string Expr::ToString() const {
  const Node& n = *node_;
  switch (n.kind) {
    case Kind::kLiteral:
      return n.literal.ToString();
    case Kind::kColumn: {
      std::string out;
      for (size_t i = 0; i < n.path.size(); ++i) {
        if (i > 0) out += '.';
        out += internal::QuoteIdentifier(n.path[i]);
      }
      return out;
    }
    case Kind::kCompare:
      return OperandText(n.operands[0]) + " " + std::string(CompareOpSymbol(n.op)) + " " +
             OperandText(n.operands[1]);
    case Kind::kIn: {
      std::string out = OperandText(n.operands[0]) + (n.negated ? " NOT IN (" : " IN (");
      for (size_t i = 0; i < n.values.size(); ++i) {
        if (i > 0) out += ", ";
        out += n.values[i].ToString();
      }
      return out + ")";
    }
    case Kind::kIsNull:
      return OperandText(n.operands[0]) + (n.negated ? " IS NOT NULL" : " IS NULL");
    case Kind::kLike:
      return OperandText(n.operands[0]) + (n.negated ? " NOT LIKE " : " LIKE ") +
             Scalar::String(n.pattern).ToString();
    case Kind::kArrayHas:
      return "array_has(" + OperandText(n.operands[0]) + ", " + OperandText(n.operands[1]) + ")";
    case Kind::kAnd:
    case Kind::kOr: {
      std::string out;
      for (size_t i = 0; i < n.operands.size(); ++i) {
        if (i > 0) out += n.kind == Kind::kAnd ? " AND " : " OR ";
        out += LogicalOperandText(n.operands[i]);
      }
      return out;
    }
    case Kind::kNot:
      return "NOT " + LogicalOperandText(n.operands[0]);
  }
  return "?";
}

bool Expr::Equals(const Expr& other) const {
  const Node& a = *node_;
  const Node& b = *other.node_;
  if (&a == &b) return true;
  if (a.kind != b.kind || a.op != b.op || a.negated != b.negated || !(a.literal == b.literal) ||
      a.path != b.path || a.values != b.values || a.pattern != b.pattern ||
      a.operands.size() != b.operands.size()) {
    return false;
  }
  for (size_t i = 0; i < a.operands.size(); ++i) {
    if (!a.operands[i].Equals(b.operands[i])) return false;
  }
  return true;
}

}  // namespace strata::expr
