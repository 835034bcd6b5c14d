// Bind: resolves columns against a schema, type-checks every operator and coerces literals
// to their column's domain (range-checked), folding literal-only terms into constants.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "expr/bound.h"
#include "expr/lexer.h"
#include "expr/numeric.h"
#include "strata/expr.h"
#include "util/text_codec.h"

namespace strata::expr {

using internal::BoundColumn;
using internal::BoundKind;
using internal::BoundNode;
using internal::BoundNodePtr;
using internal::Domain;
using internal::DomainOf;

namespace internal {

Domain DomainOf(const DataType& type) {
  switch (type.id()) {
    case TypeId::kBool:
      return Domain::kBool;
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
      return Domain::kSigned;
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kUInt64:
      return Domain::kUnsigned;
    case TypeId::kFloat32:
    case TypeId::kFloat64:
      return Domain::kFloat;
    case TypeId::kTimestamp:
      return Domain::kTimestamp;
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
      return Domain::kString;
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      return Domain::kBinary;
    case TypeId::kDictionary:
      return DomainOf(*type.dictionary_value_type());
    default:
      return Domain::kOther;
  }
}

}  // namespace internal

namespace {

// Programmatically built trees may be deeper than the parser allows; bound the recursion.
constexpr int kMaxBindDepth = 256;

std::string DescribeLiteral(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::kNull:
      return "NULL";
    case Scalar::Kind::kBool:
      return "boolean " + s.ToString();
    case Scalar::Kind::kInt64:
    case Scalar::Kind::kUInt64:
      return "integer " + s.ToString();
    case Scalar::Kind::kDouble:
      return "float " + s.ToString();
    case Scalar::Kind::kString:
      return "string " + s.ToString();
    case Scalar::Kind::kTimestamp:
      return "timestamp " + s.ToString();
  }
  return "?";
}

std::string DescribeExpr(const Expr& e) {
  switch (e.kind()) {
    case Expr::Kind::kLiteral:
      return DescribeLiteral(e.literal());
    case Expr::Kind::kColumn:
      return "column '" + e.ToString() + "'";
    default:
      return "(" + e.ToString() + ")";
  }
}

size_t EditDistance(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// "; did you mean 'reward'?" for close names, else "; <listing> a, b, c" or "; <none>".
std::string Suggest(std::string_view name, const std::vector<FieldPtr>& fields,
                    std::string_view listing, std::string_view none) {
  std::vector<std::pair<size_t, std::string>> close;
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  for (const FieldPtr& f : fields) {
    const size_t d = EditDistance(name, f->name());
    if (d <= limit) close.emplace_back(d, f->name());
  }
  std::stable_sort(close.begin(), close.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  if (!close.empty()) {
    std::string out = "; did you mean '" + close[0].second + "'";
    for (size_t i = 1; i < close.size() && i < 3; ++i) {
      out += (i + 1 == std::min<size_t>(close.size(), 3) ? " or '" : ", '") + close[i].second + "'";
    }
    return out + "?";
  }
  if (fields.empty()) return fmt::format("; {}", none);
  std::string out = fmt::format("; {} ", listing);
  constexpr size_t kShown = 10;
  for (size_t i = 0; i < fields.size() && i < kShown; ++i) {
    if (i > 0) out += ", ";
    out += fields[i]->name();
  }
  if (fields.size() > kShown) out += fmt::format(" (and {} more)", fields.size() - kShown);
  return out;
}

Result<BoundColumn> ResolveColumn(const Schema& schema, const std::vector<std::string>& path) {
  BoundColumn column;
  // A dotted path is a struct field path; failing that, a top-level name containing dots.
  size_t used = 0;
  std::string joined;
  for (size_t j = 0; j < path.size(); ++j) {
    joined += (j > 0 ? "." : "") + path[j];
    const int index = schema.GetFieldIndex(joined);
    if (index >= 0) {
      column.index = index;
      used = j + 1;
      break;
    }
  }
  if (column.index < 0) {
    return Status::InvalidArgument(fmt::format(
        "unknown column '{}'{}", path[0],
        Suggest(path[0], schema.fields(), "the columns are:", "the schema has no columns")));
  }
  column.type = schema.field(column.index)->type();
  column.name = joined;
  for (size_t j = used; j < path.size(); ++j) {
    if (column.type->id() != TypeId::kStruct) {
      return Status::InvalidArgument(
          fmt::format("column '{}' is {}, not a struct; cannot read field '{}'", column.name,
                      column.type->ToString(), path[j]));
    }
    const auto& fields = column.type->fields();
    int k = -1;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i]->name() == path[j]) {
        k = static_cast<int>(i);
        break;
      }
    }
    if (k < 0) {
      return Status::InvalidArgument(
          fmt::format("column '{}' has no field '{}'{}", column.name, path[j],
                      Suggest(path[j], fields, "its fields are:", "it has no fields")));
    }
    column.fields.push_back(k);
    column.type = fields[k]->type();
    column.name += "." + path[j];
  }
  return column;
}

// The type whose values a literal is compared with: a dictionary's value type.
const DataType& ValueType(const DataType& type) {
  return type.id() == TypeId::kDictionary ? *type.dictionary_value_type() : type;
}

Status Mismatch(const BoundColumn& column, const Scalar& literal, std::string_view detail = "") {
  return Status::InvalidArgument(fmt::format("column '{}' is {}; cannot compare it with {}{}",
                                             column.name, column.type->ToString(),
                                             DescribeLiteral(literal), detail));
}

// [min, max] of an integer type, as scalars.
std::pair<Scalar, Scalar> IntegerRange(TypeId id) {
  switch (id) {
    case TypeId::kInt8:
      return {Scalar::Int64(INT8_MIN), Scalar::Int64(INT8_MAX)};
    case TypeId::kInt16:
      return {Scalar::Int64(INT16_MIN), Scalar::Int64(INT16_MAX)};
    case TypeId::kInt32:
      return {Scalar::Int64(INT32_MIN), Scalar::Int64(INT32_MAX)};
    case TypeId::kInt64:
      return {Scalar::Int64(INT64_MIN), Scalar::Int64(INT64_MAX)};
    case TypeId::kUInt8:
      return {Scalar::UInt64(0), Scalar::UInt64(UINT8_MAX)};
    case TypeId::kUInt16:
      return {Scalar::UInt64(0), Scalar::UInt64(UINT16_MAX)};
    case TypeId::kUInt32:
      return {Scalar::UInt64(0), Scalar::UInt64(UINT32_MAX)};
    default:
      return {Scalar::UInt64(0), Scalar::UInt64(UINT64_MAX)};
  }
}

// InvalidArgument unless the numeric `literal` lies within the integer column's range.
Status CheckIntegerRange(const BoundColumn& column, const DataType& value_type,
                         const Scalar& literal) {
  auto [lo, hi] = IntegerRange(value_type.id());
  if (*CompareScalars(literal, lo) < 0 || *CompareScalars(literal, hi) > 0) {
    return Status::InvalidArgument(fmt::format("column '{}' is {}; {} is out of its range [{}, {}]",
                                               column.name, column.type->ToString(),
                                               literal.ToString(), lo.ToString(), hi.ToString()));
  }
  return Status::OK();
}

// `literal` (not NULL) in the domain of `value_type`, the type of the values of `column`.
// std::nullopt for a non-integral number against an integer column: no value equals it.
Result<std::optional<Scalar>> Coerce(const BoundColumn& column, const DataType& value_type,
                                     const Scalar& literal) {
  using Kind = Scalar::Kind;
  switch (DomainOf(value_type)) {
    case Domain::kBool:
      if (literal.kind() == Kind::kBool) return std::optional<Scalar>(literal);
      break;
    case Domain::kSigned:
    case Domain::kUnsigned: {
      if (!literal.is_numeric()) break;
      STRATA_RETURN_IF_ERROR(CheckIntegerRange(column, value_type, literal));
      const bool is_signed = DomainOf(value_type) == Domain::kSigned;
      Scalar integral = literal;
      if (literal.kind() == Kind::kDouble) {
        const double d = literal.double_value();
        if (d != std::trunc(d)) return std::optional<Scalar>();
        integral = is_signed ? Scalar::Int64(static_cast<int64_t>(d))
                             : Scalar::UInt64(static_cast<uint64_t>(d));
      }
      if (is_signed) {
        return std::optional<Scalar>(Scalar::Int64(integral.int64_value()));
      }
      // In range, so a kInt64 literal is non-negative here.
      return std::optional<Scalar>(Scalar::UInt64(
          integral.kind() == Kind::kInt64 ? static_cast<uint64_t>(integral.int64_value())
                                          : integral.uint64_value()));
    }
    case Domain::kFloat:
      switch (literal.kind()) {
        case Kind::kInt64:
          return std::optional<Scalar>(Scalar::Double(static_cast<double>(literal.int64_value())));
        case Kind::kUInt64:
          return std::optional<Scalar>(Scalar::Double(static_cast<double>(literal.uint64_value())));
        case Kind::kDouble:
          return std::optional<Scalar>(literal);
        default:
          break;
      }
      break;
    case Domain::kTimestamp:
      if (literal.kind() == Kind::kTimestamp) return std::optional<Scalar>(literal);
      if (literal.kind() == Kind::kString) {
        Result<int64_t> micros = ParseTimestampMicros(literal.string_value());
        if (!micros.ok()) return Mismatch(column, literal, ": " + micros.status().message());
        return std::optional<Scalar>(Scalar::Timestamp(*micros));
      }
      break;
    case Domain::kString:
    case Domain::kBinary:
      if (literal.kind() == Kind::kString) return std::optional<Scalar>(literal);
      break;
    case Domain::kOther:
      break;
  }
  return Mismatch(column, literal);
}

BoundNodePtr Constant(Scalar value) {
  auto node = std::make_shared<BoundNode>();
  node->kind = BoundKind::kConstant;
  node->literal = std::move(value);
  return node;
}

// `column op literal` where the result is decided for every non-null row (= and != with a
// fraction against integers).
BoundNodePtr ColumnConstant(const BoundColumn& column, CompareOp op, const Scalar& literal) {
  auto node = std::make_shared<BoundNode>();
  node->kind = BoundKind::kColumnConstant;
  node->column = column;
  node->op = op;
  node->literal = Scalar::Bool(op == CompareOp::kNe);
  node->text = literal.ToString();
  return node;
}

class Binder {
 public:
  explicit Binder(const Schema& schema) : schema_(schema) {}

  Result<BoundNodePtr> BindPredicate(const Expr& e, int depth) {
    if (depth > kMaxBindDepth) {
      return Status::InvalidArgument(
          fmt::format("expression nested deeper than {} levels", kMaxBindDepth));
    }
    switch (e.kind()) {
      case Expr::Kind::kLiteral:
        if (e.literal().is_null() || e.literal().kind() == Scalar::Kind::kBool) {
          return Constant(e.literal());
        }
        return Status::InvalidArgument(
            fmt::format("{} is not a predicate (a predicate is boolean)", DescribeExpr(e)));
      case Expr::Kind::kColumn: {
        STRATA_ASSIGN_OR_RETURN(BoundColumn column, ResolveColumn(schema_, e.column_path()));
        if (column.type->id() != TypeId::kBool) {
          return Status::InvalidArgument(
              fmt::format("column '{}' is {}, not bool; a predicate needs a comparison such as "
                          "'{} = ...'",
                          column.name, column.type->ToString(), e.ToString()));
        }
        auto node = std::make_shared<BoundNode>();
        node->kind = BoundKind::kBoolColumn;
        node->column = std::move(column);
        return BoundNodePtr(std::move(node));
      }
      case Expr::Kind::kCompare:
        return BindCompare(e);
      case Expr::Kind::kIn:
        return Negate(BindIn(e), e.negated());
      case Expr::Kind::kIsNull:
        return Negate(BindIsNull(e), e.negated());
      case Expr::Kind::kLike:
        return Negate(BindLike(e), e.negated());
      case Expr::Kind::kArrayHas:
        return BindArrayHas(e);
      case Expr::Kind::kAnd:
      case Expr::Kind::kOr: {
        auto node = std::make_shared<BoundNode>();
        node->kind = e.kind() == Expr::Kind::kAnd ? BoundKind::kAnd : BoundKind::kOr;
        for (const Expr& operand : e.operands()) {
          STRATA_ASSIGN_OR_RETURN(BoundNodePtr child, BindPredicate(operand, depth + 1));
          node->children.push_back(std::move(child));
        }
        return BoundNodePtr(std::move(node));
      }
      case Expr::Kind::kNot: {
        STRATA_ASSIGN_OR_RETURN(BoundNodePtr child, BindPredicate(e.operands()[0], depth + 1));
        return Not(std::move(child));
      }
    }
    return Status::Internal("unknown expression kind");
  }

 private:
  static BoundNodePtr Not(BoundNodePtr child) {
    auto node = std::make_shared<BoundNode>();
    node->kind = BoundKind::kNot;
    node->children.push_back(std::move(child));
    return node;
  }
  static Result<BoundNodePtr> Negate(Result<BoundNodePtr> bound, bool negated) {
    if (!bound.ok() || !negated) return bound;
    return Not(*std::move(bound));
  }

  // The column an operator applies to; `what` names the operator for the message.
  Result<BoundColumn> OperandColumn(const Expr& operand, std::string_view what) {
    if (operand.kind() != Expr::Kind::kColumn) {
      return Status::InvalidArgument(
          fmt::format("{} needs a column on its left, found {}", what, DescribeExpr(operand)));
    }
    return ResolveColumn(schema_, operand.column_path());
  }

  Result<BoundNodePtr> BindCompare(const Expr& e) {
    const Expr* left = &e.operands()[0];
    const Expr* right = &e.operands()[1];
    CompareOp op = e.op();
    auto atomic = [](const Expr& x) {
      return x.kind() == Expr::Kind::kLiteral || x.kind() == Expr::Kind::kColumn;
    };
    if (!atomic(*left) || !atomic(*right)) {
      const Expr& bad = atomic(*left) ? *right : *left;
      return Status::InvalidArgument(
          fmt::format("the operands of '{}' must be columns or literals, found {}",
                      CompareOpSymbol(op), DescribeExpr(bad)));
    }
    if (left->kind() == Expr::Kind::kLiteral && right->kind() == Expr::Kind::kLiteral) {
      return FoldCompare(op, left->literal(), right->literal());
    }
    if (left->kind() == Expr::Kind::kLiteral) {
      std::swap(left, right);
      op = internal::FlipOp(op);
    }
    STRATA_ASSIGN_OR_RETURN(BoundColumn column, ResolveColumn(schema_, left->column_path()));
    if (right->kind() == Expr::Kind::kColumn) {
      STRATA_ASSIGN_OR_RETURN(BoundColumn other, ResolveColumn(schema_, right->column_path()));
      return CompareColumns(op, std::move(column), std::move(other));
    }
    return CompareWithLiteral(op, std::move(column), right->literal());
  }

  static Result<BoundNodePtr> FoldCompare(CompareOp op, Scalar a, Scalar b) {
    if (a.is_null() || b.is_null()) return Constant(Scalar::Null());
    // A string compared with a timestamp is read as one.
    for (int i = 0; i < 2; ++i) {
      if (a.kind() == Scalar::Kind::kTimestamp && b.kind() == Scalar::Kind::kString) {
        Result<int64_t> micros = ParseTimestampMicros(b.string_value());
        if (!micros.ok()) {
          return Status::InvalidArgument(fmt::format("cannot compare {} with {}: {}",
                                                     DescribeLiteral(a), DescribeLiteral(b),
                                                     micros.status().message()));
        }
        b = Scalar::Timestamp(*micros);
      }
      std::swap(a, b);
    }
    std::optional<int> c = CompareScalars(a, b);
    if (!c.has_value()) {
      return Status::InvalidArgument(
          fmt::format("cannot compare {} with {}", DescribeLiteral(a), DescribeLiteral(b)));
    }
    return Constant(Scalar::Bool(internal::OpHolds(op, *c)));
  }

  static Result<BoundNodePtr> CompareWithLiteral(CompareOp op, BoundColumn column,
                                                 const Scalar& literal) {
    if (literal.is_null()) return Constant(Scalar::Null());
    const DataType& value_type = ValueType(*column.type);
    const Domain domain = DomainOf(value_type);
    if ((domain == Domain::kSigned || domain == Domain::kUnsigned) &&
        literal.kind() == Scalar::Kind::kDouble &&
        literal.double_value() != std::trunc(literal.double_value())) {
      // A fraction against integers: = and != are decided, < and > round to the integers.
      STRATA_RETURN_IF_ERROR(CheckIntegerRange(column, value_type, literal));
      const double d = literal.double_value();
      double rounded = 0;
      switch (op) {
        case CompareOp::kEq:
        case CompareOp::kNe:
          return ColumnConstant(column, op, literal);
        case CompareOp::kLt:
        case CompareOp::kLe:
          op = CompareOp::kLe;
          rounded = std::floor(d);
          break;
        case CompareOp::kGt:
        case CompareOp::kGe:
          op = CompareOp::kGe;
          rounded = std::ceil(d);
          break;
      }
      Result<std::optional<Scalar>> coerced = Coerce(column, value_type, Scalar::Double(rounded));
      return CompareWithCoerced(op, std::move(column), std::move(coerced));
    }
    Result<std::optional<Scalar>> coerced = Coerce(column, value_type, literal);
    return CompareWithCoerced(op, std::move(column), std::move(coerced));
  }

  // `coerced` holds a value here: fractions against integer columns were handled above.
  static Result<BoundNodePtr> CompareWithCoerced(CompareOp op, BoundColumn column,
                                                 Result<std::optional<Scalar>> coerced) {
    if (!coerced.ok()) return coerced.status();
    if (!coerced->has_value()) {
      return Status::Internal(fmt::format("column '{}': literal lost in coercion", column.name));
    }
    return CompareNode(op, std::move(column), **coerced);
  }

  static BoundNodePtr CompareNode(CompareOp op, BoundColumn column, Scalar literal) {
    auto node = std::make_shared<BoundNode>();
    node->kind = BoundKind::kCompare;
    node->op = op;
    node->column = std::move(column);
    node->literal = std::move(literal);
    return node;
  }

  static Result<BoundNodePtr> CompareColumns(CompareOp op, BoundColumn a, BoundColumn b) {
    const Domain da = DomainOf(ValueType(*a.type));
    const Domain db = DomainOf(ValueType(*b.type));
    auto numeric = [](Domain d) {
      return d == Domain::kSigned || d == Domain::kUnsigned || d == Domain::kFloat;
    };
    const bool compatible = da != Domain::kOther && (da == db || (numeric(da) && numeric(db)));
    if (!compatible) {
      return Status::InvalidArgument(
          fmt::format("cannot compare column '{}' ({}) with column '{}' ({})", a.name,
                      a.type->ToString(), b.name, b.type->ToString()));
    }
    auto node = std::make_shared<BoundNode>();
    node->kind = BoundKind::kCompareColumns;
    node->op = op;
    node->column = std::move(a);
    node->column2 = std::move(b);
    return BoundNodePtr(std::move(node));
  }

  Result<BoundNodePtr> BindIn(const Expr& e) {
    const Expr& operand = e.operands()[0];
    if (operand.kind() == Expr::Kind::kLiteral) {
      // Fold: TRUE on a match, else NULL if the list holds a NULL, else FALSE.
      if (operand.literal().is_null()) return Constant(Scalar::Null());
      bool saw_null = false;
      for (const Scalar& v : e.values()) {
        STRATA_ASSIGN_OR_RETURN(BoundNodePtr eq, FoldCompare(CompareOp::kEq, operand.literal(), v));
        if (eq->literal.is_null()) {
          saw_null = true;
        } else if (eq->literal.bool_value()) {
          return Constant(Scalar::Bool(true));
        }
      }
      return Constant(saw_null ? Scalar::Null() : Scalar::Bool(false));
    }
    STRATA_ASSIGN_OR_RETURN(BoundColumn column, OperandColumn(operand, "IN"));
    auto node = std::make_shared<BoundNode>();
    node->kind = BoundKind::kIn;
    const DataType& value_type = ValueType(*column.type);
    if (DomainOf(value_type) == Domain::kOther) {
      return Status::InvalidArgument(fmt::format("column '{}' is {}; IN needs a column of scalars",
                                                 column.name, column.type->ToString()));
    }
    for (const Scalar& v : e.values()) {
      if (v.is_null()) {
        node->values_have_null = true;
        continue;
      }
      STRATA_ASSIGN_OR_RETURN(std::optional<Scalar> coerced, Coerce(column, value_type, v));
      if (coerced.has_value()) node->values.push_back(*std::move(coerced));
    }
    std::sort(node->values.begin(), node->values.end(),
              [](const Scalar& a, const Scalar& b) { return *CompareScalars(a, b) < 0; });
    node->values.erase(
        std::unique(node->values.begin(), node->values.end(),
                    [](const Scalar& a, const Scalar& b) { return *CompareScalars(a, b) == 0; }),
        node->values.end());
    node->column = std::move(column);
    return BoundNodePtr(std::move(node));
  }

  Result<BoundNodePtr> BindIsNull(const Expr& e) {
    const Expr& operand = e.operands()[0];
    if (operand.kind() == Expr::Kind::kLiteral) {
      return Constant(Scalar::Bool(operand.literal().is_null()));
    }
    STRATA_ASSIGN_OR_RETURN(BoundColumn column, OperandColumn(operand, "IS NULL"));
    auto node = std::make_shared<BoundNode>();
    node->kind = BoundKind::kIsNull;
    node->column = std::move(column);
    return BoundNodePtr(std::move(node));
  }

  Result<BoundNodePtr> BindLike(const Expr& e) {
    const Expr& operand = e.operands()[0];
    STRATA_ASSIGN_OR_RETURN(internal::LikePattern pattern,
                            internal::LikePattern::Compile(e.pattern()));
    if (operand.kind() == Expr::Kind::kLiteral) {
      const Scalar& s = operand.literal();
      if (s.is_null()) return Constant(Scalar::Null());
      if (s.kind() != Scalar::Kind::kString) {
        return Status::InvalidArgument(
            fmt::format("LIKE needs a string, found {}", DescribeLiteral(s)));
      }
      return Constant(Scalar::Bool(pattern.Matches(s.string_value())));
    }
    STRATA_ASSIGN_OR_RETURN(BoundColumn column, OperandColumn(operand, "LIKE"));
    const Domain domain = DomainOf(ValueType(*column.type));
    if (domain != Domain::kString && domain != Domain::kBinary) {
      return Status::InvalidArgument(fmt::format("column '{}' is {}; LIKE needs a string column",
                                                 column.name, column.type->ToString()));
    }
    auto node = std::make_shared<BoundNode>();
    node->kind = BoundKind::kLike;
    node->column = std::move(column);
    node->like = std::make_shared<const internal::LikePattern>(std::move(pattern));
    node->text = e.pattern();
    return BoundNodePtr(std::move(node));
  }

  Result<BoundNodePtr> BindArrayHas(const Expr& e) {
    const Expr& list = e.operands()[0];
    const Expr& value = e.operands()[1];
    if (list.kind() != Expr::Kind::kColumn) {
      return Status::InvalidArgument(fmt::format(
          "array_has needs a list column as its first argument, found {}", DescribeExpr(list)));
    }
    STRATA_ASSIGN_OR_RETURN(BoundColumn column, ResolveColumn(schema_, list.column_path()));
    const TypeId id = column.type->id();
    if (id != TypeId::kList && id != TypeId::kLargeList && id != TypeId::kFixedSizeList) {
      return Status::InvalidArgument(
          fmt::format("array_has needs a list column as its first argument; column '{}' is {}",
                      column.name, column.type->ToString()));
    }
    if (value.kind() != Expr::Kind::kLiteral) {
      return Status::InvalidArgument(fmt::format(
          "array_has needs a literal as its second argument, found {}", DescribeExpr(value)));
    }
    if (value.literal().is_null()) return Constant(Scalar::Null());
    BoundColumn elements;
    elements.index = column.index;
    elements.type = column.type->value_type();
    elements.name = column.name + "[]";
    if (DomainOf(ValueType(*elements.type)) == Domain::kOther) {
      return Status::InvalidArgument(
          fmt::format("array_has needs a list of scalars; column '{}' is {}", column.name,
                      column.type->ToString()));
    }
    STRATA_ASSIGN_OR_RETURN(BoundNodePtr element_test,
                            CompareWithLiteral(CompareOp::kEq, elements, value.literal()));
    auto node = std::make_shared<BoundNode>();
    node->kind = BoundKind::kArrayHas;
    node->column = std::move(column);
    node->children.push_back(std::move(element_test));
    return BoundNodePtr(std::move(node));
  }

  const Schema& schema_;
};

std::string ColumnSql(const BoundColumn& column, const Schema& schema) {
  // Rebuilt from the schema, so quoting matches the path as resolved.
  std::string out = internal::QuoteIdentifier(schema.field(column.index)->name());
  const DataType* type = schema.field(column.index)->type().get();
  for (int k : column.fields) {
    out += "." + internal::QuoteIdentifier(type->fields()[k]->name());
    type = type->fields()[k]->type().get();
  }
  return out;
}

std::string NodeToString(const BoundNode& n, const Schema& schema) {
  auto logical = [&](const BoundNode& child) {
    std::string text = NodeToString(child, schema);
    return child.kind == BoundKind::kAnd || child.kind == BoundKind::kOr ? "(" + text + ")" : text;
  };
  switch (n.kind) {
    case BoundKind::kConstant:
      return n.literal.ToString();
    case BoundKind::kColumnConstant:
      return fmt::format("{} {} {}", ColumnSql(n.column, schema), CompareOpSymbol(n.op), n.text);
    case BoundKind::kBoolColumn:
      return ColumnSql(n.column, schema);
    case BoundKind::kCompare:
      return fmt::format("{} {} {}", ColumnSql(n.column, schema), CompareOpSymbol(n.op),
                         n.literal.ToString());
    case BoundKind::kCompareColumns:
      return fmt::format("{} {} {}", ColumnSql(n.column, schema), CompareOpSymbol(n.op),
                         ColumnSql(n.column2, schema));
    case BoundKind::kIn: {
      std::string out = ColumnSql(n.column, schema) + " IN (";
      for (size_t i = 0; i < n.values.size(); ++i) {
        out += (i > 0 ? ", " : "") + n.values[i].ToString();
      }
      if (n.values_have_null) out += n.values.empty() ? "NULL" : ", NULL";
      return out + ")";
    }
    case BoundKind::kIsNull:
      return ColumnSql(n.column, schema) + " IS NULL";
    case BoundKind::kLike:
      return ColumnSql(n.column, schema) + " LIKE " + Scalar::String(n.text).ToString();
    case BoundKind::kArrayHas: {
      const BoundNode& test = *n.children[0];
      return "array_has(" + ColumnSql(n.column, schema) + ", " +
             (test.kind == BoundKind::kCompare ? test.literal.ToString() : test.text) + ")";
    }
    case BoundKind::kAnd:
    case BoundKind::kOr: {
      std::string out;
      for (size_t i = 0; i < n.children.size(); ++i) {
        if (i > 0) out += n.kind == BoundKind::kAnd ? " AND " : " OR ";
        out += logical(*n.children[i]);
      }
      return out;
    }
    case BoundKind::kNot:
      return "NOT " + logical(*n.children[0]);
  }
  return "?";
}

void CollectColumns(const BoundNode& n, std::vector<int>* out) {
  if (n.column.index >= 0) out->push_back(n.column.index);
  if (n.column2.index >= 0) out->push_back(n.column2.index);
  for (const BoundNodePtr& child : n.children) CollectColumns(*child, out);
}

}  // namespace

std::string BoundExpr::ToString() const { return NodeToString(*root_, *schema_); }

std::vector<int> BoundExpr::ReferencedColumns() const {
  std::vector<int> columns;
  CollectColumns(*root_, &columns);
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  return columns;
}

Result<BoundExpr> Bind(const Expr& expr, const SchemaPtr& schema) {
  if (schema == nullptr) return Status::InvalidArgument("Bind needs a schema");
  STRATA_ASSIGN_OR_RETURN(BoundNodePtr root, Binder(*schema).BindPredicate(expr, 0));
  return BoundExpr(schema, std::move(root));
}

Result<BoundExpr> ParseAndBind(std::string_view text, const SchemaPtr& schema) {
  STRATA_ASSIGN_OR_RETURN(Expr expr, Parse(text));
  return Bind(expr, schema);
}

}  // namespace strata::expr
