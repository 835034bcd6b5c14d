// Internal evaluation entry points: the evaluator walks the bound tree, the kernels evaluate
// one leaf over one column's array (kernels.cc, compare_columns.cc).
#pragma once

#include "expr/bound.h"
#include "expr/truth.h"
#include "strata/array.h"
#include "strata/status.h"

namespace strata::expr::internal {

// A leaf (kColumnConstant, kBoolColumn, kCompare, kIn, kIsNull, kLike) over `values`, an
// array of the leaf's column type (dictionaries are evaluated once per entry, then mapped).
Result<Truth> EvalLeaf(const BoundNode& node, const Array& values);

// kCompareColumns over the two columns' arrays (of equal length).
Result<Truth> EvalCompareColumns(const BoundNode& node, const Array& left, const Array& right);

// kArrayHas over the list column's array.
Result<Truth> EvalArrayHas(const BoundNode& node, const Array& lists);

}  // namespace strata::expr::internal
