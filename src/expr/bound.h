// The bound (type-checked) expression tree shared by the binder, the evaluator, pruning and
// key extraction. Literals are already coerced to their column's value domain.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "expr/like.h"
#include "strata/expr.h"
#include "strata/type.h"

namespace strata::expr::internal {

// The family of values of a type, and the Scalar kind its literals and statistics use.
enum class Domain : uint8_t {
  kBool,       // Scalar kBool
  kSigned,     // int8..int64: kInt64
  kUnsigned,   // uint8..uint64: kUInt64
  kFloat,      // float32, float64: kDouble
  kTimestamp,  // kTimestamp
  kString,     // utf8, large_utf8: kString
  kBinary,     // binary, large_binary: kString
  kOther,      // lists, structs, ...: not comparable
};

// The domain of a type's values; a dictionary has its value type's domain.
Domain DomainOf(const DataType& type);

struct BoundColumn {
  int index = -1;           // top-level column of the schema
  std::vector<int> fields;  // struct field indexes below it, outermost first
  DataTypePtr type;         // the referenced (innermost) type
  std::string name;         // the dotted path, for messages
};

enum class BoundKind : uint8_t {
  kConstant,        // `literal` (Bool or Null) for every row
  kColumnConstant,  // NULL where `column` is null, otherwise `literal` (Bool)
  kBoolColumn,      // the bool column itself
  kCompare,         // column op literal
  kCompareColumns,  // column op column2
  kIn,              // column IN values
  kIsNull,          // column IS NULL
  kLike,            // column LIKE like
  kArrayHas,        // some element of list `column` satisfies children[0] (an equality)
  kAnd,
  kOr,
  kNot,
};

struct BoundNode {
  BoundKind kind = BoundKind::kConstant;
  BoundColumn column;
  BoundColumn column2;
  CompareOp op = CompareOp::kEq;
  Scalar literal;
  // kIn: distinct, ascending, no NULLs (`values_have_null` records a NULL in the list, which
  // turns every FALSE into NULL).
  std::vector<Scalar> values;
  bool values_have_null = false;
  std::shared_ptr<const LikePattern> like;
  std::vector<std::shared_ptr<const BoundNode>> children;
  // kColumnConstant: the literal of the comparison it came from (with `op`), for ToString().
  // kLike: the pattern text.
  std::string text;
};

using BoundNodePtr = std::shared_ptr<const BoundNode>;

}  // namespace strata::expr::internal
